//! The MPI backend: rank 0 is the master, ranks `1..P` the workers; messages are the codec's bytes.
//!
//! `sync` sends with `MPI_Issend` and waits for each send to complete before the next, as
//! `MPI_Ssend` would, for at most a second (a stopped worker keeps its lifeline open; the
//! engine's liveness timeout gives it up). `async` posts every message with `MPI_Isend` and goes
//! on. A message of up to [`EAGER`](framing::EAGER) bytes (2 KiB, well under Open MPI's eager
//! limits) is copied out at once, so its send is complete when first tested, right after it is
//! posted, and its buffer is reused for the next message; one that is not (its peer stopped
//! reading and the transport's queue to it filled up) is kept with the longer sends, which
//! finish in the background while the master waits for answers, their buffers reused once MPI
//! is done with them ([`posted`]) — so the model's two branches describe what really happens,
//! and a chunk prefetched to a busy, stopped or dead worker never holds the master. No call
//! waits without a bound: a send still in progress when its link is dropped is left to MPI
//! after two seconds, and a cancelled receive that had matched a message whose sender died
//! half-way after one (its buffer is then MPI's for good, and leaked).
//!
//! Nobody waits in a blocking receive: Open MPI's busy-polls a core, which would steal it from the
//! workers on an oversubscribed node. A waiting process posts a receive (`MPI_Irecv`) into a
//! buffer it keeps, and tests it — on Open MPI 4.1 a test costs half an `MPI_Improbe`, and the
//! `MPI_Irecv` less than the `MPI_Mrecv` a probe needs after it — spinning briefly when an
//! answer is due soon and sleeping with exponential backoff otherwise, so parked workers cost next to nothing. A rank with a core of
//! its own (mpirun did not oversubscribe its node) spins through the whole wait for an answer
//! due soon, as a blocking receive would; one that shares its core yields it after a few
//! microseconds ([`backoff`]). The receive is posted
//! only while the process waits, so a message is matched when its receiver asks for it, as with
//! a blocking receive (which is what a synchronous send waits for). Under ULFM the master's
//! receive from any rank probes instead (`MPI_Improbe`, then `MPI_Mrecv` of the message found):
//! a posted one that a failure held up may never resume nor take a cancel, and would later take
//! an answer no one reads.
//!
//! Messages of up to [`INLINE`](framing::INLINE) bytes travel whole into that buffer. A longer one is announced
//! there by a message holding its length (its tag with [`FOLLOWS`](framing::FOLLOWS) set), and its body follows on
//! a second communicator in parts of at most 1 GiB ([`parts`]), so a message has no length
//! limit. Bodies keep their order because each communicator keeps the order of its messages
//! between two ranks.
//!
//! A worker rank may die (`kill -9`, an abort, the OOM killer) without ending the job when it is
//! launched with `mpirun --mca orte_enable_recovery 1` (Open MPI 5: `mpirun --enable-recovery`;
//! Intel MPI: `mpiexec -genv I_MPI_FAULT_CONTINUE on`; MPICH ends the job whatever the line): the
//! communicators return errors instead
//! of aborting, the master notices the death through the worker's [`lifeline`], reports the
//! worker `Lost` once, and from then on drops what was sent to it or comes from it. A worker the
//! engine gives up on (`forsake`) is treated the same way, without the report, and its process is
//! ended ([`kill`]), since `MPI_Finalize` waits for every rank. After a loss no rank calls
//! `MPI_Finalize` at all (see [`finalize`](bootstrap::finalize)). A worker whose master died notices it through its
//! own end of the lifeline, and leaves.
//!
//! No error handler reaches one failure: Open MPI 5 without ULFM handles a broken TCP connection
//! to a peer (a worker on another node that died) in its point-to-point layer, as
//! `MPI_ERRORS_ARE_FATAL` on no communicator, and ends the process with `_exit` after asking
//! the launcher to abort the job. The master then says no exit status; `mwgen launch` notices
//! that its process ended and ends a launcher that does not.
//!
//! One concern a module: [`framing`] puts messages on the wire and takes them off (whole or in
//! parts), [`messages`] encodes what only this backend sends, [`master_link`] and
//! [`worker_link`] are the two ends the engine talks to, and [`bootstrap`] starts a run on every
//! rank and ends MPI after it, [`spawn`] grows the pool past the launched ranks, and [`library`]
//! says at start what of the MPI library or the launch line will not do.

mod backoff;
mod bootstrap;
mod framing;
mod kill;
mod layout;
mod library;
mod lifeline;
mod master_link;
mod messages;
mod parts;
mod posted;
mod spawn;
mod start_watch;
mod ulfm;
mod worker_link;

use mpi::Tag;

pub(crate) use self::bootstrap::{Joined, agree_at_start, connect, end_started};

// Message tags: from the master below 10, from a worker above.
const SHARED: Tag = 1;
const CHUNK: Tag = 2;
const STOP: Tag = 3;
/// End the process whose id follows (4 bytes), on this node: the master gave up on it. A last
/// byte says when.
const KILL: Tag = 4;
/// End it at once: the launcher keeps the job when a rank ends.
const KILL_NOW: u8 = 0;
/// End it once the master's process has ended: ending it ends the whole job.
const KILL_AFTER_MASTER: u8 = 1;
/// The run's lifeline secret, to a spawned worker once it joined.
const LIFELINE: Tag = 5;
/// The byte of a `Stop` telling the worker to leave without `MPI_Finalize`, once the master's
/// process has ended (a rank leaving without it may end the whole job, the master with it).
const LEAVE_UNFINALIZED: u8 = 1;
const READY: Tag = 11;
const DONE: Tag = 12;
const FAILED: Tag = 13;
const FINISHED: Tag = 14;
/// A worker could not decode what the master sent: the run cannot go on.
const FATAL: Tag = 15;
/// Never on the wire: what the master's transport files a worker found dead under.
const LOST: Tag = 16;

#[cfg(test)]
mod tests;
