//! The in-process tuner (the papers' MATE analyzer, DESIGN §7) and the external control
//! endpoint.
//!
//! At every iteration boundary the engine hands the tuner the iteration's `Observation`
//! (measure points, see [`crate::measure`]). The tuner folds it into a smoothed `Estimate` of
//! the model's inputs, judges the change it made last (kept or rolled back), and asks its two
//! tunlets for proposals: `factor` simulates the next iteration for candidate factors,
//! `workers` evaluates the performance model over the range of worker counts. A proposal
//! becomes a change only through the `decide` rules: persistence, a gain above noise,
//! hysteresis. Changes are requested through the [`TunablesHandle`], so they take effect at the
//! next boundary like any other, and are logged as decisions with their reason.
//!
//! Before an iteration's results come back, the tuner also predicts its time (`predicted_ms`),
//! from the measurements of the iterations before it. See `README.md` beside this file.

mod control;
mod decide;
mod estimate;
mod factor;
mod simulate;
mod workers;

#[cfg(test)]
mod tests;

pub use control::{ControlAddr, ControlStream, Reply};
pub(crate) use control::{ControlServer, Status};

use crate::config::{Objective, Protocol, RunConfig, TuningConfig};
use crate::measure::{Observation, TaskStats};
use crate::tunables::{Applied, Change, Source, Tunables, TunablesHandle, Why};
use decide::{Conditions, Decider, Verdict};
use estimate::Estimate;

/// `mo` and `k` as estimated after an iteration, for the metrics.
pub(crate) use estimate::Link;

/// The tuner of one run.
#[derive(Debug)]
pub(crate) struct Tuner {
    config: TuningConfig,
    protocol: Protocol,
    /// Chunks a worker holds ahead, as the engine sends them (for the factor's simulation).
    prefetch: usize,
    min_chunk: usize,
    estimate: Estimate,
    factor_tunlet: factor::FactorTunlet,
    decider: Decider,
    /// The model's calibration when the change being watched was made: restored if the change
    /// is rolled back, since what it measured belonged to settings left behind.
    calibration_before: f64,
}

impl Tuner {
    pub fn new(config: &RunConfig) -> Self {
        Tuner {
            config: config.tuning.clone(),
            protocol: config.protocol,
            prefetch: config.prefetch_depth(),
            min_chunk: config.min_chunk,
            estimate: Estimate::default(),
            factor_tunlet: factor::FactorTunlet::default(),
            decider: Decider::default(),
            calibration_before: 0.0,
        }
    }

    /// `mo` and `k` as last estimated.
    pub fn link(&self) -> Option<Link> {
        self.estimate.link
    }

    /// Takes note of the decisions applied at an iteration boundary: its own start being
    /// watched; a change from elsewhere ends the watch of that tunable.
    pub fn applied(&mut self, applied: &[Applied]) {
        if applied.is_empty() {
            return;
        }
        self.decider.settings_changed();
        self.decider.reset_streaks();
        for a in applied {
            match a.source {
                Source::Tuner => {
                    if let Some(trial) = &mut self.decider.trial {
                        if trial.tunable == a.decision.tunable {
                            trial.applied = true;
                        }
                    }
                }
                Source::Application | Source::External => {
                    self.decider.abandon(&a.decision.tunable);
                }
            }
        }
    }

    /// The predicted time of an iteration of `tasks` tasks with `workers` workers, made before
    /// any of its results is back; `None` before the first iteration has been measured.
    pub fn predict(&self, tasks: usize, workers: usize) -> Option<f64> {
        if let Some(trial) = &self.decider.trial {
            // A new factor's first iteration: the simulation's difference is in the decision.
            if trial.applied && trial.scores.is_empty() && trial.tunable == "factor" {
                return Some(trial.predicted_ms);
            }
        }
        self.estimate.predict(tasks, workers, self.protocol)
    }

    /// Folds in an iteration and requests the changes it calls for.
    pub fn observe(
        &mut self,
        obs: &Observation,
        current: &Tunables,
        healthy: usize,
        stats: &TaskStats,
        handle: &TunablesHandle,
    ) {
        self.decider.drop_unapplied();
        let residual = self.estimate.update(obs, self.protocol);
        let score = score(obs, self.config.objective);
        self.decider.scored(score, obs.facts.time_ms, residual);
        if self.config.mode == crate::config::TuneMode::Off {
            return;
        }
        let index = obs.facts.index;
        if let Verdict::RollBack {
            back,
            reason,
            measured_ms,
            details,
        } = self.decider.judge(self.config.persistence, index)
        {
            self.decider.reset_streaks();
            self.estimate.calibration_ms = self.calibration_before;
            let why = Why {
                source: Source::Tuner,
                reason,
                predicted_ms: self.predict_after(&back, obs, healthy),
                measured_ms: Some(measured_ms),
                details,
            };
            handle.request_tuned(back, why);
            return;
        }

        let held = handle.held();
        let in_trial = self.decider.trial.is_some();
        let tasks = obs.facts.tasks.max(1) as f64;
        let conditions = Conditions {
            task_ms: self.estimate.now.task_ms,
            tasks,
            bytes_per_task: (obs.bytes_to + obs.bytes_from) as f64 / tasks,
        };
        let setting = factor::Setting {
            tasks: obs.facts.tasks,
            workers: obs.facts.workers,
            factor: current.factor,
            policy: current.policy,
            min_chunk: self.min_chunk,
            protocol: self.protocol,
            prefetch: self.prefetch,
            stats,
        };
        let (lo, hi) = self.config.range(healthy.max(1));
        let mut chosen = None;
        for name in ["factor", "nworkers"] {
            let allowed = match name {
                "factor" => self.config.mode.tunes_factor(),
                _ => self.config.mode.tunes_workers(),
            } && !held.contains(&name);
            let proposal = if !allowed {
                None
            } else if name == "factor" {
                self.factor_tunlet.propose(&self.estimate, obs, &setting)
            } else {
                workers::propose(
                    &self.estimate,
                    obs,
                    current.nworkers.min(healthy).max(1),
                    workers::Range { lo, hi },
                    self.config.objective,
                    self.protocol,
                )
            };
            let proposal = proposal
                .filter(|p| p.gain > self.decider.threshold(p.sensitivity))
                .filter(|p| self.decider.blocked(p, index, &conditions).is_none());
            let streak = self.decider.hold(name, proposal.as_ref());
            let needed = proposal.as_ref().map_or(self.config.persistence, |p| {
                Decider::persistence_needed(self.config.persistence, index, p)
            });
            if streak >= needed && !in_trial && chosen.is_none() {
                chosen = proposal.map(|p| (p, streak));
            }
        }
        let Some((proposal, streak)) = chosen else {
            return;
        };
        let back = match proposal.change {
            Change::Factor(_) => Change::Factor(current.factor),
            _ => Change::Nworkers(current.nworkers),
        };
        let threshold = self.decider.threshold(proposal.sensitivity);
        let why = Why {
            source: Source::Tuner,
            reason: format!(
                "{}; held {streak} iterations, predicted gain {:.0}% > threshold {:.0}%",
                proposal.explanation.reason(),
                proposal.gain * 100.0,
                threshold * 100.0
            ),
            predicted_ms: Some(proposal.predicted_ms),
            measured_ms: Some(obs.facts.time_ms),
            details: proposal.explanation.details(),
        };
        if handle.request_tuned(proposal.change.clone(), why) {
            self.calibration_before = self.estimate.calibration_ms;
            self.decider
                .start(&proposal, back, conditions, self.config.persistence);
        }
    }

    /// The model's time for the next iteration once `change` is applied.
    fn predict_after(&self, change: &Change, obs: &Observation, healthy: usize) -> Option<f64> {
        let workers = match change {
            Change::Nworkers(n) => *n,
            _ => obs.facts.workers,
        };
        self.estimate
            .predict(obs.facts.tasks, workers.min(healthy.max(1)), self.protocol)
    }
}

/// The quantity the objective minimizes for one iteration, per task so that iterations of
/// different sizes compare: `Tt/M` for `time`, `n·Tt²/(Tc·M)` (`Pi` per task) for `index`.
pub(crate) fn score(obs: &Observation, objective: Objective) -> f64 {
    let tasks = obs.facts.tasks.max(1) as f64;
    let t = obs.facts.time_ms;
    match objective {
        Objective::Time => t / tasks,
        Objective::Index if obs.tc_ms > 0.0 => obs.active as f64 * t * t / (obs.tc_ms * tasks),
        Objective::Index => t / tasks,
    }
}
