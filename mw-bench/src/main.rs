//! `mw-bench`: see the library's documentation and `mw-bench --help`.

use std::process::ExitCode;

use clap::Parser;
use mw_bench::{Cli, run};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Without the watch a signal would end the process before the namespaces an experiment
    // set up were taken down.
    if let Err(e) = mw_bench::teardown::watch_signals() {
        eprintln!("error: cannot watch for signals: {e}");
        return ExitCode::FAILURE;
    }
    match run(&cli) {
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
