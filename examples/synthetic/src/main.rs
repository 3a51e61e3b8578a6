//! `synthetic`: see the library's documentation and `synthetic --help`.

use std::process::ExitCode;

use synthetic::cli::{Cli, run};

fn main() -> ExitCode {
    match run(&mw::parse_args::<Cli>()) {
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
