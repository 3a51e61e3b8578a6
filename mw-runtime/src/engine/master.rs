//! The master's iteration loop: partition, hand out chunks by self-scheduling, recover every
//! result exactly once, re-run the chunks of failed workers.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{self, Instant};

use crate::app::{Flow, Iteration, Master, Setup, TaskId};
use crate::codec::Message;
use crate::config::RunConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::measure::{Answer, Facts, Probe, TaskStats};
use crate::metrics::{Failure, IterationMetrics, Measured, RunMetrics};
use crate::policy::{self, Ask, ChunkDone, Plan, Policy, PolicyChoice};
use crate::progress::Progress;
use crate::trace::{MasterWork, Trace};
use crate::transport::{Chunk, Done, Failed, FromWorker, MasterLink, SentChunk, ToWorker};
use crate::tuning::control::{ControlServer, Status};
use crate::tuning::tunables::TunablesHandle;
use crate::tuning::{Span, Tuner};

mod faults;

use super::checkpoint::{Checkpoint, Saver, Shape};
use faults::{Open, OpenChunks, Retry, Standing, WATCH_EVERY};

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

/// A chunk out at a worker.
struct InFlight {
    chunk: u64,
    iteration: usize,
    first: usize,
    len: usize,
    sent: Instant,
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
    /// Active workers with nothing to do right now.
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
    /// Opens the control endpoint, if one was asked for.
    fn open_control(&mut self) -> Result<()> {
        if let Some(addr) = &self.config.control {
            let server = ControlServer::start(addr, self.tunables.clone())?;
            eprintln!("mw: control endpoint listening on {}", server.addr());
            self.control = Some(server);
        }
        Ok(())
    }

    /// Waits until every worker has run `initialize`; failed ones take no part.
    fn await_ready(&mut self) -> Result<()> {
        let pool = self.link.pool();
        let mut setup = Setup {
            pool,
            backend: self.link.backend(),
            protocol: self.config.protocol,
            tunables: self.tunables.clone(),
            iterations: None,
            tasks: None,
            stream_ahead: self.stream_ahead,
            policy: None,
            registry: Default::default(),
            tunlets: Vec::new(),
            arguments: Vec::new(),
        };
        entering("initialize");
        let master_init = self.master.initialize(&mut setup);
        entering(RUNTIME);
        if let Some(own) = setup.policy.take() {
            self.policy = own;
            self.own_policy = true;
        }
        self.registry = std::mem::take(&mut setup.registry);
        self.tuner.register_policies(&self.registry);
        self.tunables
            .register_policies(self.registry.entries().iter().map(|(name, _)| name.clone()));
        self.tuner.add_tunlets(std::mem::take(&mut setup.tunlets));
        self.progress.expect_iterations(setup.iterations);
        self.progress.expect_tasks(setup.tasks);
        self.shape = Shape {
            arguments: std::mem::take(&mut setup.arguments),
            iterations: setup.iterations,
        };
        self.stream_ahead = setup.stream_ahead;
        let mut errors = Vec::new();
        for _ in 0..pool {
            match self.link.recv()? {
                (_, FromWorker::Ready { error: None }) => {}
                (worker, FromWorker::Ready { error: Some(e) }) => {
                    eprintln!(
                        "warning: worker {worker} failed to initialize and takes no part: {e}"
                    );
                    self.healthy[worker] = false;
                    errors.push(format!("worker {worker}: {e}"));
                }
                (worker, _) => {
                    return Err(Error::backend(format!(
                        "worker {worker} answered before it was ready"
                    )));
                }
            }
        }
        master_init?;
        // A registered name is looked up once the program has registered its policies (every
        // worker has answered, so none is left waiting); `Setup::policy` takes precedence. It
        // is the starting value of `policy`, which can be changed like any other.
        if let PolicyChoice::Registered(name) = &self.config.policy {
            let registered = self.registry.build(name)?;
            if !self.own_policy {
                self.policy = registered;
                let name = self.registry.registered_name(name).unwrap_or(name);
                self.policy_name = PolicyChoice::Registered(name.to_owned());
                self.tunables.start_with_policy(self.policy_name.clone());
            }
        }
        if !self.healthy.contains(&true) {
            let message = if errors.is_empty() {
                "the pool is empty".to_owned()
            } else {
                errors.join("; ")
            };
            return Err(ErrorKind::NoWorkers { message }.into());
        }
        Ok(())
    }

    /// Puts back the master's state saved in `resumed`, if the run goes on from a checkpoint;
    /// with `--checkpoint`, checks the master can save one before any work.
    fn restore(&mut self, resumed: Option<Checkpoint>) -> Result<()> {
        if let Some(saved) = resumed {
            let path = self.config.resume.as_deref().unwrap_or(Path::new(""));
            saved.fits(&self.shape, path)?;
            entering("restore");
            let restored = self.master.restore(&saved.master);
            entering(RUNTIME);
            restored?;
            eprintln!(
                "mw: resumed from `{}` at iteration {}",
                self.config
                    .resume
                    .as_deref()
                    .unwrap_or(Path::new(""))
                    .display(),
                saved.next_iteration
            );
        }
        if let Some(path) = &self.config.checkpoint {
            entering("checkpoint");
            let can = self.master.checkpoint().is_some();
            entering(RUNTIME);
            if !can {
                return Err(Error::config(
                    format!(
                        "error: `--checkpoint {}`: this program's master has no `checkpoint` hook",
                        path.display()
                    ),
                    "give the master `checkpoint` and `restore` hooks (its state between two \
                     iterations), or run without `--checkpoint`",
                ));
            }
        }
        Ok(())
    }

    /// Saves the state to go on from at iteration `next` (`--checkpoint`), of which the tasks
    /// `settled` (ranges of task ids) were recovered already; the time it took.
    fn save(&mut self, next: usize, settled: Vec<(u64, u64)>) -> Result<Option<Duration>> {
        let Some(path) = &self.config.checkpoint else {
            return Ok(None);
        };
        let saving = clock::now();
        entering("checkpoint");
        let master = self.master.checkpoint();
        entering(RUNTIME);
        let Some(master) = master else {
            return Err(Error::app(
                "the master's `checkpoint` hook returned None after it had returned a state",
            ));
        };
        let checkpoint = Checkpoint {
            app: self.metrics.app.clone(),
            next_iteration: next,
            tunables: self.tunables.current(),
            task_times: self.stats.last(),
            settled,
            master,
            arguments: self.shape.arguments.clone(),
        };
        self.saver.save(checkpoint, path)?;
        Ok(Some(clock::since(saving)))
    }

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
                round.idle.push(worker);
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

        while round.done < round.produced as u64 {
            // No new chunk after SIGINT or SIGTERM: the run ends with what it has.
            crate::interrupt::check()?;
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
                FromWorker::Done(done) => {
                    let unbilled = stamps.unbilled_ns;
                    let (recovered, now) = self.recover(&mut round, worker, done, unbilled, at)?;
                    round.done += recovered as u64;
                    self.progress.tasks_done(recovered);
                    self.stream(&mut round, it)?;
                    let unanswered = round.done < round.produced as u64;
                    if round.next_look.is_some_and(|at| round.done >= at) && unanswered {
                        self.look(&mut round)?;
                    }
                    self.supply(&mut round, worker, now)?;
                    if !round.settled.is_empty()
                        && !round.streamed
                        && now.saturating_duration_since(round.saved_at)
                            >= self.config.checkpoint_every
                        && round.done < round.produced as u64
                    {
                        round.saved_at = now;
                        let settled = settled_ranges(&round);
                        self.save(round.index, settled)?;
                    }
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

    /// Tasks the first iteration of a run measures one at a time before any is planned, so that
    /// the tuner can size the pool within the first tenth of the tasks: when it may grow the
    /// pool, nothing has been measured yet, and the tasks are many enough for the probe to be a
    /// small part of them.
    fn probe_tasks(&self, it: &Iteration, tasks: usize) -> usize {
        let tuning = &self.config.tuning;
        let (_, hi) = tuning.range(self.link.pool());
        let probe = PROBE_TASKS.max(2 * it.workers);
        let cold = self.stats.pooled().count() == 0;
        if tuning.mode.tunes_workers() && it.workers < hi && cold && tasks >= LOOKS as usize * probe
        {
            probe
        } else {
            0
        }
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

    /// A checkpoint inside the iteration: the tuner looks at the tasks answered so far and may
    /// change `nworkers` or `factor` at once: new workers get the shared part and chunks, workers
    /// taken out get no more, and the policy plans the tasks not yet cut anew.
    fn look(&mut self, round: &mut Round<M>) -> Result<()> {
        let looking = clock::now();
        let span = self.progress(round, looking);
        let done = span.tasks;
        let remaining = round.remaining(done);
        round.next_look = Some(done + round.look_every).filter(|_| remaining > 0);
        let asked = self.tuner.wants_look(round.probe.worker_tasks()) && {
            let so_far = round.probe.observe_so_far(Facts {
                index: round.index,
                workers: round.workers,
                factor: round.factor,
                policy: self.policy_name.clone(),
                tasks: done as usize,
                chunks: round.chunk_sizes.len(),
                time_ms: span.ms,
                mixed: true,
            });
            let healthy = self.healthy.iter().filter(|&&h| h).count();
            self.tuner.checkpoint(
                &so_far,
                span,
                remaining,
                round.look_every,
                &self.tunables.current(),
                healthy,
                &self.stats,
                &self.tunables,
            )
        };
        round.tuning += clock::since(looking);
        if asked {
            self.apply_now(round, done as usize)?;
        }
        if !round.planned {
            self.plan(round);
        }
        self.wake_idle(round)
    }

    /// Workers left waiting (by the probe, or with nothing left to cut) get chunks now.
    fn wake_idle(&mut self, round: &mut Round<M>) -> Result<()> {
        while let Some(worker) = round.idle.pop() {
            if !self.dispatch(round, worker, clock::now())? {
                round.idle.push(worker);
                break;
            }
            self.prefetch(round, worker, clock::now())?;
        }
        Ok(())
    }

    /// Applies the tuner's changes inside the iteration, `done` of its tasks answered.
    fn apply_now(&mut self, round: &mut Round<M>, done: usize) -> Result<()> {
        let applied = self.tunables.apply_tuned_now(round.index, done);
        if applied.is_empty() {
            return Ok(());
        }
        for a in &applied {
            self.announce(&a.decision);
        }
        self.trace.decided_midway(applied.len());
        self.tuner.applied(&applied);
        self.metrics
            .decisions
            .extend(applied.into_iter().map(|a| a.decision));
        round.mixed = true;
        let current = self.tunables.current();
        round.factor = current.factor;
        let healthy = self.healthy.iter().filter(|&&h| h).count();
        let target = current.nworkers.min(healthy).max(1);
        // Workers that failed are out already: count those taking part, not `round.workers`.
        let active = round.active.iter().filter(|&&a| a).count();
        if target > active {
            let joining: Vec<usize> = (0..self.healthy.len())
                .filter(|&w| round.parked(w, &self.healthy, &self.held))
                .take(target - active)
                .collect();
            for &worker in &joining {
                self.activate(round, worker)?;
                round.idle.push(worker);
            }
        } else {
            // Idle workers leave first, then the last busy ones, which finish what they hold.
            for _ in target..active {
                let Some(worker) = round
                    .idle
                    .pop()
                    .or_else(|| (0..round.active.len()).rev().find(|&w| round.active[w]))
                else {
                    break;
                };
                round.active[worker] = false;
            }
        }
        round.workers = round.active.iter().filter(|&&a| a).count().max(1);
        self.follow_policy(&current.policy)?;
        self.plan(round);
        Ok(())
    }

    /// Builds the policy now in force, if it changed and the program did not bring its own.
    fn follow_policy(&mut self, choice: &PolicyChoice) -> Result<()> {
        if self.own_policy || *choice == self.policy_name {
            return Ok(());
        }
        self.policy = match choice {
            PolicyChoice::BuiltIn(name) => name.build(),
            PolicyChoice::Registered(name) => self.registry.build(name)?,
        };
        self.policy_name = choice.clone();
        Ok(())
    }

    /// Says on stderr what changed and why, unless the run is `--quiet`.
    fn announce(&self, d: &crate::tuning::tunables::Decision) {
        if !self.config.quiet {
            eprint!("{}", crate::summary::announcement(d, self.config.verbose));
        }
    }

    /// Sends the iteration's shared part to `worker`, making it take part.
    fn activate(&mut self, round: &mut Round<M>, worker: usize) -> Result<()> {
        round.active[worker] = true;
        let part = Arc::clone(&round.shared);
        let iteration = round.index;
        let entry = clock::now();
        let sending = self.trace.mark();
        let sent = self.link.send(worker, ToWorker::Shared { iteration, part });
        self.trace.shared_sent(sending, worker);
        let entry = self.link.handed().unwrap_or(entry);
        round.probe.shared_sent(worker, entry);
        round.joining += self.link.joining();
        sent
    }

    /// Keeps `worker`, which just answered, supplied: a chunk now if it holds none (with nothing
    /// left, it waits idle), then as many ahead as `prefetch` allows.
    fn supply(&mut self, round: &mut Round<M>, worker: usize, now: Instant) -> Result<()> {
        // Counted only for a parked worker: a count over the pool for every answer would cost
        // as much as the rest of the bookkeeping on a large pool.
        if round.parked(worker, &self.healthy, &self.held)
            && round.active.iter().filter(|&&a| a).count() < round.workers
        {
            // Still busy with a chunk of an earlier iteration (whose copy was answered first)
            // when this one began: it joins now that it has answered.
            self.activate(round, worker)?;
        }
        if !round.active[worker] || !self.healthy[worker] {
            // Taken out of the iteration midway: it parks once its chunks are answered.
            return Ok(());
        }
        if self.held[worker].is_empty() && !self.dispatch(round, worker, now)? {
            round.idle.push(worker);
            return Ok(());
        }
        self.prefetch(round, worker, now)
    }

    /// Sends `worker`, already holding a chunk, more while plenty of work is left
    /// ([`policy::sends_ahead`]) and no task waits to be run again: those go to a free worker,
    /// never to the back of a queue.
    fn prefetch(&mut self, round: &mut Round<M>, worker: usize, now: Instant) -> Result<()> {
        let depth = self.config.prefetch_depth();
        loop {
            let held = &self.held[worker];
            let last = held.back().map_or(0, |f| f.len);
            if !round.retry.is_empty()
                || !policy::sends_ahead(held.len(), last, depth, round.workers, round.uncut.len())
                || !self.dispatch(round, worker, now)?
            {
                return Ok(());
            }
        }
    }

    /// Sends `worker` a chunk: tasks to run again first (those that failed on it go to another
    /// worker when there is one), else a new one cut by the policy. `false` when nothing is left
    /// to send. `now` is the caller's latest clock reading: with empty tasks, a read costs as
    /// much as the rest of a dispatch.
    fn dispatch(&mut self, round: &mut Round<M>, worker: usize, now: Instant) -> Result<bool> {
        let (first, tasks) = if let Some(retry) = self.retry_for(round, worker) {
            (retry.first, retry.tasks)
        } else if !round.uncut.is_empty() {
            let uncut = round.uncut.len();
            let size = if round.probe_left > 0 {
                round.probe_left -= 1;
                1
            } else if !round.planned {
                // The probe's tasks are out: the rest waits for the tuner's first look.
                return Ok(false);
            } else {
                let ask = Ask {
                    worker,
                    remaining: uncut,
                    stats: &self.stats,
                };
                let size = self.policy.next_chunk(&ask);
                policy::checked(&*self.policy, size, uncut)?
            };
            let first = round.next_task;
            round.next_task += size;
            round.chunk_sizes.push(size);
            let mut tasks = self.link.spare_tasks();
            if size == 1 {
                // The finest grain: a drain's bookkeeping costs more than moving the one task.
                tasks.extend(round.uncut.pop_front());
            } else {
                tasks.extend(round.uncut.drain(..size));
            }
            (first, tasks)
        } else {
            return Ok(false);
        };
        let len = tasks.len();
        // A copy of a chunk still out elsewhere, or a chunk the engine keeps while it is out.
        let copy = round.open.get_mut(&first).filter(|open| open.len == len);
        if let Some(open) = copy {
            open.holders += 1;
            let sent = self.send_chunk(round, worker, first, tasks, now)?;
            self.link.reclaim(sent);
        } else {
            let sent = self.send_chunk(round, worker, first, tasks, now)?;
            let open = Open {
                len,
                sent,
                holders: 1,
                copied: false,
            };
            round.open.insert(first, open);
        }
        Ok(true)
    }

    /// Sends tasks `first..` to `worker` as a new chunk, and notes that it holds it; the chunk
    /// as sent, encoded.
    fn send_chunk(
        &mut self,
        round: &mut Round<M>,
        worker: usize,
        first: usize,
        tasks: Vec<M::Task>,
        now: Instant,
    ) -> Result<SentChunk> {
        let chunk = Chunk {
            id: self.next_chunk_id,
            first: first as u64,
            tasks,
        };
        self.next_chunk_id += 1;
        let bytes = chunk.encoded_len() as u64;
        let held = &mut self.held[worker];
        round.prefetched += usize::from(!held.is_empty());
        if held.is_empty() {
            // Its silence counts from when it has work.
            self.standing[worker].hear(now, self.listened);
        }
        held.push_back(InFlight {
            chunk: chunk.id,
            iteration: round.index,
            first,
            len: chunk.tasks.len(),
            sent: now,
        });
        let (id, len, sending) = (chunk.id, chunk.tasks.len(), self.trace.mark());
        let sent = self.link.send_chunk(worker, chunk)?;
        self.trace.chunk_sent(sending, worker, id, len);
        // Its trip counts from `now`, or from when a link that keeps its own time took it: the
        // link charges from there, and cutting the chunk before is the master's time.
        let entry = self.link.handed().unwrap_or(now);
        round.probe.chunk_sent(worker, bytes, entry);
        Ok(sent)
    }

    /// Hands a chunk's results, received at `at`, to `recover`, one call per task; returns how
    /// many tasks it settled (recovered, or failed for good and skipped), and when it was done.
    /// The master's time for the answer counts from `at`: its bookkeeping and the `recover`
    /// calls. An answer to a chunk whose copy was answered first, or of an earlier iteration,
    /// settles nothing. `unbilled_ns` is the time in its trip the link says it did not charge.
    fn recover(
        &mut self,
        round: &mut Round<M>,
        worker: usize,
        done: Done<M::Result>,
        unbilled_ns: Option<i64>,
        at: Instant,
    ) -> Result<(usize, Instant)> {
        let flight = match self.held.get_mut(worker).and_then(VecDeque::pop_front) {
            Some(flight)
                if flight.chunk == done.chunk
                    && flight.len == done.results.len() + done.failed.len() =>
            {
                flight
            }
            _ => {
                return Err(Error::backend(format!(
                    "worker {worker} answered chunk {} with {} results, which does not match the \
                     chunk it was given",
                    done.chunk,
                    done.results.len()
                )));
            }
        };
        let busy = Duration::from_nanos(done.busy_ns);
        self.stats.record(worker, &done.task_ms);
        self.policy.chunk_done(&ChunkDone {
            worker,
            tasks: flight.len,
            busy,
            round_trip: at.saturating_duration_since(flight.sent),
        });
        if flight.iteration != round.index {
            self.failed_late(flight.iteration, worker, flight.first, &done.failed);
            return Ok((0, at));
        }
        let answer = Answer {
            bytes: done.encoded_len() as u64,
            at,
            busy,
            cpu: done.cpu_ns.map(Duration::from_nanos),
            wait: done.wait_ns.map(Duration::from_nanos),
            late: done.late_ns.map(Duration::from_nanos),
            tasks: &done.task_ms,
            unbilled_ns,
        };
        round.probe.answered(worker, answer);
        let recovering_from =
            if self.send_first(round, worker, &flight, done.failed.is_empty(), at)? {
                clock::now()
            } else {
                at
            };
        let open = match round.open.remove(&flight.first) {
            Some(open) if open.len == flight.len => open,
            other => {
                // A copy was answered first: these results are the same again, but the
                // failures (a panic slowed by its backtrace, say) happened all the same.
                if let Some(open) = other {
                    round.open.insert(flight.first, open);
                }
                self.failed_late(round.index, worker, flight.first, &done.failed);
                return Ok((0, at));
            }
        };
        self.standing[worker].answered(done.failed.is_empty());
        let recovering = self.trace.mark();
        let mut results = done.results;
        let mut failed = done
            .failed
            .iter()
            .map(|(offset, _)| *offset as usize)
            .peekable();
        let mut offset = 0;
        entering("recover");
        for result in results.drain(..) {
            while failed.next_if_eq(&offset).is_some() {
                offset += 1;
            }
            let place = flight.first + offset;
            self.master.recover(TaskId(round.id(place)), result);
            if let Some(settled) = round.settled.get_mut(place) {
                *settled = true;
            }
            offset += 1;
        }
        entering(RUNTIME);
        self.link.reuse_results(results);
        let mut settled = flight.len - done.failed.len();
        if !done.failed.is_empty() {
            settled += self.task_failures(round, worker, flight.first, &open, &done.failed)?;
        }
        self.link.reclaim(open.sent);
        let now = clock::now();
        round.probe.recover += now.saturating_duration_since(recovering_from);
        self.trace
            .recovered(recovering, worker, flight.chunk, flight.len);
        Ok((settled, now))
    }

    /// Sends `worker`, which just answered `flight` and holds no other chunk, its next chunk
    /// before the answer is recovered, so that the master's recovery overlaps the worker's
    /// next chunk instead of leaving it idle (a hand-written loop sends before it looks at the
    /// answer). Only where recovering could not change what is sent: every task succeeded (a
    /// failed one runs again first), nothing waits to run again, no look of the tuner is due
    /// and the iteration streams no tasks. `at` is when the answer came. Whether it sent one.
    fn send_first(
        &mut self,
        round: &mut Round<M>,
        worker: usize,
        flight: &InFlight,
        clean: bool,
        at: Instant,
    ) -> Result<bool> {
        let answered = round.done + flight.len as u64;
        let ready = clean
            && self.held[worker].is_empty()
            && round.retry.is_empty()
            && !round.streamed
            && round.active[worker]
            && self.healthy[worker]
            && round.next_look.is_none_or(|look| answered < look);
        Ok(ready && self.dispatch(round, worker, at)?)
    }

    /// `worker` could not process a chunk at all (it could not be built): retire it, and run
    /// the chunk, and any it held behind it, on other workers.
    fn reassign(
        &mut self,
        round: &mut Round<M>,
        worker: usize,
        failed: Failed<M::Task>,
    ) -> Result<()> {
        let Some(flight) = self.held.get_mut(worker).and_then(VecDeque::pop_front) else {
            return Err(Error::backend(format!(
                "worker {worker} reported a failure without holding a chunk"
            )));
        };
        if failed.chunk != flight.chunk || failed.tasks.len() != flight.len {
            return Err(Error::backend(format!(
                "worker {worker} returned {} tasks of chunk {} as failed, but holds {} tasks of \
                 chunk {}",
                failed.tasks.len(),
                failed.chunk,
                flight.len,
                flight.chunk
            )));
        }
        let current = flight.iteration == round.index
            && round
                .open
                .get(&flight.first)
                .is_some_and(|o| o.len == flight.len);
        if current {
            if let Some(open) = round.open.remove(&flight.first) {
                self.link.reclaim(open.sent);
            }
            round.retry.push_back(Retry {
                first: flight.first,
                tasks: failed.tasks,
                avoid: Some(worker),
            });
        }
        if self.healthy[worker] {
            eprintln!(
                "warning: worker {worker} cannot process tasks ({}); it takes no further part",
                failed.message
            );
            self.metrics.failures.push(Failure {
                iteration: round.index,
                worker,
                first_task: flight.first,
                tasks: flight.len,
                message: failed.message.clone(),
            });
            self.standing[worker].lost = true;
            self.retire(round, worker)?;
        }
        self.place_retries(round)
    }

    /// Derives the iteration's measurements, lets the tuner act on them, and records the
    /// metrics.
    fn record(
        &mut self,
        it: &Iteration,
        round: Round<M>,
        elapsed: Duration,
        predicted_ms: Option<f64>,
    ) {
        let tasks = round.produced;
        let joining = round.joining;
        let elapsed = elapsed.saturating_sub(joining);
        let facts = Facts {
            index: it.index,
            workers: it.workers,
            factor: it.factor,
            policy: self.policy_name.clone(),
            tasks,
            chunks: round.chunk_sizes.len(),
            time_ms: ms(elapsed),
            mixed: round.mixed,
        };
        // Deriving the measurements counts as the tuner's time too.
        let tuning_started = clock::now();
        let obs = round.probe.observe(facts);
        let current = self.tunables.current();
        let healthy = self.healthy.iter().filter(|&&h| h).count();
        self.tuner
            .observe(&obs, &current, healthy, &self.stats, &self.tunables);
        let tuning = round.tuning + clock::since(tuning_started);
        self.stats.end_iteration();
        self.metrics.iterations.push(IterationMetrics::measured(
            &obs,
            Measured {
                policy: self.policy.name().to_owned(),
                chunk_sizes: round.chunk_sizes,
                prefetched: round.prefetched,
                backups: round.backups,
                predicted_ms,
                link: self.tuner.link(),
                tuning,
            },
        ));
        if let (false, Some(last)) = (joining.is_zero(), self.metrics.iterations.last_mut()) {
            last.spawn_ms = Some(ms(joining));
            last.time_ms += ms(joining);
        }
        if let Some(control) = &self.control {
            control.publish(&Status {
                iteration: it.index,
                tunables: current,
                time_ms: obs.facts.time_ms,
                predicted_ms,
            });
        }
    }

    /// Writes `--trace`, if asked for; when the run failed, a failure to write is only a warning.
    fn write_trace(&self, run_ok: bool) -> Result<()> {
        let Some(path) = &self.config.trace else {
            return Ok(());
        };
        if self.trace.dropped() > 0 {
            eprintln!(
                "warning: the trace holds the beginning of the run, {} events; {} later slices \
                 were dropped (raise --trace-limit to keep more)",
                self.config.trace_limit,
                self.trace.dropped()
            );
        }
        match self.trace.write(path, &self.metrics) {
            Err(e) if !run_ok => {
                eprintln!("warning: {e}");
                Ok(())
            }
            written => written,
        }
    }

    /// Ends a run stopped by `signal`: what ran is written as if the run had ended there, and
    /// only then are the workers stopped. A worker still busy is left behind (a thread) or ended
    /// (a rank) [`SIGNAL_PATIENCE`] later, and a launcher without recovery then ends the whole
    /// job, this process with it; the launcher also kills the ranks soon after passing a signal
    /// on. So the metrics of an interrupted run are written here, before MPI is finalized, not
    /// by the caller, and `final_work` does not run.
    fn end_interrupted(&mut self, signal: &str, started: Instant) -> Result<()> {
        self.progress.finish();
        self.metrics.interrupted = Some(signal.to_owned());
        self.metrics.total_ms = ms(clock::since(started));
        self.write_trace(true)?;
        if let Some(path) = &self.config.metrics {
            self.metrics.write(path)?;
        }
        // Its error (a worker that cannot be told) changes nothing of a run already ended.
        let _ = self.shutdown(false, true);
        Ok(())
    }

    /// Tells every worker to stop and waits for each to finish `final_work`. After a run that
    /// `completed`, workers still busy with chunks (answered by copies) are waited for first
    /// (under `sync` a `Stop` would wait for them), as long as such a chunk may take before it
    /// counts as late (under MPI without recovery, as long as a worker may be silent); then
    /// they are left behind. Lost workers are not waited for at all.
    fn shutdown(&mut self, completed: bool, interrupted: bool) -> Result<()> {
        // After a failure the chunks out are not waited for: their answers are dropped.
        if completed {
            self.wait_for_late()?;
        }
        let alive: Vec<bool> = self.standing.iter().map(|s| !s.lost).collect();
        // Stopped by a signal, the run ends within a second whatever the tasks are doing: a
        // worker still busy with a chunk is left behind (a thread) or ended (a rank).
        let patience = match interrupted {
            true => SIGNAL_PATIENCE,
            false => self.config.faults.liveness,
        };
        stop_alive(self.link, &alive, patience)
    }
}

/// Tells every worker of `link` to stop and waits for each to finish `final_work`: at the end
/// of a run, and after the master panicked, when no engine is left to do it.
#[cfg(feature = "mpi")]
pub(crate) fn stop_workers<T, S, R>(link: &mut impl MasterLink<T, S, R>) -> Result<()> {
    let alive = vec![true; link.pool()];
    stop_alive(link, &alive, STOP_PATIENCE)
}

/// How long the end of a run stopped by a signal waits for the workers to finish.
const SIGNAL_PATIENCE: Duration = Duration::from_millis(500);

/// How long the end of a run waits for workers to finish, unless told otherwise.
#[cfg(feature = "mpi")]
const STOP_PATIENCE: Duration = Duration::from_secs(60);

/// Tells the `alive` workers of `link` to stop and waits for each to finish `final_work`, for
/// `patience` at most: one that has not finished by then is left behind with a warning.
fn stop_alive<T, S, R>(
    link: &mut impl MasterLink<T, S, R>,
    alive: &[bool],
    patience: Duration,
) -> Result<()> {
    let mut first_error = None;
    let mut waiting = alive.to_vec();
    for worker in (0..waiting.len()).filter(|&w| waiting[w]) {
        if let Err(e) = link.send(worker, ToWorker::Stop) {
            first_error.get_or_insert(e);
        }
    }
    let deadline = clock::now() + patience;
    while waiting.contains(&true) {
        let left = deadline.saturating_duration_since(clock::now());
        if left.is_zero() {
            for worker in (0..waiting.len()).filter(|&w| waiting[w]) {
                eprintln!(
                    "warning: worker {worker} did not finish within {:.1} s of being told to \
                     stop; it is left behind",
                    patience.as_secs_f64()
                );
                link.forsake(worker);
            }
            break;
        }
        match link.recv_within(left) {
            Ok(Some((worker, FromWorker::Finished { error }))) => {
                if let Some(w) = waiting.get_mut(worker) {
                    *w = false;
                }
                if let Some(e) = error {
                    eprintln!("warning: worker {worker}: final_work failed: {e}");
                }
            }
            Ok(Some((worker, FromWorker::Lost { .. }))) => {
                if let Some(w) = waiting.get_mut(worker) {
                    *w = false;
                }
            }
            // Answers to chunks of an iteration that failed midway, and `Ready`s the master
            // never took: dropped, never recovered.
            Ok(Some(_) | None) => {}
            Err(e) => {
                first_error.get_or_insert(e);
                break;
            }
        }
    }
    first_error.map_or(Ok(()), Err)
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
/// Tasks measured one at a time at the start of a run before the pool is sized (at least two
/// per worker taking part).
const PROBE_TASKS: usize = 8;

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
