//! `mwgen model` as a user runs it.

use assert_cmd::Command;
use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::Value;

/// The paper's worked example (Fig. 6).
const PAPER: [&str; 9] = [
    "model",
    "--tc",
    "1600",
    "--volume",
    "4096",
    "--latency",
    "1",
    "--per-byte",
    "0.001",
];

fn mwgen() -> Command {
    cargo_bin_cmd!("mwgen")
}

fn stdout(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stdout).into_owned()
}

fn stderr(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

#[test]
fn worked_example_as_json() {
    let assert = mwgen()
        .args(PAPER)
        .args(["--alpha", "0.5", "--protocol", "async", "--lm", "0"])
        .args(["--max-workers", "60", "--json"])
        .assert()
        .success();
    let json: Value = serde_json::from_str(&stdout(&assert)).unwrap();

    assert_eq!(json["best_time"]["workers"], 40);
    let tt = json["best_time"]["time_ms"].as_f64().unwrap();
    assert!((tt - 81.10).abs() < 0.005, "{tt}");

    assert_eq!(json["best_index"]["workers"], 23);
    let tt = json["best_index"]["time_ms"].as_f64().unwrap();
    assert!((tt - 93.74).abs() < 0.005, "{tt}");
    let pi = json["best_index"]["pi"].as_f64().unwrap();
    assert!((pi - 23.0 * tt * tt / 1600.0).abs() < 1e-9);

    assert_eq!(json["mcmc"], 41);
    assert_eq!(json["choice"]["workers"], 23);

    let curve = json["curve"].as_array().unwrap();
    assert_eq!(curve.len(), 60);
    for (i, row) in curve.iter().enumerate() {
        assert_eq!(row["workers"], i + 1);
        assert!(row["time_ms"].as_f64().unwrap() > 0.0);
        assert!(row["pi"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(curve[1]["regime"], "bandwidth");
    assert_eq!(curve[2]["regime"], "latency");
}

#[test]
fn table_names_both_optima_and_the_mcmc() {
    let assert = mwgen()
        .args(PAPER)
        .args(["--max-workers", "60"])
        .assert()
        .success();
    let out = stdout(&assert);
    assert!(
        out.contains("lowest Tt:  40 workers, Tt = 81.10 ms"),
        "{out}"
    );
    assert!(
        out.contains("lowest Pi:  23 workers, Tt = 93.74 ms"),
        "{out}"
    );
    assert!(out.contains("MCMC:       41 workers"), "{out}");
    let row_23 = out
        .lines()
        .find(|l| l.trim_start().starts_with("23 "))
        .unwrap();
    assert!(
        row_23.contains("93.7433") && row_23.ends_with("<- lowest Pi"),
        "{row_23}"
    );
    assert!(stderr(&assert).is_empty());
}

#[test]
fn sync_protocol_uses_expression_9() {
    let assert = mwgen()
        .args(PAPER)
        .args(["--protocol", "sync", "--max-workers", "4", "--json"])
        .assert()
        .success();
    let json: Value = serde_json::from_str(&stdout(&assert)).unwrap();
    // (9) at n = 4: 5 + ((3·0.5 + 1)·4.096 + 1600)/4
    let tt = json["curve"][3]["time_ms"].as_f64().unwrap();
    assert!((tt - (5.0 + (2.5 * 4.096 + 1600.0) / 4.0)).abs() < 1e-9);
    assert_eq!(json["curve"][3]["regime"], "sync");
    assert_eq!(json["mcmc"], 40);
}

#[test]
fn broadcast_model() {
    let assert = mwgen()
        .args([
            "model",
            "--tc",
            "1000",
            "--broadcast",
            "1e6",
            "--results",
            "1e6",
        ])
        .args(["--latency", "0.05", "--per-byte", "1e-5", "--json"])
        .assert()
        .success();
    let json: Value = serde_json::from_str(&stdout(&assert)).unwrap();
    assert_eq!(json["model"], "broadcast");
    // optimum √((Tc + k·Vm)/(k·Vi)) = √101 ≈ 10.05
    assert_eq!(json["best_time"]["workers"], 10);
    assert_eq!(json["params"]["shared_bytes"], 1e6);
}

#[test]
fn plot_writes_an_svg() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fig6.svg");
    mwgen()
        .args(PAPER)
        .args(["--max-workers", "60", "--plot"])
        .arg(&path)
        .assert()
        .success();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("lowest Tt: n = 40"));
    assert!(svg.contains("lowest Pi: n = 23"));
    assert!(svg.contains("MCMC = 41"));
}

#[test]
fn plot_into_a_missing_folder_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("fig.svg");
    let assert = mwgen()
        .args(PAPER)
        .arg("--plot")
        .arg(&path)
        .assert()
        .code(1);
    let err = stderr(&assert);
    assert!(
        err.starts_with("error: failed to write the plot `"),
        "{err}"
    );
    assert!(err.contains("\nhelp: "), "{err}");
}

/// Runs the worked example with `extra` arguments and expects a usage error.
fn usage_error(extra: &[&str]) -> String {
    let assert = mwgen().args(PAPER).args(extra).assert().code(2);
    assert!(stdout(&assert).is_empty());
    stderr(&assert)
}

#[test]
fn negative_per_byte_is_a_usage_error() {
    let assert = mwgen()
        .args([
            "model",
            "--tc",
            "1600",
            "--volume",
            "4096",
            "--latency",
            "1",
        ])
        .args(["--per-byte", "-0.001"])
        .assert()
        .code(2);
    let err = stderr(&assert);
    let mut lines = err.lines();
    assert_eq!(
        lines.next().unwrap(),
        "error: invalid value `-0.001` for `--per-byte`: must be a finite number >= 0"
    );
    assert!(lines.next().unwrap().starts_with("help: `--per-byte` is"));
}

#[test]
fn alpha_outside_unit_interval_is_a_usage_error() {
    for alpha in ["1.5", "-0.1", "NaN"] {
        let err = usage_error(&["--alpha", alpha]);
        assert!(
            err.starts_with(&format!("error: invalid value `{alpha}` for `--alpha`")),
            "{err}"
        );
        assert!(err.contains("\nhelp: "), "{err}");
    }
}

#[test]
fn zero_max_workers_is_a_usage_error() {
    let err = usage_error(&["--max-workers", "0"]);
    assert!(
        err.starts_with("error: `--max-workers` must be at least 1\nhelp: "),
        "{err}"
    );
}

#[test]
fn other_bad_input_is_a_usage_error() {
    let err = usage_error(&["--min-workers", "10", "--max-workers", "5"]);
    assert!(
        err.starts_with("error: `--min-workers` (10) is above"),
        "{err}"
    );
    let err = usage_error(&["--lm", "-1"]);
    assert!(
        err.starts_with("error: invalid value `-1` for `--lm`"),
        "{err}"
    );
    let err = usage_error(&["--max-workers", "-3"]);
    assert!(err.contains("--max-workers"), "{err}");
    let assert = mwgen()
        .args([
            "model",
            "--tc",
            "1600",
            "--volume",
            "4096",
            "--latency",
            "inf",
        ])
        .args(["--per-byte", "0"])
        .assert()
        .code(2);
    let err = stderr(&assert);
    assert!(
        err.starts_with("error: invalid value `inf` for `--latency`"),
        "{err}"
    );

    let assert = mwgen()
        .args(["model", "--tc", "0", "--volume", "1", "--latency", "1"])
        .args(["--per-byte", "0"])
        .assert()
        .code(2);
    assert!(stderr(&assert).starts_with("error: invalid value `0` for `--tc`"));

    let assert = mwgen()
        .args([
            "model",
            "--tc",
            "10",
            "--broadcast",
            "100",
            "--latency",
            "1",
        ])
        .args(["--per-byte", "0", "--protocol", "sync"])
        .assert()
        .code(2);
    assert!(stderr(&assert).contains("async protocol only"));

    // Parse errors are clap's, with the same exit code.
    let assert = mwgen()
        .args(["model", "--tc", "abc", "--volume", "1", "--latency", "1"])
        .args(["--per-byte", "0"])
        .assert()
        .code(2);
    assert!(stderr(&assert).starts_with("error: invalid value 'abc' for '--tc <MS>'"));
}

/// `--tc` with the rest of the worked example.
fn with_tc(tc: &str) -> assert_cmd::assert::Assert {
    mwgen()
        .args(["model", "--tc", tc, "--volume", "4096", "--latency", "1"])
        .args(["--per-byte", "0.001", "--max-workers", "4"])
        .assert()
}

#[test]
fn zero_and_negative_tc_get_the_same_rule() {
    for tc in ["0", "-5"] {
        let err = stderr(&with_tc(tc).code(2));
        assert!(
            err.starts_with(&format!(
                "error: invalid value `{tc}` for `--tc`: must be positive\nhelp: "
            )),
            "{err}"
        );
    }
}

#[test]
fn negative_worker_counts_get_the_rule() {
    for flag in ["--min-workers", "--max-workers"] {
        let err = usage_error(&[flag, "-3"]);
        assert!(err.contains("must be at least 1"), "{err}");
        assert!(!err.contains("invalid digit"), "{err}");
    }
}

#[test]
fn huge_values_are_printed_in_scientific_notation() {
    let out = stdout(&with_tc("1e308").success());
    assert!(out.contains("Tc = 1e308 ms"), "{out}");
    let longest = out.split_whitespace().map(str::len).max().unwrap_or(0);
    assert!(longest < 20, "a {longest}-character word in:\n{out}");
}
