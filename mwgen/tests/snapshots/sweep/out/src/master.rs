//! The master: makes one bag of tasks as the workers need them and puts their answers together.

use mw::prelude::*;

use crate::messages::{Answer, Task};

/// Sums the squares of `1..=numbers` in one bag of tasks, each a run of `per_task` numbers,
/// made a window at a time: the master never holds the whole bag.
#[derive(Debug)]
pub struct Bag {
    numbers: u64,
    per_task: u64,
    /// The first number of the next task to make.
    next: u64,
    sum: u64,
    tasks: usize,
}

impl Bag {
    pub fn new(numbers: u64, tasks: u64) -> Self {
        Bag {
            numbers,
            per_task: numbers.div_ceil(tasks),
            next: 1,
            sum: 0,
            tasks: 0,
        }
    }

    /// 1² + 2² + … + n² = n(n + 1)(2n + 1)/6 (it fits in a u64 for n up to 3 000 000).
    fn expected(&self) -> u64 {
        let n = u128::from(self.numbers);
        (n * (n + 1) * (2 * n + 1) / 6) as u64
    }
}

#[mw::master]
impl Bag {
    /// Announces the size of the bag: the progress line then shows the time left.
    fn initialize(&mut self, setup: &mut Setup) -> mw::Result<()> {
        setup.expect_tasks(self.numbers.div_ceil(self.per_task) as usize);
        Ok(())
    }

    /// The bag's tasks all come from `more_tasks`: no tasks here. The run ends at the first
    /// iteration that has none from either, the second.
    fn partition(&mut self, _iteration: &Iteration) -> Work<(), Task> {
        Work::done()
    }

    /// Up to `room` more tasks, none once the bag is empty. The runtime asks again whenever
    /// the tasks waiting for a worker run low, and tunes the workers while the bag empties.
    fn more_tasks(&mut self, _iteration: &Iteration, room: usize) -> Vec<Task> {
        let mut tasks = Vec::new();
        while tasks.len() < room && self.next <= self.numbers {
            let count = self.per_task.min(self.numbers + 1 - self.next);
            tasks.push(Task {
                first: self.next,
                count,
            });
            self.next += count;
        }
        self.tasks += tasks.len();
        tasks
    }

    /// Called once per task, in the order the answers arrive.
    fn recover(&mut self, _task: TaskId, answer: Answer) {
        self.sum += answer.sum;
    }

    fn final_work(&mut self) -> mw::Result<()> {
        let expected = self.expected();
        if self.sum != expected {
            let message = format!("the sum is {}, expected {expected}", self.sum);
            return Err(message.into());
        }
        println!(
            "sum of the squares of 1..={}: {expected}, checked, from {} tasks",
            self.numbers, self.tasks
        );
        Ok(())
    }
}
