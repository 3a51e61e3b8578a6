//! The master's end (rank 0): sends that go on in the background under `async`, answers from
//! any worker, and the workers found dead or given up on.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpi::Tag;
use mpi::topology::{Communicator, Rank, SimpleCommunicator};

use super::backoff::{Backoff, CHECK_EVERY};
use super::framing::{
    Body, Comms, EAGER, Endpoint, Head, Heard, INLINE, Outgoing, Rest, post_message, receive_head,
    receive_rest,
};
use super::kill;
use super::layout::Place;
use super::library;
use super::lifeline::Lifelines;
use super::messages::decode;
use super::posted::Posted;
use super::spawn::{Spawner, Taken};
use super::ulfm;
use super::{
    CHUNK, DONE, FAILED, FATAL, FINISHED, KILL, KILL_AFTER_MASTER, KILL_NOW, LEAVE_UNFINALIZED,
    LOST, READY, SHARED, STOP,
};
use crate::codec::{self, Message, Reader};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::protocol::Protocol;
use crate::transport::{Chunk, Done, FromWorker, MasterLink, SentBuffers, SentChunk, ToWorker};

/// Send buffers the master keeps for reuse, at most.
const SPARE: usize = 64;
/// Capacity of a chunk's task vector kept for the next chunk, at most (a large one is freed).
const SPARE_TASKS: usize = 4096;
/// Capacity of an answer's results vector kept for the next answer, at most: results decoded
/// into it go one by one, so a large vector is better decoded afresh (in one copy for numbers).
const SPARE_RESULTS: usize = 64;
/// Sends in progress past which the master tests every one of them, not only the oldest.
const TEST_ALL: usize = 64;
/// How long a synchronous send holds the master, at most.
const SETTLE_WAIT: Duration = Duration::from_secs(1);
/// Tests the steady path makes for an answer before it leaves the wait to the general path:
/// a few microseconds, about an empty task's round trip on a node.
const STEADY_TESTS: u32 = 64;

/// What the master knows of workers that are gone.
struct Gone {
    /// By worker: lost or forsaken; nothing goes to it or is taken from it any more.
    gone: Vec<bool>,
    /// Lost workers not yet reported, with what was seen.
    unreported: VecDeque<(usize, String)>,
    lifelines: Option<Lifelines>,
    /// By worker: it said `Finished`, so its process may end from now on without being lost.
    finished: Vec<bool>,
    /// A worker's process died or was ended: no rank may call `MPI_Finalize`.
    lost: bool,
}

impl Gone {
    /// Looks at the lifelines: every worker found dead is given up (its sends abandoned) and
    /// queued to be reported. A worker with a message still waiting is reported after it.
    fn look(&mut self, comms: &Comms, posted: &mut VecDeque<Posted>, spawner: &mut Spawner) {
        // Under ULFM, MPI names the ranks that failed.
        for rank in ulfm::failed(&comms.inline) {
            self.failed(rank, posted);
        }
        let Some(lifelines) = &mut self.lifelines else {
            return;
        };
        let waiting = |worker: usize| {
            if spawner.is_slot(worker) {
                return spawner.waiting_from(worker);
            }
            let rank = Rank::try_from(worker + 1).unwrap_or(Rank::MAX);
            mpi::point_to_point::Source::immediate_probe(&comms.inline.process_at_rank(rank))
                .is_some()
        };
        for (worker, why) in lifelines.look(waiting) {
            if !self.gone[worker] {
                self.give_up(worker, posted);
                spawner.lose(worker);
                self.lost = true;
                self.unreported.push_back((worker, why));
            }
        }
    }

    /// MPI reported that launched `rank` failed (ULFM): its worker (rank - 1) is given up and
    /// to be reported lost, unless it finished or is gone already.
    fn failed(&mut self, rank: Rank, posted: &mut VecDeque<Posted>) {
        let worker = usize::try_from(rank).unwrap_or(0).wrapping_sub(1);
        if self.gone.get(worker) == Some(&false) && self.finished.get(worker) == Some(&false) {
            self.give_up(worker, posted);
            self.lost = true;
            let why = "its process failed (MPI reported it, ULFM)".to_owned();
            self.unreported.push_back((worker, why));
        }
    }

    /// Nothing more goes to `worker` or is waited for from it: sends in progress are abandoned.
    fn give_up(&mut self, worker: usize, posted: &mut VecDeque<Posted>) {
        self.gone[worker] = true;
        if let Some(lifelines) = &mut self.lifelines {
            lifelines.release(worker);
        }
        let rank = worker as Rank + 1;
        let (to_it, others): (VecDeque<_>, VecDeque<_>) =
            posted.drain(..).partition(|p| p.rank() == rank);
        *posted = others;
        to_it.into_iter().for_each(Posted::abandon);
    }
}

/// The master's end (rank 0).
pub(super) struct MpiMaster<T, S, R> {
    end: Endpoint,
    pub(super) protocol: Protocol,
    /// Sends in progress, oldest first.
    posted: VecDeque<Posted>,
    /// Buffers of sent messages, kept to encode the next ones into.
    spare: Vec<Vec<u8>>,
    /// Buffers of answered chunks: a chunk is encoded once, and its send buffer is the copy
    /// the engine keeps while it is out.
    sent: SentBuffers,
    /// The shared part is encoded once per iteration, not once per worker: the iteration index
    /// (a varint), then the part.
    shared: Option<(Arc<S>, Arc<Vec<u8>>)>,
    /// The task vector of the last chunk, emptied once encoded, for the next chunk.
    spare_tasks: Vec<T>,
    /// The results vector of the last answer, emptied once recovered, for the next answer.
    spare_results: Vec<R>,
    /// The workers' nodes, as the ranks told them.
    layout: Option<Layout>,
    /// Where each worker's process runs, and the master's node.
    pub(super) places: Vec<Place>,
    node: String,
    gone: Gone,
    /// The workers beyond the launched ranks, spawned as needed.
    pub(super) spawner: Spawner,
    /// A message the steady path received but leaves to the general path (anything but a
    /// short answer): the next one [`next`](Self::next) returns.
    early: Option<Head>,
    /// How long a part of a long message may take to come (beyond its time at a slow
    /// network's pace) before its sender is given up as stopped in the middle of it: the
    /// liveness timeout.
    patience: Duration,
}

impl<T, S, R> MpiMaster<T, S, R> {
    pub(super) fn new(
        world: SimpleCommunicator,
        protocol: Protocol,
        layout: Option<(Layout, Vec<Place>)>,
        lifelines: Option<Lifelines>,
        spawner: Spawner,
        patience: Duration,
    ) -> Self {
        let pool = world.size() as usize - 1 + spawner.slots();
        let (layout, places) = layout.map_or((None, Vec::new()), |(l, p)| (Some(l), p));
        MpiMaster {
            layout,
            places,
            node: mpi::environment::processor_name().unwrap_or_default(),
            end: Endpoint::new(world),
            protocol,
            posted: VecDeque::new(),
            spare: Vec::new(),
            sent: SentBuffers::default(),
            shared: None,
            spare_tasks: Vec::new(),
            spare_results: Vec::new(),
            gone: Gone {
                gone: vec![false; pool],
                unreported: VecDeque::new(),
                lifelines,
                finished: vec![false; pool],
                lost: false,
            },
            spawner,
            early: None,
            patience,
        }
    }

    /// Sends one message: under the sync protocol, returns once the worker has it (or is found
    /// dead); else posts it and returns at once. `Stop` is always posted: after a failed
    /// iteration a worker may still be handing back an answer, under sync waiting for the master
    /// to take it, which the master does only once its `Stop`s are out. `Kill` too: the worker
    /// asked to end another may be busy with a chunk.
    fn post(&mut self, worker: usize, tag: Tag, bytes: Outgoing) {
        let synchronous = self.protocol == Protocol::Sync && tag != STOP && tag != KILL;
        // Only a long message has a header: taking a spare buffer for a short one would free
        // it, and the next chunk would allocate afresh.
        let header = if bytes.bytes().len() > INLINE {
            self.spare.pop().unwrap_or_default()
        } else {
            Vec::new()
        };
        if let Some(spawned) = self.spawner.spawned(worker) {
            let queue = &mut spawned.posted;
            let sent = post_message(&spawned.comms, 1, tag, bytes, synchronous, header, queue);
            if let Some(bytes) = sent {
                self.recycle(bytes);
            }
            if synchronous {
                self.settle(worker);
            }
            return;
        }
        let rank = worker as Rank + 1;
        let comms = &self.end.comms;
        let sent = post_message(
            comms,
            rank,
            tag,
            bytes,
            synchronous,
            header,
            &mut self.posted,
        );
        if let Some(bytes) = sent {
            self.recycle(bytes);
        }
        if synchronous {
            self.settle(worker);
        }
    }

    /// Waits until every send is complete, or `worker`, which they go to, is found dead, or
    /// [`SETTLE_WAIT`] has passed: a worker that stopped (SIGSTOP, a hang between messages)
    /// keeps its lifeline, so only the engine's liveness timeout gives it up, and the master
    /// must be back in the engine for that. A send not complete then goes on in the background.
    fn settle(&mut self, worker: usize) {
        let mut backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(1));
        let mut tests = 0u32;
        let mut since: Option<Instant> = None;
        while !self.sent(worker) {
            backoff.wait();
            tests = tests.wrapping_add(1);
            if tests % CHECK_EVERY == 0 || backoff.sleeping() {
                let spawner = &mut self.spawner;
                self.gone.look(&self.end.comms, &mut self.posted, spawner);
                let now = Instant::now();
                if self.gone.gone[worker] || now - *since.get_or_insert(now) > SETTLE_WAIT {
                    break;
                }
            }
        }
        self.reap();
    }

    /// Whether every send to `worker` is complete (to a launched rank: every send).
    fn sent(&mut self, worker: usize) -> bool {
        match self.spawner.spawned(worker) {
            Some(spawned) => spawned.posted.iter_mut().all(Posted::test),
            None => self.posted.iter_mut().all(Posted::test),
        }
    }

    /// Keeps a sent message's buffer for the next one, unless it is large (a fresh allocation
    /// costs little next to copying a large message) or enough are kept already.
    #[inline]
    fn recycle(&mut self, bytes: Outgoing) {
        if let Outgoing::Own(mut bytes) = bytes {
            if bytes.capacity() <= INLINE && self.spare.len() < SPARE {
                bytes.clear();
                self.spare.push(bytes);
            }
        }
    }

    /// Takes back the buffers of finished sends: the oldest ones, up to the first still in
    /// progress (small sends finish at once; one ahead to a busy worker may wait for it), and
    /// all of them once many are in progress.
    #[inline]
    fn reap(&mut self) {
        // Usually so: short sends complete as they are posted, and nothing is spawned.
        if self.posted.is_empty() && !self.spawner.elastic() {
            return;
        }
        self.reap_posted();
    }

    /// [`reap`](Self::reap) when there may be something to take back.
    fn reap_posted(&mut self) {
        // Without slots (decided at the start of the run) there is nothing spawned to look at.
        if self.spawner.elastic() {
            for bytes in self.spawner.reap() {
                self.recycle(bytes);
            }
        }
        while self.posted.front_mut().is_some_and(Posted::test) {
            if let Some(done) = self.posted.pop_front() {
                let bytes = done.finish();
                self.recycle(bytes);
            }
        }
        if self.posted.len() > TEST_ALL {
            self.reap_all();
        }
    }

    /// Takes back the buffers of every finished send, wherever it stands in the queue.
    fn reap_all(&mut self) {
        let (mut done, mut running) = (Vec::new(), VecDeque::new());
        for mut posted in self.posted.drain(..) {
            if posted.test() {
                done.push(posted);
            } else {
                running.push_back(posted);
            }
        }
        self.posted = running;
        for done in done {
            let bytes = done.finish();
            self.recycle(bytes);
        }
    }

    /// The next message, or a worker lost, from a worker not given up on; `None` once
    /// `timeout` has passed. The clock is first read when the wait is first checked: an answer
    /// that is already there (the usual case) costs no clock read, and the timeout counts from
    /// at most [`CHECK_EVERY`] tests later.
    fn next(&mut self, timeout: Option<Duration>) -> Result<Option<(usize, Tag, Body)>> {
        let mut deadline: Option<Instant> = None;
        self.reap();
        loop {
            // Received before any loss still unreported was seen (the steady path leaves it
            // when one is): it goes first, as it would have.
            let early = self.early.take();
            if early.is_none() {
                if let Some((worker, why)) = self.gone.unreported.pop_front() {
                    return Ok(Some((worker, LOST, Body::Bulk(why.into_bytes()))));
                }
            }
            if early.is_none() && self.spawner.elastic() {
                if let Some((worker, tag)) = self.spawner.owed.pop_front() {
                    // A slot is ready, or finished, without a process: nothing to decode.
                    let mut none = Vec::new();
                    None::<String>.encode(&mut none);
                    return Ok(Some((worker, tag, Body::Bulk(none))));
                }
                let lifelines = &self.gone.lifelines;
                let taken = self.spawner.take(&mut self.end.inbox, |worker| {
                    lifelines.as_ref().is_some_and(|l| l.ended(worker))
                })?;
                self.released();
                match taken {
                    Some(Taken::Pass(worker, tag, body)) if !self.gone.gone[worker] => {
                        return Ok(Some((worker, tag, body)));
                    }
                    Some(_) => continue,
                    None => {}
                }
            }
            let mut backoff = Backoff::new(Duration::from_micros(200), Duration::from_millis(1));
            let mut tests = 0u32;
            let (comms, gone, posted) = (&self.end.comms, &mut self.gone, &mut self.posted);
            let spawner = &mut self.spawner;
            let mut spawned_waiting = false;
            let mut keep_waiting = |body_from: Option<Rank>| {
                backoff.wait();
                tests = tests.wrapping_add(1);
                if tests % CHECK_EVERY != 0 && !backoff.sleeping() {
                    return true;
                }
                gone.look(comms, posted, spawner);
                match body_from {
                    // The rest of a long message: only its sender's death ends the wait.
                    Some(rank) => !gone.gone[rank as usize - 1],
                    None => {
                        spawned_waiting = spawner.elastic() && spawner.waiting();
                        gone.unreported.is_empty()
                            && !spawned_waiting
                            && timeout.is_none_or(|timeout| {
                                let now = Instant::now();
                                now < *deadline.get_or_insert(now + timeout)
                            })
                    }
                }
            };
            let inbox = &mut self.end.inbox;
            let heard = match early {
                Some(head) => Heard::Head(head),
                None => receive_head(comms, inbox, None, || keep_waiting(None))?,
            };
            let received = match heard {
                Heard::Head(head) => {
                    receive_rest(comms, inbox, head, Some(self.patience), keep_waiting)?
                }
                Heard::Lost(rank) => {
                    // Before anything else is taken: a later message of the rank is out of
                    // order (one of a chunk after the one whose answer was lost).
                    self.gone.failed(rank, &mut self.posted);
                    continue;
                }
                Heard::Nothing => Rest::GaveUp,
            };
            if let Rest::Stalled { rank, waited } = received {
                self.stalled(rank as usize - 1, waited);
                continue;
            }
            let Rest::Whole((rank, tag, body)) = received else {
                // A failure MPI reported (ULFM) ended the receive: report it now.
                self.gone
                    .look(&self.end.comms, &mut self.posted, &mut self.spawner);
                if self.gone.unreported.is_empty() && !spawned_waiting {
                    return Ok(None);
                }
                continue;
            };
            let worker = rank as usize - 1;
            if !self.gone.gone[worker] {
                return Ok(Some((worker, tag, body)));
            }
            // From a worker given up on: dropped.
        }
    }

    /// Nothing more goes to `worker` or is taken from it, and its process is ended (see
    /// [`end_process`](Self::end_process)); nothing when it is gone already.
    fn give_up_and_end(&mut self, worker: usize) {
        if self.gone.gone.get(worker) != Some(&false) {
            return;
        }
        self.gone.give_up(worker, &mut self.posted);
        if self.spawner.is_slot(worker) {
            // A slot without a process costs nothing to give up.
            if let Some(place) = self.spawner.lose(worker) {
                self.gone.lost = true;
                if self.places.len() <= worker {
                    self.places.resize(worker + 1, Place::default());
                }
                self.places[worker] = place;
                self.end_process(worker);
            }
            return;
        }
        self.gone.lost = true;
        self.end_process(worker);
    }

    /// `worker` stopped in the middle of a message (a part did not come for `waited`): it is
    /// given up on and ended as a forsaken worker is, and reported lost.
    fn stalled(&mut self, worker: usize, waited: Duration) {
        if self.gone.gone.get(worker) != Some(&false) {
            return;
        }
        self.give_up_and_end(worker);
        let why = format!(
            "it stopped in the middle of a message: a part did not come for {:.1} s \
             (--liveness-timeout)",
            waited.as_secs_f64()
        );
        self.gone.unreported.push_back((worker, why));
    }

    /// A message from `worker` as the engine takes it.
    fn read(&mut self, worker: usize, tag: Tag, body: Body) -> Result<FromWorker<T, R>>
    where
        T: Message,
        R: Message,
    {
        let bytes = self.end.bytes(&body);
        Ok(match tag {
            READY => FromWorker::Ready {
                error: decode(bytes)?,
            },
            DONE => {
                let mut done = Done {
                    results: std::mem::take(&mut self.spare_results),
                    ..Done::default()
                };
                decode_done(bytes, &mut done)?;
                FromWorker::Done(done)
            }
            FAILED => FromWorker::Failed(decode(bytes)?),
            FINISHED => {
                // Its process may end from now on: that is no loss.
                if let Some(lifelines) = &mut self.gone.lifelines {
                    lifelines.release(worker);
                }
                if let Some(finished) = self.gone.finished.get_mut(worker) {
                    *finished = true;
                }
                FromWorker::Finished {
                    error: decode(bytes)?,
                }
            }
            LOST => FromWorker::Lost {
                why: String::from_utf8_lossy(bytes).into_owned(),
            },
            FATAL => {
                let reason: String = decode(bytes)?;
                return Err(Error::backend(format!("worker {worker} gave up: {reason}")));
            }
            other => {
                return Err(Error::backend(format!(
                    "worker {worker} sent a message with unknown tag {other}"
                )));
            }
        })
    }
}

impl<T: Message, S: Message, R: Message> MasterLink<T, S, R> for MpiMaster<T, S, R> {
    const STEADY_PATH: bool = true;

    fn pool(&self) -> usize {
        self.gone.gone.len()
    }

    fn layout(&self) -> Option<Layout> {
        self.layout.clone()
    }

    fn backend(&self) -> &'static str {
        "mpi"
    }

    fn send(&mut self, worker: usize, message: ToWorker<T, S>) -> Result<()> {
        if !self.reachable(worker, matches!(message, ToWorker::Stop))? {
            return Ok(());
        }
        let (tag, bytes) = match message {
            ToWorker::Shared { iteration, part } => {
                let bytes = match &self.shared {
                    Some((cached, bytes)) if Arc::ptr_eq(cached, &part) => Arc::clone(bytes),
                    _ => {
                        // Let go at the end of its iteration already (`iteration_over`);
                        // should one still be here, it goes before the new part is encoded.
                        self.shared = None;
                        let iteration = iteration as u64;
                        let mut bytes =
                            Vec::with_capacity(codec::varint_len(iteration) + part.encoded_len());
                        codec::write_varint(&mut bytes, iteration);
                        part.encode(&mut bytes);
                        let bytes = Arc::new(bytes);
                        self.shared = Some((part, Arc::clone(&bytes)));
                        bytes
                    }
                };
                (SHARED, Outgoing::Shared(bytes))
            }
            ToWorker::Chunk(chunk) => {
                let sent = self.encode_chunk(chunk);
                (CHUNK, Outgoing::Shared(Arc::clone(sent.bytes())))
            }
            ToWorker::Stop => {
                let mut bytes = self.spare.pop().unwrap_or_default();
                if self.lost_any() {
                    bytes.push(LEAVE_UNFINALIZED);
                }
                (STOP, Outgoing::Own(bytes))
            }
        };
        self.post(worker, tag, bytes);
        Ok(())
    }

    fn send_chunk(&mut self, worker: usize, chunk: Chunk<T>) -> Result<SentChunk> {
        let sent = self.encode_chunk(chunk);
        let bytes = sent.bytes();
        let launched = self.gone.gone.get(worker) == Some(&false) && !self.spawner.is_slot(worker);
        if launched && self.protocol == Protocol::Async && bytes.len() <= EAGER {
            // The usual chunk: copied out as it is posted, so the send shares the kept
            // encoding only while it is in progress.
            let comm = &self.end.comms.inline;
            if let Some(send) = Posted::send_eager(comm, worker as Rank + 1, CHUNK, bytes) {
                self.posted.push_back(send);
            }
        } else if self.reachable(worker, false)? {
            self.post(worker, CHUNK, Outgoing::Shared(Arc::clone(bytes)));
        }
        Ok(sent)
    }

    fn reclaim(&mut self, sent: SentChunk) {
        self.sent.keep(sent);
    }

    fn spare_tasks(&mut self) -> Vec<T> {
        std::mem::take(&mut self.spare_tasks)
    }

    fn reuse_results(&mut self, results: Vec<R>) {
        if results.capacity() <= SPARE_RESULTS {
            self.spare_results = results;
        }
    }

    fn recv(&mut self) -> Result<(usize, FromWorker<T, R>)> {
        loop {
            if let Some((worker, tag, body)) = self.next(None)? {
                return Ok((worker, self.read(worker, tag, body)?));
            }
        }
    }

    fn recv_within(&mut self, timeout: Duration) -> Result<Option<(usize, FromWorker<T, R>)>> {
        match self.next(Some(timeout))? {
            Some((worker, tag, body)) => Ok(Some((worker, self.read(worker, tag, body)?))),
            None => Ok(None),
        }
    }

    /// Only a short answer from a worker not given up on, while no loss waits to be reported
    /// and no worker is spawned: anything else is kept for [`next`](Self::next).
    fn answer_into(&mut self, done: &mut Done<R>) -> Result<Option<(usize, usize)>> {
        if self.early.is_some() || !self.gone.unreported.is_empty() || self.spawner.elastic() {
            return Ok(None);
        }
        self.reap();
        let mut tests = 0;
        let keep_waiting = || {
            tests += 1;
            std::hint::spin_loop();
            tests < STEADY_TESTS
        };
        let inbox = &mut self.end.inbox;
        let head = match receive_head(&self.end.comms, inbox, None, keep_waiting)? {
            Heard::Head(head) => head,
            Heard::Lost(rank) => {
                self.gone.failed(rank, &mut self.posted);
                return Ok(None);
            }
            Heard::Nothing => return Ok(None),
        };
        let worker = (head.rank as usize).wrapping_sub(1);
        if head.tag != DONE || self.gone.gone.get(worker) != Some(&false) {
            self.early = Some(head);
            return Ok(None);
        }
        decode_done(&inbox[..head.len], done)?;
        Ok(Some((worker, head.len)))
    }

    /// Under MPI the worker's process is also ended (SIGKILL), by the master on its own node or
    /// by a worker on the other's: `MPI_Finalize` waits for every rank, so a rank that never
    /// answers would otherwise hold every process of the job at the end of the run.
    fn can_leave_behind(&self) -> bool {
        recovery_enabled()
    }

    /// A launched rank keeps its allocation until the job ends; a spawned one is released when
    /// parked. So parked workers are released when the pool is mostly spawned: the launched
    /// ranks then cost the same whatever `nworkers` is, and the rest only while they work.
    fn parked_released(&self) -> bool {
        self.spawner.slots() > self.spawner.launched
    }

    fn parked_note(&self) -> Option<String> {
        let spawner = &self.spawner;
        spawner.elastic().then(|| {
            format!(
                "the {} launched MPI rank(s) keep their allocation, the {} spawned ones are \
                 released when parked",
                spawner.launched,
                spawner.slots()
            )
        })
    }

    fn joining(&mut self) -> Duration {
        std::mem::take(&mut self.spawner.untold)
    }

    fn park(&mut self, worker: usize) {
        if self.gone.gone.get(worker) == Some(&false) {
            self.release_slot(worker, false);
        }
    }

    fn iteration_over(&mut self) {
        // Every worker that took part has the part (it answered after it), so its sends are
        // finished; one behind a send still in progress is taken back too.
        self.shared = None;
        self.reap_all();
    }

    fn forsake(&mut self, worker: usize) {
        self.give_up_and_end(worker);
    }
}

impl<T, S, R> MpiMaster<T, S, R> {
    /// Whether a message, a `stop` or not, is to be sent to `worker`: not to a worker given up
    /// on, nor to a slot whose process could not be spawned (or which a `Stop` releases).
    #[inline]
    fn reachable(&mut self, worker: usize, stop: bool) -> Result<bool> {
        if worker >= self.gone.gone.len() {
            return Err(Error::backend(format!("no worker {worker} in the pool")));
        }
        // Given up on: nothing reaches it any more.
        Ok(!self.gone.gone[worker]
            && (!self.spawner.is_slot(worker) || self.reach_slot(worker, stop)))
    }

    /// Encodes `chunk` into a buffer of an answered one, and keeps its emptied task vector
    /// for the next chunk's tasks.
    fn encode_chunk(&mut self, chunk: Chunk<T>) -> SentChunk
    where
        T: Message,
    {
        let sent = self.sent.encode(&chunk);
        let mut tasks = chunk.tasks;
        if tasks.capacity() <= SPARE_TASKS {
            tasks.clear();
            self.spare_tasks = tasks;
        }
        sent
    }

    /// Whether a worker was lost or given up on in this run: then no rank calls `MPI_Finalize`,
    /// whose closing synchronization over every rank of the job may wait for a dead one forever.
    pub(super) fn lost_any(&self) -> bool {
        self.gone.lost || self.spawner.broken
    }

    /// Leaves the workers' lifelines open until this process exits ([`Lifelines::hold_until_exit`]).
    pub(super) fn hold_lifelines_until_exit(&mut self) {
        if let Some(lifelines) = self.gone.lifelines.take() {
            lifelines.hold_until_exit();
        }
    }

    /// Stops watching the lifelines of spawned workers released since the last call.
    fn released(&mut self) {
        for worker in self.spawner.released.drain(..) {
            if let Some(lifelines) = &mut self.gone.lifelines {
                lifelines.release(worker);
            }
        }
    }

    /// Gets `worker`, a slot, ready for a message: spawns its process for work, or releases it
    /// for a `stop`. `false` when the message is not to be sent (a `Stop` to a slot, answered
    /// here; work for a slot that cannot be spawned, reported lost).
    fn reach_slot(&mut self, worker: usize, stop: bool) -> bool {
        if stop {
            self.release_slot(worker, true);
            return false;
        }
        let ensured = self.spawner.ensure(worker, &mut self.end.inbox);
        self.released();
        match ensured {
            Ok(()) => true,
            Err(why) => {
                self.gone
                    .unreported
                    .push_back((worker, format!("not spawned: {why}")));
                for other in self.spawner.close_vacant() {
                    self.gone
                        .unreported
                        .push_back((other, "not spawned (see above)".to_owned()));
                }
                false
            }
        }
    }

    /// Tells the process of `worker`, a slot, to stop; `report` when the engine waits for its
    /// `Finished` (at the end of the run).
    fn release_slot(&mut self, worker: usize, report: bool) {
        let leave = self.lost_any();
        self.spawner.leaving = leave;
        let spare = &mut self.spare;
        self.spawner.release(worker, report, |spawned| {
            let mut bytes = spare.pop().unwrap_or_default();
            if leave {
                bytes.push(LEAVE_UNFINALIZED);
            }
            // A stop is rare: its buffer, if handed back, is not worth keeping.
            let _ = post_message(
                &spawned.comms,
                1,
                STOP,
                Outgoing::Own(bytes),
                false,
                Vec::new(),
                &mut spawned.posted,
            );
        });
    }

    /// Ends the process of `worker`, given up on; says what it did, or why it could not. Where
    /// the launcher keeps the job when a rank ends, at once; else only as the master exits (its
    /// own process here, a worker of the process's node once the master is gone): ending it
    /// ends the whole job, and the run can still complete without it.
    fn end_process(&mut self, worker: usize) {
        let Some(place) = self.places.get(worker).filter(|p| p.pid != 0).cloned() else {
            return;
        };
        let (rank, pid) = (worker + 1, place.pid);
        let recovery = recovery_enabled();
        if place.node == self.node {
            if !recovery && kill::at_exit(pid) {
                eprintln!(
                    "warning: worker {worker} (rank {rank}, process {pid}) was given up on; it is \
                     ended as the master exits, since {}",
                    library::without_recovery()
                );
                return;
            }
            let why = if recovery {
                String::new()
            } else {
                format!("; {}", library::without_recovery())
            };
            match kill::kill(pid) {
                Ok(()) => eprintln!(
                    "warning: worker {worker} (rank {rank}, process {pid}) was given up on and \
                     ended{why}"
                ),
                Err(e) => eprintln!(
                    "warning: worker {worker} (rank {rank}) was given up on, but its process {pid} \
                     could not be ended ({e}): mpirun will wait for it"
                ),
            }
            return;
        }
        let helper = (0..self.places.len())
            .find(|&w| !self.gone.gone[w] && self.places[w].node == place.node);
        match helper {
            Some(helper) => {
                let mut order = pid.to_le_bytes().to_vec();
                order.push(if recovery {
                    KILL_NOW
                } else {
                    KILL_AFTER_MASTER
                });
                self.post(helper, KILL, Outgoing::Own(order));
                let when = if recovery {
                    String::new()
                } else {
                    format!(
                        " once the master has exited, since {}",
                        library::without_recovery()
                    )
                };
                eprintln!(
                    "warning: worker {worker} (rank {rank}) was given up on; worker {helper} ends \
                     its process {pid} on {}{when}",
                    place.node
                );
            }
            None => eprintln!(
                "warning: worker {worker} (rank {rank}) was given up on, and no worker is left \
                 on its node to end it: mpirun will wait for it; `kill -9 {pid}` on {} ends it",
                place.node
            ),
        }
    }
}

/// An answer's bytes decoded over `done` ([`Done::decode_in_place`]).
#[inline]
fn decode_done<R: Message>(bytes: &[u8], done: &mut Done<R>) -> Result<()> {
    let mut input = Reader::new(bytes);
    done.decode_in_place(&mut input)?;
    input.finish(std::any::type_name::<Done<R>>())?;
    Ok(())
}

/// Whether the launcher keeps the job going when a rank dies, as far as a rank can see it: Open
/// MPI 4's `--mca orte_enable_recovery 1`, which mpirun passes to the ranks in their environment
/// (as Open MPI 5's `--enable-recovery` does with `-x OMPI_MCA_orte_enable_recovery=1`), ULFM,
/// or Intel MPI's `I_MPI_FAULT_CONTINUE=on` (hydra's `-disable-auto-cleanup` does the same but
/// tells the ranks nothing).
pub(super) fn recovery_enabled() -> bool {
    ulfm::enabled()
        || library::env_is("OMPI_MCA_orte_enable_recovery", library::open_mpi_true)
        || (library::runs_on(library::Vendor::Intel)
            && library::env_is("I_MPI_FAULT_CONTINUE", library::intel_on))
}
