//! The MPI engine against a hand-written rsmpi master/worker loop with dynamic self-scheduling
//! (send a chunk, receive from anyone, send the next to whoever answered), both measured on the
//! same ranks in one job:
//!
//! (a) empty tasks in chunks of one: tasks per second;
//! (b) 1 ms spinning tasks: efficiency = ideal time (total task time / workers) / measured time.
//!
//!     cargo bench -p mw-runtime --features mpi --bench mpi --no-run
//!     mpirun -np 2 target/release/deps/mpi-<hash> --bench --only a  # (a) with one worker
//!     mpirun -np 3 target/release/deps/mpi-<hash> --bench --only b  # (b) with two workers
//!
//! `--rounds N` (15 with `--bench`) and `--tasks N` (20,000 empty tasks) size the runs. Each
//! round runs every contender once, in rotating order; the ratio is the median of the rounds'
//! ratios, so a machine whose speed drifts (a VM whose cores move) compares like with like. The
//! runtime runs with its default of one chunk prefetched per worker, and also without (the plain
//! self-scheduling loop the hand-written code is).

use std::time::{Duration, Instant};

use mw_runtime::mpi::point_to_point::{Destination, Source};
use mw_runtime::mpi::topology::{Communicator, SimpleCommunicator};
use mw_runtime::prelude::*;
use mw_runtime::{PolicyName, RunConfig};

const STOP: i32 = 0;
const WORK: i32 = 1;

fn spin(duration: Duration) {
    let started = Instant::now();
    while started.elapsed() < duration {
        std::hint::spin_loop();
    }
}

/// The hand-written loop: tasks are `u64` durations in µs (0 = empty); returns the master's
/// elapsed time (workers return zero).
fn hand_written(world: &SimpleCommunicator, tasks: &[u64]) -> Duration {
    let workers = (world.size() - 1) as usize;
    if world.rank() != 0 {
        let master = world.process_at_rank(0);
        loop {
            let (task, status) = master.receive::<u64>();
            if status.tag() == STOP {
                return Duration::ZERO;
            }
            spin(Duration::from_micros(task));
            master.send_with_tag(&(task + 1), WORK);
        }
    }
    let started = Instant::now();
    let mut next = tasks.iter();
    let mut outstanding = 0;
    for w in 1..=workers {
        if let Some(task) = next.next() {
            world.process_at_rank(w as i32).send_with_tag(task, WORK);
            outstanding += 1;
        }
    }
    while outstanding > 0 {
        let (answer, status) = world.any_process().receive::<u64>();
        assert!(answer > 0);
        outstanding -= 1;
        if let Some(task) = next.next() {
            world
                .process_at_rank(status.source_rank())
                .send_with_tag(task, WORK);
            outstanding += 1;
        }
    }
    let elapsed = started.elapsed();
    for w in 1..=workers {
        world.process_at_rank(w as i32).send_with_tag(&0u64, STOP);
    }
    elapsed
}

struct Feeder(Vec<u64>);

impl Master for Feeder {
    type Task = u64;
    type Result = u64;
    type Shared = ();
    fn partition(&mut self, _: &Iteration) -> Work<(), u64> {
        Work::tasks(std::mem::take(&mut self.0))
    }
    fn recover(&mut self, _: TaskId, answer: u64) {
        assert!(answer > 0);
    }
}

struct Spinner;

impl Worker for Spinner {
    type Task = u64;
    type Result = u64;
    type Shared = ();
    fn do_work(&mut self, _: &(), task: &u64) -> u64 {
        spin(Duration::from_micros(*task));
        task + 1
    }
}

/// The runtime on the same ranks; `chunk_of_one` forces chunks of a single task, `prefetch` the
/// chunks a worker holds ahead.
fn runtime(tasks: &[u64], chunk_of_one: bool, prefetch: usize) -> Duration {
    let config = RunConfig {
        policy: if chunk_of_one {
            PolicyName::Fsc
        } else {
            PolicyName::Daf
        },
        factor: if chunk_of_one {
            1.0 / tasks.len() as f64
        } else {
            0.5
        },
        prefetch: Some(prefetch),
        backend: BackendChoice::Mpi,
        quiet: true,
        ..RunConfig::default()
    };
    let report = mw_runtime::run_config(&config, || Feeder(tasks.to_vec()), || Spinner)
        .expect("runtime run");
    report.metrics().map_or(Duration::ZERO, |m| {
        Duration::from_secs_f64(m.iterations[0].time_ms / 1e3)
    })
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// The value after `flag` on the command line.
fn arg<T: std::str::FromStr>(flag: &str) -> Option<T> {
    let mut args = std::env::args().skip_while(|a| a != flag);
    args.nth(1).and_then(|v| v.parse().ok())
}

/// Median throughput of each contender over `rounds`, and the median of the per-round ratios
/// to the first: each round runs every contender once, in an order that rotates, so a change of
/// speed of the machine (vCPUs moved, a neighbour's load) hits all of them alike.
fn paired(rounds: usize, contenders: &mut [&mut dyn FnMut() -> f64]) -> (Vec<f64>, Vec<f64>) {
    let n = contenders.len();
    let mut samples = vec![Vec::new(); n];
    for round in 0..rounds {
        for k in 0..n {
            let c = (round + k) % n;
            samples[c].push(contenders[c]());
        }
    }
    let ratios = (1..n)
        .map(|c| median((0..rounds).map(|r| samples[c][r] / samples[0][r]).collect()))
        .collect();
    (samples.into_iter().map(median).collect(), ratios)
}

fn main() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_none() && std::env::var_os("PMI_SIZE").is_none()
    {
        println!("mpi bench skipped: launch it with mpirun (see the file's header)");
        return;
    }
    let universe = mw_runtime::mpi::initialize().expect("MPI initializes");
    let world = universe.world();
    let workers = (world.size() - 1) as usize;
    let bench = std::env::args().any(|a| a == "--bench");
    let rounds = arg("--rounds").unwrap_or(if bench { 15 } else { 1 });
    let empty = vec![0u64; arg("--tasks").unwrap_or(20_000)];
    let busy = vec![1000u64; 200 * workers.max(1)];
    let ideal = Duration::from_micros(busy.iter().sum::<u64>() / workers.max(1) as u64);
    // `--only a` or `--only b` runs one half (for profiling).
    let only: Option<String> = arg("--only");
    let tasks_per_s = |t: Duration| empty.len() as f64 / t.as_secs_f64();
    if only.as_deref() != Some("b") {
        let (speeds, ratios) = paired(
            rounds,
            &mut [
                &mut || tasks_per_s(hand_written(&world.duplicate(), &empty)),
                &mut || tasks_per_s(runtime(&empty, true, 1)),
                &mut || tasks_per_s(runtime(&empty, true, 0)),
            ],
        );
        if world.rank() == 0 {
            println!("MPI, {workers} worker rank(s), median of {rounds} rounds");
            println!(
                "(a) empty tasks, chunk 1: hand-written {:>9.0} tasks/s, runtime {:>9.0} tasks/s, \
                 ratio {:.2} (without prefetch: {:.0} tasks/s, ratio {:.2})",
                speeds[0], speeds[1], ratios[0], speeds[2], ratios[1]
            );
        }
    }
    if only.as_deref() != Some("a") {
        let efficiency = |t: Duration| ideal.as_secs_f64() / t.as_secs_f64();
        let (efficiencies, _) = paired(
            rounds,
            &mut [
                &mut || efficiency(hand_written(&world.duplicate(), &busy)),
                &mut || efficiency(runtime(&busy, false, 1)),
            ],
        );
        if world.rank() == 0 {
            println!("MPI, {workers} worker rank(s), median of {rounds} rounds");
            println!(
                "(b) 1 ms tasks: efficiency hand-written (chunk 1) {:.3}, runtime (daf) {:.3}",
                efficiencies[0], efficiencies[1]
            );
        }
    }
}
