//! Tuning: the tunables ([`tunables`]), their configuration ([`config`]), the in-process tuner
//! (the papers' MATE analyzer) and the external control endpoint ([`control`]).
//!
//! At every iteration boundary the engine hands the tuner the iteration's `Observation`
//! (the measure points of `measure.rs`). The tuner folds it into a smoothed `Estimate` of
//! the model's inputs, judges the change it made last (kept or rolled back), and asks its
//! tunlets for proposals: `factor` simulates the next iteration for candidate factors,
//! `workers` evaluates the performance model over the range of worker counts, and with
//! `--policy auto` `policy` simulates it under every policy of the portfolio. A proposal
//! becomes a change only through the `decide` rules: persistence, a gain above noise,
//! hysteresis. Changes are requested through the [`TunablesHandle`], take effect when their
//! tunable says ([`TakesEffect`]), are judged on the work done with them, and are logged as
//! decisions with their reason.
//!
//! Before an iteration's results come back, the tuner also predicts its time (`predicted_ms`),
//! from the measurements of the iterations before it. See `README.md` beside this file.

pub mod config;
pub mod control;
mod decide;
mod estimate;
mod factor;
mod machine;
mod policy;
mod queue;
pub mod simulate;
pub mod tunables;
mod view;
mod workers;

#[cfg(test)]
mod tests;

pub use crate::layout::Layout;
pub use decide::Proposal;
pub use machine::Machine;
pub use view::{TunerView, TunerViewBuilder};

use std::fmt;

use crate::measure::{Moments, Observation, TaskStats};
use crate::policy::Registry;
use crate::protocol::Protocol;
use crate::tuning::tunables::{
    Applied, Change, Source, TakesEffect, Tunable, TunableId, Tunables, TunablesHandle, Why,
};
use config::{Objective, TuningConfig};
use decide::{Conditions, Decider, Evidence, Verdict};
use estimate::Estimate;

/// `mo` and `k` as estimated after an iteration, for the metrics.
pub(crate) use estimate::Link;

/// What the tuner takes of the run's configuration (the configuration sits above tuning: it
/// holds the tuning's own section, the control address, the tunables' starting values).
#[derive(Debug, Clone)]
pub(crate) struct TunerSetup {
    pub tuning: TuningConfig,
    pub protocol: Protocol,
    /// Chunks a worker holds ahead, as the engine sends them.
    pub prefetch: usize,
    pub min_chunk: usize,
    /// `--policy auto`: the policy is tuned too.
    pub auto_policy: bool,
    pub quiet: bool,
}

/// The tuner of one run.
#[derive(Debug)]
pub(crate) struct Tuner {
    config: TuningConfig,
    /// What the choice of `nworkers` minimizes in this run (configured, or by what a parked
    /// worker costs on its backend).
    objective: Objective,
    protocol: Protocol,
    /// Chunks a worker holds ahead, as the engine sends them (for the factor's simulation).
    prefetch: usize,
    min_chunk: usize,
    estimate: Estimate,
    /// Asked in this order: the policy (with `--policy auto`), the factor, the worker count,
    /// then the program's own.
    tunlets: Vec<Box<dyn Tunlet>>,
    decider: Decider,
    /// The model's calibration when the change being watched was made: restored if the change
    /// is rolled back, since what it measured belonged to settings left behind.
    calibration_before: f64,
    /// Where the current iteration's stretch of the settings in force began: its start, or
    /// the last change made inside it.
    mark: Span,
    /// Whether the tunlets have been asked before in this run.
    looked: bool,
    /// The policies the program registered: with `--policy auto`, candidates too.
    policies: Registry,
    /// Whether warnings are left unsaid (`--quiet`).
    quiet: bool,
    /// Why proposals were dropped, each said once.
    dropped: Vec<String>,
}

impl Tuner {
    /// The tuner of a run set up as `setup`, its workers on the machines of `layout` when
    /// known, choosing `nworkers` for `objective`.
    pub(crate) fn new(setup: TunerSetup, layout: Option<Layout>, objective: Objective) -> Self {
        Tuner {
            config: setup.tuning,
            objective,
            protocol: setup.protocol,
            prefetch: setup.prefetch,
            min_chunk: setup.min_chunk,
            estimate: Estimate::on(layout),
            tunlets: built_in_tunlets(setup.auto_policy),
            decider: Decider::default(),
            calibration_before: 0.0,
            mark: Span::default(),
            looked: false,
            policies: Registry::default(),
            quiet: setup.quiet,
            dropped: Vec::new(),
        }
    }

    /// The policies the program registered, for `--policy auto` to choose from as well.
    pub(crate) fn register_policies(&mut self, registry: &Registry) {
        self.policies = registry.clone();
    }

    /// Adds the program's own tunlets, asked after the runtime's.
    pub(crate) fn add_tunlets(&mut self, tunlets: Vec<Box<dyn Tunlet>>) {
        self.tunlets.extend(tunlets);
    }

    /// `mo` and `k` as last estimated.
    pub(crate) fn link(&self) -> Option<Link> {
        self.estimate.link
    }

    /// Takes note of the decisions applied at an iteration boundary: its own start being
    /// watched; a change from elsewhere ends the watch of that tunable.
    pub(crate) fn applied(&mut self, applied: &[Applied]) {
        if applied.is_empty() {
            return;
        }
        // The trial's baseline is what ran before the change took effect: read before the
        // scores are cleared.
        for a in applied {
            match a.source {
                Source::Tuner => self.decider.took_effect(a.tunable, self.config.persistence),
                Source::Application | Source::External => {
                    self.decider.abandon(a.tunable);
                }
            }
        }
        self.decider.settings_changed();
        self.decider.reset_streaks();
    }

    /// The predicted time of an iteration of `tasks` tasks with `workers` workers, made before
    /// any of its results is back; `None` before the first iteration has been measured.
    pub(crate) fn predict(&self, tasks: usize, workers: usize) -> Option<f64> {
        if let Some(trial) = &self.decider.trial {
            // A new factor's or policy's first iteration: the simulation's difference is in the
            // decision.
            if trial.applied
                && trial.midway.is_none()
                && trial.scores.is_empty()
                && (trial.tunable == Tunable::FACTOR || trial.tunable == Tunable::POLICY)
            {
                return Some(trial.predicted_ms);
            }
        }
        self.estimate.predict(tasks, workers, self.protocol)
    }

    /// Folds in an iteration and requests the changes it calls for.
    pub(crate) fn observe(
        &mut self,
        obs: &Observation,
        current: &Tunables,
        healthy: usize,
        stats: &TaskStats,
        handle: &TunablesHandle,
    ) {
        self.decider.drop_unapplied(obs.facts.index);
        let residual = self.estimate.update(obs, self.protocol);
        // An iteration whose settings changed midway describes no single setting: neither a
        // baseline nor a trial's evidence (a midway trial was judged on its own stretch).
        if !obs.facts.mixed {
            let score = score(obs, self.objective);
            self.decider.scored(score, obs.facts.time_ms, residual);
        }
        let first = !std::mem::replace(&mut self.looked, true);
        if self.config.mode == config::TuneMode::Off {
            return;
        }
        let index = obs.facts.index;
        if let Verdict::RollBack {
            back,
            reason,
            summary,
            measured_ms,
            details,
        } = self.decider.judge(self.config.persistence, index)
        {
            self.decider.reset_streaks();
            self.estimate.calibration_ms = self.calibration_before;
            let why = Why {
                source: Source::Tuner,
                reason,
                summary,
                predicted_ms: self.predict_after(&back, obs, healthy),
                measured_ms: Some(measured_ms),
                details,
            };
            handle.request_tuned(back, why);
            return;
        }
        let estimate = std::mem::take(&mut self.estimate);
        let look = Look {
            estimate: &estimate,
            obs,
            current,
            healthy,
            stats,
            first,
            factor: true,
            midway: None,
            remaining: obs.facts.tasks,
            iteration_tasks: obs.facts.tasks,
        };
        self.consider(&look, handle);
        self.estimate = estimate;
    }

    /// Whether a checkpoint is worth a look, `so_far` being each worker's task times in the
    /// iteration so far: with a change made inside the iteration to judge, before the run's
    /// first measured iteration, or when the workers' tasks take far longer or shorter than
    /// the same workers' did in the last iteration (load arrived or left). Each worker is
    /// compared with itself: the first answers come from the fastest workers, so a pooled mean
    /// would see a change where there is none. Cheap, so that steady iterations pay nothing for
    /// their checkpoints. Once an iteration has been measured only the worker count is tuned
    /// inside an iteration (the simulations wait for the boundary): without it (`--tuning
    /// factor`), a look could change nothing, and its fit of `mo` and `k` cost Xfire at 30
    /// workers about a millisecond an iteration, 4 % of its run.
    pub(crate) fn wants_look(&self, so_far: &[Moments]) -> bool {
        if self.config.mode == config::TuneMode::Off {
            return false;
        }
        if self.estimate.iterations == 0
            || self
                .decider
                .trial
                .as_ref()
                .is_some_and(|t| t.midway.is_some())
        {
            return true;
        }
        if !self.config.mode.tunes_workers() {
            return false;
        }
        let (mut now, mut before) = (0.0, 0.0);
        for (w, m) in so_far.iter().enumerate().filter(|(_, m)| m.count() > 0) {
            let last = self
                .estimate
                .workers
                .get(w)
                .filter(|l| l.count() > 0)
                .map_or(self.estimate.now.task_ms, Moments::mean);
            now += m.sum();
            before += m.count() as f64 * last;
        }
        before > 0.0 && (now - before).abs() / now.max(before) > decide::CONDITIONS_CHANGED
    }

    /// A checkpoint inside iteration `so_far.facts.index`: `so_far` measures its answered
    /// tasks, `now` its progress, `remaining` the tasks not yet answered, `evidence` the tasks a
    /// change made inside the iteration must see before it is judged. Judges such a change;
    /// then, while the run has no measured iteration yet or the tasks' time has moved far from
    /// what the last one measured, asks the tunlets about the remaining tasks under the same
    /// rules as at a boundary. Changes are requested through `handle`, for the engine to apply
    /// at once; returns whether any was.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn checkpoint(
        &mut self,
        so_far: &Observation,
        now: Span,
        remaining: usize,
        evidence: u64,
        current: &Tunables,
        healthy: usize,
        stats: &TaskStats,
        handle: &TunablesHandle,
    ) -> bool {
        if self.config.mode == config::TuneMode::Off {
            return false;
        }
        let index = so_far.facts.index;
        if let Some(start) = self.decider.trial.as_ref().and_then(|t| t.midway) {
            // Answers come in chunks: until every worker has answered twice since the change,
            // the tasks answered understate the work done.
            let answers = now.answers.saturating_sub(start.answers);
            if now.tasks.saturating_sub(start.tasks) < evidence
                || answers < 2 * now.workers.max(1) as u64
            {
                return false;
            }
            return self.judge_midway(start, now, index, handle);
        }
        // A change in the last fifth of an iteration could hardly pay, and could not be judged.
        if !self.wants_look(&so_far.worker_tasks) || (remaining as u64) < 2 * evidence {
            return false;
        }
        let Some(before) = Span::score(&self.mark, &now, self.objective) else {
            return false;
        };
        let mut estimate = self.estimate.clone();
        estimate.update(so_far, self.protocol);
        // What the model left unexplained was measured under other conditions (or never):
        // the stretch so far has no tail to calibrate on.
        estimate.calibration_ms = 0.0;
        let look = Look {
            estimate: &estimate,
            obs: so_far,
            current,
            healthy,
            stats,
            first: !self.looked,
            // The factor's simulation is costly and the next boundary is near once an
            // iteration has been measured: inside an iteration, only before that.
            factor: self.estimate.iterations == 0,
            midway: Some((now, before)),
            remaining,
            iteration_tasks: so_far.facts.tasks + remaining,
        };
        self.looked = true;
        self.consider(&look, handle)
    }

    /// The iteration's last answer is in: a change made inside it that has not been judged yet
    /// is judged on what followed it, if that was at least a task per worker; otherwise kept.
    pub(crate) fn close_midway(&mut self, end: Span, index: usize, handle: &TunablesHandle) {
        self.mark = Span::default();
        if self.config.mode == config::TuneMode::Off {
            return;
        }
        let Some(start) = self.decider.trial.as_ref().and_then(|t| t.midway) else {
            return;
        };
        if end.answers.saturating_sub(start.answers) >= 2 * end.workers.max(1) as u64 {
            self.judge_midway(start, end, index, handle);
        } else {
            self.decider.keep(index);
        }
    }

    fn judge_midway(
        &mut self,
        start: Span,
        now: Span,
        index: usize,
        handle: &TunablesHandle,
    ) -> bool {
        let (Some(after), Some(per_task)) = (
            Span::score(&start, &now, self.objective),
            Span::score(&start, &now, Objective::Time),
        ) else {
            return false;
        };
        let Verdict::RollBack {
            back,
            reason,
            summary,
            details,
            ..
        } = self.decider.judge_midway(after, per_task, index)
        else {
            return false;
        };
        self.decider.reset_streaks();
        let why = Why {
            source: Source::Tuner,
            reason,
            summary,
            predicted_ms: None,
            measured_ms: None,
            details,
        };
        handle.request_tuned(back, why)
    }

    /// Asks the tunlets allowed and not held for proposals, passes them through the decision
    /// rules, and requests the one chosen (one change at a time, `factor` first).
    fn consider(&mut self, look: &Look<'_>, handle: &TunablesHandle) -> bool {
        let (est, obs, current, healthy) = (look.estimate, look.obs, look.current, look.healthy);
        let index = obs.facts.index;
        let held = handle.held();
        let in_trial = self.decider.trial.is_some();
        let done = obs.facts.tasks.max(1) as f64;
        let conditions = Conditions {
            task_ms: est.now.task_ms,
            tasks: look.iteration_tasks as f64,
            bytes_per_task: (obs.bytes_to + obs.bytes_from) as f64 / done,
        };
        let setting = factor::Setting::of(look, self.min_chunk, self.protocol, self.prefetch);
        let (lo, hi) = self.config.range(healthy.max(1));
        let view = TunerView {
            look,
            setting: &setting,
            range: workers::Range { lo, hi },
            objective: self.objective,
            nworkers: current.nworkers.min(healthy).max(1),
            handle,
            registered: &self.policies,
        };
        let mode = self.config.mode;
        let mut chosen = None;
        let mut dropped = Vec::new();
        for tunlet in &mut self.tunlets {
            let tunable = tunlet.tunable();
            let allowed = if tunable == Tunable::NWORKERS {
                mode.tunes_workers()
            } else {
                // The simulations are costly and the next boundary is near once an iteration
                // has been measured: inside an iteration, only before that.
                mode.tunes_factor() && look.factor
            } && !held.contains(&tunable);
            let proposal = if allowed {
                tunlet.propose(&view).and_then(|mut p| {
                    if let Err(why) = acceptable(&p, tunable, handle) {
                        dropped.push(why);
                        return None;
                    }
                    // A program's tunlet says what it proposes; the tuner knows the rest.
                    if p.from.is_nan() {
                        p.from = handle.number(tunable);
                    }
                    if p.to.is_nan() {
                        p.to = handle.number_of(&p.change);
                    }
                    if p.predicted_ms.is_nan() {
                        p.predicted_ms = obs.facts.time_ms * (1.0 - p.gain);
                    }
                    Some(p)
                })
            } else {
                None
            };
            let proposal = proposal.filter(|p| p.to != p.from);
            let strong = proposal.as_ref().is_some_and(|p| {
                p.gain > self.decider.bar(p)
                    && self.decider.blocked(p, index, &conditions).is_none()
            });
            let evidence = match &proposal {
                Some(p) if strong => Evidence::For(p),
                Some(_) => Evidence::Weak,
                // A checkpoint has seen part of an iteration (often the first answers after the
                // load moved, too unbalanced to propose more workers on): its silence does not
                // contradict what a whole iteration showed.
                None if look.midway.is_some() => Evidence::Weak,
                None => Evidence::Nothing,
            };
            let streak = self.decider.hold(tunable, evidence, index);
            let proposal = proposal.filter(|_| strong);
            let needed = proposal.as_ref().map_or(self.config.persistence, |p| {
                Decider::persistence_needed(self.config.persistence, look.first, p)
            });
            if streak >= needed && !in_trial && chosen.is_none() {
                chosen = proposal.map(|p| (p, streak));
            }
        }
        for why in dropped {
            if !self.dropped.contains(&why) {
                if !self.quiet {
                    eprintln!("warning: {why}");
                }
                self.dropped.push(why);
            }
        }
        let Some((proposal, streak)) = chosen else {
            return false;
        };
        let back = handle.in_force(proposal.tunable());
        let threshold = self.decider.bar(&proposal);
        let held_for = match look.midway {
            Some(_) if streak == 1 => "at the first look".to_owned(),
            Some(_) => format!("held {streak} checkpoints"),
            None if streak == 1 => "held 1 iteration".to_owned(),
            None => format!("held {streak} iterations"),
        };
        let why = Why {
            source: Source::Tuner,
            reason: format!(
                "{}; {held_for}, predicted gain {:.0}% > threshold {:.0}%",
                proposal.explanation.reason(),
                proposal.gain * 100.0,
                threshold * 100.0
            ),
            summary: format!(
                "{}: expected {}",
                proposal.explanation.words(),
                proposal.explanation.gain(proposal.gain)
            ),
            predicted_ms: Some(proposal.predicted_ms),
            measured_ms: Some(obs.facts.time_ms),
            details: proposal.explanation.details(),
        };
        if !handle.request_tuned(proposal.change.clone(), why) {
            return false;
        }
        self.calibration_before = self.estimate.calibration_ms;
        // A change that waits for the next boundary is judged on the iterations that run with
        // it, not on the rest of this one.
        let tunable = proposal.change.tunable();
        let midway = look
            .midway
            .filter(|_| handle.takes_effect(tunable) != TakesEffect::NextIteration);
        if let Some((at, _)) = midway {
            // What follows is judged against what came before, measured from here.
            self.mark = at;
        }
        self.decider.start(
            &proposal,
            handle.name(tunable),
            back,
            conditions,
            self.config.persistence,
            midway,
            index,
        );
        true
    }

    /// The model's time for the next iteration once `change` is applied.
    fn predict_after(&self, change: &Change, obs: &Observation, healthy: usize) -> Option<f64> {
        let workers = change
            .value(TunableId::NWORKERS)
            .map_or(obs.facts.workers, |n| n.max(0) as usize);
        self.estimate
            .predict(obs.facts.tasks, workers.min(healthy.max(1)), self.protocol)
    }
}

/// Proposes values for one tunable, from what the tuner measured. The runtime's `policy`,
/// `factor` and `nworkers` are tuned by tunlets; a program adds its own with
/// [`Setup::tunlet`](crate::Setup::tunlet), for a tunable it declared
/// ([`TunablesHandle::declare`]).
///
/// The tuner asks every tunlet at each iteration boundary (and, before the first iteration has
/// been measured, at checkpoints inside it). A proposal becomes a change only under the same
/// rules as the runtime's: it must hold for `persistence` looks in a row and promise more than
/// the measured noise; it must not return towards a value left recently, nor retry one rolled
/// back; once made, it is watched and rolled back if the iterations got worse. Every change is
/// logged as a decision, under the tunable's name, with the proposal's reason. A tunable set by
/// the application or from outside (`mwgen ctl ADDR set NAME VALUE`) is left alone until
/// `set NAME auto`.
///
/// # Examples
/// A tile size the program declares, reads in `partition`, hands to the workers in the shared
/// part, and tunes with its own tunlet: larger tiles make faster tasks here, and the tunlet
/// proposes to double the tile while tasks take more than 2 ms.
/// ```
/// use std::time::Duration;
///
/// use mw_runtime::prelude::*;
/// use mw_runtime::tuning::{Proposal, TunerView, Tunlet};
/// use mw_runtime::{PolicyName, RunConfig, Tunable, TunableId, TunablesHandle};
///
/// #[derive(Debug)]
/// struct TileTunlet {
///     tile: TunableId<i64>,
/// }
///
/// impl Tunlet for TileTunlet {
///     fn tunable(&self) -> Tunable {
///         self.tile.tunable()
///     }
///     fn propose(&mut self, view: &TunerView<'_>) -> Option<Proposal> {
///         let tile = view.value(self.tile);
///         (view.task_ms() > 2.0 && tile < 8)
///             .then(|| Proposal::new(self.tile, tile * 2, 0.4, "tasks over 2 ms: double the tile"))
///     }
/// }
///
/// struct Tiled {
///     tile: Option<(TunablesHandle, TunableId<i64>)>,
/// }
///
/// impl Master for Tiled {
///     type Task = u32;
///     type Result = u32;
///     type Shared = i64;
///
///     fn initialize(&mut self, setup: &mut Setup) -> mw_runtime::Result<()> {
///         let tunables = setup.tunables();
///         let tile = tunables.declare("tile", 1_i64, 1..=8)?;
///         setup.tunlet(Box::new(TileTunlet { tile }));
///         self.tile = Some((tunables, tile));
///         Ok(())
///     }
///
///     fn partition(&mut self, it: &Iteration) -> Work<i64, u32> {
///         let (tunables, tile) = self.tile.as_ref().unwrap();
///         if it.index == 16 {
///             return Work::done();
///         }
///         Work::new(tunables.value(*tile), (0..4).collect())
///     }
///
///     fn recover(&mut self, _: TaskId, _: u32) {}
/// }
///
/// #[derive(Default)]
/// struct Sleeper;
///
/// impl Worker for Sleeper {
///     type Task = u32;
///     type Result = u32;
///     type Shared = i64;
///
///     fn do_work(&mut self, tile: &i64, task: &u32) -> u32 {
///         std::thread::sleep(Duration::from_micros(16_000 / *tile as u64));
///         *task
///     }
/// }
///
/// let config = RunConfig {
///     workers: Some(2),
///     max_workers: Some(2),
///     policy: PolicyName::Ss.into(),
///     backend: BackendChoice::Local,
///     quiet: true,
///     ..RunConfig::default()
/// };
/// let report = mw_runtime::run_config(&config, || Tiled { tile: None }, Sleeper::default)?;
/// let metrics = report.into_metrics().unwrap();
/// // Logged as the runtime's decisions are, under the tunable's name.
/// assert!(metrics.decisions.iter().any(|d| d.tunable == "tile" && d.to == 2));
/// # Ok::<(), mw_runtime::Error>(())
/// ```
///
/// `tests/tunlet.rs` also sets such a tunable through the control endpoint.
///
/// A tunlet may as well propose the runtime's `factor` ([`TunableId::FACTOR`](crate::TunableId::FACTOR)),
/// `nworkers` ([`TunableId::NWORKERS`](crate::TunableId::NWORKERS)) or `policy`
/// ([`TunableId::POLICY`](crate::TunableId::POLICY)), in place of the built-in one or beside it. The built-in factor
/// and policy tunlets read nothing but the public [`TunerView`], and simulate with
/// [`TunerView::simulation`]; [`TunerViewBuilder`] builds a view for a test
/// (`tests/factor_tunlet.rs` tests a factor tunlet written that way). A proposal for another
/// tunable than the tunlet's, with a value out of range or no finite gain, is dropped with a
/// warning.
pub trait Tunlet: Send + fmt::Debug {
    /// The tunable it proposes values for.
    fn tunable(&self) -> Tunable;

    /// A value for the next iteration (or, inside one, for the tasks not yet answered), with
    /// its predicted gain; `None` to keep the value in force.
    fn propose(&mut self, view: &TunerView<'_>) -> Option<Proposal>;
}

/// Whether the tuner can act on `proposal` from the tunlet of `tunable`: why not, as a warning,
/// when it proposes for another tunable, an invalid value, or no finite gain.
fn acceptable(
    proposal: &Proposal,
    tunable: Tunable,
    handle: &TunablesHandle,
) -> Result<(), String> {
    let name = handle.name(tunable);
    let dropped = "its proposal is dropped";
    if proposal.tunable() != tunable {
        return Err(format!(
            "the tunlet of `{name}` proposed a value for `{}`, {dropped}: a tunlet proposes for \
             the tunable it names (`Tunlet::tunable`)",
            handle.name(proposal.tunable())
        ));
    }
    if !proposal.gain.is_finite() {
        return Err(format!(
            "the tunlet of `{name}` proposed a gain of {}, {dropped}: the gain is the predicted \
             relative drop of the iteration time, e.g. 0.1",
            proposal.gain
        ));
    }
    handle
        .check(&proposal.change)
        .map_err(|e| format!("the tunlet of `{name}` proposed an invalid value, {dropped}: {e}"))
}

/// The runtime's tunlets, in the order they are asked.
fn built_in_tunlets(auto_policy: bool) -> Vec<Box<dyn Tunlet>> {
    let mut tunlets: Vec<Box<dyn Tunlet>> = Vec::new();
    if auto_policy {
        tunlets.push(Box::new(policy::PolicyTunlet::default()));
    }
    tunlets.push(Box::new(factor::FactorTunlet::default()));
    tunlets.push(Box::new(workers::WorkersTunlet));
    tunlets
}

impl Tunlet for factor::FactorTunlet {
    fn tunable(&self) -> Tunable {
        TunableId::FACTOR.tunable()
    }
    fn propose(&mut self, view: &TunerView<'_>) -> Option<Proposal> {
        factor::FactorTunlet::propose_at(self, view)
    }
}

impl Tunlet for policy::PolicyTunlet {
    fn tunable(&self) -> Tunable {
        TunableId::POLICY.tunable()
    }
    fn propose(&mut self, view: &TunerView<'_>) -> Option<Proposal> {
        policy::PolicyTunlet::propose(self, view)
    }
}

impl Tunlet for workers::WorkersTunlet {
    fn tunable(&self) -> Tunable {
        TunableId::NWORKERS.tunable()
    }
    fn propose(&mut self, view: &TunerView<'_>) -> Option<Proposal> {
        workers::propose(view)
    }
}

/// What the tunlets look at: the measurements, the tasks the proposal is for, the settings.
#[derive(Debug)]
pub(crate) struct Look<'a> {
    estimate: &'a Estimate,
    obs: &'a Observation,
    /// Tasks a new factor would cut: the next iteration's at a boundary, those not yet
    /// answered inside an iteration.
    remaining: usize,
    current: &'a Tunables,
    healthy: usize,
    stats: &'a TaskStats,
    /// Nothing was measured before in this run: the starting values are a guess.
    first: bool,
    /// Whether the factor tunlet is asked.
    factor: bool,
    /// Inside an iteration: where, and the score of the stretch before.
    midway: Option<(Span, f64)>,
    /// Tasks of the iteration looked at: what the pool is sized for (the tasks left would
    /// favour few workers near the end of every iteration, a choice the next one keeps), and
    /// the conditions hysteresis compares.
    iteration_tasks: usize,
}

/// An iteration's progress at a moment, counted from its start: what a stretch of it between
/// two moments took and got done is what a change made inside it is judged on.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Span {
    /// Time since the iteration began, in ms.
    pub ms: f64,
    /// Tasks answered.
    pub tasks: u64,
    /// Their own processing time, in ms: less the waits for a core, as the index objective
    /// counts it ([`score`]).
    pub busy_ms: f64,
    /// Answers (chunks) received.
    pub answers: u64,
    /// Workers taking part now.
    pub workers: usize,
    /// The chunks being processed, as tasks done (each chunk's tasks by the share of its
    /// expected time that has passed) and the processing time spent on them, in ms: a policy
    /// that hands out large chunks is then judged on the work done, not only on the few
    /// chunks it has had answered.
    pub in_flight: (f64, f64),
}

impl Span {
    /// The objective's score per task over the stretch `from → to` (as [`score`] for an
    /// iteration), with the workers taking part at `to`; `None` for an empty stretch.
    pub(crate) fn score(from: &Span, to: &Span, objective: Objective) -> Option<f64> {
        let t = to.ms - from.ms;
        let m = (to.tasks as f64 + to.in_flight.0) - (from.tasks as f64 + from.in_flight.0);
        if to.tasks <= from.tasks || m <= 0.0 {
            return None;
        }
        let tc = (to.busy_ms + to.in_flight.1) - (from.busy_ms + from.in_flight.1);
        (t > 0.0).then(|| match objective {
            Objective::Index if tc > 0.0 => to.workers.max(1) as f64 * t * t / (tc * m),
            _ => t / m,
        })
    }
}

/// The quantity the objective minimizes for one iteration, per task so that iterations of
/// different sizes compare: `Tt/M` for `time`, `n·Tt²/(Tc·M)` (`Pi` per task) for `index`,
/// with `Tc` the tasks' own processing time ([`Observation::own_ms`](crate::measure::Observation)):
/// with the workers' time as measured, tasks crowded off the cores by another program looked
/// like more work done, and a worker added on a busy machine, which made iterations faster,
/// was rolled back.
pub(crate) fn score(obs: &Observation, objective: Objective) -> f64 {
    let tasks = obs.facts.tasks.max(1) as f64;
    let t = obs.facts.time_ms;
    match objective {
        Objective::Time => t / tasks,
        Objective::Index if obs.own_ms > 0.0 => obs.active as f64 * t * t / (obs.own_ms * tasks),
        Objective::Index => t / tasks,
    }
}
