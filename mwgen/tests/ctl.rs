//! `mwgen ctl` against a program running in this process with `--control`.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use assert_cmd::cargo::cargo_bin_cmd;
use mw_runtime::prelude::*;
use mw_runtime::tuning::control::ControlAddr;
use mw_runtime::{RunConfig, RunMetrics, TuningConfig};

/// Iterations of a few sleeping tasks, until two have run with `nworkers` = 2.
struct Until {
    at_two: usize,
}

impl Master for Until {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        Work::tasks(if it.index < 5000 {
            vec![500; 4]
        } else {
            Vec::new()
        })
    }

    fn recover(&mut self, _: TaskId, _: u32) {}

    fn end_iteration(&mut self, it: &Iteration) -> Flow {
        self.at_two += usize::from(it.workers == 2);
        if self.at_two >= 2 {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }
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

fn mwgen() -> Command {
    cargo_bin_cmd!("mwgen")
}

fn output(assert: &assert_cmd::assert::Assert) -> (String, String) {
    let out = assert.get_output();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn wait_for(socket: &Path) {
    for _ in 0..500 {
        if socket.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the program never opened {}", socket.display());
}

#[test]
fn get_and_set_a_running_programs_tunables() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("ctl.sock");
    let config = RunConfig {
        workers: Some(1),
        max_workers: Some(4),
        backend: BackendChoice::Local,
        tuning: TuningConfig::off(),
        control: Some(ControlAddr::Unix(socket.clone())),
        ..RunConfig::default()
    };
    let program = std::thread::spawn(move || -> RunMetrics {
        mw_runtime::run_config(&config, || Until { at_two: 0 }, Nap::default)
            .unwrap()
            .into_metrics()
            .unwrap()
    });
    wait_for(&socket);
    let sock = socket.to_str().unwrap();
    let mut watcher = std::process::Command::new(assert_cmd::cargo::cargo_bin!("mwgen"))
        .args(["ctl", sock, "watch"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its first line says it is watching: nothing it should see has happened yet.
    let mut watched = BufReader::new(watcher.stdout.take().unwrap());
    let mut first = String::new();
    watched.read_line(&mut first).unwrap();
    assert!(
        first.starts_with("iteration=") && first.contains("nworkers=1"),
        "{first}"
    );

    let (out, _) = output(
        &mwgen()
            .args(["ctl", sock, "get", "nworkers"])
            .assert()
            .success(),
    );
    assert_eq!(out, "1\n");
    let (out, _) = output(&mwgen().args(["ctl", sock, "get"]).assert().success());
    assert!(out.starts_with("nworkers=1 factor=0.5 policy=daf"), "{out}");

    let (_, err) = output(
        &mwgen()
            .args(["ctl", sock, "set", "nworkers", "9"])
            .assert()
            .code(1),
    );
    assert!(
        err.starts_with("error: `nworkers` = 9 is out of range"),
        "{err}"
    );
    assert!(
        err.contains("\nhelp: choose between 1 and the pool of 4 workers"),
        "{err}"
    );
    let (_, err) = output(&mwgen().args(["ctl", sock, "get", "speed"]).assert().code(1));
    assert!(err.contains("error: no tunable is named `speed`"), "{err}");
    assert!(err.contains("help: the tunables are"), "{err}");

    let (out, _) = output(
        &mwgen()
            .args(["ctl", sock, "set", "nworkers", "2"])
            .assert()
            .success(),
    );
    assert_eq!(out, "nworkers = 2 from the next iteration\n");

    let metrics = program.join().unwrap();
    let mut lines = String::new();
    watched.read_to_string(&mut lines).unwrap();
    assert!(watcher.wait().unwrap().success());
    assert!(
        lines
            .lines()
            .any(|l| l.starts_with("iteration=") && l.contains("nworkers=2")),
        "{lines}"
    );
    let external: Vec<_> = metrics
        .decisions
        .iter()
        .filter(|d| d.reason == "external")
        .collect();
    assert_eq!(external.len(), 1);
    assert_eq!(external[0].to, serde_json::json!(2));
    assert!(
        !socket.exists(),
        "the endpoint is removed when the run ends"
    );
}

#[test]
fn unreachable_and_malformed_addresses_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nobody.sock");
    let (_, err) = output(
        &mwgen()
            .args(["ctl", missing.to_str().unwrap(), "get"])
            .assert()
            .code(1),
    );
    assert!(
        err.starts_with("error: cannot connect to the control endpoint"),
        "{err}"
    );
    assert!(
        err.contains("help: is the program running, started with `--control"),
        "{err}"
    );
    let (_, err) = output(&mwgen().args(["ctl", "10.0.0.1:80", "get"]).assert().code(2));
    assert!(err.contains("not a loopback address"), "{err}");
    assert!(err.contains("help:"), "{err}");
}
