//! `--load`: a loaded worker's `do_work` time is stretched by `1 / (1 − p/100)`, in the
//! iterations the pattern says, as the master measures it.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use mw_runtime::prelude::*;
use mw_runtime::{LoadPattern, PolicyName, RunConfig};

/// Two iterations of 10 tasks that each sleep 3 ms.
struct Sleeps;

impl Master for Sleeps {
    type Task = u64;
    type Result = u64;
    type Shared = ();

    fn partition(&mut self, it: &Iteration) -> Work<(), u64> {
        Work::tasks(if it.index < 2 {
            vec![3; 10]
        } else {
            Vec::new()
        })
    }

    fn recover(&mut self, _task: TaskId, _ms: u64) {}
}

#[derive(Default)]
struct Sleeper;

impl Worker for Sleeper {
    type Task = u64;
    type Result = u64;
    type Shared = ();

    fn do_work(&mut self, _: &(), ms: &u64) -> u64 {
        std::thread::sleep(Duration::from_millis(*ms));
        *ms
    }
}

#[test]
fn a_loaded_worker_takes_longer_in_the_loaded_iterations_only() {
    // Worker 0 under 75 % load from iteration 1: its tasks should take 4× as long.
    let config = RunConfig {
        workers: Some(2),
        max_workers: Some(2),
        // One chunk of 5 tasks per worker, so both do the same work.
        policy: PolicyName::Static.into(),
        backend: BackendChoice::Local,
        load: "1:0:75".parse::<LoadPattern>().unwrap(),
        ..RunConfig::default()
    };
    let report = mw_runtime::run_config(&config, || Sleeps, Sleeper::default).unwrap();
    let iterations = &report.metrics().unwrap().iterations;
    assert_eq!(iterations.len(), 2);
    let ratio = |i: usize| iterations[i].busy_ms[0] / iterations[i].busy_ms[1];
    // Generous bounds: sleeps overshoot, and the machine may be busy.
    assert!(
        (0.5..2.0).contains(&ratio(0)),
        "unloaded iteration: worker 0 / worker 1 busy = {}",
        ratio(0)
    );
    assert!(
        (2.5..8.0).contains(&ratio(1)),
        "loaded iteration: worker 0 / worker 1 busy = {}",
        ratio(1)
    );
    // The per-task times the tuner sees are stretched too.
    assert!(iterations[1].task_mean_ms > iterations[0].task_mean_ms);
}
