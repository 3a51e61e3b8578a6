//! `--checkpoint` and `--resume`: a run stopped after any iteration and resumed from its
//! checkpoint ends as the uninterrupted run does.
#![allow(clippy::unwrap_used)]

use mw_runtime::prelude::*;
use mw_runtime::{PolicyName, RunConfig};

mod common;
use common::config;

/// A running sum over iterations: iteration i adds the squares of `0..50` times `i + 1` to a
/// state that also depends on its own past (`state = state * 31 + sum`).
struct Series {
    state: u64,
    sum: u64,
    /// The starting state, declared as the argument `--seed` the state comes from.
    seed: u64,
    iterations: usize,
    /// Stop after this iteration, as a kill would, without the runtime knowing.
    stop_after: Option<usize>,
    out: std::sync::mpsc::Sender<u64>,
}

impl Master for Series {
    type Task = u64;
    type Result = u64;
    type Shared = u64;

    fn initialize(&mut self, setup: &mut Setup) -> mw_runtime::Result<()> {
        setup.expect_iterations(self.iterations);
        setup.state_depends_on("--seed", self.seed);
        Ok(())
    }

    fn partition(&mut self, it: &Iteration) -> Work<u64, u64> {
        if it.index >= self.iterations || self.stop_after.is_some_and(|s| it.index > s) {
            return Work::new(0, Vec::new());
        }
        self.sum = 0;
        Work::new(it.index as u64 + 1, (0..50).collect())
    }

    fn recover(&mut self, _: TaskId, value: u64) {
        self.sum += value;
    }

    fn end_iteration(&mut self, _: &Iteration) -> Flow {
        self.state = self.state.wrapping_mul(31).wrapping_add(self.sum);
        Flow::Continue
    }

    fn final_work(&mut self) -> mw_runtime::Result<()> {
        self.out.send(self.state).unwrap();
        Ok(())
    }

    fn checkpoint(&self) -> Option<Vec<u8>> {
        Some(mw_runtime::codec::encode(&self.state))
    }

    fn restore(&mut self, saved: &[u8]) -> mw_runtime::Result<()> {
        self.state = mw_runtime::codec::decode(saved).map_err(mw_runtime::Error::app)?;
        Ok(())
    }
}

#[derive(Default)]
struct Scaler;

impl Worker for Scaler {
    type Task = u64;
    type Result = u64;
    type Shared = u64;

    fn do_work(&mut self, times: &u64, n: &u64) -> u64 {
        n * n * times
    }
}

fn run(config: &RunConfig, stop_after: Option<usize>) -> mw_runtime::Result<u64> {
    run_shaped(config, stop_after, 7, 12)
}

/// A series from `seed` over `iterations`.
fn run_shaped(
    config: &RunConfig,
    stop_after: Option<usize>,
    seed: u64,
    iterations: usize,
) -> mw_runtime::Result<u64> {
    let (out, result) = std::sync::mpsc::channel();
    let master = move || Series {
        state: seed,
        sum: 0,
        seed,
        iterations,
        stop_after,
        out,
    };
    mw_runtime::run_config(config, master, Scaler::default)?;
    Ok(result.recv().unwrap())
}

#[test]
fn a_resumed_run_ends_as_the_uninterrupted_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("series.ck");
    let plain = config(3, PolicyName::Daf, Protocol::Async, 0.5);
    let whole = run(&plain, None).unwrap();
    for stop in [0, 4, 10] {
        let saving = RunConfig {
            checkpoint: Some(path.clone()),
            ..plain.clone()
        };
        run(&saving, Some(stop)).unwrap();
        let resuming = RunConfig {
            resume: Some(path.clone()),
            ..plain.clone()
        };
        assert_eq!(run(&resuming, None).unwrap(), whole, "stopped after {stop}");
    }
}

#[test]
fn a_checkpoint_that_does_not_fit_the_run_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("series.ck");
    let plain = config(2, PolicyName::Daf, Protocol::Async, 0.5);
    let saving = RunConfig {
        checkpoint: Some(path.clone()),
        ..plain.clone()
    };
    run_shaped(&saving, Some(5), 7, 12).unwrap();
    let resuming = RunConfig {
        resume: Some(path.clone()),
        ..plain.clone()
    };
    let shown = path.display();

    let err = run_shaped(&resuming, None, 8, 12).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "error: the checkpoint `{shown}` was saved by a run with `--seed 7`, and this run \
             has `--seed 8`: the state it holds comes from that argument\nhelp: resume with \
             `--seed 7`, or start afresh without `--resume`"
        )
    );
    let err = run_shaped(&resuming, None, 7, 4).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "error: the checkpoint `{shown}` was saved after iteration 6, and this run has 4 \
             iterations in all"
        )),
        "{err}"
    );
    // The same arguments and as many iterations: it resumes.
    run_shaped(&resuming, None, 7, 6).unwrap();

    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 10;
    bytes[last] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let err = run_shaped(&resuming, None, 7, 12).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "error: `{shown}` is not a checkpoint this runtime can resume: its checksum does not \
             match its content"
        )),
        "{err}"
    );
}

#[test]
fn a_checkpoint_that_cannot_be_written_is_refused_before_any_work() {
    let config = RunConfig {
        checkpoint: Some("/nonexistent-directory/series.ck".into()),
        ..config(2, PolicyName::Daf, Protocol::Async, 0.5)
    };
    let err = run(&config, None).unwrap_err().to_string();
    assert!(
        err.starts_with("error: cannot write `/nonexistent-directory/series.ck` (--checkpoint)"),
        "{err}"
    );
}

#[test]
fn a_master_without_the_hooks_is_refused_before_any_work() {
    struct Plain;
    impl Master for Plain {
        type Task = u64;
        type Result = u64;
        type Shared = u64;
        fn partition(&mut self, _: &Iteration) -> Work<u64, u64> {
            panic!("no work may start");
        }
        fn recover(&mut self, _: TaskId, _: u64) {}
    }
    let dir = tempfile::tempdir().unwrap();
    let config = RunConfig {
        checkpoint: Some(dir.path().join("x.ck")),
        ..config(2, PolicyName::Daf, Protocol::Async, 0.5)
    };
    let err = mw_runtime::run_config(&config, || Plain, Scaler::default).unwrap_err();
    assert!(
        err.to_string().contains("has no `checkpoint` hook"),
        "{err}"
    );
    let config = RunConfig {
        checkpoint: None,
        resume: Some(dir.path().join("missing.ck")),
        ..config
    };
    let err = mw_runtime::run_config(&config, || Plain, Scaler::default).unwrap_err();
    assert!(
        err.to_string().contains("cannot read the checkpoint"),
        "{err}"
    );
}

/// One bag of 300 tasks whose results are kept by id; panics (as a kill would stop it) after
/// `stop_after` results.
struct Bag {
    recovered: Vec<u32>,
    stop_after: Option<usize>,
    out: std::sync::mpsc::Sender<Vec<u32>>,
}

impl Master for Bag {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        Work::tasks(if it.index == 0 {
            (0..300).collect()
        } else {
            Vec::new()
        })
    }

    fn recover(&mut self, task: TaskId, n: u32) {
        assert_eq!(
            task.index() as u32,
            n / 2,
            "a result under another task's id"
        );
        assert!(
            !self.recovered.contains(&n),
            "task {} recovered twice",
            task.index()
        );
        self.recovered.push(n);
        if self.stop_after.is_some_and(|s| self.recovered.len() >= s) {
            panic!("stopped on purpose");
        }
    }

    fn final_work(&mut self) -> mw_runtime::Result<()> {
        self.out.send(std::mem::take(&mut self.recovered)).unwrap();
        Ok(())
    }

    fn checkpoint(&self) -> Option<Vec<u8>> {
        Some(mw_runtime::codec::encode(&self.recovered))
    }

    fn restore(&mut self, saved: &[u8]) -> mw_runtime::Result<()> {
        self.recovered = mw_runtime::codec::decode(saved).map_err(mw_runtime::Error::app)?;
        Ok(())
    }
}

#[derive(Default)]
struct Doubler;

impl Worker for Doubler {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn do_work(&mut self, _: &(), n: &u32) -> u32 {
        std::thread::sleep(std::time::Duration::from_millis(2));
        n * 2
    }
}

#[test]
fn a_one_bag_job_is_saved_inside_its_iteration_and_resumed_without_redoing_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bag.ck");
    let base = config(2, PolicyName::Daf, Protocol::Async, 0.5);
    let saving = RunConfig {
        checkpoint: Some(path.clone()),
        checkpoint_every: std::time::Duration::from_millis(50),
        ..base.clone()
    };
    let (out, _) = std::sync::mpsc::channel();
    let stopped = mw_runtime::run_config(
        &saving,
        move || Bag {
            recovered: Vec::new(),
            stop_after: Some(200),
            out,
        },
        Doubler::default,
    );
    assert!(stopped.is_err(), "the master stopped on purpose");
    let (out, results) = std::sync::mpsc::channel();
    let resuming = RunConfig {
        resume: Some(path.clone()),
        ..base
    };
    mw_runtime::run_config(
        &resuming,
        move || Bag {
            recovered: Vec::new(),
            stop_after: None,
            out,
        },
        Doubler::default,
    )
    .unwrap();
    let mut all = results.recv().unwrap();
    all.sort_unstable();
    assert_eq!(all, (0..300).map(|n| n * 2).collect::<Vec<u32>>());
}
