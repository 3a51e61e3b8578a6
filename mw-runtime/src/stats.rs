//! Task times as the runtime keeps them: the [`Moments`] of a series (what a worker sends per
//! chunk, what the metrics and the tuner read) and the [`TaskStats`] window the policies see.
//! Plain statistics, importing nothing of the crate: measurements, policies, the tuner and the
//! links all speak of them.

/// Count, sum and sum of squares of a series of durations in milliseconds: enough for the mean
/// and standard deviation, and cheap to merge (workers send one per chunk).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Moments {
    count: u64,
    sum: f64,
    sum_sq: f64,
}

impl Moments {
    /// Moments of a chunk: `count` tasks taking `sum` ms in all, squares summing to `sum_sq`.
    pub fn from_sums(count: u64, sum: f64, sum_sq: f64) -> Self {
        Moments { count, sum, sum_sq }
    }

    /// Adds one sample.
    pub fn add(&mut self, ms: f64) {
        self.count += 1;
        self.sum += ms;
        self.sum_sq += ms * ms;
    }

    /// Adds a whole series.
    pub fn merge(&mut self, other: &Moments) {
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of the samples, in ms.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// Sum of the squared samples.
    pub fn sum_sq(&self) -> f64 {
        self.sum_sq
    }

    /// Mean, or 0 without samples.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    /// Population standard deviation, or 0 with fewer than two samples.
    pub fn stddev(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.sum / n;
        (self.sum_sq / n - mean * mean).max(0.0).sqrt()
    }
}

/// Task times the policies see: the last completed iteration and the current one, pooled and
/// per worker. Older iterations are forgotten, so the mean and deviation follow a load that
/// changes during the run.
#[derive(Debug, Clone, Default)]
pub struct TaskStats {
    previous: Window,
    current: Window,
}

#[derive(Debug, Clone, Default)]
struct Window {
    pooled: Moments,
    per_worker: Vec<Moments>,
}

impl Window {
    fn new(workers: usize) -> Self {
        Window {
            pooled: Moments::default(),
            per_worker: vec![Moments::default(); workers],
        }
    }
}

impl TaskStats {
    /// Statistics for a pool of `workers`.
    pub fn new(workers: usize) -> Self {
        TaskStats {
            previous: Window::new(workers),
            current: Window::new(workers),
        }
    }

    /// Statistics for a pool of `workers` whose last iteration took `last` (pooled, per
    /// worker): a run resumed from a checkpoint.
    pub(crate) fn resumed(workers: usize, last: (Moments, Vec<Moments>)) -> Self {
        let mut stats = TaskStats::new(workers);
        stats.previous.pooled = last.0;
        for (slot, m) in stats.previous.per_worker.iter_mut().zip(last.1) {
            *slot = m;
        }
        stats
    }

    /// Workers of the pool.
    pub(crate) fn workers(&self) -> usize {
        self.current.per_worker.len()
    }

    /// Folds in a chunk's task times measured on `worker`.
    pub fn record(&mut self, worker: usize, chunk: &Moments) {
        self.current.pooled.merge(chunk);
        if let Some(w) = self.current.per_worker.get_mut(worker) {
            w.merge(chunk);
        }
    }

    /// Closes an iteration: its times become the previous iteration's, and the one before is
    /// forgotten.
    pub fn end_iteration(&mut self) {
        let fresh = Window::new(self.current.per_worker.len());
        self.previous = std::mem::replace(&mut self.current, fresh);
    }

    /// All workers together, over the last completed iteration and the current one.
    pub fn pooled(&self) -> Moments {
        let mut all = self.previous.pooled;
        all.merge(&self.current.pooled);
        all
    }

    /// One worker's tasks over the same window (empty for an unknown worker).
    pub fn worker(&self, worker: usize) -> Moments {
        let mut all = self
            .previous
            .per_worker
            .get(worker)
            .copied()
            .unwrap_or_default();
        if let Some(current) = self.current.per_worker.get(worker) {
            all.merge(current);
        }
        all
    }
}
