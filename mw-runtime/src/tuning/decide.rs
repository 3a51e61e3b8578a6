//! When a proposal becomes a decision (see README.md beside this file): it must hold for `persistence` iterations and
//! promise a gain above the measured noise; it must not undo a recent change, nor retry a
//! direction that was rolled back, unless conditions changed a lot (hysteresis); once made, it is
//! watched for `persistence` iterations and rolled back if the iterations got worse.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use super::Span;
use crate::tuning::tunables::{Change, Tunable, TunableId, TunableValue};

/// Relative gain below which no proposal is acted on, however quiet the measurements.
pub(crate) const MIN_GAIN: f64 = 0.03;
/// Relative spread of iteration times assumed until two iterations have been measured.
pub(crate) const DEFAULT_NOISE: f64 = 0.05;
/// Iterations a change is remembered for hysteresis.
pub(crate) const HYSTERESIS_ITERATIONS: usize = 20;
/// A relative change of task time, task count or bytes per task above which conditions count as
/// changed a lot.
pub(crate) const CONDITIONS_CHANGED: f64 = 0.3;
/// Predicted gain above which the first boundary of a run acts without waiting for persistence.
pub(crate) const COLD_START_GAIN: f64 = 0.5;
/// Share of the most that more workers could gain (`1 − from/to`, the work spread over them
/// with nothing else changed) above which the first look acts on them without waiting for
/// persistence: a doubling can never promise [`COLD_START_GAIN`], and from one worker on two
/// cores the first iteration otherwise runs on one worker.
pub(crate) const COLD_START_SHARE: f64 = 0.9;
/// Iterations kept for the noise estimate and the baseline.
const NOISE_WINDOW: usize = 8;

/// What a [`Tunlet`](super::Tunlet) proposes: a value for its tunable, with the gain it
/// predicts. The tuner acts on it only through the decision rules (persistence, a gain above
/// the noise, hysteresis), watches the change and rolls it back if the iterations got worse.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub(crate) change: Change,
    /// The value now and the value proposed, as numbers.
    pub(crate) from: f64,
    pub(crate) to: f64,
    /// Predicted relative improvement of the objective, in `(0, 1)`.
    pub(crate) gain: f64,
    /// How strongly the objective amplifies noise in iteration time (1 for time, 2 for `Pi`).
    pub(crate) sensitivity: f64,
    /// The model's iteration time with the proposed value, in ms.
    pub(crate) predicted_ms: f64,
    /// How far the tunlet's prediction of the value in force missed the time measured with it,
    /// relative to the prediction (0 when not known): a gain within the miss is not evidence.
    pub(crate) miss: f64,
    /// The inputs and the model's numbers, rendered only when the proposal is acted on.
    pub(crate) explanation: Explanation,
}

impl Proposal {
    /// Proposes `value` for the tunable `id` (a built-in one, [`TunableId::NWORKERS`],
    /// [`TunableId::FACTOR`] or [`TunableId::POLICY`], or one the program declared), predicting
    /// that the iterations take `gain` (a fraction, `0.1` for 10 %) less time with it; `reason`
    /// is logged with the decision if the proposal becomes one.
    pub fn new<T: TunableValue>(
        id: TunableId<T>,
        value: T,
        gain: f64,
        reason: impl Into<String>,
    ) -> Proposal {
        Proposal {
            change: id.change(value),
            // The tuner fills in the value in force and the value proposed as it compares
            // them, and the time predicted from its measurements.
            from: f64::NAN,
            to: f64::NAN,
            gain,
            sensitivity: 1.0,
            predicted_ms: f64::NAN,
            miss: 0.0,
            explanation: Explanation::declared(reason.into()),
        }
    }

    /// The tunable it is for.
    pub fn tunable(&self) -> Tunable {
        self.change.tunable()
    }

    /// The change it proposes.
    pub fn change(&self) -> &Change {
        &self.change
    }

    /// The predicted relative gain.
    pub fn gain(&self) -> f64 {
        self.gain
    }
}

/// A tunlet's account of its proposal: numbers, rendered only when the proposal becomes a
/// decision. Each built-in tunlet has its own beside it; a program's tunlet gives its words.
pub(crate) trait Account: fmt::Debug + Send + Sync {
    /// The one-line account logged as the decision's reason.
    fn reason(&self) -> String;

    /// Why, in a few words (the decision's summary adds the expected gain).
    fn words(&self) -> String;

    /// The expected gain, `percent` of the objective, in words: what gets better by how much.
    fn gain(&self, percent: f64) -> String {
        format!("{percent:.0}% less time")
    }

    /// Inputs and model numbers, for the metrics.
    fn details(&self) -> serde_json::Value;
}

/// Why a tunlet proposes what it does (see [`Account`]).
#[derive(Debug, Clone)]
pub(crate) struct Explanation(Arc<dyn Account>);

impl Explanation {
    pub(crate) fn new(account: impl Account + 'static) -> Self {
        Explanation(Arc::new(account))
    }

    /// A program's tunlet's: its own words.
    pub(crate) fn declared(reason: String) -> Self {
        Explanation::new(Declared(reason))
    }

    /// The one-line account logged as the decision's reason.
    pub(crate) fn reason(&self) -> String {
        self.0.reason()
    }

    /// Why, in a few words (the decision's summary adds the expected gain).
    pub(crate) fn words(&self) -> String {
        self.0.words()
    }

    /// The expected gain `gain` (a fraction) in words: what gets better by how much.
    pub(crate) fn gain(&self, gain: f64) -> String {
        self.0.gain((gain * 100.0).round())
    }

    /// Inputs and model numbers, for the metrics.
    pub(crate) fn details(&self) -> serde_json::Value {
        self.0.details()
    }
}

/// Two explanations are equal when they say the same.
impl PartialEq for Explanation {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.reason() == other.reason() && self.details() == other.details())
    }
}

/// A program's tunlet's account: its own words.
#[derive(Debug)]
struct Declared(String);

impl Account for Declared {
    fn reason(&self) -> String {
        self.0.clone()
    }

    fn words(&self) -> String {
        self.0.clone()
    }

    fn details(&self) -> serde_json::Value {
        serde_json::json!({
            "tunlet": "program",
            "reason": self.0,
        })
    }
}

/// A duration for people: `41.2 ms`, `0.35 ms`, `1234 ms`.
fn short_ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

/// The state of an application at a moment: if it moves a lot, old hysteresis no longer holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Conditions {
    pub task_ms: f64,
    pub tasks: f64,
    pub bytes_per_task: f64,
}

impl Conditions {
    fn changed_a_lot(&self, other: &Conditions) -> bool {
        let rel = |a: f64, b: f64| {
            let scale = a.abs().max(b.abs());
            scale > 0.0 && (a - b).abs() / scale > CONDITIONS_CHANGED
        };
        rel(self.task_ms, other.task_ms)
            || rel(self.tasks, other.tasks)
            || rel(self.bytes_per_task, other.bytes_per_task)
    }
}

/// A change made by the tuner, being watched.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Trial {
    pub tunable: Tunable,
    /// Its name, for the rollback's reason.
    pub name: String,
    pub from: f64,
    pub to: f64,
    /// The change that undoes it.
    pub back: Change,
    /// Mean score and time of the iterations before it, and the noise then.
    pub baseline: f64,
    pub baseline_ms: f64,
    pub noise: f64,
    pub sensitivity: f64,
    pub predicted_ms: f64,
    /// Scores and times of the iterations since.
    pub scores: Vec<f64>,
    pub times: Vec<f64>,
    pub conditions: Conditions,
    /// Whether the engine has applied it yet.
    pub applied: bool,
    /// Where a change made inside an iteration that takes effect there began: it is judged on
    /// the tasks that follow it in that iteration, against the stretch of the iteration before
    /// it.
    pub midway: Option<Span>,
    /// The iteration it was asked for in: at its end, or inside it for a change that waits for
    /// the next boundary.
    pub requested: usize,
}

/// What became of a trial.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Still watching.
    Watching,
    /// Kept.
    Kept,
    /// Worse: undo it with `back`, for `reason`.
    RollBack {
        back: Change,
        reason: String,
        /// The rollback in a few words.
        summary: String,
        measured_ms: f64,
        details: serde_json::Value,
    },
}

/// A value left: by an accepted change (`rolled_back = false`: went `from → to`) or by a rollback
/// (`to` was tried and `from` restored).
#[derive(Debug, Clone, PartialEq)]
struct ValueLeft {
    tunable: Tunable,
    from: f64,
    to: f64,
    rolled_back: bool,
    iteration: usize,
    conditions: Conditions,
}

/// What a look said of a tunable, for persistence.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Evidence<'a> {
    /// A proposal past the bar, not blocked by hysteresis.
    For(&'a Proposal),
    /// A proposal whose gain is within the noise, or blocked by hysteresis.
    Weak,
    /// No proposal: the value in force is the best the tunlet sees.
    Nothing,
}

/// Proposals in a row the same way for one tunable.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Streak {
    tunable: Tunable,
    /// +1 up, −1 down; for `policy`, the policy's number plus one.
    direction: f64,
    count: usize,
    /// The iteration of the streak's first look.
    since: usize,
}

/// Proposals on their way to decisions, for every tunable.
#[derive(Debug, Default)]
pub(crate) struct Decider {
    /// Per tunable: proposals in a row the same way.
    streaks: Vec<Streak>,
    left: VecDeque<ValueLeft>,
    /// Scores and times of recent iterations with the settings now in force.
    scores: VecDeque<(f64, f64)>,
    /// What the model left unexplained in recent iterations with the settings in force,
    /// relative to their time.
    residuals: VecDeque<f64>,
    /// The noise measured under the settings before.
    last_noise: Option<f64>,
    pub trial: Option<Trial>,
}

impl Decider {
    /// Records an iteration: its score, its time, and the share of its time the model did not
    /// explain (`(measured − model)/measured` at the settings it ran with).
    pub(super) fn scored(&mut self, score: f64, time_ms: f64, residual: f64) {
        if let Some(trial) = &mut self.trial {
            if trial.applied && trial.midway.is_none() {
                trial.scores.push(score);
                trial.times.push(time_ms);
            }
        }
        self.scores.push_back((score, time_ms));
        while self.scores.len() > NOISE_WINDOW {
            self.scores.pop_front();
        }
        if residual.is_finite() {
            self.residuals.push_back(residual);
            while self.residuals.len() > NOISE_WINDOW {
                self.residuals.pop_front();
            }
        }
    }

    /// Settings changed: the scores so far describe other settings. The noise measured under
    /// them stands until two iterations have run with the new ones.
    pub(super) fn settings_changed(&mut self) {
        if self.residuals.len() >= 2 {
            self.last_noise = Some(self.noise());
        }
        self.scores.clear();
        self.residuals.clear();
    }

    /// The measured noise: the standard deviation of what the model left unexplained in recent
    /// iterations with the settings in force, relative to their time. A change of load that the
    /// measurements explain (more work, more bytes) is not noise; jitter is. Until two
    /// iterations have run with the current settings, the noise measured before them, else
    /// [`DEFAULT_NOISE`].
    pub(super) fn noise(&self) -> f64 {
        if self.residuals.len() < 2 {
            return self.last_noise.unwrap_or(DEFAULT_NOISE);
        }
        let n = self.residuals.len() as f64;
        let mean = self.residuals.iter().sum::<f64>() / n;
        let var = self
            .residuals
            .iter()
            .map(|r| (r - mean).powi(2))
            .sum::<f64>()
            / (n - 1.0);
        var.sqrt()
    }

    /// Mean score and mean time of the last `count` iterations with the settings in force.
    pub(super) fn baseline(&self, count: usize) -> Option<(f64, f64)> {
        let recent = self.scores.iter().rev().take(count.max(1));
        let n = recent.len() as f64;
        (n > 0.0).then(|| {
            let (s, t) = recent.fold((0.0, 0.0), |(s, t), &(a, b)| (s + a, t + b));
            (s / n, t / n)
        })
    }

    /// The gain a proposal must promise: the noise, at least [`MIN_GAIN`], scaled by how
    /// strongly the objective amplifies noise.
    pub(super) fn threshold(&self, sensitivity: f64) -> f64 {
        self.noise().max(MIN_GAIN) * sensitivity
    }

    /// The gain `proposal` must promise: the [`threshold`](Decider::threshold), and more than
    /// its tunlet's prediction of the value in force missed the measured time by. A simulation
    /// that makes the iteration just measured last three times as long (messages charged as
    /// master time where the link overlaps them) predicts gains from fewer messages that the
    /// run never sees.
    pub(super) fn bar(&self, proposal: &Proposal) -> f64 {
        self.threshold(proposal.sensitivity).max(proposal.miss)
    }

    /// Counts what a look said of `tunable` at `iteration`; returns how many looks have
    /// proposed the same way past the bar (for `policy`, whose values have no order: the same
    /// policy), counting from 1.
    ///
    /// A [`Weak`](Evidence::Weak) look neither counts nor breaks the streak: a gain within the
    /// noise says nothing either way. Under a load that comes and goes, the look that sees a
    /// loaded phase clearly is one of several, and the looks between it and the next one see
    /// other proposals within the noise; if they broke the streak, a move worth 10 % in every
    /// loaded phase would never be made. A look that proposes nothing, or another way past the
    /// bar, breaks it; so does a streak left unconfirmed for [`HYSTERESIS_ITERATIONS`].
    pub(super) fn hold(
        &mut self,
        tunable: Tunable,
        evidence: Evidence<'_>,
        iteration: usize,
    ) -> usize {
        let index = match self.streaks.iter().position(|s| s.tunable == tunable) {
            Some(index) => index,
            None => {
                self.streaks.push(Streak {
                    tunable,
                    direction: 0.0,
                    count: 0,
                    since: iteration,
                });
                self.streaks.len() - 1
            }
        };
        let streak = &mut self.streaks[index];
        if iteration.saturating_sub(streak.since) >= HYSTERESIS_ITERATIONS {
            streak.count = 0;
        }
        let p = match evidence {
            Evidence::Weak => return streak.count,
            Evidence::Nothing => {
                streak.count = 0;
                return 0;
            }
            Evidence::For(p) => p,
        };
        let direction = if p.change.ordered() {
            (p.to - p.from).signum()
        } else {
            p.to + 1.0
        };
        if streak.count > 0 && streak.direction == direction {
            streak.count += 1;
        } else {
            *streak = Streak {
                tunable,
                direction,
                count: 1,
                since: iteration,
            };
        }
        streak.count
    }

    /// Iterations a proposal must hold before it is acted on. The starting values are a guess,
    /// not a measured choice, and every iteration spent at a poor one costs more than a later
    /// mistake would: at the first look of a run (its first checkpoint or boundary), a proposal
    /// that promises to at least halve the objective, or more workers that promise nearly all
    /// they could ([`COLD_START_SHARE`]), is acted on at once (the watch still rolls it back if
    /// it made things worse). Everywhere else, `persistence`.
    pub(super) fn persistence_needed(
        persistence: usize,
        first: bool,
        proposal: &Proposal,
    ) -> usize {
        let growing = proposal.change.tunable() == Tunable::NWORKERS && proposal.to > proposal.from;
        let nearly_all =
            growing && proposal.gain >= COLD_START_SHARE * (1.0 - proposal.from / proposal.to);
        if first && (proposal.gain >= COLD_START_GAIN || nearly_all) {
            1
        } else {
            persistence
        }
    }

    /// Forgets every streak (after a change, measurements describe other settings).
    pub(super) fn reset_streaks(&mut self) {
        self.streaks.clear();
    }

    /// Why `proposal` would undo a recent change, if it would.
    pub(super) fn blocked(
        &self,
        proposal: &Proposal,
        iteration: usize,
        now: &Conditions,
    ) -> Option<String> {
        let tunable = proposal.change.tunable();
        let v = proposal.to;
        self.left
            .iter()
            .filter(|l| l.tunable == tunable)
            // A direction that was rolled back stays closed while the conditions hold: on the
            // same machine and load, trying it again would cost the same again.
            .filter(|l| {
                l.rolled_back || iteration.saturating_sub(l.iteration) < HYSTERESIS_ITERATIONS
            })
            .filter(|l| !l.conditions.changed_a_lot(now))
            .find_map(|l| {
                let span = (l.to - l.from).abs();
                if !proposal.change.ordered() {
                    // Policies have no order: only the value rolled back from, or left, is
                    // closed.
                    return if l.rolled_back {
                        (v == l.to).then(|| {
                            format!(
                                "policy {} was rolled back at iteration {}",
                                l.to, l.iteration
                            )
                        })
                    } else {
                        (v == l.from).then(|| {
                            format!("policy {} was left at iteration {}", l.from, l.iteration)
                        })
                    };
                }
                if l.rolled_back {
                    // Moving from `from` towards `to` was worse: not that way again.
                    let same_way = (v - l.from).signum() == (l.to - l.from).signum();
                    same_way.then(|| {
                        format!(
                            "going from {} towards {} was rolled back at iteration {}",
                            l.from, l.to, l.iteration
                        )
                    })
                } else {
                    // `from` was left for `to`: do not return more than halfway.
                    ((v - l.from).abs() < span / 2.0)
                        .then(|| format!("{} was left at iteration {}", l.from, l.iteration))
                }
            })
    }

    /// Starts watching a change the tuner asked for; the baseline is the `persistence`
    /// iterations the proposal held for.
    /// A change made inside an iteration (`midway`: where, with the score of the stretch before
    /// it) has that score as its baseline instead.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start(
        &mut self,
        proposal: &Proposal,
        name: String,
        back: Change,
        conditions: Conditions,
        persistence: usize,
        midway: Option<(Span, f64)>,
        requested: usize,
    ) {
        let (baseline, baseline_ms) = match midway {
            Some((_, score)) => (score, f64::NAN),
            None => self
                .baseline(persistence)
                .unwrap_or((f64::INFINITY, f64::INFINITY)),
        };
        self.trial = Some(Trial {
            tunable: proposal.change.tunable(),
            name,
            from: proposal.from,
            to: proposal.to,
            back,
            baseline,
            baseline_ms,
            noise: self.noise(),
            sensitivity: proposal.sensitivity,
            predicted_ms: proposal.predicted_ms,
            scores: Vec::new(),
            times: Vec::new(),
            conditions,
            applied: false,
            midway: midway.map(|(span, _)| span),
            requested,
        });
    }

    /// Judges the trial once it has run `persistence` iterations: worse than the baseline by
    /// more than the threshold is rolled back. A change made inside an iteration is judged by
    /// [`judge_midway`](Decider::judge_midway) instead.
    pub(super) fn judge(&mut self, persistence: usize, iteration: usize) -> Verdict {
        let Some(trial) = &self.trial else {
            return Verdict::Watching;
        };
        if !trial.applied || trial.midway.is_some() || trial.scores.len() < persistence {
            return Verdict::Watching;
        }
        let n = trial.scores.len() as f64;
        let after = trial.scores.iter().sum::<f64>() / n;
        let measured_ms = trial.times.iter().sum::<f64>() / trial.times.len().max(1) as f64;
        self.conclude(after, measured_ms, iteration)
    }

    /// Judges a change made inside an iteration on the tasks done since: `after` is their score
    /// per task, `ms_per_task` their time per task.
    pub(super) fn judge_midway(
        &mut self,
        after: f64,
        ms_per_task: f64,
        iteration: usize,
    ) -> Verdict {
        if !self
            .trial
            .as_ref()
            .is_some_and(|t| t.applied && t.midway.is_some())
        {
            return Verdict::Watching;
        }
        self.conclude(after, ms_per_task, iteration)
    }

    /// Keeps the trial without judging it (too little followed it to tell).
    pub(super) fn keep(&mut self, iteration: usize) {
        if let Some(trial) = self.trial.take() {
            self.left.push_back(ValueLeft {
                tunable: trial.tunable,
                from: trial.from,
                to: trial.to,
                rolled_back: false,
                iteration,
                conditions: trial.conditions,
            });
            while self.left.len() > 8 {
                self.left.pop_front();
            }
        }
    }

    fn conclude(&mut self, after: f64, measured_ms: f64, iteration: usize) -> Verdict {
        let Some(trial) = self.trial.take() else {
            return Verdict::Watching;
        };
        let limit = trial.baseline * (1.0 + trial.noise.max(MIN_GAIN) * trial.sensitivity);
        let rolled_back = after > limit;
        self.left.push_back(ValueLeft {
            tunable: trial.tunable,
            from: trial.from,
            to: trial.to,
            rolled_back,
            iteration,
            conditions: trial.conditions,
        });
        while self.left.len() > 8 {
            self.left.pop_front();
        }
        if !rolled_back {
            return Verdict::Kept;
        }
        let details = serde_json::json!({
            "tunlet": "rollback",
            "tunable": trial.name,
            "tried": trial.to,
            "restored": trial.from,
            "baseline_ms": trial.baseline_ms,
            "measured_ms": measured_ms,
            "predicted_ms": trial.predicted_ms,
            "baseline_score": trial.baseline,
            "score": after,
            "limit": limit,
            "noise": trial.noise,
            "midway": trial.midway.is_some(),
        });
        let summary = if trial.midway.is_some() {
            "undone: the tasks since the change took longer".to_owned()
        } else {
            format!(
                "undone: {} an iteration against {} before",
                short_ms(measured_ms),
                short_ms(trial.baseline_ms)
            )
        };
        let reason = if trial.midway.is_some() {
            format!(
                "rollback: with {} = {} the tasks that followed took {measured_ms:.3} ms each: \
                 the objective's score per task {after:.3e} is worse than {:.3e} before the \
                 change beyond the noise (limit {limit:.3e})",
                trial.name, trial.to, trial.baseline,
            )
        } else {
            format!(
                "rollback: with {} = {} iterations took {measured_ms:.2} ms (predicted {:.2}) against \
                 {:.2} ms with {}: the objective's score per task {after:.3e} is worse than \
                 {:.3e} beyond the noise (limit {limit:.3e})",
                trial.name,
                trial.to,
                trial.predicted_ms,
                trial.baseline_ms,
                trial.from,
                trial.baseline,
            )
        };
        Verdict::RollBack {
            details,
            back: trial.back,
            reason,
            summary,
            measured_ms,
        }
    }

    /// A change asked for before iteration `index` that did not take effect at its start
    /// (another request for the same tunable won, or the value was already in force) is not
    /// watched. One asked for inside `index`, waiting for the boundary, still is.
    pub(super) fn drop_unapplied(&mut self, index: usize) {
        if self
            .trial
            .as_ref()
            .is_some_and(|t| !t.applied && t.requested < index)
        {
            self.trial = None;
        }
    }

    /// The tuner's change of `tunable` took effect: its trial starts. One judged over whole
    /// iterations takes as its baseline the last `persistence` iterations before it.
    pub(super) fn took_effect(&mut self, tunable: Tunable, persistence: usize) {
        let baseline = self.baseline(persistence);
        let Some(trial) = self.trial.as_mut().filter(|t| t.tunable == tunable) else {
            return;
        };
        trial.applied = true;
        if let (None, Some((score, ms))) = (trial.midway, baseline) {
            (trial.baseline, trial.baseline_ms) = (score, ms);
        }
    }

    /// Something else changed `tunable` (the application, an operator): stop watching it.
    pub(super) fn abandon(&mut self, tunable: Tunable) {
        if self.trial.as_ref().is_some_and(|t| t.tunable == tunable) {
            self.trial = None;
        }
    }
}
