//! `--inject` and `--load` as a user gives them: faults of workers the run does not have are
//! refused, several faults of one worker strike in turn, and every injected failure is in the
//! metrics, with or without a backtrace printed.

// Test helpers unwrap like the tests they serve.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use assert_cmd::Command;

/// Runs the program on 3 local workers with `args`; its exit status and standard error.
fn synthetic(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let output = Command::cargo_bin("synthetic")
        .unwrap()
        .args(["--workers", "3", "--max-workers", "3", "--backend", "local"])
        .args(["--quiet", "--tuning", "off"])
        .args(args)
        .envs(env.iter().copied())
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The failures of the metrics at `path`: (worker, iteration, message).
fn failures(path: &Path) -> Vec<(u64, u64, String)> {
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    metrics["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["worker"].as_u64().unwrap(),
                f["iteration"].as_u64().unwrap(),
                f["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn faults_and_load_of_workers_the_run_does_not_have_are_refused() {
    let (code, stderr) = synthetic(&["--tasks", "30", "--inject", "panic:1@0,hang:5@1"], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with(
            "error: `--inject hang:5@1` names worker 5, and this run has 3 (workers 0 to 2)\n\
             help: "
        ),
        "{stderr}"
    );
    let (code, stderr) = synthetic(&["--tasks", "30", "--load", "0:1-7:50"], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with(
            "error: `--load 0:1-7:50` names worker 7, and this run has 3 (workers 0 to 2)\nhelp: "
        ),
        "{stderr}"
    );
}

#[test]
fn several_faults_of_one_worker_strike_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = dir.path().join("m.json");
    let (code, stderr) = synthetic(
        &[
            "--tasks",
            "60",
            "--iterations",
            "6",
            "--mean-ms",
            "0.2",
            "--inject",
            "error:1@2,panic:1@0,error:1@0",
            "--metrics",
            metrics.to_str().unwrap(),
        ],
        // Without a backtrace to print, which on a busy machine can outlast this short run
        // (the next test is about those).
        &[("RUST_BACKTRACE", "0")],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let struck: Vec<(u64, u64, bool)> = failures(&metrics)
        .into_iter()
        .map(|(worker, iteration, message)| (worker, iteration, message.contains("panics")))
        .collect();
    // In turn: the panic, then the error of iteration 0, then the one of iteration 2, each on
    // a chunk of worker 1 from its iteration on (usually in it; a later one when the iteration
    // ended before worker 1 had another chunk, as on a busy machine).
    let kinds: Vec<(u64, bool)> = struck.iter().map(|&(w, _, panic)| (w, panic)).collect();
    assert_eq!(kinds, [(1, true), (1, false), (1, false)], "{struck:?}");
    let at: Vec<u64> = struck.iter().map(|&(_, iteration, _)| iteration).collect();
    assert!(at[0] <= at[1] && at[2] >= 2.max(at[1]), "{struck:?}");
}

#[test]
fn every_injected_panic_is_in_the_metrics_with_a_backtrace_printed() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = dir.path().join("m.json");
    // Short tasks: a chunk whose panic prints a backtrace is late, and copied, before the
    // panic's answer comes.
    for run in 0..3 {
        let (code, stderr) = synthetic(
            &[
                "--tasks",
                "2000",
                "--iterations",
                "3",
                "--mean-ms",
                "0.05",
                "--inject",
                "panic:0@1,panic:1@1,panic:2@1",
                "--metrics",
                metrics.to_str().unwrap(),
            ],
            &[("RUST_BACKTRACE", "1")],
        );
        assert_eq!(code, Some(0), "{stderr}");
        let panicked: Vec<u64> = failures(&metrics)
            .into_iter()
            .filter(|(_, _, message)| message.contains("panics in iteration 1"))
            .map(|(worker, ..)| worker)
            .collect();
        assert_eq!(panicked.len(), 3, "run {run}: {panicked:?}");
    }
}
