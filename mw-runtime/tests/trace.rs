//! `--trace` on a real run: the file parses back with the expected tracks, slices, arrows,
//! counters, decisions and failures, and every worker's slices fit its iterations.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::{Scenario, config, run};
use mw_runtime::prelude::*;
use mw_runtime::{PolicyName, RunConfig, RunMetrics};
use serde_json::Value;

fn traced_run(scenario: &Scenario, dir: &Path, limit: Option<usize>) -> (RunMetrics, Value) {
    let path = dir.join("run.trace.json");
    let config = RunConfig {
        trace: Some(path.clone()),
        trace_limit: limit.unwrap_or(RunConfig::default().trace_limit),
        quiet: true,
        ..config(3, PolicyName::Factoring, Protocol::Async, 0.5)
    };
    let mut config = config;
    // No copies of late chunks: the worker that panics takes part in its iteration.
    config.faults.backup_after = 0.0;
    let metrics = run(scenario, &config).unwrap();
    let json = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (metrics, json)
}

/// Three iterations on three workers; the application changes `nworkers` twice and worker 0
/// panics in iteration 1.
fn scenario() -> Scenario {
    Scenario {
        iterations: vec![
            (0..24).map(|t| 200 + 40 * (t % 5)).collect(),
            (0..24).map(|t| 300 + 20 * (t % 3)).collect(),
            (0..24).map(|_| 250).collect(),
        ],
        nworkers: vec![2, 3],
        panic_at: Some(1),
    }
}

fn events(json: &Value) -> Vec<&Value> {
    json["traceEvents"].as_array().unwrap().iter().collect()
}

fn with<'a>(json: &'a Value, ph: &str, name: &str) -> Vec<&'a Value> {
    events(json)
        .into_iter()
        .filter(|e| e["ph"] == ph && e["name"] == name)
        .collect()
}

fn span(e: &Value) -> (f64, f64) {
    let start = e["ts"].as_f64().unwrap();
    (start, start + e["dur"].as_f64().unwrap())
}

#[test]
fn a_traced_run_shows_every_worker_chunk_and_decision() {
    let dir = tempfile::tempdir().unwrap();
    let (metrics, json) = traced_run(&scenario(), dir.path(), None);

    let names: HashMap<u64, String> = with(&json, "M", "process_name")
        .iter()
        .map(|e| {
            let name = e["args"]["name"].as_str().unwrap().to_owned();
            (e["pid"].as_u64().unwrap(), name)
        })
        .collect();
    assert_eq!(names.len(), 4);
    assert_eq!(names[&1], "master");
    for w in 0..3 {
        assert_eq!(names[&(2 + w)], format!("worker {w}"));
    }

    // Every iteration is a slice on the master, holding its partition and end_iteration.
    let iterations: Vec<(f64, f64)> = (0..3)
        .map(|i| span(with(&json, "X", &format!("iteration {i}"))[0]))
        .collect();
    assert_eq!(with(&json, "X", "end_iteration").len(), 3);
    // The last partition returns no tasks and ends the run.
    assert_eq!(with(&json, "X", "partition").len(), 4);

    // One do_work per chunk cut, plus one per failed task run again elsewhere (worker 0 fails
    // every task it gets in iteration 1) and per late chunk copied, on a worker's track, inside
    // its iteration, and a worker never works on two chunks at once.
    let chunks: usize = metrics.iterations.iter().map(|it| it.chunks).sum();
    let backups: usize = metrics.iterations.iter().map(|it| it.backups).sum();
    let work = with(&json, "X", "do_work");
    let retried = metrics.failures.len();
    assert!(retried >= 1);
    assert!(
        metrics
            .failures
            .iter()
            .all(|f| f.worker == 0 && f.iteration == 1)
    );
    assert_eq!(work.len(), chunks + retried + backups);
    let mut per_worker: HashMap<u64, Vec<(f64, f64)>> = HashMap::new();
    for e in &work {
        let pid = e["pid"].as_u64().unwrap();
        assert!((2..5).contains(&pid), "do_work on track {pid}");
        let (start, end) = span(e);
        let (it_start, it_end) = iterations[e["args"]["iteration"].as_u64().unwrap() as usize];
        assert!(
            it_start <= start && end <= it_end,
            "{e} outside its iteration"
        );
        per_worker.entry(pid).or_default().push((start, end));
    }
    for (pid, mut spans) in per_worker {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        for pair in spans.windows(2) {
            assert!(
                pair[0].1 <= pair[1].0,
                "worker track {pid} overlaps: {pair:?}"
            );
        }
    }
    let sends = with(&json, "X", "send chunk").len();
    // A chunk with a failed task is answered too, with the tasks that did not fail.
    assert_eq!(sends, work.len(), "every chunk sent was worked on");
    // An answer a copy beat is dropped, not recovered.
    let recovered = with(&json, "X", "recover").len();
    assert!(recovered <= work.len() && recovered >= work.len() - backups);

    // Arrows: out and back for every finished chunk, each with one start and one end.
    // Events are in time order, so an arrow's start comes before its end.
    let mut flows: HashMap<u64, (usize, usize)> = HashMap::new();
    for e in events(&json) {
        match e["ph"].as_str() {
            Some("s") => flows.entry(e["id"].as_u64().unwrap()).or_default().0 += 1,
            Some("f") => {
                assert_eq!(e["bp"], "e");
                let flow = flows.entry(e["id"].as_u64().unwrap()).or_default();
                assert_eq!(flow.0, 1, "arrow {e} ends before it starts");
                flow.1 += 1;
            }
            _ => {}
        }
    }
    assert_eq!(flows.len(), 2 * work.len());
    assert!(flows.values().all(|&pair| pair == (1, 1)), "{flows:?}");

    // Counters follow the metrics; decisions carry their reason; the panic is on worker 0.
    let nworkers: Vec<f64> = with(&json, "C", "nworkers")
        .iter()
        .map(|e| e["args"]["n"].as_f64().unwrap())
        .collect();
    let expected: Vec<f64> = metrics
        .iterations
        .iter()
        .map(|it| it.workers as f64)
        .collect();
    assert_eq!(nworkers, expected);
    assert_eq!(with(&json, "C", "factor").len(), 3);
    assert_eq!(with(&json, "C", "iteration time (measured)").len(), 3);
    let decisions: Vec<&Value> = events(&json)
        .into_iter()
        .filter(|e| e["ph"] == "i" && e["cat"] == "decision")
        .collect();
    assert_eq!(decisions.len(), metrics.decisions.len());
    assert!(!decisions.is_empty());
    assert!(
        decisions
            .iter()
            .all(|d| d["args"]["reason"] == "application")
    );
    let panics = with(&json, "i", "task failed");
    assert!(!panics.is_empty());
    assert!(panics.iter().all(|p| p["pid"] == 2));

    assert_eq!(json["otherData"]["slices_dropped"], 0);
    assert_eq!(json["otherData"]["backend"], "local");
}

#[test]
fn a_small_limit_keeps_the_beginning_and_all_counters() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = Scenario {
        panic_at: None,
        ..scenario()
    };
    let (_, json) = traced_run(&scenario, dir.path(), Some(40));
    let kept = events(&json)
        .into_iter()
        .filter(|e| {
            let slice = e["ph"] == "X" && !e["name"].as_str().unwrap().starts_with("iteration");
            slice || e["ph"] == "s" || e["ph"] == "f"
        })
        .count();
    assert!((20..=40).contains(&kept), "{kept} events for a limit of 40");
    assert!(json["otherData"]["slices_dropped"].as_u64().unwrap() > 0);
    assert_eq!(with(&json, "C", "nworkers").len(), 3);
    let mut ids: HashMap<u64, i32> = HashMap::new();
    for e in events(&json) {
        match e["ph"].as_str() {
            Some("s") => *ids.entry(e["id"].as_u64().unwrap()).or_default() += 1,
            Some("f") => *ids.entry(e["id"].as_u64().unwrap()).or_default() -= 1,
            _ => {}
        }
    }
    assert!(ids.values().all(|&n| n == 0), "unpaired arrows: {ids:?}");
}

#[test]
fn no_trace_flag_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = RunConfig {
        quiet: true,
        ..config(2, PolicyName::Fsc, Protocol::Sync, 0.5)
    };
    let scenario = Scenario {
        iterations: vec![vec![0; 8]],
        nworkers: vec![],
        panic_at: None,
    };
    run(&scenario, &config).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// One bag of 400 tasks, started on one worker of a pool of 6 with tuning on: the pool grows
/// within the first tenth of the tasks, and the trace shows the change where it was made.
#[test]
fn a_change_inside_the_iteration_is_traced_where_it_was_made() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bag.trace.json");
    let scenario = Scenario {
        iterations: vec![vec![1_000; 400]],
        nworkers: Vec::new(),
        panic_at: None,
    };
    let config = RunConfig {
        workers: Some(1),
        trace: Some(path.clone()),
        quiet: true,
        tuning: mw_runtime::TuningConfig::default(),
        ..config(6, PolicyName::Daf, Protocol::Async, 0.5)
    };
    let metrics = run(&scenario, &config).unwrap();
    let grown = metrics
        .decisions
        .iter()
        .find(|d| d.tunable == "nworkers")
        .expect("the pool grows");
    assert_eq!(grown.iteration, 0);
    assert_eq!(metrics.decisions.len(), 1, "{:#?}", metrics.decisions);
    let done = grown.tasks_done.expect("made inside the iteration");
    assert!(done <= 40, "grown after {done} of 400 tasks");
    assert!(grown.to.as_u64().unwrap() > 1, "{grown:?}");
    // Most of the bag ran on the grown pool.
    let busy = metrics.iterations[0].busy_ms.iter().filter(|&&b| b > 0.0);
    assert!(busy.count() > 1);

    let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let decision = events(&json)
        .into_iter()
        .find(|e| e["ph"] == "i" && e["cat"] == "decision")
        .unwrap();
    assert_eq!(decision["args"]["tasks_done"], done);
    let iteration = with(&json, "X", "iteration 0");
    let (start, end) = span(iteration.first().unwrap());
    let at = decision["ts"].as_f64().unwrap();
    assert!(start < at && at < end, "{start} < {at} < {end}");
    let counters = with(&json, "C", "nworkers");
    assert!(
        counters
            .iter()
            .any(|c| c["ts"].as_f64() == Some(at) && c["args"]["n"].as_f64() == grown.to.as_f64()),
        "{counters:?}"
    );
}
