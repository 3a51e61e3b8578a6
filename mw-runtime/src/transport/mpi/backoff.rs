//! How a process waits for MPI without a blocking call: test, then spin, yield or sleep.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::library;

/// Waits between tests: busy for the first microseconds (answers on a node come back that
/// fast), then yielding the core until `spin` has passed — or busy all along when this rank
/// has a core to itself ([`shares_core`]), as a blocking MPI receive would be — then sleeping, doubling up to `max`
/// and, while a message is due, to `√(2·w·t)` after waiting `t`, `w` the cost of a wake-up
/// ([`WAKE_UP`]): the sleep that balances the core time wake-ups take from the processes
/// sharing it against the delay in noticing the message (≈ 100 µs after 1 ms, 1 ms after
/// 100 ms). The clock is read once every [`CHECK_EVERY`] waits while busy or yielding (a read
/// costs as much as a test, and an answer due soon usually arrives within those waits), and
/// at every wake-up.
pub(super) struct Backoff {
    /// When the clock was first read.
    started: Option<Instant>,
    waits: u32,
    phase: Phase,
    spin: Duration,
    sleep: Duration,
    max: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Busy,
    Yielding,
    Sleeping,
}

/// How long a test loop stays busy before it starts yielding the core.
const BUSY: Duration = Duration::from_micros(20);
/// Waits between two looks at the clock, while busy or yielding.
pub(super) const CHECK_EVERY: u32 = 64;
/// What a wake-up costs the core: the switch to the sleeper and back, and the caches.
const WAKE_UP: Duration = Duration::from_micros(5);
/// The shortest sleep.
const NAP: Duration = Duration::from_micros(10);

impl Backoff {
    /// Spins and yields for `spin`, then sleeps; with `spin` zero, sleeps at once.
    pub(super) fn new(spin: Duration, max: Duration) -> Self {
        Backoff {
            started: None,
            waits: 0,
            phase: if spin.is_zero() {
                Phase::Sleeping
            } else {
                Phase::Busy
            },
            spin,
            sleep: NAP,
            max,
        }
    }

    /// Whether the waits sleep by now (each is then long next to a look at the clock).
    pub(super) fn sleeping(&self) -> bool {
        self.phase == Phase::Sleeping
    }

    pub(super) fn wait(&mut self) {
        self.waits = self.waits.wrapping_add(1);
        if self.phase != Phase::Sleeping && self.waits % CHECK_EVERY == 0 {
            let waited = self.started.get_or_insert_with(Instant::now).elapsed();
            self.phase = if waited >= self.spin {
                Phase::Sleeping
            } else if waited >= BUSY.min(self.spin) && shares_core() {
                Phase::Yielding
            } else {
                Phase::Busy
            };
        }
        match self.phase {
            Phase::Busy => std::hint::spin_loop(),
            Phase::Yielding => std::thread::yield_now(),
            Phase::Sleeping => {
                std::thread::sleep(self.sleep);
                let cap = match self.started {
                    // Nothing is due (a parked process): only `max` bounds the sleep.
                    _ if self.spin.is_zero() => self.max,
                    Some(started) => {
                        let waited = started.elapsed().as_secs_f64();
                        let balanced = (2.0 * WAKE_UP.as_secs_f64() * waited).sqrt();
                        Duration::from_secs_f64(balanced).clamp(NAP, self.max.max(NAP))
                    }
                    None => NAP,
                };
                self.sleep = (self.sleep * 2).min(cap);
            }
        }
    }
}

/// Processes of this job started on this node besides those the launcher counts: workers the
/// master spawned here, or, in a spawned worker, the processes already on the master's node.
static SPAWNED_HERE: AtomicUsize = AtomicUsize::new(0);

/// Counts `n` more processes spawned onto this node.
pub(super) fn spawned_here(n: usize) {
    SPAWNED_HERE.fetch_add(n, Ordering::Relaxed);
}

/// Counts one process spawned onto this node less: it was released or lost.
pub(super) fn left_here() {
    let _ = SPAWNED_HERE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
        Some(n.saturating_sub(1))
    });
}

/// Processes of this job on this node, as far as it knows: the launcher's and the spawned.
pub(super) fn processes_here() -> usize {
    here().1 + SPAWNED_HERE.load(Ordering::Relaxed)
}

/// Asked to yield (Open MPI's variables), the processes the launcher started on this node, and
/// its cores.
fn here() -> (bool, usize, usize) {
    static HERE: OnceLock<(bool, usize, usize)> = OnceLock::new();
    *HERE.get_or_init(|| {
        let set = |name| library::env_is(name, library::open_mpi_true);
        let asked = set("OMPI_MCA_mpi_oversubscribe") || set("OMPI_MCA_mpi_yield_when_idle");
        let launched = crate::launch::detect()
            .and_then(|launch| launch.local)
            .unwrap_or(1);
        (asked, launched, node_cores())
    })
}

/// Whether this rank shares its core with other processes of the job: more of them run on
/// this node than it has cores. The launcher says how many it started here (Open MPI's
/// `OMPI_COMM_WORLD_LOCAL_SIZE`, hydra's `MPI_LOCALNRANKS`, Slurm's tasks per node), the
/// spawner how many it added ([`spawned_here`]); a user who wants Open MPI's own waits to yield
/// says so with `OMPI_MCA_mpi_yield_when_idle`, which counts too. A rank with a core of its own
/// spins until a reply due soon arrives: a yield there hands the core to any other process for
/// a whole time slice, a scheduler round trip per message.
pub(super) fn shares_core() -> bool {
    let (asked, _, cores) = here();
    asked || crowded(processes_here(), cores)
}

/// Whether `processes` busy on a node of `cores` cores must share them.
fn crowded(processes: usize, cores: usize) -> bool {
    processes > cores
}

/// The cores of this node: those online, not those this process is bound to (a launcher that
/// binds each rank to one core leaves it one, and the ranks still have a core each).
#[allow(unsafe_code)]
fn node_cores() -> usize {
    // SAFETY: sysconf reads a system value and has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(online)
        .ok()
        .filter(|&n| n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::crowded;

    #[test]
    fn ranks_share_cores_when_more_run_on_the_node_than_it_has() {
        assert!(!crowded(1, 1));
        assert!(!crowded(2, 2));
        assert!(crowded(3, 2));
        assert!(crowded(7, 4));
    }
}
