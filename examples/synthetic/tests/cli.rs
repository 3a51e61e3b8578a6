//! The command line as a user runs it: every policy and protocol completes with every result
//! checked; bad flags get an `error:` and exit status 2.

// Test helpers unwrap like the tests they serve.
#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use clap::CommandFactory;

fn synthetic() -> Command {
    Command::cargo_bin("synthetic").unwrap()
}

/// Runs a small program with `args` on 3 local workers; returns the summary.
fn run(args: &[&str]) -> String {
    let out = synthetic()
        .args(["--tasks", "60", "--iterations", "2", "--mean-ms", "0.2"])
        .args([
            "--task-bytes",
            "33",
            "--result-bytes",
            "17",
            "--shared-bytes",
            "100",
        ])
        .args(["--workers", "3", "--max-workers", "3", "--backend", "local"])
        .args(args)
        .assert()
        .success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

#[test]
fn the_command_line_is_well_formed() {
    synthetic::cli::Cli::command().debug_assert();
}

#[test]
fn every_policy_and_protocol_completes_with_every_result_checked() {
    for policy in mw::PolicyName::ALL {
        for protocol in ["sync", "async"] {
            let policy = policy.to_string();
            let summary = run(&["--policy", &policy, "--protocol", protocol]);
            let what = format!("{policy} {protocol}:\n{summary}");
            assert!(
                summary.contains("checks      120 results: every id, payload and checksum"),
                "{what}"
            );
            assert!(
                summary.contains(&format!("{policy} policy, {protocol} protocol")),
                "{what}"
            );
            assert!(summary.contains("of 3 workers"), "{what}");
        }
    }
}

#[test]
fn spinning_and_emulated_load_complete_too() {
    let summary = run(&["--spin", "--load", "variable:1:50", "--stddev", "0.8"]);
    assert!(summary.contains("checks      120 results"), "{summary}");
    assert!(summary.contains("spinning"), "{summary}");
    assert!(summary.contains("load variable:1:50"), "{summary}");
}

#[test]
fn the_summary_compares_with_the_ideal_time() {
    let summary = run(&["--stddev", "0"]);
    // 60 tasks of 0.2 ms on 3 workers: 4 ms of task time per worker and iteration.
    assert!(
        summary.contains("ideal       4.00 ms per iteration"),
        "{summary}"
    );
    assert!(summary.contains("efficiency"), "{summary}");
}

#[test]
fn bad_flags_are_refused_with_help() {
    let refused = |args: &[&str], expected: &str| {
        let out = synthetic().args(args).assert().failure().code(2);
        let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
        assert!(
            stderr.starts_with("error:") && stderr.contains(expected),
            "{args:?}: {stderr}"
        );
    };
    refused(&["--tasks", "0"], "at least 1");
    refused(&["--iterations", "x"], "not a whole number");
    refused(&["--mean-ms", "-1"], "must be in [0, 3600000]");
    refused(&["--mean-ms", "NaN"], "must be in");
    refused(&["--stddev", "11"], "must be in [0, 10]");
    refused(&["--stddev", "-0.5"], "must be in [0, 10]");
    refused(&["--load", "sometimes"], "unknown load pattern `sometimes`");
    refused(&["--load", "8:0-3:120"], "help:");
    refused(
        &["--tasks", "1000000", "--task-bytes", "100000"],
        "help: lower --tasks",
    );
    // What the runtime refuses is bad input too, with the runtime's message.
    refused(&["--config", "/dev/zero"], "it is a character device");
    refused(
        &["--metrics", "/nonexistent/run.json"],
        "help: the directory `/nonexistent` does not exist",
    );
}

#[test]
fn under_a_launcher_only_the_first_rank_prints_a_refused_flag() {
    // What `mpirun -np 4` gives each rank; `launched(r)` is rank `r` of them.
    let launched = |rank: &str, arg: &str| {
        let mut cmd = synthetic();
        cmd.env("OMPI_COMM_WORLD_SIZE", "4")
            .env("OMPI_COMM_WORLD_LOCAL_SIZE", "4")
            .env("OMPI_COMM_WORLD_RANK", rank)
            .arg(arg);
        cmd
    };
    // The status line goes to MW_STATUS_FILE too, as `mwgen launch` asks.
    let dir = tempfile::tempdir().unwrap();
    let status = dir.path().join("status");
    let first = launched("0", "--bogus")
        .env("MW_STATUS_FILE", &status)
        .assert()
        .failure()
        .code(2);
    let stderr = String::from_utf8(first.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.starts_with("error: unexpected argument '--bogus'"),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("mw: exit status 2 (bad input)\n"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&status).unwrap(),
        "mw: exit status 2 (bad input)\n"
    );
    for rank in ["1", "3"] {
        let other = launched(rank, "--bogus").assert().failure().code(2);
        let out = other.get_output();
        assert!(
            out.stderr.is_empty() && out.stdout.is_empty(),
            "rank {rank}: {out:?}"
        );
    }
    let help = launched("2", "--help").assert().success();
    assert!(
        help.get_output().stdout.is_empty(),
        "rank 2 printed the help"
    );
}
