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
//! 2 s later (a stuck `mpirun` ignores SIGTERM). The wrapper does not rely on the master saying
//! it: when the master's process on this node (rank 0 among the launcher's descendants) has
//! ended without a status, the launcher has the same `--grace` seconds, then is ended the same
//! way (an MPI library may end the master with `_exit`, which runs no exit handler, and leave
//! the launcher waiting for a job it will never end: Open MPI 5 across nodes). The wrapper
//! exits with, in order: the master's status (but the wrapper's own
//! signal, 130/143/129, when the master was interrupted: mpirun passes a Ctrl-C on to the ranks
//! as SIGTERM); 130/143/129 when the wrapper itself got SIGINT/SIGTERM/SIGHUP; 1 when it ended
//! a launcher left running after the master ended without a status; the launcher's status when
//! it is not 0; else 1.

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
sets and watches, for a launcher that stops passing the master's output on. When the master \
runs on this node and its process ends without a status (an MPI library that ended it with \
`_exit`, a kill), a launcher still running --grace seconds later is ended the same way. \
Standard output passes through untouched; standard error is copied line by line; \
SIGINT, SIGTERM and SIGHUP are passed on to the launcher, and at once to the ranks it started \
on this node (mpirun passes a Ctrl-C on to them only a second later).

Exit status: the master's (130, 143 or 129 for the signal the wrapper got, when the master was \
interrupted: mpirun passes a Ctrl-C on as SIGTERM); else 130, 143 or 129 if the wrapper got \
SIGINT, SIGTERM or SIGHUP; else 1 if the master's process ended without a status and the \
launcher had to be ended; else the launcher's if not 0; else 1 (the master did not say its \
status). 127 when the launcher \
cannot be found, 126 when it cannot be started.

Example: mwgen launch -- mpirun --mca orte_enable_recovery 1 -np 5 target/release/app";

/// Arguments of `mwgen launch`.
#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// Seconds the launcher has to exit once the master has said its exit status, or once the
    /// master's process on this node has ended without saying it
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

/// The wrapper's exit status: see the module's documentation. `abandoned`: the master's
/// process ended without a status and the wrapper ended the launcher, which was still running.
pub(crate) fn decide(
    master: Option<u8>,
    signal: Option<i32>,
    abandoned: bool,
    launcher: LauncherEnd,
) -> Decision {
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
    if abandoned {
        // The launcher's status is that of the signals the wrapper sent it.
        return Decision {
            status: 1,
            error: Some((
                "the master ended without reporting its exit status, and the launcher did not \
                 end the job: mwgen launch ended it"
                    .into(),
                "the master was killed, or its MPI library ended it without running its exit \
                 handlers (Open MPI 5 does when a peer's connection breaks: `MPI_ERRORS_ARE_FATAL` \
                 above); look above for how it ended"
                    .into(),
            )),
        };
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
    /// The master's process on this node ended (its pid).
    MasterGone(i32),
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
    if let Some(launcher) = group {
        let events = events.clone();
        std::thread::spawn(move || watch_master(launcher.as_raw_nonzero().get(), &events));
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
    // The master's process on this node ended (pid, when), and whether the launcher was ended
    // because it had said no status by the end of the grace.
    let mut master_gone: Option<(i32, Instant)> = None;
    let mut abandoned = false;
    loop {
        let now = Instant::now();
        if let Some((_, at)) = ended {
            if !stderr_open || now >= at + DRAIN {
                break;
            }
        }
        // The next thing due: the end of the grace (after the master's status, or after its
        // process ended without one), of SIGTERM's time, of the drain.
        let due = match (ended, master, terminated) {
            (Some((_, at)), _, _) => Some(at + DRAIN),
            (None, _, Some(at)) => (!killed).then_some(at + KILL_AFTER),
            (None, Some((_, at)), None) => Some(at + args.grace),
            (None, None, None) => master_gone.map(|(_, at)| at + args.grace),
        };
        let event = match due {
            Some(due) => receive.recv_timeout(due.saturating_duration_since(now)),
            None => receive.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match event {
            Ok(Event::MasterStatus(code)) => {
                master.get_or_insert((code, Instant::now()));
            }
            Ok(Event::MasterGone(pid)) => {
                master_gone.get_or_insert((pid, Instant::now()));
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
                    let grace = args.grace.as_secs_f64();
                    match (master, master_gone) {
                        (Some((code, _)), _) => say(&format!(
                            "the master exited with status {code}, and the launcher is still \
                             running {grace:.1} s later: SIGTERM to its process group"
                        )),
                        (None, pid) => {
                            let pid = pid.map_or(0, |(pid, _)| pid);
                            say(&format!(
                                "the master (rank 0, pid {pid}) ended without saying its exit \
                                 status, and the launcher is still running {grace:.1} s later: \
                                 SIGTERM to its process group"
                            ));
                            abandoned = true;
                        }
                    }
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
    let decision = decide(master.map(|(code, _)| code), signal, abandoned, launcher);
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
    descendants(launcher.as_raw_nonzero().get())
        .into_iter()
        .filter(|&pid| environment(pid).is_some_and(|env| mpi_rank(&env).is_some()))
        .filter_map(rustix::process::Pid::from_raw)
        .collect()
}

/// The processes below `launcher`, at any depth. Where the launcher starts its ranks through
/// daemons (orted, prted, hydra's proxies; on this node, or in the network namespaces of a
/// cluster in a box), the ranks are below the daemons.
fn descendants(launcher: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok());
        if let Some((pid, parent)) = pid.and_then(|pid| Some((pid, Stat::of(pid)?.parent))) {
            children.entry(parent).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut todo = vec![launcher];
    while let Some(pid) = todo.pop() {
        for &child in children.get(&pid).into_iter().flatten() {
            found.push(child);
            todo.push(child);
        }
    }
    found
}

/// What `/proc/PID/stat` says of a process that `mwgen launch` needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    parent: i32,
    /// Ended, its parent yet to reap it (a zombie), or being torn down.
    ended: bool,
    /// When it started, in clock ticks since boot: with the pid, who it is (pids are reused).
    start: u64,
}

impl Stat {
    fn of(pid: i32) -> Option<Stat> {
        Stat::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// The fields after the command name in brackets (itself free to hold spaces and
    /// brackets): the state, the parent, ..., the start time (the 22nd field of the line).
    fn parse(stat: &str) -> Option<Stat> {
        let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
        Some(Stat {
            ended: matches!(*fields.first()?, "Z" | "X" | "x"),
            parent: fields.get(1)?.parse().ok()?,
            start: fields.get(19)?.parse().ok()?,
        })
    }
}

/// The environment process `pid` was started with, `NAME=value` entries split by NULs.
fn environment(pid: i32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/environ")).ok()
}

/// The MPI rank an environment names: Open MPI's, PMI's (MPICH, Intel MPI) or PMIx's variable.
fn mpi_rank(environment: &[u8]) -> Option<u32> {
    environment.split(|&b| b == 0).find_map(|variable| {
        ["OMPI_COMM_WORLD_RANK=", "PMI_RANK=", "PMIX_RANK="]
            .iter()
            .find_map(|name| variable.strip_prefix(name.as_bytes()))
            .and_then(|value| std::str::from_utf8(value).ok()?.parse().ok())
    })
}

/// Whether an environment is the master's: rank 0, and not a spawned worker (rank 0 of the job
/// MPI spawned it in; mw-runtime's `MW_SPAWNED_WORKER` says so).
fn is_master(environment: &[u8]) -> bool {
    let spawned = environment
        .split(|&b| b == 0)
        .any(|variable| variable.starts_with(b"MW_SPAWNED_WORKER="));
    mpi_rank(environment) == Some(0) && !spawned
}

/// Reports when the master's process on this node has ended: looks for it among the
/// launcher's descendants (every 100 ms at first, then less often, up to every 2 s: it may run
/// on another node, and then is never found), then watches it, and what it started with its
/// rank (a shell around the program), every 100 ms until all have ended. The thread ends with
/// the process.
fn watch_master(launcher: i32, events: &Sender<Event>) {
    let mut pause = Duration::from_millis(100);
    let master: Vec<(i32, Stat)> = loop {
        let found: Vec<(i32, Stat)> = descendants(launcher)
            .into_iter()
            .filter(|&pid| environment(pid).is_some_and(|env| is_master(&env)))
            .filter_map(|pid| Some((pid, Stat::of(pid).filter(|stat| !stat.ended)?)))
            .collect();
        if !found.is_empty() {
            break found;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_secs(2));
    };
    let alive = |&(pid, stat): &(i32, Stat)| {
        Stat::of(pid).is_some_and(|now| !now.ended && now.start == stat.start)
    };
    while master.iter().any(alive) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = events.send(Event::MasterGone(master[0].0));
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
        assert_eq!(decide(Some(0), None, false, launcher).status, 0);
        assert_eq!(
            decide(Some(3), Some(15), false, LauncherEnd::Exited(0)).status,
            3
        );
        assert_eq!(decide(Some(130), Some(2), false, launcher).status, 130);
        assert_eq!(decide(Some(0), None, false, launcher).error, None);
    }

    #[test]
    fn a_ctrl_c_the_launcher_passed_on_as_sigterm_is_a_ctrl_c() {
        let launcher = LauncherEnd::Exited(1);
        assert_eq!(decide(Some(143), Some(2), false, launcher).status, 130);
        assert_eq!(decide(Some(143), Some(15), false, launcher).status, 143);
        assert_eq!(decide(Some(143), None, false, launcher).status, 143);
        // A run that completed, or failed, before the signal reached it says so.
        assert_eq!(decide(Some(0), Some(2), false, launcher).status, 0);
        assert_eq!(decide(Some(1), Some(2), false, launcher).status, 1);
    }

    #[test]
    fn without_it_a_signal_to_the_wrapper_gives_the_shell_s_status() {
        assert_eq!(
            decide(None, Some(2), false, LauncherEnd::Exited(0)).status,
            130
        );
        assert_eq!(
            decide(None, Some(15), false, LauncherEnd::Exited(1)).status,
            143
        );
        assert_eq!(
            decide(None, Some(1), false, LauncherEnd::Killed(9)).status,
            129
        );
    }

    #[test]
    fn then_the_launcher_s_status_when_it_is_not_zero() {
        assert_eq!(
            decide(None, None, false, LauncherEnd::Exited(137)).status,
            137
        );
        assert_eq!(decide(None, None, false, LauncherEnd::Exited(2)).status, 2);
        assert_eq!(
            decide(None, None, false, LauncherEnd::Killed(9)).status,
            137
        );
        assert_eq!(
            decide(None, None, false, LauncherEnd::Exited(256 + 5)).status,
            5
        );
    }

    #[test]
    fn a_zero_from_the_launcher_alone_is_not_believed() {
        let decision = decide(None, None, false, LauncherEnd::Exited(0));
        assert_eq!(decision.status, 1);
        let (error, help) = decision.error.expect("an error is printed");
        assert!(
            error.contains("without reporting its exit status"),
            "{error}"
        );
        assert!(help.contains("mw: exit status"), "{help}");
    }

    #[test]
    fn a_launcher_ended_after_a_silent_master_is_a_failure() {
        // Whatever the launcher then said: its status is that of the signals it was sent.
        for launcher in [LauncherEnd::Exited(0), LauncherEnd::Killed(15)] {
            let decision = decide(None, None, true, launcher);
            assert_eq!(decision.status, 1);
            let (error, help) = decision.error.expect("an error is printed");
            assert!(error.contains("mwgen launch ended it"), "{error}");
            assert!(help.contains("MPI_ERRORS_ARE_FATAL"), "{help}");
        }
        // A status that came after all, or a signal to the wrapper, still wins.
        assert_eq!(
            decide(Some(0), None, true, LauncherEnd::Killed(9)).status,
            0
        );
        assert_eq!(
            decide(None, Some(2), true, LauncherEnd::Killed(9)).status,
            130
        );
    }

    #[test]
    fn the_rank_is_read_from_each_library_s_variable() {
        assert_eq!(mpi_rank(b"PATH=/bin\0OMPI_COMM_WORLD_RANK=3\0"), Some(3));
        assert_eq!(mpi_rank(b"PMI_RANK=0"), Some(0));
        assert_eq!(mpi_rank(b"HOME=/\0PMIX_RANK=12\0"), Some(12));
        assert_eq!(mpi_rank(b"PATH=/bin\0OMPI_COMM_WORLD_SIZE=3\0"), None);
        assert_eq!(mpi_rank(b"XPMI_RANK=0\0"), None);
        assert_eq!(mpi_rank(b"PMI_RANK=x\0"), None);
    }

    #[test]
    fn the_master_is_rank_0_but_not_a_spawned_worker() {
        assert!(is_master(b"OMPI_COMM_WORLD_RANK=0\0PATH=/bin\0"));
        assert!(!is_master(b"OMPI_COMM_WORLD_RANK=1\0"));
        assert!(!is_master(b"PATH=/bin\0"));
        // MPI_Comm_spawn starts a job of its own, in which the spawned worker is rank 0.
        assert!(!is_master(
            b"OMPI_COMM_WORLD_RANK=0\0MW_SPAWNED_WORKER=1,4,10.0.0.1:5000\0"
        ));
    }

    #[test]
    fn stat_lines_are_read_past_a_command_name_with_brackets_and_spaces() {
        let line = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 100 0 0 0";
        assert_eq!(
            Stat::parse(line),
            Some(Stat {
                parent: 17,
                ended: false,
                start: 987_654
            })
        );
        let zombie = "7 (x) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0";
        assert_eq!(Stat::parse(zombie).map(|s| s.ended), Some(true));
        assert_eq!(Stat::parse("7 (x) S 1"), None);
    }

    #[test]
    fn this_process_is_found_below_its_parent() {
        let me = std::process::id() as i32;
        let stat = Stat::of(me).expect("this process has a stat");
        assert!(!stat.ended);
        assert!(descendants(stat.parent).contains(&me));
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
