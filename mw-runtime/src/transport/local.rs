//! The local backend: one thread per worker, values moved through channels (never encoded).
//!
//! `sync` uses rendezvous channels, so a send returns only once the receiver has taken the
//! message (like `MPI_Ssend`); `async` uses unbounded channels, so sends return at once and
//! overlap (like `MPI_Isend`).

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};

use super::{FromWorker, MasterLink, ToWorker, WorkerLink};
use crate::config::Protocol;
use crate::error::{Error, Result};

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
        self.from_workers
            .recv()
            .map_err(|_| Error::backend("every worker exited unexpectedly"))
    }
}

impl<T, S, R> WorkerLink<T, S, R> for LocalWorker<T, S, R> {
    fn recv(&mut self) -> Option<ToWorker<T, S>> {
        self.inbox.recv().ok()
    }

    fn send(&mut self, message: FromWorker<T, R>) -> bool {
        self.to_master.send((self.index, message)).is_ok()
    }
}
