//! `mwgen ctl`: read and set the tunables of a running program through its control endpoint
//! (a program started with `--control ADDR`).

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::time::Duration;

use clap::{Args, Subcommand};
use mw_runtime::ValueError;
use mw_runtime::tuning::control::{ControlAddr, ControlStream, Reply};

use crate::CliError;

pub(crate) const LONG_ABOUT: &str = "\
Read and set the tunables of a running program.

The program must have been started with `--control ADDR` (a Unix socket path or
127.0.0.1:PORT), by the same user: the program writes a token that only its user can read,
and `mwgen ctl` finds and sends it by itself. A value set takes effect at the program's next iteration and is logged as a
decision with reason `external`; the tuner then leaves that tunable alone until it is set to
`auto`. Tunables the program declared of its own (a tile size, say) are listed by `get` after
`nworkers`, `factor` and `policy`, and set the same way, within their declared range.

Examples:
  mwgen ctl /tmp/fire.sock get
  mwgen ctl /tmp/fire.sock set nworkers 8
  mwgen ctl 127.0.0.1:7070 set factor auto
  mwgen ctl 127.0.0.1:7070 watch";

/// How long to wait for the program's answer to `get` or `set`.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Arguments of `mwgen ctl`.
#[derive(Debug, Clone, Args)]
pub struct CtlArgs {
    /// The program's control endpoint, as given to its --control: a Unix socket path or
    /// 127.0.0.1:PORT
    #[arg(value_name = "ADDR")]
    pub addr: String,
    #[command(subcommand)]
    pub action: Action,
}

/// What to do.
#[derive(Debug, Clone, Subcommand)]
pub enum Action {
    /// Print a tunable's value (nworkers, factor, policy, or one the program declared), or all of them
    Get {
        #[arg(value_name = "NAME")]
        name: Option<String>,
    },
    /// Set a tunable from the next iteration on; `auto` hands it back to the tuner
    Set {
        #[arg(value_name = "NAME")]
        name: String,
        #[arg(value_name = "VALUE")]
        value: String,
    },
    /// Print the tunables and the iteration time after every iteration, until the program ends
    Watch,
}

/// Runs `mwgen ctl`, writing what the program answers to `out`.
///
/// # Errors
/// An address that is not one, a program that cannot be reached or does not answer, or a
/// request the program refuses (with its reason).
pub fn run(args: &CtlArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let addr: ControlAddr = args.addr.parse().map_err(|e: ValueError| {
        CliError::usage(
            format!("`{}` is not a control address: {}", args.addr, e.message()),
            format!("{}, as the program was started with (--control)", e.help()),
        )
    })?;
    let mut stream = addr.connect().map_err(|e| {
        let help = match e.kind() {
            ErrorKind::ResourceBusy => {
                "close a `mwgen ctl ... watch` of this program, then try again".to_owned()
            }
            ErrorKind::PermissionDenied => {
                "only the user who started the program may control it, and it must be running \
                 with that --control address: the program writes a token for its user, which \
                 `mwgen ctl` reads"
                    .to_owned()
            }
            _ => format!("is the program running, started with `--control {addr}`?"),
        };
        CliError::failure(
            format!("cannot connect to the control endpoint `{addr}`: {e}"),
            Some(help),
        )
    })?;
    let request = match &args.action {
        Action::Get { name: Some(name) } => format!("get {name}"),
        Action::Get { name: None } => "get".to_owned(),
        Action::Set { name, value } => format!("set {name} {value}"),
        Action::Watch => "watch".to_owned(),
    };
    let watching = matches!(args.action, Action::Watch);
    if !watching {
        stream
            .set_read_timeout(Some(ANSWER_TIMEOUT))
            .map_err(|e| lost(&addr, &e))?;
    }
    match stream.request(&request).map_err(|e| lost(&addr, &e))? {
        Reply::Err { message, help } => Err(CliError::failure(message, help)),
        Reply::Ok(_) if watching => watch(stream, out),
        Reply::Ok(text) => writeln!(out, "{text}").map_err(CliError::output),
    }
}

/// Copies status lines until the program says `end` or goes away.
fn watch(stream: ControlStream, out: &mut dyn Write) -> Result<(), CliError> {
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else {
            break;
        };
        if line == "end" {
            break;
        }
        writeln!(out, "{line}").map_err(CliError::output)?;
        out.flush().map_err(CliError::output)?;
    }
    Ok(())
}

fn lost(addr: &ControlAddr, e: &std::io::Error) -> CliError {
    CliError::failure(
        format!("the program at `{addr}` did not answer: {e}"),
        Some("it may have ended, or be stuck; try again".into()),
    )
}
