//! The papers' synthetic Master/Worker programs (Cesar et al., Parallel Computing 2006, §5.4):
//! `--iterations` iterations of `--tasks` tasks whose times are drawn from a seeded lognormal
//! distribution (`--mean-ms`, `--stddev` as a fraction of the mean), carrying `--task-bytes` to
//! the worker and `--result-bytes` back, with `--shared-bytes` sent to every worker each
//! iteration. A task's time is realised by sleeping (so that many workers fit on a small machine)
//! or by spinning (`--spin`).
//!
//! Times are drawn on the master and travel in the task, so one seed gives the same program on
//! every backend, worker count and policy. Every result echoes its task's id and checksums of
//! what the worker received, and carries a payload the master recognises: a run that completes
//! delivered every byte where it belonged.

pub mod cli;
pub mod inject;
pub mod master;
pub mod messages;
pub mod payload;
pub mod times;
pub mod worker;
