//! `xfire`: see the library's documentation and `xfire --help`.

use std::process::ExitCode;

use clap::Parser;

use xfire::cli::{Cli, run};

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(e.code)
        }
    }
}
