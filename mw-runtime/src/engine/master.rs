//! The master's iteration loop: partition, hand out chunks by self-scheduling, recover every
//! result exactly once, re-run the chunks of failed workers.
//!
//! This file holds the engine's state and the loop of a run and of an iteration; the rest is
//! one concern a module: `start` (the control endpoint, the workers' `Ready`, checkpoints),
//! `chunks` (the per-chunk path: cut, send, recover), `steady` (answers taken without the
//! general wait while nothing else calls for it), `tune` (the tuner's checkpoints inside an
//! iteration), `faults` (failed tasks, late chunks, silent and lost workers) and `end` (an
//! iteration's measurements and metrics, the end of a run, by a signal too).

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{self, Instant};

use crate::app::{Flow, Iteration, Master};
use crate::codec::Message;
use crate::config::RunConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::measure::{Probe, TaskStats, Trip};
use crate::metrics::RunMetrics;
use crate::policy::{self, Plan, Policy, PolicyChoice};
use crate::progress::Progress;
use crate::trace::{MasterWork, Trace};
use crate::transport::{Done, FromWorker, MasterLink};
use crate::tuning::control::ControlServer;
use crate::tuning::tunables::TunablesHandle;
use crate::tuning::{Span, Tuner};

mod chunks;
mod end;
mod faults;
mod start;
mod steady;
mod tune;

use super::checkpoint::{Checkpoint, Saver, Shape};
#[cfg(feature = "mpi")]
pub(crate) use end::stop_workers;
use faults::{OpenChunks, Retry, Standing, WATCH_EVERY};

/// Runs the whole program on the master: initialize, iterate, shut the workers down, final work.
/// Workers are always told to stop, even when the run fails, so no thread or rank is left waiting.
pub(crate) fn run_master<M, L>(
    master: &mut M,
    link: &mut L,
    config: &RunConfig,
    app: &str,
) -> Result<RunMetrics>
where
    M: Master,
    L: MasterLink<M::Task, M::Shared, M::Result>,
{
    let started = clock::now();
    let pool = link.pool();
    config.load.check_pool(pool)?;
    let layout = link.layout();
    let resumed = match &config.resume {
        Some(path) => Some(Checkpoint::read(path, app)?),
        None => None,
    };
    let (start, tunables, stats) = match &resumed {
        Some(saved) => {
            let mut tunables = saved.tunables.clone();
            tunables.nworkers = tunables.nworkers.min(pool);
            let stats = TaskStats::resumed(pool, saved.task_times.clone());
            (saved.next_iteration, tunables, stats)
        }
        None => (0, config.tunables(pool), TaskStats::new(pool)),
    };
    let tunables = TunablesHandle::new(tunables, pool);
    let (objective, mut objective_reason) = config
        .tuning
        .objective_for(link.parked_released(), link.backend());
    if let (None, Some(note)) = (config.tuning.objective, link.parked_note()) {
        objective_reason = note;
    }
    let mut engine = Engine {
        master,
        link,
        config,
        tunables,
        policy: config.starting_policy().build(),
        policy_name: config.starting_policy().into(),
        registry: Default::default(),
        own_policy: false,
        healthy: vec![true; pool],
        standing: vec![Standing::new(started); pool],
        listened: Duration::ZERO,
        saver: Saver::default(),
        shape: Shape::default(),
        resume_settled: resumed
            .as_ref()
            .map(|saved| saved.settled.clone())
            .filter(|settled| !settled.is_empty()),
        held: (0..pool).map(|_| VecDeque::new()).collect(),
        stats,
        tuner: Tuner::new(config.tuner_setup(), layout, objective),
        control: None,
        next_chunk_id: 0,
        metrics: RunMetrics {
            app: app.to_owned(),
            backend: String::new(),
            pool,
            protocol: config.protocol.to_string(),
            total_ms: 0.0,
            iterations: Vec::new(),
            decisions: Vec::new(),
            failures: Vec::new(),
            objective: objective.to_string(),
            objective_reason,
            interrupted: None,
            command: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        },
        trace: match config.trace {
            Some(_) => Trace::new(pool, config.trace_limit),
            None => Trace::off(),
        },
        progress: Progress::new(config.quiet),
        stream_ahead: STREAM_AHEAD * pool,
    };
    engine.metrics.backend = engine.link.backend().to_owned();
    let outcome = engine
        .open_control()
        .and_then(|()| engine.await_ready())
        .and_then(|()| engine.restore(resumed))
        .and_then(|()| engine.run(start))
        .and_then(|()| engine.saver.finish());
    // Closes the endpoint (and removes its socket) whatever happened.
    engine.control = None;
    if let Err(e) = &outcome {
        if let ErrorKind::Interrupted { signal } = e.kind() {
            engine.end_interrupted(signal.name(), started)?;
            return Ok(engine.metrics);
        }
    }
    let shutdown = engine.shutdown(outcome.is_ok(), false);
    engine.progress.finish();
    let outcome = outcome.and(shutdown).and_then(|()| {
        entering("final_work");
        engine.master.final_work()
    });
    engine.metrics.total_ms = ms(clock::since(started));
    // The trace is written even when the run failed: that is when it is most wanted.
    let traced = engine.write_trace(outcome.is_ok());
    outcome?;
    traced?;
    Ok(engine.metrics)
}

struct Engine<'a, M: Master, L> {
    master: &'a mut M,
    link: &'a mut L,
    config: &'a RunConfig,
    tunables: TunablesHandle,
    policy: Box<dyn Policy>,
    policy_name: PolicyChoice,
    /// The policies the program registered: `auto` may choose one.
    registry: policy::Registry,
    /// The program brought its own policy (`Setup::policy`): kept for the whole run.
    own_policy: bool,
    /// Workers that may take part: not lost, not sitting out after repeated failures.
    healthy: Vec<bool>,
    /// Per worker, what the engine knows of its faults.
    standing: Vec<Standing>,
    /// The listening clock: how long the master has waited for its workers' messages in the
    /// iteration loop (each wait counted up to its bound). The liveness timeout runs on it, so
    /// that only time in which the master could have heard a worker counts as its silence.
    listened: Duration,
    /// Writes `--checkpoint`.
    saver: Saver,
    /// What a checkpoint must fit to be resumed, and what one saved keeps of the program.
    shape: Shape,
    /// Task ids of the first iteration recovered before the stop, of a run resumed from a
    /// checkpoint taken inside that iteration.
    resume_settled: Option<Vec<(u64, u64)>>,
    /// Per worker, the chunks it holds in the order it will answer them: the one it processes,
    /// then those sent ahead. Kept across iterations: a worker still busy with a chunk whose
    /// copy was answered first takes no new part until it has answered.
    held: Vec<VecDeque<InFlight>>,
    stats: TaskStats,
    tuner: Tuner,
    control: Option<ControlServer>,
    next_chunk_id: u64,
    metrics: RunMetrics,
    /// `--trace`: what happened when, written when the run ends.
    trace: Trace,
    /// The progress line on a terminal.
    progress: Progress,
    /// Tasks of a stream kept ready ahead of the workers ([`Master::more_tasks`]).
    stream_ahead: usize,
}

/// How an answer came.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    /// When the master had it.
    at: Instant,
    /// Its encoded size.
    bytes: u64,
    /// The time in its trip the link says it did not charge (an emulated link).
    unbilled_ns: Option<i64>,
}

/// A chunk out at a worker.
struct InFlight {
    chunk: u64,
    iteration: usize,
    first: usize,
    len: usize,
    sent: Instant,
    /// Its trip as measured, for the iteration's [`Probe`] when it is answered.
    trip: Trip,
}

/// The state of one iteration being distributed.
struct Round<M: Master> {
    index: usize,
    shared: Arc<M::Shared>,
    /// Tasks not yet cut into chunks, in task order.
    uncut: VecDeque<M::Task>,
    /// Tasks of the iteration so far: from `partition`, then streamed by `more_tasks`.
    produced: usize,
    /// Whether `more_tasks` added any: the iteration's length was not known at its start.
    streamed: bool,
    next_task: usize,
    /// Tasks to run again (of failed tasks and lost workers), handed out before new ones.
    retry: VecDeque<Retry<M::Task>>,
    /// The chunks out and not yet answered, by first task: their tasks, encoded, to copy
    /// them to another worker should theirs be late or lost.
    open: OpenChunks,
    /// Per failed task, each attempt's worker and error.
    attempts: HashMap<usize, Vec<String>>,
    /// When the engine next looks for late chunks and silent workers.
    next_watch: Instant,
    /// Workers taking part.
    workers: usize,
    active: Vec<bool>,
    /// Active workers with nothing to do right now, each once ([`Round::wait`]).
    idle: Vec<usize>,
    chunk_sizes: Vec<usize>,
    /// Chunks sent to a worker that held another.
    prefetched: usize,
    /// The measure points.
    probe: Probe,
    /// Time the tuner spent on this iteration.
    tuning: Duration,
    started: Instant,
    factor: f64,
    /// Tasks answered.
    done: u64,
    /// Tasks still to cut one at a time, to measure them before the policy plans the rest.
    probe_left: usize,
    /// Whether the policy has planned the uncut tasks (not while the probe is out).
    planned: bool,
    /// Tasks answered at which the tuner looks next, and the step between looks.
    next_look: Option<u64>,
    look_every: u64,
    /// Whether a tunable changed during the iteration.
    mixed: bool,
    /// Late chunks copied to an idle worker.
    backups: usize,
    /// Of an iteration resumed from a checkpoint taken inside it: the task id of each task
    /// still to do, by its place in the iteration (the others were recovered before the stop).
    ids: Option<Vec<usize>>,
    /// Of the same: the ids recovered before the stop, as ranges.
    prior: Vec<(u64, u64)>,
    /// With `--checkpoint`: which tasks were recovered (or skipped), by place.
    settled: Vec<bool>,
    /// When the last checkpoint inside this iteration was saved.
    saved_at: Instant,
    /// Time spent spawning workers that joined (`MasterLink::joining`): in the iteration's
    /// time, left out of what the tuner measures.
    joining: Duration,
}

impl<M: Master> Round<M> {
    /// The iteration's progress at `at`, for the tuner.
    fn span(&self, at: Instant) -> Span {
        let (tasks, busy_ms, answers) = self.probe.done();
        Span {
            ms: ms(at
                .saturating_duration_since(self.started)
                .saturating_sub(self.joining)),
            // Failed attempts and answers a copy beat were processed, not done.
            tasks: tasks.min(self.done),
            busy_ms,
            answers,
            workers: self.workers,
            in_flight: (0.0, 0.0),
        }
    }

    /// The task id of the task at `place` in the iteration.
    fn id(&self, place: usize) -> usize {
        self.ids
            .as_ref()
            .and_then(|ids| ids.get(place))
            .copied()
            .unwrap_or(place)
    }

    /// The tasks the tuner may count on after the `done` answered: of a stream, whose length is
    /// unknown, as many again as were done (and at least those produced but not answered).
    fn remaining(&self, done: u64) -> usize {
        let left = self.produced.saturating_sub(done as usize);
        if self.streamed {
            left.max(done as usize)
        } else {
            left
        }
    }

    /// Lists `worker`, which holds nothing, among those waiting for a chunk, unless it is
    /// listed already. Two paths can find the same worker without work in one answer's
    /// handling: a worker taken out midway answers its last chunk, the tuner brings it back at
    /// that answer's look (listing it), and the answer's own supply finds nothing to cut. Listed
    /// twice, it would be sent two chunks when tasks come, and under `sync` the second send
    /// waits for a worker that waits for the master to take its answer.
    fn wait(&mut self, worker: usize) {
        if !self.idle.contains(&worker) {
            self.idle.push(worker);
        }
    }

    /// Whether `worker` is healthy, takes no part and holds nothing: one taken out midway may
    /// still be answering its chunks, and under `sync` a send to it would wait for that answer
    /// while it waits for the master to take it.
    fn parked(&self, worker: usize, healthy: &[bool], held: &[VecDeque<InFlight>]) -> bool {
        healthy[worker] && !self.active[worker] && held[worker].is_empty()
    }
}

impl<M, L> Engine<'_, M, L>
where
    M: Master,
    L: MasterLink<M::Task, M::Shared, M::Result>,
{
    fn run(&mut self, start: usize) -> Result<()> {
        for index in start.. {
            crate::interrupt::check()?;
            let applied = self.tunables.apply_pending(index);
            for a in &applied {
                self.announce(&a.decision);
            }
            self.tuner.applied(&applied);
            self.metrics
                .decisions
                .extend(applied.into_iter().map(|a| a.decision));
            self.welcome_back(index);
            let tunables = self.tunables.current();
            self.follow_policy(&tunables.policy)?;
            let healthy = self.healthy.iter().filter(|&&h| h).count();
            let iteration = Iteration {
                index,
                workers: tunables.nworkers.min(healthy),
                factor: tunables.factor,
                policy: tunables.policy.clone(),
            };
            match self.iteration(&iteration)? {
                Some(Flow::Continue) => {
                    if let Some(took) = self.save(index + 1, Vec::new())? {
                        if let Some(last) = self.metrics.iterations.last_mut() {
                            last.checkpoint_ms = Some(ms(took));
                        }
                    }
                }
                Some(Flow::Stop) | None => break,
            }
        }
        Ok(())
    }

    /// Runs one iteration; `None` when it had no tasks.
    fn iteration(&mut self, it: &Iteration) -> Result<Option<Flow>> {
        let started = clock::now();
        self.trace.iteration_begins(it.index);
        ITERATION.with(|i| i.set(Some(it.index)));
        entering("partition");
        let work = self.master.partition(it);
        let mut uncut = VecDeque::from(work.tasks);
        let streamed = self.stream_into(&mut uncut, it);
        entering(RUNTIME);
        let partitioned = clock::since(started);
        self.trace.master(started, MasterWork::Partition);
        if uncut.is_empty() {
            return Ok(None);
        }
        // Resumed inside this iteration: the tasks recovered before the stop are not run again.
        let (ids, prior) = match self.resume_settled.take() {
            Some(settled) if !streamed => (Some(unsettled(&mut uncut, &settled)), settled),
            _ => (None, Vec::new()),
        };
        if uncut.is_empty() {
            return Err(Error::backend(
                "the checkpoint resumed from says every task of its iteration was recovered",
            ));
        }
        let pool = self.link.pool();
        // Known at the start: all of them, or of a stream, the first window.
        let tasks = uncut.len();
        self.progress.iteration_begins(it, tasks);
        let shared_bytes = work.shared.encoded_len() as u64;
        let mut probe = Probe::new(pool, shared_bytes, started);
        probe.serial += partitioned;
        let tuned = self.config.tuning.mode != crate::config::TuneMode::Off;
        let look_every = (tasks as u64 / LOOKS).max(1);
        let probe_tasks = self.probe_tasks(it, tasks);
        let mut round = Round::<M> {
            index: it.index,
            shared: Arc::new(work.shared),
            uncut,
            produced: tasks,
            streamed,
            next_task: 0,
            retry: VecDeque::new(),
            open: OpenChunks::default(),
            attempts: HashMap::new(),
            next_watch: started + WATCH_EVERY,
            workers: it.workers,
            active: vec![false; pool],
            idle: Vec::new(),
            chunk_sizes: Vec::new(),
            prefetched: 0,
            probe,
            tuning: Duration::ZERO,
            started,
            factor: it.factor,
            done: 0,
            probe_left: probe_tasks,
            planned: false,
            next_look: tuned.then_some(if probe_tasks > 0 {
                probe_tasks as u64
            } else {
                look_every
            }),
            look_every,
            mixed: false,
            backups: 0,
            ids,
            prior,
            settled: if self.config.checkpoint.is_some() {
                vec![false; tasks]
            } else {
                Vec::new()
            },
            saved_at: started,
            joining: Duration::ZERO,
        };
        if probe_tasks == 0 {
            self.plan(&mut round);
        }
        // Workers still busy with a chunk of an earlier iteration (whose copy was answered
        // first) sit this one out.
        let chosen: Vec<usize> = (0..pool)
            .filter(|&w| self.healthy[w] && self.held[w].is_empty())
            .take(it.workers)
            .collect();
        for worker in (0..pool).filter(|w| !chosen.contains(w)) {
            if self.healthy[worker] && self.held[worker].is_empty() {
                self.link.park(worker);
            }
        }
        for &worker in &chosen {
            self.activate(&mut round, worker)?;
        }
        // Breadth first: every worker gets a chunk before any gets one ahead.
        for &worker in &chosen {
            if !self.dispatch(&mut round, worker, clock::now())? {
                round.wait(worker);
            }
        }
        for &worker in &chosen {
            self.prefetch(&mut round, worker, clock::now())?;
        }
        // The prediction is made now, while the first chunks are out and the master would only
        // wait: from the measurements of earlier iterations alone.
        let predicting = clock::now();
        let predicted = self.tuner.predict(tasks, chosen.len());
        round.tuning += clock::since(predicting);

        // The steady path's answer, kept from one to the next so that its vectors are reused.
        let mut answer = Done::default();
        while round.done < round.produced as u64 {
            // No new chunk after SIGINT or SIGTERM: the run ends with what it has.
            crate::interrupt::check()?;
            if self.steady(&mut round, it, &mut answer)? {
                continue;
            }
            let waiting = self.trace.mark();
            let (message, at) = self.listen()?;
            let Some((worker, message)) = message else {
                self.watch(&mut round, at)?;
                continue;
            };
            let stamps = self.link.stamps();
            self.heard(worker, at);
            self.trace.received(waiting, worker, (&message, stamps));
            if at >= round.next_watch {
                self.watch(&mut round, at)?;
            }
            match message {
                FromWorker::Done(mut done) => {
                    let arrival = Arrival {
                        at,
                        bytes: done.encoded_len() as u64,
                        unbilled_ns: stamps.unbilled_ns,
                    };
                    self.answered(&mut round, it, worker, &mut done, arrival)?;
                    // Emptied by `recover`, unless the answer settled nothing.
                    done.results.clear();
                    self.link.reuse_results(done.results);
                }
                FromWorker::Failed(failed) => self.reassign(&mut round, worker, failed)?,
                FromWorker::Lost { why } => self.lose(&mut round, worker, &why)?,
                other => {
                    return Err(Error::backend(format!(
                        "worker {worker} sent an unexpected message mid-iteration: {}",
                        describe(&other)
                    )));
                }
            }
        }

        let closing = clock::now();
        let end = round.span(closing);
        self.tuner.close_midway(end, it.index, &self.tunables);
        round.tuning += clock::since(closing);
        let closing = clock::now();
        entering("end_iteration");
        let flow = self.master.end_iteration(it);
        entering(RUNTIME);
        round.probe.serial += clock::since(closing);
        self.trace.master(closing, MasterWork::EndIteration);
        let elapsed = clock::since(started);
        // A prediction for the tasks known at the start says nothing of a longer stream.
        let predicted = predicted.filter(|_| !round.streamed);
        // The round held the shared part: with it gone and the link's copy let go, the next
        // iteration's part is made with nothing of this one held.
        self.record(it, round, elapsed, predicted);
        self.link.iteration_over();
        ITERATION.with(|i| i.set(None));
        self.trace.iteration_ends(it.index, started);
        self.progress.iteration_ends();
        Ok(Some(flow))
    }

    /// `worker`'s answer `done`, on either path: its results recovered, more tasks asked for,
    /// the tuner's look when due, the worker supplied and the checkpoint inside the iteration
    /// saved when due.
    fn answered(
        &mut self,
        round: &mut Round<M>,
        it: &Iteration,
        worker: usize,
        done: &mut Done<M::Result>,
        arrival: Arrival,
    ) -> Result<()> {
        let (recovered, now) = self.recover(round, worker, done, arrival)?;
        round.done += recovered as u64;
        self.progress.tasks_done(recovered);
        self.stream(round, it)?;
        let unanswered = round.done < round.produced as u64;
        if round.next_look.is_some_and(|at| round.done >= at) && unanswered {
            self.look(round)?;
        }
        self.supply(round, worker, now)?;
        if !round.settled.is_empty()
            && !round.streamed
            && now.saturating_duration_since(round.saved_at) >= self.config.checkpoint_every
            && round.done < round.produced as u64
        {
            round.saved_at = now;
            let settled = settled_ranges(round);
            self.save(round.index, settled)?;
        }
        Ok(())
    }

    /// Tasks the first iteration of a run measures one at a time before any is planned, so that
    /// the tuner can size the pool within the first tenth of the tasks: when it may grow the
    /// pool and nothing has been measured yet. A tenth of the tasks, at least two per worker
    /// taking part and [`PROBE_LEAST`], at most [`PROBE_TASKS`] (or two per worker); none where
    /// that would be more than a quarter of them. Without the probe the policy plans at once for
    /// the workers there are: from one worker, a chunk of half the tasks or more, which the
    /// workers the tuner adds at its first look cannot share.
    fn probe_tasks(&self, it: &Iteration, tasks: usize) -> usize {
        let tuning = &self.config.tuning;
        let (_, hi) = tuning.range(self.link.pool());
        let cold = self.stats.pooled().count() == 0;
        if !(tuning.mode.tunes_workers() && it.workers < hi && cold) {
            return 0;
        }
        let least = PROBE_LEAST.max(2 * it.workers);
        let most = PROBE_TASKS.max(2 * it.workers);
        if tasks < PROBE_SHARE * least {
            return 0;
        }
        (tasks / LOOKS as usize).clamp(least, most)
    }

    /// Tops `uncut` up to the stream's window from [`Master::more_tasks`]; whether it added any.
    /// The caller says when the hook is over.
    fn stream_into(&mut self, uncut: &mut VecDeque<M::Task>, it: &Iteration) -> bool {
        let room = self.stream_ahead.saturating_sub(uncut.len());
        if room == 0 {
            return false;
        }
        entering("more_tasks");
        let more = self.master.more_tasks(it, room);
        let added = !more.is_empty();
        uncut.extend(more);
        added
    }

    /// Asks the master for more tasks while the iteration runs (after an answer, whose result
    /// may have made some); new ones are planned and go to workers left idle.
    fn stream(&mut self, round: &mut Round<M>, it: &Iteration) -> Result<()> {
        let before = round.uncut.len();
        let added = self.stream_into(&mut round.uncut, it);
        entering(RUNTIME);
        if !added {
            return Ok(());
        }
        let new = round.uncut.len() - before;
        round.produced += new;
        if !round.settled.is_empty() {
            round.settled.resize(round.produced, false);
        }
        round.streamed = true;
        self.progress.tasks_added(new);
        if round.planned {
            self.plan(round);
            self.wake_idle(round)?;
        }
        Ok(())
    }

    /// Lets the policy plan the tasks not yet cut, for the workers and factor in force.
    fn plan(&mut self, round: &mut Round<M>) {
        self.policy.begin(&Plan {
            tasks: round.uncut.len(),
            workers: round.workers,
            factor: round.factor,
            min_chunk: self.config.min_chunk,
            stats: &self.stats,
        });
        round.planned = true;
    }

    /// The iteration's progress at `at` ([`Round::span`]), with the chunks being processed
    /// counted by how far each should be: the time since its worker started it (its last
    /// answer, or the chunk's send) over its tasks at the worker's mean task time.
    fn progress(&self, round: &Round<M>, at: Instant) -> Span {
        let mut span = round.span(at);
        for (worker, held) in self.held.iter().enumerate() {
            let Some(front) = held.front().filter(|f| f.iteration == round.index) else {
                continue;
            };
            let mean = self.stats.worker(worker).mean();
            if mean <= 0.0 || !mean.is_finite() {
                continue;
            }
            let started = front.sent.max(self.standing[worker].heard);
            let elapsed = ms(at.saturating_duration_since(started)).min(front.len as f64 * mean);
            span.in_flight.0 += elapsed / mean;
            span.in_flight.1 += elapsed;
        }
        span
    }
}
thread_local! {
    /// The master's hook running on this thread: what a panic of the master is reported in.
    static HOOK: Cell<&'static str> = const { Cell::new("the master's constructor") };
    /// The iteration the master is in, if any, for the same report.
    static ITERATION: Cell<Option<usize>> = const { Cell::new(None) };
}

/// What a panic outside the hooks is reported in.
const RUNTIME: &str = "the runtime's master loop";

/// `hook` of the master is about to run. Inlined: the loop notes a hook three times per
/// answer, and a call costs more than the store.
#[inline]
fn entering(hook: &'static str) {
    HOOK.with(|h| h.set(hook));
}

/// Runs the master's side of a run, `run`, turning a panic of the master's code into
/// [`ErrorKind::MasterPanicked`] naming the hook it came from, so that the caller can stop the
/// workers instead of leaving them waiting.
pub(crate) fn guarded<T>(run: impl FnOnce() -> Result<T>) -> Result<T> {
    entering("the master's constructor");
    ITERATION.with(|i| i.set(None));
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|panic| {
        Err(ErrorKind::MasterPanicked {
            hook: HOOK.with(Cell::get),
            iteration: ITERATION.with(Cell::get),
            message: super::worker::panic_message(&*panic),
        }
        .into())
    })
}

/// Keeps in `uncut` the tasks whose ids `settled` (ranges) leaves out; their ids.
fn unsettled<T>(uncut: &mut VecDeque<T>, settled: &[(u64, u64)]) -> Vec<usize> {
    let done = |id: usize| settled.iter().any(|&(a, b)| (a..b).contains(&(id as u64)));
    let mut ids = Vec::new();
    let mut id = 0;
    uncut.retain(|_| {
        let keep = !done(id);
        if keep {
            ids.push(id);
        }
        id += 1;
        keep
    });
    ids
}

/// The ids of the tasks of `round` settled so far, as ranges; with those settled before a
/// restart (left out of `round`).
fn settled_ranges<M: Master>(round: &Round<M>) -> Vec<(u64, u64)> {
    let mut ids: Vec<u64> = (0..round.settled.len())
        .filter(|&p| round.settled[p])
        .map(|p| round.id(p) as u64)
        .collect();
    for &(start, end) in &round.prior {
        ids.extend(start..end);
    }
    ids.sort_unstable();
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for id in ids {
        match ranges.last_mut() {
            Some((_, end)) if *end == id => *end += 1,
            _ => ranges.push((id, id + 1)),
        }
    }
    ranges
}

/// Checkpoints per iteration: the tuner may look after every tenth of the tasks.
const LOOKS: u64 = 10;
/// Tasks of a stream kept ready per worker of the pool, unless the master says otherwise.
const STREAM_AHEAD: usize = 64;
/// Tasks measured one at a time at the start of a run before the pool is sized, at most (or
/// two per worker taking part).
const PROBE_TASKS: usize = 8;
/// Tasks the probe measures, at least: fewer tell the tuner too little of their deviation.
const PROBE_LEAST: usize = 4;
/// The probe is at most one task in this many: its chunks of one task cost a trip each.
const PROBE_SHARE: usize = 4;

fn describe<T, R>(message: &FromWorker<T, R>) -> &'static str {
    match message {
        FromWorker::Ready { .. } => "ready",
        FromWorker::Done(_) => "results",
        FromWorker::Failed(_) => "failure",
        FromWorker::Finished { .. } => "finished",
        FromWorker::Lost { .. } => "lost",
    }
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
