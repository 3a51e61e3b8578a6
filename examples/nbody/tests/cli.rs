//! The Master/Worker run is bit-identical to the sequential loop (and to rayon's) for any worker
//! count, policy and protocol.
#![allow(clippy::unwrap_used)]

use assert_cmd::Command;

fn run(dir: &std::path::Path, name: &str, args: &[&str]) -> String {
    let out = dir.join(name);
    Command::cargo_bin("nbody")
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
    let assert = Command::cargo_bin("nbody")
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
    let assert = Command::cargo_bin("nbody")
        .unwrap()
        .args(["--bodies", "64", "--steps", "3", "--mode", "both"])
        .args(["--workers", "2", "--backend", "local"])
        .assert()
        .success();
    let stderr = String::from_utf8(assert.get_output().stderr.clone()).unwrap();
    // `mw: nbody finished in 12 ms: ...` (whole ms below a second) and
    // `master/worker: ... in 12.3 ms on 2 workers (the runtime's time, ...`.
    let summary = number_before(&stderr, "mw: nbody finished in ", " ms:");
    let ours = number_before(&stderr, "master/worker: ", " ms on ");
    assert!((summary - ours).abs() <= 0.5, "{stderr}");
    assert!(stderr.contains("the runtime's time"), "{stderr}");
}

#[test]
fn all_mode_compares_with_rayon() {
    let assert = Command::cargo_bin("nbody")
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
    Command::cargo_bin("nbody")
        .unwrap()
        .args(["--bodies", "0"])
        .assert()
        .failure()
        .code(2);
    Command::cargo_bin("nbody")
        .unwrap()
        .args(["--factor", "2"])
        .assert()
        .failure()
        .code(2);
    // The rayon run starts a thread per worker: the runtime's limit holds there too.
    let assert = Command::cargo_bin("nbody")
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
    let assert = Command::cargo_bin("nbody")
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

/// Runs nbody with `args` (on threads) and returns its status and stderr.
fn nbody(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::cargo_bin("nbody")
        .unwrap()
        .args(["--backend", "local", "--quiet"])
        .args(args)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_checkpoint_that_does_not_fit_the_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ck = dir.path().join("run.ck");
    let ck = ck.to_str().unwrap();
    let out = dir.path().join("final.csv");
    let out = out.to_str().unwrap();
    let (code, stderr) = nbody(&[
        "--bodies",
        "40",
        "--steps",
        "6",
        "--seed",
        "3",
        "--checkpoint",
        ck,
    ]);
    assert_eq!(code, Some(0), "{stderr}");

    // Another seed, other bodies: the saved state came from others.
    let (code, stderr) = nbody(&[
        "--bodies", "40", "--steps", "8", "--seed", "4", "--resume", ck, "--out", out,
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error: the checkpoint `{ck}` was saved by a run with `--seed 3`, and this run has \
             `--seed 4`"
        )) && stderr.contains("help: resume with `--seed 3`"),
        "{stderr}"
    );
    let (code, stderr) = nbody(&["--bodies", "41", "--seed", "3", "--resume", ck]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("`--bodies 40`, and this run has `--bodies 41`"),
        "{stderr}"
    );

    // Fewer steps than were done: the run would end before it resumed.
    let (code, stderr) = nbody(&[
        "--bodies", "40", "--steps", "4", "--seed", "3", "--resume", ck, "--out", out,
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("was saved after iteration 6, and this run has 4 iterations in all")
            && stderr.contains("help: ask for 6 iterations (steps) or more"),
        "{stderr}"
    );
    assert!(
        !std::path::Path::new(out).exists(),
        "a refused run wrote --out"
    );

    // One flipped byte: refused, naming the file.
    let mut bytes = std::fs::read(ck).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(ck, &bytes).unwrap();
    let (code, stderr) = nbody(&[
        "--bodies", "40", "--steps", "8", "--seed", "3", "--resume", ck,
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error: `{ck}` is not a checkpoint this runtime can resume: its checksum does not \
             match its content"
        )),
        "{stderr}"
    );
}

#[test]
fn a_checkpoint_that_cannot_be_written_is_refused_before_any_work() {
    let started = std::time::Instant::now();
    let (code, stderr) = nbody(&[
        "--bodies",
        "3000",
        "--steps",
        "1000",
        "--checkpoint",
        "/nonexistent-directory/run.ck",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: cannot write `/nonexistent-directory/run.ck` (--checkpoint)")
            && stderr.contains("help: the directory `/nonexistent-directory` does not exist"),
        "{stderr}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn absurd_body_counts_are_refused_before_allocating() {
    let (code, stderr) = nbody(&["--bodies", "4294967295"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("more than 10000000 bodies") && stderr.contains("ask for at most"),
        "{stderr}"
    );
}

#[test]
fn errors_read_error_then_help() {
    let (code, stderr) = nbody(&["--config", "/nonexistent-directory/Mw.toml"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(
        stderr,
        "error: the configuration file `/nonexistent-directory/Mw.toml` was not found\nhelp: \
         check the path given to --config, or leave --config out (a run reads `Mw.toml` of the \
         current directory when there is one)\n"
    );
    let started = std::time::Instant::now();
    let (code, stderr) = nbody(&["--config", "/dev/zero"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with(
            "error: cannot read the configuration file `/dev/zero`: it is a character device, \
             not a regular file\nhelp: "
        ),
        "{stderr}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}
