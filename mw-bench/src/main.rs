//! `mw-bench`: see the library's documentation and `mw-bench --help`.

use std::process::ExitCode;

use clap::Parser;
use mw_bench::{Cli, run};

fn main() -> ExitCode {
    match run(&Cli::parse()) {
        Ok(path) => {
            println!("wrote {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            let text = e.to_string();
            if text.starts_with("error:") {
                eprintln!("{text}");
            } else {
                eprintln!("error: {text}");
            }
            ExitCode::FAILURE
        }
    }
}
