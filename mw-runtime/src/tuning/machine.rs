//! The machine in the model: how a task's time grows when more workers than cores compete for
//! the processor.
//!
//! A task of wall time `w0` keeps a core busy for `c ≤ w0` of it (its thread CPU time, which
//! the workers measure) and waits for the rest (sleep, I/O, a network). `n` workers then ask
//! for `n·c/w0` cores; past the `C` cores there are, each task takes as long as the cores need
//! to get through everyone's computing: `w(n) = max(w0, n·c/C)`. Tasks that compute (nbody)
//! stop gaining at `n ≈ C`; tasks that wait (`c ≈ 0`) can still use many workers per core.
//!
//! The time measured at `n` workers is already stretched if the cores were saturated then
//! (the workers' demand `n·c/w` reached the cores): the uncontended time is taken as
//! `w0 = max(c, w·C/n)` — everything but computing was waiting for a core.

/// Demand, as a share of the cores, at which the cores count as saturated.
const SATURATED: f64 = 0.9;

/// A task's time on a machine of `cores` cores, from one measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Machine {
    pub cores: f64,
    /// Computing per task, in ms (`c`).
    pub cpu_ms: f64,
    /// Uncontended wall time per task, in ms (`w0`).
    pub task_ms: f64,
}

impl Machine {
    /// From a task time `w` measured with `n` workers, of which the share `cpu_share` was
    /// computing, on `cores` cores.
    pub fn measured(cores: usize, n: usize, task_ms: f64, cpu_share: f64) -> Option<Machine> {
        let (cores, n) = (cores as f64, n.max(1) as f64);
        if !(cores >= 1.0 && task_ms > 0.0 && cpu_share.is_finite()) {
            return None;
        }
        let cpu_ms = task_ms * cpu_share.clamp(0.0, 1.0);
        let demand = n * cpu_ms / task_ms;
        let uncontended = if demand >= SATURATED * cores {
            (task_ms * cores / n).max(cpu_ms)
        } else {
            task_ms
        };
        Some(Machine {
            cores,
            cpu_ms,
            task_ms: uncontended,
        })
    }

    /// `w(n)`: a task's wall time with `n` workers, in ms.
    pub fn task_ms(&self, n: usize) -> f64 {
        self.task_ms.max(n as f64 * self.cpu_ms / self.cores)
    }

    /// `w(n)/w(measured)`: how much longer (or shorter) tasks take with `n` workers than with
    /// `measured`.
    pub fn stretch(&self, n: usize, measured: usize) -> f64 {
        let base = self.task_ms(measured);
        if base > 0.0 {
            self.task_ms(n) / base
        } else {
            1.0
        }
    }

    /// The most workers that do not saturate the cores (at least 1).
    pub fn saturation(&self) -> usize {
        if self.cpu_ms <= 0.0 {
            return usize::MAX;
        }
        ((self.cores * self.task_ms / self.cpu_ms).floor() as usize).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computing_tasks_stop_gaining_at_the_cores() {
        // 2 cores, tasks of 1 ms that compute all the time, measured on 2 workers.
        let m = Machine::measured(2, 2, 1.0, 1.0).unwrap();
        assert_eq!(m.saturation(), 2);
        assert_eq!(m.task_ms(2), 1.0);
        assert_eq!(m.task_ms(4), 2.0);
        // Throughput n / w(n) is flat past the cores.
        assert_eq!(4.0 / m.task_ms(4), 2.0 / m.task_ms(2));
    }

    #[test]
    fn a_saturated_measurement_is_deflated() {
        // 5 computing workers on 2 cores: each task took 2.5 times its own time.
        let m = Machine::measured(2, 5, 2.5, 0.4).unwrap();
        assert!((m.task_ms - 1.0).abs() < 1e-12, "{m:?}");
        assert!((m.stretch(2, 5) - 0.4).abs() < 1e-12);
    }

    #[test]
    fn waiting_tasks_use_many_workers_per_core() {
        // Tasks that sleep 2 ms and compute 2 µs: 32 workers on 2 cores ask for 0.03 cores.
        let m = Machine::measured(2, 1, 2.0, 0.001).unwrap();
        assert_eq!(m.task_ms(32), 2.0);
        assert!(m.saturation() >= 1000);
    }

    #[test]
    fn half_computing_tasks_saturate_at_twice_the_cores() {
        let m = Machine::measured(2, 1, 1.0, 0.5).unwrap();
        assert_eq!(m.saturation(), 4);
        assert_eq!(m.task_ms(4), 1.0);
        assert_eq!(m.task_ms(8), 2.0);
    }

    #[test]
    fn nonsense_gives_no_machine() {
        assert!(Machine::measured(0, 1, 1.0, 1.0).is_none());
        assert!(Machine::measured(2, 1, 0.0, 1.0).is_none());
        assert!(Machine::measured(2, 1, 1.0, f64::NAN).is_none());
    }
}
