//! What an experiment sets up on the machine and must take down however the process ends:
//! network namespaces, a cluster in a box, the programs it started. Each is held by a
//! [`Teardown`], which takes it down when dropped (the experiment ended, or failed); a SIGINT
//! or SIGTERM that ends the process first would skip every drop, so [`watch_signals`] takes
//! down whatever is still up, newest first (a program before the box it runs in), before the
//! process exits with the signal's status. A [`Scratch`] folder is one of them.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

type Action = Box<dyn FnOnce() + Send>;

/// The teardowns not yet run, by id.
static PENDING: Mutex<Vec<(u64, Action)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Takes something down once: when dropped, or at a signal that ends the process.
#[derive(Debug)]
pub struct Teardown(u64);

impl Teardown {
    /// Holds `action`, to be run once.
    pub fn new(action: impl FnOnce() + Send + 'static) -> Teardown {
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        pending().push((id, Box::new(action)));
        Teardown(id)
    }

    /// Lets the action go without running it: what it would take down is gone already (a
    /// child process waited for, whose id may be another's from now on).
    pub fn disarm(self) {
        drop(take(self.0));
        std::mem::forget(self);
    }
}

impl Drop for Teardown {
    fn drop(&mut self) {
        if let Some(action) = take(self.0) {
            action();
        }
    }
}

/// The action of teardown `id`, out of the list: `None` once run or disarmed.
fn take(id: u64) -> Option<Action> {
    let mut pending = pending();
    let at = pending.iter().position(|(held, _)| *held == id)?;
    Some(pending.remove(at).1)
}

/// The list, usable even if an action panicked while it was held.
fn pending() -> std::sync::MutexGuard<'static, Vec<(u64, Action)>> {
    PENDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A scratch folder for an experiment's files (metrics, traces): made under the system's
/// temporary folder with a name nobody can guess or take first and for its owner alone (a
/// name made of the process id could be a link another local user put there), removed with
/// everything in it when dropped or at a signal.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
    _removed: Teardown,
}

impl Scratch {
    /// A new folder named `NAME-` and a random suffix.
    ///
    /// # Errors
    /// The folder could not be made; the message names where.
    pub fn new(name: &str) -> Result<Scratch, String> {
        use std::os::unix::fs::PermissionsExt;
        let path = tempfile::Builder::new()
            .prefix(&format!("{name}-"))
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|e| {
                format!(
                    "no scratch folder in `{}`: {e}",
                    std::env::temp_dir().display()
                )
            })?
            .keep();
        let removed = path.clone();
        Ok(Scratch {
            path,
            _removed: Teardown::new(move || {
                let _ = std::fs::remove_dir_all(&removed);
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Runs every teardown still pending, newest first (what was set up last may rest on what
/// was set up before it).
pub fn run_pending() {
    let actions: Vec<(u64, Action)> = std::mem::take(&mut *pending());
    for (_, action) in actions.into_iter().rev() {
        action();
    }
}

/// Watches for SIGINT and SIGTERM on a thread of its own: at the first, says so, takes down
/// what is still up and exits with `128 + signal`.
///
/// # Errors
/// The signal handlers could not be installed.
pub fn watch_signals() -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("mw-bench-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                eprintln!("mw-bench: stopped by signal {signal}; taking down what it set up");
                run_pending();
                std::process::exit(128 + signal);
            }
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, MutexGuard, PoisonError};

    /// The list is the process's: one test at a time uses it.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    /// This test's turn at the list, and a teardown counting its runs in the counter returned.
    fn counting() -> (MutexGuard<'static, ()>, Teardown, Arc<AtomicUsize>) {
        let alone = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        let teardown = Teardown::new(move || {
            counted.fetch_add(1, Ordering::Relaxed);
        });
        (alone, teardown, runs)
    }

    #[test]
    fn a_teardown_runs_once_when_dropped_and_not_again_at_a_signal() {
        let (_alone, held, runs) = counting();
        drop(held);
        run_pending();
        assert_eq!(runs.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_disarmed_teardown_never_runs() {
        let (_alone, held, runs) = counting();
        held.disarm();
        run_pending();
        assert_eq!(runs.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_scratch_folder_is_its_owners_alone_and_gone_when_dropped() {
        use std::os::unix::fs::PermissionsExt;
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
        let scratch = Scratch::new("mw-bench-test").expect("a scratch folder");
        let path = scratch.path().to_path_buf();
        std::fs::write(path.join("metrics.json"), "{}").expect("writable");
        let mode = std::fs::metadata(&path).expect("made").permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        assert!(Scratch::new("mw-bench-test").expect("another").path() != path);
        drop(scratch);
        assert!(!path.exists());
    }

    #[test]
    fn what_is_still_up_is_taken_down_newest_first() {
        let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
        let order = Arc::new(Mutex::new(Vec::new()));
        let held: Vec<Teardown> = (0..3)
            .map(|k| {
                let order = Arc::clone(&order);
                Teardown::new(move || order.lock().unwrap().push(k))
            })
            .collect();
        run_pending();
        // Their drops, later, find nothing left to run.
        drop(held);
        assert_eq!(*order.lock().unwrap(), vec![2, 1, 0]);
    }
}
