//! Event simulation of one iteration (seed 004): the policy cuts chunks exactly as the engine
//! would, each goes to the next free worker; a chunk costs its send, its processing at that
//! worker's measured speed, and its answer; the master handles answers one at a time.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::config::Protocol;
use crate::measure::TaskStats;
use crate::policy::{Ask, Plan, PolicyName};

/// One worker's measured task time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SimWorker {
    pub mean_ms: f64,
    pub sd_ms: f64,
}

/// What is simulated.
#[derive(Debug, Clone)]
pub(crate) struct Spec<'a> {
    pub tasks: usize,
    /// The workers taking part, in the order the engine activates them.
    pub workers: &'a [SimWorker],
    pub policy: PolicyName,
    pub factor: f64,
    pub min_chunk: usize,
    pub stats: &'a TaskStats,
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
}

/// The mean simulated iteration time over `reps` runs, in ms. Task times are drawn from a normal
/// law with each worker's mean and deviation (per chunk of `g` tasks: mean `g·μ`, deviation
/// `σ·√g`), from a generator seeded with `seed`, so that candidates simulated with the same seed
/// see the same luck. Without deviation one run is enough and is exact.
pub(crate) fn simulate(spec: &Spec<'_>, seed: u64, reps: usize) -> f64 {
    let noisy = spec.workers.iter().any(|w| w.sd_ms > 0.0);
    let reps = if noisy { reps.max(1) } else { 1 };
    let total: f64 = (0..reps)
        .map(|r| {
            once(
                spec,
                &mut Normal::new(seed ^ (r as u64).wrapping_mul(0x9E37)),
            )
        })
        .sum();
    total / reps as f64
}

/// An answer on its way back to the master.
#[derive(Debug, Clone, Copy)]
struct Answer {
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

/// The master's clock and its outgoing link.
struct Master<'a> {
    spec: &'a Spec<'a>,
    /// When the master is next free.
    free: f64,
    /// When its link is next free (async transfers queue on it).
    wire: f64,
}

impl Master<'_> {
    /// Sends `bytes`; returns when they have arrived. Sync: the master waits for delivery.
    /// Async: the master pays the start-up and moves on, the transfer queues on the link.
    fn send(&mut self, bytes: f64) -> f64 {
        let (mo, k) = (self.spec.mo_ms, self.spec.k_ms_per_byte);
        let start = self.free;
        match self.spec.protocol {
            Protocol::Sync => {
                self.free = start + mo + k * bytes;
                self.free
            }
            Protocol::Async => {
                self.free = start + mo;
                self.wire = self.wire.max(start + mo) + k * bytes;
                self.wire
            }
        }
    }
}

fn once(spec: &Spec<'_>, rng: &mut Normal) -> f64 {
    let n = spec.workers.len();
    if n == 0 || spec.tasks == 0 {
        return spec.serial_ms;
    }
    let mut policy = spec.policy.build();
    policy.begin(&Plan {
        tasks: spec.tasks,
        workers: n,
        factor: spec.factor,
        min_chunk: spec.min_chunk,
        stats: spec.stats,
    });
    let mut remaining = spec.tasks;
    let mut next = |worker: usize, remaining: &mut usize| -> usize {
        let ask = Ask {
            worker,
            remaining: *remaining,
            stats: spec.stats,
        };
        let size = policy.next_chunk(&ask).clamp(1, *remaining);
        *remaining -= size;
        size
    };
    let process = |worker: usize, tasks: usize, rng: &mut Normal| -> f64 {
        let w = spec.workers[worker];
        let g = tasks as f64;
        (g * w.mean_ms + w.sd_ms * g.sqrt() * rng.draw()).max(0.0)
    };
    let answer = |done: f64, tasks: usize| {
        done + spec.mo_ms + spec.k_ms_per_byte * answer_bytes(spec, tasks)
    };

    let mut master = Master {
        spec,
        free: 0.0,
        wire: 0.0,
    };
    let shared: Vec<f64> = (0..n).map(|_| master.send(spec.shared_bytes)).collect();
    let mut queue = BinaryHeap::with_capacity(n);
    for (worker, &ready) in shared.iter().enumerate() {
        if remaining == 0 {
            break;
        }
        let tasks = next(worker, &mut remaining);
        let arrived = master.send(tasks as f64 * spec.task_bytes).max(ready);
        let done = arrived + process(worker, tasks, rng);
        queue.push(Reverse(Answer {
            at: answer(done, tasks),
            worker,
            tasks,
        }));
    }
    while let Some(Reverse(back)) = queue.pop() {
        master.free = master.free.max(back.at) + spec.recover_ms_per_task * back.tasks as f64;
        if remaining > 0 {
            let tasks = next(back.worker, &mut remaining);
            let arrived = master.send(tasks as f64 * spec.task_bytes);
            let done = arrived + process(back.worker, tasks, rng);
            queue.push(Reverse(Answer {
                at: answer(done, tasks),
                worker: back.worker,
                tasks,
            }));
        }
    }
    master.free + spec.serial_ms
}

fn answer_bytes(spec: &Spec<'_>, tasks: usize) -> f64 {
    tasks as f64 * spec.result_bytes
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
