//! MPI's own fault tolerance where the library has it: ULFM (User-Level Failure Mitigation),
//! built into Open MPI 5 and turned on by `mpirun --with-ft ulfm`.
//!
//! Under ULFM a rank that dies does not end the job, and MPI itself reports it: a receive from
//! the dead rank fails with `MPIX_ERR_PROC_FAILED`, and a receive from any rank fails with
//! `MPIX_ERR_PROC_FAILED_PENDING` — and keeps failing — until the process acknowledges the
//! failures it knows of (`MPIX_Comm_failure_ack`). This module acknowledges them, so the
//! pending receive goes on, and names the failed ranks of a communicator
//! (`MPIX_Comm_failure_get_acked`); the master reports those workers lost, as it does for a
//! lifeline that ended.
//!
//! The `MPIX_` functions are in no MPI standard and not in the headers rsmpi binds, so they are
//! looked up in the loaded library when a run starts: a build against Open MPI 4 runs unchanged
//! under Open MPI 5 with ULFM, and a library without them never enters this module's paths.
#![allow(unsafe_code)]

use std::os::raw::{c_int, c_void};
use std::sync::OnceLock;

use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::{Rank, SimpleCommunicator};

use super::library;

/// `MPIX_ERR_PROC_FAILED`: the peer of an operation died.
const PROC_FAILED: c_int = 75;
/// `MPIX_ERR_PROC_FAILED_PENDING`: a receive from any rank cannot complete until a failure is
/// acknowledged; it is still posted.
const PROC_FAILED_PENDING: c_int = 76;

type FailureAck = unsafe extern "C" fn(ffi::MPI_Comm) -> c_int;
type FailureGetAcked = unsafe extern "C" fn(ffi::MPI_Comm, *mut ffi::MPI_Group) -> c_int;

/// The library's ULFM functions, when it has them and the job runs with failures reported.
struct Functions {
    ack: FailureAck,
    acked: FailureGetAcked,
}

static FUNCTIONS: OnceLock<Option<Functions>> = OnceLock::new();

/// Whether failures are reported by MPI in this job: the library has ULFM and mpirun turned it
/// on (`--with-ft ulfm` sets `OMPI_MCA_mpi_ft_enable` in the ranks' environment).
pub(super) fn enabled() -> bool {
    functions().is_some()
}

fn functions() -> Option<&'static Functions> {
    FUNCTIONS
        .get_or_init(|| {
            let on = library::env_is("OMPI_MCA_mpi_ft_enable", library::open_mpi_true);
            if !on {
                return None;
            }
            // SAFETY: dlsym only reads the loader's tables; a symbol found under these names is
            // the library's function of this signature (Open MPI 5's `mpiext/ftmpi`).
            unsafe {
                let ack = libc::dlsym(libc::RTLD_DEFAULT, c"MPIX_Comm_failure_ack".as_ptr());
                let acked =
                    libc::dlsym(libc::RTLD_DEFAULT, c"MPIX_Comm_failure_get_acked".as_ptr());
                if ack.is_null() || acked.is_null() {
                    return None;
                }
                Some(Functions {
                    ack: std::mem::transmute::<*mut c_void, FailureAck>(ack),
                    acked: std::mem::transmute::<*mut c_void, FailureGetAcked>(acked),
                })
            }
        })
        .as_ref()
}

/// Whether MPI's error `code` says a process failed (`MPIX_ERR_PROC_FAILED` or
/// `MPIX_ERR_PROC_FAILED_PENDING`); only under ULFM.
pub(super) fn process_failed(code: c_int) -> bool {
    enabled() && matches!(class(code), PROC_FAILED | PROC_FAILED_PENDING)
}

/// Whether MPI's error `code` says a receive from any rank waits on an unacknowledged failure
/// and is still posted.
pub(super) fn pending(code: c_int) -> bool {
    enabled() && class(code) == PROC_FAILED_PENDING
}

fn class(code: c_int) -> c_int {
    let mut class: c_int = 0;
    // SAFETY: only reads `code` and writes `class`.
    if unsafe { ffi::MPI_Error_class(code, &mut class) } != 0 {
        return code;
    }
    class
}

/// Acknowledges the failures of `comm`'s ranks that MPI knows of, so that a receive from any
/// rank goes on. Nothing without ULFM.
pub(super) fn acknowledge(comm: &SimpleCommunicator) {
    if let Some(functions) = functions() {
        // SAFETY: `comm` is a live communicator of this process.
        unsafe {
            (functions.ack)(comm.as_raw());
        }
    }
}

/// The ranks of `comm` whose failure was acknowledged (every one so far, not only the new
/// ones); none without ULFM. Each communicator keeps its own: a spawned worker's failure on
/// its own communicator is not one of the launched ranks'.
pub(super) fn failed(comm: &SimpleCommunicator) -> Vec<Rank> {
    let Some(functions) = functions() else {
        return Vec::new();
    };
    let raw = comm.as_raw();
    // SAFETY: `raw` is a live communicator; every group made here is freed before returning;
    // the rank arrays have the group's size.
    unsafe {
        let mut failed = ffi::RSMPI_GROUP_NULL;
        if (functions.acked)(raw, &mut failed) != 0 {
            return Vec::new();
        }
        let mut size: c_int = 0;
        ffi::MPI_Group_size(failed, &mut size);
        let mut all = ffi::RSMPI_GROUP_NULL;
        ffi::MPI_Comm_group(raw, &mut all);
        let within: Vec<c_int> = (0..size).collect();
        let mut ranks = vec![0; within.len()];
        ffi::MPI_Group_translate_ranks(failed, size, within.as_ptr(), all, ranks.as_mut_ptr());
        ffi::MPI_Group_free(&mut failed);
        ffi::MPI_Group_free(&mut all);
        let undefined = ffi::RSMPI_UNDEFINED;
        ranks.retain(|&r| r != undefined && r >= 0);
        ranks
    }
}
