//! The master's side of faults: tasks that fail are run again elsewhere, chunks that are late
//! are copied to an idle worker (the first answer wins), workers that go silent or are lost
//! have their chunks run by others, and workers whose tasks keep failing sit out a while.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Duration;

use super::{Engine, InFlight, RUNTIME, Round, entering};
use crate::app::{Master, TaskId};
use crate::clock::{self, Instant};
use crate::codec::Message;
use crate::config::{BACKUP_MARGIN, OnTaskFailure};
use crate::error::{Error, ErrorKind, Result};
use crate::metrics::Failure;
use crate::transport::{Failed, FromWorker, MasterLink, SentChunk};

/// How often the engine looks for late chunks and silent workers while it waits.
pub(super) const WATCH_EVERY: Duration = Duration::from_millis(50);

/// Chunks in a row with a failed task after which a worker sits out.
const STRIKES: u32 = 3;

/// What the engine knows of one worker's faults.
#[derive(Debug, Clone)]
pub(super) struct Standing {
    /// Gone for good: lost by the transport, silent too long, or unable to run tasks.
    pub lost: bool,
    /// Answers in a row with a failed task.
    strikes: u32,
    /// Times it sat out; each time twice as long.
    benched: u32,
    /// The iteration at which a worker sitting out takes part again.
    back_at: Option<usize>,
    /// When it last said something, or was given work while holding none: where the chunk it
    /// processes began, for the copies of late chunks.
    pub heard: Instant,
    /// The same moment on the master's listening clock ([`Engine::listened`]): its silence, for
    /// the liveness timeout, is the listening time since.
    heard_listening: Duration,
}

impl Standing {
    pub(super) fn new(now: Instant) -> Standing {
        Standing {
            lost: false,
            strikes: 0,
            benched: 0,
            back_at: None,
            heard: now,
            heard_listening: Duration::ZERO,
        }
    }

    /// It said something, or was given work while holding none, at `at`, when the master had
    /// listened for `listened`.
    pub(super) fn hear(&mut self, at: Instant, listened: Duration) {
        self.heard = at;
        self.heard_listening = listened;
    }

    /// It answered a chunk, `clean` if no task of it failed.
    pub(super) fn answered(&mut self, clean: bool) {
        self.strikes = if clean { 0 } else { self.strikes + 1 };
    }
}

/// A chunk out and not yet answered.
#[derive(Debug)]
pub(super) struct Open {
    pub len: usize,
    /// The chunk as sent, encoded: what a copy or a re-run is made from (under MPI, its send
    /// buffer), handed back to the link once answered or given up.
    pub sent: SentChunk,
    /// Workers holding it (two once copied).
    pub holders: u32,
    /// Whether a copy went out already (one is enough).
    pub copied: bool,
}

/// The chunks out, by first task. Keys are task numbers the engine made, not input, so a
/// multiplicative hash does (SipHash, the default, costs as much as the rest of a lookup).
pub(super) type OpenChunks = HashMap<usize, Open, BuildHasherDefault<FirstTaskHasher>>;

/// Fibonacci hashing of a task number: consecutive numbers spread over the high bits, which
/// the table's buckets and tags are taken from.
#[derive(Default)]
pub(super) struct FirstTaskHasher(u64);

impl Hasher for FirstTaskHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A message from a worker, with the worker's number, if one came.
pub(super) type Incoming<M> = Option<(
    usize,
    FromWorker<<M as Master>::Task, <M as Master>::Result>,
)>;

/// Tasks to run again: a failed task, or the chunk of a worker that was lost.
#[derive(Debug)]
pub(super) struct Retry<T> {
    pub first: usize,
    pub tasks: Vec<T>,
    /// The worker it failed on, to run it elsewhere when another worker takes part.
    pub avoid: Option<usize>,
}

impl<M, L> Engine<'_, M, L>
where
    M: Master,
    L: MasterLink<M::Task, M::Shared, M::Result>,
{
    /// Waits for the next message from a worker, [`WATCH_EVERY`] at most, and counts the wait
    /// on the listening clock ([`Engine::listened`]); also returns when the wait ended.
    ///
    /// A wait counts for as long as it lasted, up to the bound it was given: a wait that took
    /// longer was not listening all along (the master was stopped, by SIGSTOP, a debugger or a
    /// suspended machine, or the transport was held by something else, such as a receive
    /// matched by a dead peer's half-sent message), and counting its bound keeps the error to
    /// one bound per such event.
    pub(super) fn listen(&mut self) -> Result<(Incoming<M>, Instant)> {
        let from = clock::now();
        let message = self.link.recv_within(WATCH_EVERY)?;
        let at = clock::now();
        self.listened += at.saturating_duration_since(from).min(WATCH_EVERY);
        Ok((message, at))
    }

    /// `worker` said something at `at`.
    pub(super) fn heard(&mut self, worker: usize, at: Instant) {
        let listened = self.listened;
        if let Some(standing) = self.standing.get_mut(worker) {
            standing.hear(at, listened);
        }
    }

    /// Workers that sat out long enough take part again from iteration `index`.
    pub(super) fn welcome_back(&mut self, index: usize) {
        for (worker, standing) in self.standing.iter_mut().enumerate() {
            if !standing.lost && standing.back_at.is_some_and(|at| at <= index) {
                standing.back_at = None;
                standing.strikes = 0;
                self.healthy[worker] = true;
            }
        }
    }

    /// The tasks waiting to run again that `worker` should take: not those that failed on it
    /// while another worker takes part.
    pub(super) fn retry_for(
        &mut self,
        round: &mut Round<M>,
        worker: usize,
    ) -> Option<Retry<M::Task>> {
        if round.retry.is_empty() {
            return None;
        }
        let others =
            (0..round.active.len()).any(|w| w != worker && round.active[w] && self.healthy[w]);
        let at = round
            .retry
            .iter()
            .position(|r| r.avoid != Some(worker) || !others)?;
        round.retry.remove(at)
    }

    /// Tasks of `worker`'s chunk from `first` of `iteration` failed (`failed`: offsets and
    /// errors) after a copy of the chunk was answered, maybe after its iteration ended (a panic
    /// slowed by printing its backtrace, say): nothing runs again, but the failures happened
    /// and are reported.
    pub(super) fn failed_late(
        &mut self,
        iteration: usize,
        worker: usize,
        first: usize,
        failed: &[(u32, String)],
    ) {
        for (offset, why) in failed {
            self.metrics.failures.push(Failure {
                iteration,
                worker,
                first_task: first + *offset as usize,
                tasks: 1,
                message: why.clone(),
            });
        }
    }

    /// Tasks of `worker`'s chunk from `first` failed (`failed`: offsets and errors): each is
    /// run again elsewhere, or, past its retries, fails the run or is skipped. Returns the
    /// tasks settled (skipped).
    pub(super) fn task_failures(
        &mut self,
        round: &mut Round<M>,
        worker: usize,
        first: usize,
        open: &Open,
        failed: &[(u32, String)],
    ) -> Result<usize> {
        let mut tasks: Vec<Option<M::Task>> = decode_tasks::<M::Task>(&open.sent)?
            .into_iter()
            .map(Some)
            .collect();
        let retries = self.config.faults.task_retries as usize;
        let mut settled = 0;
        for (offset, why) in failed {
            let offset = *offset as usize;
            let task = first + offset;
            self.metrics.failures.push(Failure {
                iteration: round.index,
                worker,
                first_task: task,
                tasks: 1,
                message: why.clone(),
            });
            let attempts = round.attempts.entry(task).or_default();
            attempts.push(format!("worker {worker}: {why}"));
            let tried = attempts.len();
            if tried <= retries {
                eprintln!(
                    "warning: task {task} of iteration {} failed on worker {worker} (attempt \
                     {tried} of {}): {why}; running it again",
                    round.index,
                    retries + 1
                );
                let task_value = tasks.get_mut(offset).and_then(Option::take);
                round.retry.push_back(Retry {
                    first: task,
                    tasks: task_value.into_iter().collect(),
                    avoid: Some(worker),
                });
                continue;
            }
            let attempts = round.attempts.remove(&task).unwrap_or_default();
            match self.config.faults.on_task_failure {
                OnTaskFailure::Fail => {
                    return Err(ErrorKind::TaskFailed {
                        iteration: round.index,
                        task: round.id(task),
                        attempts,
                    }
                    .into());
                }
                OnTaskFailure::Skip => {
                    eprintln!(
                        "warning: task {task} of iteration {} failed {tried} times and is \
                         skipped (--on-task-failure skip)",
                        round.index
                    );
                    entering("task_failed");
                    self.master.task_failed(TaskId(round.id(task)), &attempts);
                    entering(RUNTIME);
                    if let Some(s) = round.settled.get_mut(task) {
                        *s = true;
                    }
                    settled += 1;
                }
            }
        }
        if self.standing[worker].strikes >= STRIKES {
            self.bench(round, worker)?;
        } else if !(0..round.active.len()).any(|w| w != worker && round.active[w]) {
            // Alone in the iteration: a worker that takes no part yet runs the failed tasks.
            let spare =
                (0..self.healthy.len()).find(|&w| round.parked(w, &self.healthy, &self.held));
            if let Some(spare) = spare {
                self.activate(round, spare)?;
                round.wait(spare);
            }
        }
        self.place_retries(round)?;
        Ok(settled)
    }

    /// `worker`'s tasks keep failing: it sits out the rest of this iteration and the next
    /// (twice as many each time it happens again), then comes back.
    fn bench(&mut self, round: &mut Round<M>, worker: usize) -> Result<()> {
        let standing = &mut self.standing[worker];
        let rounds = 1usize << standing.benched.min(10);
        standing.benched += 1;
        standing.strikes = 0;
        standing.back_at = Some(round.index + 1 + rounds);
        eprintln!(
            "warning: worker {worker} failed {STRIKES} chunks in a row; it sits out until \
             iteration {}",
            round.index + 1 + rounds
        );
        self.retire(round, worker)
    }

    /// The transport lost `worker`, or it was silent too long: it is never used again, and its
    /// chunks of this iteration that no copy covers run elsewhere.
    pub(super) fn lose(&mut self, round: &mut Round<M>, worker: usize, why: &str) -> Result<()> {
        if self.standing[worker].lost {
            return Ok(());
        }
        self.link.forsake(worker);
        self.standing[worker].lost = true;
        let held: VecDeque<InFlight> = std::mem::take(&mut self.held[worker]);
        eprintln!(
            "warning: worker {worker} is lost ({why}); its {} chunk(s) run elsewhere",
            held.len()
        );
        self.metrics.failures.push(Failure {
            iteration: round.index,
            worker,
            first_task: held.front().map_or(0, |f| f.first),
            tasks: held.iter().map(|f| f.len).sum(),
            message: format!("lost: {why}"),
        });
        for flight in held {
            if flight.iteration != round.index {
                continue;
            }
            let Some(open) = round.open.get_mut(&flight.first) else {
                continue;
            };
            if open.len != flight.len {
                continue;
            }
            open.holders = open.holders.saturating_sub(1);
            if open.holders == 0 {
                let tasks = decode_tasks::<M::Task>(&open.sent)?;
                if let Some(open) = round.open.remove(&flight.first) {
                    self.link.reclaim(open.sent);
                }
                round.retry.push_back(Retry {
                    first: flight.first,
                    tasks,
                    avoid: None,
                });
            }
        }
        if self.healthy[worker] {
            self.retire(round, worker)?;
        }
        self.place_retries(round)
    }

    /// `worker` takes no further part in this iteration; a worker that takes no part yet
    /// replaces it. With nobody left, workers sitting out come back at once.
    pub(super) fn retire(&mut self, round: &mut Round<M>, worker: usize) -> Result<()> {
        self.healthy[worker] = false;
        round.active[worker] = false;
        round.idle.retain(|&w| w != worker);
        if !self.healthy.contains(&true) {
            for (w, standing) in self.standing.iter_mut().enumerate() {
                if !standing.lost && standing.back_at.take().is_some() {
                    self.healthy[w] = true;
                }
            }
        }
        if !self.healthy.contains(&true) {
            let lost = self.standing.iter().filter(|s| s.lost).count();
            return Err(ErrorKind::NoWorkers {
                message: format!(
                    "every worker failed or was lost ({lost} lost) in iteration {}",
                    round.index
                ),
            }
            .into());
        }
        let spare = (0..self.healthy.len()).find(|&w| round.parked(w, &self.healthy, &self.held));
        if let Some(spare) = spare {
            self.activate(round, spare)?;
            if self.dispatch(round, spare, clock::now())? {
                self.prefetch(round, spare, clock::now())?;
            } else {
                round.wait(spare);
            }
        }
        Ok(())
    }

    /// Idle workers take the tasks waiting to run again; busy ones take them when they answer.
    pub(super) fn place_retries(&mut self, round: &mut Round<M>) -> Result<()> {
        let mut at = 0;
        while !round.retry.is_empty() && at < round.idle.len() {
            let worker = round.idle[at];
            if self.dispatch(round, worker, clock::now())? {
                round.idle.swap_remove(at);
            } else {
                at += 1;
            }
        }
        Ok(())
    }

    /// Looks for workers silent past the liveness timeout (lost), and for chunks out much
    /// longer than expected, which are copied to an idle worker.
    ///
    /// Silence is measured on the listening clock ([`Engine::listened`]), not the wall clock: a
    /// worker is silent when the master listened for the timeout and heard nothing from it.
    /// Time the master spends elsewhere (its own hooks, a checkpoint, a send held by a stopped
    /// peer, being stopped itself) cannot make a worker silent: what the worker sent meanwhile
    /// waits in the link and is heard as soon as the master listens again.
    pub(super) fn watch(&mut self, round: &mut Round<M>, now: Instant) -> Result<()> {
        round.next_watch = now + WATCH_EVERY;
        let liveness = self.config.faults.liveness;
        for worker in 0..self.held.len() {
            let silent = self
                .listened
                .saturating_sub(self.standing[worker].heard_listening);
            if !self.standing[worker].lost && !self.held[worker].is_empty() && silent > liveness {
                let why = format!(
                    "silent for {:.1} s of listening while holding a chunk (--liveness-timeout)",
                    silent.as_secs_f64()
                );
                self.lose(round, worker, &why)?;
            }
        }
        let after = self.config.faults.backup_after;
        let mean_ms = self.stats.pooled().mean();
        if after <= 0.0 || round.idle.is_empty() || mean_ms.is_nan() || mean_ms <= 0.0 {
            return Ok(());
        }
        for worker in 0..self.held.len() {
            let Some(front) = self.held[worker].front() else {
                continue;
            };
            let (first, len) = (front.first, front.len);
            // A chunk sent ahead starts when the one before it is answered.
            let began = front.sent.max(self.standing[worker].heard);
            let due = Duration::from_secs_f64(mean_ms * len as f64 * after / 1e3) + BACKUP_MARGIN;
            let late = front.iteration == round.index
                && now.saturating_duration_since(began) > due
                && round
                    .open
                    .get(&first)
                    .is_some_and(|o| o.len == len && !o.copied);
            if !late || !round.idle.iter().any(|&w| w != worker) {
                continue;
            }
            // The chunk it is stuck on goes to an idle worker now; those it holds behind it
            // would wait as long, so they run elsewhere too, as the next to be handed out.
            let held: Vec<(usize, usize)> = self.held[worker]
                .iter()
                .filter(|f| f.iteration == round.index)
                .map(|f| (f.first, f.len))
                .collect();
            for (n, (first, len)) in held.into_iter().enumerate() {
                let Some(open) = round.open.get_mut(&first).filter(|o| o.len == len) else {
                    continue;
                };
                if open.copied {
                    continue;
                }
                open.copied = true;
                let tasks = decode_tasks::<M::Task>(&open.sent)?;
                round.backups += 1;
                round.retry.insert(
                    n,
                    Retry {
                        first,
                        tasks,
                        avoid: Some(worker),
                    },
                );
            }
            self.place_retries(round)?;
        }
        Ok(())
    }

    /// At the end of a run that completed: waits for the workers still busy with chunks whose
    /// copies were answered, as long as such a chunk may take before it counts as late (under
    /// MPI without recovery, as long as a worker may be silent: a rank left behind there takes
    /// the job with it); then leaves them behind.
    pub(super) fn wait_for_late(&mut self) -> Result<()> {
        let faults = &self.config.faults;
        let longest = self.held.iter().flatten().map(|f| f.len).max().unwrap_or(0);
        let mean_ms = self.stats.pooled().mean();
        let late = Duration::from_secs_f64(
            (mean_ms * longest as f64 * faults.backup_after.max(1.0) / 1e3).max(0.0),
        ) + BACKUP_MARGIN;
        let patience = if self.link.can_leave_behind() {
            late
        } else {
            faults.liveness
        };
        let deadline = clock::now() + patience.clamp(WATCH_EVERY, faults.liveness);
        loop {
            let busy: Vec<usize> = (0..self.held.len())
                .filter(|&w| !self.standing[w].lost && !self.held[w].is_empty())
                .collect();
            if busy.is_empty() {
                return Ok(());
            }
            let left = deadline.saturating_duration_since(clock::now());
            if left.is_zero() {
                for worker in busy {
                    let message = "still busy with a chunk that another worker answered, at \
                                   the end of the run: left behind";
                    eprintln!("warning: worker {worker} is {message}");
                    self.metrics.failures.push(Failure {
                        iteration: self.held[worker].front().map_or(0, |f| f.iteration),
                        worker,
                        first_task: self.held[worker].front().map_or(0, |f| f.first),
                        tasks: self.held[worker].iter().map(|f| f.len).sum(),
                        message: message.to_owned(),
                    });
                    self.link.forsake(worker);
                    self.standing[worker].lost = true;
                }
                return Ok(());
            }
            match self.link.recv_within(left.min(WATCH_EVERY))? {
                Some((worker, FromWorker::Done(done))) => {
                    if let Some(flight) = self.held[worker].pop_front() {
                        self.failed_late(flight.iteration, worker, flight.first, &done.failed);
                    }
                }
                Some((worker, FromWorker::Failed(_))) => {
                    self.held[worker].pop_front();
                }
                Some((worker, FromWorker::Lost { .. })) => {
                    self.standing[worker].lost = true;
                    self.held[worker].clear();
                }
                Some(_) | None => {}
            }
        }
    }

    /// `worker` could not process a chunk at all (it could not be built): retire it, and run
    /// the chunk, and any it held behind it, on other workers.
    pub(super) fn reassign(
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
}

/// The tasks of a chunk, from the copy the master kept.
fn decode_tasks<T: Message>(sent: &SentChunk) -> Result<Vec<T>> {
    sent.tasks().map_err(|e| {
        Error::backend(format!(
            "the master's own copy of a chunk does not decode ({e}); please report this"
        ))
    })
}
