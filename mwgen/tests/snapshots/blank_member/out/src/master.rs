//! The master: cuts each iteration's work into tasks and puts the workers' answers together.

use mw::prelude::*;

use crate::messages::{Answer, Task};

/// Sums the squares of `1..=numbers` on the workers, `iterations` times, and checks each sum.
#[derive(Debug)]
pub struct Sums {
    numbers: u64,
    tasks: u64,
    iterations: usize,
    /// The current iteration's sum so far.
    sum: u64,
    /// The first iteration whose sum was wrong, and that sum.
    wrong: Option<(usize, u64)>,
}

impl Sums {
    pub fn new(numbers: u64, tasks: u64, iterations: usize) -> Self {
        Sums {
            numbers,
            tasks,
            iterations,
            sum: 0,
            wrong: None,
        }
    }

    /// 1² + 2² + … + n² = n(n + 1)(2n + 1)/6 (it fits in a u64 for n up to 3 000 000).
    fn expected(&self) -> u64 {
        let n = u128::from(self.numbers);
        (n * (n + 1) * (2 * n + 1) / 6) as u64
    }
}

#[mw::master]
impl Sums {
    /// Announces the run's iterations: the progress line then shows the time left.
    fn initialize(&mut self, setup: &mut Setup) -> mw::Result<()> {
        setup.expect_iterations(self.iterations);
        Ok(())
    }

    /// Cuts `1..=numbers` into runs of consecutive numbers, one per task. An empty task list
    /// ends the run.
    fn partition(&mut self, iteration: &Iteration) -> Work<(), Task> {
        if iteration.index == self.iterations {
            return Work::done();
        }
        self.sum = 0;
        let per_task = self.numbers.div_ceil(self.tasks);
        let tasks = (0..self.tasks)
            .map(|i| 1 + i * per_task)
            .take_while(|&first| first <= self.numbers)
            .map(|first| Task {
                first,
                count: per_task.min(self.numbers + 1 - first),
            })
            .collect();
        Work::tasks(tasks)
    }

    /// Called once per task, in the order the answers arrive.
    fn recover(&mut self, _task: TaskId, answer: Answer) {
        self.sum += answer.sum;
    }

    /// Checks the iteration's sum; a wrong one stops the run.
    fn end_iteration(&mut self, iteration: &Iteration) -> Flow {
        if self.sum == self.expected() {
            Flow::Continue
        } else {
            self.wrong = Some((iteration.index, self.sum));
            Flow::Stop
        }
    }

    fn final_work(&mut self) -> mw::Result<()> {
        let expected = self.expected();
        if let Some((iteration, sum)) = self.wrong {
            let message = format!("iteration {iteration}: the sum is {sum}, expected {expected}");
            return Err(message.into());
        }
        println!(
            "sum of the squares of 1..={}: {expected}, checked in each of {} iterations",
            self.numbers, self.iterations
        );
        Ok(())
    }
}
