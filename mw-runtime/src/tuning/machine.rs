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
//!
//! On a machine that other programs use too, the workers' CPU time alone would mislead: a
//! computing task that gets half a core looks like a task that sleeps half the time, and more
//! workers look free. Where the workers measure their run-queue wait `q` (the time ready to
//! compute but without a core) and the machine's steal `σ` is known (the share of its
//! processors' time a hypervisor gave to other guests, during which a running thread neither
//! computes nor waits in the run queue), the task's own time is `w0 = w − q − c·σ/(1 − σ)`
//! (never below `c`), and what the program's own contention at `n` does not explain is other
//! programs' load: `foreign = w / w_own(n) ≥ 1`. That factor stretches every `w(n)` alike, so it
//! changes no choice of `n`: work that computes is not grown past the cores, and is not shrunk
//! for load that is not its own (see the tuning README, "On a busy machine"). A worker woken
//! for a chunk may wait for a core too (its late start, measured the same way): with no more
//! workers than the cores take, that wait is other programs' as well.

use std::sync::Arc;

use crate::layout::Layout;

/// Demand, as a share of the cores, at which the cores count as saturated.
const SATURATED: f64 = 0.9;

/// How the workers' tasks used the processor, as shares of their wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct CoreUse {
    /// Thread CPU time over wall time.
    pub cpu: f64,
    /// Run-queue wait over wall time, when the workers measured it.
    pub wait: Option<f64>,
    /// The share of the processors' time stolen by a hypervisor meanwhile (0 on bare metal or
    /// when unknown).
    pub steal: f64,
    /// The workers' waits for a core before their chunks over the chunks' wall time (0 when
    /// not measured).
    pub late: f64,
}

/// Other programs' load, as a share of the workers' time, above which the tuner does not
/// shrink the pool for it: a wake-up or a slice of a busy second's scheduling, not noise.
pub(crate) const OTHERS_LOADED: f64 = 0.1;

/// The machine's processors as the kernel counts them since boot (`/proc/stat`, in clock
/// ticks): all their time, and the part a hypervisor stole for other guests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticks {
    total: u64,
    steal: u64,
}

impl Ticks {
    /// Now, where the kernel says (Linux).
    pub(super) fn now() -> Option<Ticks> {
        use std::io::BufRead;
        let file = std::fs::File::open("/proc/stat").ok()?;
        let mut line = String::new();
        std::io::BufReader::new(file).read_line(&mut line).ok()?;
        Ticks::parse(&line)
    }

    /// From the first line of `/proc/stat`: `cpu user nice system idle iowait irq softirq steal
    /// …` (guest time is already in user).
    fn parse(line: &str) -> Option<Ticks> {
        let mut fields = line.split_ascii_whitespace();
        if fields.next()? != "cpu" {
            return None;
        }
        let ticks: Vec<u64> = fields
            .take(8)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        let &steal = ticks.get(7)?;
        Some(Ticks {
            total: ticks.iter().sum(),
            steal,
        })
    }

    /// The share of the processors' time stolen since `earlier`; `None` when no tick passed.
    pub(super) fn steal_since(&self, earlier: &Ticks) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total).filter(|&t| t > 0)?;
        let steal = self.steal.saturating_sub(earlier.steal);
        Some(steal as f64 / total as f64)
    }
}

/// A task's time on the workers' machines, from one measurement: the machine in the model
/// (see [`TunerView::machine`](super::TunerView::machine)).
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    pub(crate) layout: Arc<Layout>,
    /// Computing per task, in ms (`c`).
    pub(crate) cpu_ms: f64,
    /// Uncontended wall time per task, in ms (`w0`).
    pub(crate) task_ms: f64,
    /// How much longer than the program's own contention explains the tasks took: other
    /// programs' load (1 when there was none, or when it cannot be told apart).
    pub(crate) foreign: f64,
    /// The workers' waits for a core before their chunks, over the chunks' wall time, when no
    /// more workers ran than the cores take (0 otherwise: then the waits may be their own).
    pub(crate) late: f64,
}

impl Machine {
    /// The nodes and cores the workers run on.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// A task's computing, in ms (its thread CPU time, `c`).
    pub fn task_cpu_ms(&self) -> f64 {
        self.cpu_ms
    }

    /// A task's wall time on free cores, in ms (`w0`).
    pub fn task_ms_uncontended(&self) -> f64 {
        self.task_ms
    }

    /// How much longer the tasks took than the program's own crowding explains: other
    /// programs' load (1 when there was none, or when it cannot be told apart).
    pub fn foreign_stretch(&self) -> f64 {
        self.foreign
    }

    /// The workers' waits for a core before their chunks, as a share of the chunks' wall time
    /// (0 when more workers ran than the cores take: then the waits may be their own).
    pub fn late_share(&self) -> f64 {
        self.late
    }

    /// From a task time `w` measured with `n` workers, which used the processor as `used`
    /// says, on the machines of `layout`.
    pub(super) fn measured(
        layout: &Arc<Layout>,
        n: usize,
        task_ms: f64,
        used: CoreUse,
    ) -> Option<Machine> {
        let n = n.clamp(1, layout.capacity());
        if !(task_ms > 0.0 && used.cpu.is_finite()) {
            return None;
        }
        let cpu_ms = task_ms * used.cpu.clamp(0.0, 1.0);
        let occupancy = layout.occupancy(n);
        if let Some(wait) = used.wait.filter(|w| w.is_finite()) {
            // The workers said how long they waited for a core: what is left is the task's own
            // time, and whatever the program's own crowding does not explain is others' load.
            let steal = used.steal.clamp(0.0, 0.9);
            let stolen = cpu_ms * steal / (1.0 - steal);
            let own = (task_ms * (1.0 - wait.clamp(0.0, 1.0)) - stolen).max(cpu_ms);
            let mut machine = Machine {
                layout: Arc::clone(layout),
                cpu_ms,
                task_ms: own.max(f64::MIN_POSITIVE),
                foreign: 1.0,
                late: 0.0,
            };
            machine.foreign = (task_ms / machine.task_ms(n)).max(1.0);
            if n <= machine.saturation() && used.late.is_finite() {
                machine.late = used.late.max(0.0);
            }
            return Some(machine);
        }
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
            foreign: 1.0,
            late: 0.0,
        })
    }

    /// Whether other programs held the cores the workers could have used, enough to count:
    /// the tasks stretched beyond the program's own crowding, or the workers woke late for
    /// their chunks while they were no more than the cores.
    pub fn others_loaded(&self) -> bool {
        (self.foreign - 1.0) / self.foreign + self.late >= OTHERS_LOADED
    }

    /// `w(n)`: the mean wall time of a task with the first `n` workers, in ms, other programs'
    /// load as measured.
    pub(super) fn task_ms(&self, n: usize) -> f64 {
        let n = n.clamp(1, self.layout.capacity());
        let rate: f64 = self
            .layout
            .occupancy(n)
            .iter()
            .map(|&(cores, k)| k / self.task_ms.max(k * self.cpu_ms / cores))
            .sum();
        self.foreign
            * if rate > 0.0 {
                n as f64 / rate
            } else {
                self.task_ms
            }
    }

    /// `w(n)/w(measured)`: how much longer (or shorter) tasks take with `n` workers than with
    /// `measured`.
    pub(super) fn stretch(&self, n: usize, measured: usize) -> f64 {
        let base = self.task_ms(measured);
        if base > 0.0 {
            self.task_ms(n) / base
        } else {
            1.0
        }
    }

    /// The most workers that do not saturate any node's cores (at least 1): the cores the
    /// program's computing can use, whatever other programs' load.
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

    /// Tasks that computed the share `cpu` of their time, run-queue wait not measured.
    fn cpu(cpu: f64) -> CoreUse {
        CoreUse {
            cpu,
            ..CoreUse::default()
        }
    }

    /// Tasks that computed the share `cpu` of their time and waited `wait` of it for a core.
    fn waited(cpu: f64, wait: f64) -> CoreUse {
        CoreUse {
            cpu,
            wait: Some(wait),
            ..CoreUse::default()
        }
    }

    #[test]
    fn computing_tasks_stop_gaining_at_the_cores() {
        // 2 cores, tasks of 1 ms that compute all the time, measured on 2 workers.
        let m = Machine::measured(&node(2), 2, 1.0, cpu(1.0)).unwrap();
        assert_eq!(m.saturation(), 2);
        assert_eq!(m.task_ms(2), 1.0);
        assert_eq!(m.task_ms(4), 2.0);
        // Throughput n / w(n) is flat past the cores.
        assert_eq!(4.0 / m.task_ms(4), 2.0 / m.task_ms(2));
    }

    #[test]
    fn a_saturated_measurement_is_deflated() {
        // 5 computing workers on 2 cores: each task took 2.5 times its own time.
        let m = Machine::measured(&node(2), 5, 2.5, cpu(0.4)).unwrap();
        assert!((m.task_ms - 1.0).abs() < 1e-12, "{m:?}");
        assert!((m.stretch(2, 5) - 0.4).abs() < 1e-12);
    }

    #[test]
    fn waiting_tasks_use_many_workers_per_core() {
        // Tasks that sleep 2 ms and compute 2 µs: 32 workers on 2 cores ask for 0.03 cores.
        let m = Machine::measured(&node(2), 1, 2.0, cpu(0.001)).unwrap();
        assert_eq!(m.task_ms(32), 2.0);
        assert!(m.saturation() >= 1000);
    }

    #[test]
    fn half_computing_tasks_saturate_at_twice_the_cores() {
        let m = Machine::measured(&node(2), 1, 1.0, cpu(0.5)).unwrap();
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
        let m = Machine::measured(&layout, 2, 1.0, cpu(1.0)).unwrap();
        // Up to 8 workers each has a core.
        assert_eq!(m.saturation(), 8);
        assert!((m.task_ms(8) - 1.0).abs() < 1e-12);
        // Two ranks on one 1-core node compete, and slow the pool's mean with them.
        let crowded = Arc::new(Layout::from_workers([("a", 1), ("a", 1), ("b", 4)]));
        let m = Machine::measured(&crowded, 1, 1.0, cpu(1.0)).unwrap();
        assert_eq!(m.saturation(), 1);
        // Throughput at 3: two tasks per 2 ms on a, one per ms on b: 2 per ms, mean 1.5 ms.
        assert!((m.task_ms(3) - 1.5).abs() < 1e-12, "{}", m.task_ms(3));
    }

    #[test]
    fn a_saturated_node_is_deflated_by_its_crowding() {
        // 4 computing workers on a 2-core node: their tasks took twice their own time.
        let layout = Arc::new(Layout::from_workers([("a", 2); 4]));
        let m = Machine::measured(&layout, 4, 2.0, cpu(0.5)).unwrap();
        assert!((m.task_ms - 1.0).abs() < 1e-12, "{m:?}");
    }

    #[test]
    fn other_programs_load_changes_no_choice() {
        // Two computing workers on 2 cores beside two spinning processes: each got half a
        // core, computing 1 ms and waiting 1 ms for a core in a task of 2 ms.
        let m = Machine::measured(&node(2), 2, 2.0, waited(0.5, 0.5)).unwrap();
        assert!((m.task_ms - 1.0).abs() < 1e-12, "{m:?}");
        assert!((m.foreign - 2.0).abs() < 1e-12, "{m:?}");
        // Computing work: the cores saturate at 2 workers, not at 4 as half a core's CPU
        // time alone would say.
        assert_eq!(m.saturation(), 2);
        assert_eq!(
            Machine::measured(&node(2), 2, 2.0, cpu(0.5))
                .unwrap()
                .saturation(),
            4
        );
        // Fewer workers would not take tasks back to the free machine's time: one worker has
        // no shorter tasks than two (no shrink), and a third adds nothing (no growth).
        assert!((m.stretch(1, 2) - 1.0).abs() < 1e-12);
        assert!((3.0 / m.task_ms(3) - 2.0 / m.task_ms(2)).abs() < 1e-12);
        assert!(m.others_loaded());
        // Workers that wake late for their chunks while they are no more than the cores wait
        // for other programs too, though their tasks, once started, keep their core.
        let late = CoreUse {
            late: 0.3,
            ..waited(1.0, 0.0)
        };
        let m = Machine::measured(&node(2), 2, 1.0, late).unwrap();
        assert_eq!(m.foreign, 1.0);
        assert!(m.others_loaded());
        // Free cores: nothing of the kind.
        let free = Machine::measured(&node(2), 2, 1.0, waited(1.0, 0.0)).unwrap();
        assert!(!free.others_loaded());
    }

    #[test]
    fn own_crowding_is_not_others_load() {
        // Four computing workers on 2 cores, nothing else: each waited half its task.
        let m = Machine::measured(&node(2), 4, 2.0, waited(0.5, 0.5)).unwrap();
        assert!((m.foreign - 1.0).abs() < 1e-12, "{m:?}");
        // Their late starts are their own crowding too.
        let crowded = CoreUse {
            late: 0.5,
            ..waited(0.5, 0.5)
        };
        assert!(
            !Machine::measured(&node(2), 4, 2.0, crowded)
                .unwrap()
                .others_loaded()
        );
        // Two workers have tasks of half the time: the crowding was the program's own.
        assert!((m.stretch(2, 4) - 0.5).abs() < 1e-12);
        // Tasks that sleep half their time and wait for nothing leave room for a second
        // worker per core.
        let sleeping = Machine::measured(&node(2), 2, 2.0, waited(0.5, 0.0)).unwrap();
        assert_eq!((sleeping.foreign, sleeping.saturation()), (1.0, 4));
    }

    #[test]
    fn stolen_time_is_not_sleep() {
        // On a virtual machine whose host took a third of the processors' time, a computing
        // task of 1.5 ms computed 1 ms and was stolen 0.5 ms: it never slept.
        let used = CoreUse {
            cpu: 1.0 / 1.5,
            wait: Some(0.0),
            steal: 1.0 / 3.0,
            late: 0.0,
        };
        let m = Machine::measured(&node(2), 2, 1.5, used).unwrap();
        assert!((m.task_ms - 1.0).abs() < 1e-12, "{m:?}");
        assert_eq!(m.saturation(), 2);
        assert!((m.foreign - 1.5).abs() < 1e-12, "{m:?}");
    }

    #[test]
    fn steal_is_read_from_the_kernel_counts() {
        let before = Ticks::parse("cpu  100 0 50 800 0 0 0 50 0 0").unwrap();
        let after = Ticks::parse("cpu  200 0 100 1600 0 0 0 100 0 0").unwrap();
        assert_eq!(after.steal_since(&before), Some(0.05));
        assert_eq!(after.steal_since(&after), None);
        assert_eq!(Ticks::parse("intr 1 2 3"), None);
        // Kernels before steal was counted have fewer fields: not a reading.
        assert_eq!(Ticks::parse("cpu 1 2 3 4"), None);
    }

    #[test]
    fn nonsense_gives_no_machine() {
        assert!(Machine::measured(&node(0), 0, 0.0, cpu(1.0)).is_none());
        assert!(Machine::measured(&node(2), 1, 0.0, cpu(1.0)).is_none());
        assert!(Machine::measured(&node(2), 1, -1.0, cpu(1.0)).is_none());
        assert!(Machine::measured(&node(2), 1, 1.0, cpu(f64::NAN)).is_none());
    }
}
