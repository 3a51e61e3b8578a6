//! Sends that finish in the background: `MPI_Isend` on bytes the send owns.
//!
//! rsmpi ties every nonblocking request to a lexical scope that ends only once the request is
//! complete, so a send cannot outlive the call that posted it. The master needs exactly that: a
//! chunk sent ahead to a worker that is still busy must not hold the master until the worker
//! takes it — while the master waited, the worker could be waiting to hand back a large answer
//! (a rendezvous send needs its receive), and neither would move. So this module owns the
//! request and the bytes together, and a send's bytes are released only once MPI says it is
//! done with them. It is the crate's only `unsafe` code.
#![allow(unsafe_code)]

use std::os::raw::c_int;

use mpi::Tag;
use mpi::datatype::Equivalence;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::{Rank, SimpleCommunicator};

use super::Outgoing;

/// One `MPI_Isend` in progress, holding the bytes it sends.
pub(super) struct Posted {
    request: ffi::MPI_Request,
    /// Read by MPI until the request completes: never touched, moved out or freed before. The
    /// heap buffer behind it does not move when `Posted` does.
    bytes: Outgoing,
}

impl Posted {
    /// Posts `bytes` to `rank` on `comm`.
    ///
    /// # Panics
    /// When the message is longer than `i32::MAX` bytes (MPI counts in C ints); the engine's
    /// messages are checked long before.
    pub(super) fn send(comm: &SimpleCommunicator, rank: Rank, tag: Tag, bytes: Outgoing) -> Self {
        let data = bytes.bytes();
        let count = c_int::try_from(data.len()).expect("an MPI message holds at most 2 GiB");
        // SAFETY: a null request until MPI_Isend fills it in.
        let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: `data` points to `count` initialized bytes that stay where they are, unchanged,
        // until the request completes: `self.bytes` owns them and is only released by `test`
        // (after completion), `finish` or `drop` (both wait for it first).
        unsafe {
            ffi::MPI_Isend(
                data.as_ptr().cast(),
                count,
                u8::equivalent_datatype().as_raw(),
                rank,
                tag,
                comm.as_raw(),
                &mut request,
            );
        }
        Posted { request, bytes }
    }

    /// Whether the send is complete (the bytes are MPI's no longer).
    pub(super) fn test(&mut self) -> bool {
        if self.is_complete() {
            return true;
        }
        let mut done: c_int = 0;
        // SAFETY: `request` is a live request of this process (or null, which MPI_Test accepts);
        // MPI sets it to null when it completes.
        unsafe {
            ffi::MPI_Test(&mut self.request, &mut done, ffi::RSMPI_STATUS_IGNORE);
        }
        done != 0
    }

    /// Waits until the send is complete and hands the bytes back.
    pub(super) fn finish(mut self) -> Outgoing {
        self.wait();
        std::mem::replace(&mut self.bytes, Outgoing::Own(Vec::new()))
    }

    fn wait(&mut self) {
        if !self.is_complete() {
            // SAFETY: as in `test`.
            unsafe {
                ffi::MPI_Wait(&mut self.request, ffi::RSMPI_STATUS_IGNORE);
            }
        }
    }

    fn is_complete(&self) -> bool {
        // SAFETY: reads a constant MPI handle.
        self.request == unsafe { ffi::RSMPI_REQUEST_NULL }
    }
}

impl Drop for Posted {
    /// Waits for the send: its bytes must outlive MPI's use of them. The master's link is
    /// dropped before MPI is finalized, and every send it posts is received (workers take every
    /// message sent to them, `Stop` last), so this returns.
    fn drop(&mut self) {
        self.wait();
    }
}
