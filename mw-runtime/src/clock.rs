//! The clock of the measure points. The engine reads it a few times per chunk, on the master
//! and on the workers; with chunks of one short task that is a large share of the work, so it
//! is `quanta`'s: the processor's time-stamp counter, calibrated against the system clock once
//! per process (under a millisecond), read for a third of what `std::time::Instant::now` costs.
//! Where the counter cannot be trusted, `quanta` falls back to the system clock.

use std::sync::OnceLock;
use std::time::Duration;

pub(crate) use quanta::Instant;

static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();

/// The time now. (Not `Instant::now`, which first looks for a mock clock in thread-local
/// storage: a tenth of the cost of a read.)
#[inline]
pub(crate) fn now() -> Instant {
    CLOCK.get_or_init(quanta::Clock::new).now()
}

/// Time passed since `earlier`.
#[inline]
pub(crate) fn since(earlier: Instant) -> Duration {
    now().saturating_duration_since(earlier)
}

/// A worker thread's CPU time around the processing of a chunk: with the chunk's wall time, it
/// tells whether tasks keep a core busy (and so compete for the machine's cores) or wait
/// (sleep, I/O) and leave it. A read is a system call of a few hundred nanoseconds, so a chunk
/// is measured only when it is expected to take long enough for the read not to matter: its
/// tasks at the pace of the chunk before. (Not by the chunk before's own length: a run's first
/// chunks are small probes, and the large chunk after them would go unmeasured.)
///
/// On Linux it also reads the thread's run-queue wait (the run delay of its scheduler
/// statistics): the time the thread was ready to run and waited for a core, because other
/// threads, the program's own or other programs', held them all. Inside the chunk it is what
/// makes a computing task on a busy machine look like a task that sleeps; between the last
/// answer and the chunk's start it is the worker's late wake-up for the chunk, which a busy
/// machine adds to the chunk's trip as if the link were slower. That read costs a few
/// microseconds, so it needs a chunk expected to be longer.
#[derive(Debug, Default)]
pub(crate) struct CpuMeter {
    /// Processing time and tasks of the last chunk, once there was one.
    last: Option<(Duration, usize)>,
    /// Tasks of the chunk begun.
    tasks: usize,
    started: Option<cpu_time::ThreadTime>,
    run_queue: RunQueue,
}

/// Expected processing time below which a chunk's CPU time is not measured.
const CPU_WORTH_MEASURING: Duration = Duration::from_micros(20);
/// Expected processing time below which a chunk's run-queue wait is not measured.
const WAIT_WORTH_MEASURING: Duration = Duration::from_micros(200);

/// What the meter measured of a chunk, in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CpuUse {
    /// Thread CPU time.
    pub cpu_ns: Option<u64>,
    /// Time ready to run and waiting for a core, in the chunk.
    pub wait_ns: Option<u64>,
    /// Time ready to run and waiting for a core between the answer before and the chunk's
    /// start.
    pub late_ns: Option<u64>,
}

impl CpuMeter {
    /// A chunk of `tasks` tasks begins.
    #[inline]
    pub(crate) fn begin(&mut self, tasks: usize) {
        // Worth it when `tasks` at the last chunk's pace take `least` or more; cross-multiplied,
        // as a division per chunk costs as much as an empty task. The first chunk is
        // measured: nothing tells its length.
        let last = self.last;
        let worth = |least: Duration| {
            last.is_none_or(|(busy, n)| {
                busy.as_nanos() * tasks as u128 >= least.as_nanos() * n as u128
            })
        };
        self.tasks = tasks;
        self.started = if worth(CPU_WORTH_MEASURING) {
            cpu_time::ThreadTime::try_now().ok()
        } else {
            None
        };
        self.run_queue.begin(worth(WAIT_WORTH_MEASURING));
    }

    /// The chunk, which took `busy` of wall time, ended: its CPU time and run-queue wait, those
    /// measured.
    pub(crate) fn end(&mut self, busy: Duration) -> CpuUse {
        self.last = Some((busy, self.tasks));
        let (wait_ns, late_ns) = self.run_queue.end();
        let cpu_ns = self.started.take().and_then(|started| {
            let cpu = cpu_time::ThreadTime::try_now().ok()?.as_duration();
            let spent = cpu.checked_sub(started.as_duration())?;
            u64::try_from(spent.as_nanos()).ok()
        });
        CpuUse {
            cpu_ns,
            wait_ns,
            late_ns,
        }
    }
}

/// The calling thread's run-queue wait, from `/proc/thread-self/schedstat` (its second field,
/// in ns), kept open and read again from its start for each chunk. Where the file cannot be
/// opened (not Linux, a kernel without scheduler statistics), nothing is measured.
#[derive(Debug, Default)]
struct RunQueue {
    /// Opened on the first chunk measured, on the worker's own thread; `None` inside once
    /// opening failed.
    file: Option<Option<std::fs::File>>,
    /// The run delay when the chunk began, when measured, and its growth since the chunk
    /// before ended, when that was measured too.
    started: Option<u64>,
    late: Option<u64>,
    /// The run delay when the last chunk ended, when measured.
    ended: Option<u64>,
}

impl RunQueue {
    /// A chunk begins; `measure` says whether its wait is read.
    fn begin(&mut self, measure: bool) {
        let ended = self.ended.take();
        self.started = if measure { self.read() } else { None };
        self.late = self.started.zip(ended).and_then(|(s, e)| s.checked_sub(e));
    }

    /// The wait in the chunk, and before it.
    fn end(&mut self) -> (Option<u64>, Option<u64>) {
        let late = self.late.take();
        let Some(started) = self.started.take() else {
            return (None, None);
        };
        self.ended = self.read();
        (self.ended.and_then(|e| e.checked_sub(started)), late)
    }

    fn read(&mut self) -> Option<u64> {
        let file = self
            .file
            .get_or_insert_with(|| std::fs::File::open("/proc/thread-self/schedstat").ok())
            .as_ref()?;
        run_delay(file)
    }
}

/// The calling thread's run-queue wait since it started, in ns (Linux): for a thread that
/// reads it now and then, such as the master's between iterations.
pub(crate) fn thread_run_delay() -> Option<u64> {
    run_delay(&std::fs::File::open("/proc/thread-self/schedstat").ok()?)
}

#[cfg(unix)]
fn run_delay(file: &std::fs::File) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 96];
    let len = file.read_at(&mut buf, 0).ok()?;
    let text = std::str::from_utf8(&buf[..len]).ok()?;
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

#[cfg(not(unix))]
fn run_delay(_: &std::fs::File) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On Linux a thread reads its own run-queue wait, and with its CPU time it fits in the
    /// chunk's wall time; a chunk expected to be short is not measured, one expected to be long
    /// is, whatever the chunk before took.
    #[test]
    #[cfg(target_os = "linux")]
    fn the_run_queue_wait_is_read_on_linux() {
        let mut meter = CpuMeter::default();
        // Spins for 2 ms of CPU time, however long that takes on a busy machine.
        let chunk = || {
            let started = now();
            let cpu = || cpu_time::ThreadTime::now().as_duration();
            let until = cpu() + Duration::from_millis(2);
            while cpu() < until {
                std::hint::black_box(0u64);
            }
            since(started)
        };
        let (mut last, mut wall) = (CpuUse::default(), Duration::ZERO);
        for _ in 0..3 {
            meter.begin(1);
            wall = chunk();
            last = meter.end(wall);
        }
        let (cpu, wait) = (last.cpu_ns.unwrap(), last.wait_ns.unwrap());
        // Two measured chunks in a row: the time between them was measured too.
        assert!(last.late_ns.is_some(), "{last:?}");
        assert!(cpu >= 2_000_000, "{last:?}");
        // Computing and waiting for a core fit in the chunk's wall time (with the reads'
        // slack).
        assert!(
            cpu + wait <= wall.as_nanos() as u64 + 100_000,
            "{last:?} in {wall:?}"
        );
        // A task of 10 µs: one is not worth reading the wait for, a hundred are.
        meter.end(Duration::from_micros(10));
        meter.begin(1);
        let short = meter.end(Duration::from_micros(10));
        assert_eq!(
            (short.wait_ns, short.cpu_ns.is_some()),
            (None, false),
            "{short:?}"
        );
        meter.begin(100);
        assert!(meter.end(chunk()).wait_ns.is_some());
    }
}
