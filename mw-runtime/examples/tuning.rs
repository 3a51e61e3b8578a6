//! How well the tuner does: a synthetic sleep-based workload (so that many workers fit on a
//! small machine) run with fixed worker counts and then tuned from one worker, on the local
//! backend, all in one process. Prints the total times, the tuned run's ratio to the best fixed
//! run, the model's prediction error and the tuner's own time.
//!
//!     cargo run --release -p mw-runtime --example tuning
//!     cargo run --release -p mw-runtime --example tuning -- --change-at 40 --change-mean 4
//!
//! Each task sleeps for a time drawn from a normal law (`--mean-ms`, `--sd` as a fraction of the
//! mean) and carries `--task-bytes` of data out and `--result-bytes` back: the master fills the
//! data in `partition` and sums the results in `recover`, the worker checks the data and fills
//! its result, so moving them costs real memory work. Every worker taking part in an iteration
//! first digests the shared part (`--shared-bytes`), as a worker decoding broadcast data would.
//! `--change-at I` multiplies the task time by `--change-mean` and the bytes by
//! `--change-bytes` from iteration `I` on. With `--stream` the master produces the same tasks
//! through `more_tasks`, a window at a time, instead of all at once in `partition`:
//!
//!     cargo run --release -p mw-runtime --example tuning -- --iterations 1 --tasks 4000 \
//!         --mean-ms 2 --max-workers 16 --sweep 16 --stream --repeat 6

use std::time::{Duration, Instant};

use clap::Parser;
use mw_runtime::prelude::*;
use mw_runtime::random::SplitMix64;
use mw_runtime::{
    LoadPattern, Objective, PolicyName, RunConfig, RunMetrics, TuneMode, TuningConfig,
};

#[derive(Debug, Clone, Parser)]
struct Args {
    /// Tasks per iteration
    #[arg(long, default_value_t = 256)]
    tasks: usize,
    /// Mean task time (sleep), in ms
    #[arg(long, default_value_t = 1.0)]
    mean_ms: f64,
    /// Standard deviation of the task time, as a fraction of the mean
    #[arg(long, default_value_t = 0.2)]
    sd: f64,
    /// Bytes of data per task, out
    #[arg(long, default_value_t = 4096)]
    task_bytes: usize,
    /// Bytes of result per task, back
    #[arg(long, default_value_t = 4096)]
    result_bytes: usize,
    /// Bytes of the shared part, sent to every worker taking part in an iteration
    #[arg(long, default_value_t = 0)]
    shared_bytes: usize,
    /// Iterations per run
    #[arg(long, default_value_t = 100)]
    iterations: usize,
    /// From this iteration on, the load changes
    #[arg(long)]
    change_at: Option<usize>,
    /// Task time multiplier after the change
    #[arg(long, default_value_t = 1.0)]
    change_mean: f64,
    /// Bytes multiplier (task, result and shared) after the change
    #[arg(long, default_value_t = 1.0)]
    change_bytes: f64,
    /// Emulated external load on the workers (`--load` of every mwgen program)
    #[arg(long, default_value = "none")]
    load: LoadPattern,
    /// Fixed worker counts to compare with
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32")]
    sweep: Vec<usize>,
    /// Workers the tuned run starts with
    #[arg(long, default_value_t = 1)]
    start: usize,
    /// Pool of the tuned run (and the most the tuner chooses)
    #[arg(long, default_value_t = 32)]
    max_workers: usize,
    /// What the tuner minimizes
    #[arg(long, default_value = "time")]
    objective: Objective,
    /// Distribution policy of every run
    #[arg(long, default_value = "daf")]
    policy: PolicyName,
    /// Message protocol of every run
    #[arg(long, default_value = "async")]
    protocol: Protocol,
    /// Iterations a proposal must hold
    #[arg(long, default_value_t = 2)]
    persistence: usize,
    /// Seed of the task times
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Print every iteration of the tuned run
    #[arg(long)]
    verbose: bool,
    /// Stream each iteration's tasks through `more_tasks` instead of returning them from
    /// `partition`
    #[arg(long)]
    stream: bool,
    /// Then run the best fixed count and the tuned run this many more times, alternating, and
    /// print the median ratio with its range
    #[arg(long, default_value_t = 0)]
    repeat: usize,
}

#[derive(Debug, Clone, PartialEq, Message)]
struct Task {
    index: u32,
    sleep_us: u32,
    result_len: u32,
    data: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Message)]
struct Answer {
    index: u32,
    sum: u64,
    data: Vec<u8>,
}

/// The phase of the load at an iteration: (task time factor, bytes factor).
fn phase(args: &Args, iteration: usize) -> (f64, f64) {
    match args.change_at {
        Some(at) if iteration >= at => (args.change_mean, args.change_bytes),
        _ => (1.0, 1.0),
    }
}

struct Load {
    args: Args,
    rng: SplitMix64,
    checksum: u64,
    /// The current iteration's tasks not yet made.
    unmade: std::ops::Range<usize>,
    /// Their mean sleep (µs), bytes out and bytes back.
    shape: (f64, usize, u32),
}

impl Load {
    /// Up to `count` of the iteration's tasks not yet made.
    fn make(&mut self, count: usize) -> Vec<Task> {
        let (mean_us, task_bytes, result_len) = self.shape;
        let first = self.unmade.start;
        let end = self.unmade.end.min(first + count);
        self.unmade.start = end;
        (first..end)
            .map(|i| {
                let us = (mean_us * (1.0 + self.args.sd * self.rng.next_normal())).max(0.0);
                Task {
                    index: i as u32,
                    sleep_us: us as u32,
                    result_len,
                    data: vec![(i % 251) as u8; task_bytes],
                }
            })
            .collect()
    }
}

impl Master for Load {
    type Task = Task;
    type Result = Answer;
    type Shared = Vec<u8>;

    fn partition(&mut self, it: &Iteration) -> Work<Vec<u8>, Task> {
        if it.index >= self.args.iterations {
            return Work::new(Vec::new(), Vec::new());
        }
        let (time, bytes) = phase(&self.args, it.index);
        self.shape = (
            self.args.mean_ms * 1e3 * time,
            (self.args.task_bytes as f64 * bytes) as usize,
            (self.args.result_bytes as f64 * bytes) as u32,
        );
        self.unmade = 0..self.args.tasks;
        let shared = vec![it.index as u8; (self.args.shared_bytes as f64 * bytes) as usize];
        let tasks = if self.args.stream {
            Vec::new()
        } else {
            self.make(self.args.tasks)
        };
        Work::new(shared, tasks)
    }

    fn more_tasks(&mut self, _it: &Iteration, room: usize) -> Vec<Task> {
        self.make(room)
    }

    fn recover(&mut self, task: TaskId, answer: Answer) {
        assert_eq!(answer.index as usize, task.index());
        let sum: u64 = answer.data.iter().map(|&b| u64::from(b)).sum();
        self.checksum = self.checksum.wrapping_add(sum).wrapping_add(answer.sum);
    }
}

#[derive(Default)]
struct Sleeper {
    /// The iteration whose shared part this worker has digested.
    digested: Option<usize>,
}

impl Worker for Sleeper {
    type Task = Task;
    type Result = Answer;
    type Shared = Vec<u8>;

    fn do_work(&mut self, shared: &Vec<u8>, task: &Task) -> Answer {
        // Digest the shared part once per iteration (its first byte is the iteration).
        let tag = shared.first().map(|&b| b as usize);
        if !shared.is_empty() && self.digested != tag {
            let sum: u64 = shared.iter().map(|&b| u64::from(b)).sum();
            std::hint::black_box(sum);
            self.digested = tag;
        }
        let sum: u64 = task.data.iter().map(|&b| u64::from(b)).sum();
        std::thread::sleep(Duration::from_micros(u64::from(task.sleep_us)));
        let data = (0..task.result_len)
            .map(|i| (i as u8).wrapping_mul(31))
            .collect();
        Answer {
            index: task.index,
            sum,
            data,
        }
    }
}

/// Runs the workload; `None` on MPI worker ranks.
fn run(
    args: &Args,
    workers: usize,
    pool: usize,
    tuning: TuningConfig,
) -> Option<(f64, RunMetrics)> {
    let config = RunConfig {
        workers: Some(workers),
        max_workers: Some(pool),
        policy: args.policy.into(),
        protocol: args.protocol,
        backend: BackendChoice::Auto,
        tuning,
        load: args.load.clone(),
        quiet: true,
        ..RunConfig::default()
    };
    let started = Instant::now();
    let master = || Load {
        args: args.clone(),
        rng: SplitMix64::new(args.seed),
        checksum: 0,
        unmade: 0..0,
        shape: (0.0, 0, 0),
    };
    let worker = Sleeper::default;
    let report = mw_runtime::run_config(&config, master, worker).expect("the run completes");
    let total = started.elapsed().as_secs_f64() * 1e3;
    report.into_metrics().map(|metrics| (total, metrics))
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    Some(xs[xs.len() / 2])
}

fn main() {
    let args = Args::parse();
    // Under mpirun (built with `--features mpi`), MPI stays initialized for all the runs; the
    // pool is then the launched ranks but one.
    #[cfg(feature = "mpi")]
    let _universe = mw_runtime::mpi::initialize();
    let report = |text: String| {
        if !is_worker_rank() {
            println!("{text}");
        }
    };
    report(format!(
        "workload: {} iterations of {} tasks{}, sleep {} ms ± {:.0}%, {} B out / {} B back per \
         task, shared {} B, policy {}, {}, load {}{}",
        args.iterations,
        args.tasks,
        if args.stream { " (streamed)" } else { "" },
        args.mean_ms,
        args.sd * 100.0,
        args.task_bytes,
        args.result_bytes,
        args.shared_bytes,
        args.policy,
        args.protocol,
        args.load,
        match args.change_at {
            Some(at) => format!(
                "; from iteration {at}: task time ×{}, bytes ×{}",
                args.change_mean, args.change_bytes
            ),
            None => String::new(),
        }
    ));
    let mut best: Option<(usize, f64, RunMetrics)> = None;
    for &n in &args.sweep {
        let Some((total, metrics)) = run(&args, n, n.max(args.max_workers), TuningConfig::off())
        else {
            continue;
        };
        report(format!("  fixed {n:>3} workers: {total:>9.1} ms"));
        if best.as_ref().is_none_or(|(_, t, _)| total < *t) {
            best = Some((n, total, metrics));
        }
    }
    let tuning = TuningConfig {
        mode: TuneMode::On,
        persistence: args.persistence,
        objective: Some(args.objective),
        ..TuningConfig::default()
    };
    let tuned = run(&args, args.start, args.max_workers, tuning.clone());
    let (Some((total, metrics)), Some((best_n, best_total, best_metrics))) = (tuned, best) else {
        return;
    };
    println!(
        "  tuned from {} (pool {}, objective {}): {total:>9.1} ms",
        args.start, args.max_workers, args.objective
    );
    println!(
        "ratio tuned / best fixed ({best_n} workers): {:.3}",
        total / best_total
    );

    // The same iterations of both runs, from the one after the tuner's last decision on: what
    // the tuned settings cost once found, start-up left out.
    let settled = metrics.decisions.last().map_or(0, |d| d.iteration);
    let mean_from = |m: &RunMetrics| {
        let times: Vec<f64> = m.iterations[settled..].iter().map(|i| i.time_ms).collect();
        times.iter().sum::<f64>() / times.len().max(1) as f64
    };
    if settled < metrics.iterations.len() {
        let (tuned_mean, fixed_mean) = (mean_from(&metrics), mean_from(&best_metrics));
        println!(
            "from iteration {settled} on: tuned {tuned_mean:.2} ms per iteration, best fixed \
             {fixed_mean:.2} ms: ratio {:.3}",
            tuned_mean / fixed_mean
        );
    }
    let its = &metrics.iterations;
    let errors: Vec<f64> = its
        .iter()
        .filter_map(|i| i.predicted_ms.map(|p| (p - i.time_ms).abs() / i.time_ms))
        .collect();
    let changed: Vec<usize> = metrics.decisions.iter().map(|d| d.iteration).collect();
    let after_change: Vec<f64> = its
        .iter()
        .filter(|i| changed.contains(&i.index))
        .filter_map(|i| i.predicted_ms.map(|p| (p - i.time_ms).abs() / i.time_ms))
        .collect();
    if let Some(m) = median(errors.clone()) {
        println!(
            "prediction error |predicted − measured| / measured: median {:.1}% over {} \
             iterations; first iteration after each change: median {}",
            m * 100.0,
            errors.len(),
            median(after_change).map_or("-".into(), |e| format!("{:.1}%", e * 100.0)),
        );
    }
    let share: Vec<f64> = its.iter().map(|i| i.tuning_ms / i.time_ms).collect();
    let tuning_ms: Vec<f64> = its.iter().map(|i| i.tuning_ms).collect();
    println!(
        "tuner time per iteration: median {:.3} ms, {:.2}% of the iteration (max {:.2}%)",
        median(tuning_ms).unwrap_or(0.0),
        median(share.clone()).unwrap_or(0.0) * 100.0,
        share.iter().copied().fold(0.0, f64::max) * 100.0
    );
    println!("decisions:");
    for d in &metrics.decisions {
        let when = d
            .tasks_done
            .map_or(String::new(), |done| format!(" after {done} tasks"));
        println!(
            "  iteration {:>3}{when}: {} {} → {}  ({})",
            d.iteration, d.tunable, d.from, d.to, d.reason
        );
    }
    if args.repeat > 0 {
        // Pairs in alternating order, so that a drift of the machine weighs on both sides.
        let mut ratios = vec![total / best_total];
        for r in 0..args.repeat {
            let fixed = || {
                run(
                    &args,
                    best_n,
                    best_n.max(args.max_workers),
                    TuningConfig::off(),
                )
            };
            let tuned = || run(&args, args.start, args.max_workers, tuning.clone());
            let (f, t) = if r % 2 == 0 {
                let t = tuned();
                (fixed(), t)
            } else {
                let f = fixed();
                (f, tuned())
            };
            if let (Some((f, _)), Some((t, _))) = (f, t) {
                ratios.push(t / f);
            }
        }
        let (lo, hi) = ratios.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        });
        println!(
            "ratio tuned / fixed {best_n} over {} pairs: median {:.3} (range {lo:.3}–{hi:.3})",
            ratios.len(),
            median(ratios.clone()).unwrap_or(f64::NAN)
        );
    }
    if args.verbose {
        for i in its {
            println!(
                "  it {:>3} n {:>2} time {:>8.2} predicted {:>8} tc {:>8.1} q {:.2} mo {:?} k {:?}",
                i.index,
                i.workers,
                i.time_ms,
                i.predicted_ms.map_or("-".into(), |p| format!("{p:.2}")),
                i.tc_ms,
                i.imbalance,
                i.mo_ms,
                i.k_ms_per_byte
            );
        }
    }
}

/// Whether this process is an MPI worker rank (which prints nothing).
fn is_worker_rank() -> bool {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"]
        .iter()
        .find_map(|var| std::env::var(var).ok()?.parse::<u32>().ok())
        .is_some_and(|rank| rank > 0)
}
