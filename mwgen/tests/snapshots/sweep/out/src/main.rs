//! bag: one bag of tasks on the workers. `master.rs` makes the tasks as the workers need
//! them and collects the results, `worker.rs` processes tasks, `messages.rs` defines what
//! travels between them.

mod master;
mod messages;
mod worker;

use clap::Parser;

use master::Bag;
use worker::BagWorker;

/// Sums the squares of 1..=N on the workers in one bag of tasks and checks the answer.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Sum the squares of 1..=N
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3_000_000,
        value_parser = clap::value_parser!(u64).range(1..=3_000_000)
    )]
    numbers: u64,
    /// Tasks in the bag
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10_000,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    tasks: u64,
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
    let (numbers, tasks) = (cli.numbers, cli.tasks);
    // The master is built only where it runs: here, or on MPI rank 0.
    let master = move || Bag::new(numbers, tasks);
    let report = mw::run_with(&cli.run, master, BagWorker::default)?;

    // Only the master has metrics: an MPI worker rank is done.
    let Some(metrics) = report.metrics() else {
        return Ok(());
    };
    let tasks: usize = metrics.iterations.iter().map(|it| it.tasks).sum();
    println!(
        "bag: {tasks} tasks in {:.1} ms, {} workers started ({} backend); tuning decisions: {}",
        metrics.total_ms,
        metrics.pool,
        metrics.backend,
        metrics.decisions.len(),
    );
    Ok(())
}
