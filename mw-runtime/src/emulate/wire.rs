//! The emulated network of the local backend (`--link-latency`, `--link-bandwidth`): the
//! master's network card on a switched network, as in the papers' clusters. One link each way,
//! shared by all workers: a message waits until the link is free, occupies it for its encoded
//! size over the bandwidth, and arrives a latency after it has left. So sends to several
//! workers queue behind each other, and so do answers from several workers.
//!
//! Delivery is delayed, never spun for: the receiver sleeps until the message is due. A
//! sleep overshoots by tens of microseconds, as much as the latencies emulated, so each
//! receiver learns its overshoot and asks for that much less. An emulation, not a network:
//! no switch contention, no TCP windows, no loss.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::clock::{self, Instant};
use crate::config::EmulatedLink;

/// One direction of the master's link.
#[derive(Debug)]
pub(crate) struct Wire {
    latency: Duration,
    /// Nanoseconds the link is busy per byte.
    ns_per_byte: f64,
    /// When the link finishes sending what it holds.
    free_at: Mutex<Option<Instant>>,
}

impl Wire {
    pub(crate) fn new(link: &EmulatedLink) -> Wire {
        Wire {
            latency: Duration::from_secs_f64(link.latency_ms / 1e3),
            ns_per_byte: link.ms_per_byte() * 1e6,
            free_at: Mutex::new(None),
        }
    }

    /// A message of `bytes` handed to the link `now`: when it arrives.
    pub(crate) fn due(&self, bytes: usize, now: Instant) -> Instant {
        let sending = Duration::from_nanos((bytes as f64 * self.ns_per_byte).round() as u64);
        let mut free_at = self.free_at.lock().unwrap_or_else(PoisonError::into_inner);
        let start = free_at.map_or(now, |free| free.max(now));
        let sent = start + sending;
        *free_at = Some(sent);
        sent + self.latency
    }
}

/// A receiver's sleeps: how much they overshoot, learnt as they go (starting from a typical
/// timer slack).
#[derive(Debug)]
pub(crate) struct Sleeper {
    overshoot: Duration,
}

impl Default for Sleeper {
    fn default() -> Self {
        Sleeper {
            overshoot: Duration::from_micros(50),
        }
    }
}

impl Sleeper {
    /// Waits until `due` (at once if it has passed).
    pub(crate) fn until(&mut self, due: Instant) {
        let now = clock::now();
        let Some(wait) = due.checked_duration_since(now).filter(|w| !w.is_zero()) else {
            return;
        };
        let asked = wait.saturating_sub(self.overshoot);
        if asked.is_zero() {
            return;
        }
        std::thread::sleep(asked);
        let slept = clock::since(now);
        // A moving average of what the sleeps added: a late message is late by about as much
        // as an early one is early.
        let over = slept.saturating_sub(asked);
        self.overshoot = (self.overshoot * 3 + over) / 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(latency_ms: f64, mbit: f64) -> Wire {
        Wire::new(&EmulatedLink {
            latency_ms,
            bandwidth_mbit: Some(mbit),
        })
    }

    #[test]
    fn messages_queue_behind_each_other_on_the_link() {
        // 100 Mbit/s: 12,500 bytes take 1 ms on the link; latency 0.1 ms.
        let wire = link(0.1, 100.0);
        let t0 = clock::now();
        let ms = |due: Instant| due.saturating_duration_since(t0).as_secs_f64() * 1e3;
        let first = wire.due(12_500, t0);
        let second = wire.due(12_500, t0);
        assert!((ms(first) - 1.1).abs() < 1e-6, "{}", ms(first));
        assert!((ms(second) - 2.1).abs() < 1e-6, "{}", ms(second));
        // Once the link is idle again, a message goes at once.
        let later = t0 + Duration::from_millis(10);
        let third = wire.due(1_250, later);
        assert!((ms(third) - 10.2).abs() < 1e-6, "{}", ms(third));
    }

    #[test]
    fn a_latency_alone_costs_the_same_for_any_size() {
        let wire = Wire::new(&EmulatedLink {
            latency_ms: 0.5,
            bandwidth_mbit: None,
        });
        let t0 = clock::now();
        let small = wire.due(1, t0).saturating_duration_since(t0);
        let large = wire.due(1 << 30, t0).saturating_duration_since(t0);
        assert_eq!(small, Duration::from_micros(500));
        assert_eq!(large, Duration::from_micros(500));
    }

    #[test]
    fn the_sleeper_returns_no_earlier_than_due_less_the_overshoot_it_expects() {
        let mut sleeper = Sleeper::default();
        let expected = sleeper.overshoot;
        let start = clock::now();
        let due = start + Duration::from_millis(2);
        sleeper.until(due);
        // A sleep never ends early, so this holds however busy the machine is; how close to
        // `due` it wakes depends on the machine and is not asserted.
        assert!(clock::now() + expected >= due);
        // Past due: no wait at all.
        sleeper.until(start);
    }
}
