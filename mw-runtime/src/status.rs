//! The master's exit status, said on the standard error as its process exits:
//!
//! ```text
//! mw: exit status 0 (completed)
//! ```
//!
//! A launcher does not always pass the master's status on: Open MPI 4's `mpirun --mca
//! orte_enable_recovery 1` exits 0 whatever its ranks return, and a lost rank on another node
//! can leave `mpirun` running after the master has ended. This line carries the truth past
//! such a launcher: `mwgen launch` reads it and exits with it, and a batch script can grep it.
//!
//! **Contract:** on the master of a launched run (rank 0 of `mpirun` or `srun`; not a worker
//! rank, not a spawned worker, not a run on threads) the last line the process writes on its
//! standard error is `mw: exit status N`, `N` the status its parent sees (0–255), followed by
//! ` (REASON)` when the runtime knows why (`completed`, `failed`, `interrupted by SIGINT`,
//! `interrupted by SIGTERM`, `panicked`, `bad input`). It is written even under `--quiet`.
//! When `MW_STATUS_FILE` names a file (`mwgen launch` sets it), the same line is written to that
//! file too, for a launcher that stops passing the master's standard error on.
//!
//! On Linux with glibc the line is written by a handler registered with `on_exit(3)`, which
//! receives the status given to `exit`, however the process got there: `main` returning `Ok`
//! or `Err`, `std::process::exit` on the signal path, the 101 of a panic. The handler is
//! registered before MPI starts, so it runs after MPI's own exit handlers: its line is last.
//! A process ended by a signal's default action or by `_exit` runs no handler and says
//! nothing (`mwgen launch` then reports that the master did not say its status). Elsewhere the
//! runtime writes the line itself as the run ends, from the run's outcome: a status the program
//! gives after the run is then not seen.

use std::ffi::CString;
use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Once, OnceLock};

use crate::launch;
use crate::signal::Signal;

/// What the runtime knows of how the run ended, for the line's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The run has not ended (or never started: a bad flag, say).
    Unknown,
    Completed,
    Failed,
    Interrupted(Signal),
}

impl Outcome {
    fn to_u8(self) -> u8 {
        match self {
            Outcome::Unknown => 0,
            Outcome::Completed => 1,
            Outcome::Failed => 2,
            Outcome::Interrupted(Signal::Int) => 3,
            Outcome::Interrupted(Signal::Term) => 4,
        }
    }

    fn from_u8(value: u8) -> Outcome {
        match value {
            1 => Outcome::Completed,
            2 => Outcome::Failed,
            3 => Outcome::Interrupted(Signal::Int),
            4 => Outcome::Interrupted(Signal::Term),
            _ => Outcome::Unknown,
        }
    }
}

static OUTCOME: AtomicU8 = AtomicU8::new(0);
static REGISTER: Once = Once::new();
/// Whether the exit handler is in place (registered, and `on_exit` took it).
static HOOKED: AtomicBool = AtomicBool::new(false);
/// What the process does once it has said its status, as it exits.
static THEN: OnceLock<fn()> = OnceLock::new();

/// Records how the run ended.
pub(crate) fn set_outcome(outcome: Outcome) {
    OUTCOME.store(outcome.to_u8(), Ordering::Relaxed);
}

fn outcome() -> Outcome {
    Outcome::from_u8(OUTCOME.load(Ordering::Relaxed))
}

/// Whether this process is the master of a run a launcher started.
fn is_launched_master() -> bool {
    !launch::is_spawned_worker() && launch::detect().is_some_and(|l| l.rank == Some(0))
}

/// Writes `mw: exit status N (REASON)` as the last line on the standard error when this process
/// exits, if it is the master of a run started by `mpirun` or `srun` (rank 0); elsewhere does
/// nothing. The line carries the status past launchers that drop it (see `mwgen launch`).
///
/// The runtime calls this itself when a run starts. A program that parses flags of its own
/// before calling [`run_with`](crate::run_with) calls it first in `main`, so that a refused flag
/// (status 2) is reported as well. Once per process; later calls do nothing.
pub fn report_exit_status() {
    REGISTER.call_once(|| {
        if is_launched_master() {
            if let Some(path) = std::env::var_os(STATUS_FILE) {
                use std::os::unix::ffi::OsStringExt;
                if let Ok(path) = CString::new(path.into_vec()) {
                    let _ = STATUS_PATH.set(path);
                }
            }
            HOOKED.store(exit_hook::register(), Ordering::Relaxed);
        }
    });
}

/// Has the exit handler run `action` once it has written the line, as the process exits;
/// `false` (and nothing set) where there is no handler: not the launched master, or no
/// `on_exit`. For what must come after everything the master says: ending a worker's process
/// makes a launcher without recovery end the whole job, the master with it. One action per
/// process; setting the same again is accepted.
#[cfg(feature = "mpi")]
pub(crate) fn then_at_exit(action: fn()) -> bool {
    HOOKED.load(Ordering::Relaxed) && (THEN.set(action).is_ok() || THEN.get() == Some(&action))
}

/// The variable naming a file the line is written to as well: `mwgen launch` sets it, since a
/// launcher may stop passing the master's standard error on (hydra, after losing a node) while
/// a file on the master's node does not depend on it.
pub(crate) const STATUS_FILE: &str = "MW_STATUS_FILE";

/// [`STATUS_FILE`]'s value, read when the hook is registered: the hook allocates nothing.
static STATUS_PATH: OnceLock<CString> = OnceLock::new();

/// Where there is no `on_exit` the runtime writes the line as the run ends, with the status
/// the run's outcome implies.
pub(crate) fn report_now(status: i32) {
    if !exit_hook::REGISTERED && REGISTER.is_completed() && is_launched_master() {
        write_line(status);
    }
}

/// The line for `status`, given what the runtime knows (`outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Line {
    /// As the parent sees it: the low 8 bits of what was given to `exit`.
    status: u8,
    reason: Option<&'static str>,
}

impl Line {
    pub(crate) fn new(status: i32, outcome: Outcome) -> Line {
        let status = (status & 0xff) as u8;
        let reason = match (status, outcome) {
            (0, _) => Some("completed"),
            (101, _) => Some("panicked"),
            (s, Outcome::Interrupted(signal)) if i32::from(s) == signal.exit_code() => {
                Some(match signal {
                    Signal::Int => "interrupted by SIGINT",
                    Signal::Term => "interrupted by SIGTERM",
                })
            }
            (_, Outcome::Failed) => Some("failed"),
            // Clap's status for a flag it refused, before any run.
            (2, Outcome::Unknown) => Some("bad input"),
            _ => None,
        };
        Line { status, reason }
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mw: exit status {}", self.status)?;
        if let Some(reason) = self.reason {
            write!(f, " ({reason})")?;
        }
        Ok(())
    }
}

/// Writes the line for `status` on the standard error with one `write(2)`, without Rust's
/// lock on stderr (another thread may hold it while the process exits) and without
/// allocating.
fn write_line(status: i32) {
    let mut buffer = [0u8; 96];
    let mut cursor = std::io::Cursor::new(&mut buffer[..]);
    if writeln!(cursor, "{}", Line::new(status, outcome())).is_err() {
        return;
    }
    let len = cursor.position() as usize;
    exit_hook::write_stderr(&buffer[..len]);
    if let Some(path) = STATUS_PATH.get() {
        write_status_file(path, &buffer[..len]);
    }
}

/// Writes the line to `path`, a file of the user's own: created with mode 0600 or emptied, never
/// through a link, in one `write(2)`; a reader takes it only once the line is whole.
fn write_status_file(path: &std::ffi::CStr, line: &[u8]) {
    use rustix::fs::{Mode, OFlags};
    let flags =
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if let Ok(file) = rustix::fs::open(path, flags, Mode::RUSR | Mode::WUSR) {
        let _ = rustix::io::write(&file, line);
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // glibc's on_exit and the raw standard error: see each block.
mod exit_hook {
    use std::ffi::{c_int, c_void};
    use std::io::Write;
    use std::mem::ManuallyDrop;
    use std::os::fd::FromRawFd;

    pub(super) const REGISTERED: bool = true;

    // Not in the libc crate; glibc has had it since 1.x (`man 3 on_exit`).
    unsafe extern "C" {
        fn on_exit(function: extern "C" fn(c_int, *mut c_void), arg: *mut c_void) -> c_int;
    }

    extern "C" fn said(status: c_int, _: *mut c_void) {
        super::write_line(status);
        if let Some(then) = super::THEN.get() {
            then();
        }
    }

    /// Whether the handler is in place.
    pub(super) fn register() -> bool {
        // SAFETY: `said` is a plain function that lives as long as the program; the argument
        // is unused. A failure (no room for another handler) leaves the line unwritten.
        unsafe { on_exit(said, std::ptr::null_mut()) == 0 }
    }

    pub(super) fn write_stderr(bytes: &[u8]) {
        // SAFETY: file descriptor 2 is borrowed, never closed (ManuallyDrop); a write to a
        // closed descriptor fails with EBADF, which is ignored.
        let mut stderr = ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(2) });
        let _ = stderr.write_all(bytes);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod exit_hook {
    use std::io::Write;

    pub(super) const REGISTERED: bool = false;

    pub(super) fn register() -> bool {
        false
    }

    pub(super) fn write_stderr(bytes: &[u8]) {
        let _ = std::io::stderr().write_all(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(status: i32, outcome: Outcome) -> String {
        Line::new(status, outcome).to_string()
    }

    #[test]
    fn a_completed_run_says_zero() {
        assert_eq!(line(0, Outcome::Completed), "mw: exit status 0 (completed)");
        assert_eq!(line(0, Outcome::Unknown), "mw: exit status 0 (completed)");
    }

    #[test]
    fn failures_carry_their_status_and_what_is_known_of_them() {
        assert_eq!(line(1, Outcome::Failed), "mw: exit status 1 (failed)");
        assert_eq!(line(3, Outcome::Failed), "mw: exit status 3 (failed)");
        assert_eq!(
            line(101, Outcome::Unknown),
            "mw: exit status 101 (panicked)"
        );
        assert_eq!(line(2, Outcome::Unknown), "mw: exit status 2 (bad input)");
        assert_eq!(
            line(130, Outcome::Interrupted(Signal::Int)),
            "mw: exit status 130 (interrupted by SIGINT)"
        );
        assert_eq!(
            line(143, Outcome::Interrupted(Signal::Term)),
            "mw: exit status 143 (interrupted by SIGTERM)"
        );
    }

    #[test]
    fn no_reason_is_made_up() {
        // A status the runtime did not give: the program's own, after a completed run.
        assert_eq!(line(1, Outcome::Completed), "mw: exit status 1");
        assert_eq!(line(7, Outcome::Unknown), "mw: exit status 7");
        // A signal's status that does not match the signal received.
        assert_eq!(
            line(143, Outcome::Interrupted(Signal::Int)),
            "mw: exit status 143"
        );
    }

    #[test]
    fn the_status_is_what_the_parent_sees() {
        assert_eq!(line(256, Outcome::Unknown), "mw: exit status 0 (completed)");
        assert_eq!(line(-1, Outcome::Unknown), "mw: exit status 255");
    }

    #[test]
    fn outcomes_survive_their_storage() {
        for outcome in [
            Outcome::Unknown,
            Outcome::Completed,
            Outcome::Failed,
            Outcome::Interrupted(Signal::Int),
            Outcome::Interrupted(Signal::Term),
        ] {
            assert_eq!(Outcome::from_u8(outcome.to_u8()), outcome);
        }
    }
}
