//! A worker's end (ranks 1 and up): it waits for the master cheaply, and notices when the
//! master is gone.

use std::time::{Duration, Instant};

use mpi::Tag;
use mpi::topology::SimpleCommunicator;

use super::backoff::Backoff;
use super::framing::{Endpoint, INLINE, Outgoing, post_message, receive};
use super::messages::decode_shared;
use super::posted::Posted;
use super::{
    CHUNK, DONE, FAILED, FATAL, FINISHED, KILL, KILL_AFTER_MASTER, LEAVE_UNFINALIZED, READY,
    SHARED, STOP,
};
use super::{kill, lifeline};
use crate::codec::{Message, Reader};
use crate::protocol::Protocol;
use crate::transport::{Chunk, Done, FromWorker, ToWorker, WorkerLink};

/// The process named by a [`KILL`] message, on this worker's node, and whether it is to be
/// ended only once the master's process has ended; `None` for this process or a bad message.
fn neighbour(bytes: &[u8]) -> Option<(u32, bool)> {
    let pid = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
    let after_master = bytes.get(4) == Some(&KILL_AFTER_MASTER);
    (pid != std::process::id()).then_some((pid, after_master))
}

/// Ends process `pid` of this node, as the master asked.
fn end_neighbour(pid: u32) {
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
    /// Sends in progress: under `async` an answer travels while the worker goes on with its
    /// next chunk (a large answer would otherwise hold the worker until the master took it,
    /// undoing the chunk prefetched to it).
    in_flight: Vec<Posted>,
    /// The task vector of the last chunk, for the next chunk's tasks.
    spare_tasks: Vec<T>,
    /// The results vector of the last answer, once encoded, for the next answer's results.
    spare_results: Vec<R>,
    /// Processes of this node the master gave up on, to end once the master's process ended.
    after_master: Vec<u32>,
}

/// Capacity of a task or results vector kept for the next chunk, at most (a large one is
/// freed).
const SPARE_ITEMS: usize = 4096;

impl<T, R> MpiWorker<T, R> {
    pub(super) fn new(world: SimpleCommunicator, protocol: Protocol) -> Self {
        MpiWorker {
            end: Endpoint::new(world),
            protocol,
            expecting: false,
            broken: false,
            leave_unfinalized: false,
            outbox: Vec::new(),
            in_flight: Vec::new(),
            spare_tasks: Vec::new(),
            spare_results: Vec::new(),
            after_master: Vec::new(),
        }
    }

    /// Leaves the run; `true` when MPI is to be left unfinalized. After a loss this waits until
    /// the master's process has ended: a launcher without recovery ends the whole job when a
    /// rank leaves without `MPI_Finalize`, and the master may still be writing its results.
    /// Then it ends the processes the master left to it.
    pub(super) fn leave(self) -> bool {
        lifeline::left_run();
        if self.leave_unfinalized || !self.after_master.is_empty() {
            lifeline::await_master_exit();
        }
        self.after_master.iter().copied().for_each(end_neighbour);
        self.leave_unfinalized
    }

    /// Encodes `message` and sends it to the master by the protocol: under `sync`, waiting
    /// until the master has it; under `async`, returning once it is posted. `Finished` goes
    /// synchronously, after every send before it, for at most [`LAST_WAIT`], so that a rank
    /// that leaves without `MPI_Finalize` (after a loss) leaves no message behind. `false` when
    /// the master is gone: its process ended, so the sends would never complete.
    fn send_encoded(&mut self, tag: Tag, message: &impl Message) -> bool {
        self.reap();
        let mut bytes = std::mem::take(&mut self.outbox);
        bytes.clear();
        message.encode(&mut bytes);
        let synchronous = self.protocol == Protocol::Sync || tag == FINISHED;
        let sent = post_message(
            &self.end.comms,
            0,
            tag,
            Outgoing::Own(bytes),
            synchronous,
            Vec::new(),
            &mut self.in_flight,
        );
        if let Some(Outgoing::Own(bytes)) = sent {
            self.outbox = bytes;
        }
        if !synchronous {
            return true;
        }
        let bound = (tag == FINISHED).then_some(LAST_WAIT);
        let started = Instant::now();
        let mut looked = started;
        let mut backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(1));
        while !self.in_flight.iter_mut().all(Posted::test) {
            backoff.wait();
            let mut gone = false;
            if backoff.sleeping() && looked.elapsed() >= MASTER_LOOK {
                looked = Instant::now();
                gone = lifeline::master_gone();
            }
            if gone || bound.is_some_and(|bound| started.elapsed() > bound) {
                self.in_flight.drain(..).for_each(Posted::abandon);
                if gone {
                    self.leave_unfinalized = true;
                }
                return !gone;
            }
        }
        self.reap();
        true
    }

    /// Takes back finished sends; the buffer of one sent whole is kept for the next message,
    /// unless it grew large.
    fn reap(&mut self) {
        let mut i = 0;
        while i < self.in_flight.len() {
            if !self.in_flight[i].test() {
                i += 1;
                continue;
            }
            if let Outgoing::Own(bytes) = self.in_flight.swap_remove(i).finish() {
                if bytes.capacity() <= INLINE && bytes.capacity() > self.outbox.capacity() {
                    self.outbox = bytes;
                }
            }
        }
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
            // Read once sleeping, not per message: a chunk due soon is usually there at once.
            let mut looked: Option<Instant> = None;
            let mut master_gone = false;
            let keep_waiting = |_| {
                backoff.wait();
                if backoff.sleeping() {
                    let now = Instant::now();
                    if now.duration_since(*looked.get_or_insert(now)) >= MASTER_LOOK {
                        looked = Some(now);
                        master_gone = lifeline::master_gone();
                    }
                }
                !master_gone
            };
            let received = receive(&self.end.comms, &mut self.end.inbox, Some(0), keep_waiting);
            if master_gone {
                // Its process ended: `MPI_Finalize` would wait for it forever.
                eprintln!("warning: the master is gone; this worker stops");
                self.leave_unfinalized = true;
                self.in_flight.drain(..).for_each(Posted::abandon);
                return None;
            }
            // An MPI failure here means the master is gone: answers to it never complete.
            let Some((_, tag, body)) = received.ok().flatten() else {
                self.in_flight.drain(..).for_each(Posted::abandon);
                return None;
            };
            let bytes = self.end.bytes(&body);
            let message = match tag {
                STOP => {
                    self.leave_unfinalized = bytes == [LEAVE_UNFINALIZED];
                    Ok(ToWorker::Stop)
                }
                KILL => {
                    match neighbour(bytes) {
                        Some((pid, true)) => self.after_master.push(pid),
                        Some((pid, false)) => end_neighbour(pid),
                        None => {}
                    }
                    continue;
                }
                _ if self.broken => continue,
                SHARED => decode_shared(bytes),
                CHUNK => {
                    let mut input = Reader::new(bytes);
                    let spare = std::mem::take(&mut self.spare_tasks);
                    Chunk::decode_into(&mut input, spare)
                        .and_then(|chunk| {
                            input.finish("Chunk")?;
                            Ok(chunk)
                        })
                        .map(ToWorker::Chunk)
                }
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
        // Encoded from a borrow: moving an answer out of the message copies all of it.
        let sent = match &message {
            FromWorker::Ready { error } => self.send_encoded(READY, error),
            FromWorker::Done(done) => self.send_encoded(DONE, done),
            FromWorker::Failed(failed) => self.send_encoded(FAILED, failed),
            FromWorker::Finished { error } => self.send_encoded(FINISHED, error),
            // Made by the master's transport, never sent.
            FromWorker::Lost { .. } => true,
        };
        if let FromWorker::Done(Done { mut results, .. }) = message {
            if results.capacity() <= SPARE_ITEMS {
                results.clear();
                self.spare_results = results;
            }
        }
        sent
    }

    fn reuse_tasks(&mut self, mut tasks: Vec<T>) {
        if tasks.capacity() <= SPARE_ITEMS {
            tasks.clear();
            self.spare_tasks = tasks;
        }
    }

    fn spare_results(&mut self) -> Vec<R> {
        std::mem::take(&mut self.spare_results)
    }
}
