//! The MPI backend: rank 0 is the master, ranks `1..P` the workers; messages are the codec's bytes.
//!
//! `sync` sends with `MPI_Ssend`, one at a time. `async` posts `MPI_Isend`s for everything the
//! engine sends before it next waits for an answer, and completes them together — so the model's
//! two branches describe what really happens.
//!
//! Nobody waits in a blocking receive: Open MPI's busy-polls a core, which would steal it from the
//! workers on an oversubscribed node. Waiting processes probe (`MPI_Improbe`), spinning briefly
//! when an answer is due soon and sleeping with exponential backoff otherwise, so parked workers
//! cost next to nothing.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpi::Tag;
use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::topology::{Communicator, Rank, SimpleCommunicator};

use super::{Chunk, Failed, FromWorker, MasterLink, ToWorker, WorkerLink};
use crate::codec::{self, DecodeError, DecodeErrorKind, Message, Reader};
use crate::config::Protocol;
use crate::error::{Error, Result};

const SHARED: Tag = 1;
const CHUNK: Tag = 2;
const STOP: Tag = 3;
const READY: Tag = 11;
const DONE: Tag = 12;
const FAILED: Tag = 13;
const FINISHED: Tag = 14;
/// A worker could not decode what the master sent: the run cannot go on.
const FATAL: Tag = 15;

/// Waits between probes: busy for the first microseconds (answers on a node come back that
/// fast), then yielding the core until `spin` has passed, then sleeping, doubling up to `max`.
struct Backoff {
    started: Instant,
    spin: Duration,
    sleep: Duration,
    max: Duration,
}

/// How long a probe loop stays busy before it starts yielding the core.
const BUSY: Duration = Duration::from_micros(20);

impl Backoff {
    fn new(spin: Duration, max: Duration) -> Self {
        Backoff {
            started: Instant::now(),
            spin,
            sleep: Duration::from_micros(10),
            max,
        }
    }

    fn wait(&mut self) {
        let waited = self.started.elapsed();
        if waited < BUSY.min(self.spin) {
            std::hint::spin_loop();
        } else if waited < self.spin {
            std::thread::yield_now();
        } else {
            std::thread::sleep(self.sleep);
            self.sleep = (self.sleep * 2).min(self.max);
        }
    }
}

/// Probes `source` until a message arrives, then receives it whole.
fn receive(source: &impl Source, mut backoff: Backoff) -> (Vec<u8>, Rank, Tag) {
    loop {
        if let Some(probed) = source.immediate_matched_probe() {
            let (bytes, status) = probed.matched_receive_vec::<u8>();
            return (bytes, status.source_rank(), status.tag());
        }
        backoff.wait();
    }
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

/// The master's end (rank 0).
pub(crate) struct MpiMaster<S> {
    world: SimpleCommunicator,
    protocol: Protocol,
    /// Async sends waiting to be posted together.
    queued: Vec<(Rank, Tag, Arc<[u8]>)>,
    /// The shared part is encoded once per iteration, not once per worker: the iteration index
    /// (a varint), then the part.
    shared: Option<(Arc<S>, Arc<[u8]>)>,
}

impl<S> MpiMaster<S> {
    pub(crate) fn new(world: SimpleCommunicator, protocol: Protocol) -> Self {
        MpiMaster {
            world,
            protocol,
            queued: Vec::new(),
            shared: None,
        }
    }

    /// Posts every queued send and waits until all have completed.
    fn flush(&mut self) {
        if self.queued.is_empty() {
            return;
        }
        let queued = std::mem::take(&mut self.queued);
        let world = &self.world;
        if let [(rank, tag, bytes)] = &queued[..] {
            // One message: a standard send completes as soon as the buffer is reusable, which is
            // what posting and waiting would do, for less.
            world.process_at_rank(*rank).send_with_tag(&bytes[..], *tag);
            return;
        }
        mpi::request::scope(|scope| {
            let requests: Vec<_> = queued
                .iter()
                .map(|(rank, tag, bytes)| {
                    world
                        .process_at_rank(*rank)
                        .immediate_send_with_tag(scope, &bytes[..], *tag)
                })
                .collect();
            for request in requests {
                request.wait();
            }
        });
    }
}

impl<T: Message, S: Message, R: Message> MasterLink<T, S, R> for MpiMaster<S> {
    fn pool(&self) -> usize {
        (self.world.size() - 1) as usize
    }

    fn backend(&self) -> &'static str {
        "mpi"
    }

    fn send(&mut self, worker: usize, message: ToWorker<T, S>) -> Result<()> {
        let (tag, bytes): (Tag, Arc<[u8]>) = match message {
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
                (SHARED, bytes)
            }
            ToWorker::Chunk(chunk) => (CHUNK, codec::encode(&chunk).into()),
            ToWorker::Stop => (STOP, Arc::from([])),
        };
        let rank = Rank::try_from(worker + 1)
            .map_err(|_| Error::backend(format!("no worker {worker} in the pool")))?;
        match self.protocol {
            Protocol::Sync => self
                .world
                .process_at_rank(rank)
                .synchronous_send_with_tag(&bytes[..], tag),
            Protocol::Async => self.queued.push((rank, tag, bytes)),
        }
        Ok(())
    }

    fn recv(&mut self) -> Result<(usize, FromWorker<T, R>)> {
        self.flush();
        let backoff = Backoff::new(Duration::from_micros(200), Duration::from_micros(100));
        let (bytes, rank, tag) = receive(&self.world.any_process(), backoff);
        let worker = (rank - 1) as usize;
        let message = match tag {
            READY => FromWorker::Ready {
                error: decode(&bytes)?,
            },
            DONE => FromWorker::Done(decode(&bytes)?),
            FAILED => FromWorker::Failed(decode(&bytes)?),
            FINISHED => FromWorker::Finished {
                error: decode(&bytes)?,
            },
            FATAL => {
                let reason: String = decode(&bytes)?;
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
    world: SimpleCommunicator,
    protocol: Protocol,
    /// The master answers soon (we just returned a chunk or got the shared part): spin first.
    expecting: bool,
    _messages: PhantomData<fn(T) -> R>,
}

impl<T, R> MpiWorker<T, R> {
    pub(crate) fn new(world: SimpleCommunicator, protocol: Protocol) -> Self {
        MpiWorker {
            world,
            protocol,
            expecting: false,
            _messages: PhantomData,
        }
    }

    fn send_bytes(&self, tag: Tag, bytes: &[u8]) {
        let master = self.world.process_at_rank(0);
        match self.protocol {
            Protocol::Sync => master.synchronous_send_with_tag(bytes, tag),
            Protocol::Async => master.send_with_tag(bytes, tag),
        }
    }
}

impl<T: Message, S: Message, R: Message> WorkerLink<T, S, R> for MpiWorker<T, R> {
    fn recv(&mut self) -> Option<ToWorker<T, S>> {
        let backoff = if self.expecting {
            Backoff::new(Duration::from_millis(1), Duration::from_millis(1))
        } else {
            // Parked: nothing is due, so sleep right away (up to 5 ms between probes).
            Backoff::new(Duration::ZERO, Duration::from_millis(5))
        };
        let (bytes, _, tag) = receive(&self.world.process_at_rank(0), backoff);
        let message = match tag {
            SHARED => decode_shared(&bytes),
            CHUNK => decode::<Chunk<T>>(&bytes).map(ToWorker::Chunk),
            STOP => Ok(ToWorker::Stop),
            other => {
                let reason = format!("unknown message tag {other} from the master");
                self.send_bytes(FATAL, &codec::encode(&reason));
                return None;
            }
        };
        match message {
            Ok(message) => {
                self.expecting = matches!(message, ToWorker::Shared { .. });
                Some(message)
            }
            Err(e) => {
                self.send_bytes(FATAL, &codec::encode(&e.to_string()));
                None
            }
        }
    }

    fn send(&mut self, message: FromWorker<T, R>) -> bool {
        let (tag, bytes) = match &message {
            FromWorker::Ready { error } => (READY, codec::encode(error)),
            FromWorker::Done(done) => (DONE, codec::encode(done)),
            FromWorker::Failed(failed) => (FAILED, codec::encode(failed)),
            FromWorker::Finished { error } => (FINISHED, codec::encode(error)),
        };
        self.expecting = matches!(message, FromWorker::Done(_) | FromWorker::Ready { .. });
        self.send_bytes(tag, &bytes);
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
    if rank == 0 {
        if let Some(max) = config.max_workers.filter(|&m| m != size - 1) {
            eprintln!(
                "warning: --max-workers {max} is ignored under MPI: the pool is the {} launched \
                 worker ranks",
                size - 1
            );
        }
        let mut link = MpiMaster::new(world, config.protocol);
        let mut master = master();
        crate::engine::master::run_master(&mut master, &mut link, config, app).map(Some)
    } else {
        let setup = crate::app::WorkerSetup {
            index: rank - 1,
            pool: size - 1,
            backend: "mpi",
        };
        let mut link = MpiWorker::new(world, config.protocol);
        crate::engine::worker::serve(worker, &setup, &config.load, &mut link);
        Ok(None)
    }
}
