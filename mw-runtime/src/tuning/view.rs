//! What a [`Tunlet`](super::Tunlet) sees — the built-in tunlets and a program's alike — and a
//! builder that makes one from numbers, to test a tunlet without a run.

use std::ops::RangeInclusive;

use super::config::Objective;
use super::estimate::{Estimate, Inputs, Link};
use super::simulate::{SimWorker, Spec};
use super::{Look, Machine, factor, workers};
use crate::measure::{Facts, Moments, Observation, TaskStats};
use crate::policy::{PolicyChoice, PolicyFactory, PolicyName, Registry};
use crate::protocol::Protocol;
use crate::tuning::tunables::{TunableId, TunableValue, Tunables, TunablesHandle};

/// What a [`Tunlet`](super::Tunlet) sees: the tuner's estimate of the program, read-only. The
/// built-in tunlets read nothing else; [`TunerViewBuilder`] makes one for a test.
#[derive(Debug)]
pub struct TunerView<'a> {
    pub(super) look: &'a Look<'a>,
    pub(super) setting: &'a factor::Setting<'a>,
    pub(super) range: workers::Range,
    pub(super) objective: Objective,
    /// Workers taking part now.
    pub(super) nworkers: usize,
    pub(super) handle: &'a TunablesHandle,
    /// The policies the program registered.
    pub(super) registered: &'a Registry,
}

impl TunerView<'_> {
    /// The iteration looked at (0 for the first).
    pub fn iteration(&self) -> usize {
        self.look.obs.facts.index
    }

    /// Whether the look is inside an iteration (a checkpoint) rather than at its end.
    pub fn inside_iteration(&self) -> bool {
        self.look.midway.is_some()
    }

    /// Tasks a proposal is for: the next iteration's at a boundary, those not yet answered
    /// inside an iteration.
    pub fn tasks(&self) -> usize {
        self.look.remaining
    }

    /// Tasks of the iteration looked at, answered or not: what the worker count is chosen
    /// for.
    pub fn iteration_tasks(&self) -> usize {
        self.look.iteration_tasks
    }

    /// Tasks measured: those of the iteration looked at (so far, inside one).
    pub fn measured_tasks(&self) -> usize {
        self.look.obs.facts.tasks
    }

    /// Whether a setting changed while the iteration looked at ran: its time then belongs to
    /// no single setting.
    pub fn mixed(&self) -> bool {
        self.look.obs.facts.mixed
    }

    /// Workers that took part in the iteration looked at.
    pub fn workers(&self) -> usize {
        self.setting.workers
    }

    /// Workers taking part now (`nworkers`, within the healthy ones).
    pub fn nworkers(&self) -> usize {
        self.nworkers
    }

    /// The worker counts `nworkers` may be tuned over (`[tuning] min_workers`, `max_workers`,
    /// within the pool).
    pub fn workers_range(&self) -> RangeInclusive<usize> {
        self.range.lo..=self.range.hi
    }

    /// The measured wall time of the iteration looked at (so far, inside one), in ms.
    pub fn iteration_ms(&self) -> f64 {
        self.look.obs.facts.time_ms
    }

    /// The mean task time last measured, over every worker, in ms.
    pub fn task_ms(&self) -> f64 {
        self.look.estimate.now.task_ms
    }

    /// The standard deviation of one task's time, last measured, in ms.
    pub fn task_sd_ms(&self) -> f64 {
        self.look.estimate.now.task_sd_ms
    }

    /// Each worker's mean task time in the iteration looked at, in ms (`None` for a worker that
    /// did no task): a slower or loaded worker takes longer.
    pub fn worker_task_ms(&self) -> Vec<Option<f64>> {
        self.look
            .obs
            .worker_tasks
            .iter()
            .map(|m| (m.count() > 0).then(|| m.mean()))
            .collect()
    }

    /// Each worker's standard deviation of task time in the iteration looked at, in ms (`None`
    /// for a worker that did no task).
    pub fn worker_task_sd_ms(&self) -> Vec<Option<f64>> {
        self.look
            .obs
            .worker_tasks
            .iter()
            .map(|m| (m.count() > 0).then(|| m.stddev()))
            .collect()
    }

    /// The fitted per-message overhead `mo`, in ms (`None` before any transfer was measured).
    pub fn mo_ms(&self) -> Option<f64> {
        self.look.estimate.link.map(|l| l.mo_ms)
    }

    /// The fitted transfer time per byte `k`, in ms (`None` before any transfer was measured).
    pub fn k_ms_per_byte(&self) -> Option<f64> {
        self.look.estimate.link.map(|l| l.k_ms_per_byte)
    }

    /// Bytes sent per task in chunks (the shared part left out), last measured.
    pub fn task_bytes(&self) -> f64 {
        self.look.estimate.now.to_per_task
    }

    /// Bytes of answers per task, last measured.
    pub fn result_bytes(&self) -> f64 {
        self.look.estimate.now.from_per_task
    }

    /// Bytes of the shared part, sent to each worker taking part.
    pub fn shared_bytes(&self) -> f64 {
        self.look.estimate.shared_bytes
    }

    /// The master's time in `recover` per task, last measured, in ms.
    pub fn recover_ms_per_task(&self) -> f64 {
        self.look.estimate.now.recover_per_task_ms
    }

    /// The master's time in `partition` and `end_iteration`, last measured, in ms.
    pub fn serial_ms(&self) -> f64 {
        self.look.estimate.now.serial_ms
    }

    /// How the master sends: what the model and the simulation assume.
    pub fn protocol(&self) -> Protocol {
        self.setting.protocol
    }

    /// Chunks a worker holds ahead, as the engine sends them.
    pub fn prefetch(&self) -> usize {
        self.setting.prefetch
    }

    /// The smallest chunk the policies cut.
    pub fn min_chunk(&self) -> usize {
        self.setting.min_chunk
    }

    /// What the choice of `nworkers` minimizes in this run.
    pub fn objective(&self) -> Objective {
        self.objective
    }

    /// The factor in force.
    pub fn factor(&self) -> f64 {
        self.setting.factor
    }

    /// The policy in force.
    pub fn policy(&self) -> &PolicyChoice {
        &self.setting.policy
    }

    /// The value in force of a tunable: a built-in one ([`TunableId::FACTOR`],
    /// [`TunableId::NWORKERS`]) or one the program declared.
    pub fn value<T: TunableValue>(&self, id: TunableId<T>) -> T {
        self.handle.value(id)
    }

    /// The runtime's tunables in force.
    pub fn current(&self) -> &Tunables {
        self.look.current
    }

    /// The policies the program registered, by name, with what builds them
    /// ([`simulate_with`](super::simulate::simulate_with) simulates one).
    pub fn registered_policies(&self) -> &[(String, PolicyFactory)] {
        self.registered.entries()
    }

    /// The policy that cut the tasks of the iteration looked at.
    pub fn measured_policy(&self) -> &PolicyChoice {
        &self.look.obs.facts.policy
    }

    /// Workers whose speed has been measured (in the last iteration each took part in): the
    /// others are simulated at the pooled speed.
    pub fn measured_workers(&self) -> usize {
        self.look
            .estimate
            .workers
            .iter()
            .filter(|m| m.count() > 0)
            .count()
    }

    /// The model's time for an iteration of `tasks` tasks on `workers` workers, in ms, from the
    /// inputs smoothed over recent iterations; `None` before an iteration was measured.
    pub fn predicted_ms(&self, tasks: usize, workers: usize) -> Option<f64> {
        self.look.estimate.predict(tasks, workers, self.protocol())
    }

    /// The performance model's iteration time for `tasks` tasks on `workers` workers, in ms:
    /// the model variant that fits the application (see [`model_variant`](TunerView::model_variant))
    /// at the inputs last measured, each worker at its own measured rate, tasks stretched by
    /// the cores' contention at `workers` ([`machine`](TunerView::machine)), plus the
    /// [`calibration`](TunerView::calibration_ms). What the worker-count tunlet minimizes;
    /// `None` when the model has no time (no inputs yet).
    pub fn model_ms(&self, tasks: usize, workers: usize) -> Option<f64> {
        let est = self.look.estimate;
        est.time(
            &est.variant_at(&est.now, tasks, workers),
            workers,
            self.protocol(),
        )
    }

    /// The model's `Tc` for `tasks` tasks, in ms: their processing time as it would take on
    /// free cores (the work in the performance index `Pi = n·Tt²/Tc`).
    pub fn model_work_ms(&self, tasks: usize) -> f64 {
        let est = self.look.estimate;
        est.variant(&est.now, tasks).tc_ms() * est.stretch(1).min(1.0)
    }

    /// The model's MCMC for `tasks` tasks: the most workers the master can keep busy (`None`:
    /// no limit).
    pub fn mcmc(&self, tasks: usize) -> Option<usize> {
        let est = self.look.estimate;
        est.variant(&est.now, tasks).mcmc(self.protocol())
    }

    /// Which expression of the model describes the application for `tasks` tasks:
    /// `"broadcast"` (POETRIES: the shared part, sent whole to every worker, dominates what is
    /// sent) or `"balanced"` (Cesar et al. 2006: work and data split among the workers).
    pub fn model_variant(&self, tasks: usize) -> &'static str {
        let est = self.look.estimate;
        est.variant(&est.now, tasks).name()
    }

    /// What the model leaves unexplained at the workers measured, smoothed over recent
    /// iterations, in ms: added to every [`model_ms`](TunerView::model_ms).
    pub fn calibration_ms(&self) -> f64 {
        self.look.estimate.calibration_ms
    }

    /// The measured idle share of the distribution phase of the iteration looked at (its time
    /// but the master's serial part): `1 − Tc/(n·T)`, 0 for a perfectly balanced load.
    pub fn distribution_imbalance(&self) -> f64 {
        self.look.obs.distribution_imbalance()
    }

    /// The idle share of the distribution phase the model explains for a balanced iteration
    /// of `tasks` tasks on `workers` workers (its communication, not the load): the part of
    /// [`distribution_imbalance`](TunerView::distribution_imbalance) that is no imbalance.
    pub fn balanced_idle_share(&self, tasks: usize, workers: usize) -> f64 {
        let est = self.look.estimate;
        let variant = est.variant(&est.now, tasks);
        let tc = self.model_work_ms(tasks);
        variant.time(workers, self.protocol()).map_or(0.0, |t| {
            let distribution = t - self.look.obs.serial_ms;
            if distribution > 0.0 {
                (1.0 - tc / workers.max(1) as f64 / distribution).max(0.0)
            } else {
                0.0
            }
        })
    }

    /// The machine in the model, when the workers' layout and their tasks' CPU time are known:
    /// how tasks stretch once the cores are saturated, and whether other programs load them.
    pub fn machine(&self) -> Option<Machine> {
        self.look.estimate.machine()
    }

    /// The speeds the simulations give `n` workers: the first `n` measured (those that took
    /// part in the iteration looked at first), each at its own mean and deviation, any other
    /// at the pooled ones.
    pub fn simulated_workers(&self, n: usize) -> Vec<SimWorker> {
        factor::sim_workers(self.look.estimate, n)
    }

    /// What the factor tunlet simulates: the [`tasks`](TunerView::tasks) on `workers` under the
    /// policy in force (`policy` for another), cut with `factor`, with the link, the bytes and
    /// the master's time as measured. Pass it to [`simulate`](super::simulate::simulate).
    pub fn simulation<'s>(
        &'s self,
        workers: &'s [SimWorker],
        policy: PolicyName,
        factor: f64,
    ) -> Spec<'s> {
        factor::spec(self.look.estimate, self.setting, workers, policy, factor)
    }

    /// The inputs last measured, as the built-in tunlets' accounts record them.
    pub(super) fn inputs(&self) -> Inputs {
        Inputs {
            task_ms: self.task_ms(),
            task_sd_ms: self.task_sd_ms(),
            to_per_task: self.task_bytes(),
            from_per_task: self.result_bytes(),
            recover_per_task_ms: self.recover_ms_per_task(),
            serial_ms: self.serial_ms(),
        }
    }
}

/// Makes a [`TunerView`] from numbers, to test a [`Tunlet`](super::Tunlet) without a run: an
/// iteration measured at its end, every worker alike unless said otherwise.
///
/// # Examples
/// ```
/// use mw_runtime::PolicyName;
/// use mw_runtime::tuning::TunerViewBuilder;
///
/// let built = TunerViewBuilder::new(1000, 4, 1.0)
///     .policy(PolicyName::Factoring)
///     .link(0.5, 1e-6);
/// built.view(|view| {
///     assert_eq!(view.tasks(), 1000);
///     assert_eq!(view.mo_ms(), Some(0.5));
/// });
/// ```
#[derive(Debug, Clone)]
pub struct TunerViewBuilder {
    index: usize,
    tasks: usize,
    workers: usize,
    task_ms: f64,
    task_sd_ms: f64,
    worker_task_ms: Vec<f64>,
    iteration_ms: Option<f64>,
    link: Option<(f64, f64)>,
    bytes: (f64, f64),
    shared_bytes: f64,
    factor: f64,
    policy: PolicyChoice,
    protocol: Protocol,
    prefetch: usize,
    min_chunk: usize,
    objective: Objective,
    range: Option<(usize, usize)>,
}

impl TunerViewBuilder {
    /// Iteration 0 of `tasks` tasks of `task_ms` each, on `workers` workers, measured at its
    /// end, no link measured; the factor 0.5 under `daf`, the default protocol, prefetch and
    /// smallest chunk, objective `time`.
    pub fn new(tasks: usize, workers: usize, task_ms: f64) -> Self {
        TunerViewBuilder {
            index: 0,
            tasks,
            workers: workers.max(1),
            task_ms,
            task_sd_ms: 0.0,
            worker_task_ms: Vec::new(),
            iteration_ms: None,
            link: None,
            bytes: (0.0, 0.0),
            shared_bytes: 0.0,
            factor: 0.5,
            policy: PolicyName::Daf.into(),
            protocol: Protocol::default(),
            prefetch: 1,
            min_chunk: 1,
            objective: Objective::Time,
            range: None,
        }
    }

    /// The iteration looked at.
    pub fn iteration(mut self, index: usize) -> Self {
        self.index = index;
        self
    }

    /// The standard deviation of one task's time, in ms.
    pub fn task_sd_ms(mut self, sd: f64) -> Self {
        self.task_sd_ms = sd;
        self
    }

    /// Each worker's mean task time, in ms (the pooled mean stays as given to `new`).
    pub fn worker_task_ms(mut self, means: &[f64]) -> Self {
        self.worker_task_ms = means.to_vec();
        self
    }

    /// The measured wall time of the iteration, in ms (by default the tasks' time shared
    /// evenly among the workers).
    pub fn iteration_ms(mut self, ms: f64) -> Self {
        self.iteration_ms = Some(ms);
        self
    }

    /// The fitted link: `mo` in ms, `k` in ms per byte.
    pub fn link(mut self, mo_ms: f64, k_ms_per_byte: f64) -> Self {
        self.link = Some((mo_ms, k_ms_per_byte));
        self
    }

    /// Bytes per task of chunks and of answers, and of the shared part.
    pub fn bytes(mut self, task: f64, result: f64, shared: f64) -> Self {
        (self.bytes, self.shared_bytes) = ((task, result), shared);
        self
    }

    /// The factor in force.
    pub fn factor(mut self, factor: f64) -> Self {
        self.factor = factor;
        self
    }

    /// The policy in force.
    pub fn policy(mut self, policy: impl Into<PolicyChoice>) -> Self {
        self.policy = policy.into();
        self
    }

    /// How the master sends.
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Chunks a worker holds ahead.
    pub fn prefetch(mut self, prefetch: usize) -> Self {
        self.prefetch = prefetch;
        self
    }

    /// The smallest chunk.
    pub fn min_chunk(mut self, min_chunk: usize) -> Self {
        self.min_chunk = min_chunk;
        self
    }

    /// What the choice of `nworkers` minimizes.
    pub fn objective(mut self, objective: Objective) -> Self {
        self.objective = objective;
        self
    }

    /// The worker counts `nworkers` may be tuned over (by default 1 to the workers).
    pub fn workers_range(mut self, range: RangeInclusive<usize>) -> Self {
        self.range = Some((*range.start(), *range.end()));
        self
    }

    /// Calls `f` with the view.
    pub fn view<R>(&self, f: impl FnOnce(&TunerView<'_>) -> R) -> R {
        let n = self.workers;
        let mean = |w: usize| self.worker_task_ms.get(w).copied().unwrap_or(self.task_ms);
        let per_worker = self.tasks / n;
        let worker_tasks: Vec<Moments> = (0..n)
            .map(|w| {
                let count = (per_worker + usize::from(w < self.tasks % n)) as u64;
                let (m, sd) = (mean(w), self.task_sd_ms);
                Moments::from_sums(count, m * count as f64, (sd * sd + m * m) * count as f64)
            })
            .collect();
        let mut task = Moments::default();
        for m in &worker_tasks {
            task.merge(m);
        }
        let busy_ms: Vec<f64> = worker_tasks.iter().map(Moments::sum).collect();
        let tc_ms = busy_ms.iter().sum::<f64>();
        let time_ms = self
            .iteration_ms
            .unwrap_or_else(|| busy_ms.iter().copied().fold(0.0, f64::max));
        let inputs = Inputs {
            task_ms: self.task_ms,
            task_sd_ms: self.task_sd_ms,
            to_per_task: self.bytes.0,
            from_per_task: self.bytes.1,
            recover_per_task_ms: 0.0,
            serial_ms: 0.0,
        };
        let mut estimate = Estimate::default();
        estimate.link = self.link.map(|(mo_ms, k_ms_per_byte)| Link {
            mo_ms,
            k_ms_per_byte,
            samples: 0,
            fitted: true,
        });
        (estimate.now, estimate.smooth) = (inputs, inputs);
        estimate.shared_bytes = self.shared_bytes;
        estimate.workers = worker_tasks.clone();
        estimate.active = n;
        estimate.iterations = self.index + 1;
        let obs = Observation {
            facts: Facts {
                index: self.index,
                workers: n,
                factor: self.factor,
                policy: self.policy.clone(),
                tasks: self.tasks,
                chunks: 0,
                time_ms,
                mixed: false,
            },
            own_ms: tc_ms,
            tc_ms,
            busy_ms,
            active: n,
            serial_ms: 0.0,
            recover_ms: 0.0,
            cpu_share: None,
            wait_share: None,
            late_share: None,
            bytes_to: (self.bytes.0 * self.tasks as f64) as u64,
            bytes_from: (self.bytes.1 * self.tasks as f64) as u64,
            shared_bytes: self.shared_bytes as u64,
            task,
            worker_tasks,
            transfers: Vec::new(),
            sends: Vec::new(),
        };
        let current = Tunables {
            nworkers: n,
            factor: self.factor,
            policy: self.policy.clone(),
        };
        let handle = TunablesHandle::new(current.clone(), n);
        let speeds: Vec<SimWorker> = (0..n)
            .map(|w| SimWorker {
                mean_ms: mean(w),
                sd_ms: self.task_sd_ms,
            })
            .collect();
        let stats: TaskStats = super::simulate::task_stats(&speeds);
        let look = Look {
            estimate: &estimate,
            obs: &obs,
            remaining: self.tasks,
            current: &current,
            healthy: n,
            stats: &stats,
            first: self.index == 0,
            factor: true,
            midway: None,
            iteration_tasks: self.tasks,
        };
        let setting = factor::Setting::of(&look, self.min_chunk, self.protocol, self.prefetch);
        let (lo, hi) = self.range.unwrap_or((1, n));
        let registered = Registry::default();
        let view = TunerView {
            look: &look,
            setting: &setting,
            range: workers::Range { lo, hi },
            objective: self.objective,
            nworkers: n,
            handle: &handle,
            registered: &registered,
        };
        f(&view)
    }
}
