//! The MPI backend: rank 0 is the master, ranks `1..P` the workers; messages are the codec's bytes.
//!
//! `sync` sends with `MPI_Issend` and waits for each send to complete before the next, as
//! `MPI_Ssend` would. `async` posts every send with `MPI_Isend` and goes on; sends finish in
//! the background while the master waits for answers, and their buffers are reused once MPI is
//! done with them ([`posted`]) — so the model's two branches describe what really happens, and a
//! chunk prefetched to a busy worker never holds the master.
//!
//! Nobody waits in a blocking receive: Open MPI's busy-polls a core, which would steal it from the
//! workers on an oversubscribed node. A waiting process posts a receive (`MPI_Irecv`) into a
//! buffer it keeps, and tests it, spinning briefly when an answer is due soon and sleeping with
//! exponential backoff otherwise, so parked workers cost next to nothing. The receive is posted
//! only while the process waits, so a message is matched when its receiver asks for it, as with
//! a blocking receive (which is what a synchronous send waits for).
//!
//! Messages of up to [`INLINE`] bytes travel whole into that buffer. A longer one is announced
//! there by a message holding its length (its tag with [`FOLLOWS`] set), and its body follows on
//! a second communicator in parts of at most 1 GiB ([`parts`]), so a message has no length
//! limit. Bodies keep their order because each communicator keeps the order of its messages
//! between two ranks.
//!
//! A worker rank may die (`kill -9`, an abort, the OOM killer) without ending the job when it is
//! launched with `mpirun --mca orte_enable_recovery 1`: the communicators return errors instead
//! of aborting, the master notices the death through the worker's [`lifeline`], reports the
//! worker `Lost` once, and from then on drops what was sent to it or comes from it. A worker the
//! engine gives up on (`forsake`) is treated the same way, without the report, and its process is
//! ended ([`kill`]), since `MPI_Finalize` waits for every rank. After a loss no rank calls
//! `MPI_Finalize` at all (see [`finalize`]). A worker whose master died notices it through its
//! own end of the lifeline, and leaves.

mod backoff;
mod kill;
mod layout;
mod lifeline;
mod parts;
mod posted;

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpi::Tag;
use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, Rank, SimpleCommunicator};

use self::backoff::{Backoff, CHECK_EVERY};
use self::layout::Place;
use self::lifeline::Lifelines;
use self::parts::PART;
use self::posted::{Posted, Received};
use super::{Chunk, Done, Failed, FromWorker, MasterLink, ToWorker, WorkerLink};
use crate::codec::{self, DecodeError, DecodeErrorKind, Message, Reader};
use crate::config::Protocol;
use crate::engine::master::{guarded, run_master, stop_workers};
use crate::error::{Error, ErrorKind, Result};
use crate::tuning::Layout;

const SHARED: Tag = 1;
const CHUNK: Tag = 2;
const STOP: Tag = 3;
/// End the process whose id follows, on this node: the master gave up on it.
const KILL: Tag = 4;
/// The byte of a `Stop` telling the worker to leave without `MPI_Finalize`.
const LEAVE_UNFINALIZED: u8 = 1;
const READY: Tag = 11;
const DONE: Tag = 12;
const FAILED: Tag = 13;
const FINISHED: Tag = 14;
/// A worker could not decode what the master sent: the run cannot go on.
const FATAL: Tag = 15;
/// Never on the wire: what the master's transport files a worker found dead under.
const LOST: Tag = 16;
/// Set in the tag of an announcement: the body follows on the bulk communicator.
const FOLLOWS: Tag = 1 << 8;

/// The longest message sent whole; the receive buffer each process keeps has this size.
const INLINE: usize = 64 * 1024;
/// Send buffers the master keeps for reuse, at most.
const SPARE: usize = 64;
/// Capacity of a chunk's task vector kept for the next chunk, at most (a large one is freed).
const SPARE_TASKS: usize = 4096;
/// Capacity of an answer's results vector kept for the next answer, at most: results decoded
/// into it go one by one, so a large vector is better decoded afresh (in one copy for numbers).
const SPARE_RESULTS: usize = 64;
/// Sends in progress past which the master tests every one of them, not only the oldest.
const TEST_ALL: usize = 64;

/// A run's two communicators.
struct Comms {
    /// Whole messages and announcements.
    inline: SimpleCommunicator,
    /// Bodies of announced messages, in parts.
    bulk: SimpleCommunicator,
}

/// One end of a run's two communicators, with the receive buffer kept across messages.
struct Endpoint {
    comms: Comms,
    inbox: Vec<u8>,
}

/// Where a received message's bytes are.
enum Body {
    /// The first bytes of the endpoint's buffer.
    Inline(usize),
    /// A body that followed its announcement.
    Bulk(Vec<u8>),
}

/// A message received: its sender, tag and body.
type Incoming = (Rank, Tag, Body);

impl Endpoint {
    /// `world` and a duplicate of it (a collective call: every rank makes it together), both
    /// returning errors rather than aborting the job when a peer is gone.
    fn new(world: SimpleCommunicator) -> Self {
        let bulk = world.duplicate();
        posted::errors_return(&world);
        posted::errors_return(&bulk);
        Endpoint {
            comms: Comms {
                inline: world,
                bulk,
            },
            inbox: vec![0; INLINE],
        }
    }

    fn bytes<'a>(&'a self, body: &'a Body) -> &'a [u8] {
        match body {
            Body::Inline(len) => &self.inbox[..*len],
            Body::Bulk(bytes) => bytes,
        }
    }
}

/// Waits for the next message from `from` (any rank when `None`) into `inbox`, the body of a
/// long one on `bulk`. `keep_waiting(None)` is asked between tests for the message (and does
/// the waiting), `keep_waiting(Some(rank))` between tests for the parts of a body from `rank`;
/// `Ok(None)` when it said to stop.
fn receive(
    comms: &Comms,
    inbox: &mut [u8],
    from: Option<Rank>,
    mut keep_waiting: impl FnMut(Option<Rank>) -> bool,
) -> Result<Option<Incoming>> {
    let failed = |code| Error::backend(format!("MPI failed a receive (error code {code})"));
    let status = match posted::receive(&comms.inline, from, None, inbox, || keep_waiting(None)) {
        Received::Message(status) => status,
        Received::GaveUp => return Ok(None),
        Received::Failed(code) => return Err(failed(code)),
    };
    let (rank, tag) = (status.source_rank(), status.tag());
    let len = usize::try_from(status.count(u8::equivalent_datatype())).unwrap_or(0);
    if tag & FOLLOWS == 0 {
        return Ok(Some((rank, tag, Body::Inline(len))));
    }
    let tag = tag & !FOLLOWS;
    let total = parts::announced(&inbox[..len.min(inbox.len())]).ok_or_else(|| {
        Error::backend(format!(
            "rank {rank} announced a message without its length"
        ))
    })?;
    // Zeroed pages come from the system untouched, so a large body costs no extra pass.
    let mut body = vec![0u8; total];
    for range in parts::parts(total, PART) {
        let expected = range.len();
        let into = &mut body[range];
        match posted::receive(&comms.bulk, Some(rank), Some(tag), into, || {
            keep_waiting(Some(rank))
        }) {
            Received::Message(status)
                if status.count(u8::equivalent_datatype()) as usize == expected => {}
            Received::Message(status) => {
                return Err(Error::backend(format!(
                    "rank {rank} sent a part of {} bytes where {expected} were announced",
                    status.count(u8::equivalent_datatype())
                )));
            }
            Received::GaveUp => return Ok(None),
            Received::Failed(code) => return Err(failed(code)),
        }
    }
    Ok(Some((rank, tag, Body::Bulk(body))))
}

/// Posts `bytes` to `rank`: whole, or their announcement (written into `header`) and their
/// parts; `synchronous` sends complete only once the receiver has them.
fn post_message(
    comms: &Comms,
    rank: Rank,
    tag: Tag,
    bytes: Outgoing,
    synchronous: bool,
    mut header: Vec<u8>,
    posted: &mut impl Extend<Posted>,
) {
    let len = bytes.bytes().len();
    if len <= INLINE {
        let whole = Posted::send(&comms.inline, rank, tag, bytes, 0..len, synchronous);
        posted.extend([whole]);
        return;
    }
    header.clear();
    header.extend_from_slice(&parts::announcement(len));
    let header = Outgoing::Own(header);
    let tag_follows = tag | FOLLOWS;
    let header = Posted::send(&comms.inline, rank, tag_follows, header, 0..8, synchronous);
    posted.extend([header]);
    let body = bytes.into_shared();
    posted.extend(parts::parts(len, PART).map(|range| {
        let part = Outgoing::Shared(Arc::clone(&body));
        Posted::send(&comms.bulk, rank, tag, part, range, synchronous)
    }));
}

fn decode<T: Message>(bytes: &[u8]) -> std::result::Result<T, DecodeError> {
    codec::decode(bytes)
}

/// The iteration index (a varint) then the shared part, as `MpiMaster::send` writes them.
fn decode_shared<T, S: Message>(bytes: &[u8]) -> std::result::Result<ToWorker<T, S>, DecodeError> {
    let mut input = Reader::new(bytes);
    let index = input.read_varint("Shared")?;
    let iteration = usize::try_from(index)
        .map_err(|_| input.error(DecodeErrorKind::OutOfRange(index), "Shared"))?;
    let part = S::decode(&mut input).map_err(|e| e.in_field("Shared", "part"))?;
    input.finish("Shared")?;
    Ok(ToWorker::Shared {
        iteration,
        part: Arc::new(part),
    })
}

/// Encoded bytes being sent: the shared part is encoded once for every worker, and a long
/// message is shared by its parts.
enum Outgoing {
    Own(Vec<u8>),
    Shared(Arc<Vec<u8>>),
}

impl Outgoing {
    fn bytes(&self) -> &[u8] {
        match self {
            Outgoing::Own(bytes) => bytes,
            Outgoing::Shared(bytes) => bytes,
        }
    }

    fn into_shared(self) -> Arc<Vec<u8>> {
        match self {
            Outgoing::Own(bytes) => Arc::new(bytes),
            Outgoing::Shared(bytes) => bytes,
        }
    }
}

/// What the master knows of workers that are gone.
struct Gone {
    /// By worker: lost or forsaken; nothing goes to it or is taken from it any more.
    gone: Vec<bool>,
    /// Lost workers not yet reported, with what was seen.
    unreported: VecDeque<(usize, String)>,
    lifelines: Option<Lifelines>,
}

impl Gone {
    /// Looks at the lifelines: every worker found dead is given up (its sends abandoned) and
    /// queued to be reported. A worker with a message still waiting is reported after it.
    fn look(&mut self, comms: &Comms, posted: &mut VecDeque<Posted>) {
        let Some(lifelines) = &mut self.lifelines else {
            return;
        };
        let waiting = |worker: usize| {
            let rank = Rank::try_from(worker + 1).unwrap_or(Rank::MAX);
            mpi::point_to_point::Source::immediate_probe(&comms.inline.process_at_rank(rank))
                .is_some()
        };
        for (worker, why) in lifelines.look(waiting) {
            if !self.gone[worker] {
                self.give_up(worker, posted);
                self.unreported.push_back((worker, why));
            }
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
pub(crate) struct MpiMaster<T, S, R> {
    end: Endpoint,
    protocol: Protocol,
    /// Sends in progress, oldest first.
    posted: VecDeque<Posted>,
    /// Buffers of sent messages, kept to encode the next ones into.
    spare: Vec<Vec<u8>>,
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
    places: Vec<Place>,
    node: String,
    gone: Gone,
}

impl<T, S, R> MpiMaster<T, S, R> {
    fn new(
        world: SimpleCommunicator,
        protocol: Protocol,
        layout: Option<(Layout, Vec<Place>)>,
        lifelines: Option<Lifelines>,
    ) -> Self {
        let pool = world.size() as usize - 1;
        let (layout, places) = layout.map_or((None, Vec::new()), |(l, p)| (Some(l), p));
        MpiMaster {
            layout,
            places,
            node: mpi::environment::processor_name().unwrap_or_default(),
            end: Endpoint::new(world),
            protocol,
            posted: VecDeque::new(),
            spare: Vec::new(),
            shared: None,
            spare_tasks: Vec::new(),
            spare_results: Vec::new(),
            gone: Gone {
                gone: vec![false; pool],
                unreported: VecDeque::new(),
                lifelines,
            },
        }
    }

    /// Sends one message: under the sync protocol, returns once the worker has it (or is found
    /// dead); else posts it and returns at once. `Stop` is always posted: after a failed
    /// iteration a worker may still be handing back an answer, under sync waiting for the master
    /// to take it, which the master does only once its `Stop`s are out. `Kill` too: the worker
    /// asked to end another may be busy with a chunk.
    fn post(&mut self, rank: Rank, tag: Tag, bytes: Outgoing) {
        let synchronous = self.protocol == Protocol::Sync && tag != STOP && tag != KILL;
        let header = self.spare.pop().unwrap_or_default();
        let comms = &self.end.comms;
        post_message(
            comms,
            rank,
            tag,
            bytes,
            synchronous,
            header,
            &mut self.posted,
        );
        if synchronous {
            self.settle(rank);
        }
    }

    /// Waits until every send is complete, or `rank`, which they go to, is found dead.
    fn settle(&mut self, rank: Rank) {
        let mut backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(1));
        let mut tests = 0u32;
        while !self.posted.iter_mut().all(Posted::test) {
            backoff.wait();
            tests = tests.wrapping_add(1);
            if tests % CHECK_EVERY == 0 || backoff.sleeping() {
                self.gone.look(&self.end.comms, &mut self.posted);
                if self.gone.gone[rank as usize - 1] {
                    break;
                }
            }
        }
        self.reap();
    }

    /// Keeps a sent message's buffer for the next one, unless it is large (a fresh allocation
    /// costs little next to copying a large message) or enough are kept already.
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
    fn reap(&mut self) {
        while self.posted.front_mut().is_some_and(Posted::test) {
            if let Some(done) = self.posted.pop_front() {
                let bytes = done.finish();
                self.recycle(bytes);
            }
        }
        if self.posted.len() > TEST_ALL {
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
    }

    /// The next message, or a worker lost, from a worker not given up on; `None` once
    /// `deadline` has passed.
    fn next(&mut self, deadline: Option<Instant>) -> Result<Option<(usize, Tag, Body)>> {
        self.reap();
        loop {
            if let Some((worker, why)) = self.gone.unreported.pop_front() {
                return Ok(Some((worker, LOST, Body::Bulk(why.into_bytes()))));
            }
            let mut backoff = Backoff::new(Duration::from_micros(200), Duration::from_millis(1));
            let mut tests = 0u32;
            let (comms, gone, posted) = (&self.end.comms, &mut self.gone, &mut self.posted);
            let keep_waiting = |body_from: Option<Rank>| {
                backoff.wait();
                tests = tests.wrapping_add(1);
                if tests % CHECK_EVERY != 0 && !backoff.sleeping() {
                    return true;
                }
                gone.look(comms, posted);
                match body_from {
                    // The rest of a long message: only its sender's death ends the wait.
                    Some(rank) => !gone.gone[rank as usize - 1],
                    None => {
                        gone.unreported.is_empty()
                            && deadline.is_none_or(|deadline| Instant::now() < deadline)
                    }
                }
            };
            let Some((rank, tag, body)) = receive(comms, &mut self.end.inbox, None, keep_waiting)?
            else {
                if self.gone.unreported.is_empty() {
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
                let mut input = Reader::new(bytes);
                let spare = std::mem::take(&mut self.spare_results);
                let done = Done::decode_into(&mut input, spare)?;
                input.finish(std::any::type_name::<Done<R>>())?;
                FromWorker::Done(done)
            }
            FAILED => FromWorker::Failed(decode(bytes)?),
            FINISHED => {
                // Its process may end from now on: that is no loss.
                if let Some(lifelines) = &mut self.gone.lifelines {
                    lifelines.release(worker);
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
    fn pool(&self) -> usize {
        (self.end.comms.inline.size() - 1) as usize
    }

    fn layout(&self) -> Option<Layout> {
        self.layout.clone()
    }

    fn backend(&self) -> &'static str {
        "mpi"
    }

    fn send(&mut self, worker: usize, message: ToWorker<T, S>) -> Result<()> {
        let rank = Rank::try_from(worker + 1)
            .ok()
            .filter(|_| worker < self.gone.gone.len())
            .ok_or_else(|| Error::backend(format!("no worker {worker} in the pool")))?;
        if self.gone.gone[worker] {
            // Given up on: nothing reaches it any more.
            return Ok(());
        }
        let (tag, bytes) = match message {
            ToWorker::Shared { iteration, part } => {
                let bytes = match &self.shared {
                    Some((cached, bytes)) if Arc::ptr_eq(cached, &part) => Arc::clone(bytes),
                    _ => {
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
                let mut bytes = self.spare.pop().unwrap_or_default();
                chunk.encode(&mut bytes);
                let mut tasks = chunk.tasks;
                if tasks.capacity() <= SPARE_TASKS {
                    tasks.clear();
                    self.spare_tasks = tasks;
                }
                (CHUNK, Outgoing::Own(bytes))
            }
            ToWorker::Stop => {
                let mut bytes = self.spare.pop().unwrap_or_default();
                if self.lost_any() {
                    bytes.push(LEAVE_UNFINALIZED);
                }
                (STOP, Outgoing::Own(bytes))
            }
        };
        self.post(rank, tag, bytes);
        Ok(())
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
        let deadline = Instant::now() + timeout;
        match self.next(Some(deadline))? {
            Some((worker, tag, body)) => Ok(Some((worker, self.read(worker, tag, body)?))),
            None => Ok(None),
        }
    }

    /// Under MPI the worker's process is also ended (SIGKILL), by the master on its own node or
    /// by a worker on the other's: `MPI_Finalize` waits for every rank, so a rank that never
    /// answers would otherwise hold every process of the job at the end of the run.
    fn can_leave_behind(&self) -> bool {
        recovery_enabled()
    }

    /// Every rank was launched with the job and keeps its allocation until the job ends.
    fn parked_released(&self) -> bool {
        false
    }

    fn forsake(&mut self, worker: usize) {
        if self.gone.gone.get(worker) == Some(&false) {
            self.gone.give_up(worker, &mut self.posted);
            self.end_process(worker);
        }
    }
}

impl<T, S, R> MpiMaster<T, S, R> {
    /// Whether a worker was lost or given up on in this run: then no rank calls `MPI_Finalize`,
    /// whose closing synchronization over every rank of the job may wait for a dead one forever.
    fn lost_any(&self) -> bool {
        self.gone.gone.contains(&true)
    }

    /// Ends the process of `worker`, given up on; says what it did, or why it could not.
    fn end_process(&mut self, worker: usize) {
        let Some(place) = self.places.get(worker).cloned() else {
            return;
        };
        let rank = worker + 1;
        let recovery = if recovery_enabled() {
            ""
        } else {
            "; without `--mca orte_enable_recovery 1` on the mpirun line, mpirun ends the whole \
             job with it"
        };
        if place.node == self.node {
            match kill::kill(place.pid) {
                Ok(()) => eprintln!(
                    "warning: worker {worker} (rank {rank}, process {}) was given up on and \
                     ended{recovery}",
                    place.pid
                ),
                Err(e) => eprintln!(
                    "warning: worker {worker} (rank {rank}) was given up on, but its process {} \
                     could not be ended ({e}): mpirun will wait for it",
                    place.pid
                ),
            }
            return;
        }
        let helper = (0..self.places.len())
            .find(|&w| !self.gone.gone[w] && self.places[w].node == place.node);
        match helper {
            Some(helper) => {
                let pid = place.pid.to_le_bytes().to_vec();
                self.post(helper as Rank + 1, KILL, Outgoing::Own(pid));
                eprintln!(
                    "warning: worker {worker} (rank {rank}) was given up on; worker {helper} ends \
                     its process {} on {}{recovery}",
                    place.pid, place.node
                );
            }
            None => eprintln!(
                "warning: worker {worker} (rank {rank}) was given up on, and no worker is left \
                 on its node to end it: mpirun will wait for it; `kill -9 {}` on {} ends it",
                place.pid, place.node
            ),
        }
    }
}

/// Whether mpirun keeps the job going when a rank dies (`--mca orte_enable_recovery 1`, which
/// it passes to the ranks in their environment).
fn recovery_enabled() -> bool {
    std::env::var("OMPI_MCA_orte_enable_recovery")
        .is_ok_and(|v| matches!(v.trim(), "1" | "true" | "t" | "yes" | "y" | "enabled"))
}

/// Ends the process named by a [`KILL`] message, on this worker's node.
fn end_neighbour(bytes: &[u8]) {
    let Ok(pid) = <[u8; 4]>::try_from(bytes).map(u32::from_le_bytes) else {
        return;
    };
    if pid == std::process::id() {
        return;
    }
    if let Err(e) = kill::kill(pid) {
        eprintln!("warning: the master asked to end process {pid}, which failed: {e}");
    }
}

/// A worker's end (ranks 1 and up).
pub(crate) struct MpiWorker<T, R> {
    end: Endpoint,
    protocol: Protocol,
    /// The master answers soon (we just returned a chunk or got the shared part): spin first.
    expecting: bool,
    /// A message from the master could not be read: the master was told, and everything up to
    /// its `Stop` is dropped.
    broken: bool,
    /// The master's `Stop` said to leave without `MPI_Finalize` (a worker was lost).
    leave_unfinalized: bool,
    /// The buffer answers are encoded into, kept across messages (unless large).
    outbox: Vec<u8>,
    _messages: PhantomData<fn(T) -> R>,
}

impl<T, R> MpiWorker<T, R> {
    fn new(world: SimpleCommunicator, protocol: Protocol) -> Self {
        MpiWorker {
            end: Endpoint::new(world),
            protocol,
            expecting: false,
            broken: false,
            leave_unfinalized: false,
            outbox: Vec::new(),
            _messages: PhantomData,
        }
    }

    /// Encodes `message` and sends it to the master by the protocol, waiting until the send is
    /// complete; `Finished` synchronously, for at most [`LAST_WAIT`], so that a rank that leaves
    /// without `MPI_Finalize` (after a loss) leaves no message behind. `false` when the master
    /// is gone: its process ended, so the send would never complete.
    fn send_encoded(&mut self, tag: Tag, message: &impl Message) -> bool {
        self.outbox.clear();
        message.encode(&mut self.outbox);
        let synchronous = self.protocol == Protocol::Sync || tag == FINISHED;
        let bytes = Outgoing::Own(std::mem::take(&mut self.outbox));
        let mut sends = Vec::new();
        post_message(
            &self.end.comms,
            0,
            tag,
            bytes,
            synchronous,
            Vec::new(),
            &mut sends,
        );
        let bound = (tag == FINISHED).then_some(LAST_WAIT);
        let started = Instant::now();
        let mut looked = started;
        let mut backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(1));
        while !sends.iter_mut().all(Posted::test) {
            backoff.wait();
            let mut gone = false;
            if backoff.sleeping() && looked.elapsed() >= MASTER_LOOK {
                looked = Instant::now();
                gone = lifeline::master_gone();
            }
            if gone || bound.is_some_and(|bound| started.elapsed() > bound) {
                sends.into_iter().for_each(Posted::abandon);
                if gone {
                    self.leave_unfinalized = true;
                }
                return !gone;
            }
        }
        // The buffer of a message sent whole is kept for the next, unless it grew large.
        if let (1, Some(whole)) = (sends.len(), sends.pop()) {
            if let Outgoing::Own(bytes) = whole.finish() {
                if bytes.capacity() <= INLINE {
                    self.outbox = bytes;
                }
            }
        }
        true
    }
}

/// How often a waiting worker looks whether the master's process is still there.
const MASTER_LOOK: Duration = Duration::from_millis(100);

/// How long a worker waits for the master to take its `Finished`.
const LAST_WAIT: Duration = Duration::from_secs(10);

impl<T: Message, S: Message, R: Message> WorkerLink<T, S, R> for MpiWorker<T, R> {
    /// A message the worker cannot read is reported to the master (which ends the run with it)
    /// and the worker then only waits for its `Stop`, so that it still runs `final_work` and
    /// says `Finished`: no rank is left waiting for another.
    fn recv(&mut self) -> Option<ToWorker<T, S>> {
        loop {
            let mut backoff = if self.expecting {
                Backoff::new(Duration::from_millis(1), Duration::from_millis(1))
            } else {
                // Parked: nothing is due, so sleep right away (up to 5 ms between tests).
                Backoff::new(Duration::ZERO, Duration::from_millis(5))
            };
            let mut looked = Instant::now();
            let mut master_gone = false;
            let keep_waiting = |_| {
                backoff.wait();
                if backoff.sleeping() && looked.elapsed() >= MASTER_LOOK {
                    looked = Instant::now();
                    master_gone = lifeline::master_gone();
                }
                !master_gone
            };
            let received = receive(&self.end.comms, &mut self.end.inbox, Some(0), keep_waiting);
            if master_gone {
                // Its process ended: `MPI_Finalize` would wait for it forever.
                eprintln!("warning: the master is gone; this worker stops");
                self.leave_unfinalized = true;
                return None;
            }
            // An MPI failure here means the master is gone.
            let (_, tag, body) = received.ok().flatten()?;
            let bytes = self.end.bytes(&body);
            let message = match tag {
                STOP => {
                    self.leave_unfinalized = bytes == [LEAVE_UNFINALIZED];
                    Ok(ToWorker::Stop)
                }
                KILL => {
                    end_neighbour(bytes);
                    continue;
                }
                _ if self.broken => continue,
                SHARED => decode_shared(bytes),
                CHUNK => decode::<Chunk<T>>(bytes).map(ToWorker::Chunk),
                other => {
                    let reason = format!("unknown message tag {other} from the master");
                    self.broken = true;
                    if !self.send_encoded(FATAL, &reason) {
                        return None;
                    }
                    continue;
                }
            };
            match message {
                Ok(message) => {
                    self.expecting = matches!(message, ToWorker::Shared { .. });
                    return Some(message);
                }
                Err(e) => {
                    let what = if tag == SHARED {
                        "shared part"
                    } else {
                        "chunk"
                    };
                    let reason = format!("it could not decode a {what} from the master: {e}");
                    self.broken = true;
                    self.expecting = false;
                    if !self.send_encoded(FATAL, &reason) {
                        return None;
                    }
                }
            }
        }
    }

    fn send(&mut self, message: FromWorker<T, R>) -> bool {
        self.expecting = matches!(message, FromWorker::Done(_) | FromWorker::Ready { .. });
        match &message {
            FromWorker::Ready { error } => self.send_encoded(READY, error),
            FromWorker::Done(done) => self.send_encoded(DONE, done),
            FromWorker::Failed(failed) => self.send_encoded(FAILED, failed),
            FromWorker::Finished { error } => self.send_encoded(FINISHED, error),
            // Made by the master's transport, never sent.
            FromWorker::Lost { .. } => true,
        }
    }
}

impl<T: Message> Message for Failed<T> {
    const MIN_ENCODED_LEN: usize = 1 + <Vec<T>>::MIN_ENCODED_LEN + 1;

    fn encoded_len(&self) -> usize {
        codec::varint_len(self.chunk) + self.tasks.encoded_len() + self.message.encoded_len()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        codec::write_varint(out, self.chunk);
        self.tasks.encode(out);
        self.message.encode(out);
    }

    fn decode(input: &mut Reader<'_>) -> std::result::Result<Self, DecodeError> {
        Ok(Failed {
            chunk: input.read_varint("Failed")?,
            tasks: Vec::decode(input).map_err(|e| e.in_field("Failed", "tasks"))?,
            message: String::decode(input).map_err(|e| e.in_field("Failed", "message"))?,
        })
    }
}

/// Runs this process's part: the master on rank 0, a worker elsewhere. MPI is initialized here
/// unless the application already did (then it is also the application's to finalize).
pub(crate) fn run<M, W>(
    config: &crate::config::RunConfig,
    master: impl FnOnce() -> M,
    worker: impl Fn() -> W,
    app: &str,
) -> Result<Option<crate::metrics::RunMetrics>>
where
    M: crate::app::Master,
    W: crate::app::Worker<Task = M::Task, Result = M::Result, Shared = M::Shared>,
{
    if mpi::environment::is_finalized() {
        return Err(Error::backend(
            "MPI was already finalized by an earlier run in this process; to run several times, \
             call `mpi::initialize()` yourself first and keep the universe alive",
        ));
    }
    let universe = if mpi::environment::is_initialized() {
        None
    } else {
        Some(mpi::initialize().ok_or_else(|| Error::backend("MPI could not be initialized"))?)
    };
    // A communicator of its own for every run (a collective call, so every rank makes the same
    // one): a worker that finished the last run and already says `Ready` for the next cannot have
    // that message taken for a late answer of the last run.
    let world = SimpleCommunicator::world().duplicate();
    let size = world.size() as usize;
    if size < 2 {
        return Err(crate::launch::too_few_processes(
            size,
            crate::launch::detect(),
        ));
    }
    let rank = world.rank() as usize;
    let layout = layout::gather(&world);
    let lifelines = lifeline::connect(&world);
    if rank == 0 {
        if let Some(max) = config.max_workers.filter(|&m| m != size - 1) {
            eprintln!(
                "warning: --max-workers {max} is ignored under MPI: the pool is the {} launched \
                 worker ranks",
                size - 1
            );
        }
        let mut link = MpiMaster::new(world, config.protocol, layout, lifelines);
        let outcome = guarded(|| run_master(&mut master(), &mut link, config, app));
        let leave_unfinalized = link.lost_any();
        let panicked = outcome
            .as_ref()
            .is_err_and(|e| matches!(e.kind(), ErrorKind::MasterPanicked { .. }));
        if panicked {
            // The engine unwound without stopping the workers: stop them here, or they would
            // wait for the master forever. Without waiting for each to take its `Stop`: under
            // sync, a worker still busy with a chunk waits for the master to take its answer.
            link.protocol = Protocol::Async;
            if let Err(stop) = stop_workers(&mut link) {
                eprintln!("warning: after the master's panic, stopping the workers: {stop}");
            }
        }
        drop(link);
        finalize(universe, leave_unfinalized);
        outcome.map(Some)
    } else {
        let setup = crate::app::WorkerSetup {
            index: rank - 1,
            pool: size - 1,
            backend: "mpi",
        };
        let mut link = MpiWorker::new(world, config.protocol);
        crate::engine::worker::serve(&worker, &setup, &config.load, &mut link);
        let leave_unfinalized = link.leave_unfinalized;
        drop(link);
        finalize(universe, leave_unfinalized);
        Ok(None)
    }
}

/// Ends MPI when this run started it. After a worker was lost, `MPI_Finalize` is left out on
/// every rank: its closing synchronization over the whole job sometimes waits forever for the
/// dead rank (in about one run in six with Open MPI 4.1 here), while processes that leave
/// without it end the job cleanly under `orte_enable_recovery` (mpirun exits 0).
fn finalize(universe: Option<mpi::environment::Universe>, leave_unfinalized: bool) {
    if leave_unfinalized {
        std::mem::forget(universe);
    } else {
        drop(universe);
    }
}

#[cfg(test)]
mod tests;
