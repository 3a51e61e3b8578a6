//! The master: makes one bag of tasks as the workers need them and collects their results.

use mw::prelude::*;

use crate::messages::{Params, Point, Value};

/// Runs one bag of `tasks` tasks, made a window at a time: the master never holds them all.
#[derive(Debug)]
pub struct Points {
    tasks: usize,
    /// The index of the next task to make.
    next: usize,
    /// The first result that came back, to show.
    first: Option<Value>,
    recovered: usize,
}

impl Points {
    pub fn new(tasks: usize) -> Self {
        Points {
            tasks,
            next: 0,
            first: None,
            recovered: 0,
        }
    }
}

#[mw::master]
impl Points {
    /// Announces the size of the bag: the progress line then shows the time left.
    fn initialize(&mut self, setup: &mut Setup) -> mw::Result<()> {
        setup.expect_tasks(self.tasks);
        Ok(())
    }

    /// The bag's tasks all come from `more_tasks`: here only the run's start. The run ends at
    /// the first iteration with no tasks from either, the second.
    fn partition(&mut self, _iteration: &Iteration) -> Work<Params, Point> {
        Work::new(shared(), Vec::new())
    }

    /// Up to `room` more tasks, none once the bag is empty. The runtime asks again whenever
    /// the tasks waiting for a worker run low; tasks made from results (adaptive refinement,
    /// branch and bound) can be returned here too, as `recover` makes them.
    fn more_tasks(&mut self, _iteration: &Iteration, room: usize) -> Vec<Point> {
        let end = self.tasks.min(self.next + room);
        let tasks = (self.next..end).map(task).collect();
        self.next = end;
        tasks
    }

    /// Called once per task, in the order the results arrive.
    ///
    /// TODO: put the results to use. As generated, the first is kept to show.
    fn recover(&mut self, _task: TaskId, result: Value) {
        self.first.get_or_insert(result);
        self.recovered += 1;
    }

    /// Checks that every task came back, and shows the first result.
    fn final_work(&mut self) -> mw::Result<()> {
        if self.recovered != self.tasks {
            let (recovered, expected) = (self.recovered, self.tasks);
            return Err(format!("{recovered} results recovered, expected {expected}").into());
        }
        if let Some(first) = &self.first {
            println!("first result: {first:?}");
        }
        Ok(())
    }
}

/// Task `index` of the bag.
///
/// TODO: the task's real data. As generated, the index goes in its first number field (if
/// any) and the other fields are left empty.
fn task(index: usize) -> Point {
    Point {
        index: index as u32,
        x: 0.0,
    }
}

/// The data every worker taking part receives once, before its tasks.
///
/// TODO: the real data. As generated, its fields are left empty.
fn shared() -> Params {
    Params { scale: 0.0 }
}
