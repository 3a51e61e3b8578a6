//! `WorkersTunlet`: the number of workers from the performance model (Cesar et al. 2006).

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::json;

use super::TunerView;
use super::config::Objective;
use super::decide::{Account, Explanation, Proposal};
use super::estimate::Inputs;
use super::machine::Machine;
use super::simulate::{SimWorker, Spec, simulate, task_stats};
use crate::model::balance::quality_bound;
use crate::policy::PolicyChoice;
use crate::random::SplitMix64;
use crate::tuning::tunables::TunableId;

/// Imbalance tolerated above the model's bound before the load counts as unbalanced.
pub(crate) const BALANCE_SLACK: f64 = 0.05;

/// The workers' speeds are uneven when the slowest worker's mean task time is this many times
/// the fastest's, and further apart than the tasks' own deviation explains (see [`Tail`]).
pub(crate) const UNEVEN_SPEEDS: f64 = 1.5;
/// Tasks per worker in an iteration below which the workers' speeds are not simulated.
const MIN_TASKS_PER_WORKER: f64 = 4.0;
/// Simulated runs per count when the tail is simulated, with the same seed at every count.
const TAIL_REPS: usize = 4;
/// Guesses of the speeds of workers not measured yet, each a run.
const TAIL_DRAWS: usize = 4;

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
/// calibrated by what the model left unexplained in recent iterations, and, while the workers'
/// speeds are uneven, the [`Tail`] their chunks add at each count; and proposes the `n` of
/// lowest `Pi` (objective `index`), never past the MCMC, or of lowest `Tt` (`time`), the fewer
/// workers among equals. The MCMC bounds `index` only: past it workers wait for the master,
/// which costs resources, but `Tt` already charges the master's sends one after another (all
/// the bytes through its link, a start-up per message), so a count past the MCMC that `Tt` says
/// is faster is faster. More workers are proposed only once the load is balanced: the measured
/// imbalance of the distribution phase within its bound for the current `n`, plus one task of
/// tail and [`BALANCE_SLACK`]; while other programs load the cores, the workers' and the
/// master's waits for a core ([`Machine::late_share`]) are theirs, not an imbalance. Fewer
/// workers can always be proposed (they balance more easily).
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
    let speeds = Tail::of(view, tasks);
    let tail_now = speeds.as_ref().map_or(0.0, |t| t.at(current));
    // Of what the calibration adds to every count, the tail at the current count is that
    // count's own: up to the calibration, it is taken out and each count's tail put in.
    let credit = tail_now.min(view.calibration_ms().max(0.0));
    // `Tt(n)` with the tail `tail` of uneven speeds at `n`.
    let point = |n: usize, tail: f64| -> Option<Point> {
        let t = view.model_ms(tasks, n)? + tail - credit;
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
    // No tail makes a count faster than the model without it: the counts are taken from the
    // most promising by the model on, and their tails simulated only until none left can win
    // (simulating every count at every look cost a run of short iterations 6 % of its time).
    let mut bounds = (lo..=hi)
        .map(|n| point(n, 0.0))
        .collect::<Option<Vec<_>>>()?;
    bounds.sort_by(|a, b| key(a).total_cmp(&key(b)).then(a.workers.cmp(&b.workers)));
    let mut best: Option<Point> = None;
    for bound in bounds {
        if best.is_some_and(|b| key(&bound) > key(&b)) {
            break;
        }
        let p = match &speeds {
            Some(tail) => point(bound.workers, tail.at(bound.workers))?,
            None => bound,
        };
        let better = |b: &Point| key(&p) < key(b) || (key(&p) == key(b) && p.workers < b.workers);
        if best.as_ref().is_none_or(better) {
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
    // While other programs load the cores, the master and the workers wait for one before each
    // chunk: idle time that is their load, not an imbalance of this one (with one worker it
    // is all there is, and it would hold a pool of sleeping tasks at one worker for good).
    let foreign = machine
        .as_ref()
        .filter(|m| m.others_loaded())
        .map_or(0.0, |m| m.late_share().min(1.0));
    let measured_imbalance = view.distribution_imbalance();
    let imbalance = (measured_imbalance - expected - foreign).max(0.0);
    let allowance = bound + tail + BALANCE_SLACK;
    if target > current && imbalance > allowance {
        return None;
    }
    let now = point(current, tail_now)?;
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
        tail_ms: speeds.map(|t| (tail_now, t.at(target))),
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
    /// The simulated tail of uneven speeds at the current and the proposed count, in ms, when
    /// the speeds were uneven.
    tail_ms: Option<(f64, f64)>,
}

/// The tail that workers of uneven speeds add to an iteration, by count: what the model leaves
/// out and the tuner would otherwise charge every count alike.
///
/// The model divides the work among the workers in proportion to their speeds, as a fluid.
/// Self-scheduling cuts it into chunks, and where speeds differ (other programs load some
/// workers) a slow worker that asks last gets a chunk sized for the fast ones and finishes
/// after everyone else. Whether that happens depends on the chunk arithmetic at each count: in
/// the POETRIES replica under its variable load, 12 workers alternate between 100 and 145 ms an
/// iteration while 14 hold 103, and the model, whose calibration absorbs the tail at the count
/// measured and adds it to every count, saw 2 % between them. The tail at `n` is the
/// simulation of the iteration (the policy in force cutting the same chunks, the link and
/// bytes as measured) on the measured speeds, less the same simulation with every worker at
/// one speed of the same total rate (and the policy reading that speed). A worker beyond those
/// measured now is as likely to be loaded as any: it gets one of their speeds at random,
/// over a few draws, rather than the pooled speed, which no loaded worker has and which
/// would promise larger counts no tail. The calibration (what the model missed at the count
/// measured, smoothed over recent iterations) holds the current count's tail once it has
/// caught up with it; the workers tunlet takes that tail out of it, up to what it holds, and
/// adds each count's own: `Tt(n) + tail(n) − min(tail(current), calibration)`. Where the load
/// changes faster than the calibration follows, no count is credited more than was measured.
///
/// Only at an iteration's end, with [`MIN_TASKS_PER_WORKER`] tasks per worker or more, and
/// while the speeds are uneven ([`UNEVEN_SPEEDS`], and beyond what the tasks' deviation
/// explains for a worker's mean). At a checkpoint inside an iteration, the workers the load just
/// reached may not have finished a task under it, and a speed from a task or two is luck: on
/// 24 tasks over 15 workers under a variable load, speeds from a checkpoint made 7 workers
/// look faster than 15, where they were slower under either load. Nor while other programs
/// share the cores ([`Machine::others_loaded`]): a worker's speed is then the scheduler's
/// share of the moment and does not persist. With even speeds the tail is the chunking's alone,
/// which both simulations share, and simulating every count at every look would cost for
/// nothing.
/// Nor for a policy a program registered, which the tunlet cannot rebuild.
struct Tail<'v, 'a> {
    view: &'v TunerView<'a>,
    tasks: usize,
    policy: crate::policy::PolicyName,
    seed: u64,
    /// The speeds of the workers taking part now: one left out earlier was measured under
    /// another load.
    known: Vec<SimWorker>,
    /// The tails simulated so far, by count: each is asked for more than once.
    simulated: RefCell<HashMap<usize, f64>>,
}

impl<'v, 'a> Tail<'v, 'a> {
    fn of(view: &'v TunerView<'a>, tasks: usize) -> Option<Self> {
        let PolicyChoice::BuiltIn(policy) = view.policy() else {
            return None;
        };
        // Inside an iteration the workers the load just reached may not have finished a task
        // under it; and a worker's speed from one or two tasks says little of the next.
        let share = tasks as f64 / view.nworkers().max(1) as f64;
        if view.inside_iteration() || share < MIN_TASKS_PER_WORKER {
            return None;
        }
        // Where other programs share the cores, a worker's speed is the scheduler's share of
        // the moment, not the worker's: it does not persist for the simulation to use.
        if view.machine().is_some_and(|m| m.others_loaded()) {
            return None;
        }
        // At 4 tasks a worker or more, `tasks` exceeds `nworkers`: these are the workers of the
        // pool taking part, measured first, then any not measured at the pooled speed.
        let mut speeds = view.simulated_workers(view.nworkers().max(1));
        let means = speeds.iter().map(|w| w.mean_ms);
        let slowest = means.clone().fold(0.0, f64::max);
        let fastest = means.fold(f64::INFINITY, f64::min);
        // A worker's mean over its share of the tasks wanders by the deviation over √share.
        let wander = 3.0 * view.task_sd_ms() / share.max(1.0).sqrt();
        let uneven =
            fastest > 0.0 && slowest >= UNEVEN_SPEEDS * fastest && slowest - fastest > wander;
        if !uneven {
            return None;
        }
        // The measured ones alone are known: `simulated_workers` puts them first.
        speeds.truncate(view.nworkers().min(view.measured_workers()).max(1));
        Some(Tail {
            view,
            tasks,
            policy: *policy,
            seed: view.iteration() as u64,
            known: speeds,
            simulated: RefCell::default(),
        })
    }

    /// The tail at `n` workers, in ms: over [`TAIL_DRAWS`] guesses of the speeds of workers
    /// beyond those measured, each one of the measured speeds drawn at random.
    fn at(&self, n: usize) -> f64 {
        if let Some(&tail) = self.simulated.borrow().get(&n) {
            return tail;
        }
        let known = &self.known;
        let tail = if n <= known.len() {
            self.of_speeds(&known[..n.max(1)], TAIL_REPS)
        } else {
            let mut draw = SplitMix64::new(self.seed ^ n as u64);
            let total: f64 = (0..TAIL_DRAWS)
                .map(|_| {
                    let mut speeds = known.clone();
                    speeds.extend(
                        (known.len()..n)
                            .map(|_| known[(draw.next_u64() % known.len() as u64) as usize]),
                    );
                    self.of_speeds(&speeds, 1)
                })
                .sum();
            total / TAIL_DRAWS as f64
        };
        self.simulated.borrow_mut().insert(n, tail);
        tail
    }

    /// The tail on these speeds: the simulated iteration on them less that on one speed of the
    /// same total rate, `reps` runs each.
    fn of_speeds(&self, speeds: &[SimWorker], reps: usize) -> f64 {
        let rate: f64 = speeds.iter().map(|w| 1.0 / w.mean_ms).sum();
        let mean_ms = speeds.len() as f64 / rate;
        let cv = speeds.iter().map(|w| w.sd_ms / w.mean_ms).sum::<f64>() / speeds.len() as f64;
        let even = vec![
            SimWorker {
                mean_ms,
                sd_ms: cv * mean_ms,
            };
            speeds.len()
        ];
        let spec = |workers| Spec {
            tasks: self.tasks,
            ..self
                .view
                .simulation(workers, self.policy, self.view.factor())
        };
        // At one speed the policy reads one speed too (a rate-aware policy's weights even).
        let even_stats = task_stats(&even);
        let uneven = simulate(&spec(speeds), self.seed, reps);
        let even = simulate(
            &Spec {
                stats: &even_stats,
                ..spec(&even)
            },
            self.seed,
            reps,
        );
        (uneven - even).max(0.0)
    }
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
        ) + &self.tail_ms.map_or(String::new(), |(now, best)| {
            format!(
                "; uneven speeds: simulated tail {now:.1} ms at {}, {best:.1} ms at {}",
                self.now.workers, self.best.workers
            )
        })
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
                "tail_ms": self.tail_ms.map(|(now, best)| json!({"current": now, "proposed": best})),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PolicyName;
    use crate::tuning::TunerViewBuilder;

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
            tail_ms: None,
        }
    }

    /// 100 tasks over 12 workers, every other one 4× slower (other programs' load), the
    /// shared part broadcast on a 100 Mbit/s link, one chunk per worker (`static`).
    fn loaded(slow_ms: f64) -> TunerViewBuilder {
        loaded_tasks(slow_ms, 100)
    }

    fn loaded_tasks(slow_ms: f64, tasks: usize) -> TunerViewBuilder {
        let speeds: Vec<f64> = (0..12)
            .map(|w| if w % 2 == 0 { slow_ms } else { 4.3 })
            .collect();
        TunerViewBuilder::new(tasks, 12, 6.9)
            .worker_task_ms(&speeds)
            .link(0.1, 8e-5)
            .bytes(16.0, 320.0, 40_000.0)
            .policy(PolicyName::Static)
            .workers_range(1..=19)
    }

    /// With one chunk per worker, the slow workers' chunks end the iteration: `⌈100/n⌉` tasks
    /// at 17 ms, 153 ms at 12 workers and 102 from 17 on, where the model, dividing the work by the
    /// workers' total rate, sees a few percent. Each count is charged its own tail, and the
    /// proposal follows. The calibration holds nothing here, so no count is credited a tail:
    /// each is charged its own on top of the model. At even speeds, or with too few tasks per
    /// worker to tell a speed, nothing is simulated.
    #[test]
    fn uneven_speeds_charge_each_count_its_own_tail() {
        loaded(4.3).view(|view| assert!(Tail::of(view, 100).is_none()));
        loaded_tasks(17.0, 30).view(|view| assert!(Tail::of(view, 30).is_none()));
        loaded(17.0).view(|view| {
            let tail = Tail::of(view, 100).expect("uneven speeds");
            assert!(tail.at(12) > tail.at(17) + 15.0);
            let model = |n| view.model_ms(100, n).unwrap();
            assert!(1.0 - model(17) / model(12) < 0.05);
            let p = propose(view).expect("a proposal");
            assert!(p.to >= 17.0, "{}", p.to);
            assert!(p.gain > 0.15, "{}", p.gain);
            assert!(p.predicted_ms >= model(p.to as usize), "{}", p.predicted_ms);
            let reason = p.explanation.reason();
            assert!(reason.contains("uneven speeds: simulated tail"), "{reason}");
        });
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
