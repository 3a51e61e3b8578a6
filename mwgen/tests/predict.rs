//! `mwgen predict` as a user runs it: its JSON contract and its refusals.

use std::path::Path;

use assert_cmd::Command;
use assert_cmd::cargo::cargo_bin_cmd;
use mw_runtime::RunMetrics;
use mw_runtime::metrics::IterationMetrics;
use serde_json::Value;

fn mwgen() -> Command {
    cargo_bin_cmd!("mwgen")
}

/// A pilot of `iterations` iterations of 400 tasks of 1 ms ± 0.3 on 4 workers under `daf`.
fn pilot(iterations: usize) -> RunMetrics {
    let its: Vec<IterationMetrics> = (0..iterations)
        .map(|index| IterationMetrics {
            index,
            workers: 4,
            factor: 0.5,
            policy: "daf".to_string(),
            tasks: 400,
            chunks: 40,
            time_ms: 101.0,
            tc_ms: 400.0,
            lm_ms: 0.2,
            bytes_to_workers: 6400,
            bytes_from_workers: 3200,
            busy_ms: vec![100.0; 4],
            task_mean_ms: 1.0,
            task_stddev_ms: 0.3,
            worker_task_mean_ms: vec![1.0; 4],
            worker_task_stddev_ms: vec![0.3; 4],
            mo_ms: Some(0.05),
            k_ms_per_byte: Some(1e-5),
            ..IterationMetrics::default()
        })
        .collect();
    RunMetrics {
        app: "synthetic".to_string(),
        backend: "mpi".to_string(),
        pool: 4,
        protocol: "async".to_string(),
        total_ms: 101.0 * iterations as f64 + 10.0,
        iterations: its,
        decisions: Vec::new(),
        failures: Vec::new(),
        objective: "time".to_string(),
        objective_reason: "parked MPI ranks keep their allocation".to_string(),
        interrupted: None,
        command: Vec::new(),
    }
}

fn write(dir: &Path, name: &str, metrics: &RunMetrics) -> String {
    let path = dir.join(name);
    metrics.write(&path).expect("the pilot is written");
    path.display().to_string()
}

fn stderr(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

#[test]
fn json_holds_the_total_time_of_each_count_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "pilot.json", &pilot(3));
    let svg = dir.path().join("predict.svg");
    let assert = mwgen()
        .args(["predict", "--metrics", &path, "--workers", "2,4,8"])
        .args(["--iterations", "100", "--json", "--plot"])
        .arg(&svg)
        .assert()
        .success();
    let json: Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    let rows = json["rows"].as_array().unwrap();
    let workers: Vec<u64> = rows
        .iter()
        .map(|r| r["workers"].as_u64().unwrap())
        .collect();
    assert_eq!(workers, [2, 4, 8]);
    for r in rows {
        let total = r["total_ms"].as_f64().unwrap();
        // 100 iterations of 400 ms of work over n workers, and some overhead on top.
        let work = 100.0 * 400.0 / r["workers"].as_f64().unwrap();
        assert!(total > work && total < 1.2 * work, "{r}");
    }
    assert_eq!(json["best_time"], 8);
    assert!(
        json["sbatch"]["line"]
            .as_str()
            .unwrap()
            .starts_with("sbatch --nodes=1 --ntasks=")
    );
    assert!(json["uncertainty"].as_f64().unwrap() >= 0.1);
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.contains("<svg") && plot.contains("worker-hours"));
}

#[test]
fn the_table_names_the_choices_and_the_caveats() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "pilot.json", &pilot(1));
    let assert = mwgen()
        .args([
            "predict",
            "--metrics",
            &path,
            "--workers",
            "1..64",
            "--tasks",
            "4000",
        ])
        .args([
            "--policy",
            "fsc",
            "--link-latency",
            "0.1",
            "--link-bandwidth",
            "100",
        ])
        .assert()
        .success();
    let out = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    for expected in [
        "fastest:",
        "cheapest:",
        "MCMC:",
        "master:",
        "sbatch:     sbatch --nodes=",
        "caveat: the pilot ran `daf`, not `fsc`",
        "caveat: the pilot finished one iteration",
        "k = 8.000e-5 ms/B",
    ] {
        assert!(out.contains(expected), "no `{expected}` in:\n{out}");
    }
}

#[test]
fn a_truncated_file_is_refused_with_advice() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "pilot.json", &pilot(3));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    let assert = mwgen()
        .args(["predict", "--metrics", &path, "--workers", "8"])
        .assert()
        .code(1);
    let err = stderr(&assert);
    assert!(
        err.starts_with("error: `") && err.contains("is not a metrics file"),
        "{err}"
    );
    assert!(err.contains("help: the file ends early"), "{err}");
}

#[test]
fn metrics_of_another_version_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.json");
    std::fs::write(
        &path,
        r#"{"app": "x", "backend": "local", "pool": 2, "protocol": "async", "total_ms": 5,
            "iterations": [{"index": 0, "workers": 2, "time_ms": 4}]}"#,
    )
    .unwrap();
    let assert = mwgen()
        .args(["predict", "--metrics"])
        .arg(&path)
        .assert()
        .code(1);
    let err = stderr(&assert);
    assert!(err.contains("missing field"), "{err}");
    assert!(
        err.contains("help: predict reads the metrics of mw-runtime"),
        "{err}"
    );
}

#[test]
fn a_pilot_that_finished_no_iteration_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "pilot.json", &pilot(0));
    let assert = mwgen()
        .args(["predict", "--metrics", &path])
        .assert()
        .code(1);
    let err = stderr(&assert);
    assert!(
        err.contains("finished no iteration") && err.contains("help: run the pilot"),
        "{err}"
    );
}

#[test]
fn a_policy_this_build_cannot_simulate_is_refused_unless_replaced() {
    // A program's own policy, recorded by its name.
    let dir = tempfile::tempdir().unwrap();
    let mut m = pilot(3);
    for it in &mut m.iterations {
        it.policy = "my-own".to_string();
    }
    let path = write(dir.path(), "pilot.json", &m);
    let assert = mwgen()
        .args(["predict", "--metrics", &path, "--workers", "8"])
        .assert()
        .code(1);
    let err = stderr(&assert);
    assert!(
        err.contains("`my-own`") && err.contains("help: give --policy"),
        "{err}"
    );
    mwgen()
        .args([
            "predict",
            "--metrics",
            &path,
            "--workers",
            "8",
            "--policy",
            "daf",
        ])
        .assert()
        .success();
}

#[test]
fn bad_flags_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "pilot.json", &pilot(3));
    for (flag, value) in [
        ("--workers", "0"),
        ("--workers", "8..2"),
        ("--iterations", "-4"),
        ("--tasks", "0"),
        ("--link-bandwidth", "0"),
        ("--link-latency", "-1"),
        ("--policy", "fastest"),
        ("--load", "variable:0"),
    ] {
        let assert = mwgen()
            .args(["predict", "--metrics", &path, flag, value])
            .assert()
            .code(2);
        let err = stderr(&assert);
        assert!(
            err.starts_with("error: invalid value") && err.contains("\nhelp: "),
            "{flag} {value}: {err}"
        );
    }
}

#[test]
fn a_load_is_predicted_with_its_caveat() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "pilot.json", &pilot(3));
    let assert = mwgen()
        .args([
            "predict",
            "--metrics",
            &path,
            "--workers",
            "4",
            "--iterations",
            "32",
            "--load",
            "variable",
        ])
        .assert()
        .success();
    let out = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    for expected in [
        "the load slows some workers",
        "caveat: the load is emulated from its pattern",
        "caveat: the load slows workers up to 4.0x",
    ] {
        assert!(out.contains(expected), "no `{expected}` in:\n{out}");
    }
}

#[test]
fn devices_pipes_and_traces_are_refused_at_once_and_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let trace = dir.path().join("trace.json");
    std::fs::write(&trace, "{\"traceEvents\":[]}").unwrap();
    let cases = [
        (
            Path::new("/dev/zero"),
            "error: cannot read the metrics `/dev/zero`: it is a character device, not a regular \
             file\nhelp: ",
        ),
        (
            fifo.as_path(),
            "it is a pipe (FIFO), not a regular file\nhelp: ",
        ),
        (
            trace.as_path(),
            "is a trace, not a metrics file\nhelp: give the metrics",
        ),
    ];
    for (path, says) in cases {
        let assert = mwgen()
            .arg("predict")
            .arg("--metrics")
            .arg(path)
            .args(["--workers", "4", "--iterations", "10"])
            .timeout(std::time::Duration::from_secs(5))
            .assert()
            .failure();
        let err = stderr(&assert);
        assert!(err.contains(says), "{}: {err}", path.display());
    }
}
