//! `fire-front`: see the library's documentation and `fire-front --help`.

use std::process::ExitCode;

use clap::Parser;

use fire_front::cli::{Cli, run};

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(e.code)
        }
    }
}
