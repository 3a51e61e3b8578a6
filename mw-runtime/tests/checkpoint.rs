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
    iterations: usize,
    /// Stop after this iteration, as a kill would, without the runtime knowing.
    stop_after: Option<usize>,
    out: std::sync::mpsc::Sender<u64>,
}

impl Master for Series {
    type Task = u64;
    type Result = u64;
    type Shared = u64;

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
    let (out, result) = std::sync::mpsc::channel();
    let master = move || Series {
        state: 7,
        sum: 0,
        iterations: 12,
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
