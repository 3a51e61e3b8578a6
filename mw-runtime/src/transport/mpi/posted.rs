//! Requests this backend owns: sends that finish in the background (`MPI_Isend`, `MPI_Issend`
//! on bytes the send owns), receives that can be given up (`MPI_Irecv`, `MPI_Cancel`), and the
//! communicator's error handler.
//!
//! rsmpi ties every nonblocking request to a lexical scope that ends only once the request is
//! complete, so a send cannot outlive the call that posted it. The master needs exactly that: a
//! chunk sent ahead to a worker that is still busy must not hold the master until the worker
//! takes it — while the master waited, the worker could be waiting to hand back a large answer
//! (a rendezvous send needs its receive), and neither would move. So this module owns the
//! request and the bytes together, and a send's bytes are released only once MPI says it is
//! done with them. A receive, likewise, must be given up when the master stops waiting (a
//! timeout, a worker lost), which rsmpi cannot do without knowing whether the cancel won.
//! It holds most of the backend's `unsafe` code: each other module that calls MPI or the
//! system directly (`kill`, `library`, `spawn`, `ulfm`) says why at its top.
#![allow(unsafe_code)]

use std::ops::Range;
use std::os::raw::c_int;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpi::Tag;
use mpi::datatype::Equivalence;
use mpi::ffi;
use mpi::point_to_point::Status;
use mpi::raw::AsRaw;
use mpi::topology::{Rank, SimpleCommunicator};

use super::framing::Outgoing;

/// How long a send still in progress when it is dropped is waited for.
const DROP_WAIT: Duration = Duration::from_secs(2);

/// How long a cancelled receive may take to end. One that had already matched a message whose
/// sender died half-way through it never ends (Open MPI 4.1 over shared memory, several ranks
/// killed at once): its buffer is then MPI's for good.
const CANCEL_WAIT: Duration = Duration::from_secs(1);

/// Makes calls on `comm` return their errors instead of aborting the job, so that a peer that
/// died cannot take this process with it.
pub(super) fn errors_return(comm: &SimpleCommunicator) {
    // SAFETY: `comm` is a live communicator of this process and the handler a predefined one.
    unsafe {
        ffi::MPI_Comm_set_errhandler(comm.as_raw(), ffi::RSMPI_ERRORS_RETURN);
    }
}

/// One `MPI_Isend` (or `MPI_Issend`) in progress, holding the bytes it sends.
pub(super) struct Posted {
    request: ffi::MPI_Request,
    rank: Rank,
    /// Read by MPI until the request completes: never touched, moved out or freed before. The
    /// heap buffer behind it does not move when `Posted` does.
    bytes: Outgoing,
}

impl Posted {
    /// Posts `bytes[range]` to `rank` on `comm`; `synchronous` completes only once the receiver
    /// has it (`MPI_Issend`). A send MPI refuses is complete at once: its peer is gone.
    ///
    /// # Panics
    /// When the range is longer than `i32::MAX` bytes (MPI counts in C ints): longer messages
    /// are cut into parts before they are posted (see `parts`).
    pub(super) fn send(
        comm: &SimpleCommunicator,
        rank: Rank,
        tag: Tag,
        bytes: Outgoing,
        range: Range<usize>,
        synchronous: bool,
    ) -> Self {
        // SAFETY: `self.bytes` owns the bytes and is only released by `test` (after
        // completion), `finish`, `drop` (both wait for it first) or never (`abandon`).
        let request = unsafe { post(comm, rank, tag, &bytes.bytes()[range], synchronous) };
        Posted {
            request,
            rank,
            bytes,
        }
    }

    /// Posts all of `bytes`, a short message, to `rank` on `comm` (`MPI_Isend`) and tests it
    /// once: MPI copies a short message out as it is posted, so usually the send is complete
    /// and nothing is kept; else the send, sharing `bytes` until it completes. A send MPI
    /// refuses is complete at once: its peer is gone.
    ///
    /// # Panics
    /// When `bytes` is longer than `i32::MAX` (a short message never is).
    pub(super) fn send_eager(
        comm: &SimpleCommunicator,
        rank: Rank,
        tag: Tag,
        bytes: &Arc<Vec<u8>>,
    ) -> Option<Self> {
        // SAFETY: the caller's `Arc` holds the bytes until this function returns, and a send
        // still in progress then holds a clone of it, released only as `send` says.
        let mut request = unsafe { post(comm, rank, tag, bytes, false) };
        if tested(&mut request) {
            return None;
        }
        Some(Posted {
            request,
            rank,
            bytes: Outgoing::Shared(Arc::clone(bytes)),
        })
    }

    /// The rank the bytes go to.
    pub(super) fn rank(&self) -> Rank {
        self.rank
    }

    /// Whether the send is complete (the bytes are MPI's no longer).
    pub(super) fn test(&mut self) -> bool {
        self.is_complete() || tested(&mut self.request)
    }

    /// Waits until the send is complete (for at most [`DROP_WAIT`]) and hands the bytes back.
    pub(super) fn finish(mut self) -> Outgoing {
        self.wait();
        std::mem::replace(&mut self.bytes, Outgoing::Own(Vec::new()))
    }

    /// Gives the send up for good: its peer is gone or never answers, so the request may never
    /// complete. The request and the bytes are leaked, never freed, since MPI may still read
    /// them: a few messages per lost worker.
    pub(super) fn abandon(self) {
        std::mem::forget(self);
    }

    /// Waits for the send to complete, for at most [`DROP_WAIT`]; a send still in progress
    /// then keeps its bytes for good (they are leaked, never freed under MPI).
    fn wait(&mut self) {
        // A send complete already (the usual case: short sends complete as they are posted)
        // costs no clock read, which costs as much as the rest of a short send.
        if self.test() {
            return;
        }
        let started = Instant::now();
        while !self.test() {
            if started.elapsed() > DROP_WAIT {
                std::mem::forget(std::mem::replace(
                    &mut self.bytes,
                    Outgoing::Own(Vec::new()),
                ));
                return;
            }
            std::thread::yield_now();
        }
    }

    fn is_complete(&self) -> bool {
        // SAFETY: reads a constant MPI handle.
        self.request == unsafe { ffi::RSMPI_REQUEST_NULL }
    }
}

/// Posts `data` to `rank` on `comm`, `MPI_Issend` when `synchronous` (complete only once the
/// receiver has it), else `MPI_Isend`: the request, null when MPI refused the send (its peer is
/// gone).
///
/// # Safety
/// `data` must stay where it is, unchanged, until the request completes.
///
/// # Panics
/// When `data` is longer than `i32::MAX` bytes (MPI counts in C ints).
unsafe fn post(
    comm: &SimpleCommunicator,
    rank: Rank,
    tag: Tag,
    data: &[u8],
    synchronous: bool,
) -> ffi::MPI_Request {
    let count = c_int::try_from(data.len()).expect("message parts are shorter than 2 GiB");
    // SAFETY: a null request until MPI fills it in.
    let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
    let post = if synchronous {
        ffi::MPI_Issend
    } else {
        ffi::MPI_Isend
    };
    // SAFETY: `data` is `count` initialized bytes, kept in place by the caller until the
    // request completes.
    let code = unsafe {
        post(
            data.as_ptr().cast(),
            count,
            u8::equivalent_datatype().as_raw(),
            rank,
            tag,
            comm.as_raw(),
            &mut request,
        )
    };
    if code != 0 {
        // SAFETY: reads a constant MPI handle; nothing was posted.
        request = unsafe { ffi::RSMPI_REQUEST_NULL };
    }
    request
}

/// Tests a live send `request` (or a null one): whether it is complete, and then null.
fn tested(request: &mut ffi::MPI_Request) -> bool {
    let mut done: c_int = 0;
    // SAFETY: `request` is a live request of this process (or null, which MPI_Test accepts);
    // MPI sets it to null when it completes.
    let code = unsafe { ffi::MPI_Test(request, &mut done, ffi::RSMPI_STATUS_IGNORE) };
    if code != 0 {
        // The send failed, so MPI is done with it: forget the request.
        // SAFETY: reads a constant MPI handle.
        *request = unsafe { ffi::RSMPI_REQUEST_NULL };
        return true;
    }
    done != 0
}

impl Drop for Posted {
    /// Waits for the send: its bytes must outlive MPI's use of them. The master's link is
    /// dropped before MPI is finalized, every send it posts is received (workers take every
    /// message sent to them, `Stop` last), and sends to workers given up on are abandoned; a
    /// send to a peer that stopped reading without being given up on (stopped, or lost at the
    /// very end) is left to MPI with its bytes after [`DROP_WAIT`], so a drop never hangs.
    fn drop(&mut self) {
        self.wait();
    }
}

/// How a receive ended.
pub(super) enum Received {
    /// A message is in the buffer.
    Message(Status),
    /// The caller stopped waiting and nothing was received.
    GaveUp,
    /// MPI failed the receive, with this error code.
    Failed(c_int),
    /// A message from this rank was found, but MPI failed its receive because the rank's
    /// process failed (ULFM): the message is lost, and any later one from the rank is out of
    /// order.
    Dropped(Rank),
}

/// Posts a receive into `buffer[range]` from `source` (any rank when `None`) with `tag` (any
/// when `None`) on `comm`, and tests it until a message came or `keep_waiting` says to stop (it
/// also does the waiting between tests); a receive given up is cancelled. A cancel that does
/// not take within [`CANCEL_WAIT`] (the receive matched a message whose sender died in the
/// middle of it) leaves `buffer` to MPI for good: it is leaked and replaced by a zeroed one of
/// the same length, and the receive counts as given up.
pub(super) fn receive(
    comm: &SimpleCommunicator,
    source: Option<Rank>,
    tag: Option<Tag>,
    buffer: &mut Vec<u8>,
    range: Range<usize>,
    mut keep_waiting: impl FnMut() -> bool,
) -> Received {
    if source.is_none() && super::ulfm::enabled() {
        return probed(comm, tag, &mut buffer[range], keep_waiting);
    }
    let into = &mut buffer[range];
    let Ok(count) = c_int::try_from(into.len()) else {
        return Received::Failed(-1);
    };
    // SAFETY: constant MPI handles and a status MPI fills in before it is read.
    let (mut request, mut status, any_source, any_tag) = unsafe {
        (
            ffi::RSMPI_REQUEST_NULL,
            std::mem::zeroed::<ffi::MPI_Status>(),
            ffi::RSMPI_ANY_SOURCE,
            ffi::RSMPI_ANY_TAG,
        )
    };
    // SAFETY: `into` is `count` writable bytes of `buffer`, borrowed mutably until this function
    // returns; the request is complete (received, or cancelled and waited for) before it does,
    // or else `buffer`'s allocation is leaked, never to be freed or touched again.
    let code = unsafe {
        ffi::MPI_Irecv(
            into.as_mut_ptr().cast(),
            count,
            u8::equivalent_datatype().as_raw(),
            source.unwrap_or(any_source),
            tag.unwrap_or(any_tag),
            comm.as_raw(),
            &mut request,
        )
    };
    if code != 0 {
        return Received::Failed(code);
    }
    loop {
        let mut done: c_int = 0;
        // SAFETY: `request` is the live receive posted above.
        let code = unsafe { ffi::MPI_Test(&mut request, &mut done, &mut status) };
        if code != 0 && super::ulfm::pending(code) {
            // A receive from any rank held up by a failure: still posted, and free to complete
            // once the failure is acknowledged (the failed rank is reported by the master).
            super::ulfm::acknowledge(comm);
            continue;
        }
        if code != 0 {
            return Received::Failed(code);
        }
        if done != 0 {
            return Received::Message(Status::from_raw(status));
        }
        if !keep_waiting() {
            // SAFETY: cancels the live receive.
            unsafe {
                ffi::MPI_Cancel(&mut request);
            }
            let started = Instant::now();
            loop {
                // SAFETY: tests the cancelled receive until it ends either way (cancelled, or
                // completed before the cancel took), then asks which.
                let code = unsafe { ffi::MPI_Test(&mut request, &mut done, &mut status) };
                // SAFETY: reads a constant MPI handle.
                if code != 0 && request == unsafe { ffi::RSMPI_REQUEST_NULL } {
                    // It ended in an error: nothing was received, and its status names no
                    // message (the buffer still holds the last one's bytes).
                    return Received::GaveUp;
                }
                if done != 0 && code == 0 {
                    let mut cancelled: c_int = 0;
                    // SAFETY: `status` was filled in by the completed test.
                    unsafe {
                        ffi::MPI_Test_cancelled(&status, &mut cancelled);
                    }
                    return if cancelled != 0 {
                        Received::GaveUp
                    } else {
                        Received::Message(Status::from_raw(status))
                    };
                }
                if started.elapsed() > CANCEL_WAIT {
                    let fresh = vec![0u8; buffer.len()];
                    std::mem::forget(std::mem::replace(buffer, fresh));
                    return Received::GaveUp;
                }
                std::thread::yield_now();
            }
        }
    }
}

/// A receive from any rank under ULFM: a probe (`MPI_Improbe`) until a message is there, then
/// the receive of that very message (`MPI_Mrecv`), so that no receive is ever posted ahead of
/// its message. Under ULFM a posted receive from any rank that a failure holds up
/// (`MPIX_ERR_PROC_FAILED_PENDING`) may neither resume once the failure is acknowledged nor
/// take a cancel (Open MPI 5), and one given up while still posted later takes a message no
/// one reads: an answer lost. A probe leaves nothing behind when the wait is given up. The same
/// failure stops a probe from any rank until it is acknowledged, here.
fn probed(
    comm: &SimpleCommunicator,
    tag: Option<Tag>,
    into: &mut [u8],
    mut keep_waiting: impl FnMut() -> bool,
) -> Received {
    let Ok(count) = c_int::try_from(into.len()) else {
        return Received::Failed(-1);
    };
    loop {
        let mut found: c_int = 0;
        // SAFETY: constant MPI handles, and a message handle and status MPI fills in before
        // they are read.
        let (mut message, mut status, any_source, any_tag) = unsafe {
            (
                ffi::RSMPI_MESSAGE_NULL,
                std::mem::zeroed::<ffi::MPI_Status>(),
                ffi::RSMPI_ANY_SOURCE,
                ffi::RSMPI_ANY_TAG,
            )
        };
        // SAFETY: `comm` is a live communicator; the outputs are local variables.
        let code = unsafe {
            ffi::MPI_Improbe(
                any_source,
                tag.unwrap_or(any_tag),
                comm.as_raw(),
                &mut found,
                &mut message,
                &mut status,
            )
        };
        if code != 0 && super::ulfm::pending(code) {
            super::ulfm::acknowledge(comm);
        } else if code != 0 {
            return Received::Failed(code);
        } else if found != 0 {
            // SAFETY: `into` is `count` writable bytes, borrowed until this blocking receive of
            // the probed message returns.
            let code = unsafe {
                ffi::MPI_Mrecv(
                    into.as_mut_ptr().cast(),
                    count,
                    u8::equivalent_datatype().as_raw(),
                    &mut message,
                    &mut status,
                )
            };
            if code != 0 && super::ulfm::process_failed(code) {
                // The probe's status names the message's source. Seen only for ranks that were
                // killed; some of their later messages were received after it, so the caller
                // must give the rank up before it takes another message.
                return Received::Dropped(status.MPI_SOURCE);
            }
            if code != 0 {
                return Received::Failed(code);
            }
            return Received::Message(Status::from_raw(status));
        }
        if !keep_waiting() {
            return Received::GaveUp;
        }
    }
}
