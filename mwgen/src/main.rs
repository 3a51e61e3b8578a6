//! `mwgen`: the command-line front door of mw-runtime.

use clap::Parser;

/// Scaffold, model and report on self-tuning Master/Worker programs.
#[derive(Debug, Parser)]
#[command(name = "mwgen", version, about)]
struct Cli {}

fn main() {
    let Cli {} = Cli::parse();
}
