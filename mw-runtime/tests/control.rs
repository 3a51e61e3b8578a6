//! The control endpoint against other users and floods: a token only the run's user can read,
//! a Unix socket of mode 0600 whatever the umask, bounded request lines and connections, and
//! `set` requests merged between iteration boundaries.
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mw_runtime::prelude::*;
use mw_runtime::tuning::control::{
    AUTH_TIMEOUT, ControlAddr, ControlStream, MAX_CONNECTIONS, MAX_LINE, MAX_UNAUTHENTICATED, Reply,
};
use mw_runtime::{RunConfig, RunMetrics, TuningConfig};

/// Iterations of four 1 ms tasks until told to stop.
struct UntilStopped {
    stop: Arc<AtomicBool>,
}

impl Master for UntilStopped {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        let more = it.index < 20_000 && !self.stop.load(Ordering::SeqCst);
        Work::tasks(if more { vec![1000; 4] } else { Vec::new() })
    }

    fn recover(&mut self, _: TaskId, _: u32) {}
}

#[derive(Default)]
struct Nap;

impl Worker for Nap {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn do_work(&mut self, _: &(), us: &u32) -> u32 {
        std::thread::sleep(Duration::from_micros(u64::from(*us)));
        *us
    }
}

/// A run with its control endpoint at `addr`, stopped by its handle.
struct Program {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<RunMetrics>,
}

impl Program {
    fn start(addr: &ControlAddr) -> Program {
        let stop = Arc::new(AtomicBool::new(false));
        let config = RunConfig {
            workers: Some(1),
            max_workers: Some(4),
            backend: BackendChoice::Local,
            tuning: TuningConfig::off(),
            control: Some(addr.clone()),
            quiet: true,
            ..RunConfig::default()
        };
        let master = UntilStopped {
            stop: Arc::clone(&stop),
        };
        let thread = std::thread::spawn(move || {
            mw_runtime::run_config(&config, || master, Nap::default)
                .unwrap()
                .into_metrics()
                .unwrap()
        });
        Program { stop, thread }
    }

    fn finish(self) -> RunMetrics {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap()
    }
}

/// Connects, with the token, once the endpoint is up.
fn connect(addr: &ControlAddr) -> ControlStream {
    for _ in 0..500 {
        if let Ok(stream) = addr.connect() {
            return stream;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the control endpoint at {addr} never opened");
}

fn refused(reply: Reply, what: &str) {
    match reply {
        Reply::Err { message, help } => {
            assert!(message.contains(what), "{message}");
            assert!(help.is_some(), "no advice with `{message}`");
        }
        Reply::Ok(text) => panic!("accepted: {text}"),
    }
}

/// Whether the endpoint closed the connection (after any lines it had still to send).
fn closed(stream: &mut ControlStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut rest = Vec::new();
    match stream.read_to_end(&mut rest) {
        Ok(_) => true,
        // Closed with bytes of ours unread: reset rather than ended.
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn requests_need_the_runs_token_which_only_its_user_can_read() {
    // Whatever the umask, the socket and the token are the user's alone.
    let before = rustix::process::umask(rustix::fs::Mode::empty());
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("ctl.sock");
    let addr = ControlAddr::Unix(socket.clone());
    let program = Program::start(&addr);
    let mut control = connect(&addr);
    rustix::process::umask(before);
    assert_eq!(mode(&socket), 0o600, "the socket");
    let token = addr.token_path().unwrap();
    assert_eq!(mode(&token), 0o600, "the token");
    assert_eq!(
        mode(token.parent().unwrap()),
        0o700,
        "the token's directory"
    );
    assert!(matches!(control.request("get nworkers").unwrap(), Reply::Ok(n) if n == "1"));

    // Without the token, or with a wrong one, nothing is answered and the connection closes.
    let mut stranger = addr.connect_unauthenticated().unwrap();
    refused(
        stranger.request("set nworkers 2").unwrap(),
        "not authenticated",
    );
    assert!(closed(&mut stranger));
    let mut stranger = addr.connect_unauthenticated().unwrap();
    refused(
        stranger.request("auth 0123456789abcdef").unwrap(),
        "wrong token",
    );
    assert!(closed(&mut stranger));

    // Over TCP too, where any local user can connect.
    let metrics = program.finish();
    assert!(metrics.decisions.is_empty());
    assert!(!socket.exists() && !token.exists(), "left behind");
    let tcp = free_port();
    let program = Program::start(&tcp);
    let _ = connect(&tcp);
    let mut stranger = tcp.connect_unauthenticated().unwrap();
    refused(
        stranger.request("set nworkers 2").unwrap(),
        "not authenticated",
    );
    assert!(program.finish().decisions.is_empty());
}

/// A loopback address with a port nothing listens on (the token's name needs the real port).
fn free_port() -> ControlAddr {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ControlAddr::Tcp(probe.local_addr().unwrap())
}

#[test]
fn a_line_past_the_limit_closes_the_connection_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let addr = ControlAddr::Unix(dir.path().join("ctl.sock"));
    let program = Program::start(&addr);
    let mut control = connect(&addr);
    let mut writer = control.try_clone().unwrap();
    // Bytes without a newline, until the endpoint hangs up (or 64 MB are sent).
    let flood = std::thread::spawn(move || {
        let block = vec![b'x'; MAX_LINE];
        let mut sent = 0;
        while sent < 64 << 20 && writer.write_all(&block).is_ok() {
            sent += block.len();
        }
        sent
    });
    let mut line = String::new();
    BufReader::new(control.try_clone().unwrap())
        .read_line(&mut line)
        .unwrap();
    refused(Reply::parse(&line), "longer than 65536 bytes");
    assert!(closed(&mut control));
    let sent = flood.join().unwrap();
    assert!(
        sent < 16 << 20,
        "the endpoint took {sent} bytes of one line"
    );
    program.finish();
}

#[test]
fn connections_that_never_authenticate_cannot_lock_the_owner_out() {
    let dir = tempfile::tempdir().unwrap();
    let addr = ControlAddr::Unix(dir.path().join("ctl.sock"));
    let program = Program::start(&addr);
    let _ = connect(&addr);
    // Another user holds every place for connections still to authenticate, and opens more
    // as fast as it can; the owner gets in at the first try, every time.
    let mut held = Vec::new();
    for round in 0..6 {
        held.extend((0..2 * MAX_UNAUTHENTICATED).map(|_| addr.connect_unauthenticated().unwrap()));
        let mut owner = addr
            .connect()
            .unwrap_or_else(|e| panic!("round {round}: the owner was kept out: {e}"));
        assert!(matches!(
            owner.request("get nworkers").unwrap(),
            Reply::Ok(_)
        ));
    }
    // A connection that does not authenticate is closed within the second it has.
    let mut idle = addr.connect_unauthenticated().unwrap();
    let started = std::time::Instant::now();
    assert!(closed(&mut idle));
    assert!(
        started.elapsed() < AUTH_TIMEOUT + Duration::from_millis(500),
        "closed after {:?}",
        started.elapsed()
    );
    drop(held);
    program.finish();
}

#[test]
fn authenticated_connections_past_the_limit_are_refused_as_busy() {
    let dir = tempfile::tempdir().unwrap();
    let addr = ControlAddr::Unix(dir.path().join("ctl.sock"));
    let program = Program::start(&addr);
    let held: Vec<ControlStream> = (0..MAX_CONNECTIONS).map(|_| connect(&addr)).collect();
    let e = addr.connect().unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ResourceBusy, "{e}");
    assert!(e.to_string().contains("8 connections at once"), "{e}");
    // One closed makes room.
    drop(held);
    let mut control = connect(&addr);
    assert!(matches!(control.request("get").unwrap(), Reply::Ok(_)));
    program.finish();
}

#[test]
fn a_flood_of_sets_makes_one_decision_per_tunable_and_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let addr = ControlAddr::Unix(dir.path().join("ctl.sock"));
    let program = Program::start(&addr);
    let control = connect(&addr);
    let mut writer = control.try_clone().unwrap();
    const SETS: usize = 20_000;
    let sender = std::thread::spawn(move || {
        for i in 0..SETS {
            writeln!(writer, "set nworkers {}", 1 + i % 4).unwrap();
        }
    });
    let mut replies = BufReader::new(control);
    for _ in 0..SETS {
        let mut line = String::new();
        replies.read_line(&mut line).unwrap();
        assert!(line.starts_with("ok nworkers = "), "{line}");
    }
    sender.join().unwrap();
    // The last value set wins: the 20,000th set is nworkers = 4.
    let mut control = connect(&addr);
    for _ in 0..500 {
        if control.request("get nworkers").unwrap() == Reply::Ok("4".into()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let metrics = program.finish();
    let decisions = metrics.decisions.len();
    assert!(
        decisions <= metrics.iterations.len(),
        "{decisions} decisions in {} iterations",
        metrics.iterations.len()
    );
    assert_eq!(metrics.iterations.last().unwrap().workers, 4);
}
