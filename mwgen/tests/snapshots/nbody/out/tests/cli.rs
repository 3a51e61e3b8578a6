//! The Master/Worker run is bit-identical to the sequential loop (and to rayon's) for any worker
//! count, policy and protocol.
#![allow(clippy::unwrap_used)]

use assert_cmd::Command;

fn run(dir: &std::path::Path, name: &str, args: &[&str]) -> String {
    let out = dir.join(name);
    Command::cargo_bin("gravity")
        .unwrap()
        .args([
            "--bodies",
            "150",
            "--steps",
            "4",
            "--seed",
            "7",
            "--task-bodies",
            "7",
        ])
        .args(["--backend", "local"])
        .arg("--out")
        .arg(&out)
        .args(args)
        .assert()
        .success();
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn every_configuration_gives_the_sequential_result() {
    let dir = tempfile::tempdir().unwrap();
    let reference = run(dir.path(), "seq.csv", &["--mode", "seq"]);
    assert_eq!(reference.lines().count(), 150);
    assert!(reference.starts_with("0,"), "{reference}");
    let rayon = run(
        dir.path(),
        "rayon.csv",
        &["--mode", "rayon", "--workers", "3"],
    );
    assert!(rayon == reference, "rayon differs from the sequential run");
    let configurations: &[&[&str]] = &[
        &["--workers", "1", "--policy", "static"],
        &[
            "--workers",
            "3",
            "--policy",
            "fsc",
            "--factor",
            "0.2",
            "--protocol",
            "sync",
        ],
        &["--workers", "4", "--policy", "factoring"],
        &["--workers", "2", "--policy", "dpf", "--factor", "0.9"],
        &["--workers", "5", "--policy", "daf", "--protocol", "async"],
    ];
    for (i, args) in configurations.iter().enumerate() {
        let result = run(dir.path(), &format!("mw{i}.csv"), args);
        assert!(
            result == reference,
            "{args:?} differs from the sequential run"
        );
    }
}

#[test]
fn both_mode_checks_and_reports_speedup() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("both.csv");
    let assert = Command::cargo_bin("gravity")
        .unwrap()
        .args([
            "--bodies",
            "64",
            "--steps",
            "3",
            "--mode",
            "both",
            "--workers",
            "2",
            "--backend",
            "local",
        ])
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("speedup") && stderr.contains("bit-identical"),
        "{stderr}"
    );
}

/// The number before `unit` in the line that starts with `prefix`.
fn number_before(text: &str, prefix: &str, unit: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix) && l.contains(unit))
        .unwrap();
    let before = &line[..line.find(unit).unwrap()];
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn master_worker_time_is_the_summary_time() {
    let assert = Command::cargo_bin("gravity")
        .unwrap()
        .args(["--bodies", "64", "--steps", "3", "--mode", "both"])
        .args(["--workers", "2", "--backend", "local"])
        .assert()
        .success();
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    // `mw: gravity finished in 12 ms: ...` (whole ms below a second) and
    // `master/worker: ... in 12.3 ms on 2 workers (the runtime's time, ...`.
    let summary = number_before(&stderr, "mw: gravity finished in ", " ms:");
    let ours = number_before(&stderr, "master/worker: ", " ms on ");
    assert!((summary - ours).abs() <= 0.5, "{stderr}");
    assert!(stderr.contains("the runtime's time"), "{stderr}");
}

#[test]
fn all_mode_compares_with_rayon() {
    let assert = Command::cargo_bin("gravity")
        .unwrap()
        .args(["--bodies", "64", "--steps", "3", "--mode", "all"])
        .args(["--workers", "2", "--backend", "local"])
        .assert()
        .success();
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("rayon's speed") && stderr.contains("on 2 threads"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("bit-identical").count(), 2, "{stderr}");
}

#[test]
fn bad_flags_are_refused() {
    Command::cargo_bin("gravity")
        .unwrap()
        .args(["--bodies", "0"])
        .assert()
        .failure()
        .code(2);
    Command::cargo_bin("gravity")
        .unwrap()
        .args(["--factor", "2"])
        .assert()
        .failure()
        .code(2);
    // The rayon run starts a thread per worker: the runtime's limit holds there too.
    let assert = Command::cargo_bin("gravity")
        .unwrap()
        .args(["--mode", "rayon", "--workers", "100000", "--bodies", "10"])
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains("`workers` = 100000 is more than 4096 workers") && stderr.contains("help:"),
        "{stderr}"
    );
}

#[test]
fn an_out_file_in_a_missing_directory_is_refused_before_the_run() {
    let assert = Command::cargo_bin("gravity")
        .unwrap()
        .args(["--bodies", "50", "--steps", "2", "--backend", "local"])
        .args(["--out", "/nonexistent-directory/final.csv"])
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains("cannot write `/nonexistent-directory/final.csv` (--out)")
            && stderr.contains("help: the directory `/nonexistent-directory` does not exist"),
        "{stderr}"
    );
}
