//! The command line as a user runs it.

// Test helpers unwrap like the tests they serve.
#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use clap::CommandFactory;
use serde_json::Value;

fn xfire() -> Command {
    Command::cargo_bin("xfire").unwrap()
}

fn ros_json(args: &[&str]) -> serde_json::Map<String, Value> {
    let out = xfire()
        .arg("ros")
        .args(args)
        .arg("--json")
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    match serde_json::from_str(&text).unwrap() {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn get(map: &serde_json::Map<String, Value>, key: &str) -> f64 {
    map[key].as_f64().unwrap()
}

fn close(got: f64, want: f64) {
    assert!((got - want).abs() <= 1e-6 * want, "got {got}, want {want}");
}

#[test]
fn the_command_line_is_well_formed() {
    xfire::cli::Cli::command().debug_assert();
}

#[test]
fn ros_json_has_the_contract_keys_and_behaveplus_values() {
    // Fuel model 1, 5 mi/h upslope on 30 %, 6/7/8/60/90 %: the BehavePlus core gives
    // R0 4.605304 ft/min, ROS 120.334076 ft/min, L/W 1.659144, I_R 826.1327 BTU/ft²/min.
    let json = ros_json(&["--fuel", "1", "--wind-mph", "5", "--slope-pct", "30"]);
    let mut keys: Vec<&str> = json.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "length_to_width",
            "r0_ft_min",
            "reaction_intensity_btu_ft2_min",
            "ros_ft_min",
            "ros_m_min",
        ]
    );
    close(get(&json, "r0_ft_min"), 4.605304);
    close(get(&json, "ros_ft_min"), 120.334076);
    close(get(&json, "ros_m_min"), 120.334076 * 0.3048);
    close(get(&json, "length_to_width"), 1.659144);
    close(get(&json, "reaction_intensity_btu_ft2_min"), 826.1327);
}

#[test]
fn ros_moisture_and_wind_limit_flags() {
    let given = ros_json(&[
        "--fuel",
        "8",
        "--wind-mph",
        "20",
        "--slope-pct",
        "0",
        "--moisture",
        "6,7,8,60,90",
    ]);
    close(get(&given, "ros_ft_min"), 15.683652);
    let limited = ros_json(&[
        "--fuel",
        "8",
        "--wind-mph",
        "20",
        "--slope-pct",
        "0",
        "--wind-limit",
    ]);
    close(get(&limited, "ros_ft_min"), 5.354033);
    let wet = ros_json(&[
        "--fuel",
        "1",
        "--wind-mph",
        "5",
        "--slope-pct",
        "0",
        "--moisture",
        "15,15,15,100,100",
    ]);
    assert_eq!(get(&wet, "ros_ft_min"), 0.0);
}

#[test]
fn ros_prints_a_table_without_json() {
    let out = xfire()
        .args(["ros", "--fuel", "4", "--wind-mph", "5", "--slope-pct", "30"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("fuel model 4 (chaparral)"), "{text}");
    assert!(text.contains("102.044 ft/min"), "{text}");
}

#[test]
fn bad_ros_input_gets_error_and_help_and_status_2() {
    let cases: [&[&str]; 8] = [
        &["--fuel", "0", "--wind-mph", "5", "--slope-pct", "30"],
        &["--fuel", "14", "--wind-mph", "5", "--slope-pct", "30"],
        &["--fuel", "grass", "--wind-mph", "5", "--slope-pct", "30"],
        &["--fuel", "1", "--wind-mph", "-3", "--slope-pct", "30"],
        &["--fuel", "1", "--wind-mph", "fast", "--slope-pct", "30"],
        &["--fuel", "1", "--wind-mph", "5", "--slope-pct", "-10"],
        &[
            "--fuel",
            "1",
            "--wind-mph",
            "5",
            "--slope-pct",
            "30",
            "--moisture",
            "6,7,8",
        ],
        &[
            "--fuel",
            "1",
            "--wind-mph",
            "5",
            "--slope-pct",
            "30",
            "--moisture",
            "6,7,x,60,90",
        ],
    ];
    for args in cases {
        let out = xfire().arg("ros").args(args).arg("--json").assert().code(2);
        let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
        let lines: Vec<&str> = stderr.lines().collect();
        assert!(lines.len() == 2, "{args:?}: {stderr}");
        assert!(lines[0].starts_with("error: "), "{args:?}: {stderr}");
        assert!(lines[1].starts_with("help: "), "{args:?}: {stderr}");
        assert!(out.get_output().stdout.is_empty());
    }
}

#[test]
fn a_short_simulation_writes_csv_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("fire");
    let out = xfire()
        .args([
            "--steps",
            "5",
            "--grid",
            "40",
            "--workers",
            "2",
            "--backend",
            "local",
            "--out",
        ])
        .arg(&prefix)
        .assert()
        .success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(stdout.contains("burned"), "{stdout}");
    let csv = std::fs::read_to_string(dir.path().join("fire.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("x_m,y_m"));
    let points: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert!(points.len() >= 16 && points.iter().all(|p| p.len() == 2));
    let svg = std::fs::read_to_string(dir.path().join("fire.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
}

#[test]
fn bad_simulation_flags_exit_with_status_2() {
    xfire().args(["--dt-min", "0"]).assert().code(2);
    xfire().args(["--moisture", "1,2"]).assert().code(2);
    xfire()
        .args(["--steps", "1", "--grid", "20", "--workers", "0"])
        .assert()
        .code(2);
}

#[test]
fn an_out_prefix_in_a_missing_directory_is_refused_before_the_run() {
    let assert = xfire()
        .args(["--steps", "2", "--backend", "local", "--quiet"])
        .args(["--out", "/nonexistent-directory/fire"])
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains("cannot write `/nonexistent-directory/fire.csv` (--out)")
            && stderr.contains("help: the directory `/nonexistent-directory` does not exist"),
        "{stderr}"
    );
}
