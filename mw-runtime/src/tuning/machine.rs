//! The machine in the model: how a task's time grows when more workers than cores compete for
//! the processor, on one machine or on the nodes of a cluster.
//!
//! A task of wall time `w0` keeps a core busy for `c ≤ w0` of it (its thread CPU time, which
//! the workers measure) and waits for the rest (sleep, I/O, a network). `k` workers on a node of
//! `C` cores ask for `k·c/w0` cores; past the cores there are, each task there takes as long as
//! the cores need to get through everyone's computing: `w = max(w0, k·c/C)`. Tasks that compute
//! (nbody) stop gaining at `k ≈ C` per node; tasks that wait (`c ≈ 0`) can still use many
//! workers per core.
//!
//! With the first `n` workers spread over nodes as the [`Layout`] says (`k_j` of them on node
//! `j`), self-scheduling gives each worker tasks at its own pace, so the pool's mean task time
//! is `w(n) = n / Σ_j k_j / max(w0, k_j·c/C_j)` — on one node, `max(w0, n·c/C)`.
//!
//! The time measured at `n` workers is already stretched if the cores were saturated then
//! (the workers' demand `k_j·c/w` reached a node's cores): the uncontended time is taken as
//! `w0 = max(c, w·min_j C_j/k_j)` — everything but computing was waiting for a core.

use std::sync::Arc;

use crate::layout::Layout;

/// Demand, as a share of the cores, at which the cores count as saturated.
const SATURATED: f64 = 0.9;

/// A task's time on the workers' machines, from one measurement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Machine {
    pub layout: Arc<Layout>,
    /// Computing per task, in ms (`c`).
    pub cpu_ms: f64,
    /// Uncontended wall time per task, in ms (`w0`).
    pub task_ms: f64,
}

impl Machine {
    /// From a task time `w` measured with `n` workers, of which the share `cpu_share` was
    /// computing, on the machines of `layout`.
    pub fn measured(
        layout: &Arc<Layout>,
        n: usize,
        task_ms: f64,
        cpu_share: f64,
    ) -> Option<Machine> {
        let n = n.clamp(1, layout.capacity());
        if !(task_ms > 0.0 && cpu_share.is_finite()) {
            return None;
        }
        let cpu_ms = task_ms * cpu_share.clamp(0.0, 1.0);
        let occupancy = layout.occupancy(n);
        let saturated = occupancy
            .iter()
            .any(|&(cores, k)| k * cpu_ms / task_ms >= SATURATED * cores);
        let uncontended = if saturated {
            let share = occupancy
                .iter()
                .map(|&(cores, k)| cores / k)
                .fold(f64::INFINITY, f64::min);
            (task_ms * share).max(cpu_ms)
        } else {
            task_ms
        };
        Some(Machine {
            layout: Arc::clone(layout),
            cpu_ms,
            task_ms: uncontended,
        })
    }

    /// `w(n)`: the mean wall time of a task with the first `n` workers, in ms.
    pub fn task_ms(&self, n: usize) -> f64 {
        let n = n.clamp(1, self.layout.capacity());
        let rate: f64 = self
            .layout
            .occupancy(n)
            .iter()
            .map(|&(cores, k)| k / self.task_ms.max(k * self.cpu_ms / cores))
            .sum();
        if rate > 0.0 {
            n as f64 / rate
        } else {
            self.task_ms
        }
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

    /// The most workers that do not saturate any node's cores (at least 1).
    pub fn saturation(&self) -> usize {
        if self.cpu_ms <= 0.0 {
            return usize::MAX;
        }
        let per_core = self.task_ms / self.cpu_ms;
        if self.layout.node_of.is_empty() {
            return ((self.layout.cores[0] as f64 * per_core).floor() as usize).max(1);
        }
        (1..=self.layout.capacity())
            .take_while(|&n| {
                self.layout
                    .occupancy(n)
                    .iter()
                    .all(|&(cores, k)| k <= (cores * per_core).floor())
            })
            .last()
            .unwrap_or(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cores: usize) -> Arc<Layout> {
        Arc::new(Layout::one_node(cores))
    }

    #[test]
    fn computing_tasks_stop_gaining_at_the_cores() {
        // 2 cores, tasks of 1 ms that compute all the time, measured on 2 workers.
        let m = Machine::measured(&node(2), 2, 1.0, 1.0).unwrap();
        assert_eq!(m.saturation(), 2);
        assert_eq!(m.task_ms(2), 1.0);
        assert_eq!(m.task_ms(4), 2.0);
        // Throughput n / w(n) is flat past the cores.
        assert_eq!(4.0 / m.task_ms(4), 2.0 / m.task_ms(2));
    }

    #[test]
    fn a_saturated_measurement_is_deflated() {
        // 5 computing workers on 2 cores: each task took 2.5 times its own time.
        let m = Machine::measured(&node(2), 5, 2.5, 0.4).unwrap();
        assert!((m.task_ms - 1.0).abs() < 1e-12, "{m:?}");
        assert!((m.stretch(2, 5) - 0.4).abs() < 1e-12);
    }

    #[test]
    fn waiting_tasks_use_many_workers_per_core() {
        // Tasks that sleep 2 ms and compute 2 µs: 32 workers on 2 cores ask for 0.03 cores.
        let m = Machine::measured(&node(2), 1, 2.0, 0.001).unwrap();
        assert_eq!(m.task_ms(32), 2.0);
        assert!(m.saturation() >= 1000);
    }

    #[test]
    fn half_computing_tasks_saturate_at_twice_the_cores() {
        let m = Machine::measured(&node(2), 1, 1.0, 0.5).unwrap();
        assert_eq!(m.saturation(), 4);
        assert_eq!(m.task_ms(4), 1.0);
        assert_eq!(m.task_ms(8), 2.0);
    }

    #[test]
    fn nodes_of_a_cluster_saturate_one_by_one() {
        // Workers 0, 1 on node a (2 cores), 2, 3 on b (2 cores), 4 to 7 on c (4 cores): tasks
        // of 1 ms that compute all the time, measured on 2 workers.
        let hosts = ["a", "a", "b", "b", "c", "c", "c", "c"];
        let layout = Arc::new(Layout::from_workers(
            hosts.iter().map(|h| (*h, 2 + 2 * usize::from(*h == "c"))),
        ));
        assert_eq!((layout.nodes(), layout.cores()), (3, 8));
        let m = Machine::measured(&layout, 2, 1.0, 1.0).unwrap();
        // Up to 8 workers each has a core.
        assert_eq!(m.saturation(), 8);
        assert!((m.task_ms(8) - 1.0).abs() < 1e-12);
        // Two ranks on one 1-core node compete, and slow the pool's mean with them.
        let crowded = Arc::new(Layout::from_workers([("a", 1), ("a", 1), ("b", 4)]));
        let m = Machine::measured(&crowded, 1, 1.0, 1.0).unwrap();
        assert_eq!(m.saturation(), 1);
        // Throughput at 3: two tasks per 2 ms on a, one per ms on b: 2 per ms, mean 1.5 ms.
        assert!((m.task_ms(3) - 1.5).abs() < 1e-12, "{}", m.task_ms(3));
    }

    #[test]
    fn a_saturated_node_is_deflated_by_its_crowding() {
        // 4 computing workers on a 2-core node: their tasks took twice their own time.
        let layout = Arc::new(Layout::from_workers([("a", 2); 4]));
        let m = Machine::measured(&layout, 4, 2.0, 0.5).unwrap();
        assert!((m.task_ms - 1.0).abs() < 1e-12, "{m:?}");
    }

    #[test]
    fn nonsense_gives_no_machine() {
        assert!(Machine::measured(&node(0), 0, 0.0, 1.0).is_none());
        assert!(Machine::measured(&node(2), 1, 0.0, 1.0).is_none());
        assert!(Machine::measured(&node(2), 1, -1.0, 1.0).is_none());
        assert!(Machine::measured(&node(2), 1, 1.0, f64::NAN).is_none());
    }
}
