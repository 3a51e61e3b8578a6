//! calc: a Master/Worker program. `master.rs` cuts the work into tasks and collects the
//! results, `worker.rs` processes tasks, `messages.rs` defines what travels between them.

mod master;
mod messages;
mod worker;

use clap::Parser;

use master::Calc;
use worker::CalcWorker;

/// A Master/Worker program: your message types, with hooks to fill in.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Tasks per iteration
    #[arg(long, value_name = "N", default_value_t = 100)]
    tasks: usize,
    /// Iterations; the runtime retunes how work is cut between them
    #[arg(long, value_name = "N", default_value_t = 3)]
    iterations: usize,
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
    let (tasks, iterations) = (cli.tasks, cli.iterations);
    // The master is built only where it runs: here, or on MPI rank 0.
    let master = || Calc::new(tasks, iterations);
    let report = mw::run_with(&cli.run, master, CalcWorker::default)?;

    // Only the master has metrics: an MPI worker rank is done.
    let Some(metrics) = report.metrics() else {
        return Ok(());
    };
    let tasks: usize = metrics.iterations.iter().map(|it| it.tasks).sum();
    let workers = metrics.iterations.last().map_or(0, |it| it.workers);
    println!(
        "calc: {} iterations, {tasks} tasks in {:.1} ms on {workers} of {} workers ({} backend)",
        metrics.iterations.len(),
        metrics.total_ms,
        metrics.pool,
        metrics.backend,
    );
    Ok(())
}
