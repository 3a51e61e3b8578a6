//! A panic in the master's code ends the run with an error naming the hook, and the worker
//! threads are stopped, instead of the process waiting forever.
#![allow(clippy::unwrap_used)]

use std::sync::Once;
use std::time::{Duration, Instant};

use mw_runtime::prelude::*;
use mw_runtime::{ErrorKind, RunConfig, TuningConfig};

/// Aborts the test process if a run hangs, so that a regression fails CI instead of stalling it.
fn watchdog() {
    static START: Once = Once::new();
    START.call_once(|| {
        std::thread::spawn(|| {
            std::thread::sleep(Duration::from_secs(60));
            eprintln!("a run with a panicking master hung: aborting");
            std::process::abort();
        });
    });
}

/// Panics in `hook` during iteration 1 (`recover`: on task 10 of iteration 0).
struct Fragile {
    hook: &'static str,
}

impl Master for Fragile {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        assert!(
            !(self.hook == "partition" && it.index == 1),
            "partition breaks on purpose"
        );
        Work::tasks(if it.index < 3 {
            (0..50).collect()
        } else {
            Vec::new()
        })
    }

    fn more_tasks(&mut self, it: &Iteration, _room: usize) -> Vec<u32> {
        assert!(
            !(self.hook == "more_tasks" && it.index == 1),
            "more_tasks breaks on purpose"
        );
        Vec::new()
    }

    fn recover(&mut self, task: TaskId, _: u32) {
        assert!(
            !(self.hook == "recover" && task.0 == 10),
            "recover breaks on purpose"
        );
    }

    fn end_iteration(&mut self, it: &Iteration) -> Flow {
        assert!(
            !(self.hook == "end_iteration" && it.index == 1),
            "end_iteration breaks on purpose"
        );
        Flow::Continue
    }
}

#[derive(Default)]
struct Napper;

impl Worker for Napper {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn do_work(&mut self, _: &(), task: &u32) -> u32 {
        std::thread::sleep(Duration::from_micros(200));
        *task
    }
}

fn config(protocol: Protocol) -> RunConfig {
    RunConfig {
        workers: Some(3),
        max_workers: Some(3),
        backend: BackendChoice::Local,
        protocol,
        tuning: TuningConfig::off(),
        quiet: true,
        ..RunConfig::default()
    }
}

#[test]
fn a_panic_in_a_hook_ends_the_run_naming_the_hook() {
    watchdog();
    for hook in ["partition", "more_tasks", "recover", "end_iteration"] {
        for protocol in [Protocol::Async, Protocol::Sync] {
            let started = Instant::now();
            let err =
                mw_runtime::run_config(&config(protocol), || Fragile { hook }, Napper::default)
                    .expect_err("the master panicked");
            match err.kind() {
                ErrorKind::MasterPanicked {
                    hook: named,
                    iteration,
                    message,
                } => {
                    assert_eq!(*named, hook);
                    // `recover` breaks on the first iteration's task 10, the others in the second.
                    let expected = if hook == "recover" { 0 } else { 1 };
                    assert_eq!(*iteration, Some(expected), "{hook}");
                    assert!(message.contains("on purpose"), "{message}");
                }
                other => panic!("{hook}: {other:?}"),
            }
            let said = err.to_string();
            assert!(said.contains(&format!("`{hook}` in iteration ")), "{said}");
            eprintln!(
                "{hook} ({protocol}): ended {:?} after the start",
                started.elapsed()
            );
        }
    }
}

#[test]
fn a_panic_in_the_masters_constructor_is_reported_too() {
    watchdog();
    let err = mw_runtime::run_config(
        &config(Protocol::Async),
        || -> Fragile { panic!("cannot build the master") },
        Napper::default,
    )
    .expect_err("the master panicked");
    assert!(
        matches!(
            err.kind(),
            ErrorKind::MasterPanicked {
                hook: "the master's constructor",
                iteration: None,
                ..
            }
        ),
        "{err}"
    );
}
