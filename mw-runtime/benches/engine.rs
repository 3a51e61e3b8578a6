//! Engine overhead: empty tasks in chunks of one on one worker, against the floor of this design —
//! a plain two-thread ping-pong over the same channel type. Both sides run in this process,
//! alternating, and the ratio of their median rates is printed.
//!
//!     cargo bench -p mw-runtime --bench engine

use std::time::{Duration, Instant};

use crossbeam_channel::unbounded;
use mw_runtime::prelude::*;
use mw_runtime::{PolicyName, RunConfig, TuneMode, TuningConfig};

const TASKS: usize = 20_000;
const ROUNDS: usize = 9;

/// Round trips per second between two threads over unbounded crossbeam channels.
fn ping_pong() -> f64 {
    let (to_worker, inbox) = unbounded::<u64>();
    let (to_master, answers) = unbounded::<u64>();
    let worker = std::thread::spawn(move || {
        while let Ok(n) = inbox.recv() {
            if to_master.send(n + 1).is_err() {
                break;
            }
        }
    });
    let started = Instant::now();
    for n in 0..TASKS as u64 {
        to_worker.send(n).expect("worker alive");
        let answer = answers.recv().expect("worker alive");
        assert_eq!(answer, n + 1);
    }
    let elapsed = started.elapsed();
    drop(to_worker);
    worker.join().expect("worker thread");
    TASKS as f64 / elapsed.as_secs_f64()
}

struct Empty;

impl Master for Empty {
    type Task = u64;
    type Result = u64;
    type Shared = ();
    fn partition(&mut self, it: &Iteration) -> Work<(), u64> {
        Work::tasks(if it.index == 0 {
            (0..TASKS as u64).collect()
        } else {
            Vec::new()
        })
    }
    fn recover(&mut self, task: TaskId, result: u64) {
        assert_eq!(result, task.index() as u64 + 1);
    }
}

struct Incr;

impl Worker for Incr {
    type Task = u64;
    type Result = u64;
    type Shared = ();
    fn do_work(&mut self, _: &(), n: &u64) -> u64 {
        n + 1
    }
}

/// Tasks per second through the engine: one worker, chunks of one task, `prefetch` held ahead
/// (`None`: the default).
fn engine(protocol: Protocol, prefetch: Option<usize>) -> f64 {
    let config = RunConfig {
        workers: Some(1),
        max_workers: Some(1),
        policy: PolicyName::Fsc.into(),
        // fsc cuts chunks of factor·M/N tasks: one task each.
        factor: 1.0 / TASKS as f64,
        protocol,
        prefetch,
        backend: BackendChoice::Local,
        quiet: true,
        // The tuner would change the chunk size within the iteration.
        tuning: TuningConfig {
            mode: TuneMode::Off,
            ..TuningConfig::default()
        },
        ..RunConfig::default()
    };
    let report = mw_runtime::run_config(&config, || Empty, || Incr).expect("run");
    let it = &report.metrics().expect("metrics").iterations[0];
    assert_eq!(it.chunks, TASKS, "one task per chunk");
    TASKS as f64 / Duration::from_secs_f64(it.time_ms / 1e3).as_secs_f64()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    // `cargo test --benches` runs this with `--bench` absent: keep that quick.
    let rounds = if std::env::args().any(|a| a == "--bench") {
        ROUNDS
    } else {
        1
    };
    let (mut floor, mut sync, mut asynchronous, mut plain) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        floor.push(ping_pong());
        asynchronous.push(engine(Protocol::Async, None));
        plain.push(engine(Protocol::Async, Some(0)));
        sync.push(engine(Protocol::Sync, None));
    }
    let (floor, asynchronous, plain, sync) = (
        median(floor),
        median(asynchronous),
        median(plain),
        median(sync),
    );
    println!("empty tasks, chunk size 1, 1 worker ({TASKS} tasks, median of {rounds} rounds)");
    println!("  ping-pong floor : {:>10.0} round trips/s", floor);
    println!(
        "  engine, async   : {:>10.0} tasks/s   ratio {:.2}",
        asynchronous,
        asynchronous / floor
    );
    println!(
        "  async, no prefetch: {:>7.0} tasks/s   ratio {:.2}",
        plain,
        plain / floor
    );
    println!(
        "  engine, sync    : {:>10.0} tasks/s   ratio {:.2}",
        sync,
        sync / floor
    );
}
