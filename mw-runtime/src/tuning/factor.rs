//! `FactorTunlet`: the distribution factor of `fsc`, `factoring` and `dpf`, by simulating the
//! next iteration for each candidate (seed 004, DESIGN §7).

use serde_json::json;

use super::decide::{Explanation, Proposal};
use super::estimate::{Estimate, Inputs};
use super::simulate::{SimWorker, Spec, simulate};
use crate::config::Protocol;
use crate::measure::{Observation, TaskStats};
use crate::policy::PolicyName;
use crate::tunables::Change;

/// The factors tried: 0.1, 0.2, …, 1.0.
pub(crate) const CANDIDATES: [f64; 10] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
/// Simulated runs per candidate when task times vary.
pub(crate) const REPS: usize = 3;

/// The inputs of the simulation that do not depend on the factor.
#[derive(Debug)]
pub(crate) struct Setting<'a> {
    pub tasks: usize,
    pub workers: usize,
    pub factor: f64,
    pub policy: PolicyName,
    pub min_chunk: usize,
    pub protocol: Protocol,
    pub stats: &'a TaskStats,
}

/// The measured speed of the workers that will take part: the first `n` that took part in the
/// last iterations, each with its own mean and deviation; any missing one gets the pooled values.
pub(crate) fn sim_workers(est: &Estimate, n: usize) -> Vec<SimWorker> {
    let pooled = SimWorker {
        mean_ms: est.now.task_ms,
        sd_ms: est.now.task_sd_ms,
    };
    let mut workers: Vec<SimWorker> = est
        .workers
        .iter()
        .filter(|m| m.count() > 0)
        .map(|m| SimWorker {
            mean_ms: m.mean(),
            sd_ms: m.stddev(),
        })
        .take(n)
        .collect();
    workers.resize(n, pooled);
    workers
}

/// Simulates one iteration with `factor`, in ms.
pub(crate) fn simulated_time(est: &Estimate, s: &Setting<'_>, factor: f64, seed: u64) -> f64 {
    let workers = sim_workers(est, s.workers.min(s.tasks).max(1));
    let (mo, k) = est.link.map_or((0.0, 0.0), |l| (l.mo_ms, l.k_ms_per_byte));
    let spec = Spec {
        tasks: s.tasks,
        workers: &workers,
        policy: s.policy,
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
    };
    simulate(&spec, seed, REPS)
}

/// Simulates the next iteration for every candidate factor and the current one, and proposes
/// the fastest when it is not the current one. Ties keep the current factor, then prefer the
/// larger factor (fewer chunks).
pub(crate) fn propose(est: &Estimate, obs: &Observation, s: &Setting<'_>) -> Option<Proposal> {
    if !s.policy.uses_factor() || s.tasks == 0 {
        return None;
    }
    let seed = obs.facts.index as u64;
    let now = simulated_time(est, s, s.factor, seed);
    let mut best = (s.factor, now);
    let mut simulated = Vec::with_capacity(CANDIDATES.len());
    // Largest first, replaced only by a strictly faster one: ties keep the current factor,
    // then the larger.
    for &f in CANDIDATES.iter().rev() {
        let t = simulated_time(est, s, f, seed);
        simulated.push((f, t));
        if t < best.1 {
            best = (f, t);
        }
    }
    let (factor, time) = best;
    if factor == s.factor || now.is_nan() || now <= 0.0 {
        return None;
    }
    let gain = 1.0 - time / now;
    // The simulation leaves out what the model calibrates away; the prediction adds the
    // simulated difference to the model's time at the current factor.
    let base = est
        .predict(s.tasks, s.workers, s.protocol)
        .unwrap_or(obs.facts.time_ms);
    let predicted_ms = (base + time - now).max(0.0);
    let account = Account {
        policy: s.policy,
        tasks: s.tasks,
        workers: s.workers,
        inputs: est.now,
        mo_ms: est.link.map_or(0.0, |l| l.mo_ms),
        k_ms_per_byte: est.link.map_or(0.0, |l| l.k_ms_per_byte),
        simulated,
        current: (s.factor, now),
        best: (factor, time),
    };
    Some(Proposal {
        change: Change::Factor(factor),
        from: s.factor,
        to: factor,
        gain,
        sensitivity: 1.0,
        predicted_ms,
        explanation: Explanation::Factor(account),
    })
}

/// The numbers behind a proposal of the factor tunlet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Account {
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

impl Account {
    pub fn reason(&self) -> String {
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

    pub fn details(&self) -> serde_json::Value {
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
