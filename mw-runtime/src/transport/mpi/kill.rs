//! Ending a worker's process that the master gave up on: `MPI_Finalize` waits for every rank, so a
//! rank that never answers (stopped, or stuck in its code) would hold the whole job forever.
//! Where the launcher keeps the job when a rank ends (recovery), it is ended at once; else
//! ending it ends the whole job, so it is ended only as the master exits. A worker stranded in
//! its run after the master is gone ends itself the same way (`lifeline::watch`).
#![allow(unsafe_code)]

use std::io;
use std::sync::Mutex;

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

/// Processes of this node to end as the master's process exits.
static AT_EXIT: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Ends process `pid` of this node as the master's process exits, once it has said its status
/// (`crate::status`): a launcher without recovery ends the whole job when a rank ends, so the
/// master's results and status must be out first. `false` where the master has no exit handler
/// (then the caller ends it now).
pub(super) fn at_exit(pid: u32) -> bool {
    if !crate::status::then_at_exit(end_left_behind) {
        return false;
    }
    AT_EXIT.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
    true
}

/// Run by the exit handler: a thread that held the list as the process exited leaves it be
/// (`try_lock`, never a wait inside an exit handler).
fn end_left_behind() {
    if let Ok(pids) = AT_EXIT.try_lock() {
        for &pid in pids.iter() {
            let _ = kill(pid);
        }
    }
}
