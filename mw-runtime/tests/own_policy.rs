//! A program's own distribution policy, given to `Setup::policy`: used for every iteration and
//! named in the metrics; a policy that sizes a chunk out of bounds ends the run with an error
//! that names it, and no task is recovered twice or made up.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use mw_runtime::policy::{Ask, ChunkDone, Plan, Policy};
use mw_runtime::prelude::*;
use mw_runtime::{BackendChoice, ErrorKind, PolicyName, RunConfig, TuningConfig};

/// Chunks of `size` tasks, or `remaining + extra` once `after` chunks were cut.
#[derive(Debug)]
struct Fixed {
    size: usize,
    broken_after: Option<(usize, usize)>,
    cut: usize,
    answered: Arc<Mutex<usize>>,
}

impl Policy for Fixed {
    fn name(&self) -> &str {
        "fixed"
    }

    fn begin(&mut self, _plan: &Plan<'_>) {}

    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
        self.cut += 1;
        match self.broken_after {
            Some((after, extra)) if self.cut > after => {
                (ask.remaining + extra) * usize::from(extra > 0)
            }
            _ => ask.remaining.min(self.size),
        }
    }

    fn chunk_done(&mut self, done: &ChunkDone) {
        *self.answered.lock().unwrap() += done.tasks;
    }
}

struct Counting {
    policy: Option<Fixed>,
    recovered: Vec<u32>,
    /// Iterations whose 40 tasks did not come back exactly once each.
    wrong: usize,
}

impl Master for Counting {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn initialize(&mut self, setup: &mut Setup) -> mw_runtime::Result<()> {
        setup.policy(Box::new(self.policy.take().unwrap()));
        Ok(())
    }

    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        Work::tasks(if it.index < 2 {
            (0..40).collect()
        } else {
            Vec::new()
        })
    }

    fn recover(&mut self, task: TaskId, result: u32) {
        assert_eq!(task.index() as u32, result);
        self.recovered.push(result);
    }

    fn end_iteration(&mut self, _it: &Iteration) -> Flow {
        let mut got = std::mem::take(&mut self.recovered);
        got.sort_unstable();
        self.wrong += usize::from(got != (0..40).collect::<Vec<_>>());
        Flow::Continue
    }

    fn final_work(&mut self) -> mw_runtime::Result<()> {
        match self.wrong {
            0 => Ok(()),
            n => Err(format!("{n} iterations did not recover every task once").into()),
        }
    }
}

#[derive(Default)]
struct Echo;

impl Worker for Echo {
    type Task = u32;
    type Result = u32;
    type Shared = ();
    fn do_work(&mut self, _shared: &(), task: &u32) -> u32 {
        *task
    }
}

fn config() -> RunConfig {
    RunConfig {
        workers: Some(3),
        max_workers: Some(3),
        policy: PolicyName::Daf.into(),
        backend: BackendChoice::Local,
        tuning: TuningConfig::off(),
        quiet: true,
        ..RunConfig::default()
    }
}

/// The policies named in the metrics, and the tasks the policy heard were answered.
fn run(broken_after: Option<(usize, usize)>) -> (mw_runtime::Result<Vec<String>>, usize) {
    let answered = Arc::new(Mutex::new(0));
    let a = answered.clone();
    let outcome = mw_runtime::run_config(
        &config(),
        move || Counting {
            policy: Some(Fixed {
                size: 7,
                broken_after,
                cut: 0,
                answered: a.clone(),
            }),
            recovered: Vec::new(),
            wrong: 0,
        },
        Echo::default,
    )
    .map(|report| {
        let metrics = report.into_metrics().unwrap();
        metrics
            .iterations
            .iter()
            .map(|it| it.policy.clone())
            .collect()
    });
    let answered = *answered.lock().unwrap();
    (outcome, answered)
}

#[test]
fn a_programs_policy_cuts_every_iteration() {
    let (outcome, answered) = run(None);
    assert_eq!(outcome.unwrap(), vec!["fixed", "fixed"]);
    assert_eq!(answered, 80, "the policy hears of every answered task");
}

#[test]
fn a_chunk_out_of_bounds_names_the_policy() {
    for (extra, says) in [
        (1, "a chunk of 34 tasks with only 33 left"),
        (0, "an empty chunk"),
    ] {
        let (outcome, answered) = run(Some((1, extra)));
        let e = outcome.unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Config { .. }), "{e}");
        let e = e.to_string();
        assert!(
            e.contains(&format!("policy `fixed` returned {says}")),
            "{e}"
        );
        assert!(e.contains("help:"), "{e}");
        assert!(
            answered <= 7,
            "only the chunk cut before was handed out: {answered}"
        );
    }
}
