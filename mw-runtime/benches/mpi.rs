//! The MPI engine against a hand-written rsmpi master/worker loop with dynamic self-scheduling
//! (send a chunk, receive from anyone, send the next to whoever answered), both measured on the
//! same ranks in one job:
//!
//! (a) empty tasks in chunks of one: tasks per second;
//! (b) 1 ms spinning tasks: efficiency = ideal time (total task time / workers) / measured time.
//!
//!     cargo bench -p mw-runtime --features mpi --bench mpi --no-run
//!     mpirun -np 2 target/release/deps/mpi-<hash> --bench   # (a) with one worker
//!     mpirun -np 3 target/release/deps/mpi-<hash> --bench   # (b) with two workers

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

/// The runtime on the same ranks; `chunk_of_one` forces chunks of a single task.
fn runtime(tasks: &[u64], chunk_of_one: bool) -> Duration {
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
        backend: BackendChoice::Mpi,
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

fn main() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_none() && std::env::var_os("PMI_SIZE").is_none()
    {
        println!("mpi bench skipped: launch it with mpirun (see the file's header)");
        return;
    }
    let universe = mw_runtime::mpi::initialize().expect("MPI initializes");
    let world = universe.world();
    let workers = (world.size() - 1) as usize;
    let rounds = if std::env::args().any(|a| a == "--bench") {
        5
    } else {
        1
    };
    let empty = vec![0u64; 20_000];
    let busy = vec![1000u64; 200 * workers.max(1)];
    let ideal = Duration::from_micros(busy.iter().sum::<u64>() / workers.max(1) as u64);
    // `--only a` or `--only b` runs one half (for profiling).
    let only = std::env::args().skip_while(|a| a != "--only").nth(1);
    let (run_a, run_b) = match only.as_deref() {
        Some("a") => (true, false),
        Some("b") => (false, true),
        _ => (true, true),
    };
    let (mut a_hand, mut a_mw, mut b_hand, mut b_mw) = (vec![1.0], vec![1.0], vec![1.0], vec![1.0]);
    if run_a || run_b {
        a_hand.clear();
        a_mw.clear();
        b_hand.clear();
        b_mw.clear();
    }
    for _ in 0..rounds {
        if !run_a {
            a_hand.push(1.0);
            a_mw.push(1.0);
        }
        if !run_b {
            b_hand.push(1.0);
            b_mw.push(1.0);
        }
        if run_a {
            let comm = world.duplicate();
            let t = hand_written(&comm, &empty);
            a_hand.push(empty.len() as f64 / t.as_secs_f64());
            let t = runtime(&empty, true);
            a_mw.push(empty.len() as f64 / t.as_secs_f64());
        }
        if run_b {
            let comm = world.duplicate();
            let t = hand_written(&comm, &busy);
            b_hand.push(ideal.as_secs_f64() / t.as_secs_f64());
            let t = runtime(&busy, false);
            b_mw.push(ideal.as_secs_f64() / t.as_secs_f64());
        }
    }
    if world.rank() == 0 {
        let (a_hand, a_mw) = (median(a_hand), median(a_mw));
        println!("MPI, {workers} worker rank(s), median of {rounds} rounds");
        println!(
            "(a) empty tasks, chunk 1: hand-written {a_hand:>9.0} tasks/s, runtime {a_mw:>9.0} tasks/s, ratio {:.2}",
            a_mw / a_hand
        );
        println!(
            "(b) 1 ms tasks: efficiency hand-written (chunk 1) {:.3}, runtime (daf) {:.3}",
            median(b_hand),
            median(b_mw)
        );
    }
}
