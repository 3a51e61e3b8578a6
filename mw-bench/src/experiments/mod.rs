//! The experiments, one module each, and the one way they run the synthetic program.

pub mod busy;
pub mod calibration;
pub mod children;
pub mod cluster;
pub mod cluster_workers;
pub mod heldout;
pub mod heterogeneous;
pub mod model;
pub mod model_mpi;
pub mod overhead;
pub mod policies;
pub mod predict;
pub mod shaped;
pub mod workers;
pub mod xfire;

use mw_runtime::{BackendChoice, RunArgs};
use synthetic::cli::{Cli, ProgramArgs, Summary};

use crate::BenchError;

/// The synthetic program's settings, with this suite's defaults: sleeping tasks of 1 ms ± 30 %,
/// 16 bytes out and 8 back per task, nothing shared, seed 1.
pub fn program(tasks: usize, iterations: usize, mean_ms: f64, stddev: f64) -> ProgramArgs {
    ProgramArgs {
        tasks,
        iterations,
        mean_ms,
        stddev,
        seed: 1,
        task_bytes: 16,
        result_bytes: 8,
        shared_bytes: 0,
        spin: false,
        inject: None,
    }
}

/// The papers' network, emulated: 100 Mbit/s switched Ethernet, 0.1 ms a message.
pub const LINK_LATENCY_MS: f64 = 0.1;
pub const LINK_MBIT: f64 = 100.0;

/// Runtime flags for a quiet run on threads with `workers` workers, nothing tuned.
pub fn fixed(workers: usize) -> RunArgs {
    RunArgs {
        workers: Some(workers),
        max_workers: Some(workers),
        backend: Some(BackendChoice::Local),
        tune: Some(mw_runtime::TuneMode::Off),
        quiet: true,
        ..RunArgs::default()
    }
}

/// Runs the synthetic program in this process; its results are checked (every task's result
/// recovered once, payloads intact) or the run is an error.
///
/// # Errors
/// A run that failed or whose results failed their checks.
pub fn synthetic(program: ProgramArgs, run: RunArgs) -> Result<Summary, BenchError> {
    let cli = Cli { program, run };
    synthetic::cli::run(&cli)?
        .ok_or_else(|| BenchError("error: the synthetic run ended without metrics".into()))
}

/// Per-iteration measured and ideal times of a synthetic run, in ms.
pub fn measured_and_ideal(summary: &Summary) -> (Vec<f64>, Vec<f64>) {
    let protocol = summary.config.protocol;
    summary
        .metrics
        .iterations
        .iter()
        .zip(&summary.outcome.task_time)
        .map(|(it, task)| {
            let task_ms = task.as_secs_f64() * 1e3;
            (
                it.time_ms,
                crate::ideal::iteration_ms(task_ms, it, protocol),
            )
        })
        .unzip()
}
