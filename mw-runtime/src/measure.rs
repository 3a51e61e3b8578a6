//! Measurements the runtime takes while it runs: task times, pooled and per worker.

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

/// Task times of the run so far: pooled over all workers and per worker.
#[derive(Debug, Clone, Default)]
pub struct TaskStats {
    pooled: Moments,
    per_worker: Vec<Moments>,
}

impl TaskStats {
    /// Statistics for a pool of `workers`.
    pub fn new(workers: usize) -> Self {
        TaskStats {
            pooled: Moments::default(),
            per_worker: vec![Moments::default(); workers],
        }
    }

    /// Folds in a chunk's task times measured on `worker`.
    pub fn record(&mut self, worker: usize, chunk: &Moments) {
        self.pooled.merge(chunk);
        if let Some(w) = self.per_worker.get_mut(worker) {
            w.merge(chunk);
        }
    }

    /// All workers together.
    pub fn pooled(&self) -> &Moments {
        &self.pooled
    }

    /// One worker's tasks (empty for an unknown worker).
    pub fn worker(&self, worker: usize) -> Moments {
        self.per_worker.get(worker).copied().unwrap_or_default()
    }
}
