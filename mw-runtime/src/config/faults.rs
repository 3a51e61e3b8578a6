//! What the runtime does about tasks that fail and workers that hang or die.

use std::time::Duration;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// What happens to a task that failed on every attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum OnTaskFailure {
    /// The run ends with an error naming the task and every attempt's error.
    #[default]
    Fail,
    /// The master is told ([`Master::task_failed`](crate::Master::task_failed)) and the run
    /// goes on without the task's result.
    // The help text has its own words: rustdoc's link syntax would show in `--help`.
    #[value(
        help = "The master is told (its `task_failed` hook) and the run goes on without \
                    the task's result"
    )]
    Skip,
}

/// Failing tasks, stragglers and silent workers: `--task-retries`, `--on-task-failure`,
/// `--backup-after`, `--liveness-timeout`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultConfig {
    /// Attempts at a failing task beyond the first, each on another worker when there is one.
    pub task_retries: u32,
    /// What a task that failed every attempt does to the run.
    pub on_task_failure: OnTaskFailure,
    /// A chunk out for more than this many times its expected time (plus 20 ms of timer and
    /// scheduling noise) is copied to an idle worker, and the first answer wins; 0: never.
    pub backup_after: f64,
    /// A worker that holds chunks and is not heard from while the master listens for this long
    /// (time the master spends elsewhere does not count) is declared lost: its chunks are run
    /// elsewhere and it is never waited for again.
    pub liveness: Duration,
}

/// Added to a chunk's expected time before it counts as overdue: timer and scheduling noise.
pub(crate) const BACKUP_MARGIN: Duration = Duration::from_millis(20);

/// Attempts beyond the first at most (a task that fails 100 times will fail again).
pub(crate) const MAX_TASK_RETRIES: u32 = 100;

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            task_retries: 2,
            on_task_failure: OnTaskFailure::Fail,
            backup_after: 2.0,
            liveness: Duration::from_secs(60),
        }
    }
}

impl FaultConfig {
    /// Checks ranges.
    ///
    /// # Errors
    /// A value out of range, with what to do.
    pub fn validate(&self) -> Result<()> {
        if self.task_retries > MAX_TASK_RETRIES {
            return Err(Error::config(
                format!(
                    "error: `task_retries` = {} is more than {MAX_TASK_RETRIES}",
                    self.task_retries
                ),
                "a task that failed that often will fail again: ask for a few retries (default 2)",
            ));
        }
        if !(self.backup_after.is_finite()
            && (self.backup_after == 0.0 || self.backup_after >= 1.0))
        {
            return Err(Error::config(
                format!(
                    "error: `backup_after` = {} is out of range",
                    self.backup_after
                ),
                "give how many times its expected time a chunk may take before a copy is sent \
                 to an idle worker (at least 1, default 2), or 0 for never",
            ));
        }
        if self.liveness < Duration::from_millis(100) {
            return Err(Error::config(
                format!(
                    "error: `liveness_timeout` = {} s is too short",
                    self.liveness.as_secs_f64()
                ),
                "a worker busy with a long task says nothing until it is done: give at least \
                 0.1 s, well above the longest chunk (default 60)",
            ));
        }
        Ok(())
    }
}

/// `--liveness-timeout`: seconds, positive.
pub(super) fn parse_seconds(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1e9 => Ok(v),
        Ok(_) => Err("must be a positive number of seconds".into()),
        Err(_) => Err(format!("`{text}` is not a number of seconds")),
    }
}

/// `--backup-after`: 0 (off) or at least 1.
pub(super) fn parse_backup(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (v == 0.0 || v >= 1.0) => Ok(v),
        Ok(_) => Err("must be 0 (never) or at least 1 (times the chunk's expected time)".into()),
        Err(_) => Err(format!("`{text}` is not a number")),
    }
}

/// `--task-retries`: a whole number up to [`MAX_TASK_RETRIES`].
pub(super) fn parse_retries(text: &str) -> std::result::Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n <= MAX_TASK_RETRIES => Ok(n),
        Ok(_) => Err(format!("at most {MAX_TASK_RETRIES}")),
        Err(_) => Err(format!("`{text}` is not a whole number")),
    }
}
