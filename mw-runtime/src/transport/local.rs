//! The local backend: one thread per worker, values moved through channels (never encoded).
//!
//! `sync` uses rendezvous channels, so a send returns only once the receiver has taken the
//! message (like `MPI_Ssend`); `async` uses unbounded channels, so sends return at once and
//! overlap (like `MPI_Isend`). A receiver looks at its channel for up to 50 µs, yielding the
//! core, before it blocks: with short tasks, waking a blocked thread cost more than the task,
//! and made runs of empty tasks vary fourfold from one to the next.

use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, TryRecvError, bounded, unbounded};

use super::{FromWorker, MasterLink, ToWorker, WorkerLink};
use crate::config::Protocol;
use crate::error::{Error, Result};

/// How long a receiver looks for a message before it blocks on the channel.
const LOOK_AGAIN: Duration = Duration::from_micros(50);

/// The master's end: one inbox per worker, one shared channel back.
#[derive(Debug)]
pub(crate) struct LocalMaster<T, S, R> {
    to_workers: Vec<Sender<ToWorker<T, S>>>,
    from_workers: Receiver<(usize, FromWorker<T, R>)>,
}

/// A worker's end.
#[derive(Debug)]
pub(crate) struct LocalWorker<T, S, R> {
    index: usize,
    inbox: Receiver<ToWorker<T, S>>,
    to_master: Sender<(usize, FromWorker<T, R>)>,
}

/// Both ends of a local pool.
pub(crate) type Pool<T, S, R> = (LocalMaster<T, S, R>, Vec<LocalWorker<T, S, R>>);

/// Channels for a master and `pool` workers.
pub(crate) fn connect<T, S, R>(pool: usize, protocol: Protocol) -> Pool<T, S, R> {
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
            };
            (tx, worker)
        })
        .unzip();
    (
        LocalMaster {
            to_workers,
            from_workers,
        },
        workers,
    )
}

impl<T, S, R> MasterLink<T, S, R> for LocalMaster<T, S, R> {
    fn pool(&self) -> usize {
        self.to_workers.len()
    }

    fn cores(&self) -> Option<usize> {
        std::thread::available_parallelism().ok().map(usize::from)
    }

    fn backend(&self) -> &'static str {
        "local"
    }

    fn send(&mut self, worker: usize, message: ToWorker<T, S>) -> Result<()> {
        let inbox = self
            .to_workers
            .get(worker)
            .ok_or_else(|| Error::backend(format!("no worker {worker} in the pool")))?;
        inbox
            .send(message)
            .map_err(|_| Error::backend(format!("worker {worker} exited unexpectedly")))
    }

    fn recv(&mut self) -> Result<(usize, FromWorker<T, R>)> {
        receive(&self.from_workers)
            .ok_or_else(|| Error::backend("every worker exited unexpectedly"))
    }
}

impl<T, S, R> WorkerLink<T, S, R> for LocalWorker<T, S, R> {
    fn recv(&mut self) -> Option<ToWorker<T, S>> {
        receive(&self.inbox)
    }

    fn send(&mut self, message: FromWorker<T, R>) -> bool {
        self.to_master.send((self.index, message)).is_ok()
    }
}

/// The next message, `None` once every sender is gone. Messages between master and workers
/// usually come within microseconds of each other, and a parked thread takes tens of them to
/// wake: the channel is looked at again for a while, yielding the core, before the thread blocks.
fn receive<M>(channel: &Receiver<M>) -> Option<M> {
    let started = crate::clock::now();
    for attempt in 1u32.. {
        match channel.try_recv() {
            Ok(message) => return Some(message),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        if attempt % 16 == 0 && crate::clock::since(started) > LOOK_AGAIN {
            break;
        }
        std::thread::yield_now();
    }
    channel.recv().ok()
}
