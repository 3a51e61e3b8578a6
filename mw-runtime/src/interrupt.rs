//! Stopping a run on SIGINT or SIGTERM: the engine stops handing out chunks, tells the workers
//! to stop, writes the metrics and trace of what ran, and the process exits with `128 + signal`
//! (130 for SIGINT, 143 for SIGTERM), as a shell expects of a program ended by a signal.
//!
//! The handlers only set flags (signal-hook's `flag` module: async-signal-safe, no code of
//! ours runs inside the handler); the engine looks at them between answers, and gives workers
//! still busy half a second to stop before it leaves them behind, so a run ends within a second
//! of the signal whatever its tasks are doing. A second signal ends the process at once,
//! without writing anything: the usual way out of a stuck shutdown. An MPI worker rank, which
//! has nothing to write, leaves a second after the first signal (mpirun passes a signal on to
//! every rank, the master among them).

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::error::{Error, Result};
use crate::signal::Signal;

/// The flags the handlers set, installed once per process.
struct Flags {
    /// Set by the first signal: a later one ends the process at once.
    any: Arc<AtomicBool>,
    /// The number of the last signal received, 0 before any.
    which: Arc<AtomicUsize>,
}

static FLAGS: OnceLock<Flags> = OnceLock::new();

/// Installs the handlers of SIGINT and SIGTERM, once per process.
///
/// # Errors
/// When the operating system refuses a handler.
pub(crate) fn watch() -> Result<()> {
    if FLAGS.get().is_some() {
        return Ok(());
    }
    let flags = install().map_err(|e| {
        Error::backend(format!(
            "cannot install the handlers of SIGINT and SIGTERM: {e}"
        ))
    })?;
    // Another thread may have installed them meanwhile: its flags are set as well as ours.
    let _ = FLAGS.set(flags);
    Ok(())
}

#[cfg(unix)]
fn install() -> std::io::Result<Flags> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::flag;

    let flags = Flags {
        any: Arc::new(AtomicBool::new(false)),
        which: Arc::new(AtomicUsize::new(0)),
    };
    if crate::launch::is_worker_rank() {
        leave_on_signal()?;
    }
    for (signal, code) in [(SIGINT, 130), (SIGTERM, 143)] {
        // Registered first, so it sees the flag as the previous signal left it.
        flag::register_conditional_shutdown(signal, code, Arc::clone(&flags.any))?;
        flag::register_usize(signal, Arc::clone(&flags.which), signal as usize)?;
        flag::register(signal, Arc::clone(&flags.any))?;
    }
    Ok(flags)
}

/// How long an MPI worker rank stays after a signal: the master, which the launcher signals
/// too, stops the run and writes what ran meanwhile (a rank that leaves at once makes mpirun end
/// the job, the master with it, before that).
#[cfg(unix)]
const WORKER_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// On an MPI worker rank, which has nothing to write: the first signal ends the process
/// [`WORKER_GRACE`] later, whatever its `do_work` is doing, unless the run ended first.
#[cfg(unix)]
fn leave_on_signal() -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};

    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("mw-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                std::thread::sleep(WORKER_GRACE);
                std::process::exit(128 + signal);
            }
        })?;
    Ok(())
}

#[cfg(not(unix))]
fn install() -> std::io::Result<Flags> {
    Ok(Flags {
        any: Arc::new(AtomicBool::new(false)),
        which: Arc::new(AtomicUsize::new(0)),
    })
}

/// The signal received, if any: the run should stop.
pub(crate) fn received() -> Option<Signal> {
    let flags = FLAGS.get()?;
    if !flags.any.load(Ordering::Relaxed) {
        return None;
    }
    Signal::from_number(flags.which.load(Ordering::Relaxed))
}

/// Fails with [`ErrorKind::Interrupted`](crate::ErrorKind::Interrupted) once a signal came.
/// Inlined: the engine checks before every chunk it hands out.
#[inline]
pub(crate) fn check() -> Result<()> {
    match received() {
        Some(signal) => Err(Error::interrupted(signal)),
        None => Ok(()),
    }
}
