//! What `--trace` costs: the same runs with the trace off and on, alternating, median of the
//! rounds. Two workloads: the worst case for the trace (empty tasks, one task per chunk, so
//! every chunk is all overhead and records four slices) and a more usual one (tasks of 50 µs
//! in chunks cut by `daf` on two workers). Writing the file happens after the run and is
//! timed apart.
//!
//!     cargo bench -p mw-runtime --bench trace

use std::path::Path;
use std::time::{Duration, Instant};

use mw_runtime::prelude::*;
use mw_runtime::{PolicyName, RunConfig};

const ROUNDS: usize = 9;

struct Tasks {
    count: usize,
    us: u32,
}

impl Master for Tasks {
    type Task = u32;
    type Result = u32;
    type Shared = ();
    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        Work::tasks(if it.index == 0 {
            vec![self.us; self.count]
        } else {
            Vec::new()
        })
    }
    fn recover(&mut self, _: TaskId, _: u32) {}
}

/// Spins for the task's number of µs.
struct Spin;

impl Worker for Spin {
    type Task = u32;
    type Result = u32;
    type Shared = ();
    fn do_work(&mut self, _: &(), us: &u32) -> u32 {
        let until = Instant::now() + Duration::from_micros(u64::from(*us));
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        *us
    }
}

struct Workload {
    name: &'static str,
    tasks: usize,
    task_us: u32,
    config: RunConfig,
}

/// Runs once; returns the iteration's time and the time spent after it (writing the trace).
fn run(workload: &Workload, trace: Option<&Path>) -> (Duration, Duration) {
    let config = RunConfig {
        trace: trace.map(Path::to_path_buf),
        quiet: true,
        ..workload.config.clone()
    };
    let (count, us) = (workload.tasks, workload.task_us);
    let started = Instant::now();
    let report =
        mw_runtime::run_config(&config, || Tasks { count, us }, || Spin).expect("the run succeeds");
    let total = started.elapsed();
    let metrics = report.metrics().expect("metrics on the master");
    let iteration = Duration::from_secs_f64(metrics.iterations[0].time_ms / 1e3);
    assert_eq!(metrics.iterations[0].tasks, count);
    (iteration, total.saturating_sub(iteration))
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() {
    // `cargo test --benches` runs this without `--bench`: keep that quick.
    let (rounds, scale) = if std::env::args().any(|a| a == "--bench") {
        (ROUNDS, 1)
    } else {
        (1, 20)
    };
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("bench.trace.json");
    let local = |workers, policy: PolicyName, factor| RunConfig {
        workers: Some(workers),
        max_workers: Some(workers),
        policy: policy.into(),
        factor,
        protocol: Protocol::Async,
        backend: BackendChoice::Local,
        ..RunConfig::default()
    };
    let workloads = [
        Workload {
            name: "empty tasks, 1 task per chunk, 1 worker",
            tasks: 20_000 / scale,
            task_us: 0,
            config: local(1, PolicyName::Fsc, 1.0 / (20_000 / scale) as f64),
        },
        Workload {
            name: "50 µs tasks, daf, 2 workers",
            tasks: 20_000 / scale,
            task_us: 50,
            config: local(2, PolicyName::Daf, 0.5),
        },
    ];
    println!("--trace off against on, median of {rounds} rounds");
    for workload in &workloads {
        let (mut off, mut on, mut write) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            off.push(run(workload, None).0);
            let (iteration, after) = run(workload, Some(&path));
            on.push(iteration);
            write.push(after);
        }
        let (off, on, write) = (median(off), median(on), median(write));
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        println!("  {} ({} tasks)", workload.name, workload.tasks);
        println!(
            "    iteration: off {:>9.2} ms, on {:>9.2} ms, overhead {:+.1}%",
            off.as_secs_f64() * 1e3,
            on.as_secs_f64() * 1e3,
            (on.as_secs_f64() / off.as_secs_f64() - 1.0) * 100.0
        );
        println!(
            "    writing the trace after the run: {:.1} ms, {:.1} MB",
            write.as_secs_f64() * 1e3,
            size as f64 / 1e6
        );
    }
}
