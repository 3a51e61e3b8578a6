//! `WorkersTunlet`: the number of workers from the performance model (Cesar et al. 2006).

use serde_json::json;

use super::TunerView;
use super::config::Objective;
use super::decide::{Account, Explanation, Proposal};
use super::estimate::Inputs;
use super::machine::Machine;
use crate::model::balance::quality_bound;
use crate::tuning::tunables::TunableId;

/// Imbalance tolerated above the model's bound before the load counts as unbalanced.
pub(crate) const BALANCE_SLACK: f64 = 0.05;

/// The workers tunlet: `Tt(n)`, `Pi(n)` over the range (see [`propose`]).
#[derive(Debug, Default)]
pub(crate) struct WorkersTunlet;

/// Where the search happens.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Range {
    pub lo: usize,
    pub hi: usize,
}

/// The model at one worker count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Point {
    pub workers: usize,
    pub time_ms: f64,
    pub pi: f64,
}

/// Evaluates `Tt(n)` and `Pi(n) = n·Tt(n)²/Tc` over the range with the model variant that fits
/// the application (the broadcast one when the shared part dominates what is sent), `Tt`
/// calibrated by what the model left unexplained in recent iterations; and proposes the `n` of
/// lowest `Pi` (objective `index`), never past the MCMC, or of lowest `Tt` (`time`), the fewer
/// workers among equals. The MCMC bounds `index` only: past it workers wait for the master,
/// which costs resources, but `Tt` already charges the master's sends one after another (all
/// the bytes through its link, a start-up per message), so a count past the MCMC that `Tt` says
/// is faster is faster. More workers are proposed only once the load is balanced: the measured
/// imbalance of the distribution phase within its bound for the current `n`, plus one task of
/// tail and [`BALANCE_SLACK`]. Fewer workers can always be proposed (they balance more easily).
/// Where the machine is known, more workers than its cores can keep computing (its
/// [`saturation`](Machine::saturation)) are never proposed: past it the workers only share the
/// same cores, with other programs as much as with each other. And while other programs load
/// the cores ([`Machine::others_loaded`]), fewer workers than now are not proposed either
/// (down to the saturation from above): their load stretches the tasks and delays each
/// worker's wake-up at any count, which the model would read as the program's own cost.
///
/// It reads nothing but the public [`TunerView`], as a program's tunlet would.
pub(crate) fn propose(view: &TunerView<'_>) -> Option<Proposal> {
    let tasks = view.iteration_tasks();
    let current = view.nworkers();
    let range = view.workers_range();
    let objective = view.objective();
    let mcmc = view.mcmc(tasks);
    let machine = view.machine();
    let (cores, floor) = machine.as_ref().map_or((usize::MAX, 0), |m| {
        let cores = m.saturation();
        let floor = if m.others_loaded() {
            current.min(cores).min(*range.end()).min(tasks)
        } else {
            0
        };
        (cores.max(current), floor)
    });
    // The MCMC too comes from trips that other programs' load lengthens.
    let capability = match objective {
        Objective::Index => mcmc.unwrap_or(usize::MAX),
        Objective::Time => usize::MAX,
    };
    let hi = (*range.end())
        .min(tasks)
        .min(capability)
        .min(cores)
        .max(floor)
        .max(1);
    let lo = (*range.start()).max(floor).min(hi);
    // `Pi`'s Tc is the work itself, as it would take on free cores.
    let tc = view.model_work_ms(tasks);
    let point = |n: usize| -> Option<Point> {
        let t = view.model_ms(tasks, n)?;
        Some(Point {
            workers: n,
            time_ms: t,
            pi: n as f64 * t * t / tc,
        })
    };
    let key = |p: &Point| match objective {
        Objective::Index => p.pi,
        Objective::Time => p.time_ms,
    };
    let mut best: Option<Point> = None;
    for n in lo..=hi {
        let p = point(n)?;
        if best.is_none_or(|b| key(&p) < key(&b)) {
            best = Some(p);
        }
    }
    let best = best?;
    let target = best.workers;
    if target == current {
        return None;
    }
    // Balance: the idle share of the distribution phase beyond what the model's communication
    // explains for a balanced iteration at this n, against the bound for this n.
    let mean = view.task_ms().max(f64::MIN_POSITIVE);
    let bound = quality_bound(mean, view.task_sd_ms(), current.max(1)).unwrap_or(0.0);
    let mo = view.mo_ms().unwrap_or(0.0);
    let time = view.iteration_ms();
    let tail = if time > 0.0 {
        (mean + 2.0 * mo) / time
    } else {
        0.0
    };
    let expected = view.balanced_idle_share(tasks, current);
    let measured_imbalance = view.distribution_imbalance();
    let imbalance = (measured_imbalance - expected).max(0.0);
    let allowance = bound + tail + BALANCE_SLACK;
    if target > current && imbalance > allowance {
        return None;
    }
    let now = point(current)?;
    let (gain, sensitivity) = match objective {
        Objective::Index => (1.0 - best.pi / now.pi, 2.0),
        Objective::Time => (1.0 - best.time_ms / now.time_ms, 1.0),
    };
    if !(gain.is_finite() && gain > 0.0) {
        return None;
    }
    let account = WorkersEvaluation {
        machine,
        variant: view.model_variant(tasks),
        objective,
        tasks,
        tc_ms: tc,
        inputs: view.inputs(),
        mo_ms: mo,
        k_ms_per_byte: view.k_ms_per_byte().unwrap_or(0.0),
        calibration_ms: view.calibration_ms(),
        shared_bytes: view.shared_bytes(),
        measured_imbalance,
        imbalance,
        bound,
        allowance,
        mcmc,
        range: (lo, hi),
        now,
        best,
    };
    Some(Proposal {
        change: TunableId::NWORKERS.change(target as i64),
        from: current as f64,
        to: target as f64,
        gain,
        sensitivity,
        predicted_ms: best.time_ms,
        miss: 0.0,
        explanation: Explanation::new(account),
    })
}

/// The numbers behind a proposal of the workers tunlet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WorkersEvaluation {
    machine: Option<Machine>,
    variant: &'static str,
    objective: Objective,
    tasks: usize,
    tc_ms: f64,
    inputs: Inputs,
    mo_ms: f64,
    k_ms_per_byte: f64,
    calibration_ms: f64,
    shared_bytes: f64,
    measured_imbalance: f64,
    imbalance: f64,
    bound: f64,
    allowance: f64,
    mcmc: Option<usize>,
    range: (usize, usize),
    now: Point,
    best: Point,
}

impl Account for WorkersEvaluation {
    fn reason(&self) -> String {
        let (now, best) = (self.now, self.best);
        let what = match self.objective {
            Objective::Index => format!(
                "Pi({}) = {:.3} < Pi({}) = {:.3}",
                best.workers, best.pi, now.workers, now.pi
            ),
            Objective::Time => format!(
                "Tt({}) = {:.2} ms < Tt({}) = {:.2} ms",
                best.workers, best.time_ms, now.workers, now.time_ms
            ),
        };
        let machine = self.machine.as_ref().map_or(String::new(), |m| {
            let nodes = match m.layout.nodes() {
                1 => String::new(),
                n => format!(" on {n} nodes"),
            };
            // Other programs' load stretches every n alike: said, since it explains the times.
            let others = if m.others_loaded() {
                format!(
                    ", other programs' load (tasks ×{:.2}, late starts {:.0}% of their time)",
                    m.foreign,
                    100.0 * m.late
                )
            } else {
                String::new()
            };
            format!(
                ", {} cores{nodes}: tasks compute {:.0}% of {:.3} ms, the cores saturate past {} \
                 workers{others}",
                m.layout.cores(),
                100.0 * m.cpu_ms / m.task_ms.max(f64::MIN_POSITIVE),
                m.task_ms,
                m.saturation()
            )
        });
        format!(
            "{} model: {what}; Tt {:.2} → {:.2} ms; Tc {:.1} ms, mo {:.4} ms, k {:.3e} ms/B, \
             MCMC {}, Q {:.2} {} {:.2}{machine}",
            self.variant,
            now.time_ms,
            best.time_ms,
            self.tc_ms,
            self.mo_ms,
            self.k_ms_per_byte,
            self.mcmc.map_or("none".to_owned(), |m| m.to_string()),
            self.imbalance,
            // Growing needs the load balanced (Q within its allowance); shrinking does not.
            if self.imbalance <= self.allowance {
                "≤"
            } else {
                ">"
            },
            self.allowance,
        )
    }

    /// Why, in words: the objective the new count is best for.
    fn words(&self) -> String {
        match self.objective {
            Objective::Index => "best time per worker",
            Objective::Time => "fastest by the model",
        }
        .to_owned()
    }

    /// The gain of the objective, `percent` of it, in words.
    fn gain(&self, percent: f64) -> String {
        match self.objective {
            Objective::Index => format!("{percent:.0}% less time × workers"),
            Objective::Time => format!("{percent:.0}% less time"),
        }
    }

    fn details(&self) -> serde_json::Value {
        json!({
            "tunlet": "workers",
            "objective": self.objective.to_string(),
            "variant": self.variant,
            "inputs": {
                "tasks": self.tasks,
                "tc_ms": self.tc_ms,
                "task_mean_ms": self.inputs.task_ms,
                "task_stddev_ms": self.inputs.task_sd_ms,
                "mo_ms": self.mo_ms,
                "k_ms_per_byte": self.k_ms_per_byte,
                "lm_ms": self.inputs.lm_ms(self.tasks),
                "calibration_ms": self.calibration_ms,
                "shared_bytes": self.shared_bytes,
                "imbalance": self.measured_imbalance,
                "imbalance_beyond_model": self.imbalance,
                "imbalance_bound": self.bound,
            },
            "machine": self.machine.as_ref().map(|m| json!({
                "cores": m.layout.cores(),
                "nodes": m.layout.nodes(),
                "task_cpu_ms": m.cpu_ms,
                "task_ms_uncontended": m.task_ms,
                "saturation_workers": m.saturation(),
                "foreign_stretch": m.foreign,
                "late_share": m.late,
                "others_loaded": m.others_loaded(),
            })),
            "model": {
                "mcmc": self.mcmc,
                "range": [self.range.0, self.range.1],
                "current": {"workers": self.now.workers, "time_ms": self.now.time_ms, "pi": self.now.pi},
                "proposed": {"workers": self.best.workers, "time_ms": self.best.time_ms, "pi": self.best.pi},
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evaluation(imbalance: f64, allowance: f64) -> WorkersEvaluation {
        let point = |workers, time_ms, pi| Point {
            workers,
            time_ms,
            pi,
        };
        WorkersEvaluation {
            machine: None,
            variant: "balanced",
            objective: Objective::Index,
            tasks: 100,
            tc_ms: 100.0,
            inputs: Inputs::default(),
            mo_ms: 0.01,
            k_ms_per_byte: 1e-6,
            calibration_ms: 0.0,
            shared_bytes: 0.0,
            measured_imbalance: imbalance,
            imbalance,
            bound: allowance - BALANCE_SLACK,
            allowance,
            mcmc: None,
            range: (1, 4),
            now: point(2, 60.0, 72.0),
            best: point(1, 100.0, 100.0),
        }
    }

    /// An imbalance above its allowance does not stop a pool from shrinking: the account says
    /// so rather than claiming the check held.
    #[test]
    fn the_balance_check_is_stated_as_it_stands() {
        let over = evaluation(0.24, 0.06).reason();
        assert!(over.contains("Q 0.24 > 0.06"), "{over}");
        let within = evaluation(0.02, 0.06).reason();
        assert!(within.contains("Q 0.02 ≤ 0.06"), "{within}");
    }
}
