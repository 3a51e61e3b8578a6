//! A bound on MPI's start-up. `MPI_Init` is entered by every rank together: a rank that dies or
//! is stopped inside it leaves the others waiting in the library's own start-up exchange, and no
//! launcher ends that wait for a stopped rank, nor Open MPI 5's under `--with-ft ulfm` for a dead
//! one. Nothing can be survived there (no communicator exists yet), so after [`PATIENCE`] each
//! waiting rank says why and exits with status 1: an error instead of a job that never ends.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long starting MPI and agreeing on the run's checks may take on every rank. Generous:
/// on a busy node or across many nodes `MPI_Init` takes seconds.
pub(super) const PATIENCE: Duration = Duration::from_secs(120);

/// Armed while MPI starts; dropping it disarms it.
#[derive(Debug)]
pub(super) struct StartWatch {
    started: Arc<(Mutex<bool>, Condvar)>,
}

impl StartWatch {
    /// Exits the process with status 1 unless dropped within `patience`.
    pub(super) fn arm(patience: Duration) -> StartWatch {
        let started = Arc::new((Mutex::new(false), Condvar::new()));
        let watched = Arc::clone(&started);
        let spawned = std::thread::Builder::new()
            .name("mw-start-watch".into())
            .spawn(move || {
                let (done, wake) = &*watched;
                let deadline = Instant::now() + patience;
                let mut done = done.lock().unwrap_or_else(PoisonError::into_inner);
                while !*done {
                    let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                        // The master says it (its rank is known from the launcher before MPI
                        // is); the workers leave quietly.
                        if crate::launch::is_worker_rank() {
                            std::process::exit(1);
                        }
                        eprintln!(
                            "error: MPI did not start within {} s: a rank of the job died or \
                             was stopped while MPI was starting, and every rank waits for it \
                             there\nhelp: launch the job again; nothing of the run had started",
                            patience.as_secs()
                        );
                        std::process::exit(1);
                    };
                    done = wake
                        .wait_timeout(done, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            });
        if let Err(e) = spawned {
            // Without the watch the start is as unbounded as MPI's own: say so, go on.
            eprintln!("warning: MPI's start-up is not bounded: no thread to watch it ({e})");
        }
        StartWatch { started }
    }
}

impl Drop for StartWatch {
    fn drop(&mut self) {
        let (done, wake) = &*self.started;
        *done.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_that_ends_in_time_disarms_the_watch() {
        let watch = StartWatch::arm(Duration::from_millis(200));
        std::thread::sleep(Duration::from_millis(20));
        drop(watch);
        // Past the patience: the process is still here.
        std::thread::sleep(Duration::from_millis(400));
    }
}
