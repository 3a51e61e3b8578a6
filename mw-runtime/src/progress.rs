//! The progress line of a long run, on the master's terminal:
//!
//! ```text
//! ⠙ iteration 41, 41/100 done [=========>----------] nworkers 4 · factor 0.50 · 2,310 tasks/s · ETA 12 s
//! ```
//!
//! Iterations are numbered from 0, as in the metrics, the decisions and the messages: iteration
//! 41 is running when 41 of the 100 are done.
//!
//! Shown only when the standard error is a terminal, not with `--quiet`, and only once the run
//! has gone on for a second (short runs stay silent). It costs the engine one clock read per
//! chunk and is redrawn at most ten times a second. The number of iterations is shown when the
//! master announced it ([`Setup::expect_iterations`](crate::Setup::expect_iterations)), or the
//! tasks of the whole run when it announced those ([`Setup::expect_tasks`](crate::Setup::expect_tasks),
//! for a job that is one bag of tasks); else the bar follows the tasks of the current iteration.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::app::Iteration;

/// Nothing is drawn before the run is this old.
const DELAY: Duration = Duration::from_secs(1);
/// Time between redraws.
const PERIOD: Duration = Duration::from_millis(100);
/// Iterations the ETA averages over.
const RECENT: usize = 8;

/// The progress line, or nothing when it is not wanted.
#[derive(Debug)]
pub(crate) struct Progress {
    line: Option<Box<Line>>,
}

#[derive(Debug)]
struct Line {
    /// Created on the first draw.
    bar: Option<ProgressBar>,
    started: Instant,
    next_draw: Instant,
    expected: Option<usize>,
    /// Tasks of the whole run, when the master announced them.
    expected_tasks: Option<usize>,
    iteration: usize,
    workers: usize,
    factor: f64,
    /// Tasks of the current iteration, and how many are done.
    tasks: usize,
    done: usize,
    iteration_started: Instant,
    total_done: u64,
    /// Times of the last iterations, in seconds.
    recent: VecDeque<f64>,
}

impl Progress {
    /// A progress line on the standard error, unless `quiet` or the standard error is not a
    /// terminal.
    pub(crate) fn new(quiet: bool) -> Self {
        if quiet || !std::io::stderr().is_terminal() {
            return Progress::off();
        }
        Progress::on(Instant::now())
    }

    /// Never draws.
    pub(crate) fn off() -> Self {
        Progress { line: None }
    }

    fn on(started: Instant) -> Self {
        Progress {
            line: Some(Box::new(Line {
                bar: None,
                started,
                next_draw: started + DELAY,
                expected: None,
                expected_tasks: None,
                iteration: 0,
                workers: 0,
                factor: 0.0,
                tasks: 0,
                done: 0,
                iteration_started: started,
                total_done: 0,
                recent: VecDeque::with_capacity(RECENT),
            })),
        }
    }

    /// The master announced how many iterations the run has.
    pub(crate) fn expect_iterations(&mut self, iterations: Option<usize>) {
        if let Some(line) = &mut self.line {
            line.expected = iterations;
        }
    }

    /// The master announced how many tasks the whole run has.
    pub(crate) fn expect_tasks(&mut self, tasks: Option<usize>) {
        if let Some(line) = &mut self.line {
            line.expected_tasks = tasks;
        }
    }

    /// Iteration `it` of `tasks` tasks starts.
    pub(crate) fn iteration_begins(&mut self, it: &Iteration, tasks: usize) {
        if let Some(line) = &mut self.line {
            line.iteration = it.index;
            line.workers = it.workers;
            line.factor = it.factor;
            line.tasks = tasks;
            line.done = 0;
            line.iteration_started = Instant::now();
        }
    }

    /// `tasks` more results were recovered. Cheap: one clock read unless a redraw is due.
    #[inline]
    pub(crate) fn tasks_done(&mut self, tasks: usize) {
        if let Some(line) = &mut self.line {
            line.done += tasks;
            line.total_done += tasks as u64;
            let now = Instant::now();
            if now >= line.next_draw {
                line.draw(now);
            }
        }
    }

    /// A stream added `tasks` to the current iteration.
    pub(crate) fn tasks_added(&mut self, tasks: usize) {
        if let Some(line) = &mut self.line {
            line.tasks += tasks;
        }
    }

    /// The current iteration ended.
    pub(crate) fn iteration_ends(&mut self) {
        if let Some(line) = &mut self.line {
            if line.recent.len() == RECENT {
                line.recent.pop_front();
            }
            line.recent
                .push_back(line.iteration_started.elapsed().as_secs_f64());
            let now = Instant::now();
            if now >= line.next_draw {
                line.draw(now);
            }
        }
    }

    /// Clears the line for good.
    pub(crate) fn finish(&mut self) {
        if let Some(bar) = self.line.take().and_then(|line| line.bar) {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Line {
    fn draw(&mut self, now: Instant) {
        self.next_draw = now + PERIOD;
        let (prefix, message) = (self.prefix(), self.message(now));
        let bar = self.bar.get_or_insert_with(|| {
            let style = ProgressStyle::with_template("{spinner} {prefix} [{bar:24}] {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=>-");
            ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(style)
        });
        let (position, length) = match (self.expected, self.expected_tasks) {
            (Some(n), _) => (self.iteration as u64, n as u64),
            (None, Some(n)) => (self.total_done, n as u64),
            (None, None) => (self.done as u64, self.tasks as u64),
        };
        bar.set_length(length.max(1));
        bar.set_position(position.min(length));
        bar.set_prefix(prefix);
        bar.set_message(message);
        bar.force_draw();
    }

    fn prefix(&self) -> String {
        match (self.expected, self.expected_tasks) {
            (Some(n), _) => format!("iteration {0}, {0}/{n} done", self.iteration),
            (None, Some(n)) => format!("tasks {}/{}", grouped(self.total_done), grouped(n as u64)),
            (None, None) => format!(
                "iteration {} · tasks {}/{}",
                self.iteration, self.done, self.tasks
            ),
        }
    }

    fn message(&self, now: Instant) -> String {
        let mut text = format!("nworkers {} · factor {:.2}", self.workers, self.factor);
        let elapsed = now.duration_since(self.started).as_secs_f64();
        if elapsed > 0.0 {
            let rate = self.total_done as f64 / elapsed;
            text += &format!(" · {} tasks/s", grouped(rate.round() as u64));
        }
        if let Some(eta) = self.eta(now) {
            text += &format!(" · ETA {}", human(eta));
        }
        text
    }

    /// Time left: the mean of the recent iterations for each iteration to come, less what the
    /// current one has already taken; or, when only the run's tasks are known, the tasks left
    /// at the rate so far. Unknown otherwise.
    fn eta(&self, now: Instant) -> Option<f64> {
        let Some(expected) = self.expected else {
            let tasks = self.expected_tasks? as u64;
            let elapsed = now.duration_since(self.started).as_secs_f64();
            if self.total_done == 0 || elapsed <= 0.0 {
                return None;
            }
            let rate = self.total_done as f64 / elapsed;
            return Some(tasks.saturating_sub(self.total_done) as f64 / rate);
        };
        if self.recent.is_empty() {
            return None;
        }
        let mean = self.recent.iter().sum::<f64>() / self.recent.len() as f64;
        let current = now.duration_since(self.iteration_started).as_secs_f64();
        let after = expected.saturating_sub(self.iteration + 1) as f64;
        Some(after * mean + (mean - current).max(0.0))
    }
}

/// `12,345`.
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `850 ms`, `12 s`, `3 min 05 s`, `2 h 04 min`.
pub(crate) fn human(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "?".to_owned();
    }
    if seconds < 1.0 {
        return format!("{:.0} ms", seconds * 1e3);
    }
    if seconds < 60.0 {
        return format!("{seconds:.1} s");
    }
    let whole = seconds.round() as u64;
    if whole < 3600 {
        format!("{} min {:02} s", whole / 60, whole % 60)
    } else {
        format!("{} h {:02} min", whole / 3600, whole % 3600 / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PolicyName;

    fn iteration(index: usize) -> Iteration {
        Iteration {
            index,
            workers: 4,
            factor: 0.5,
            policy: PolicyName::Daf.into(),
        }
    }

    #[test]
    fn quiet_means_off() {
        assert!(Progress::new(true).line.is_none());
        let mut off = Progress::off();
        off.iteration_begins(&iteration(0), 10);
        off.tasks_done(10);
        off.iteration_ends();
        off.finish();
    }

    #[test]
    fn nothing_is_drawn_in_the_first_second() {
        let mut progress = Progress::on(Instant::now());
        progress.iteration_begins(&iteration(0), 100);
        progress.tasks_done(100);
        progress.iteration_ends();
        assert!(progress.line.as_ref().unwrap().bar.is_none());
    }

    #[test]
    fn the_line_says_where_the_run_is_and_when_it_ends() {
        let started = Instant::now();
        let mut progress = Progress::on(started);
        progress.expect_iterations(Some(10));
        let line = progress.line.as_mut().unwrap();
        line.iteration = 3;
        line.workers = 4;
        line.factor = 0.5;
        line.recent.extend([2.0, 2.0]);
        line.iteration_started = started;
        line.total_done = 1_000;
        let now = started + Duration::from_secs(1);
        assert_eq!(line.prefix(), "iteration 3, 3/10 done");
        // 6 iterations after this one at 2 s, and 1 s left of this one.
        assert_eq!(line.eta(now), Some(13.0));
        assert_eq!(
            line.message(now),
            "nworkers 4 · factor 0.50 · 1,000 tasks/s · ETA 13.0 s"
        );
        line.expected = None;
        line.tasks = 50;
        line.done = 20;
        assert_eq!(line.prefix(), "iteration 3 · tasks 20/50");
        assert_eq!(line.eta(now), None);
        // One bag of a known number of tasks: 1,000 done in 1 s, 3,000 to go.
        line.expected_tasks = Some(4_000);
        assert_eq!(line.prefix(), "tasks 1,000/4,000");
        assert_eq!(line.eta(now), Some(3.0));
    }

    #[test]
    fn durations_and_counts_read_well() {
        assert_eq!(human(0.25), "250 ms");
        assert_eq!(human(12.04), "12.0 s");
        assert_eq!(human(185.0), "3 min 05 s");
        assert_eq!(human(7440.0), "2 h 04 min");
        assert_eq!(human(f64::NAN), "?");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }
}
