//! `policies`: see the library's documentation and `policies --help`.

use std::process::ExitCode;

use clap::Parser;

use policies::cli::{Cli, run};

fn main() -> ExitCode {
    match run(&Cli::parse()) {
        Ok(Some(summary)) => {
            print!("{summary}");
            ExitCode::SUCCESS
        }
        // An MPI worker rank: the master prints.
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(e.code())
        }
    }
}
