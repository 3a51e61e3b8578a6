//! The master: builds each iteration's tasks and collects the workers' results.

use mw::prelude::*;

use crate::messages::{Expr, Job, Result};

/// Runs `iterations` iterations of `tasks` tasks each and keeps the results of the last one.
#[derive(Debug)]
pub struct Calc {
    tasks: usize,
    iterations: usize,
    /// The current iteration's results, by task.
    results: Vec<Option<Result>>,
    /// Results recovered over the whole run.
    recovered: usize,
}

impl Calc {
    pub fn new(tasks: usize, iterations: usize) -> Self {
        Calc {
            tasks,
            iterations,
            results: Vec::new(),
            recovered: 0,
        }
    }
}

#[mw::master]
impl Calc {
    /// Announces the run's iterations: the progress line then shows the time left.
    fn initialize(&mut self, setup: &mut Setup) -> mw::Result<()> {
        setup.expect_iterations(self.iterations);
        Ok(())
    }

    /// This iteration's tasks. An empty task list ends the run.
    fn partition(&mut self, iteration: &Iteration) -> Work<(), Job> {
        if iteration.index == self.iterations {
            return Work::done();
        }
        self.results = vec![None; self.tasks];
        Work::tasks((0..self.tasks).map(task).collect())
    }

    /// Called once per task, in the order the results arrive.
    ///
    /// TODO: put the results to use. As generated, they are kept by task.
    fn recover(&mut self, task: TaskId, result: Result) {
        self.results[task.index()] = Some(result);
        self.recovered += 1;
    }

    /// Called once every result of the iteration is in: `Flow::Stop` ends the run here (when
    /// the computation has converged, say). As generated, the run goes on to its last
    /// iteration.
    fn end_iteration(&mut self, _iteration: &Iteration) -> Flow {
        Flow::Continue
    }

    /// Checks that every task came back, and shows the first result.
    fn final_work(&mut self) -> mw::Result<()> {
        let expected = self.tasks * self.iterations;
        if self.recovered != expected {
            let recovered = self.recovered;
            return Err(format!("{recovered} results recovered, expected {expected}").into());
        }
        if let Some(Some(first)) = self.results.first() {
            println!("result of task 0: {first:?}");
        }
        Ok(())
    }
}

/// Task `index` of an iteration.
///
/// TODO: the task's real data. As generated, the index goes in its first number field (if
/// any) and the other fields are left empty.
fn task(_index: usize) -> Job {
    Job(Expr::Var(String::new()), Vec::new())
}
