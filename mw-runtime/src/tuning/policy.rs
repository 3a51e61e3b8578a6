//! `PolicyTunlet`: with `--policy auto`, the distribution policy, chosen by simulating the next
//! iteration under every policy of the portfolio with the measured task times, worker speeds
//! and link (the factor tunlet's simulation), the current factor for the policies that use one.
//! Where the workers' speeds moved from one iteration to the next, each candidate is simulated
//! under every set of speeds of the last few iterations (the policies reading what was measured
//! last), so that a policy that commits tasks to yesterday's speeds pays for it. The policies
//! the program registered by name are candidates too, simulated with fresh ones from their
//! factories.

use serde_json::json;

use super::TunerView;
use super::decide::{Account, Explanation, Proposal};
use super::factor::{Key, REPS, SAME_SPEED_MAX};
use super::simulate::{SimWorker, Spec, simulate, simulate_with};
use crate::policy::{PolicyChoice, PolicyName};
use crate::tuning::tunables::{TunableId, policy_number};

/// The built-in policies simulated: `daf` first (ties go to the earlier candidate), then every
/// other one in [`PolicyName::ALL`] order but `dpf` (the same cuts as `factoring`) and `auto`;
/// the registered ones follow them.
fn candidates() -> impl Iterator<Item = PolicyName> {
    let rest = PolicyName::ALL
        .into_iter()
        .filter(|p| !matches!(p, PolicyName::Daf | PolicyName::Dpf | PolicyName::Auto));
    std::iter::once(PolicyName::Daf).chain(rest)
}

/// The built-in policy of the specification a registered policy is simulated with:
/// `simulate_with` cuts with the policy its factory makes and does not read it.
const UNREAD: PolicyName = PolicyName::Static;

/// How much slower than the best a candidate proposed at the last look may simulate and still
/// be proposed again: about the spread of the simulated times of one candidate from one look
/// to the next (new task times, another seed).
const CLOSE: f64 = 0.03;

/// Iterations whose speeds the next one is simulated under: under load that comes and goes
/// every few iterations, the window holds both states.
const WINDOW: usize = 4;

/// The policy tunlet. Like the factor tunlet it keeps the candidates' simulated times while
/// the simulation's inputs hold.
#[derive(Debug, Default)]
pub(crate) struct PolicyTunlet {
    /// The last few simulations: under load that comes and goes, the speeds alternate.
    last: Vec<(Key, Vec<(PolicyChoice, f64)>)>,
    /// The policy proposed at the last look, if any.
    proposed: Option<PolicyChoice>,
    /// Each worker's speed at the end of the last iterations (at most [`WINDOW`]), oldest
    /// first, with the iteration measured.
    speeds: Vec<(usize, Vec<SimWorker>)>,
    /// Per policy that ran whole iterations: their measured times and the simulated ones, summed.
    reality: Vec<(PolicyChoice, f64, f64)>,
    /// Inside an iteration: the policy that has run it from its start so far, and its measured
    /// over simulated time; `None` once the policy changed within it.
    running: Option<(usize, PolicyChoice, Option<f64>)>,
    /// Times the candidates were simulated (not reused).
    pub simulations: usize,
}

/// The candidate a policy is simulated as: `dpf` cuts as `factoring`, `auto` as where it
/// starts.
fn simulated_as(policy: &PolicyChoice) -> PolicyChoice {
    match policy {
        PolicyChoice::BuiltIn(PolicyName::Dpf) => PolicyName::Factoring.into(),
        PolicyChoice::BuiltIn(name) => name.starting().into(),
        registered => registered.clone(),
    }
}

impl PolicyTunlet {
    /// Simulates the next iteration under every candidate (or reuses the last simulation) and
    /// proposes the fastest when it is not the current policy. Ties keep the current policy.
    ///
    /// It reads nothing but the public [`TunerView`], as a program's tunlet would.
    pub(super) fn propose(&mut self, view: &TunerView<'_>) -> Option<Proposal> {
        let running = view.policy();
        let registered = view.registered_policies();
        let number = |policy: &PolicyChoice| {
            policy_number(policy, registered.iter().map(|(name, _)| name.as_str()))
        };
        let inside = view.inside_iteration();
        let tasks = view.tasks();
        let n = view.workers().min(tasks).max(1);
        // Until every worker taking part has been measured the simulation would see them all
        // at the pooled speed, and choose for identical workers.
        if tasks == 0 || view.measured_workers() < n {
            return None;
        }
        let factor = view.factor();
        let workers = view.simulated_workers(n);
        // Inside an iteration the master simulates instead of sending, and the workers of
        // `ss` soon wait: one simulated run per candidate, whose tasks are many enough for
        // their sum to vary little.
        let reps = if inside { 1 } else { REPS };
        if !inside {
            self.remember(view.iteration(), &workers);
        }
        let scenarios = self.scenarios(&workers);
        let key = Key::new(view, running, &scenarios.concat());
        if let Some(at) = self.last.iter().position(|(last, _)| last.close_to(&key)) {
            // The one used goes last, the oldest is dropped first.
            let hit = self.last.remove(at);
            self.last.push(hit);
        } else {
            let seed = view.iteration() as u64;
            let built_in = candidates().map(|p| (PolicyChoice::from(p), None));
            let own = registered
                .iter()
                .map(|(name, factory)| (PolicyChoice::Registered(name.clone()), Some(factory)));
            let times = built_in
                .chain(own)
                .map(|(policy, factory)| {
                    let time = scenarios
                        .iter()
                        .map(|speeds| match (&policy, factory) {
                            (_, Some(factory)) => {
                                let spec = view.simulation(speeds, UNREAD, factor);
                                simulate_with(&spec, &|| factory(), seed, reps)
                            }
                            (PolicyChoice::BuiltIn(name), None) => {
                                simulate(&view.simulation(speeds, *name, factor), seed, reps)
                            }
                            (PolicyChoice::Registered(_), None) => f64::NAN,
                        })
                        .sum::<f64>()
                        / scenarios.len() as f64;
                    (policy, time)
                })
                .collect();
            self.simulations += 1;
            self.last.push((key, times));
            if self.last.len() > WINDOW {
                self.last.remove(0);
            }
        }
        let current = simulated_as(running);
        // What ran is compared with one simulated run: a whole iteration's or a tenth's tasks
        // are many enough for their sum to vary little.
        let simulate_current = |tasks: usize| {
            let seed = view.iteration() as u64;
            let spec = |policy| Spec {
                tasks,
                ..view.simulation(&workers, policy, factor)
            };
            match &current {
                PolicyChoice::BuiltIn(name) => Some(simulate(&spec(*name), seed, 1)),
                PolicyChoice::Registered(name) => registered
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, factory)| simulate_with(&spec(UNREAD), &|| factory(), seed, 1)),
            }
        };
        self.learn(view, &current, &simulate_current);
        let (_, simulated) = self.last.last()?;
        let times: Vec<(PolicyChoice, f64)> = simulated
            .iter()
            .map(|(p, t)| (p.clone(), t * self.reality_over_simulation(p)))
            .collect();
        let now = times.iter().find(|(p, _)| *p == current)?.1;
        let best = choose(&times, current.clone(), self.proposed.clone());
        self.proposed = (best.0 != current).then(|| best.0.clone());
        let (policy, time) = best.clone();
        if policy == current || now.is_nan() || now <= 0.0 {
            return None;
        }
        let gain = 1.0 - time / now;
        // As for the factor: the model's time at the current policy, scaled by the simulated
        // gain.
        let base = view
            .predicted_ms(tasks, view.workers())
            .unwrap_or(view.iteration_ms());
        Some(Proposal {
            from: number(running),
            to: number(&policy),
            change: TunableId::POLICY.change(policy),
            gain,
            sensitivity: 1.0,
            predicted_ms: base * (1.0 - gain),
            miss: 0.0,
            explanation: Explanation::new(PolicySimulation {
                tasks,
                workers: workers.iter().map(|w| w.mean_ms).collect(),
                factor,
                simulated: times,
                current: (current, now),
                best,
            }),
        })
    }
}

impl PolicyTunlet {
    /// Compares what `current` measured with its simulation of the same tasks at the speeds
    /// measured: over the iteration that just ended (when it ran it whole), or inside one over
    /// the tasks answered so far (while it has run it from the start).
    /// `simulate_current` simulates `current` over a number of tasks at the speeds measured.
    fn learn(
        &mut self,
        view: &TunerView<'_>,
        current: &PolicyChoice,
        simulate_current: &dyn Fn(usize) -> Option<f64>,
    ) {
        let index = view.iteration();
        let inside = view.inside_iteration();
        if inside {
            let same = match &self.running {
                Some((i, p, _)) if *i == index => p == current,
                _ => true,
            };
            if !same {
                self.running = Some((index, current.clone(), None));
                return;
            }
        } else {
            self.running = None;
            if view.mixed() {
                return;
            }
        }
        let (tasks, time_ms) = (view.measured_tasks(), view.iteration_ms());
        if simulated_as(view.measured_policy()) != *current || tasks == 0 || time_ms <= 0.0 {
            return;
        }
        let Some(simulated) = simulate_current(tasks) else {
            return;
        };
        if simulated <= 0.0 || !simulated.is_finite() {
            return;
        }
        if inside {
            let ratio = time_ms / simulated;
            self.running = Some((index, current.clone(), Some(ratio)));
        } else if let Some(r) = self.reality.iter_mut().find(|(p, _, _)| p == current) {
            r.1 += time_ms;
            r.2 += simulated;
        } else {
            self.reality.push((current.clone(), time_ms, simulated));
        }
    }

    /// How much longer `policy` took than its simulation, pooled over the iterations it ran
    /// whole (else over the part of this one it ran). A policy never run is taken to lose as
    /// little as the policy that lost least, and never less than its simulation: what every
    /// policy run lost is the machine's (a busy machine, a slow start), what one gained is its
    /// own (the simulation overrates what `ss`'s many messages cost on threads).
    fn reality_over_simulation(&self, policy: &PolicyChoice) -> f64 {
        let measured = |p: &PolicyChoice| {
            if let Some((_, measured, simulated)) = self.reality.iter().find(|(q, _, _)| q == p) {
                return Some(measured / simulated);
            }
            match &self.running {
                Some((_, q, Some(ratio))) if q == p => Some(*ratio),
                _ => None,
            }
        };
        measured(policy).unwrap_or_else(|| {
            let known = self
                .reality
                .iter()
                .map(|(p, _, _)| p)
                .chain(self.running.as_ref().map(|(_, p, _)| p))
                .filter_map(measured);
            let least = known.fold(f64::INFINITY, f64::min);
            if least.is_finite() {
                least.max(1.0)
            } else {
                1.0
            }
        })
    }

    /// Keeps the speeds measured in iteration `index` (once an iteration), dropping the oldest
    /// beyond [`WINDOW`] and any of another worker count.
    fn remember(&mut self, index: usize, workers: &[SimWorker]) {
        self.speeds
            .retain(|(i, w)| *i != index && w.len() == workers.len());
        self.speeds.push((index, workers.to_vec()));
        if self.speeds.len() > WINDOW {
            self.speeds.remove(0);
        }
    }

    /// The speeds the next tasks are simulated under: those measured now, and those of the
    /// last iterations when they differ from them by more than the simulation's own tolerance
    /// (a worker whose load came or went), so that steady speeds cost one simulation.
    fn scenarios(&self, now: &[SimWorker]) -> Vec<Vec<SimWorker>> {
        let mut scenarios = vec![now.to_vec()];
        let moved = |a: &[SimWorker], b: &[SimWorker]| {
            a.iter().zip(b).any(|(p, w)| {
                (p.mean_ms - w.mean_ms).abs() / p.mean_ms.max(w.mean_ms).max(f64::MIN_POSITIVE)
                    > SAME_SPEED_MAX
            })
        };
        for (_, past) in self.speeds.iter().rev() {
            if past.len() == now.len() && scenarios.iter().all(|s| moved(s, past)) {
                scenarios.push(past.clone());
            }
        }
        scenarios
    }
}

/// The policy to propose from the simulated `times`: the fastest, or `current` on a tie. Under
/// noise the candidates close to the best trade places from one look to the next, and a
/// proposal must hold for `persistence` looks to the same policy: so the policy proposed at
/// the last look is proposed again while it is within [`CLOSE`] of the best and faster than
/// `current`.
pub(crate) fn choose<P: PartialEq + Clone>(
    times: &[(P, f64)],
    current: P,
    proposed: Option<P>,
) -> (P, f64) {
    let time = |policy: &P| times.iter().find(|(p, _)| p == policy).map(|(_, t)| *t);
    let now = time(&current).unwrap_or(f64::INFINITY);
    let mut best = (current.clone(), now);
    for (p, t) in times {
        if *t < best.1 {
            best = (p.clone(), *t);
        }
    }
    let kept = proposed
        .filter(|p| *p != current && *p != best.0)
        .and_then(|p| time(&p).map(|t| (p, t)))
        .filter(|&(_, t)| t < now && t <= best.1 * (1.0 + CLOSE));
    kept.unwrap_or(best)
}

/// The numbers behind a proposal of the policy tunlet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PolicySimulation {
    tasks: usize,
    /// Each worker's mean task time, in ms.
    workers: Vec<f64>,
    factor: f64,
    simulated: Vec<(PolicyChoice, f64)>,
    current: (PolicyChoice, f64),
    best: (PolicyChoice, f64),
}

impl Account for PolicySimulation {
    fn reason(&self) -> String {
        let fastest = self.workers.iter().copied().fold(f64::INFINITY, f64::min);
        let slowest = self.workers.iter().copied().fold(0.0, f64::max);
        format!(
            "simulation: policy {} → {:.2} ms vs {} → {:.2} ms ({} candidates, {} tasks, {} \
             workers at {:.3}–{:.3} ms a task)",
            self.best.0,
            self.best.1,
            self.current.0,
            self.current.1,
            self.simulated.len(),
            self.tasks,
            self.workers.len(),
            fastest,
            slowest,
        )
    }

    fn words(&self) -> String {
        "fastest in simulation".to_owned()
    }

    fn details(&self) -> serde_json::Value {
        let simulated: Vec<_> = self
            .simulated
            .iter()
            .map(|(p, t)| json!({"policy": p.to_string(), "time_ms": t}))
            .collect();
        json!({
            "tunlet": "policy",
            "inputs": {
                "tasks": self.tasks,
                "worker_task_ms": self.workers,
                "factor": self.factor,
            },
            "simulated": simulated,
            "current": {"policy": self.current.0.to_string(), "time_ms": self.current.1},
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn speeds(means: &[f64]) -> Vec<SimWorker> {
        means
            .iter()
            .map(|&mean_ms| SimWorker {
                mean_ms,
                sd_ms: 0.0,
            })
            .collect()
    }

    #[test]
    fn the_candidates_are_daf_then_every_other_policy_but_dpf_and_auto() {
        let candidates: Vec<PolicyName> = candidates().collect();
        assert_eq!(candidates[0], PolicyName::Daf);
        assert_eq!(candidates.len(), PolicyName::ALL.len() - 2);
        for policy in PolicyName::ALL {
            let simulated = !matches!(policy, PolicyName::Dpf | PolicyName::Auto);
            assert_eq!(candidates.contains(&policy), simulated, "{policy}");
        }
    }

    #[test]
    fn a_policy_never_run_loses_what_every_policy_run_lost() {
        let (ss, daf, wf) = (
            PolicyChoice::from(PolicyName::Ss),
            PolicyChoice::from(PolicyName::Daf),
            PolicyChoice::from(PolicyName::Wf),
        );
        let mut tunlet = PolicyTunlet::default();
        assert_eq!(tunlet.reality_over_simulation(&wf), 1.0);
        // `daf` ran 20 % slower than simulated: so would any other on this machine.
        tunlet.reality.push((daf.clone(), 240.0, 200.0));
        assert!((tunlet.reality_over_simulation(&daf) - 1.2).abs() < 1e-12);
        assert!((tunlet.reality_over_simulation(&wf) - 1.2).abs() < 1e-12);
        // `ss` ran faster than simulated: its own gain, not lent to the others.
        tunlet.reality.push((ss.clone(), 90.0, 100.0));
        assert!((tunlet.reality_over_simulation(&ss) - 0.9).abs() < 1e-12);
        assert_eq!(tunlet.reality_over_simulation(&wf), 1.0);
        // Inside an iteration, the part run so far speaks for the policy running.
        let mut inside = PolicyTunlet {
            running: Some((0, ss.clone(), Some(1.1))),
            ..PolicyTunlet::default()
        };
        assert!((inside.reality_over_simulation(&ss) - 1.1).abs() < 1e-12);
        assert!((inside.reality_over_simulation(&wf) - 1.1).abs() < 1e-12);
        inside.running = Some((0, ss, None));
        assert_eq!(inside.reality_over_simulation(&wf), 1.0);
    }

    #[test]
    fn moved_speeds_are_simulated_too_steady_ones_once() {
        let mut tunlet = PolicyTunlet::default();
        let loaded = speeds(&[4.0, 1.0, 4.0, 1.0]);
        let free = speeds(&[1.0, 1.0, 1.0, 1.0]);
        tunlet.remember(0, &loaded);
        tunlet.remember(1, &speeds(&[4.2, 1.0, 3.9, 1.05]));
        // Within the simulation's tolerance of each other: one set of speeds.
        assert_eq!(tunlet.scenarios(&loaded).len(), 1);
        tunlet.remember(2, &free);
        tunlet.remember(3, &free);
        let both = tunlet.scenarios(&free);
        assert_eq!(both.len(), 2, "{both:?}");
        assert_eq!(both[0], free);
        // At most the last four iterations are kept: the loaded ones are forgotten.
        tunlet.remember(4, &free);
        tunlet.remember(5, &free);
        assert_eq!(tunlet.scenarios(&free).len(), 1);
    }
}
