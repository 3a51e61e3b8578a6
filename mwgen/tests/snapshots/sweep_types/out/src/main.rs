//! points: one bag of tasks on the workers. `master.rs` makes the tasks as the workers need
//! them and collects the results, `worker.rs` processes tasks, `messages.rs` defines what
//! travels between them.

mod master;
mod messages;
mod worker;

use clap::Parser;

use master::Points;
use worker::PointsWorker;

/// One bag of tasks, streamed to the workers as they need them (a parameter sweep): your message types, with hooks to fill in.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Tasks in the bag
    #[arg(long, value_name = "N", default_value_t = 1000)]
    tasks: usize,
    #[command(flatten)]
    run: mw::RunArgs,
}

/// Errors are printed as `error: ...` and `help: ...` lines, with exit status 2 for a
/// configuration the run refused, 1 for other failures.
fn main() -> std::process::ExitCode {
    mw::exit_status(run())
}

fn run() -> mw::Result<()> {
    let cli: Cli = mw::parse_args();
    let tasks = cli.tasks;
    // The master is built only where it runs: here, or on MPI rank 0.
    let master = move || Points::new(tasks);
    let report = mw::run_with(&cli.run, master, PointsWorker::default)?;

    // Only the master has metrics: an MPI worker rank is done.
    let Some(metrics) = report.metrics() else {
        return Ok(());
    };
    let tasks: usize = metrics.iterations.iter().map(|it| it.tasks).sum();
    println!(
        "points: {tasks} tasks in {:.1} ms, {} workers started ({} backend); tuning decisions: {}",
        metrics.total_ms,
        metrics.pool,
        metrics.backend,
        metrics.decisions.len(),
    );
    Ok(())
}
