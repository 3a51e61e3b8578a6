//! Ending a worker's process that the master gave up on: `MPI_Finalize` waits for every rank, so a
//! rank that never answers (stopped, or stuck in its code) would hold the whole job forever.
#![allow(unsafe_code)]

use std::io;

/// Sends SIGKILL to process `pid` of this node.
pub(super) fn kill(pid: u32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .ok()
        .filter(|&pid| pid > 0)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no such process id"))?;
    // SAFETY: `kill` only reads its two integer arguments.
    if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether process `pid` of this node still runs (signal 0 checks without sending anything).
pub(super) fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: `kill` only reads its two integer arguments; signal 0 is never delivered.
    pid > 0 && unsafe { libc::kill(pid, 0) } == 0
}
