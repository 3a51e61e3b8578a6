//! `mwgen`: the command-line front door of mw-runtime.
//!
//! The binary is a thin shell around [`run`]: it parses a [`Cli`], runs its [`Command`] with the
//! standard output as `out`, and prints a [`CliError`] the way cargo does. Each subcommand lives
//! in its own module with its clap `Args` struct and a `run` function.

use std::io::Write;

use clap::{Parser, Subcommand};

pub mod ctl;
pub mod error;
#[cfg(unix)]
pub mod launch;
pub mod model;
pub mod new;
pub mod predict;
pub mod report;
mod two_axes;

pub use error::CliError;

/// Scaffold, model and report on self-tuning Master/Worker programs.
#[derive(Debug, Parser)]
#[command(name = "mwgen", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Evaluate the performance model offline: iteration time, efficiency and performance
    /// index for each number of workers, the best number by time and by index, and the MCMC
    #[command(long_about = model::LONG_ABOUT)]
    Model(model::ModelArgs),
    /// Create a Master/Worker project from the definitions of its messages
    #[command(long_about = new::LONG_ABOUT)]
    New(new::NewArgs),
    /// Predict a whole run from a short pilot run's metrics, for each worker count asked
    #[command(long_about = predict::LONG_ABOUT)]
    Predict(predict::PredictArgs),
    /// Draw plots of a run from its metrics (and trace) into a folder, with an HTML page
    #[command(long_about = report::LONG_ABOUT)]
    Report(report::ReportArgs),
    /// Read and set the tunables of a running program through its control endpoint
    #[command(long_about = ctl::LONG_ABOUT)]
    Ctl(ctl::CtlArgs),
    /// Run a launcher (mpirun, srun, ...) and exit with the master's exit status
    #[cfg(unix)]
    #[command(long_about = launch::LONG_ABOUT)]
    Launch(launch::LaunchArgs),
}

/// `1 worker`, `2 workers`: a count with its noun.
pub(crate) fn count(n: impl std::fmt::Display + PartialEq<usize>, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Runs the parsed command, writing its output to `out`.
///
/// # Errors
/// A [`CliError`] to print on the standard error, with its exit code.
pub fn run(cli: Cli, out: &mut dyn Write) -> Result<(), CliError> {
    match cli.command {
        Command::Model(args) => model::run(&args, out),
        Command::New(args) => new::run(&args, out),
        Command::Predict(args) => predict::run(&args, out),
        Command::Report(args) => report::run(&args, out),
        Command::Ctl(args) => ctl::run(&args, out),
        #[cfg(unix)]
        Command::Launch(args) => launch::run(&args),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
