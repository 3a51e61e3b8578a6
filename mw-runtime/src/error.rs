//! The runtime's error type.

use std::fmt;
use std::path::PathBuf;

use crate::codec::DecodeError;
use crate::signal::Signal;

/// Result of the runtime's fallible operations, and of your hooks.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Something stopped a run: bad configuration, a failure no worker could get past, a backend
/// fault, or an error returned by one of your hooks.
///
/// Its `Debug` form is its message, so `fn main() -> mw::Result<()>` prints a readable error.
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong; match on it to act on a specific failure.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A configuration value (flag or `Mw.toml`) is invalid. `help` says how to fix it.
    Config { message: String, help: String },
    /// `Mw.toml` (or the file given with `--config`) could not be read or parsed.
    ConfigFile { path: PathBuf, message: String },
    /// A task failed on every attempt (`--task-retries` plus the first), or no worker was left
    /// to run it: the run cannot finish. `attempts` says each attempt's worker and error.
    TaskFailed {
        iteration: usize,
        task: usize,
        attempts: Vec<String>,
    },
    /// No worker could start (every `Worker::initialize` failed or the pool is empty).
    NoWorkers { message: String },
    /// The communication backend failed.
    Backend { message: String },
    /// A message could not be decoded.
    Decode(DecodeError),
    /// Writing an output file (metrics, trace, checkpoint) failed, or reading metrics.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// An error returned by one of the application's hooks.
    App(Box<dyn std::error::Error + Send + Sync>),
    /// The master's code panicked: `hook` names where (`partition`, `more_tasks`, `recover`,
    /// `end_iteration`, `initialize`, `final_work`, or the master's constructor), `iteration`
    /// in which iteration if inside one, `message` is the panic's. The workers were told to
    /// stop; the run ends with this error instead of waiting for a master that is gone.
    MasterPanicked {
        hook: &'static str,
        iteration: Option<usize>,
        message: String,
    },
    /// The run was stopped by SIGINT or SIGTERM. The engine sees it and writes what ran; the
    /// process then exits with [`Signal::exit_code`].
    Interrupted { signal: Signal },
}

impl Error {
    /// An error from application code, for hooks that return [`Result`].
    pub fn app(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ErrorKind::App(error.into()).into()
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// A configuration the program refuses, with `help` on how to fix it: exit status 2, as
    /// for the runtime's own flags. For a check that needs the run (the pool's size, say).
    pub fn config(message: impl Into<String>, help: impl Into<String>) -> Self {
        ErrorKind::Config {
            message: message.into(),
            help: help.into(),
        }
        .into()
    }

    pub(crate) fn backend(message: impl Into<String>) -> Self {
        ErrorKind::Backend {
            message: message.into(),
        }
        .into()
    }

    pub(crate) fn interrupted(signal: Signal) -> Self {
        ErrorKind::Interrupted { signal }.into()
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ErrorKind::Io {
            path: path.into(),
            source,
        }
        .into()
    }
}

/// What `main` returns after a run: success, or the error printed the way the runtime's
/// messages and `mwgen` print theirs (an `error: ...` line, then a `help: ...` line where
/// there is advice) with status 2 for a configuration the run refused and 1 for any other
/// failure. `fn main() -> mw::Result<()>` would print Rust's own `Error: ` before it instead.
///
/// # Examples
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     mw_runtime::exit_status(run())
/// }
/// # fn run() -> mw_runtime::Result<()> { Ok(()) }
/// ```
pub fn exit_status(result: Result<()>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", e.report());
            std::process::ExitCode::from(e.status())
        }
    }
}

impl Error {
    /// The error as a program prints it: its message after `error: `.
    pub fn report(&self) -> String {
        let text = self.to_string();
        match text.starts_with("error: ") {
            true => text,
            false => format!("error: {text}"),
        }
    }

    /// The exit status a program that stops on this error gives: 2 for a configuration it
    /// refused, 1 for any other failure.
    pub fn status(&self) -> u8 {
        match self.kind {
            ErrorKind::Config { .. } | ErrorKind::ConfigFile { .. } => 2,
            _ => 1,
        }
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error { kind }
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        ErrorKind::Decode(e).into()
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::app(e)
    }
}

impl From<String> for Error {
    fn from(message: String) -> Self {
        Error::app(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Self {
        Error::app(message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Config { message, help } => write!(f, "{message}\nhelp: {help}"),
            ErrorKind::ConfigFile { path, message } => {
                write!(
                    f,
                    "error: invalid configuration file `{}`: {}\nhelp: fix it where shown; its \
                     `[run]` keys are the runtime's flags with `_` for `-` (see `--help`)",
                    path.display(),
                    message.trim_end()
                )
            }
            ErrorKind::TaskFailed {
                iteration,
                task,
                attempts,
            } => {
                let times = match attempts.len() {
                    1 => "once".to_owned(),
                    n => format!("{n} times"),
                };
                write!(f, "task {task} of iteration {iteration} failed {times}")?;
                for (n, attempt) in attempts.iter().enumerate() {
                    write!(f, "\n  attempt {}: {attempt}", n + 1)?;
                }
                write!(
                    f,
                    "\nhelp: fix the task or `do_work`; `--task-retries N` tries a task N more \
                     times, `--on-task-failure skip` goes on without it (the master's \
                     `task_failed` is told)"
                )
            }
            ErrorKind::NoWorkers { message } => write!(f, "no worker could start: {message}"),
            ErrorKind::Backend { message } => write!(f, "communication backend failed: {message}"),
            ErrorKind::Decode(e) => write!(f, "{e}"),
            ErrorKind::Io { path, source } => {
                write!(f, "cannot write `{}`: {source}", path.display())
            }
            ErrorKind::App(e) => write!(f, "{e}"),
            ErrorKind::MasterPanicked {
                hook,
                iteration,
                message,
            } => {
                write!(f, "the master panicked in `{hook}`")?;
                if let Some(index) = iteration {
                    write!(f, " in iteration {index}")?;
                }
                write!(
                    f,
                    ": {message}\nhelp: the workers were stopped; the results recovered so far \
                     are in the master's state, no further ones"
                )
            }
            ErrorKind::Interrupted { signal } => write!(f, "interrupted by {}", signal.name()),
        }
    }
}

/// What a `main` that returns this error prints after its own `Error: `: the message, without
/// the `error: ` that configuration errors open with (`Error: error: ...` says it twice).
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.to_string();
        f.write_str(text.strip_prefix("error: ").unwrap_or(&text))
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Decode(e) => Some(e),
            ErrorKind::Io { source, .. } => Some(source),
            ErrorKind::App(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn main_says_error_once() {
        let e = Error::config("error: `workers` = 0", "ask for one or more");
        assert_eq!(
            e.to_string(),
            "error: `workers` = 0\nhelp: ask for one or more"
        );
        // `fn main() -> Result` prints "Error: " and then this.
        assert_eq!(format!("{e:?}"), "`workers` = 0\nhelp: ask for one or more");
        let other = Error::app("no input file");
        assert_eq!(format!("{other:?}"), "no input file");
        assert_eq!(
            e.report(),
            "error: `workers` = 0\nhelp: ask for one or more"
        );
        assert_eq!(other.report(), "error: no input file");
        assert_eq!((e.status(), other.status()), (2, 1));
    }
}

/// A value that is not valid (a load pattern, a control address): what is wrong, and what to
/// write instead. Prints as the message, then the advice on a `help:` line, as clap shows a
/// flag's error; a run refused for it reports both as [`ErrorKind::Config`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueError {
    message: String,
    help: String,
}

impl ValueError {
    pub(crate) fn new(message: impl Into<String>, help: impl Into<String>) -> Self {
        ValueError {
            message: message.into(),
            help: help.into(),
        }
    }

    /// What is wrong.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What to write instead.
    pub fn help(&self) -> &str {
        &self.help
    }
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}\nhelp: {}", self.message, self.help)
    }
}

impl std::error::Error for ValueError {}
