//! The tuner and the control endpoint in real runs on the local backend: sleeping tasks, so that
//! many workers fit on a small machine. No timing is asserted beyond generous sanity.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use mw_runtime::prelude::*;
use mw_runtime::tuning::control::{ControlAddr, Reply};
use mw_runtime::{PolicyName, RunConfig, RunMetrics, TuneMode, TuningConfig};

/// `tasks` tasks of `task_us` each per iteration; `partition` itself takes `serial_us` (master
/// work no worker can share), so that the best time per resource is at a few workers. With
/// `until_workers`, the run stops once two iterations have run with that many workers.
struct Sleepy {
    iterations: usize,
    tasks: usize,
    task_us: u32,
    serial_us: u64,
    until_workers: Option<usize>,
    seen_at_target: usize,
    recovered: usize,
}

impl Sleepy {
    fn new(iterations: usize, tasks: usize, task_us: u32, serial_us: u64) -> Self {
        Sleepy {
            iterations,
            tasks,
            task_us,
            serial_us,
            until_workers: None,
            seen_at_target: 0,
            recovered: 0,
        }
    }
}

impl Master for Sleepy {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        if it.index >= self.iterations {
            return Work::tasks(Vec::new());
        }
        std::thread::sleep(Duration::from_micros(self.serial_us));
        Work::tasks(vec![self.task_us; self.tasks])
    }

    fn recover(&mut self, _task: TaskId, result: u32) {
        assert_eq!(result, self.task_us);
        self.recovered += 1;
    }

    fn end_iteration(&mut self, it: &Iteration) -> Flow {
        if self.until_workers == Some(it.workers) {
            self.seen_at_target += 1;
            if self.seen_at_target >= 2 {
                return Flow::Stop;
            }
        }
        Flow::Continue
    }
}

#[derive(Default)]
struct Napper;

impl Worker for Napper {
    type Task = u32;
    type Result = u32;
    type Shared = ();

    fn do_work(&mut self, _: &(), us: &u32) -> u32 {
        std::thread::sleep(Duration::from_micros(u64::from(*us)));
        *us
    }
}

/// The machine, one test at a time: these tests judge what the tuner decides from measured
/// times and load, and one of them loads every core on purpose; the harness would run them side
/// by side, each the others' "other programs".
static MACHINE: Mutex<()> = Mutex::new(());

fn machine() -> MutexGuard<'static, ()> {
    MACHINE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn run(config: &RunConfig, master: Sleepy) -> RunMetrics {
    let report = mw_runtime::run_config(config, || master, Napper::default).unwrap();
    report.into_metrics().unwrap()
}

/// A short first iteration from one worker (40 tasks: fewer than ten for each of the probe's
/// usual 8): the first tasks go out one at a time all the same, so that the workers the tuner
/// adds at its first look share the rest, instead of a first chunk of half of them or more that
/// one worker runs alone.
#[test]
fn a_short_first_iteration_is_sized_within_itself() {
    let _machine = machine();
    let config = RunConfig {
        workers: Some(1),
        max_workers: Some(16),
        policy: PolicyName::Gss.into(),
        backend: BackendChoice::Local,
        tuning: TuningConfig {
            objective: Some(mw_runtime::Objective::Time),
            ..TuningConfig::default()
        },
        ..RunConfig::default()
    };
    let master = Sleepy::new(2, 40, 2000, 0);
    let metrics = run(&config, master);
    let first = metrics
        .decisions
        .first()
        .expect("the tuner changed nworkers");
    assert_eq!((first.tunable.as_str(), first.iteration), ("nworkers", 0));
    // At the probe's look: four tasks (a tenth of 40, and at least four).
    assert!(first.tasks_done.is_some_and(|d| d <= 8), "{first:?}");
    // One worker alone takes 80 ms; `gss` from one worker would have cut all 40 tasks at once.
    let it = &metrics.iterations[0];
    assert!(
        it.time_ms < 40.0,
        "the first iteration took {} ms",
        it.time_ms
    );
    let working = it.busy_ms.iter().filter(|&&ms| ms > 0.0).count();
    assert!(working > 1, "{:?}", it.busy_ms);
}

#[test]
fn a_run_starting_at_one_worker_grows_to_several() {
    let _machine = machine();
    let config = RunConfig {
        workers: Some(1),
        max_workers: Some(16),
        policy: PolicyName::Daf.into(),
        backend: BackendChoice::Local,
        ..RunConfig::default()
    };
    assert_eq!(config.tuning.mode, TuneMode::On, "tuning is on by default");
    let master = Sleepy::new(14, 32, 2000, 4000);
    let metrics = run(&config, master);
    // No objective configured: on threads, time per resource.
    assert_eq!(
        (
            metrics.objective.as_str(),
            metrics.objective_reason.as_str()
        ),
        ("index", "parked worker threads are released")
    );
    let its = &metrics.iterations;
    assert_eq!(its.len(), 14);
    assert_eq!(its[0].workers, 1);
    let last = its.last().unwrap().workers;
    assert!((4..=16).contains(&last), "ended with {last} workers");
    let first = metrics
        .decisions
        .first()
        .expect("the tuner changed nworkers");
    assert_eq!(first.tunable, "nworkers");
    // A cold start: decided inside the first iteration, from its first tasks (the probe's).
    assert_eq!(first.iteration, 0, "{first:?}");
    assert!(first.tasks_done.is_some_and(|d| d < 32), "{first:?}");
    assert!(first.reason.contains("model"), "{}", first.reason);
    // In words for the line printed while running; the model's numbers stay in the reason.
    assert!(first.summary.contains("expected"), "{}", first.summary);
    assert!(first.predicted_ms.is_some() && first.measured_ms.is_some());
    // The command line, for `mwgen predict`'s launch line: this test's own.
    let program = std::env::args().next().unwrap();
    assert_eq!(metrics.command.first(), Some(&program));
    // Generous: the tuned iterations take well under half the time of one on one worker.
    let tail: f64 = its[its.len() - 3..].iter().map(|i| i.time_ms).sum::<f64>() / 3.0;
    let one_worker_ms = 32.0 * 2.0 + 4.0;
    assert!(tail < one_worker_ms / 2.0, "{tail} vs {one_worker_ms}");
    // Measure points are in the metrics, and every iteration after the first was predicted.
    for it in &its[1..] {
        assert!(it.predicted_ms.is_some(), "iteration {}", it.index);
        assert!(it.mo_ms.is_some() && it.k_ms_per_byte.is_some());
        assert!(it.tuning_ms >= 0.0 && it.tuning_ms < it.time_ms);
        assert_eq!(it.volume_bytes, it.bytes_to_workers + it.bytes_from_workers);
    }
    assert!(its[0].predicted_ms.is_none());
}

/// One bag of sleeping tasks started on one worker, beside threads spinning on every core (as
/// another program would): the master and the worker wait for a core before each chunk, which
/// is that load, not an imbalance, and the pool grows all the same.
#[test]
fn a_bag_of_sleeping_tasks_grows_beside_a_busy_program() {
    let _machine = machine();
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let spinners: Vec<_> = (0..cores)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let config = RunConfig {
        workers: Some(1),
        max_workers: Some(6),
        policy: PolicyName::Daf.into(),
        backend: BackendChoice::Local,
        quiet: true,
        ..RunConfig::default()
    };
    let metrics = run(&config, Sleepy::new(1, 400, 1000, 0));
    stop.store(true, Ordering::Relaxed);
    spinners.into_iter().for_each(|s| s.join().unwrap());
    let grown = metrics
        .decisions
        .iter()
        .find(|d| d.tunable == "nworkers")
        .expect("the pool grows beside the busy threads");
    assert!(grown.to.as_u64().unwrap() > 1, "{grown:?}");
    assert!(grown.tasks_done.is_some_and(|d| d <= 40), "{grown:?}");
}

#[test]
fn tune_off_keeps_the_settings() {
    let _machine = machine();
    let config = RunConfig {
        workers: Some(1),
        max_workers: Some(8),
        backend: BackendChoice::Local,
        tuning: TuningConfig::off(),
        ..RunConfig::default()
    };
    let master = Sleepy::new(6, 16, 500, 0);
    let metrics = run(&config, master);
    assert!(metrics.decisions.is_empty());
    assert!(metrics.iterations.iter().all(|i| i.workers == 1));
}

/// Connects once the endpoint is up (the run opens it when it starts).
fn connect(addr: &ControlAddr) -> mw_runtime::tuning::control::ControlStream {
    for _ in 0..500 {
        if let Ok(stream) = addr.connect() {
            return stream;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the control endpoint at {addr} never opened");
}

#[test]
fn nworkers_set_from_outside_takes_effect_and_is_logged() {
    let _machine = machine();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("control.sock");
    let addr = ControlAddr::Unix(socket.clone());
    let config = RunConfig {
        workers: Some(2),
        max_workers: Some(6),
        backend: BackendChoice::Local,
        tuning: TuningConfig::off(),
        control: Some(addr.clone()),
        ..RunConfig::default()
    };
    let client = {
        let addr = addr.clone();
        std::thread::spawn(move || {
            let mut watcher = connect(&addr);
            assert_eq!(
                watcher.request("watch").unwrap(),
                Reply::Ok("watching".into())
            );
            let mut control = connect(&addr);
            assert_eq!(
                control.request("get nworkers").unwrap(),
                Reply::Ok("2".into())
            );
            let Reply::Err { message, help } = control.request("set nworkers 99").unwrap() else {
                panic!("99 workers accepted in a pool of 6");
            };
            assert!(
                message.contains("`nworkers` = 99 is out of range"),
                "{message}"
            );
            assert!(help.unwrap().contains("pool of 6"));
            let Reply::Err { message, .. } = control.request("set wokers 3").unwrap() else {
                panic!("an unknown tunable accepted");
            };
            assert!(
                message.contains("no tunable is named `wokers`"),
                "{message}"
            );
            let reply = control.request("set nworkers 3").unwrap();
            assert_eq!(
                reply,
                Reply::Ok("nworkers = 3 from the next iteration".into())
            );
            // The watcher sees iterations go by until the run ends.
            let mut lines = Vec::new();
            for line in BufReader::new(watcher).lines() {
                let line = line.unwrap();
                if line == "end" {
                    break;
                }
                lines.push(line);
            }
            lines
        })
    };
    let master = Sleepy {
        until_workers: Some(3),
        ..Sleepy::new(2000, 6, 1000, 0)
    };
    let metrics = run(&config, master);
    let lines = client.join().unwrap();
    let external: Vec<_> = metrics
        .decisions
        .iter()
        .filter(|d| d.reason == "external")
        .collect();
    assert_eq!(external.len(), 1, "{:?}", metrics.decisions);
    assert_eq!(
        (external[0].tunable.as_str(), external[0].to.as_u64()),
        ("nworkers", Some(3))
    );
    let applied_at = external[0].iteration;
    assert_eq!(metrics.iterations[applied_at].workers, 3);
    assert_eq!(metrics.iterations[applied_at - 1].workers, 2);
    assert!(!lines.is_empty());
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("iteration=") && l.contains(" nworkers=")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.contains("nworkers=3")), "{lines:?}");
    assert!(
        !Path::new(&socket).exists(),
        "the socket is removed at the end"
    );
}

#[test]
fn a_busy_control_address_is_a_clear_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken: ControlAddr = listener.local_addr().unwrap().to_string().parse().unwrap();
    let config = RunConfig {
        workers: Some(1),
        max_workers: Some(1),
        backend: BackendChoice::Local,
        control: Some(taken),
        ..RunConfig::default()
    };
    let master = Sleepy::new(1, 1, 0, 0);
    let err = mw_runtime::run_config(&config, || master, Napper::default).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("cannot open the control endpoint") && text.contains("help:"),
        "{text}"
    );
}
