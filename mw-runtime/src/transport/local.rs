//! The local backend: one thread per worker, values moved through channels (never encoded),
//! optionally through an emulated network ([`super::wire`]): each message then carries the time
//! it is due, and its receiver sleeps until then.
//!
//! `sync` uses rendezvous channels, so a send returns only once the receiver has taken the
//! message (like `MPI_Ssend`); `async` uses unbounded channels, so sends return at once and
//! overlap (like `MPI_Isend`). A receiver looks at its channel for up to 50 µs, yielding the
//! core, before it blocks: with short tasks, waking a blocked thread cost more than the task,
//! and made runs of empty tasks vary fourfold from one to the next.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError, bounded, unbounded};

use super::wire::{Sleeper, Wire};
use super::{FromWorker, MasterLink, ToWorker, WorkerLink};
use crate::clock::Instant;
use crate::codec::Message;
use crate::config::{EmulatedLink, Protocol};
use crate::error::{Error, Result};
use crate::tuning::Layout;

/// How long a receiver looks for a message before it blocks on the channel.
const LOOK_AGAIN: Duration = Duration::from_micros(50);

/// A message and, on an emulated network, when it arrives.
type Timed<M> = (Option<Instant>, M);

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
    sync: bool,
    sleeper: Sleeper,
    /// Workers the master gave up on: nothing is sent to them, what they send is dropped.
    forsaken: Vec<bool>,
}

/// A worker's end. Dropped before the worker said `Finished` (its thread ended some other
/// way), it tells the master the worker is lost, as a dead process's transport would.
#[derive(Debug)]
pub(crate) struct LocalWorker<T, S, R> {
    index: usize,
    inbox: Receiver<Timed<ToWorker<T, S>>>,
    to_master: Sender<Timed<(usize, FromWorker<T, R>)>>,
    network: Option<Arc<Network>>,
    sync: bool,
    sleeper: Sleeper,
    finished: bool,
}

impl<T, S, R> Drop for LocalWorker<T, S, R> {
    fn drop(&mut self) {
        if !self.finished {
            // Closing the inbox first lets a master blocked on a synchronous send to this
            // worker go on (and learn it is gone) instead of waiting for it forever.
            self.inbox = crossbeam_channel::never();
            let why = "its thread ended without finishing".to_owned();
            let lost = (None, (self.index, FromWorker::Lost { why }));
            let _ = self.to_master.send_timeout(lost, LOST_PATIENCE);
        }
    }
}

/// How long a synchronous `Stop` waits for its worker to take it.
const STOP_HANDOVER: Duration = Duration::from_millis(100);

/// How long a worker whose thread ends waits for the master to take the news: the master
/// looks at its channel every few tens of milliseconds while it runs.
const LOST_PATIENCE: Duration = Duration::from_secs(5);

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
    fn channel<M>(protocol: Protocol) -> (Sender<M>, Receiver<M>) {
        match protocol {
            Protocol::Sync => bounded(0),
            Protocol::Async => unbounded(),
        }
    }
    let (to_master, from_workers) = channel(protocol);
    let (to_workers, workers) = (0..pool)
        .map(|index| {
            let (tx, inbox) = channel(protocol);
            let worker = LocalWorker {
                index,
                inbox,
                to_master: to_master.clone(),
                network: network.clone(),
                sync,
                sleeper: Sleeper::default(),
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
            sync,
            sleeper: Sleeper::default(),
            forsaken: vec![false; pool],
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
        let due = self
            .network
            .as_ref()
            .map(|n| n.out.due(to_worker_len(&message), crate::clock::now()));
        let stop = matches!(message, ToWorker::Stop);
        let sent = if stop && self.sync {
            // A worker busy with a chunk (or hung in one) takes no `Stop` until it is done: the
            // master then waits for its `Finished`, bounded, rather than in this send.
            inbox.send_timeout((due, message), STOP_HANDOVER).is_ok()
        } else {
            inbox.send((due, message)).is_ok()
        };
        if !sent {
            // Its thread ended: it says so itself (`FromWorker::Lost`), and the message is
            // dropped as a dead process's would be.
            return Ok(());
        }
        if let (true, Some(due)) = (self.sync, due) {
            // A synchronous send completes once the message is delivered.
            self.sleeper.until(due);
        }
        Ok(())
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
        if self.forsaken.get(message.0) == Some(&true) {
            return None;
        }
        if let Some(due) = due {
            self.sleeper.until(due);
        }
        Some(message)
    }
}

impl<T: Message, S: Message, R: Message> WorkerLink<T, S, R> for LocalWorker<T, S, R> {
    fn recv(&mut self) -> Option<ToWorker<T, S>> {
        let (due, message) = receive(&self.inbox)?;
        if let Some(due) = due {
            self.sleeper.until(due);
        }
        Some(message)
    }

    fn send(&mut self, message: FromWorker<T, R>) -> bool {
        self.finished |= matches!(message, FromWorker::Finished { .. });
        let due = self
            .network
            .as_ref()
            .map(|n| n.back.due(from_worker_len(&message), crate::clock::now()));
        let sent = self.to_master.send((due, (self.index, message))).is_ok();
        if let (true, Some(due)) = (self.sync, due) {
            self.sleeper.until(due);
        }
        sent
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
