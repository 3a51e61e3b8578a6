//! The CLI's error: what went wrong and what to do about it, printed the way cargo does.

use std::fmt;
use std::io;

/// A failed command. Prints as an `error: ...` line, then a `help: ...` line when there is
/// advice to give.
#[derive(Debug)]
pub struct CliError {
    message: String,
    help: Option<String>,
    code: u8,
    quiet: bool,
}

impl CliError {
    /// Invalid input on the command line (exit code 2, like a parse error).
    pub fn usage(message: impl Into<String>, help: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            help: Some(help.into()),
            code: 2,
            quiet: false,
        }
    }

    /// The command was valid but could not be carried out (exit code 1).
    pub fn failure(message: impl Into<String>, help: Option<String>) -> Self {
        CliError {
            message: message.into(),
            help,
            code: 1,
            quiet: false,
        }
    }

    /// Writing the command's output failed. A closed pipe (`mwgen model | head`) is not an
    /// error worth reporting: it exits quietly with success.
    pub fn output(error: io::Error) -> Self {
        if error.kind() == io::ErrorKind::BrokenPipe {
            CliError {
                message: String::new(),
                help: None,
                code: 0,
                quiet: true,
            }
        } else {
            CliError::failure(format!("failed to write the output: {error}"), None)
        }
    }

    /// A command that said what it had to say itself and ends with `code` (`mwgen launch`
    /// passing on the master's status).
    pub fn status(code: u8) -> Self {
        CliError {
            message: String::new(),
            help: None,
            code,
            quiet: true,
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        self.code
    }

    /// Whether the error should be printed at all.
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\nhelp: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CliError {}
