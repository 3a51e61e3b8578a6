//! On a machine whose cores other programs keep busy, the tuner neither grows N-Body past the
//! cores nor shrinks it for their load: it starts at one worker per core and stays there.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use assert_cmd::Command;

/// Threads of this test process (another program to N-Body's) that spin until `stop` is set.
fn spinners(count: usize, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    (0..count)
        .map(|_| {
            let stop = Arc::clone(stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect()
}

#[test]
#[ignore = "keeps every core busy while it runs, and expects N-Body's best count on free cores \
            to be the core count (2 to 4 cores): run alone, in release, with --ignored"]
fn other_programs_load_is_not_taken_for_the_programs_own() {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let dir = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let spinning = spinners(cores, &stop);
    let mut runs = Vec::new();
    for run in 0..3 {
        let metrics = dir.path().join(format!("tuned{run}.json"));
        Command::cargo_bin("nbody")
            .unwrap()
            .args(["--bodies", "2000", "--steps", "30", "--backend", "local"])
            .arg("--metrics")
            .arg(&metrics)
            .assert()
            .success();
        let text = std::fs::read_to_string(&metrics).unwrap();
        runs.push(serde_json::from_str::<serde_json::Value>(&text).unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    for spinner in spinning {
        spinner.join().unwrap();
    }
    for metrics in &runs {
        let workers: Vec<u64> = metrics["iterations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["workers"].as_u64().unwrap())
            .collect();
        let rollbacks = metrics["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["reason"].as_str().unwrap().starts_with("rollback"))
            .count();
        let decisions = &metrics["decisions"];
        assert!(
            workers.iter().all(|&w| w <= cores as u64),
            "grown past {cores} cores: {workers:?}\n{decisions:#}"
        );
        assert_eq!(
            workers.last().copied(),
            Some(cores as u64),
            "{workers:?}\n{decisions:#}"
        );
        assert!(rollbacks <= 1, "{rollbacks} rollbacks\n{decisions:#}");
    }
}
