//! `synthetic`: see the library's documentation and `synthetic --help`.

use std::process::ExitCode;

use clap::Parser;

use synthetic::cli::{Cli, run};

fn main() -> ExitCode {
    // Before the flags are parsed: under a launcher, a refused flag's status 2 is said too.
    mw::report_exit_status();
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
