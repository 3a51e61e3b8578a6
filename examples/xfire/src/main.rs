//! `xfire`: see the library's documentation and `xfire --help`.

use std::process::ExitCode;

use xfire::cli::{Cli, run};

fn main() -> ExitCode {
    match run(mw::parse_args::<Cli>()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(e.code)
        }
    }
}
