//! What travels between master and workers: the iteration's shared part, tasks and results.

use mw::Message;

/// Sent once per iteration to every worker taking part: `--shared-bytes` of data, like the
/// bodies N-Body broadcasts each step.
#[derive(Message, Debug, Clone, PartialEq, Default)]
pub struct Round {
    /// The iteration, from 0.
    pub iteration: u64,
    /// `--shared-bytes` bytes.
    pub data: Vec<u8>,
}

/// A task: how long to work, and `--task-bytes` of payload.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct Job {
    /// Unique over the run: `iteration · tasks + index`.
    pub id: u64,
    /// How long the task takes, in ns (drawn on the master).
    pub duration_ns: u64,
    /// `--task-bytes` bytes.
    pub payload: Vec<u8>,
}

/// A result: the task's id, checksums of what the worker received, and `--result-bytes` of
/// payload.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct Echo {
    /// The id of the task it answers.
    pub id: u64,
    /// Checksum of the task's payload as the worker received it.
    pub task_checksum: u64,
    /// Checksum of the iteration's shared data as the worker received it.
    pub shared_checksum: u64,
    /// `--result-bytes` bytes.
    pub payload: Vec<u8>,
}
