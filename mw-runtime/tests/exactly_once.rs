//! Every result is recovered exactly once, whatever the policy, protocol, worker count, task
//! durations, `nworkers` changes between iterations, workers that panic, or tasks streamed by
//! `more_tasks`.
#![allow(clippy::unwrap_used)]

use mw_runtime::prelude::*;
use mw_runtime::{
    EmulatedLink, ErrorKind, Objective, PolicyName, RunConfig, RunMetrics, TuneMode, TuningConfig,
};
use proptest::prelude::*;

mod common;
use common::{Checker, Job, Scenario, config, run, run_streamed};

fn policies() -> impl Strategy<Value = PolicyName> {
    prop::sample::select(PolicyName::ALL.to_vec())
}

fn protocols() -> impl Strategy<Value = Protocol> {
    prop::sample::select(vec![Protocol::Sync, Protocol::Async])
}

fn scenarios(pool: usize) -> impl Strategy<Value = Scenario> {
    (
        prop::collection::vec(prop::collection::vec(0u32..300, 1..60), 1..4),
        prop::collection::vec(1..=pool, 3),
        prop::option::weighted(0.3, 0u32..3),
    )
        .prop_map(move |(iterations, nworkers, panic_at)| Scenario {
            iterations,
            nworkers,
            // With a single worker a panic cannot be recovered from: tested separately.
            panic_at: panic_at.filter(|_| pool > 1),
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn every_result_is_recovered_exactly_once(
        (pool, scenario) in (1usize..=8).prop_flat_map(|pool| (Just(pool), scenarios(pool))),
        policy in policies(),
        protocol in protocols(),
        factor in prop::sample::select(vec![0.01, 0.1, 0.5, 1.0]),
        tune in prop::sample::select(vec![TuneMode::Off, TuneMode::On]),
        prefetch in prop::option::of(0usize..=2),
        stream in prop::option::weighted(0.3, 1usize..12),
    ) {
        // With tuning on, the tuner may change nworkers and factor between iterations too.
        let config = RunConfig {
            tuning: TuningConfig { mode: tune, persistence: 1, ..TuningConfig::default() },
            // Chunks sent ahead need the async protocol.
            prefetch: prefetch.filter(|_| protocol == Protocol::Async),
            ..config(pool, policy, protocol, factor)
        };
        // Streamed or not, every task comes back once under the number it was produced with.
        let metrics = run_streamed(&scenario, &config, stream).unwrap();
        prop_assert_eq!(metrics.iterations.len(), scenario.iterations.len());
        for (it, tasks) in metrics.iterations.iter().zip(&scenario.iterations) {
            prop_assert_eq!(it.tasks, tasks.len());
            prop_assert_eq!(it.chunk_sizes.iter().sum::<usize>(), tasks.len());
            prop_assert_eq!(it.chunks, it.chunk_sizes.len());
            prop_assert!(it.workers <= pool);
        }
        // Worker 0 fails every task it gets in that iteration; they run elsewhere.
        let panics = scenario.panic_at.is_some_and(|i| (i as usize) < scenario.iterations.len());
        // (Worker 0 may sit that iteration out, still busy with a chunk a copy answered.)
        prop_assert!(panics || metrics.failures.is_empty());
        for f in &metrics.failures {
            prop_assert_eq!((f.worker, Some(f.iteration as u32)), (0, scenario.panic_at));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Under `sync`, with a stream of a few tasks at a time and the tuner changing the pool
    /// inside the iteration: a worker taken out midway and brought back on its own last answer,
    /// when nothing was left to cut, was once listed idle twice and sent two chunks, and the
    /// master waited on the second send while the worker waited to hand in the first answer.
    #[test]
    fn workers_brought_back_on_their_own_answer_get_one_chunk(
        scenario in scenarios(8),
        stream in 1usize..4,
    ) {
        let scenario = Scenario { panic_at: None, ..scenario };
        let config = RunConfig {
            tuning: TuningConfig { mode: TuneMode::On, persistence: 1, ..TuningConfig::default() },
            ..config(8, PolicyName::Fac2, Protocol::Sync, 0.5)
        };
        run_streamed(&scenario, &config, Some(stream)).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Started below the pool with nothing measured, the tuner grows (or shrinks, or rolls
    /// back) the pool and re-plans the chunks inside the iterations: still every result once.
    #[test]
    fn changes_inside_an_iteration_lose_nothing(
        pool in 2usize..=8,
        tasks in prop::collection::vec(prop::collection::vec(0u32..400, 80..240), 1..3),
        policy in policies(),
        protocol in protocols(),
        objective in prop::sample::select(vec![Objective::Time, Objective::Index]),
        prefetch in prop::option::of(0usize..=2),
        panic_at in prop::option::weighted(0.3, 0u32..2),
        stream in prop::option::weighted(0.3, 8usize..100),
    ) {
        let scenario = Scenario { iterations: tasks, nworkers: Vec::new(), panic_at };
        let config = RunConfig {
            workers: Some(1),
            tuning: TuningConfig {
                mode: TuneMode::On,
                persistence: 1,
                objective: Some(objective),
                ..TuningConfig::default()
            },
            prefetch: prefetch.filter(|_| protocol == Protocol::Async),
            ..config(pool, policy, protocol, 0.5)
        };
        let metrics = run_streamed(&scenario, &config, stream).unwrap();
        prop_assert_eq!(metrics.iterations.len(), scenario.iterations.len());
        for (it, tasks) in metrics.iterations.iter().zip(&scenario.iterations) {
            prop_assert_eq!(it.chunk_sizes.iter().sum::<usize>(), tasks.len());
        }
        for d in metrics.decisions.iter().filter(|d| d.tasks_done.is_some()) {
            let tasks = scenario.iterations[d.iteration].len();
            prop_assert!(d.tasks_done.unwrap() < tasks, "{:?}", d);
        }
    }
}

#[test]
fn nworkers_changes_take_effect_at_the_next_iteration() {
    let scenario = Scenario {
        iterations: vec![vec![100; 40]; 4],
        nworkers: vec![1, 3, 2],
        panic_at: None,
    };
    let metrics = run(&scenario, &config(4, PolicyName::Fsc, Protocol::Async, 0.2)).unwrap();
    let workers: Vec<usize> = metrics.iterations.iter().map(|i| i.workers).collect();
    assert_eq!(workers, vec![4, 1, 3, 2]);
    let busy: Vec<usize> = metrics.iterations[1]
        .busy_ms
        .iter()
        .filter(|&&b| b > 0.0)
        .map(|_| 1)
        .collect();
    assert_eq!(busy.len(), 1, "only one worker takes part in iteration 1");
    let changes: Vec<(usize, String)> = metrics
        .decisions
        .iter()
        .map(|d| (d.iteration, d.to.to_string()))
        .collect();
    assert_eq!(
        changes,
        vec![(1, "1".into()), (2, "3".into()), (3, "2".into())]
    );
    assert!(metrics.decisions.iter().all(|d| d.reason == "application"));
}

#[test]
fn a_panicking_worker_loses_nothing() {
    let scenario = Scenario {
        iterations: vec![vec![50; 30]; 3],
        nworkers: vec![],
        panic_at: Some(1),
    };
    for protocol in [Protocol::Sync, Protocol::Async] {
        // No copies of late chunks: worker 0 always takes part in iteration 1.
        let mut config = config(3, PolicyName::Daf, protocol, 0.5);
        config.faults.backup_after = 0.0;
        let metrics = run(&scenario, &config).unwrap();
        assert!(!metrics.failures.is_empty());
        for failure in &metrics.failures {
            assert_eq!((failure.iteration, failure.worker), (1, 0));
            assert!(
                failure.message.contains("breaks on purpose"),
                "{}",
                failure.message
            );
        }
        // Fewer than three failed chunks in a row: worker 0 keeps its place.
        if metrics.failures.len() < 3 {
            assert_eq!(metrics.iterations[2].workers, 3);
        }
    }
}

#[test]
fn chunks_go_ahead_while_plenty_is_left() {
    // Chunks of one task on 2 workers: each holds one more while at least
    // (prefetch + 1) · 2 tasks are left to cut.
    let scenario = Scenario {
        iterations: vec![vec![20; 40]],
        nworkers: vec![],
        panic_at: None,
    };
    for (prefetch, most) in [(Some(0), 0), (None, 40 - 2), (Some(2), 40 - 2)] {
        let config = RunConfig {
            prefetch,
            ..config(2, PolicyName::Fsc, Protocol::Async, 1.0 / 40.0)
        };
        let metrics = run(&scenario, &config).unwrap();
        let it = &metrics.iterations[0];
        assert!(it.prefetched <= most, "{prefetch:?}: {}", it.prefetched);
        if most > 0 {
            assert!(it.prefetched >= 10, "{prefetch:?}: {}", it.prefetched);
        }
        assert_eq!(it.chunk_sizes, vec![1; 40]);
    }
    // One chunk per worker: nothing is left to send ahead.
    let metrics = run(
        &scenario,
        &config(2, PolicyName::Static, Protocol::Async, 0.5),
    )
    .unwrap();
    assert_eq!(metrics.iterations[0].prefetched, 0);
}

#[test]
fn tasks_that_fail_on_a_worker_run_elsewhere() {
    // Worker 0 panics on every task of iteration 0, holding a second chunk sent ahead: each
    // task runs again on worker 1; worker 0 sits out after three failed chunks in a row, and is
    // back for iteration 2.
    let scenario = Scenario {
        iterations: vec![vec![200; 30]; 3],
        nworkers: vec![],
        panic_at: Some(0),
    };
    let config = RunConfig {
        prefetch: Some(2),
        ..config(2, PolicyName::Fsc, Protocol::Async, 1.0 / 30.0)
    };
    let mut config = config;
    // No copies of late chunks: which worker runs what stays as planned.
    config.faults.backup_after = 0.0;
    let metrics = run(&scenario, &config).unwrap();
    assert!(metrics.iterations[0].prefetched > 0);
    assert!(metrics.failures.len() >= 3, "{:?}", metrics.failures);
    assert!(
        metrics
            .failures
            .iter()
            .all(|f| f.worker == 0 && f.iteration == 0)
    );
    assert_eq!(metrics.iterations[1].workers, 1);
    assert_eq!(metrics.iterations[2].workers, 2);
}

#[test]
fn a_task_that_fails_everywhere_ends_the_run_naming_it() {
    let scenario = Scenario {
        iterations: vec![vec![0; 5]],
        nworkers: vec![],
        panic_at: Some(0),
    };
    let err = run(
        &scenario,
        &config(1, PolicyName::Static, Protocol::Sync, 0.5),
    )
    .unwrap_err();
    match err.kind() {
        ErrorKind::TaskFailed {
            iteration,
            task,
            attempts,
        } => {
            assert_eq!((*iteration, *task), (0, 0));
            // The first attempt and the two retries, each on the only worker.
            assert_eq!(attempts.len(), 3, "{attempts:?}");
            assert!(attempts.iter().all(|a| a.contains("breaks on purpose")));
        }
        other => panic!("unexpected error {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("task 0 of iteration 0 failed 3 times"),
        "{text}"
    );
}

#[test]
fn a_worker_that_cannot_start_is_left_out() {
    struct Picky(usize);
    impl Worker for Picky {
        type Task = Job;
        type Result = (u32, u32, u64);
        type Shared = u32;
        fn initialize(&mut self, setup: &WorkerSetup) -> mw_runtime::Result<()> {
            self.0 = setup.index();
            if setup.index() == 1 {
                Err("no GPU on this worker".into())
            } else {
                Ok(())
            }
        }
        fn do_work(&mut self, _: &u32, &(it, index, _): &Job) -> (u32, u32, u64) {
            assert_ne!(self.0, 1);
            (it, index, u64::from(it) * 1_000_003 + u64::from(index))
        }
    }
    let scenario = Scenario {
        iterations: vec![vec![0; 20]; 2],
        nworkers: vec![],
        panic_at: None,
    };
    let report = mw_runtime::run_config(
        &config(3, PolicyName::Fsc, Protocol::Async, 0.1),
        || Checker::new(&scenario),
        || Picky(0),
    )
    .unwrap();
    let metrics = report.into_metrics().unwrap();
    assert!(
        metrics
            .iterations
            .iter()
            .all(|i| i.workers == 2 && i.busy_ms[1] == 0.0)
    );
}

#[test]
fn metrics_file_has_the_contract_fields() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metrics.json");
    let scenario = Scenario {
        iterations: vec![vec![10; 12]; 2],
        nworkers: vec![],
        panic_at: None,
    };
    let config = RunConfig {
        metrics: Some(path.clone()),
        ..config(2, PolicyName::Fsc, Protocol::Async, 0.5)
    };
    run(&scenario, &config).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for key in [
        "app",
        "backend",
        "pool",
        "total_ms",
        "iterations",
        "decisions",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    assert_eq!(json["backend"], "local");
    let it = &json["iterations"][0];
    for key in [
        "index",
        "workers",
        "factor",
        "policy",
        "tasks",
        "chunks",
        "time_ms",
        "tc_ms",
        "lm_ms",
        "bytes_to_workers",
        "bytes_from_workers",
        "imbalance",
        "predicted_ms",
        "chunk_sizes",
    ] {
        assert!(it.get(key).is_some(), "missing iterations[].{key}");
    }
    // fsc: batches of 0.5 · 12 tasks, cut in 2 chunks.
    assert_eq!(it["chunk_sizes"], serde_json::json!([3, 3, 3, 3]));
    // 2 shared parts (u32) + 4 chunks of 3 tasks of 12 bytes, each with id, first and length.
    assert_eq!(it["bytes_to_workers"], 2 * 4 + 4 * (8 + 8 + 1 + 3 * 12));
    // 4 answers: chunk id, busy time, CPU time, the run-queue waits in and before the chunk,
    // count and sums, then 3 results of 16 bytes and their length, and no failed task (one
    // length byte).
    assert_eq!(
        it["bytes_from_workers"],
        4 * (8 + 8 + 8 + 8 + 8 + 8 + 16 + 1 + 3 * 16 + 1)
    );
    let back = RunMetrics::read(&path).unwrap();
    assert_eq!(back.iterations.len(), 2);
}

/// `auto` starts as `ss`. Behind a link where every message takes 2 ms and tasks take 0.1 ms,
/// the tuner leaves it inside the first iteration for a policy of larger chunks, which plans
/// the tasks not yet cut: still every result once, and every task cut once.
#[test]
fn auto_changes_the_policy_inside_an_iteration_and_loses_nothing() {
    let scenario = Scenario {
        iterations: vec![vec![100; 1000]; 2],
        nworkers: vec![],
        panic_at: None,
    };
    for protocol in [Protocol::Sync, Protocol::Async] {
        let config = RunConfig {
            tuning: TuningConfig {
                mode: TuneMode::Factor,
                ..TuningConfig::default()
            },
            link: Some(EmulatedLink {
                latency_ms: 2.0,
                bandwidth_mbit: None,
            }),
            ..config(4, PolicyName::Auto, protocol, 0.5)
        };
        let metrics = run(&scenario, &config).unwrap();
        let midway: Vec<_> = metrics
            .decisions
            .iter()
            .filter(|d| d.tunable == "policy" && d.iteration == 0 && d.tasks_done.is_some())
            .collect();
        assert!(
            midway.first().is_some_and(|d| d.from == "ss"),
            "{:?}",
            metrics.decisions
        );
        for it in &metrics.iterations {
            assert_eq!(it.chunk_sizes.iter().sum::<usize>(), 1000);
        }
    }
}
