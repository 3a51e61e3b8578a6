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
