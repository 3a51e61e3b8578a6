//! The worker: checks what it received, then takes the task's drawn time, by sleeping (the
//! default: many workers fit on a few cores) or by spinning (`--spin`: real CPU work).

use std::time::{Duration, Instant};

use mw::prelude::*;

use crate::inject::{self, Inject, Kind};
use crate::messages::{Echo, Job, Round};
use crate::payload::{self, checksum};

/// A synthetic worker.
#[derive(Debug, Clone, Default)]
pub struct SyntheticWorker {
    spin: bool,
    result_bytes: usize,
    /// Checksum of the shared data, computed once per iteration: `(iteration, checksum)`.
    shared: Option<(u64, u64)>,
    /// Slept past the last deadline; taken off the next sleep, so that sleep overshoot (tens of
    /// microseconds) does not pile up over many short tasks. At most [`CATCH_UP`]: a longer
    /// overshoot is a busy machine, which a real task would lose too; paying it back would make
    /// the next tasks take almost nothing and mislead the tuner's view of the task times.
    ahead: Duration,
    /// This worker's number, and the faults to inject (`--inject`).
    index: usize,
    inject: Inject,
}

impl SyntheticWorker {
    /// A worker that answers with `result_bytes` of payload, spinning instead of sleeping when
    /// `spin`, and goes wrong as `inject` says.
    pub fn new(spin: bool, result_bytes: usize, inject: Inject) -> Self {
        SyntheticWorker {
            spin,
            result_bytes,
            inject,
            ..SyntheticWorker::default()
        }
    }

    /// Returns once `duration` has passed since `started` (checking the payloads counts).
    fn take(&mut self, started: Instant, duration: Duration) {
        let Some(deadline) = started.checked_add(duration) else {
            // Beyond what an Instant can hold: just wait that long.
            std::thread::sleep(duration);
            return;
        };
        if self.spin {
            while Instant::now() < deadline {
                std::hint::spin_loop();
            }
            return;
        }
        let now = Instant::now();
        let wanted = deadline.saturating_duration_since(now);
        if wanted <= self.ahead {
            self.ahead -= wanted;
            return;
        }
        let sleep = wanted - self.ahead;
        std::thread::sleep(sleep);
        self.ahead = now.elapsed().saturating_sub(sleep).min(CATCH_UP);
    }
}

/// The most sleep overshoot taken off later tasks: a quiet machine's timer overshoots by tens of
/// microseconds.
const CATCH_UP: Duration = Duration::from_micros(200);

#[mw::worker]
impl SyntheticWorker {
    fn initialize(&mut self, setup: &WorkerSetup) -> mw::Result<()> {
        self.index = setup.index();
        Ok(())
    }

    fn do_work(&mut self, round: &Round, job: &Job) -> Result<Echo, String> {
        if let Some(kind) = self.inject.strike(self.index, round.iteration) {
            let error = inject::act(kind, self.index, round.iteration);
            if kind == Kind::Error {
                return Err(error);
            }
        }
        let started = Instant::now();
        let shared_checksum = match self.shared {
            Some((iteration, sum)) if iteration == round.iteration => sum,
            _ => {
                let sum = checksum(&round.data);
                self.shared = Some((round.iteration, sum));
                sum
            }
        };
        let echo = Echo {
            id: job.id,
            task_checksum: checksum(&job.payload),
            shared_checksum,
            payload: payload::fill(job.id, payload::RESULT, self.result_bytes),
        };
        self.take(started, Duration::from_nanos(job.duration_ns));
        Ok(echo)
    }
}
