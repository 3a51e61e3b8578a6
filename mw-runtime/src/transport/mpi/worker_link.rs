//! A worker's end (ranks 1 and up): it waits for the master cheaply, and notices when the
//! master is gone.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use mpi::Tag;
use mpi::topology::SimpleCommunicator;

use super::backoff::Backoff;
use super::framing::{Endpoint, INLINE, Outgoing, post_message, receive};
use super::messages::{decode, decode_shared};
use super::posted::Posted;
use super::{CHUNK, DONE, FAILED, FATAL, FINISHED, KILL, LEAVE_UNFINALIZED, READY, SHARED, STOP};
use super::{kill, lifeline};
use crate::codec::Message;
use crate::config::Protocol;
use crate::transport::{Chunk, FromWorker, ToWorker, WorkerLink};

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
pub(super) struct MpiWorker<T, R> {
    end: Endpoint,
    protocol: Protocol,
    /// The master answers soon (we just returned a chunk or got the shared part): spin first.
    expecting: bool,
    /// A message from the master could not be read: the master was told, and everything up to
    /// its `Stop` is dropped.
    broken: bool,
    /// The master's `Stop` said to leave without `MPI_Finalize` (a worker was lost).
    pub(super) leave_unfinalized: bool,
    /// The buffer answers are encoded into, kept across messages (unless large).
    outbox: Vec<u8>,
    _messages: PhantomData<fn(T) -> R>,
}

impl<T, R> MpiWorker<T, R> {
    pub(super) fn new(world: SimpleCommunicator, protocol: Protocol) -> Self {
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
