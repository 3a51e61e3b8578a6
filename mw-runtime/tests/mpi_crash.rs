//! A worker rank whose process dies (not a panic: `abort`, as after a segfault, an OOM kill or
//! `kill -9`) mid-run. Run it under MPI, both ways, one test each (a plain `cargo test` ignores
//! them; started with `--ignored` outside a launcher, they fail and say why):
//!
//!     cargo test -p mw-runtime --features mpi --test mpi_crash --no-run
//!     mpirun -np 3 target/debug/deps/mpi_crash-<hash> --ignored --exact \
//!         without_recovery_a_dead_rank_ends_the_job
//!     mpirun --mca orte_enable_recovery 1 -np 3 target/debug/deps/mpi_crash-<hash> --ignored \
//!         --exact with_recovery_every_result_arrives_once_after_a_rank_dies
//!     mpirun -np 3 target/debug/deps/mpi_crash-<hash> --ignored --exact \
//!         without_recovery_a_stuck_worker_is_ended_only_after_the_master
//!
//! Without recovery, the launcher ends the whole job with an error within about a second (what
//! the first test must do: exit non-zero, and not hang). With it (Open MPI 4: `--mca
//! orte_enable_recovery 1`; Open MPI 5: `--enable-recovery`; Intel MPI: `-genv I_MPI_FAULT_CONTINUE on`;
//! MPICH has none), the job goes on, the transport reports the worker lost, and the run ends
//! with every result recovered exactly once.
//!
//! A worker stuck in its code is another matter: its process lives, so the run goes on without
//! it, and the master ends it only once its own process exits (ending it earlier would, without
//! recovery, end the whole job while the master's program still runs). The third test's master
//! says [`WENT_ON`] on its standard output a while after its run: a script checks that the line
//! is there, and that the job then ended (the launcher's status is not 0: a rank was killed).
#![allow(clippy::unwrap_used)]

use mw_runtime::prelude::*;
use mw_runtime::{Report, RunConfig};

const ITERATIONS: usize = 20;
const TASKS: u32 = 100;
/// Worker 0 dies on this task of this iteration.
const DIES_AT: (usize, u32) = (5, 7);

/// Counts every result it recovers, by iteration and task.
struct Counting {
    seen: Vec<Vec<u32>>,
}

impl Master for Counting {
    type Task = u32;
    type Result = u32;
    type Shared = u32;

    fn partition(&mut self, it: &Iteration) -> Work<u32, u32> {
        if it.index == ITERATIONS {
            return Work::new(0, Vec::new());
        }
        self.seen.push(vec![0; TASKS as usize]);
        Work::new(it.index as u32, (0..TASKS).collect())
    }

    fn recover(&mut self, task: TaskId, result: u32) {
        let iteration = self.seen.len() - 1;
        if result == task.index() as u32 {
            self.seen[iteration][task.index()] += 1;
        }
    }

    fn final_work(&mut self) -> mw_runtime::Result<()> {
        let wrong: Vec<String> = self
            .seen
            .iter()
            .enumerate()
            .flat_map(|(i, tasks)| {
                tasks
                    .iter()
                    .enumerate()
                    .filter(|&(_, &n)| n != 1)
                    .map(move |(t, n)| format!("iteration {i} task {t}: {n} results"))
            })
            .collect();
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(wrong.join("; ").into())
        }
    }
}

/// What worker 0 does on `DIES_AT`.
#[derive(Clone, Copy)]
enum Fate {
    /// Dies, as a process.
    Dies,
    /// Is stuck in its code for good.
    Sticks,
}

/// Does worker 0's fate on `DIES_AT`; every other task takes 200 µs.
struct Fragile {
    index: usize,
    fate: Fate,
}

impl Fragile {
    fn new(fate: Fate) -> Self {
        Fragile {
            index: usize::MAX,
            fate,
        }
    }
}

impl Worker for Fragile {
    type Task = u32;
    type Result = u32;
    type Shared = u32;

    fn initialize(&mut self, setup: &WorkerSetup) -> mw_runtime::Result<()> {
        self.index = setup.index();
        Ok(())
    }

    fn do_work(&mut self, iteration: &u32, task: &u32) -> u32 {
        if self.index == 0 && (*iteration as usize, *task) == DIES_AT {
            match self.fate {
                Fate::Dies => std::process::abort(),
                Fate::Sticks => loop {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                },
            }
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
        *task
    }
}

/// What the third test's master says once its program went on for a while after the run.
const WENT_ON: &str = "the master's program went on after its run";

/// Fails the test unless an MPI launcher started this process: Open MPI's `mpirun`, hydra's
/// `mpiexec` (MPICH, Intel MPI) or `srun` with PMI.
fn assert_launched() {
    let launched = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
        .iter()
        .any(|var| std::env::var_os(var).is_some());
    assert!(
        launched,
        "not started by an MPI launcher: launch it with 3 processes (this file's doc)"
    );
}

fn config() -> RunConfig {
    RunConfig {
        backend: BackendChoice::Mpi,
        quiet: true,
        ..RunConfig::default()
    }
}

fn run() -> mw_runtime::Result<Report> {
    mw_runtime::run_config(
        &config(),
        || Counting { seen: Vec::new() },
        || Fragile::new(Fate::Dies),
    )
}

#[test]
#[ignore = "needs an MPI launcher with 3 processes (see the file's doc)"]
fn without_recovery_a_dead_rank_ends_the_job() {
    assert_launched();
    let outcome = run();
    // mpirun kills every rank about a second after one died, before the run can end.
    panic!(
        "the job went on after a rank died: {:?}",
        outcome.map(|_| ())
    );
}

#[test]
#[ignore = "needs an MPI launcher with 3 processes and recovery (see the file's doc)"]
fn with_recovery_every_result_arrives_once_after_a_rank_dies() {
    assert_launched();
    let started = std::time::Instant::now();
    let report = run().unwrap();
    if let Some(metrics) = report.metrics() {
        assert_eq!(metrics.iterations.len(), ITERATIONS);
        eprintln!(
            "{ITERATIONS} iterations of {TASKS} tasks, worker 0 dead in iteration {}: {:.0} ms",
            DIES_AT.0,
            started.elapsed().as_secs_f64() * 1e3
        );
    }
}

#[test]
#[ignore = "needs an MPI launcher with 3 processes, without recovery (see the file's doc)"]
fn without_recovery_a_stuck_worker_is_ended_only_after_the_master() {
    assert_launched();
    let mut config = config();
    config.faults.liveness = std::time::Duration::from_secs(1);
    let report = mw_runtime::run_config(
        &config,
        || Counting { seen: Vec::new() },
        || Fragile::new(Fate::Sticks),
    )
    .unwrap();
    if let Some(metrics) = report.metrics() {
        assert_eq!(metrics.iterations.len(), ITERATIONS);
        // A launcher that ended the job when the stuck worker was ended would end this process
        // here, before the line.
        std::thread::sleep(std::time::Duration::from_secs(2));
        println!("{WENT_ON}");
    }
}
