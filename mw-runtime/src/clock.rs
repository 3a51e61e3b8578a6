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
/// is measured only when the one before took long enough for the read not to matter.
#[derive(Debug)]
pub(crate) struct CpuMeter {
    measure: bool,
    started: Option<cpu_time::ThreadTime>,
}

/// Processing time below which a chunk's successor is not measured.
const CPU_WORTH_MEASURING: Duration = Duration::from_micros(20);

impl Default for CpuMeter {
    fn default() -> Self {
        CpuMeter {
            measure: true,
            started: None,
        }
    }
}

impl CpuMeter {
    /// A chunk begins.
    #[inline]
    pub(crate) fn begin(&mut self) {
        self.started = if self.measure {
            cpu_time::ThreadTime::try_now().ok()
        } else {
            None
        };
    }

    /// The chunk, which took `busy` of wall time, ended: its CPU time in ns, if measured.
    pub(crate) fn end(&mut self, busy: Duration) -> Option<u64> {
        self.measure = busy >= CPU_WORTH_MEASURING;
        let started = self.started.take()?;
        let cpu = cpu_time::ThreadTime::try_now().ok()?.as_duration();
        let spent = cpu.checked_sub(started.as_duration())?;
        u64::try_from(spent.as_nanos()).ok()
    }
}
