//! The hooks an application fills in: the papers' `_M_*` and `_W_*` functions.

use std::fmt;

use crate::codec::Message;
use crate::policy::{Policy, PolicyChoice};
use crate::protocol::Protocol;
use crate::tuning::Tunlet;
use crate::tuning::tunables::TunablesHandle;

/// The master's hooks: cut each iteration's work into tasks and put the results together.
///
/// The runtime calls [`partition`](Master::partition) at the start of every iteration, hands the
/// tasks out to the workers in chunks (the policy decides their sizes), calls
/// [`recover`](Master::recover) once per task with its result, then
/// [`end_iteration`](Master::end_iteration). An iteration with no tasks ends the run.
///
/// Tasks need not be known when the iteration starts: [`more_tasks`](Master::more_tasks)
/// streams them in while it runs (a sweep too large to hold, or tasks made from results, as in
/// adaptive refinement or branch and bound).
pub trait Master {
    /// One unit of work, sent to a worker inside a chunk.
    type Task: Message + Send + 'static;
    /// What a worker returns for one task.
    type Result: Message + Send + 'static;
    /// Data every participating worker receives once per iteration (`()` for none).
    type Shared: Message + Send + Sync + 'static;

    /// Called once before the first iteration (`_M_Initialize`).
    ///
    /// # Errors
    /// An error ends the run before any work is sent.
    fn initialize(&mut self, setup: &mut Setup) -> crate::Result<()> {
        let _ = setup;
        Ok(())
    }

    /// This iteration's shared data and tasks (`_M_Partition`). An iteration with no tasks, from
    /// here or from [`more_tasks`](Master::more_tasks), ends the run.
    fn partition(&mut self, iteration: &Iteration) -> Work<Self::Shared, Self::Task>;

    /// More tasks for the iteration under way, at most `room` of them: called when the
    /// iteration starts and whenever the tasks not yet handed out fall below the stream's
    /// window ([`Setup::stream_ahead`]), so that memory holds the window and the tasks at the
    /// workers, never the whole stream. Return none when there are none *now*: tasks made from
    /// results can come later, since the hook is asked again after every answer. The iteration
    /// ends when every task was answered and this returns none.
    ///
    /// Streamed tasks are numbered after those of `partition`, in the order they are returned:
    /// the first one returned here in an iteration whose `partition` gave 10 tasks is
    /// `TaskId(10)`. More than `room` tasks are accepted, at the cost of memory.
    fn more_tasks(&mut self, iteration: &Iteration, room: usize) -> Vec<Self::Task> {
        let _ = (iteration, room);
        Vec::new()
    }

    /// The result of task `task` of the current iteration (`_M_Recover`); called exactly once per
    /// task, in the order results arrive.
    fn recover(&mut self, task: TaskId, result: Self::Result);

    /// Task `task` failed on every attempt (`errors`, one per attempt) and the run was told to
    /// go on (`--on-task-failure skip`): it has no result and `recover` is not called for it.
    /// Without `skip` the run ends with [`ErrorKind::TaskFailed`](crate::ErrorKind::TaskFailed)
    /// instead and this is not called.
    fn task_failed(&mut self, task: TaskId, errors: &[String]) {
        let _ = (task, errors);
    }

    /// Called after every task of the iteration was recovered (or, skipped, reported to
    /// [`task_failed`](Master::task_failed)); [`Flow::Stop`] ends the run.
    fn end_iteration(&mut self, iteration: &Iteration) -> Flow {
        let _ = iteration;
        Flow::Continue
    }

    /// Called once after the last iteration (`_M_FinalWork`).
    ///
    /// # Errors
    /// An error is the run's result.
    fn final_work(&mut self) -> crate::Result<()> {
        Ok(())
    }

    /// The master's state between two iterations, or inside a long one (every
    /// `--checkpoint-every` seconds, with the results recovered so far), for `--checkpoint`: what
    /// [`restore`](Master::restore) needs for a run started with `--resume` to go on as this
    /// one would have. Encode it with [`codec::encode`](crate::codec::encode) (any
    /// [`Message`]). `None`, the default: this master cannot be checkpointed, and
    /// `--checkpoint` is refused before any work.
    fn checkpoint(&self) -> Option<Vec<u8>> {
        None
    }

    /// Puts back the state [`checkpoint`](Master::checkpoint) saved, after `initialize` and
    /// before the first iteration of a run started with `--resume`; the run then goes on from
    /// the iteration after the one saved.
    ///
    /// # Errors
    /// State this master cannot take (decode it with [`codec::decode`](crate::codec::decode),
    /// whose error says what was wrong); the run ends before any work. The default refuses.
    fn restore(&mut self, saved: &[u8]) -> crate::Result<()> {
        let _ = saved;
        Err(crate::Error::config(
            "error: this program's master has no `restore` hook, so it cannot `--resume`",
            "give the master `checkpoint` and `restore` hooks, or run without `--resume`",
        ))
    }
}

/// The worker's hooks: process tasks.
///
/// Under MPI every rank but 0 builds one worker; the local backend builds one per thread.
pub trait Worker {
    /// Must equal the master's `Task`.
    type Task: Message + Send + 'static;
    /// Must equal the master's `Result`.
    type Result: Message + Send + 'static;
    /// Must equal the master's `Shared`.
    type Shared: Message + Send + Sync + 'static;

    /// Called once before the first task (`_W_Initialize`).
    ///
    /// # Errors
    /// A worker whose initialization fails takes no part in the run; the failure is reported.
    fn initialize(&mut self, setup: &WorkerSetup) -> crate::Result<()> {
        let _ = setup;
        Ok(())
    }

    /// Processes one task (`_W_DoWork`). The task is borrowed so that, should this panic, the
    /// runtime still holds it and re-runs it elsewhere (see [`try_work`](Worker::try_work)).
    fn do_work(&mut self, shared: &Self::Shared, task: &Self::Task) -> Self::Result;

    /// Processes one task that may fail: what the runtime calls. By default
    /// [`do_work`](Worker::do_work), which cannot. A worker whose tasks can fail implements this and
    /// makes `do_work` call it (the `#[mw::worker]` macro does both for a `do_work` that
    /// returns a `Result`).
    ///
    /// A task that fails, by an error here or a panic, is run again, on another worker when
    /// there is one, up to `--task-retries` times; then the run fails naming the task and
    /// every attempt's error, or with `--on-task-failure skip` the master is told
    /// ([`Master::task_failed`]) and the run goes on. After a panic the worker is built afresh
    /// (constructor and `initialize`), since its state may be half-updated; a worker whose
    /// tasks keep failing sits out for a while.
    ///
    /// # Errors
    /// Whatever made the task fail, said in a way that helps whoever reads the run's error.
    fn try_work(
        &mut self,
        shared: &Self::Shared,
        task: &Self::Task,
    ) -> std::result::Result<Self::Result, TaskError> {
        Ok(self.do_work(shared, task))
    }

    /// Called once after the last task (`_W_FinalWork`).
    ///
    /// # Errors
    /// Reported by the master; the run's other results are kept.
    fn final_work(&mut self) -> crate::Result<()> {
        Ok(())
    }
}

/// Why a task failed, as [`Worker::try_work`] returns it: any error, or a message
/// (`"bad input".into()`).
pub type TaskError = Box<dyn std::error::Error + Send + Sync>;

/// What [`Master::partition`] returns: the shared part of an iteration and its tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct Work<S, T> {
    /// Sent once to every worker taking part in the iteration.
    pub shared: S,
    /// Cut into chunks by the policy; task `i` comes back to `recover` as `TaskId(i)`.
    pub tasks: Vec<T>,
}

impl<S, T> Work<S, T> {
    /// Shared data plus tasks.
    pub fn new(shared: S, tasks: Vec<T>) -> Self {
        Work { shared, tasks }
    }

    /// No more work: the run ends after this.
    pub fn done() -> Self
    where
        S: Default,
    {
        Work {
            shared: S::default(),
            tasks: Vec::new(),
        }
    }
}

impl<T> Work<(), T> {
    /// Tasks with no shared part.
    pub fn tasks(tasks: Vec<T>) -> Self {
        Work { shared: (), tasks }
    }
}

/// Whether to run another iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flow {
    /// Call `partition` again.
    #[default]
    Continue,
    /// End the run: workers and master run `final_work`.
    Stop,
}

/// Identifies a task within its iteration: its index in the `Vec` that `partition` returned,
/// then on through the tasks of [`Master::more_tasks`] in the order they were returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub usize);

impl TaskId {
    /// The task's index in the iteration's task list.
    pub fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The iteration the master is in, with the tunables in force for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Iteration {
    /// 0 for the first iteration.
    pub index: usize,
    /// Workers taking part (`nworkers`).
    pub workers: usize,
    /// The distribution factor.
    pub factor: f64,
    /// The distribution policy running: a built-in one (named by `--policy` or chosen by
    /// `auto`) or one the program registered ([`Setup::register_policy`]), by its name; the
    /// configured name still when the program brought its own ([`Setup::policy`]).
    pub policy: PolicyChoice,
}

/// What the master can see and control before the first iteration.
#[derive(Debug)]
pub struct Setup {
    pub(crate) pool: usize,
    pub(crate) backend: &'static str,
    pub(crate) protocol: Protocol,
    pub(crate) tunables: TunablesHandle,
    /// Iterations the master expects to run, for the progress line.
    pub(crate) iterations: Option<usize>,
    /// Tasks the master expects the whole run to have, for the progress line.
    pub(crate) tasks: Option<usize>,
    /// Tasks streamed ahead of the workers ([`Master::more_tasks`]).
    pub(crate) stream_ahead: usize,
    /// The program's own distribution policy, if it brought one.
    pub(crate) policy: Option<Box<dyn Policy>>,
    /// The policies the program registered by name.
    pub(crate) registry: crate::policy::Registry,
    /// The program's own tunlets.
    pub(crate) tunlets: Vec<Box<dyn Tunlet>>,
    /// The program's arguments the master's state comes from ([`Setup::state_depends_on`]).
    pub(crate) arguments: Vec<(String, String)>,
}

impl Setup {
    /// Number of workers started (the most that can take part).
    pub fn pool(&self) -> usize {
        self.pool
    }

    /// `"local"` or `"mpi"`.
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    /// The message protocol in use.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// A handle to change `nworkers`, `factor` or `policy` from the application; changes take
    /// effect at the next iteration boundary and are logged as decisions.
    pub fn tunables(&self) -> TunablesHandle {
        self.tunables.clone()
    }

    /// Says how many iterations the run will have, when the master knows (a number of time
    /// steps, say): the progress line then counts iterations and estimates the time left.
    /// Only a hint: the run still ends when `partition` returns no tasks.
    pub fn expect_iterations(&mut self, iterations: usize) {
        self.iterations = Some(iterations);
    }

    /// Says that the master's state comes from the program's argument `name` given `value`
    /// (N-Body's `--bodies` and `--seed`): a checkpoint (`--checkpoint`) keeps it, and a run
    /// that `--resume`s from that checkpoint with another value, or without the argument, is
    /// refused before any work, naming both values. Said again for the same name, the last
    /// value counts.
    ///
    /// Likewise a run that expects fewer iterations ([`expect_iterations`](Setup::expect_iterations))
    /// than the checkpoint has done already is refused: it would end before it resumed.
    pub fn state_depends_on(&mut self, name: &str, value: impl fmt::Display) {
        let value = value.to_string();
        match self.arguments.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = value,
            None => self.arguments.push((name.to_owned(), value)),
        }
    }

    /// Says how many tasks the whole run will have, when the master knows but they come in
    /// one bag (streamed by [`Master::more_tasks`], say): the progress line then counts tasks
    /// against it and estimates the time left from the rate so far. Only a hint, like
    /// [`Setup::expect_iterations`], which takes precedence.
    pub fn expect_tasks(&mut self, tasks: usize) {
        self.tasks = Some(tasks);
    }

    /// How many tasks [`Master::more_tasks`] is asked to keep ready ahead of the workers (at
    /// least 1; by default 64 per worker of the pool). The policy cuts chunks from this window
    /// as it would from an iteration's remaining tasks, so the window bounds chunk sizes too:
    /// raise it for tasks of microseconds, whose chunks must be large to pay for a message.
    pub fn stream_ahead(&mut self, tasks: usize) {
        self.stream_ahead = tasks.max(1);
    }

    /// Cuts every iteration's tasks with a policy of the program's own instead of the one
    /// named by `--policy` (see [`crate::policy`] for the trait and an example). It is kept for
    /// the whole run: the tuner may still change `factor` and `nworkers`, which it is told in
    /// each [`Plan`](crate::policy::Plan), but not the policy, and the metrics record its
    /// [`name`](Policy::name). A chunk it sizes at 0 tasks, or at more than remain, ends the
    /// run with an error naming it.
    pub fn policy(&mut self, policy: Box<dyn Policy>) {
        self.policy = Some(policy);
    }

    /// Registers a policy of the program's own under `name`, so that `--policy NAME` or
    /// `[run] policy = "NAME"` selects it as they select a built-in one. `factory` builds a
    /// fresh policy for the run (and the tuner's simulations get fresh ones too). An unknown
    /// `--policy` name ends the run with an error listing every built-in and registered name.
    ///
    /// ```no_run
    /// # use mw_runtime::policy::{Ask, Plan, Policy};
    /// # #[derive(Debug)] struct Eights;
    /// # impl Policy for Eights {
    /// #     fn name(&self) -> &str { "eights" }
    /// #     fn begin(&mut self, _plan: &Plan<'_>) {}
    /// #     fn next_chunk(&mut self, ask: &Ask<'_>) -> usize { ask.remaining.min(8) }
    /// # }
    /// # fn initialize(setup: &mut mw_runtime::Setup) -> mw_runtime::Result<()> {
    /// setup.register_policy("eights", || Box::new(Eights))?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// A configuration error when `name` is a built-in policy's (`ss`, `daf`, …), is already
    /// registered, or has characters other than letters, digits, `-` and `_`.
    pub fn register_policy(
        &mut self,
        name: &str,
        factory: impl Fn() -> Box<dyn Policy> + Send + Sync + 'static,
    ) -> crate::Result<()> {
        self.registry.register(name, std::sync::Arc::new(factory))
    }

    /// Tunes a tunable the program declared ([`TunablesHandle::declare`]) with a tunlet of its
    /// own, asked after the runtime's at every look (see [`Tunlet`] for an example). It is
    /// asked unless `--tuning off` or `--tuning workers`, and its proposals go through the
    /// same decision rules as the runtime's.
    pub fn tunlet(&mut self, tunlet: Box<dyn Tunlet>) {
        self.tunlets.push(tunlet);
    }
}

/// What a worker knows about itself when it starts.
#[derive(Debug, Clone)]
pub struct WorkerSetup {
    pub(crate) index: usize,
    pub(crate) pool: usize,
    pub(crate) backend: &'static str,
}

impl WorkerSetup {
    /// This worker's number, `0..pool` (MPI rank minus one).
    pub fn index(&self) -> usize {
        self.index
    }

    /// Number of workers started.
    pub fn pool(&self) -> usize {
        self.pool
    }

    /// `"local"` or `"mpi"`.
    pub fn backend(&self) -> &'static str {
        self.backend
    }
}
