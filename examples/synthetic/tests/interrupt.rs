//! SIGINT and SIGTERM stop a run at once: the metrics and trace of what ran are written, the
//! control socket and its token file removed, and the exit status says which signal came.

// Test helpers unwrap like the tests they serve.
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mw::tuning::control::ControlAddr;

/// Starts a run far too long to end by itself, with every output the signal must leave right.
fn start(dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_synthetic"))
        .args(["--tasks", "8", "--mean-ms", "5", "--iterations", "100000"])
        .args(["--workers", "2", "--max-workers", "2", "--backend", "local"])
        .arg("--metrics")
        .arg(dir.join("run.json"))
        .arg("--trace")
        .arg(dir.join("trace.json"))
        .arg("--control")
        .arg(dir.join("ctl.sock"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the control socket is there (the run has started), then a little longer, so
/// that some iterations have ended.
fn wait_until_working(dir: &Path) {
    let socket = dir.join("ctl.sock");
    let started = Instant::now();
    while !socket.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no control socket"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
}

fn send(child: &Child, signal: &str) {
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{signal} failed");
}

/// Sends `signal` to a working run; checks what it leaves.
fn interrupted_by(signal: &str, status: i32) {
    let dir = tempfile::tempdir().unwrap();
    let addr = ControlAddr::Unix(dir.path().join("ctl.sock"));
    let mut child = start(dir.path());
    wait_until_working(dir.path());
    let token = addr.token_path().unwrap();
    assert!(token.exists(), "the run wrote no token");
    let sent = Instant::now();
    send(&child, signal);
    let out = child_output(&mut child);
    let stopped = sent.elapsed();

    assert_eq!(out.0, Some(status), "stderr:\n{}", out.1);
    assert!(
        stopped < Duration::from_secs(5),
        "stopping took {stopped:?}"
    );
    assert!(
        out.1.contains(&format!("interrupted by SIG{signal}")),
        "{}",
        out.1
    );
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap())
            .unwrap();
    assert_eq!(metrics["interrupted"], format!("SIG{signal}"));
    let iterations = metrics["iterations"].as_array().unwrap().len();
    assert!(
        (1..100_000).contains(&iterations),
        "{iterations} iterations"
    );
    assert!(metrics["total_ms"].as_f64().unwrap() > 0.0);
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("trace.json")).unwrap())
            .unwrap();
    assert!(!trace["traceEvents"].as_array().unwrap().is_empty());
    assert!(!dir.path().join("ctl.sock").exists(), "the socket is left");
    assert!(!token.exists(), "the token file is left");
}

/// The exit status and standard error of `child`.
fn child_output(child: &mut Child) -> (Option<i32>, String) {
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    (child.wait().unwrap().code(), stderr)
}

#[test]
fn sigint_writes_what_ran_and_exits_130() {
    interrupted_by("INT", 130);
}

#[test]
fn sigterm_writes_what_ran_and_exits_143() {
    interrupted_by("TERM", 143);
}

#[test]
fn a_second_signal_ends_the_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // Each task takes 5 s: after the first signal the engine waits for nothing, but a worker
    // busy in `do_work` is joined at the end; the second signal does not wait for it.
    let mut child = Command::new(env!("CARGO_BIN_EXE_synthetic"))
        .args([
            "--tasks",
            "2",
            "--mean-ms",
            "5000",
            "--stddev",
            "0",
            "--iterations",
            "10",
        ])
        .args(["--workers", "2", "--max-workers", "2", "--backend", "local"])
        .arg("--control")
        .arg(dir.path().join("ctl.sock"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_working(dir.path());
    let sent = Instant::now();
    send(&child, "INT");
    std::thread::sleep(Duration::from_millis(200));
    send(&child, "INT");
    let (status, stderr) = child_output(&mut child);
    assert_eq!(status, Some(130), "stderr:\n{stderr}");
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "took {:?}",
        sent.elapsed()
    );
}
