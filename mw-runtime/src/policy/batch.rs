//! Batch policies: each batch is cut into `N` chunks that wait in a queue; when it runs dry, the
//! next batch is cut from the tasks not yet cut.

use std::collections::VecDeque;

use super::{Ask, Plan, Policy, split_even};

/// Chunk sizes cut but not yet handed out, and the tasks not yet cut.
#[derive(Debug, Default, Clone)]
pub(crate) struct Batches {
    ready: VecDeque<usize>,
    uncut: usize,
}

impl Batches {
    pub(crate) fn reset(&mut self, tasks: usize) {
        self.ready.clear();
        self.uncut = tasks;
    }

    pub(crate) fn uncut(&self) -> usize {
        self.uncut
    }

    pub(crate) fn ready(&self) -> usize {
        self.ready.len()
    }

    /// Cuts up to `chunks` chunks of `size` tasks (fewer, and the last one smaller, when the tasks
    /// run out).
    pub(crate) fn cut(&mut self, size: usize, chunks: usize) {
        let size = size.max(1);
        for _ in 0..chunks {
            if self.uncut == 0 {
                break;
            }
            let chunk = size.min(self.uncut);
            self.ready.push_back(chunk);
            self.uncut -= chunk;
        }
    }

    /// Cuts `total` tasks into `parts` chunks of nearly equal size.
    pub(crate) fn cut_even(&mut self, total: usize, parts: usize) {
        let total = total.min(self.uncut);
        for size in split_even(total, parts) {
            self.ready.push_back(size);
        }
        self.uncut -= total;
    }

    /// Next ready chunk; when the queue is empty, `refill` cuts a batch first.
    pub(crate) fn next(&mut self, ask: &Ask<'_>, refill: impl FnOnce(&mut Self)) -> usize {
        if self.ready.is_empty() && self.uncut > 0 {
            refill(self);
        }
        self.ready.pop_front().unwrap_or(ask.remaining)
    }
}

/// Rounds half-way cases to even, as the factoring examples of the papers do (62.5 → 62,
/// 31.5 → 32), with the result at least `min`.
pub(crate) fn round_chunk(size: f64, min: usize) -> usize {
    (size.round_ties_even().max(0.0) as usize).max(min.max(1))
}

/// One chunk of `M/N` tasks per worker: the papers' "no policy".
#[derive(Debug, Default, Clone)]
pub struct Static {
    batches: Batches,
}

impl Policy for Static {
    fn name(&self) -> &str {
        "static"
    }

    fn begin(&mut self, plan: &Plan<'_>) {
        self.batches.reset(plan.tasks);
        self.batches.cut_even(plan.tasks, plan.workers);
    }

    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        self.batches.next(ask, |_| {})
    }
}

/// Fixed Size Chunking: every batch holds `factor·M` tasks (rounded, and at least `min_chunk` per
/// worker), cut into `N` chunks of equal size (differing by at most one task), so that a batch
/// keeps every worker busy once.
#[derive(Debug, Default, Clone)]
pub struct Fsc {
    batches: Batches,
    batch: usize,
    workers: usize,
}

impl Policy for Fsc {
    fn name(&self) -> &str {
        "fsc"
    }

    fn begin(&mut self, plan: &Plan<'_>) {
        self.batches.reset(plan.tasks);
        self.workers = plan.workers.max(1);
        let batch = (plan.factor * plan.tasks as f64).round() as usize;
        self.batch = batch.max(self.workers.saturating_mul(plan.min_chunk.max(1)));
    }

    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        let (batch, workers) = (self.batch, self.workers);
        self.batches.next(ask, |b| b.cut_even(batch, workers))
    }
}

/// Factoring (Hummel): batch `i` has `N` chunks of `R_i·factor/N` tasks, `R_i` the tasks not yet
/// cut, never below the threshold `min_chunk`. With `factor` tuned between iterations this is
/// `dpf`.
#[derive(Debug, Default, Clone)]
pub struct Factoring {
    /// Built as `dpf`: the same cuts, under the name whose factor the tuner adjusts.
    pub(crate) tuned: bool,
    batches: Batches,
    factor: f64,
    workers: usize,
    min_chunk: usize,
}

impl Factoring {
    /// Factoring under the name `dpf`.
    pub(crate) fn dpf() -> Self {
        Factoring {
            tuned: true,
            ..Factoring::default()
        }
    }
}

impl Policy for Factoring {
    fn name(&self) -> &str {
        if self.tuned { "dpf" } else { "factoring" }
    }

    fn begin(&mut self, plan: &Plan<'_>) {
        self.batches.reset(plan.tasks);
        self.factor = plan.factor;
        self.workers = plan.workers.max(1);
        self.min_chunk = plan.min_chunk;
    }

    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        let Factoring {
            factor,
            workers,
            min_chunk,
            ..
        } = *self;
        self.batches.next(ask, |b| {
            let size = round_chunk(b.uncut() as f64 * factor / workers as f64, min_chunk);
            b.cut(size, workers);
        })
    }
}
