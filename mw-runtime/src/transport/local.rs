//! The local backend: one thread per worker, values moved through channels (never encoded).
//! The threads share the master's clock: an answer carries, beside the message, when its worker
//! sent it, from which the master's end tells the trace when `do_work` began ([`Stamps`]). An
//! emulated network (`--link-latency`) is a layer around these ends (`emulate/`), not part of
//! them.
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

use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError, unbounded};

use super::{Chunk, FromWorker, MasterLink, SentBuffers, SentChunk, Stamps, ToWorker, WorkerLink};
use crate::clock::Instant;
use crate::codec::Message;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::protocol::Protocol;

/// How long a receiver looks for a message before it blocks on the channel.
const LOOK_AGAIN: Duration = Duration::from_micros(50);

/// An answer from a worker and, for a chunk's results, when the worker sent it.
type Sent<M> = (Option<Instant>, M);

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

/// The master's end: one inbox per worker, one shared channel back.
#[derive(Debug)]
pub(crate) struct LocalMaster<T, S, R> {
    to_workers: Vec<Sender<ToWorker<T, S>>>,
    from_workers: Receiver<Sent<(usize, FromWorker<T, R>)>>,
    /// By worker, under `sync`.
    handshakes: Option<Vec<Handshake>>,
    /// Of the answer received last.
    stamps: Stamps,
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
    inbox: Receiver<ToWorker<T, S>>,
    to_master: Sender<Sent<(usize, FromWorker<T, R>)>>,
    /// Under `sync`.
    handshake: Option<Handshake>,
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

/// Channels for a master and `pool` workers.
pub(crate) fn connect<T, S, R>(pool: usize, protocol: Protocol) -> Pool<T, S, R> {
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
                handshake,
                finished: false,
            };
            (tx, worker)
        })
        .unzip();
    (
        LocalMaster {
            to_workers,
            from_workers,
            handshakes: sync.then_some(handshakes),
            stamps: Stamps::default(),
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
        let stop = matches!(message, ToWorker::Stop);
        if inbox.send(message).is_err() {
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
        handshake.settle(deadline);
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

    fn stamps(&self) -> Stamps {
        self.stamps
    }

    fn recv(&mut self) -> Result<(usize, FromWorker<T, R>)> {
        loop {
            let (sent, message) = receive(&self.from_workers)
                .ok_or_else(|| Error::backend("every worker exited unexpectedly"))?;
            if let Some(message) = self.arrived(sent, message) {
                return Ok(message);
            }
        }
    }

    fn recv_within(&mut self, timeout: Duration) -> Result<Option<(usize, FromWorker<T, R>)>> {
        let deadline = crate::clock::now() + timeout;
        loop {
            let (sent, message) = match receive_until(&self.from_workers, Some(deadline)) {
                Ok(timed) => timed,
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::backend("every worker exited unexpectedly"));
                }
            };
            if let Some(message) = self.arrived(sent, message) {
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

    /// A message taken from the channel, which its worker sent at `sent`; `None` when it comes
    /// from a worker the master gave up on.
    fn arrived(
        &mut self,
        sent: Option<Instant>,
        message: (usize, FromWorker<T, R>),
    ) -> Option<(usize, FromWorker<T, R>)> {
        if let Some(handshake) = self.handshakes.as_ref().and_then(|h| h.get(message.0)) {
            handshake.acknowledge();
        }
        if self.forsaken.get(message.0) == Some(&true) {
            return None;
        }
        // The worker's slice ends when it sent the answer: `do_work` began `busy_ns` before.
        self.stamps.began = match (&message.1, sent) {
            (FromWorker::Done(done), Some(sent)) => {
                sent.checked_sub(Duration::from_nanos(done.busy_ns))
            }
            _ => None,
        };
        Some(message)
    }
}

impl<T: Message, S: Message, R: Message> WorkerLink<T, S, R> for LocalWorker<T, S, R> {
    fn recv(&mut self) -> Option<ToWorker<T, S>> {
        let message = receive(&self.inbox)?;
        if let Some(handshake) = &self.handshake {
            handshake.acknowledge();
        }
        Some(message)
    }

    fn send(&mut self, message: FromWorker<T, R>) -> bool {
        self.finished |= matches!(message, FromWorker::Finished { .. });
        let stamp = matches!(message, FromWorker::Done(_)).then(crate::clock::now);
        let sent = self.to_master.send((stamp, (self.index, message))).is_ok();
        if let (true, Some(handshake)) = (sent, &mut self.handshake) {
            handshake.settle(None);
        }
        sent
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

    #[test]
    fn an_answer_says_when_do_work_began_on_the_masters_clock() {
        let (mut master, mut workers) = connect::<u32, (), u32>(1, Protocol::Async);
        let mut worker = workers.pop().expect("one worker");
        let chunk = Chunk {
            id: 0,
            first: 0,
            tasks: vec![1],
        };
        master.send(0, ToWorker::Chunk(chunk)).expect("sent");
        let Some(ToWorker::Chunk(chunk)) = worker.recv() else {
            panic!("no chunk");
        };
        let began = crate::clock::now();
        std::thread::sleep(Duration::from_millis(2));
        let busy_ns = u64::try_from(crate::clock::since(began).as_nanos()).expect("short");
        let done = Done {
            chunk: chunk.id,
            results: chunk.tasks,
            failed: Vec::new(),
            busy_ns,
            cpu_ns: None,
            wait_ns: None,
            late_ns: None,
            task_ms: Default::default(),
        };
        assert!(worker.send(FromWorker::Done(done)));
        assert!(matches!(master.recv(), Ok((0, FromWorker::Done(_)))));
        let stamped = master.stamps().began.expect("the threads share the clock");
        // The slice ends when the answer left: no earlier than `do_work` began, and later by
        // the worker's few steps between the end of `do_work` and its send.
        let after = stamped.saturating_duration_since(began);
        assert!(
            stamped >= began && after < Duration::from_millis(1),
            "{after:?}"
        );
        assert_eq!(master.stamps().unbilled_ns, None);
        // A message other than results says nothing of `do_work`.
        assert!(worker.send(FromWorker::Finished { error: None }));
        master.recv().expect("finished");
        assert_eq!(master.stamps(), Stamps::default());
    }
}
