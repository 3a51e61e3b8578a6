//! Task times: drawn on the master from a seeded lognormal distribution with the requested mean
//! and standard deviation, so a seed gives the same times on every backend and worker count.
//!
//! Why lognormal: task times are positive and skewed to the right (a few tasks take much longer
//! than most), and the lognormal keeps exactly the mean and standard deviation it is given,
//! however large the deviation. A normal clipped at 0 would not: at a deviation of 80 % of the
//! mean it clips a tenth of the draws and shifts the mean up. With `μ` the mean and `c` the
//! deviation as a fraction of it, a time is `exp(m + s·z)` with `s² = ln(1 + c²)`,
//! `m = ln μ − s²/2` and `z` standard normal (Box–Muller from two SplitMix64 uniforms). `c = 0`
//! gives every task the mean.

use std::time::Duration;

pub use mw::random::SplitMix64;

/// The stream of task times of a run: iteration after iteration, task after task.
#[derive(Debug, Clone)]
pub struct TaskTimes {
    rng: SplitMix64,
    mean_ms: f64,
    /// Log-space mean and deviation; `None` for a zero deviation (every task takes the mean).
    log: Option<(f64, f64)>,
}

impl TaskTimes {
    /// Times with mean `mean_ms` and standard deviation `stddev · mean_ms`, from `seed`.
    pub fn new(seed: u64, mean_ms: f64, stddev: f64) -> Self {
        let log = (stddev > 0.0 && mean_ms > 0.0).then(|| {
            let s2 = stddev.mul_add(stddev, 1.0).ln();
            (mean_ms.ln() - s2 / 2.0, s2.sqrt())
        });
        TaskTimes {
            rng: SplitMix64::new(seed),
            mean_ms: mean_ms.max(0.0),
            log,
        }
    }

    /// The next task's time in ms.
    pub fn next_ms(&mut self) -> f64 {
        match self.log {
            Some((m, s)) => (m + s * self.rng.next_normal()).exp(),
            None => self.mean_ms,
        }
    }

    /// The next task's time, in whole nanoseconds (what travels in the task).
    pub fn next_ns(&mut self) -> u64 {
        // `as` saturates: absurd draws become u64::MAX ns rather than wrapping.
        (self.next_ms() * 1e6).round() as u64
    }

    /// The times of one iteration of `tasks` tasks.
    pub fn iteration(&mut self, tasks: usize) -> Vec<Duration> {
        (0..tasks)
            .map(|_| Duration::from_nanos(self.next_ns()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(times: &[Duration]) -> (f64, f64) {
        let ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        let n = ms.len() as f64;
        let mean = ms.iter().sum::<f64>() / n;
        let var = ms.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        (mean, var.sqrt())
    }

    #[test]
    fn the_sample_has_the_requested_mean_and_deviation() {
        for stddev in [0.2, 0.5, 0.8] {
            let times = TaskTimes::new(7, 2.0, stddev).iteration(200_000);
            let (mean, sd) = moments(&times);
            assert!((mean - 2.0).abs() < 0.02, "c = {stddev}: mean {mean}");
            assert!(
                (sd / 2.0 - stddev).abs() < 0.02,
                "c = {stddev}: sd {sd} ms, wanted {}",
                2.0 * stddev
            );
            assert!(times.iter().all(|t| !t.is_zero()));
        }
    }

    #[test]
    fn no_deviation_gives_every_task_the_mean() {
        let times = TaskTimes::new(1, 1.5, 0.0).iteration(10);
        assert!(times.iter().all(|&t| t == Duration::from_micros(1500)));
        let zero = TaskTimes::new(1, 0.0, 0.5).iteration(10);
        assert!(zero.iter().all(|t| t.is_zero()));
    }

    #[test]
    fn a_seed_gives_the_same_times_and_another_seed_others() {
        let a = TaskTimes::new(42, 1.0, 0.6).iteration(1000);
        let b = TaskTimes::new(42, 1.0, 0.6).iteration(1000);
        let c = TaskTimes::new(43, 1.0, 0.6).iteration(1000);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
