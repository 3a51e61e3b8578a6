//! The local backend: one thread per worker, values moved through channels (never encoded),
//! optionally through an emulated network ([`super::wire`]): each message then carries the time
//! it is due, and its receiver sleeps until then. There an answer also carries the runtime's own
//! time in its chunk's round trip, which the link did not charge (`Done::hop_ns`): the worker's
//! from its chunk's due time to its answer, less `do_work`, and the master's from the answer's
//! due time to its delivery. A thread wakes tens of microseconds after a message is due, as
//! much as the latencies emulated: left in, the fit of `mo` read the link's latency 5–20 %
//! high, by as much as the machine was busy.
//!
//! Messages go through unbounded channels. Under `async` a send returns at once, so sends
//! overlap (like `MPI_Isend`); under `sync` it returns once the receiver has taken the message
//! (like `MPI_Ssend`), which the receiver acknowledges on a channel of its own ([`Handshake`]).
//! A receiver looks at its channel for up to 50 µs, yielding the core, before it blocks: with
//! short tasks, waking a blocked thread cost more than the task, and made runs of empty tasks
//! vary fourfold from one to the next. Rendezvous channels (capacity 0) would have made every
//! synchronous send block until its receiver came and woke it: a wake-up per message, which
//! held `sync` to about 16 k chunks/s on empty tasks; a sender waits for its acknowledgement
//! the way a receiver waits for a message.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError, unbounded};

use super::wire::{Sleeper, Wire};
use super::{Chunk, FromWorker, MasterLink, SentBuffers, SentChunk, ToWorker, WorkerLink};
use crate::clock::Instant;
use crate::codec::Message;
use crate::config::{EmulatedLink, Protocol};
use crate::error::{Error, Result};
use crate::layout::Layout;

/// How long a receiver looks for a message before it blocks on the channel.
const LOOK_AGAIN: Duration = Duration::from_micros(50);

/// A message and, on an emulated network, when it arrives.
type Timed<M> = (Option<Instant>, M);

/// Under `sync`, one side of the acknowledgements between the master and a worker: every
/// message taken is acknowledged to its sender, whose send completes with the acknowledgement.
#[derive(Debug)]
struct Handshake {
    /// Acknowledgements of the messages this side sent.
    taken: Receiver<()>,
    /// Where this side acknowledges the messages it takes.
    take: Sender<()>,
    /// Messages sent and not yet acknowledged (a `Stop` not taken in time stays owed).
    owed: usize,
}

impl Handshake {
    /// Both sides of one master–worker pair: the master's, the worker's.
    fn pair() -> (Handshake, Handshake) {
        let (to_master, master_taken) = unbounded();
        let (to_worker, worker_taken) = unbounded();
        let side = |taken, take| Handshake {
            taken,
            take,
            owed: 0,
        };
        (side(master_taken, to_worker), side(worker_taken, to_master))
    }

    /// Waits until every message sent is taken, or until `deadline`; `false` on the deadline.
    /// A peer gone takes nothing more: its messages count as taken.
    fn settle(&mut self, deadline: Option<Instant>) -> bool {
        self.owed += 1;
        while self.owed > 0 {
            match receive_until(&self.taken, deadline) {
                Ok(()) => self.owed -= 1,
                Err(RecvTimeoutError::Timeout) => return false,
                Err(RecvTimeoutError::Disconnected) => self.owed = 0,
            }
        }
        true
    }

    /// Tells the sender its message was taken (a sender gone needs no answer).
    fn acknowledge(&self) {
        let _ = self.take.send(());
    }
}

/// The emulated network: the master's link out and its link back.
#[derive(Debug)]
struct Network {
    out: Wire,
    back: Wire,
}

/// The master's end: one inbox per worker, one shared channel back.
#[derive(Debug)]
pub(crate) struct LocalMaster<T, S, R> {
    to_workers: Vec<Sender<Timed<ToWorker<T, S>>>>,
    from_workers: Receiver<Timed<(usize, FromWorker<T, R>)>>,
    network: Option<Arc<Network>>,
    /// By worker, under `sync`.
    handshakes: Option<Vec<Handshake>>,
    sleeper: Sleeper,
    /// On an emulated network, when the last message sent was handed to it.
    handed: Option<Instant>,
    /// Workers the master gave up on: nothing is sent to them, what they send is dropped.
    forsaken: Vec<bool>,
    /// Chunks travel as values; the master's encoded copies are kept in these buffers.
    sent: SentBuffers,
}

/// A worker's end. Dropped before the worker said `Finished` (its thread ended some other
/// way), it tells the master the worker is lost, as a dead process's transport would.
#[derive(Debug)]
pub(crate) struct LocalWorker<T, S, R> {
    index: usize,
    inbox: Receiver<Timed<ToWorker<T, S>>>,
    to_master: Sender<Timed<(usize, FromWorker<T, R>)>>,
    network: Option<Arc<Network>>,
    /// Under `sync`.
    handshake: Option<Handshake>,
    sleeper: Sleeper,
    /// On an emulated network, when the last message taken was due.
    due: Option<Instant>,
    finished: bool,
}

impl<T, S, R> Drop for LocalWorker<T, S, R> {
    fn drop(&mut self) {
        if !self.finished {
            // Dropping the acknowledgements first lets a master waiting on a synchronous send
            // to this worker go on (and learn it is gone) instead of waiting for it forever.
            self.handshake = None;
            self.inbox = crossbeam_channel::never();
            let why = "its thread ended without finishing".to_owned();
            let lost = (None, (self.index, FromWorker::Lost { why }));
            let _ = self.to_master.send(lost);
        }
    }
}

/// How long a synchronous `Stop` waits for its worker to take it.
const STOP_HANDOVER: Duration = Duration::from_millis(100);

/// Both ends of a local pool.
pub(crate) type Pool<T, S, R> = (LocalMaster<T, S, R>, Vec<LocalWorker<T, S, R>>);

/// Channels for a master and `pool` workers, through `link` when one is emulated.
pub(crate) fn connect<T, S, R>(
    pool: usize,
    protocol: Protocol,
    link: Option<EmulatedLink>,
) -> Pool<T, S, R> {
    let network = link.map(|link| {
        Arc::new(Network {
            out: Wire::new(&link),
            back: Wire::new(&link),
        })
    });
    let sync = protocol == Protocol::Sync;
    let (to_master, from_workers) = unbounded();
    let mut handshakes = Vec::new();
    let (to_workers, workers) = (0..pool)
        .map(|index| {
            let (tx, inbox) = unbounded();
            let handshake = sync.then(|| {
                let (master_side, worker_side) = Handshake::pair();
                handshakes.push(master_side);
                worker_side
            });
            let worker = LocalWorker {
                index,
                inbox,
                to_master: to_master.clone(),
                network: network.clone(),
                handshake,
                sleeper: Sleeper::default(),
                due: None,
                finished: false,
            };
            (tx, worker)
        })
        .unzip();
    (
        LocalMaster {
            to_workers,
            from_workers,
            network,
            handshakes: sync.then_some(handshakes),
            sleeper: Sleeper::default(),
            handed: None,
            forsaken: vec![false; pool],
            sent: SentBuffers::default(),
        },
        workers,
    )
}

impl<T: Message, S: Message, R: Message> MasterLink<T, S, R> for LocalMaster<T, S, R> {
    fn pool(&self) -> usize {
        self.to_workers.len()
    }

    /// Threads of one process: one node, the cores the process may use.
    fn layout(&self) -> Option<Layout> {
        let cores = std::thread::available_parallelism().ok()?;
        Some(Layout::one_node(cores.get()))
    }

    fn backend(&self) -> &'static str {
        "local"
    }

    fn send(&mut self, worker: usize, message: ToWorker<T, S>) -> Result<()> {
        if self.forsaken.get(worker) == Some(&true) {
            return Ok(());
        }
        let inbox = self
            .to_workers
            .get(worker)
            .ok_or_else(|| Error::backend(format!("no worker {worker} in the pool")))?;
        let due = self.network.as_ref().map(|n| {
            let now = crate::clock::now();
            self.handed = Some(now);
            n.out.due(to_worker_len(&message), now)
        });
        let stop = matches!(message, ToWorker::Stop);
        if inbox.send((due, message)).is_err() {
            // Its thread ended: it says so itself (`FromWorker::Lost`), and the message is
            // dropped as a dead process's would be.
            return Ok(());
        }
        let Some(handshake) = self.handshakes.as_mut().and_then(|h| h.get_mut(worker)) else {
            return Ok(());
        };
        // A worker busy with a chunk (or hung in one) takes no `Stop` until it is done: the
        // master then waits for its `Finished`, bounded, rather than in this send.
        let deadline = stop.then(|| crate::clock::now() + STOP_HANDOVER);
        if !handshake.settle(deadline) {
            return Ok(());
        }
        if let Some(due) = due {
            // A synchronous send completes once the message is delivered.
            self.sleeper.until(due);
        }
        Ok(())
    }

    fn send_chunk(&mut self, worker: usize, chunk: Chunk<T>) -> Result<SentChunk> {
        let sent = self.sent.encode(&chunk);
        self.send(worker, ToWorker::Chunk(chunk))?;
        Ok(sent)
    }

    fn reclaim(&mut self, sent: SentChunk) {
        self.sent.keep(sent);
    }

    fn handed(&self) -> Option<Instant> {
        self.handed
    }

    fn recv(&mut self) -> Result<(usize, FromWorker<T, R>)> {
        loop {
            let (due, message) = receive(&self.from_workers)
                .ok_or_else(|| Error::backend("every worker exited unexpectedly"))?;
            if let Some(message) = self.arrived(due, message) {
                return Ok(message);
            }
        }
    }

    fn recv_within(&mut self, timeout: Duration) -> Result<Option<(usize, FromWorker<T, R>)>> {
        let deadline = crate::clock::now() + timeout;
        loop {
            let (due, message) = match receive_until(&self.from_workers, Some(deadline)) {
                Ok(timed) => timed,
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::backend("every worker exited unexpectedly"));
                }
            };
            if let Some(message) = self.arrived(due, message) {
                return Ok(Some(message));
            }
        }
    }

    fn forsake(&mut self, worker: usize) {
        if let Some(f) = self.forsaken.get_mut(worker) {
            *f = true;
        }
    }
}

impl<T, S, R> LocalMaster<T, S, R> {
    /// The workers the master gave up on: their threads may never end.
    pub(crate) fn forsaken_workers(&self) -> Vec<usize> {
        (0..self.forsaken.len())
            .filter(|&w| self.forsaken[w])
            .collect()
    }

    /// A message taken from the channel, once it is due; `None` when it comes from a worker the
    /// master gave up on.
    fn arrived(
        &mut self,
        due: Option<Instant>,
        message: (usize, FromWorker<T, R>),
    ) -> Option<(usize, FromWorker<T, R>)> {
        if let Some(handshake) = self.handshakes.as_ref().and_then(|h| h.get(message.0)) {
            handshake.acknowledge();
        }
        if self.forsaken.get(message.0) == Some(&true) {
            return None;
        }
        let Some(due) = due else {
            return Some(message);
        };
        self.sleeper.until(due);
        let mut message = message;
        if let (_, FromWorker::Done(done)) = &mut message {
            let late = signed_ns(crate::clock::now(), due);
            done.hop_ns = done.hop_ns.map(|hop| hop + late);
        }
        Some(message)
    }
}

impl<T: Message, S: Message, R: Message> WorkerLink<T, S, R> for LocalWorker<T, S, R> {
    fn recv(&mut self) -> Option<ToWorker<T, S>> {
        let (due, message) = receive(&self.inbox)?;
        if let Some(handshake) = &self.handshake {
            handshake.acknowledge();
        }
        if let Some(due) = due {
            self.sleeper.until(due);
        }
        self.due = due;
        Some(message)
    }

    fn send(&mut self, mut message: FromWorker<T, R>) -> bool {
        self.finished |= matches!(message, FromWorker::Finished { .. });
        let due = self.network.as_ref().map(|n| {
            let now = crate::clock::now();
            // An answer is to the chunk taken last: what its worker did besides `do_work`
            // since that chunk was due.
            if let (FromWorker::Done(done), Some(chunk_due)) = (&mut message, self.due) {
                let busy = i64::try_from(done.busy_ns).unwrap_or(i64::MAX);
                done.hop_ns = Some(signed_ns(now, chunk_due).saturating_sub(busy));
            }
            n.back.due(from_worker_len(&message), now)
        });
        let sent = self.to_master.send((due, (self.index, message))).is_ok();
        if let (true, Some(handshake)) = (sent, &mut self.handshake) {
            handshake.settle(None);
            if let Some(due) = due {
                self.sleeper.until(due);
            }
        }
        sent
    }
}

/// `later − earlier` in ns, negative when `later` came first.
fn signed_ns(later: Instant, earlier: Instant) -> i64 {
    let ns = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
    match later.checked_duration_since(earlier) {
        Some(after) => ns(after),
        None => -ns(earlier.saturating_duration_since(later)),
    }
}

/// Bytes of a message to a worker as the MPI backend would send it (a tag byte and the
/// iteration besides the payloads).
fn to_worker_len<T: Message, S: Message>(message: &ToWorker<T, S>) -> usize {
    1 + match message {
        ToWorker::Shared { part, .. } => 8 + part.encoded_len(),
        ToWorker::Chunk(chunk) => chunk.encoded_len(),
        ToWorker::Stop => 0,
    }
}

/// Bytes of a message to the master, likewise.
fn from_worker_len<T: Message, R: Message>(message: &FromWorker<T, R>) -> usize {
    1 + match message {
        FromWorker::Ready { error } | FromWorker::Finished { error } => {
            1 + error.as_ref().map_or(0, |e| 8 + e.len())
        }
        FromWorker::Done(done) => done.encoded_len(),
        FromWorker::Failed(failed) => 16 + failed.tasks.encoded_len() + failed.message.len(),
        FromWorker::Lost { .. } => 0,
    }
}

/// The next message, `None` once every sender is gone. Messages between master and workers
/// usually come within microseconds of each other, and a parked thread takes tens of them to
/// wake: the channel is looked at again for a while, yielding the core, before the thread blocks.
fn receive<M>(channel: &Receiver<M>) -> Option<M> {
    receive_until(channel, None).ok()
}

/// The next message, waiting until `deadline` at most (for ever without one), looking at the
/// channel for a while before blocking as [`receive`] does.
fn receive_until<M>(
    channel: &Receiver<M>,
    deadline: Option<Instant>,
) -> std::result::Result<M, RecvTimeoutError> {
    let started = crate::clock::now();
    for attempt in 1u32.. {
        match channel.try_recv() {
            Ok(message) => return Ok(message),
            Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) => {}
        }
        if attempt % 16 == 0 && crate::clock::since(started) > LOOK_AGAIN {
            break;
        }
        std::thread::yield_now();
    }
    match deadline {
        Some(deadline) => {
            let left = deadline.saturating_duration_since(crate::clock::now());
            channel.recv_timeout(left)
        }
        None => channel.recv().map_err(|_| RecvTimeoutError::Disconnected),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::{Chunk, Done};

    /// A chunk's round trip over an emulated link whose worker spends `held` besides `do_work`
    /// before it answers: the answer's `hop_ns`, and the trip from the hand-off to delivery.
    fn round_trip(held: Duration) -> (Option<i64>, Duration) {
        let link = EmulatedLink {
            latency_ms: 0.5,
            bandwidth_mbit: None,
        };
        let (mut master, mut workers) = connect::<u32, (), u32>(1, Protocol::Async, Some(link));
        let mut worker = workers.pop().expect("one worker");
        let chunk = Chunk {
            id: 0,
            first: 0,
            tasks: vec![1],
        };
        master.send(0, ToWorker::Chunk(chunk)).expect("sent");
        let handed = master
            .handed()
            .expect("an emulated link says when it took the chunk");
        let answering = std::thread::spawn(move || {
            let Some(ToWorker::Chunk(chunk)) = worker.recv() else {
                return;
            };
            std::thread::sleep(held);
            let done = Done {
                chunk: chunk.id,
                results: chunk.tasks,
                failed: Vec::new(),
                busy_ns: 0,
                cpu_ns: None,
                wait_ns: None,
                late_ns: None,
                task_ms: Default::default(),
                began: None,
                hop_ns: None,
            };
            worker.send(FromWorker::Done(done));
        });
        let answer = master.recv().expect("answered");
        let trip = crate::clock::since(handed);
        answering.join().expect("the worker's thread");
        match answer {
            (0, FromWorker::Done(done)) => (done.hop_ns, trip),
            (_, other) => panic!("not an answer: {other:?}"),
        }
    }

    #[test]
    fn an_answer_carries_the_time_the_link_did_not_charge() {
        let held = Duration::from_millis(3);
        let (hop, trip) = round_trip(held);
        let hop = Duration::from_nanos(u64::try_from(hop.expect("measured")).expect("positive"));
        // The worker's 3 ms are in it, and what is left of the trip is the link's 2 × 0.5 ms:
        // how late each thread woke is in the hop too (the bound leaves room for the thread
        // to be preempted between its delivery and the clock read here).
        assert!(hop >= held, "{hop:?}");
        let link = trip.saturating_sub(hop);
        let off = link.abs_diff(Duration::from_millis(1));
        assert!(off < Duration::from_micros(500), "{link:?} of {trip:?}");
    }

    #[test]
    fn without_a_link_nothing_is_measured() {
        let (master, _) = connect::<u32, (), u32>(1, Protocol::Async, None);
        assert_eq!(master.handed(), None);
    }

    #[test]
    fn signed_differences_of_instants() {
        let early = crate::clock::now();
        let late = early + Duration::from_micros(5);
        assert_eq!(signed_ns(late, early), 5_000);
        assert_eq!(signed_ns(early, late), -5_000);
    }
}
