//! Event simulation of Master/Worker iterations (Morajko et al. 2005), public as
//! [`mw_runtime::tuning::simulate`](crate::tuning::simulate): the factor and policy tunlets compare candidates
//! with it, and `mwgen predict` grows a pilot run to a whole run with it.
//!
//! The policy cuts chunks exactly as the engine would, each goes to the next free worker; a
//! chunk costs the master `mo` to send, its transfer on the master's outgoing link, its
//! processing at that worker's measured speed, and its answer's transfer on the master's
//! incoming link (one link each way, shared by all workers, as the emulated network and a
//! master's network card), which the master then handles in `recover`, one answer at a time.
//! Chunks are prefetched as the engine does: a worker holds up to `prefetch` beyond the one it
//! processes while plenty is left, and starts each as soon as it is done with the one before.
//! What the master and its links were busy for tells where the master becomes the bottleneck.
//!
//! The cost is a heap operation per chunk, so an iteration of 10,000 workers simulates in
//! milliseconds; a run of many iterations simulates each distinct iteration once (see
//! [`simulate_run`]).
//!
//! ```
//! use mw_runtime::tuning::simulate::{SimWorker, Spec, simulate, task_stats};
//! use mw_runtime::{PolicyName, Protocol};
//!
//! let workers = vec![SimWorker { mean_ms: 2.0, sd_ms: 0.0 }; 4];
//! let stats = task_stats(&workers);
//! let spec = Spec {
//!     tasks: 100,
//!     workers: &workers,
//!     policy: PolicyName::Static,
//!     factor: 0.5,
//!     min_chunk: 1,
//!     stats: &stats,
//!     protocol: Protocol::Async,
//!     mo_ms: 0.0,
//!     k_ms_per_byte: 0.0,
//!     task_bytes: 0.0,
//!     result_bytes: 0.0,
//!     shared_bytes: 0.0,
//!     recover_ms_per_task: 0.0,
//!     serial_ms: 0.0,
//!     prefetch: 0,
//! };
//! // 100 tasks of 2 ms over 4 workers, nothing else to pay.
//! assert_eq!(simulate(&spec, 1, 1), 50.0);
//! ```

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};

use crate::load::LoadPattern;
use crate::measure::{Moments, TaskStats};
use crate::policy::{Ask, ChunkDone, Plan, Policy, PolicyName, sends_ahead};
use crate::protocol::Protocol;
use crate::random::SplitMix64;

/// One worker's measured task time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimWorker {
    /// Mean time of one task, in ms.
    pub mean_ms: f64,
    /// Standard deviation of one task's time, in ms.
    pub sd_ms: f64,
}

/// What is simulated: one iteration.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    /// Tasks of the iteration.
    pub tasks: usize,
    /// The workers taking part, in the order the engine activates them.
    pub workers: &'a [SimWorker],
    /// How chunks are cut.
    pub policy: PolicyName,
    /// The policy's factor, and the smallest chunk it cuts.
    pub factor: f64,
    pub min_chunk: usize,
    /// The task times the adaptive policies read (see [`task_stats`]).
    pub stats: &'a TaskStats,
    pub protocol: Protocol,
    /// The link: per-message start-up time, and per-byte cost.
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

/// A simulated iteration, or the sum of a run's iterations.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub struct Outcome {
    /// Elapsed time, in ms.
    pub time_ms: f64,
    /// Time the master or one of its links was busy, whichever was busier, in ms: near
    /// `time_ms`, the master is the bottleneck and more workers only wait for it.
    pub master_busy_ms: f64,
    /// Chunks cut.
    pub chunks: usize,
}

/// The mean simulated iteration time over `reps` runs, in ms. Task times are drawn from a normal
/// law with each worker's mean and deviation (per chunk of `g` tasks: mean `g·μ`, deviation
/// `σ·√g`), from a generator seeded with `seed`, so that candidates simulated with the same seed
/// see the same luck. Without deviation one run is enough and is exact.
pub fn simulate(spec: &Spec<'_>, seed: u64, reps: usize) -> f64 {
    simulate_iteration(spec, seed, reps).time_ms
}

/// As [`simulate`], with the policies `build` makes (a fresh one a run) instead of
/// `spec.policy`: for a policy a program registered by name.
pub fn simulate_with(
    spec: &Spec<'_>,
    build: &dyn Fn() -> Box<dyn Policy>,
    seed: u64,
    reps: usize,
) -> f64 {
    iteration_with(spec, build, seed, reps).time_ms
}

/// As [`simulate`], with what the master was busy for and the chunks cut (means over `reps`).
pub fn simulate_iteration(spec: &Spec<'_>, seed: u64, reps: usize) -> Outcome {
    iteration_with(spec, &|| spec.policy.build(), seed, reps)
}

fn iteration_with(
    spec: &Spec<'_>,
    build: &dyn Fn() -> Box<dyn Policy>,
    seed: u64,
    reps: usize,
) -> Outcome {
    let noisy = spec.workers.iter().any(|w| w.sd_ms > 0.0);
    let reps = if noisy { reps.max(1) } else { 1 };
    let mut sum = Outcome::default();
    for r in 0..reps {
        let one = once(
            spec,
            build(),
            &mut Normal::new(seed ^ (r as u64).wrapping_mul(0x9E37)),
        );
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

/// A run of `iterations` iterations of `spec` under `load` (the runtime's `--load`): in
/// iteration `i` worker `w` of `spec.workers` takes `load.stretch(w, i)` times its task time, as
/// the engine activates the lowest-numbered workers first. The adaptive policies read, as in
/// the engine, the task times of the iteration before (in the first, its own: the speeds were
/// measured before the run), so `spec.stats` is not read. Iterations end with every answer
/// recovered, so they do not overlap: the run is the sum of its iterations, and iterations alike
/// (the same speeds, before and now) are simulated once. Returns the sums over the run.
pub fn simulate_run(
    spec: &Spec<'_>,
    iterations: usize,
    load: &LoadPattern,
    seed: u64,
    reps: usize,
) -> Outcome {
    let speeds = |i: usize| -> Vec<SimWorker> {
        spec.workers
            .iter()
            .enumerate()
            .map(|(w, s)| {
                let x = load.stretch(w, i);
                SimWorker {
                    mean_ms: s.mean_ms * x,
                    sd_ms: s.sd_ms * x,
                }
            })
            .collect()
    };
    let key = |ws: &[SimWorker]| -> Vec<u64> {
        ws.iter()
            .flat_map(|w| [w.mean_ms.to_bits(), w.sd_ms.to_bits()])
            .collect()
    };
    let mut seen: HashMap<(Vec<u64>, Vec<u64>), Outcome> = HashMap::new();
    let mut total = Outcome::default();
    let mut before: Option<Vec<SimWorker>> = None;
    for i in 0..iterations {
        let now = speeds(i);
        let read = before.as_deref().unwrap_or(&now);
        let id = (key(read), key(&now));
        let one = match seen.get(&id) {
            Some(&one) => one,
            None => {
                let stats = task_stats(read);
                let spec = Spec {
                    workers: &now,
                    stats: &stats,
                    ..spec.clone()
                };
                let one = simulate_iteration(&spec, seed, reps);
                seen.insert(id, one);
                one
            }
        };
        total.time_ms += one.time_ms;
        total.master_busy_ms += one.master_busy_ms;
        total.chunks += one.chunks;
        before = Some(now);
    }
    total
}

/// The task times the adaptive policies (`daf`) read, as if one iteration had been measured at
/// these speeds: a hundred tasks per worker at its mean and deviation.
pub fn task_stats(workers: &[SimWorker]) -> TaskStats {
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

/// An answer: when the worker is done with its chunk and sends it back.
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

/// The master's clock, its links, and how long each was busy.
#[derive(Debug, Default)]
struct Master {
    /// When the master, its outgoing link and its incoming link are next free.
    free: f64,
    wire_out: f64,
    wire_in: f64,
    busy: f64,
    wire_out_busy: f64,
    wire_in_busy: f64,
}

impl Master {
    /// Sends `bytes`; returns when they have arrived. Sync: the master waits for delivery.
    /// Async: the master pays the start-up and moves on, the transfer queues on the link.
    fn send(&mut self, spec: &Spec<'_>, bytes: f64) -> f64 {
        let (mo, k) = (spec.mo_ms, spec.k_ms_per_byte);
        let start = self.free;
        match spec.protocol {
            Protocol::Sync => {
                self.free = start + mo + k * bytes;
                self.busy += mo + k * bytes;
                self.free
            }
            Protocol::Async => {
                self.free = start + mo;
                self.busy += mo;
                self.wire_out = self.wire_out.max(start + mo) + k * bytes;
                self.wire_out_busy += k * bytes;
                self.wire_out
            }
        }
    }

    /// Receives an answer of `bytes` sent at `at` and recovers its `tasks`: answers queue on
    /// the incoming link in the order they are sent, each pays its start-up in parallel.
    fn receive(&mut self, spec: &Spec<'_>, at: f64, bytes: f64, tasks: usize) -> f64 {
        let transfer = spec.k_ms_per_byte * bytes;
        self.wire_in = self.wire_in.max(at) + transfer;
        self.wire_in_busy += transfer;
        let arrived = self.wire_in + spec.mo_ms;
        let recover = spec.recover_ms_per_task * tasks as f64;
        self.free = self.free.max(arrived) + recover;
        self.busy += recover;
        arrived
    }
}

/// The chunks a worker has been sent and not yet answered: when it will be done with them, how
/// many, and the size of the last.
#[derive(Debug, Clone, Copy, Default)]
struct Backlog {
    done: f64,
    chunks: usize,
    last: usize,
}

/// One simulated iteration in progress.
struct IterationSim<'a, 'r> {
    spec: &'a Spec<'a>,
    master: Master,
    policy: Box<dyn Policy>,
    remaining: usize,
    chunks: usize,
    backlogs: Vec<Backlog>,
    answers: BinaryHeap<Reverse<Answer>>,
    rng: &'r mut Normal,
}

impl IterationSim<'_, '_> {
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
        self.chunks += 1;
        let sent = self.master.free;
        let arrived = self
            .master
            .send(self.spec, tasks as f64 * self.spec.task_bytes)
            .max(ready);
        let w = self.spec.workers[worker];
        let g = tasks as f64;
        let work = (g * w.mean_ms + w.sd_ms * g.sqrt() * self.rng.draw()).max(0.0);
        let backlog = &mut self.backlogs[worker];
        backlog.done = arrived.max(backlog.done) + work;
        backlog.chunks += 1;
        backlog.last = tasks;
        self.answers.push(Reverse(Answer {
            at: backlog.done,
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
            self.backlogs[worker].chunks,
            self.backlogs[worker].last,
            depth,
            n,
            self.remaining,
        ) {
            self.give(worker, 0.0);
        }
    }
}

fn once(spec: &Spec<'_>, mut policy: Box<dyn Policy>, rng: &mut Normal) -> Outcome {
    let n = spec.workers.len();
    if n == 0 || spec.tasks == 0 {
        return Outcome {
            time_ms: spec.serial_ms,
            master_busy_ms: spec.serial_ms,
            chunks: 0,
        };
    }
    policy.begin(&Plan {
        tasks: spec.tasks,
        workers: n,
        factor: spec.factor,
        min_chunk: spec.min_chunk,
        stats: spec.stats,
    });
    let mut sim = IterationSim {
        spec,
        master: Master::default(),
        policy,
        remaining: spec.tasks,
        chunks: 0,
        backlogs: vec![Backlog::default(); n],
        answers: BinaryHeap::with_capacity(n),
        rng,
    };
    let shared: Vec<f64> = (0..n)
        .map(|_| sim.master.send(spec, spec.shared_bytes))
        .collect();
    for (worker, &ready) in shared.iter().enumerate() {
        sim.give(worker, ready);
    }
    for worker in 0..n {
        sim.prefetch(worker);
    }
    while let Some(Reverse(back)) = sim.answers.pop() {
        let bytes = back.tasks as f64 * spec.result_bytes;
        let arrived = sim.master.receive(spec, back.at, bytes, back.tasks);
        sim.policy.chunk_done(&ChunkDone {
            worker: back.worker,
            tasks: back.tasks,
            busy: ms_duration(back.work_ms),
            round_trip: ms_duration(arrived - back.sent),
        });
        sim.backlogs[back.worker].chunks -= 1;
        if sim.backlogs[back.worker].chunks == 0 {
            sim.give(back.worker, 0.0);
        }
        sim.prefetch(back.worker);
    }
    let m = &sim.master;
    Outcome {
        time_ms: m.free + spec.serial_ms,
        master_busy_ms: (m.busy + spec.serial_ms)
            .max(m.wire_out_busy)
            .max(m.wire_in_busy),
        chunks: sim.chunks,
    }
}

fn ms_duration(ms: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64(ms.max(0.0) / 1e3)
}

/// Standard normal draws (Box–Muller over SplitMix64, both branches): deterministic for a seed.
struct Normal {
    rng: SplitMix64,
    spare: Option<f64>,
}

impl Normal {
    fn new(seed: u64) -> Self {
        Normal {
            rng: SplitMix64::new(seed),
            spare: None,
        }
    }

    /// In (0, 1]: never 0, so the logarithm below is finite.
    fn uniform(&mut self) -> f64 {
        ((self.rng.next_u64() >> 11) as f64 + 1.0) * (1.0 / (1u64 << 53) as f64)
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

    fn alike(n: usize, mean_ms: f64) -> Vec<SimWorker> {
        vec![
            SimWorker {
                mean_ms,
                sd_ms: 0.0
            };
            n
        ]
    }

    fn spec<'a>(workers: &'a [SimWorker], stats: &'a TaskStats, tasks: usize) -> Spec<'a> {
        Spec {
            tasks,
            workers,
            policy: PolicyName::Static,
            factor: 0.5,
            min_chunk: 1,
            stats,
            protocol: Protocol::Async,
            mo_ms: 0.0,
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
    fn a_master_paying_per_message_saturates() {
        // 10,000 one-task chunks of 1 ms each at 0.1 ms a message: the master needs 1 s to
        // send them, far more than the 1 ms of work each worker has.
        let w = alike(10_000, 1.0);
        let stats = task_stats(&w);
        let out = simulate_iteration(
            &Spec {
                mo_ms: 0.1,
                ..spec(&w, &stats, 10_000)
            },
            1,
            1,
        );
        assert!(out.time_ms >= 1000.0, "{out:?}");
        assert!(out.master_busy_ms / out.time_ms > 0.9, "{out:?}");
        assert_eq!(out.chunks, 10_000);
    }

    #[test]
    fn answers_queue_on_the_incoming_link() {
        // Four workers answer 1000 B at the same moment over a link of 0.01 ms a byte: the
        // answers arrive one after the other, 10 ms apart.
        let w = alike(4, 1.0);
        let stats = task_stats(&w);
        let out = simulate_iteration(
            &Spec {
                k_ms_per_byte: 0.01,
                task_bytes: 0.0,
                result_bytes: 1000.0,
                ..spec(&w, &stats, 4)
            },
            1,
            1,
        );
        assert!((out.time_ms - 41.0).abs() < 1e-9, "{out:?}");
        assert!((out.master_busy_ms - 40.0).abs() < 1e-9, "{out:?}");
    }

    #[test]
    fn a_run_under_load_stretches_the_loaded_iterations_only() {
        let w = alike(4, 1.0);
        let stats = task_stats(&w);
        let plain = spec(&w, &stats, 100);
        let one = simulate(&plain, 1, 1);
        assert!((one - 25.0).abs() < 1e-9);
        let unloaded = simulate_run(&plain, 10, &LoadPattern::None, 1, 1);
        assert!((unloaded.time_ms - 250.0).abs() < 1e-9, "{unloaded:?}");
        // Worker 0 at 50 % load (twice as slow) from iteration 5: a static iteration waits for
        // its 25 tasks of 2 ms.
        let load: LoadPattern = "5:0:50".parse().unwrap();
        let loaded = simulate_run(&plain, 10, &load, 1, 1);
        assert!(
            (loaded.time_ms - (5.0 * 25.0 + 5.0 * 50.0)).abs() < 1e-9,
            "{loaded:?}"
        );
    }

    #[test]
    fn an_adaptive_policy_under_load_reads_the_iteration_before() {
        // `daf` cuts by the speeds it measured: in the first loaded iteration it still
        // believes worker 0 is as fast as the others, later it gives it less.
        let w = alike(4, 1.0);
        let stats = task_stats(&w);
        let daf = Spec {
            policy: PolicyName::Daf,
            ..spec(&w, &stats, 400)
        };
        let load: LoadPattern = "1:0:75".parse().unwrap();
        let first = simulate_run(&daf, 2, &load, 1, 1).time_ms - simulate(&daf, 1, 1);
        assert_eq!(
            simulate_run(&daf, 1, &load, 1, 1).time_ms,
            simulate(&daf, 1, 1)
        );
        let later =
            simulate_run(&daf, 3, &load, 1, 1).time_ms - simulate_run(&daf, 2, &load, 1, 1).time_ms;
        assert!(later < first, "first loaded {first} ms, later {later} ms");
    }

    #[test]
    fn ten_thousand_workers_simulate_fast() {
        let w: Vec<SimWorker> = (0..10_000)
            .map(|_| SimWorker {
                mean_ms: 2.0,
                sd_ms: 1.0,
            })
            .collect();
        let stats = task_stats(&w);
        let daf = Spec {
            policy: PolicyName::Daf,
            mo_ms: 0.02,
            ..spec(&w, &stats, 100_000)
        };
        let started = std::time::Instant::now();
        let run = simulate_run(&daf, 100, &LoadPattern::None, 1, 1);
        // Debug builds run several times slower than release, where this takes milliseconds.
        assert!(
            started.elapsed().as_secs_f64() < 5.0,
            "{:?}",
            started.elapsed()
        );
        assert!(run.time_ms > 100.0 * 100_000.0 * 2.0 / 10_000.0, "{run:?}");
    }
}
