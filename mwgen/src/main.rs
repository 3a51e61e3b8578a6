//! `mwgen`: the command-line front door of mw-runtime.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = mwgen::Cli::parse();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result =
        mwgen::run(cli, &mut out).and_then(|()| out.flush().map_err(mwgen::CliError::output));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if !e.is_quiet() {
                eprintln!("{e}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}
