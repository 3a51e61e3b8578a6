//! `FactorTunlet`: the distribution factor of `fsc`, `factoring` and `dpf`, by simulating the
//! next iteration for each candidate (Morajko et al. 2005).

use serde_json::json;

use super::TunerView;
use super::decide::{Account, CONDITIONS_CHANGED, Explanation, MIN_GAIN, Proposal};
use super::estimate::{Estimate, Inputs};
use super::simulate::{SimWorker, Spec, simulate};
use crate::measure::TaskStats;
use crate::policy::{PolicyChoice, PolicyName};
use crate::protocol::Protocol;
use crate::tuning::tunables::TunableId;

/// The factors tried: 0.1, 0.2, …, 1.0.
pub(crate) const CANDIDATES: [f64; 10] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
/// Simulated runs per candidate when task times vary.
pub(crate) const REPS: usize = 3;
/// Relative change of the pooled inputs of the simulation below which it still stands.
pub(crate) const SAME_INPUTS: f64 = 0.1;
/// The same for the workers' speeds, each estimated from a few tasks: the root mean square of
/// their relative changes, and the largest one (a worker that became loaded).
pub(crate) const SAME_SPEEDS_RMS: f64 = 0.15;
pub(crate) const SAME_SPEED_MAX: f64 = 0.5;
/// Looks let pass at most between two simulations while they find nothing worth proposing.
pub(crate) const MAX_REST: usize = 8;

/// The inputs of the simulation that do not depend on the factor.
#[derive(Debug, Clone)]
pub(crate) struct Setting<'a> {
    pub tasks: usize,
    pub workers: usize,
    pub factor: f64,
    /// The policy in force: a built-in one or one the program registered.
    pub policy: PolicyChoice,
    pub min_chunk: usize,
    pub protocol: Protocol,
    /// Chunks a worker may hold ahead.
    pub prefetch: usize,
    pub stats: &'a TaskStats,
}

impl<'a> Setting<'a> {
    /// The setting a look is for.
    pub(crate) fn of(
        look: &super::Look<'a>,
        min_chunk: usize,
        protocol: Protocol,
        prefetch: usize,
    ) -> Self {
        Setting {
            tasks: look.remaining,
            workers: look.obs.facts.workers,
            factor: look.current.factor,
            policy: look.current.policy.clone(),
            min_chunk,
            protocol,
            prefetch,
            stats: look.stats,
        }
    }
}

/// The measured speed of the workers that will take part: the first `n` that took part in the
/// last iterations, each with its own mean and deviation; any missing one gets the pooled values.
pub(crate) fn sim_workers(est: &Estimate, n: usize) -> Vec<SimWorker> {
    let pooled = SimWorker {
        mean_ms: est.now.task_ms,
        sd_ms: est.now.task_sd_ms,
    };
    // Those that took part in the last iteration first: a worker lost, parked, or still busy
    // with an older chunk keeps the moments of the last iteration it took part in, and the
    // engine then takes a worker of a higher index in its place.
    let measured = |took_part: bool| {
        est.workers
            .iter()
            .enumerate()
            .filter(move |&(i, m)| m.count() > 0 && est.took_part(i) == took_part)
            .map(|(_, m)| SimWorker {
                mean_ms: m.mean(),
                sd_ms: m.stddev(),
            })
    };
    let mut workers: Vec<SimWorker> = measured(true).chain(measured(false)).take(n).collect();
    workers.resize(n, pooled);
    workers
}

/// What the tunlets simulate: the setting's tasks on `workers`, cut by `policy` with `factor`,
/// with the link, the bytes and the master's time as estimated.
pub(crate) fn spec<'a>(
    est: &Estimate,
    s: &Setting<'a>,
    workers: &'a [SimWorker],
    policy: PolicyName,
    factor: f64,
) -> Spec<'a> {
    let (mo, k) = est.link.map_or((0.0, 0.0), |l| (l.mo_ms, l.k_ms_per_byte));
    Spec {
        tasks: s.tasks,
        workers,
        policy,
        factor,
        min_chunk: s.min_chunk,
        stats: s.stats,
        protocol: s.protocol,
        mo_ms: mo,
        k_ms_per_byte: k,
        task_bytes: est.now.to_per_task,
        result_bytes: est.now.from_per_task,
        shared_bytes: est.shared_bytes,
        recover_ms_per_task: est.now.recover_per_task_ms,
        serial_ms: est.now.serial_ms,
        prefetch: s.prefetch,
    }
}

/// The factor tunlet. Simulating eleven factors costs tens of microseconds per worker, so the
/// candidates' times are kept and reused while the simulation's inputs hold: the setting exactly
/// but for the task count, the task count (times scaled to it), the pooled task times, bytes,
/// `mo` and `k` within [`SAME_INPUTS`], the workers' speeds within
/// [`SAME_SPEEDS_RMS`] overall and [`SAME_SPEED_MAX`] each — closer than iteration-to-iteration
/// jitter moves them, far closer than a change of load does.
///
/// Where the simulations keep finding nothing worth proposing (no factor faster by more than
/// [`MIN_GAIN`] and than the simulation missed the measured time by), they are made less and
/// less often: 1, 2, 4, … up to [`MAX_REST`] looks apart, and at every look again once the
/// setting, the task count, the pooled task time or that of the slower half of the workers
/// moved by [`CONDITIONS_CHANGED`] (load came or went). Where each worker's speed comes from
/// a few tasks of microseconds (Xfire on many workers) the inputs never hold, and simulating at
/// every boundary would cost a share of the run where no factor can gain anything.
#[derive(Debug, Default)]
pub(crate) struct FactorTunlet {
    last: Option<Simulated>,
    /// Times the candidates were simulated (not reused).
    pub simulations: usize,
    /// Looks still to let pass before simulating again, and how many were let pass last.
    rest: usize,
    backoff: usize,
}

/// Candidates simulated for some inputs.
#[derive(Debug)]
struct Simulated {
    key: Key,
    /// The tasks simulated, and their pooled mean time.
    tasks: usize,
    task_ms: f64,
    /// The current factor's time, and (factor, time) for every candidate, largest first.
    now: f64,
    candidates: Vec<(f64, f64)>,
}

/// What a simulation depends on: the setting exactly but for the task count, the task count
/// and the measured inputs approximately.
#[derive(Debug, PartialEq)]
pub(crate) struct Key {
    exact: (usize, PolicyChoice, u64, usize, Protocol),
    /// Pooled inputs: (value, scale below which differences do not count).
    pooled: Vec<(f64, f64)>,
    /// Each worker's mean task time.
    speeds: Vec<f64>,
}

impl Key {
    /// The key of simulating the view's tasks under `policy` on `workers`.
    pub(crate) fn new(view: &TunerView<'_>, policy: &PolicyChoice, workers: &[SimWorker]) -> Key {
        let (mo, k) = (
            view.mo_ms().unwrap_or(0.0),
            view.k_ms_per_byte().unwrap_or(0.0),
        );
        let task = view.task_ms().max(f64::MIN_POSITIVE);
        let bytes = view.task_bytes() + view.result_bytes() + 1.0;
        Key {
            exact: (
                workers.len(),
                policy.clone(),
                view.factor().to_bits(),
                view.min_chunk(),
                view.protocol(),
            ),
            pooled: vec![
                (view.tasks() as f64, 1.0),
                (task, task),
                (view.task_sd_ms(), task),
                (view.task_bytes(), bytes),
                (view.result_bytes(), bytes),
                (view.shared_bytes(), bytes),
                (view.recover_ms_per_task(), task),
                (view.serial_ms(), task),
                (mo, task),
                (k * bytes, task),
            ],
            speeds: workers.iter().map(|w| w.mean_ms).collect(),
        }
    }

    /// The mean task time of the slower half of the workers: where a load on some of them
    /// shows, and the jitter of single workers' few tasks averages out.
    fn slower_half(&self) -> f64 {
        let mut speeds = self.speeds.clone();
        speeds.sort_by(|a, b| b.total_cmp(a));
        let half = &speeds[..speeds.len().div_ceil(2)];
        half.iter().sum::<f64>() / half.len().max(1) as f64
    }

    pub(crate) fn close_to(&self, other: &Key) -> bool {
        let relative = |a: f64, b: f64, floor: f64| (a - b).abs() / a.abs().max(b.abs()).max(floor);
        let pooled = self.pooled.iter().zip(&other.pooled);
        let speeds: Vec<f64> = self
            .speeds
            .iter()
            .zip(&other.speeds)
            .map(|(&a, &b)| relative(a, b, f64::MIN_POSITIVE))
            .collect();
        let rms = (speeds.iter().map(|r| r * r).sum::<f64>() / speeds.len().max(1) as f64).sqrt();
        self.exact == other.exact
            && self.speeds.len() == other.speeds.len()
            && pooled
                .into_iter()
                .all(|(&(a, scale), &(b, _))| relative(a, b, scale) <= SAME_INPUTS)
            && rms <= SAME_SPEEDS_RMS
            && speeds.iter().all(|&r| r <= SAME_SPEED_MAX)
    }
}

impl FactorTunlet {
    /// Simulates the next iteration for every candidate factor and the current one (or reuses
    /// the last simulation, see [`FactorTunlet`]), and proposes the fastest when it is not the
    /// current one. Ties keep the current factor, then prefer the larger factor (fewer chunks).
    /// `inside` an iteration or at its boundary: only at a boundary does the simulation of the
    /// factor in force describe the iteration measured.
    ///
    /// It reads nothing but the public [`TunerView`], as a program's tunlet would.
    pub(super) fn propose_at(&mut self, view: &TunerView<'_>) -> Option<Proposal> {
        // A registered policy is `auto`'s choice: the factor tunlet leaves it alone.
        let policy = match view.policy() {
            PolicyChoice::BuiltIn(name) => *name,
            PolicyChoice::Registered(_) => return None,
        };
        let tasks = view.tasks();
        if !policy.uses_factor() || tasks == 0 {
            return None;
        }
        let workers = view.simulated_workers(view.workers().min(tasks).max(1));
        let key = Key::new(view, view.policy(), &workers);
        let reused = self
            .last
            .as_ref()
            .is_some_and(|last| last.key.close_to(&key));
        if !reused {
            let moved = self.last.as_ref().is_none_or(|last| {
                let apart = |a: f64, b: f64| (a - b).abs() > CONDITIONS_CHANGED * a.max(b);
                last.key.exact != key.exact
                    || apart(last.tasks as f64, tasks as f64)
                    || apart(last.task_ms, view.task_ms())
                    || apart(last.key.slower_half(), key.slower_half())
            });
            if self.rest > 0 && !moved {
                self.rest -= 1;
                return None;
            }
            if moved {
                self.backoff = 0;
            }
            let seed = view.iteration() as u64;
            let time = |factor| simulate(&view.simulation(&workers, policy, factor), seed, REPS);
            let candidates: Vec<(f64, f64)> =
                CANDIDATES.iter().rev().map(|&f| (f, time(f))).collect();
            // The factor in force is usually a candidate: simulated once.
            let now = match candidates.iter().find(|c| c.0 == view.factor()) {
                Some(&(_, t)) => t,
                None => time(view.factor()),
            };
            self.simulations += 1;
            self.last = Some(Simulated {
                key,
                tasks,
                task_ms: view.task_ms(),
                now,
                candidates,
            });
        }
        let last = self.last.as_ref()?;
        // Simulated for a task count within a tenth of this one: each time in proportion.
        let scale = tasks as f64 / last.tasks.max(1) as f64;
        let candidates: Vec<(f64, f64)> = last
            .candidates
            .iter()
            .map(|&(f, t)| (f, t * scale))
            .collect();
        let proposal = propose_from(view, policy, last.now * scale, &candidates);
        if !reused {
            let worth = proposal
                .as_ref()
                .is_some_and(|p| p.gain > p.miss.max(MIN_GAIN));
            self.backoff = if worth {
                0
            } else {
                (self.backoff * 2).clamp(1, MAX_REST)
            };
            self.rest = self.backoff;
        }
        proposal
    }
}

/// The proposal from simulated times: the current factor's, and every candidate's (largest
/// first, so that ties keep the current factor, then the larger).
fn propose_from(
    view: &TunerView<'_>,
    policy: PolicyName,
    now: f64,
    candidates: &[(f64, f64)],
) -> Option<Proposal> {
    let current = view.factor();
    let mut best = (current, now);
    for &(f, t) in candidates {
        if t < best.1 {
            best = (f, t);
        }
    }
    let simulated = candidates.to_vec();
    let (factor, time) = best;
    if factor == current || now.is_nan() || now <= 0.0 {
        return None;
    }
    let gain = 1.0 - time / now;
    // The simulation leaves out what the model calibrates away; the prediction scales the
    // model's time at the current factor by the simulated gain. (Adding the simulated
    // difference instead can go below zero when the simulation sees a load imbalance the
    // balanced model does not.)
    let tasks = view.tasks();
    let base = view
        .predicted_ms(tasks, view.workers())
        .unwrap_or(view.iteration_ms());
    let predicted_ms = base * (1.0 - gain);
    // At a boundary the simulation of the factor in force is of the iteration just measured:
    // how far it missed bounds what its differences can be trusted for. Over the larger of the
    // two, so that it stays below 1: a simulation that leaves out time the iteration spent
    // (an underestimate) still lets a large enough gain through.
    let measured = view.iteration_ms();
    let miss = if !view.inside_iteration()
        && tasks == view.measured_tasks()
        && !view.mixed()
        && measured > 0.0
    {
        (now - measured).abs() / now.max(measured)
    } else {
        0.0
    };
    let account = FactorSimulation {
        policy,
        tasks,
        workers: view.workers(),
        inputs: view.inputs(),
        mo_ms: view.mo_ms().unwrap_or(0.0),
        k_ms_per_byte: view.k_ms_per_byte().unwrap_or(0.0),
        simulated,
        current: (current, now),
        best: (factor, time),
    };
    Some(Proposal {
        change: TunableId::FACTOR.change(factor),
        from: current,
        to: factor,
        gain,
        sensitivity: 1.0,
        predicted_ms,
        miss,
        explanation: Explanation::new(account),
    })
}

/// The numbers behind a proposal of the factor tunlet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FactorSimulation {
    policy: PolicyName,
    tasks: usize,
    workers: usize,
    inputs: Inputs,
    mo_ms: f64,
    k_ms_per_byte: f64,
    /// (factor, simulated ms) for every candidate.
    simulated: Vec<(f64, f64)>,
    current: (f64, f64),
    best: (f64, f64),
}

impl Account for FactorSimulation {
    fn reason(&self) -> String {
        format!(
            "simulation: factor {} → {:.2} ms vs {} → {:.2} ms ({} candidates, {} workers, \
             μ {:.3} ms, σ {:.3} ms, mo {:.4} ms, k {:.3e} ms/B)",
            self.best.0,
            self.best.1,
            self.current.0,
            self.current.1,
            self.simulated.len(),
            self.workers,
            self.inputs.task_ms,
            self.inputs.task_sd_ms,
            self.mo_ms,
            self.k_ms_per_byte,
        )
    }

    fn words(&self) -> String {
        "fastest in simulation".to_owned()
    }

    fn details(&self) -> serde_json::Value {
        let simulated: Vec<_> = self
            .simulated
            .iter()
            .map(|&(f, t)| json!({"factor": f, "time_ms": t}))
            .collect();
        json!({
            "tunlet": "factor",
            "policy": self.policy.as_str(),
            "inputs": {
                "tasks": self.tasks,
                "workers": self.workers,
                "task_mean_ms": self.inputs.task_ms,
                "task_stddev_ms": self.inputs.task_sd_ms,
                "mo_ms": self.mo_ms,
                "k_ms_per_byte": self.k_ms_per_byte,
                "recover_ms_per_task": self.inputs.recover_per_task_ms,
            },
            "simulated": simulated,
            "current": {"factor": self.current.0, "time_ms": self.current.1},
        })
    }
}
