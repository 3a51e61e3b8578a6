//! Event simulation of one iteration at any worker count, as the factor tuner's (Morajko et al.
//! 2005) but with the master's own time kept: the policy cuts chunks exactly as the engine
//! would, each goes to the next free worker; a chunk costs the master `mo` to send, its
//! transfer on the master's outgoing link, its processing at that worker's measured speed, and
//! its answer's transfer on the incoming link (one link each way, shared by all workers, as the
//! emulated network and a master's network card), which the master handles one at a time. What the master was busy for tells where it
//! becomes the bottleneck, which the balanced model cannot see.
//!
//! The cost is a heap operation per chunk, so 10,000 workers simulate in milliseconds.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use mw_runtime::Protocol;
use mw_runtime::measure::{Moments, TaskStats};
use mw_runtime::policy::{Ask, Plan, PolicyName};

/// One worker's measured task time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimWorker {
    pub mean_ms: f64,
    pub sd_ms: f64,
}

/// The iteration to simulate.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    pub tasks: usize,
    pub workers: &'a [SimWorker],
    pub policy: PolicyName,
    pub factor: f64,
    pub protocol: Protocol,
    pub mo_ms: f64,
    pub k_ms_per_byte: f64,
    /// Bytes per task sent, and returned.
    pub task_bytes: f64,
    pub result_bytes: f64,
    /// The shared part, sent to each worker before its first chunk.
    pub shared_bytes: f64,
    /// Master time in `recover` per task.
    pub recover_ms_per_task: f64,
    /// Master time in `partition` and `end_iteration`.
    pub serial_ms: f64,
    /// Chunks a worker may hold beyond the one it processes.
    pub prefetch: usize,
}

/// A simulated iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// Iteration time, in ms.
    pub time_ms: f64,
    /// Time the master or one of its links was busy, whichever was busier, in ms: near
    /// `time_ms`, the master is the bottleneck and more workers only wait for it.
    pub master_busy_ms: f64,
    /// Chunks cut.
    pub chunks: usize,
}

/// The mean of `reps` simulated iterations. Task times are drawn from a normal law with each
/// worker's mean and deviation (a chunk of `g` tasks: mean `g·μ`, deviation `σ·√g`) from a
/// generator seeded with `seed`; without deviation one run is exact.
pub fn simulate(spec: &Spec<'_>, seed: u64, reps: usize) -> Outcome {
    let noisy = spec.workers.iter().any(|w| w.sd_ms > 0.0);
    let reps = if noisy { reps.max(1) } else { 1 };
    let stats = task_stats(spec.workers);
    let mut sum = Outcome {
        time_ms: 0.0,
        master_busy_ms: 0.0,
        chunks: 0,
    };
    for r in 0..reps {
        let mut rng = Normal::new(seed ^ (r as u64).wrapping_mul(0x9E37_79B9));
        let one = once(spec, &stats, &mut rng);
        sum.time_ms += one.time_ms;
        sum.master_busy_ms += one.master_busy_ms;
        sum.chunks += one.chunks;
    }
    Outcome {
        time_ms: sum.time_ms / reps as f64,
        master_busy_ms: sum.master_busy_ms / reps as f64,
        chunks: sum.chunks / reps,
    }
}

/// The task times the adaptive policies (`daf`) read, as if one iteration had been measured:
/// a hundred tasks per worker at its mean and deviation.
fn task_stats(workers: &[SimWorker]) -> TaskStats {
    let mut stats = TaskStats::new(workers.len());
    for (i, w) in workers.iter().enumerate() {
        let count = 100.0;
        let sum = count * w.mean_ms;
        let sum_sq = count * (w.sd_ms * w.sd_ms + w.mean_ms * w.mean_ms);
        stats.record(i, &Moments::from_sums(count as u64, sum, sum_sq));
    }
    stats.end_iteration();
    stats
}

/// An answer on its way back to the master.
#[derive(Debug, Clone, Copy)]
struct Answer {
    /// When the worker is done and sends it.
    at: f64,
    worker: usize,
    tasks: usize,
}

impl PartialEq for Answer {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Answer {}
impl PartialOrd for Answer {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Answer {
    fn cmp(&self, other: &Self) -> Ordering {
        self.at
            .total_cmp(&other.at)
            .then(self.worker.cmp(&other.worker))
    }
}

/// What a worker holds: when it will be done, how many chunks, the size of the last.
#[derive(Debug, Clone, Copy, Default)]
struct WorkerLoad {
    free: f64,
    chunks: usize,
    last: usize,
}

/// One simulated iteration in progress.
struct SimulatedIteration<'a> {
    spec: &'a Spec<'a>,
    stats: &'a TaskStats,
    policy: Box<dyn mw_runtime::policy::Policy>,
    /// When the master, its outgoing link and its incoming link are next free.
    master_free: f64,
    wire_free: f64,
    wire_in_free: f64,
    /// Time the master spent sending and recovering, and each link spent moving bytes.
    master_busy: f64,
    wire_busy: f64,
    wire_in_busy: f64,
    remaining: usize,
    chunks: usize,
    held: Vec<WorkerLoad>,
    answers: BinaryHeap<Reverse<Answer>>,
    rng: &'a mut Normal,
}

impl SimulatedIteration<'_> {
    /// Sends `bytes`; returns when they have arrived. Sync: the master waits for delivery.
    /// Async: the master pays the start-up and moves on, the transfer queues on the link.
    fn send(&mut self, bytes: f64) -> f64 {
        let (mo, k) = (self.spec.mo_ms, self.spec.k_ms_per_byte);
        let start = self.master_free;
        match self.spec.protocol {
            Protocol::Sync => {
                self.master_free = start + mo + k * bytes;
                self.master_busy += mo + k * bytes;
                self.master_free
            }
            Protocol::Async => {
                self.master_free = start + mo;
                self.master_busy += mo;
                self.wire_busy += k * bytes;
                self.wire_free = self.wire_free.max(start + mo) + k * bytes;
                self.wire_free
            }
        }
    }

    /// Sends `worker` its next chunk, if any is left.
    fn give(&mut self, worker: usize, ready: f64) {
        if self.remaining == 0 {
            return;
        }
        let ask = Ask {
            worker,
            remaining: self.remaining,
            stats: self.stats,
        };
        let tasks = self.policy.next_chunk(&ask).clamp(1, self.remaining);
        self.remaining -= tasks;
        self.chunks += 1;
        let arrived = self.send(tasks as f64 * self.spec.task_bytes).max(ready);
        let w = self.spec.workers[worker];
        let g = tasks as f64;
        let work = (g * w.mean_ms + w.sd_ms * g.sqrt() * self.rng.draw()).max(0.0);
        let held = &mut self.held[worker];
        held.free = arrived.max(held.free) + work;
        held.chunks += 1;
        held.last = tasks;
        self.answers.push(Reverse(Answer {
            at: held.free,
            worker,
            tasks,
        }));
    }

    /// Sends `worker`, holding a chunk, more while the engine would: while it holds no more
    /// than `prefetch` beyond the one it processes and enough is left for every worker.
    fn prefetch(&mut self, worker: usize) {
        let (depth, n) = (self.spec.prefetch, self.spec.workers.len());
        loop {
            let h = self.held[worker];
            let ahead =
                h.chunks > 0 && h.chunks <= depth && self.remaining >= (depth + 1) * n * h.last;
            if !ahead {
                break;
            }
            self.give(worker, 0.0);
        }
    }
}

fn once(spec: &Spec<'_>, stats: &TaskStats, rng: &mut Normal) -> Outcome {
    let n = spec.workers.len();
    if n == 0 || spec.tasks == 0 {
        return Outcome {
            time_ms: spec.serial_ms,
            master_busy_ms: spec.serial_ms,
            chunks: 0,
        };
    }
    let mut policy = spec.policy.build();
    policy.begin(&Plan {
        tasks: spec.tasks,
        workers: n,
        factor: spec.factor,
        min_chunk: 1,
        stats,
    });
    let mut run = SimulatedIteration {
        spec,
        stats,
        policy,
        master_free: 0.0,
        wire_free: 0.0,
        wire_in_free: 0.0,
        master_busy: 0.0,
        wire_busy: 0.0,
        wire_in_busy: 0.0,
        remaining: spec.tasks,
        chunks: 0,
        held: vec![WorkerLoad::default(); n],
        answers: BinaryHeap::with_capacity(n),
        rng,
    };
    let shared: Vec<f64> = (0..n).map(|_| run.send(spec.shared_bytes)).collect();
    for (worker, &ready) in shared.iter().enumerate() {
        run.give(worker, ready);
    }
    for worker in 0..n {
        run.prefetch(worker);
    }
    while let Some(Reverse(back)) = run.answers.pop() {
        // Answers queue on the master's incoming link in the order they are sent; the
        // start-up time is paid by each in parallel.
        let bytes = back.tasks as f64 * spec.result_bytes;
        run.wire_in_free = run.wire_in_free.max(back.at) + spec.k_ms_per_byte * bytes;
        run.wire_in_busy += spec.k_ms_per_byte * bytes;
        let arrived = run.wire_in_free + spec.mo_ms;
        let recover = spec.recover_ms_per_task * back.tasks as f64;
        run.master_free = run.master_free.max(arrived) + recover;
        run.master_busy += recover;
        run.held[back.worker].chunks -= 1;
        if run.held[back.worker].chunks == 0 {
            run.give(back.worker, 0.0);
        }
        run.prefetch(back.worker);
    }
    Outcome {
        time_ms: run.master_free + spec.serial_ms,
        master_busy_ms: (run.master_busy + spec.serial_ms)
            .max(run.wire_busy)
            .max(run.wire_in_busy),
        chunks: run.chunks,
    }
}

/// Standard normal draws (Box–Muller over SplitMix64): deterministic for a seed.
struct Normal {
    state: u64,
    spare: Option<f64>,
}

impl Normal {
    fn new(seed: u64) -> Self {
        Normal {
            state: seed,
            spare: None,
        }
    }

    fn uniform(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // In (0, 1]: never 0, so the logarithm below is finite.
        ((z >> 11) as f64 + 1.0) * (1.0 / (1u64 << 53) as f64)
    }

    fn draw(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let (u, v) = (self.uniform(), self.uniform());
        let r = (-2.0 * u.ln()).sqrt();
        let theta = std::f64::consts::TAU * v;
        self.spare = Some(r * theta.sin());
        r * theta.cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(workers: &[SimWorker], tasks: usize, mo: f64) -> Spec<'_> {
        Spec {
            tasks,
            workers,
            policy: PolicyName::Static,
            factor: 0.5,
            protocol: Protocol::Async,
            mo_ms: mo,
            k_ms_per_byte: 0.0,
            task_bytes: 16.0,
            result_bytes: 8.0,
            shared_bytes: 0.0,
            recover_ms_per_task: 0.0,
            serial_ms: 0.0,
            prefetch: 0,
        }
    }

    #[test]
    fn even_tasks_without_costs_take_their_share() {
        let w = vec![
            SimWorker {
                mean_ms: 2.0,
                sd_ms: 0.0
            };
            4
        ];
        let out = simulate(&spec(&w, 100, 0.0), 1, 3);
        assert!((out.time_ms - 50.0).abs() < 1e-9, "{out:?}");
        assert_eq!(out.chunks, 4);
    }

    #[test]
    fn a_master_paying_per_message_saturates() {
        // 10,000 one-task chunks of 1 ms each at 0.1 ms a message: the master needs 1 s to
        // send them, far more than the 1 ms of work each worker has.
        let w = vec![
            SimWorker {
                mean_ms: 1.0,
                sd_ms: 0.0
            };
            10_000
        ];
        let out = simulate(&spec(&w, 10_000, 0.1), 1, 1);
        assert!(out.time_ms >= 1000.0, "{out:?}");
        assert!(out.master_busy_ms / out.time_ms > 0.9, "{out:?}");
    }

    #[test]
    fn a_slow_worker_holds_a_static_iteration_back() {
        let mut w = vec![
            SimWorker {
                mean_ms: 1.0,
                sd_ms: 0.0
            };
            4
        ];
        w[3].mean_ms = 2.0;
        let out = simulate(&spec(&w, 100, 0.0), 1, 1);
        assert!((out.time_ms - 50.0).abs() < 1e-9, "{out:?}");
    }
}
