//! The master: builds each iteration's tasks and collects the workers' results.

use mw::prelude::*;

use crate::messages::{Block, Edges, Plate, Rows};

/// Runs `iterations` iterations of `tasks` tasks each and keeps the results of the last one.
#[derive(Debug)]
pub struct HeatMap {
    tasks: usize,
    iterations: usize,
    /// The current iteration's results, by task.
    results: Vec<Option<Block>>,
    /// Results recovered over the whole run.
    recovered: usize,
}

impl HeatMap {
    pub fn new(tasks: usize, iterations: usize) -> Self {
        HeatMap {
            tasks,
            iterations,
            results: Vec::new(),
            recovered: 0,
        }
    }
}

#[mw::master]
impl HeatMap {
    /// Announces the run's iterations: the progress line then shows the time left.
    fn initialize(&mut self, setup: &mut Setup) -> mw::Result<()> {
        setup.expect_iterations(self.iterations);
        Ok(())
    }

    /// This iteration's shared data and tasks. An empty task list ends the run.
    fn partition(&mut self, iteration: &Iteration) -> Work<Plate, Rows> {
        if iteration.index == self.iterations {
            return Work::new(shared(), Vec::new());
        }
        self.results = vec![None; self.tasks];
        Work::new(shared(), (0..self.tasks).map(task).collect())
    }

    /// Called once per task, in the order the results arrive.
    ///
    /// TODO: put the results to use. As generated, they are kept by task.
    fn recover(&mut self, task: TaskId, result: Block) {
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
fn task(index: usize) -> Rows {
    Rows {
        first: index as u32,
        count: 0,
    }
}

/// The data every worker taking part in an iteration receives once, before its tasks.
///
/// TODO: the real data. As generated, its fields are left empty.
fn shared() -> Plate {
    Plate {
        size: [0; 2],
        cells: Vec::new(),
        edges: Edges::Fixed(0.0),
        source: None,
    }
}
