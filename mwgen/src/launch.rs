//! `mwgen launch -- LAUNCHER...`: runs a launcher (`mpirun`, `srun`, ...) and exits with the
//! master's exit status, which some launchers drop.
//!
//! The master of a launched run says its status as the last line of its standard error,
//! `mw: exit status N` (mw-runtime's contract), and writes the same line to the file
//! `MW_STATUS_FILE` names. The wrapper runs the launcher in a process group of its own, with
//! that variable naming a file in a folder of its own, passes its standard output through
//! untouched and copies its standard error line by line, watching for that line, and watches
//! the file, for a launcher that stops passing the master's output on. SIGINT, SIGTERM and SIGHUP are passed on to the
//! launcher's group, and to the ranks it started on this node. Once the master has said its
//! status, the launcher has `--grace` seconds to exit; then its group gets SIGTERM, and SIGKILL
//! 2 s later (a stuck `mpirun` ignores SIGTERM). The wrapper exits with, in order: the master's status (but the wrapper's own
//! signal, 130/143/129, when the master was interrupted: mpirun passes a Ctrl-C on to the ranks
//! as SIGTERM); 130/143/129 when the wrapper itself got SIGINT/SIGTERM/SIGHUP; the launcher's
//! status when it is not 0; else 1.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use clap::Args;

use crate::CliError;

pub const LONG_ABOUT: &str = "\
Run a launcher (mpirun, srun, ...) and exit with the master's exit status.

The master of a launched mw program says its status as the last line of its standard error, \
`mw: exit status N`. Some launchers lose it: Open MPI 4's `mpirun --mca orte_enable_recovery 1` \
exits 0 whatever the ranks return, and a rank lost on another node can leave it running after \
the master has ended. This wrapper exits with the status the master said, and ends a launcher \
that is still running --grace seconds after it (SIGTERM to its process group, SIGKILL 2 s \
later). The master also writes its line to the file MW_STATUS_FILE names, which this wrapper \
sets and watches, for a launcher that stops passing the master's output on. Standard output \
passes through untouched; standard error is copied line by line; \
SIGINT, SIGTERM and SIGHUP are passed on to the launcher, and at once to the ranks it started \
on this node (mpirun passes a Ctrl-C on to them only a second later).

Exit status: the master's (130, 143 or 129 for the signal the wrapper got, when the master was \
interrupted: mpirun passes a Ctrl-C on as SIGTERM); else 130, 143 or 129 if the wrapper got \
SIGINT, SIGTERM or SIGHUP; else the launcher's if not 0; else 1 (the master did not say its status). 127 when the launcher \
cannot be found, 126 when it cannot be started.

Example: mwgen launch -- mpirun --mca orte_enable_recovery 1 -np 5 target/release/app";

/// Arguments of `mwgen launch`.
#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// Seconds the launcher has to exit once the master has said its exit status
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = parse_grace)]
    pub grace: Duration,
    /// The launcher's command line, after `--`
    #[arg(required = true, last = true, value_name = "LAUNCHER")]
    pub command: Vec<OsString>,
}

/// How long the launcher has between SIGTERM and SIGKILL.
const KILL_AFTER: Duration = Duration::from_secs(2);
/// How long the copy of the standard error may go on after the launcher exited: processes it
/// left behind may hold the pipe open.
const DRAIN: Duration = Duration::from_secs(1);

fn parse_grace(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !seconds.is_finite() || !(0.0..=86_400.0).contains(&seconds) {
        return Err(format!("`{text}` is not between 0 and 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The status in a master's `mw: exit status N` line, wherever the launcher put the line
/// (`mpirun --tag-output` prefixes it).
pub(crate) fn master_status(line: &[u8]) -> Option<u8> {
    const MARK: &[u8] = b"mw: exit status ";
    let at = line.windows(MARK.len()).position(|w| w == MARK)?;
    let rest = &line[at + MARK.len()..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 3 {
        return None;
    }
    match rest.get(digits) {
        None | Some(b' ' | b'\n' | b'\r') => {}
        Some(_) => return None,
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

/// How the launcher ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LauncherEnd {
    Exited(i32),
    Killed(i32),
}

impl LauncherEnd {
    fn of(status: ExitStatus) -> LauncherEnd {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => LauncherEnd::Exited(code),
            (None, Some(signal)) => LauncherEnd::Killed(signal),
            (None, None) => LauncherEnd::Exited(1),
        }
    }

    /// As a shell reports it.
    fn status(self) -> u8 {
        match self {
            LauncherEnd::Exited(code) => (code & 0xff) as u8,
            LauncherEnd::Killed(signal) => (128 + signal).clamp(0, 255) as u8,
        }
    }
}

/// What the wrapper exits with, and the error it prints when the master said nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub status: u8,
    pub error: Option<(String, String)>,
}

/// The wrapper's exit status: see the module's documentation.
pub(crate) fn decide(master: Option<u8>, signal: Option<i32>, launcher: LauncherEnd) -> Decision {
    let status = |status| Decision {
        status,
        error: None,
    };
    // The master stopped by a signal that the launcher turned into another (mpirun passes a
    // Ctrl-C on to the ranks as SIGTERM): the signal the user sent is the status.
    let interrupted = |code| code == 130 || code == 143;
    if let (Some(code), Some(signal)) = (master, signal) {
        if interrupted(code) {
            return status((128 + signal).clamp(0, 255) as u8);
        }
    }
    if let Some(code) = master {
        return status(code);
    }
    if let Some(signal) = signal {
        return status((128 + signal).clamp(0, 255) as u8);
    }
    match launcher.status() {
        0 => Decision {
            status: 1,
            error: Some((
                "the master ended without reporting its exit status (killed, or not an mw \
                 program)"
                    .into(),
                "the launcher exited 0, which Open MPI 4's `--mca orte_enable_recovery 1` does \
                 for failed runs too; an mw program's master prints `mw: exit status N` as it \
                 exits: look above for how it ended"
                    .into(),
            )),
        },
        code => status(code),
    }
}

enum Event {
    MasterStatus(u8),
    StderrClosed,
    Exited(ExitStatus),
    Signal(i32),
}

fn say(message: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "mwgen launch: {message}");
}

/// Runs `mwgen launch`.
///
/// # Errors
/// Carries the exit status (printed messages are the wrapper's own, so the error is quiet).
pub fn run(args: &LaunchArgs) -> Result<(), CliError> {
    match launch(args) {
        0 => Ok(()),
        status => Err(CliError::status(status)),
    }
}

fn launch(args: &LaunchArgs) -> u8 {
    use std::os::unix::process::CommandExt;

    let (program, rest) = match args.command.split_first() {
        Some(split) => split,
        None => return 2,
    };
    let (events, receive) = mpsc::channel();
    // Before the launcher starts: a signal in between is passed on, not lost.
    let signals = match watch_signals(events.clone()) {
        Ok(signals) => signals,
        Err(e) => {
            say(&format!(
                "error: cannot watch SIGINT, SIGTERM and SIGHUP: {e}"
            ));
            return 1;
        }
    };
    // Where the master writes its status line as well (mw-runtime reads `MW_STATUS_FILE`): a
    // launcher may stop passing its standard error on (hydra, after losing a node). A folder
    // only this user can enter, removed at the end.
    let status_dir = match tempfile::Builder::new().prefix("mwgen-launch-").tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            say(&format!(
                "error: cannot make a folder for the master's status: {e}"
            ));
            signals.close();
            return 1;
        }
    };
    let status_file = status_dir.path().join("status");
    let spawned = Command::new(program)
        .args(rest)
        .env("MW_STATUS_FILE", &status_file)
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        // A group of its own: the signals reach the launcher once (from us), and SIGKILL
        // reaches what it started on this node too.
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            let name = program.to_string_lossy();
            say(&format!("error: cannot start `{name}`: {e}"));
            say(
                "help: give the launcher's full command line after `--`, e.g. `mwgen launch -- mpirun -np 5 target/release/app`",
            );
            signals.close();
            return if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
        }
    };
    let group = rustix::process::Pid::from_raw(child.id() as i32);
    if let Some(stderr) = child.stderr.take() {
        let events = events.clone();
        std::thread::spawn(move || copy_stderr(stderr, &events));
    } else {
        let _ = events.send(Event::StderrClosed);
    }
    {
        let events = events.clone();
        std::thread::spawn(move || {
            if let Ok(status) = child.wait() {
                let _ = events.send(Event::Exited(status));
            }
        });
    }
    {
        let events = events.clone();
        std::thread::spawn(move || watch_status_file(&status_file, &events));
    }
    drop(events);

    let signal_group = |signal: rustix::process::Signal| {
        if let Some(group) = group {
            let _ = rustix::process::kill_process_group(group, signal);
        }
    };
    let mut master: Option<(u8, Instant)> = None;
    let mut signal: Option<i32> = None;
    let mut ended: Option<(LauncherEnd, Instant)> = None;
    let mut stderr_open = true;
    let mut terminated: Option<Instant> = None;
    let mut killed = false;
    loop {
        let now = Instant::now();
        if let Some((_, at)) = ended {
            if !stderr_open || now >= at + DRAIN {
                break;
            }
        }
        // The next thing due: the end of the grace, of SIGTERM's time, of the drain.
        let due = match (ended, master, terminated) {
            (Some((_, at)), _, _) => Some(at + DRAIN),
            (None, Some((_, at)), None) => Some(at + args.grace),
            (None, _, Some(at)) if !killed => Some(at + KILL_AFTER),
            _ => None,
        };
        let event = match due {
            Some(due) => receive.recv_timeout(due.saturating_duration_since(now)),
            None => receive.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match event {
            Ok(Event::MasterStatus(code)) => {
                master.get_or_insert((code, Instant::now()));
            }
            Ok(Event::StderrClosed) => stderr_open = false,
            Ok(Event::Exited(status)) => ended = Some((LauncherEnd::of(status), Instant::now())),
            Ok(Event::Signal(number)) => {
                signal.get_or_insert(number);
                if let Some(forward) = rustix::process::Signal::from_named_raw(number) {
                    signal_group(forward);
                    for rank in local_ranks(group) {
                        let _ = rustix::process::kill_process(rank, forward);
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                if ended.is_some() {
                    continue;
                }
                if terminated.is_none() {
                    let code = master.map_or(0, |(code, _)| code);
                    say(&format!(
                        "the master exited with status {code}, and the launcher is still \
                         running {:.1} s later: SIGTERM to its process group",
                        args.grace.as_secs_f64()
                    ));
                    signal_group(rustix::process::Signal::TERM);
                    terminated = Some(Instant::now());
                } else if !killed {
                    say(&format!(
                        "the launcher ignored SIGTERM for {} s: SIGKILL to its process group",
                        KILL_AFTER.as_secs()
                    ));
                    signal_group(rustix::process::Signal::KILL);
                    killed = true;
                }
            }
            // Every sender gone: the launcher ended and its output was copied.
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    signals.close();
    let launcher = ended.map_or(LauncherEnd::Exited(1), |(end, _)| end);
    let decision = decide(master.map(|(code, _)| code), signal, launcher);
    if let Some((error, help)) = &decision.error {
        say(&format!("error: {error}"));
        say(&format!("help: {help}"));
    }
    decision.status
}

/// The ranks the launcher started on this node, to be signalled directly: mpirun puts them in
/// process groups of their own and passes a Ctrl-C on to them as SIGTERM only a second later
/// (Open MPI 4.1), hydra through its proxies; signalled at once, the master ends the run
/// within the second. They are the launcher's descendants whose environment names an MPI
/// rank: each rank's program and what it runs, as a Ctrl-C in a terminal reaches a program and
/// its children. The launcher's daemons (orted, prted, hydra's proxies) carry no rank and are
/// left to it; ranks on other nodes get the signal from the launcher.
fn local_ranks(launcher: Option<rustix::process::Pid>) -> Vec<rustix::process::Pid> {
    let Some(launcher) = launcher else {
        return Vec::new();
    };
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok());
        if let Some((pid, parent)) = pid.and_then(|pid| Some((pid, parent_of(pid)?))) {
            children.entry(parent).or_default().push(pid);
        }
    }
    let mut ranks = Vec::new();
    let mut todo = vec![launcher.as_raw_nonzero().get()];
    while let Some(pid) = todo.pop() {
        for &child in children.get(&pid).into_iter().flatten() {
            if names_a_rank(child) {
                ranks.extend(rustix::process::Pid::from_raw(child));
            }
            todo.push(child);
        }
    }
    ranks
}

/// The parent of process `pid`, from `/proc/PID/stat` (the field after the state, which
/// follows the command name in brackets, itself free to hold spaces and brackets).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// Whether process `pid`'s environment names its rank in an MPI job: Open MPI's, PMI's
/// (MPICH, Intel MPI) or PMIx's variable.
fn names_a_rank(pid: i32) -> bool {
    let Ok(environment) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    environment.split(|&b| b == 0).any(|variable| {
        ["OMPI_COMM_WORLD_RANK=", "PMI_RANK=", "PMIX_RANK="]
            .iter()
            .any(|name| variable.starts_with(name.as_bytes()))
    })
}

/// Reports the master's status once its line is whole in `path` (it ends with a newline),
/// looking every 100 ms until then; the thread ends with the process.
fn watch_status_file(path: &std::path::Path, events: &Sender<Event>) {
    loop {
        let line = std::fs::read(path).unwrap_or_default();
        if let Some(code) = master_status(&line).filter(|_| line.ends_with(b"\n")) {
            let _ = events.send(Event::MasterStatus(code));
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Copies the launcher's standard error to ours line by line, reporting the master's status.
fn copy_stderr(stderr: impl Read, events: &Sender<Event>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        {
            let mut out = std::io::stderr().lock();
            let _ = out.write_all(&line);
            let _ = out.flush();
        }
        if let Some(code) = master_status(&line) {
            let _ = events.send(Event::MasterStatus(code));
        }
    }
    let _ = events.send(Event::StderrClosed);
}

/// Passes SIGINT, SIGTERM and SIGHUP to the main loop.
fn watch_signals(events: Sender<Event>) -> std::io::Result<signal_hook::iterator::Handle> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    let handle = signals.handle();
    std::thread::spawn(move || {
        for signal in signals.forever() {
            if events.send(Event::Signal(signal)).is_err() {
                break;
            }
        }
    });
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_is_found_as_the_runtime_writes_it() {
        assert_eq!(master_status(b"mw: exit status 0 (completed)\n"), Some(0));
        assert_eq!(
            master_status(b"mw: exit status 143 (interrupted by SIGTERM)\n"),
            Some(143)
        );
        assert_eq!(master_status(b"mw: exit status 7\n"), Some(7));
        assert_eq!(master_status(b"mw: exit status 7"), Some(7));
        assert_eq!(master_status(b"mw: exit status 1\r\n"), Some(1));
        // `mpirun --tag-output`
        assert_eq!(
            master_status(b"[1,0]<stderr>:mw: exit status 3 (failed)\n"),
            Some(3)
        );
    }

    #[test]
    fn other_lines_are_not_taken_for_it() {
        assert_eq!(master_status(b"mw: exit status\n"), None);
        assert_eq!(master_status(b"mw: exit status x\n"), None);
        assert_eq!(master_status(b"mw: exit status 256\n"), None);
        assert_eq!(master_status(b"mw: exit status 1000\n"), None);
        assert_eq!(master_status(b"mw: exit status 12a\n"), None);
        assert_eq!(
            master_status(b"mw: interrupted by SIGINT after 3 iterations\n"),
            None
        );
        assert_eq!(master_status(b"\xff\xfe garbage\n"), None);
    }

    #[test]
    fn the_master_s_status_wins() {
        let launcher = LauncherEnd::Killed(9);
        assert_eq!(decide(Some(0), None, launcher).status, 0);
        assert_eq!(decide(Some(3), Some(15), LauncherEnd::Exited(0)).status, 3);
        assert_eq!(decide(Some(130), Some(2), launcher).status, 130);
        assert_eq!(decide(Some(0), None, launcher).error, None);
    }

    #[test]
    fn a_ctrl_c_the_launcher_passed_on_as_sigterm_is_a_ctrl_c() {
        let launcher = LauncherEnd::Exited(1);
        assert_eq!(decide(Some(143), Some(2), launcher).status, 130);
        assert_eq!(decide(Some(143), Some(15), launcher).status, 143);
        assert_eq!(decide(Some(143), None, launcher).status, 143);
        // A run that completed, or failed, before the signal reached it says so.
        assert_eq!(decide(Some(0), Some(2), launcher).status, 0);
        assert_eq!(decide(Some(1), Some(2), launcher).status, 1);
    }

    #[test]
    fn without_it_a_signal_to_the_wrapper_gives_the_shell_s_status() {
        assert_eq!(decide(None, Some(2), LauncherEnd::Exited(0)).status, 130);
        assert_eq!(decide(None, Some(15), LauncherEnd::Exited(1)).status, 143);
        assert_eq!(decide(None, Some(1), LauncherEnd::Killed(9)).status, 129);
    }

    #[test]
    fn then_the_launcher_s_status_when_it_is_not_zero() {
        assert_eq!(decide(None, None, LauncherEnd::Exited(137)).status, 137);
        assert_eq!(decide(None, None, LauncherEnd::Exited(2)).status, 2);
        assert_eq!(decide(None, None, LauncherEnd::Killed(9)).status, 137);
        assert_eq!(decide(None, None, LauncherEnd::Exited(256 + 5)).status, 5);
    }

    #[test]
    fn a_zero_from_the_launcher_alone_is_not_believed() {
        let decision = decide(None, None, LauncherEnd::Exited(0));
        assert_eq!(decision.status, 1);
        let (error, help) = decision.error.expect("an error is printed");
        assert!(
            error.contains("without reporting its exit status"),
            "{error}"
        );
        assert!(help.contains("mw: exit status"), "{help}");
    }

    #[test]
    fn grace_is_a_number_of_seconds() {
        assert_eq!(parse_grace("5"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_grace("0.5"), Ok(Duration::from_millis(500)));
        assert!(parse_grace("-1").is_err());
        assert!(parse_grace("soon").is_err());
        assert!(parse_grace("inf").is_err());
        assert!(parse_grace("NaN").is_err());
    }
}
