//! The MPI backend: rank 0 is the master, ranks `1..P` the workers; messages are the codec's bytes.
//!
//! `sync` sends with `MPI_Ssend`, one at a time. `async` posts every send with `MPI_Isend` and
//! goes on; sends finish in the background while the master waits for answers, and their
//! buffers are reused once MPI is done with them ([`posted`]) — so the model's two branches
//! describe what really happens, and a chunk prefetched to a busy worker never holds the master.
//!
//! Nobody waits in a blocking receive: Open MPI's busy-polls a core, which would steal it from the
//! workers on an oversubscribed node. A waiting process posts a receive (`MPI_Irecv`) into a
//! buffer it keeps, and tests it, spinning briefly when an answer is due soon and sleeping with
//! exponential backoff otherwise, so parked workers cost next to nothing. The receive is posted
//! only while the process waits, so a message is matched when its receiver asks for it, as with
//! a blocking receive (which is what a synchronous send waits for).
//!
//! Messages of up to [`INLINE`] bytes travel whole into that buffer. A longer one is announced
//! there by an empty message (its tag with [`FOLLOWS`] set) and its body follows on a second
//! communicator, where the receiver probes for it and receives it at its exact size. Bodies keep
//! their order because each communicator keeps the order of its messages between two ranks.

mod layout;
mod posted;

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpi::Tag;
use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, MatchedReceiveVec, Source, Status};
use mpi::topology::{Communicator, Rank, SimpleCommunicator};

use self::posted::Posted;
use super::{Chunk, Done, Failed, FromWorker, MasterLink, ToWorker, WorkerLink};
use crate::codec::{self, DecodeError, DecodeErrorKind, Message, Reader};
use crate::config::Protocol;
use crate::engine::master::{guarded, run_master, stop_workers};
use crate::error::{Error, ErrorKind, Result};
use crate::tuning::Layout;

const SHARED: Tag = 1;
const CHUNK: Tag = 2;
const STOP: Tag = 3;
const READY: Tag = 11;
const DONE: Tag = 12;
const FAILED: Tag = 13;
const FINISHED: Tag = 14;
/// A worker could not decode what the master sent: the run cannot go on.
const FATAL: Tag = 15;
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

/// Waits between tests: busy for the first microseconds (answers on a node come back that
/// fast), then yielding the core until `spin` has passed, then sleeping, doubling up to `max`
/// and, while a message is due, to `√(2·w·t)` after waiting `t`, `w` the cost of a wake-up
/// ([`WAKE_UP`]): the sleep that balances the core time wake-ups take from the processes
/// sharing it against the delay in noticing the message (≈ 100 µs after 1 ms, 1 ms after
/// 100 ms). The clock is read once every [`CHECK_EVERY`] waits while busy or yielding (a read
/// costs as much as a test, and an answer due soon usually arrives within those waits), and
/// at every wake-up.
struct Backoff {
    /// When the clock was first read.
    started: Option<Instant>,
    waits: u32,
    phase: Phase,
    spin: Duration,
    sleep: Duration,
    max: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Busy,
    Yielding,
    Sleeping,
}

/// How long a test loop stays busy before it starts yielding the core.
const BUSY: Duration = Duration::from_micros(20);
/// Waits between two looks at the clock, while busy or yielding.
const CHECK_EVERY: u32 = 64;
/// What a wake-up costs the core: the switch to the sleeper and back, and the caches.
const WAKE_UP: Duration = Duration::from_micros(5);
/// The shortest sleep.
const NAP: Duration = Duration::from_micros(10);

impl Backoff {
    /// Spins and yields for `spin`, then sleeps; with `spin` zero, sleeps at once.
    fn new(spin: Duration, max: Duration) -> Self {
        Backoff {
            started: None,
            waits: 0,
            phase: if spin.is_zero() {
                Phase::Sleeping
            } else {
                Phase::Busy
            },
            spin,
            sleep: NAP,
            max,
        }
    }

    fn wait(&mut self) {
        self.waits = self.waits.wrapping_add(1);
        if self.phase != Phase::Sleeping && self.waits % CHECK_EVERY == 0 {
            let waited = self.started.get_or_insert_with(Instant::now).elapsed();
            self.phase = if waited >= self.spin {
                Phase::Sleeping
            } else if waited >= BUSY.min(self.spin) {
                Phase::Yielding
            } else {
                Phase::Busy
            };
        }
        match self.phase {
            Phase::Busy => std::hint::spin_loop(),
            Phase::Yielding => std::thread::yield_now(),
            Phase::Sleeping => {
                std::thread::sleep(self.sleep);
                let cap = match self.started {
                    // Nothing is due (a parked process): only `max` bounds the sleep.
                    _ if self.spin.is_zero() => self.max,
                    Some(started) => {
                        let waited = started.elapsed().as_secs_f64();
                        let balanced = (2.0 * WAKE_UP.as_secs_f64() * waited).sqrt();
                        Duration::from_secs_f64(balanced).clamp(NAP, self.max.max(NAP))
                    }
                    None => NAP,
                };
                self.sleep = (self.sleep * 2).min(cap);
            }
        }
    }
}

/// One end of a run's two communicators, with the receive buffer kept across messages.
struct Endpoint {
    /// Whole messages and announcements.
    inline: SimpleCommunicator,
    /// Bodies of announced messages.
    bulk: SimpleCommunicator,
    inbox: Vec<u8>,
}

/// Where a received message's bytes are.
enum Body {
    /// The first bytes of the endpoint's buffer.
    Inline(usize),
    /// A body that followed its announcement.
    Bulk(Vec<u8>),
}

impl Endpoint {
    /// `world` and a duplicate of it (a collective call: every rank makes it together).
    fn new(world: SimpleCommunicator) -> Self {
        let bulk = world.duplicate();
        Endpoint {
            inline: world,
            bulk,
            inbox: vec![0; INLINE],
        }
    }

    /// Waits for the next message from `from` (any worker when `None`): its sender, tag and body.
    fn receive(&mut self, from: Option<Rank>, backoff: Backoff) -> (Rank, Tag, Body) {
        let status = match from {
            Some(rank) => await_into(&self.inline.process_at_rank(rank), &mut self.inbox, backoff),
            None => await_into(&self.inline.any_process(), &mut self.inbox, backoff),
        };
        let (rank, tag) = (status.source_rank(), status.tag());
        if tag & FOLLOWS == 0 {
            let len = status.count(u8::equivalent_datatype());
            return (rank, tag, Body::Inline(usize::try_from(len).unwrap_or(0)));
        }
        // The body was sent right after its announcement: it is due at once.
        let tag = tag & !FOLLOWS;
        let mut backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(1));
        let source = self.bulk.process_at_rank(rank);
        let (bytes, _) = loop {
            if let Some(probed) = source.immediate_matched_probe_with_tag(tag) {
                break probed.matched_receive_vec::<u8>();
            }
            backoff.wait();
        };
        (rank, tag, Body::Bulk(bytes))
    }

    fn bytes<'a>(&'a self, body: &'a Body) -> &'a [u8] {
        match body {
            Body::Inline(len) => &self.inbox[..*len],
            Body::Bulk(bytes) => bytes,
        }
    }

    /// Sends `bytes` to `rank` now: synchronously (returning once the receiver has it) or as a
    /// standard send (returning once the buffer is free again).
    fn send(&self, rank: Rank, tag: Tag, bytes: &[u8], synchronous: bool) {
        let send = |comm: &SimpleCommunicator, tag, bytes: &[u8]| {
            let to = comm.process_at_rank(rank);
            if synchronous {
                to.synchronous_send_with_tag(bytes, tag);
            } else {
                to.send_with_tag(bytes, tag);
            }
        };
        if bytes.len() <= INLINE {
            send(&self.inline, tag, bytes);
        } else {
            send(&self.inline, tag | FOLLOWS, &[]);
            send(&self.bulk, tag, bytes);
        }
    }
}

/// Posts a receive into `inbox` and tests it until a message has arrived.
fn await_into(source: &impl Source, inbox: &mut [u8], mut backoff: Backoff) -> Status {
    mpi::request::scope(|scope| {
        let mut request = source.immediate_receive_into(scope, inbox);
        loop {
            match request.test() {
                Ok(status) => return status,
                Err(pending) => request = pending,
            }
            backoff.wait();
        }
    })
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

/// Encoded bytes being sent: the shared part is encoded once for every worker.
enum Outgoing {
    Own(Vec<u8>),
    Shared(Arc<[u8]>),
}

impl Outgoing {
    fn bytes(&self) -> &[u8] {
        match self {
            Outgoing::Own(bytes) => bytes,
            Outgoing::Shared(bytes) => bytes,
        }
    }
}

/// The master's end (rank 0).
pub(crate) struct MpiMaster<T, S, R> {
    end: Endpoint,
    protocol: Protocol,
    /// Async sends in progress, oldest first.
    posted: VecDeque<Posted>,
    /// Buffers of sent messages, kept to encode the next ones into.
    spare: Vec<Vec<u8>>,
    /// The shared part is encoded once per iteration, not once per worker: the iteration index
    /// (a varint), then the part.
    shared: Option<(Arc<S>, Arc<[u8]>)>,
    /// The task vector of the last chunk, emptied once encoded, for the next chunk.
    spare_tasks: Vec<T>,
    /// The results vector of the last answer, emptied once recovered, for the next answer.
    spare_results: Vec<R>,
    /// The workers' nodes, as the ranks told them.
    layout: Option<Layout>,
}

impl<T, S, R> MpiMaster<T, S, R> {
    pub(crate) fn new(
        world: SimpleCommunicator,
        protocol: Protocol,
        layout: Option<Layout>,
    ) -> Self {
        MpiMaster {
            layout,
            end: Endpoint::new(world),
            protocol,
            posted: VecDeque::new(),
            spare: Vec::new(),
            shared: None,
            spare_tasks: Vec::new(),
            spare_results: Vec::new(),
        }
    }

    /// Sends one message: under the sync protocol, returns once the worker has it; else posts it
    /// and returns at once.
    fn post(&mut self, rank: Rank, tag: Tag, bytes: Outgoing) {
        match self.protocol {
            Protocol::Sync => {
                self.end.send(rank, tag, bytes.bytes(), true);
                self.recycle(bytes);
            }
            Protocol::Async if bytes.bytes().len() <= INLINE => {
                let posted = Posted::send(&self.end.inline, rank, tag, bytes);
                self.posted.push_back(posted);
            }
            Protocol::Async => {
                let announce = Outgoing::Own(self.spare.pop().unwrap_or_default());
                let announce = Posted::send(&self.end.inline, rank, tag | FOLLOWS, announce);
                let body = Posted::send(&self.end.bulk, rank, tag, bytes);
                self.posted.extend([announce, body]);
            }
        }
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
}

impl<T: Message, S: Message, R: Message> MasterLink<T, S, R> for MpiMaster<T, S, R> {
    fn pool(&self) -> usize {
        (self.end.inline.size() - 1) as usize
    }

    fn layout(&self) -> Option<Layout> {
        self.layout.clone()
    }

    fn backend(&self) -> &'static str {
        "mpi"
    }

    fn send(&mut self, worker: usize, message: ToWorker<T, S>) -> Result<()> {
        let rank = Rank::try_from(worker + 1)
            .map_err(|_| Error::backend(format!("no worker {worker} in the pool")))?;
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
                        let bytes: Arc<[u8]> = bytes.into();
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
            ToWorker::Stop => (STOP, Outgoing::Own(self.spare.pop().unwrap_or_default())),
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
        self.reap();
        let backoff = Backoff::new(Duration::from_micros(200), Duration::from_millis(1));
        let (rank, tag, body) = self.end.receive(None, backoff);
        let bytes = self.end.bytes(&body);
        let worker = (rank - 1) as usize;
        let message = match tag {
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
            FINISHED => FromWorker::Finished {
                error: decode(bytes)?,
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
        };
        Ok((worker, message))
    }
}

/// A worker's end (ranks 1 and up).
pub(crate) struct MpiWorker<T, R> {
    end: Endpoint,
    protocol: Protocol,
    /// The master answers soon (we just returned a chunk or got the shared part): spin first.
    expecting: bool,
    /// The buffer answers are encoded into, kept across messages (unless large).
    outbox: Vec<u8>,
    _messages: PhantomData<fn(T) -> R>,
}

impl<T, R> MpiWorker<T, R> {
    pub(crate) fn new(world: SimpleCommunicator, protocol: Protocol) -> Self {
        MpiWorker {
            end: Endpoint::new(world),
            protocol,
            expecting: false,
            outbox: Vec::new(),
            _messages: PhantomData,
        }
    }

    /// Encodes `message` and sends it to the master by the protocol.
    fn send_encoded(&mut self, tag: Tag, message: &impl Message) {
        self.outbox.clear();
        message.encode(&mut self.outbox);
        let synchronous = self.protocol == Protocol::Sync;
        self.end.send(0, tag, &self.outbox, synchronous);
        if self.outbox.capacity() > INLINE {
            self.outbox = Vec::new();
        }
    }
}

impl<T: Message, S: Message, R: Message> WorkerLink<T, S, R> for MpiWorker<T, R> {
    fn recv(&mut self) -> Option<ToWorker<T, S>> {
        let backoff = if self.expecting {
            Backoff::new(Duration::from_millis(1), Duration::from_millis(1))
        } else {
            // Parked: nothing is due, so sleep right away (up to 5 ms between tests).
            Backoff::new(Duration::ZERO, Duration::from_millis(5))
        };
        let (_, tag, body) = self.end.receive(Some(0), backoff);
        let bytes = self.end.bytes(&body);
        let message = match tag {
            SHARED => decode_shared(bytes),
            CHUNK => decode::<Chunk<T>>(bytes).map(ToWorker::Chunk),
            STOP => Ok(ToWorker::Stop),
            other => {
                let reason = format!("unknown message tag {other} from the master");
                self.send_encoded(FATAL, &reason);
                return None;
            }
        };
        match message {
            Ok(message) => {
                self.expecting = matches!(message, ToWorker::Shared { .. });
                Some(message)
            }
            Err(e) => {
                self.send_encoded(FATAL, &e.to_string());
                None
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
        }
        true
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
    let _universe = if mpi::environment::is_initialized() {
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
        return Err(Error::config(
            "error: the MPI backend needs a master and at least one worker, but 1 process was \
             launched",
            "launch 2 or more processes, e.g. `mpirun -np 5 ...`, or run on threads with \
             `--backend local`",
        ));
    }
    let rank = world.rank() as usize;
    let layout = layout::gather(&world);
    if rank == 0 {
        if let Some(max) = config.max_workers.filter(|&m| m != size - 1) {
            eprintln!(
                "warning: --max-workers {max} is ignored under MPI: the pool is the {} launched \
                 worker ranks",
                size - 1
            );
        }
        let mut link = MpiMaster::new(world, config.protocol, layout);
        let outcome = guarded(|| run_master(&mut master(), &mut link, config, app));
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
        outcome.map(Some)
    } else {
        let setup = crate::app::WorkerSetup {
            index: rank - 1,
            pool: size - 1,
            backend: "mpi",
        };
        let mut link = MpiWorker::new(world, config.protocol);
        crate::engine::worker::serve(&worker, &setup, &config.load, &mut link);
        Ok(None)
    }
}
