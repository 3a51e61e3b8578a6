//! Dynamic Adjusting Factoring: batch sizes follow the measured task-time mean and deviation.

use super::batch::{Batches, round_chunk};
use super::{Ask, Factoring, Plan, Policy};

/// Dynamic Adjusting Factoring (the papers' default).
///
/// Batch `j` holds `R_j / x_j` tasks cut into `N` chunks, with `x_0 = 1 + σ·√(N/2)/μ` for the
/// first batch and `x_j = 2 + σ·√(N/2)/μ` after, recomputed from the current mean `μ` and
/// deviation `σ` of one task's time. A new batch is cut once fewer than `N/2` chunks are ready.
/// When chunks would fall below the lower limit, the rest is split into the last `N` chunks.
/// Without measurements yet (the first iteration) it runs as `dpf` with factor 0.5.
#[derive(Debug, Default, Clone)]
pub struct Daf {
    batches: Batches,
    workers: usize,
    min_chunk: usize,
    batch_index: usize,
    /// Used until task times have been measured.
    warmup: Option<Factoring>,
}

impl Daf {
    /// `x_j` for the batch about to be cut, from the mean and deviation of task times.
    fn divisor(&self, mean: f64, stddev: f64) -> f64 {
        let first = if self.batch_index == 0 { 1.0 } else { 2.0 };
        let spread = if mean > 0.0 {
            stddev * (self.workers as f64 / 2.0).sqrt() / mean
        } else {
            0.0
        };
        first + spread
    }
}

impl Policy for Daf {
    fn name(&self) -> &str {
        "daf"
    }

    fn begin(&mut self, plan: &Plan<'_>) {
        self.batches.reset(plan.tasks);
        self.workers = plan.workers.max(1);
        self.min_chunk = plan.min_chunk.max(1);
        self.batch_index = 0;
        self.warmup = (plan.stats.pooled().count() == 0).then(|| {
            let mut dpf = Factoring::default();
            dpf.begin(&Plan {
                factor: 0.5,
                ..*plan
            });
            dpf
        });
    }

    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        if let Some(dpf) = &mut self.warmup {
            return dpf.next_chunk(ask);
        }
        let pooled = ask.stats.pooled();
        let x = self.divisor(pooled.mean(), pooled.stddev());
        let (workers, min_chunk) = (self.workers, self.min_chunk);
        if self.batches.ready() * 2 < workers && self.batches.uncut() > 0 {
            let uncut = self.batches.uncut();
            let chunk = uncut as f64 / x / workers as f64;
            if chunk < min_chunk as f64 {
                // The lower limit is reached: the rest goes in the last N chunks.
                let parts = workers.min(uncut / min_chunk).max(1);
                self.batches.cut_even(uncut, parts);
            } else {
                self.batches.cut(round_chunk(chunk, min_chunk), workers);
            }
            self.batch_index += 1;
        }
        self.batches.next(ask, |_| {})
    }
}
