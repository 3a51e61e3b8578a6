//! The master: draws each iteration's task times, sends tasks with their payloads, and checks
//! every result that comes back.

use std::sync::mpsc::Sender;
use std::time::Duration;

use mw::prelude::*;

use crate::inject::Inject;
use crate::messages::{Echo, Job, Round};
use crate::payload::{self, checksum};
use crate::times::TaskTimes;

/// The shape of the synthetic program.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Tasks per iteration.
    pub tasks: usize,
    /// Iterations to run.
    pub iterations: usize,
    /// Mean task time, ms.
    pub mean_ms: f64,
    /// Standard deviation of the task time, as a fraction of the mean.
    pub stddev: f64,
    /// Seed of the task times.
    pub seed: u64,
    /// Payload bytes of each task.
    pub task_bytes: usize,
    /// Payload bytes of each result.
    pub result_bytes: usize,
    /// Bytes every worker receives at the start of each iteration.
    pub shared_bytes: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            tasks: 1000,
            iterations: 10,
            mean_ms: 1.0,
            stddev: 0.3,
            seed: 1,
            task_bytes: 16,
            result_bytes: 8,
            shared_bytes: 0,
        }
    }
}

/// What the master saw, handed to the caller when the run ends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Sum of the drawn task times of each iteration.
    pub task_time: Vec<Duration>,
    /// Results recovered and checked.
    pub results: u64,
    /// Results that failed a check (or tasks with no result), and the first few descriptions.
    pub problems: u64,
    pub first_problems: Vec<String>,
}

/// Problems described in full; past these, only counted.
const DESCRIBED: usize = 5;

/// The master of the synthetic program.
#[derive(Debug)]
pub struct SyntheticMaster {
    settings: Settings,
    times: TaskTimes,
    /// Checksum of each task's payload, this iteration.
    expected: Vec<u64>,
    /// Which tasks of this iteration have been recovered.
    seen: Vec<bool>,
    shared_checksum: u64,
    first_id: u64,
    outcome: Outcome,
    report: Option<Sender<Outcome>>,
    /// The iteration under way, and the faults to inject (`--inject`).
    iteration: u64,
    inject: Inject,
}

impl SyntheticMaster {
    pub fn new(settings: Settings) -> Self {
        SyntheticMaster {
            times: TaskTimes::new(settings.seed, settings.mean_ms, settings.stddev),
            settings,
            expected: Vec::new(),
            seen: Vec::new(),
            shared_checksum: 0,
            first_id: 0,
            outcome: Outcome::default(),
            report: None,
            iteration: 0,
            inject: Inject::default(),
        }
    }

    /// Goes wrong as `inject` says (its `master-panic@I` faults).
    #[must_use]
    pub fn inject(mut self, inject: Inject) -> Self {
        self.inject = inject;
        self
    }

    /// Sends the [`Outcome`] to `report` when the run ends.
    #[must_use]
    pub fn report_to(mut self, report: Sender<Outcome>) -> Self {
        self.report = Some(report);
        self
    }

    fn problem(&mut self, what: String) {
        self.outcome.problems += 1;
        if self.outcome.first_problems.len() < DESCRIBED {
            self.outcome.first_problems.push(what);
        }
    }

    /// What is wrong with `echo` as the answer to task `index`, if anything.
    fn check(&self, index: usize, echo: &Echo) -> Option<String> {
        let id = self.first_id + index as u64;
        if echo.id != id {
            return Some(format!(
                "task {id} was answered with the result of task {}",
                echo.id
            ));
        }
        if echo.task_checksum != self.expected[index] {
            return Some(format!(
                "task {id}: the worker received a corrupted payload"
            ));
        }
        if echo.shared_checksum != self.shared_checksum {
            return Some(format!(
                "task {id}: the worker received corrupted shared data"
            ));
        }
        if echo.payload.len() != self.settings.result_bytes
            || !payload::is_fill(&echo.payload, id, payload::RESULT)
        {
            return Some(format!("task {id}: the result's payload arrived corrupted"));
        }
        None
    }
}

#[mw::master]
impl SyntheticMaster {
    /// Lets the progress line show i/N and an ETA; refuses faults of workers the run does not
    /// have.
    fn initialize(&mut self, setup: &mut Setup) -> mw::Result<()> {
        setup.expect_iterations(self.settings.iterations);
        self.inject.check_pool(setup.pool())
    }

    fn partition(&mut self, it: &Iteration) -> Work<Round, Job> {
        if it.index >= self.settings.iterations {
            return Work::done();
        }
        let tasks = self.settings.tasks;
        let iteration = it.index as u64;
        self.iteration = iteration;
        self.first_id = iteration * tasks as u64;
        let data = payload::fill(iteration, payload::SHARED, self.settings.shared_bytes);
        self.shared_checksum = checksum(&data);
        self.expected.clear();
        self.seen = vec![false; tasks];
        let mut total = Duration::ZERO;
        let jobs = (0..tasks)
            .map(|index| {
                let id = self.first_id + index as u64;
                let duration_ns = self.times.next_ns();
                total = total.saturating_add(Duration::from_nanos(duration_ns));
                let payload = payload::fill(id, payload::TASK, self.settings.task_bytes);
                self.expected.push(checksum(&payload));
                Job {
                    id,
                    duration_ns,
                    payload,
                }
            })
            .collect();
        self.outcome.task_time.push(total);
        Work::new(Round { iteration, data }, jobs)
    }

    fn recover(&mut self, task: TaskId, echo: Echo) {
        if self.inject.master_panics(self.iteration) {
            panic!(
                "injected: the master panics in iteration {}",
                self.iteration
            );
        }
        let index = task.index();
        if self.seen.get(index).copied().unwrap_or(true) {
            self.problem(format!(
                "task {} of the iteration was recovered twice (or does not exist)",
                index
            ));
            return;
        }
        self.seen[index] = true;
        self.outcome.results += 1;
        if let Some(problem) = self.check(index, &echo) {
            self.problem(problem);
        }
    }

    fn end_iteration(&mut self, it: &Iteration) -> Flow {
        let missing = self.seen.iter().filter(|&&s| !s).count();
        if missing > 0 {
            self.problem(format!(
                "iteration {}: {missing} tasks have no result",
                it.index
            ));
        }
        Flow::Continue
    }

    fn final_work(&mut self) -> mw::Result<()> {
        let outcome = std::mem::take(&mut self.outcome);
        let problems = outcome.problems;
        let first = outcome.first_problems.join("; ");
        if let Some(report) = &self.report {
            // The receiver may be gone if the caller gave up; the checks below still stand.
            let _ = report.send(outcome);
        }
        if problems > 0 {
            return Err(mw::Error::app(format!(
                "{problems} results failed their checks: {first}"
            )));
        }
        Ok(())
    }
}
