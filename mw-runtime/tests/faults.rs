//! Workers that hang for good, die, or fail tasks now and then, and a master that stalls: the
//! run still ends, with every result recovered exactly once (the checker's `final_work` fails
//! the run otherwise), and only the workers at fault are given up.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use mw_runtime::prelude::*;
use mw_runtime::{PolicyName, RunConfig};

mod common;
use common::{Checker, Job, Scenario, Sleeper, config};

/// What worker 1 does wrong, at its first task of iteration 1.
#[derive(Debug, Clone, Copy)]
enum Fault {
    Hang,
    Exit,
    Error,
    /// Panics after 60 ms, long after a copy of its chunk was answered (as a panic does that
    /// prints a backtrace), once in the whole run.
    LatePanic,
}

/// Whether the late panic struck: a worker that panicked is built afresh, with new fields.
static LATE_PANIC_STRUCK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

struct Faulty {
    index: usize,
    fault: Fault,
    struck: bool,
}

impl Worker for Faulty {
    type Task = Job;
    type Result = (u32, u32, u64);
    type Shared = u32;

    fn initialize(&mut self, setup: &WorkerSetup) -> mw_runtime::Result<()> {
        self.index = setup.index();
        Ok(())
    }

    fn do_work(&mut self, shared: &u32, task: &Job) -> (u32, u32, u64) {
        self.try_work(shared, task).unwrap()
    }

    fn try_work(
        &mut self,
        _: &u32,
        &(it, index, us): &Job,
    ) -> Result<(u32, u32, u64), mw_runtime::TaskError> {
        if self.index == 1 && it == 1 && !self.struck {
            self.struck = true;
            match self.fault {
                Fault::Hang => loop {
                    std::thread::sleep(Duration::from_secs(3600));
                },
                Fault::Exit => mw_runtime::exit_worker(),
                Fault::Error => return Err("a task fails once".into()),
                Fault::LatePanic => {
                    if !LATE_PANIC_STRUCK.swap(true, std::sync::atomic::Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(60));
                        panic!("a late panic");
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_micros(u64::from(us)));
        Ok((it, index, u64::from(it) * 1_000_003 + u64::from(index)))
    }
}

fn run(fault: Fault, protocol: Protocol) -> mw_runtime::RunMetrics {
    run_for(fault, protocol, 3)
}

/// [`run`] with `iterations` iterations of 60 tasks of 0.5 ms.
fn run_for(fault: Fault, protocol: Protocol, iterations: usize) -> mw_runtime::RunMetrics {
    let scenario = Scenario {
        iterations: vec![vec![500; 60]; iterations],
        nworkers: vec![],
        panic_at: None,
    };
    let config = RunConfig {
        faults: mw_runtime::FaultConfig {
            // Long enough never to strike by mistake on a loaded machine.
            liveness: Duration::from_secs(30),
            ..Default::default()
        },
        ..config(3, PolicyName::Daf, protocol, 0.5)
    };
    let checker = move || Checker::new(&scenario);
    let worker = move || Faulty {
        index: 0,
        fault,
        struck: false,
    };
    let report = mw_runtime::run_config(&config, checker, worker).unwrap();
    report.into_metrics().unwrap()
}

#[test]
fn a_worker_that_hangs_for_good_is_backed_up_and_left_behind() {
    for protocol in [Protocol::Async, Protocol::Sync] {
        let metrics = run(Fault::Hang, protocol);
        let backups: usize = metrics.iterations.iter().map(|i| i.backups).sum();
        assert!(backups >= 1, "{protocol}: no chunk was copied");
        assert!(
            metrics.failures.iter().any(|f| f.worker == 1),
            "{protocol}: {:?}",
            metrics.failures
        );
        // It takes no part once it holds a chunk nobody waits for.
        assert_eq!(metrics.iterations[2].busy_ms[1], 0.0);
    }
}

#[test]
fn a_worker_that_dies_is_lost_and_its_chunks_run_elsewhere() {
    for protocol in [Protocol::Async, Protocol::Sync] {
        let metrics = run(Fault::Exit, protocol);
        let lost: Vec<_> = metrics
            .failures
            .iter()
            .filter(|f| f.message.starts_with("lost"))
            .collect();
        assert_eq!(lost.len(), 1, "{protocol}: {:?}", metrics.failures);
        assert_eq!(lost[0].worker, 1);
        assert_eq!(metrics.iterations[2].busy_ms[1], 0.0);
    }
}

#[test]
fn a_task_that_fails_once_runs_again_and_the_worker_stays() {
    let metrics = run(Fault::Error, Protocol::Async);
    assert_eq!(metrics.failures.len(), 1, "{:?}", metrics.failures);
    assert_eq!(metrics.failures[0].message, "a task fails once");
    assert!(metrics.iterations[2].busy_ms[1] > 0.0);
}

#[test]
fn a_failure_answered_after_its_copy_is_still_reported() {
    // Iterations enough that the run still goes on when the panic is answered, 60 ms in: in a
    // run of three it may end first, and the chunk is then left behind before it answers.
    let metrics = run_for(Fault::LatePanic, Protocol::Async, 12);
    let backups: usize = metrics.iterations.iter().map(|i| i.backups).sum();
    assert!(backups >= 1, "the late chunk was not copied");
    let late: Vec<_> = metrics
        .failures
        .iter()
        .filter(|f| f.message.contains("a late panic"))
        .collect();
    assert_eq!(late.len(), 1, "{:?}", metrics.failures);
    assert_eq!((late[0].worker, late[0].iteration), (1, 1));
}

/// The checker, whose first `recover` of iteration 1 takes `stall`: a master busy in its own
/// code, not listening, while the workers go on answering.
struct Stalling {
    checker: Checker,
    stall: Duration,
    stalled: bool,
}

impl Master for Stalling {
    type Task = Job;
    type Result = (u32, u32, u64);
    type Shared = u32;

    fn initialize(&mut self, setup: &mut Setup) -> mw_runtime::Result<()> {
        self.checker.initialize(setup)
    }

    fn partition(&mut self, it: &Iteration) -> Work<u32, Job> {
        self.checker.partition(it)
    }

    fn recover(&mut self, task: TaskId, result: (u32, u32, u64)) {
        if result.0 == 1 && !self.stalled {
            self.stalled = true;
            std::thread::sleep(self.stall);
        }
        self.checker.recover(task, result);
    }

    fn end_iteration(&mut self, it: &Iteration) -> Flow {
        self.checker.end_iteration(it)
    }

    fn final_work(&mut self) -> mw_runtime::Result<()> {
        self.checker.final_work()
    }
}

/// The liveness timeout of the runs below: short, so that a stall of the master outlasts it.
const LIVENESS: Duration = Duration::from_secs(1);

/// Three iterations of 60 tasks of 0.5 ms on three workers, with [`LIVENESS`] and no copies of
/// late chunks (a silent worker's chunks wait for the timeout); the master stalls for `stall`
/// in iteration 1, and worker 1 hangs there for good if `hang`.
fn run_stalled(stall: Duration, hang: bool, protocol: Protocol) -> mw_runtime::RunMetrics {
    let scenario = Scenario {
        iterations: vec![vec![500; 60]; 3],
        nworkers: vec![],
        panic_at: None,
    };
    let config = RunConfig {
        faults: mw_runtime::FaultConfig {
            liveness: LIVENESS,
            backup_after: 0.0,
            ..Default::default()
        },
        ..config(3, PolicyName::Daf, protocol, 0.5)
    };
    let master = move || Stalling {
        checker: Checker::new(&scenario),
        stall,
        stalled: false,
    };
    let report = if hang {
        let worker = || Faulty {
            index: 0,
            fault: Fault::Hang,
            struck: false,
        };
        mw_runtime::run_config(&config, master, worker)
    } else {
        mw_runtime::run_config(&config, master, || Sleeper::new(None))
    };
    report.unwrap().into_metrics().unwrap()
}

#[test]
fn a_master_that_stalls_longer_than_the_liveness_timeout_gives_no_healthy_worker_up() {
    // The workers answer while the master sleeps in `recover`: their answers wait for it.
    for protocol in [Protocol::Async, Protocol::Sync] {
        let metrics = run_stalled(3 * LIVENESS, false, protocol);
        assert!(
            metrics.failures.is_empty(),
            "{protocol}: {:?}",
            metrics.failures
        );
    }
}

#[test]
fn a_hung_worker_is_given_up_after_the_liveness_timeout() {
    let metrics = run_stalled(Duration::ZERO, true, Protocol::Async);
    let lost: Vec<_> = metrics.failures.iter().map(|f| f.worker).collect();
    assert_eq!(lost, [1], "{:?}", metrics.failures);
    assert!(metrics.failures[0].message.contains("silent"));
    // Its chunks wait for the timeout; the rest of the iteration takes milliseconds. The bound
    // is generous: the machine may be loaded.
    let took = Duration::from_secs_f64(metrics.iterations[1].time_ms / 1e3);
    assert!(
        took >= LIVENESS && took < LIVENESS + Duration::from_secs(3),
        "given up after {took:?}"
    );
}

#[test]
fn a_master_that_stalls_gives_up_only_the_worker_that_hung() {
    let metrics = run_stalled(3 * LIVENESS, true, Protocol::Async);
    let lost: Vec<_> = metrics.failures.iter().map(|f| f.worker).collect();
    assert_eq!(lost, [1], "{:?}", metrics.failures);
    assert!(metrics.failures[0].message.contains("silent"));
}
