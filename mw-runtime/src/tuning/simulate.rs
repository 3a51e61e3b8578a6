//! Event simulation of one iteration (Morajko et al. 2005): the policy cuts chunks exactly as the engine
//! would, each goes to the next free worker; a chunk costs its send, its processing at that
//! worker's measured speed, and its answer; the master handles answers one at a time. Chunks
//! are prefetched as the engine does: a worker holds up to `prefetch` beyond the one it
//! processes while plenty is left, and starts each as soon as it is done with the one before.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::config::Protocol;
use crate::measure::TaskStats;
use crate::policy::{Ask, ChunkDone, Plan, Policy, PolicyName, sends_ahead};

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
    /// Chunks a worker may hold beyond the one it processes (`RunConfig::prefetch_depth`).
    pub prefetch: usize,
}

/// The mean simulated iteration time over `reps` runs, in ms. Task times are drawn from a normal
/// law with each worker's mean and deviation (per chunk of `g` tasks: mean `g·μ`, deviation
/// `σ·√g`), from a generator seeded with `seed`, so that candidates simulated with the same seed
/// see the same luck. Without deviation one run is enough and is exact.
pub(crate) fn simulate(spec: &Spec<'_>, seed: u64, reps: usize) -> f64 {
    simulate_with(spec, &|| spec.policy.build(), seed, reps)
}

/// As [`simulate`], with the policies `build` makes (a fresh one a run) instead of
/// `spec.policy`: for a policy a program registered by name.
pub(crate) fn simulate_with(
    spec: &Spec<'_>,
    build: &dyn Fn() -> Box<dyn Policy>,
    seed: u64,
    reps: usize,
) -> f64 {
    let noisy = spec.workers.iter().any(|w| w.sd_ms > 0.0);
    let reps = if noisy { reps.max(1) } else { 1 };
    let total: f64 = (0..reps)
        .map(|r| {
            once(
                spec,
                build(),
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
    /// When the chunk was sent, and its processing time.
    sent: f64,
    work_ms: f64,
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

/// What a worker holds: when it will be done with it, how many chunks, the size of the last.
#[derive(Debug, Clone, Copy, Default)]
struct Held {
    free: f64,
    chunks: usize,
    last: usize,
}

/// One simulated iteration in progress.
struct Run<'a, 'r> {
    spec: &'a Spec<'a>,
    master: Master<'a>,
    policy: Box<dyn Policy>,
    remaining: usize,
    held: Vec<Held>,
    answers: BinaryHeap<Reverse<Answer>>,
    rng: &'r mut Normal,
}

impl Run<'_, '_> {
    /// Sends `worker` its next chunk, if any is left: it starts once the chunk (and, by `ready`,
    /// the shared part) has arrived and it is done with the chunks it holds.
    fn give(&mut self, worker: usize, ready: f64) {
        if self.remaining == 0 {
            return;
        }
        let ask = Ask {
            worker,
            remaining: self.remaining,
            stats: self.spec.stats,
        };
        let tasks = self.policy.next_chunk(&ask).clamp(1, self.remaining);
        self.remaining -= tasks;
        let sent = self.master.free;
        let arrived = self
            .master
            .send(tasks as f64 * self.spec.task_bytes)
            .max(ready);
        let w = self.spec.workers[worker];
        let g = tasks as f64;
        let work = (g * w.mean_ms + w.sd_ms * g.sqrt() * self.rng.draw()).max(0.0);
        let held = &mut self.held[worker];
        held.free = arrived.max(held.free) + work;
        held.chunks += 1;
        held.last = tasks;
        let back = self.spec.mo_ms + self.spec.k_ms_per_byte * answer_bytes(self.spec, tasks);
        self.answers.push(Reverse(Answer {
            at: held.free + back,
            worker,
            tasks,
            sent,
            work_ms: work,
        }));
    }

    /// Sends `worker`, holding a chunk, more while the engine would.
    fn prefetch(&mut self, worker: usize) {
        let (depth, n) = (self.spec.prefetch, self.spec.workers.len());
        while sends_ahead(
            self.held[worker].chunks,
            self.held[worker].last,
            depth,
            n,
            self.remaining,
        ) {
            self.give(worker, 0.0);
        }
    }
}

fn once(spec: &Spec<'_>, mut policy: Box<dyn Policy>, rng: &mut Normal) -> f64 {
    let n = spec.workers.len();
    if n == 0 || spec.tasks == 0 {
        return spec.serial_ms;
    }
    policy.begin(&Plan {
        tasks: spec.tasks,
        workers: n,
        factor: spec.factor,
        min_chunk: spec.min_chunk,
        stats: spec.stats,
    });
    let mut run = Run {
        spec,
        master: Master {
            spec,
            free: 0.0,
            wire: 0.0,
        },
        policy,
        remaining: spec.tasks,
        held: vec![Held::default(); n],
        answers: BinaryHeap::with_capacity(n),
        rng,
    };
    let shared: Vec<f64> = (0..n).map(|_| run.master.send(spec.shared_bytes)).collect();
    for (worker, &ready) in shared.iter().enumerate() {
        run.give(worker, ready);
    }
    for worker in 0..n {
        run.prefetch(worker);
    }
    while let Some(Reverse(back)) = run.answers.pop() {
        run.master.free =
            run.master.free.max(back.at) + spec.recover_ms_per_task * back.tasks as f64;
        run.policy.chunk_done(&ChunkDone {
            worker: back.worker,
            tasks: back.tasks,
            busy: ms_duration(back.work_ms),
            round_trip: ms_duration(back.at - back.sent),
        });
        run.held[back.worker].chunks -= 1;
        if run.held[back.worker].chunks == 0 {
            run.give(back.worker, 0.0);
        }
        run.prefetch(back.worker);
    }
    run.master.free + spec.serial_ms
}

fn ms_duration(ms: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64(ms.max(0.0) / 1e3)
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
