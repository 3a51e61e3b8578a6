//! `PolicyTunlet`: with `--policy auto`, the distribution policy, chosen by simulating the next
//! iteration under every policy of the portfolio with the measured task times, worker speeds
//! and link (the factor tunlet's simulation), the current factor for the policies that use one.

use serde_json::json;

use super::decide::{Explanation, Proposal};
use super::estimate::Estimate;
use super::factor::{Key, REPS, Setting, sim_workers, spec};
use super::simulate::simulate;
use crate::measure::Observation;
use crate::policy::PolicyName;
use crate::tunables::Change;

/// The policies simulated: every one but `dpf` (the same cuts as `factoring`) and `auto`.
pub(crate) const CANDIDATES: [PolicyName; 15] = [
    PolicyName::Daf,
    PolicyName::Static,
    PolicyName::Fsc,
    PolicyName::Factoring,
    PolicyName::Ss,
    PolicyName::Gss,
    PolicyName::Tss,
    PolicyName::Fac2,
    PolicyName::Wf,
    PolicyName::AwfB,
    PolicyName::AwfC,
    PolicyName::AwfD,
    PolicyName::AwfE,
    PolicyName::Af,
    PolicyName::Mfsc,
];

/// How much slower than the best a candidate proposed at the last look may simulate and still
/// be proposed again: about the spread of the simulated times of one candidate from one look
/// to the next (new task times, another seed).
const CLOSE: f64 = 0.03;

/// The policy tunlet. Like the factor tunlet it keeps the candidates' simulated times while
/// the simulation's inputs hold.
#[derive(Debug, Default)]
pub(crate) struct PolicyTunlet {
    last: Option<(Key, Vec<(PolicyName, f64)>)>,
    /// The policy proposed at the last look, if any.
    proposed: Option<PolicyName>,
    /// Times the candidates were simulated (not reused).
    pub simulations: usize,
}

/// The number a policy stands for in a proposal (its place in [`PolicyName::ALL`]).
fn number(policy: PolicyName) -> f64 {
    PolicyName::ALL
        .iter()
        .position(|&p| p == policy)
        .unwrap_or(0) as f64
}

impl PolicyTunlet {
    /// Simulates the next iteration under every candidate (or reuses the last simulation) and
    /// proposes the fastest when it is not the current policy. Ties keep the current policy.
    pub fn propose(
        &mut self,
        est: &Estimate,
        obs: &Observation,
        s: &Setting<'_>,
    ) -> Option<Proposal> {
        let n = s.workers.min(s.tasks).max(1);
        // Until every worker taking part has been measured the simulation would see them all
        // at the pooled speed, and choose for identical workers.
        if s.tasks == 0 || est.workers.iter().filter(|m| m.count() > 0).count() < n {
            return None;
        }
        let workers = sim_workers(est, n);
        let key = Key::new(est, s, &workers);
        if !self
            .last
            .as_ref()
            .is_some_and(|(last, _)| last.close_to(&key))
        {
            let seed = obs.facts.index as u64;
            let times = CANDIDATES
                .iter()
                .map(|&policy| {
                    let mut spec = spec(est, s, &workers, s.factor);
                    spec.policy = policy;
                    (policy, simulate(&spec, seed, REPS))
                })
                .collect();
            self.simulations += 1;
            self.last = Some((key, times));
        }
        let (_, times) = self.last.as_ref()?;
        let current = match s.policy {
            PolicyName::Dpf => PolicyName::Factoring,
            other => other.starting(),
        };
        let now = times.iter().find(|(p, _)| *p == current)?.1;
        let best = choose(times, current, self.proposed);
        self.proposed = (best.0 != current).then_some(best.0);
        let (policy, time) = best;
        if policy == current || now.is_nan() || now <= 0.0 {
            return None;
        }
        let gain = 1.0 - time / now;
        // As for the factor: the model's time at the current policy, scaled by the simulated
        // gain.
        let base = est
            .predict(s.tasks, s.workers, s.protocol)
            .unwrap_or(obs.facts.time_ms);
        Some(Proposal {
            change: Change::Policy(policy),
            from: number(s.policy),
            to: number(policy),
            gain,
            sensitivity: 1.0,
            predicted_ms: base * (1.0 - gain),
            explanation: Explanation::Policy(PolicySimulation {
                tasks: s.tasks,
                workers: workers.iter().map(|w| w.mean_ms).collect(),
                factor: s.factor,
                simulated: times.clone(),
                current: (current, now),
                best,
            }),
        })
    }
}

/// The policy to propose from the simulated `times`: the fastest, or `current` on a tie. Under
/// noise the candidates close to the best trade places from one look to the next, and a
/// proposal must hold for `persistence` looks to the same policy: so the policy proposed at
/// the last look is proposed again while it is within [`CLOSE`] of the best and faster than
/// `current`.
pub(crate) fn choose(
    times: &[(PolicyName, f64)],
    current: PolicyName,
    proposed: Option<PolicyName>,
) -> (PolicyName, f64) {
    let time = |policy| times.iter().find(|(p, _)| *p == policy).map(|&(_, t)| t);
    let now = time(current).unwrap_or(f64::INFINITY);
    let mut best = (current, now);
    for &(p, t) in times {
        if t < best.1 {
            best = (p, t);
        }
    }
    let kept = proposed
        .filter(|&p| p != current && p != best.0)
        .and_then(|p| time(p).map(|t| (p, t)))
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
    simulated: Vec<(PolicyName, f64)>,
    current: (PolicyName, f64),
    best: (PolicyName, f64),
}

impl PolicySimulation {
    pub fn reason(&self) -> String {
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

    pub fn details(&self) -> serde_json::Value {
        let simulated: Vec<_> = self
            .simulated
            .iter()
            .map(|&(p, t)| json!({"policy": p.as_str(), "time_ms": t}))
            .collect();
        json!({
            "tunlet": "policy",
            "inputs": {
                "tasks": self.tasks,
                "worker_task_ms": self.workers,
                "factor": self.factor,
            },
            "simulated": simulated,
            "current": {"policy": self.current.0.as_str(), "time_ms": self.current.1},
        })
    }
}
