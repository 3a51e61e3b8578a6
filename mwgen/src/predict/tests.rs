use mw_runtime::RunMetrics;
use mw_runtime::metrics::IterationMetrics;

use super::pilot::from_metrics;
use super::*;

fn iteration(
    index: usize,
    workers: usize,
    tasks: usize,
    mean_ms: f64,
    sd_ms: f64,
) -> IterationMetrics {
    let time_ms = tasks as f64 * mean_ms / workers as f64;
    IterationMetrics {
        index,
        workers,
        factor: 0.5,
        policy: "static".to_string(),
        tasks,
        chunks: workers,
        time_ms,
        tc_ms: tasks as f64 * mean_ms,
        lm_ms: 0.0,
        bytes_to_workers: 16 * tasks as u64,
        bytes_from_workers: 8 * tasks as u64,
        busy_ms: vec![time_ms; workers],
        task_mean_ms: mean_ms,
        task_stddev_ms: sd_ms,
        worker_task_mean_ms: vec![mean_ms; workers],
        worker_task_stddev_ms: vec![sd_ms; workers],
        mo_ms: Some(0.0),
        k_ms_per_byte: Some(0.0),
        ..IterationMetrics::default()
    }
}

fn metrics(iterations: Vec<IterationMetrics>) -> RunMetrics {
    let total_ms = iterations.iter().map(|i| i.time_ms).sum::<f64>() + 5.0;
    RunMetrics {
        app: "pilot".to_string(),
        backend: "mpi".to_string(),
        pool: 4,
        protocol: "sync".to_string(),
        total_ms,
        iterations,
        decisions: Vec::new(),
        failures: Vec::new(),
        objective: "time".to_string(),
        objective_reason: "parked MPI ranks keep their allocation".to_string(),
        interrupted: None,
        command: Vec::new(),
    }
}

fn request(workers: &str, iterations: usize) -> Request {
    Request {
        workers: parse_workers(workers).unwrap(),
        iterations,
        tasks: None,
        mo_ms: None,
        k_ms_per_byte: None,
        policy: None,
        load: LoadPattern::None,
        thinned: false,
    }
}

#[test]
fn worker_counts_parse_as_one_a_list_or_a_range() {
    assert_eq!(parse_workers("8").unwrap(), vec![8]);
    assert_eq!(parse_workers("8,2,4,4").unwrap(), vec![2, 4, 8]);
    assert_eq!(parse_workers("1..4,16").unwrap(), vec![1, 2, 3, 4, 16]);
    let long = parse_workers("1..10000").unwrap();
    assert!(
        long.len() <= MAX_COUNTS && long.len() > 50,
        "{}",
        long.len()
    );
    assert_eq!((long[0], *long.last().unwrap()), (1, 10_000));
    assert!(thinned("1..10000") && thinned("4,2..5000") && !thinned("1..64,100"));
    for bad in ["0", "4..2", "x", "1..", "-3"] {
        let e = parse_workers(bad).unwrap_err().to_string();
        assert!(
            e.starts_with("error: invalid value") && e.contains("help:"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn a_pilot_without_a_finished_iteration_is_refused() {
    let (message, _) = from_metrics(&metrics(Vec::new())).unwrap_err();
    assert!(message.contains("no iteration"), "{message}");
    // Iterations started but none ended with its tasks (a one-bag job cut short).
    let started = IterationMetrics {
        index: 0,
        workers: 4,
        ..IterationMetrics::default()
    };
    let (message, help) = from_metrics(&metrics(vec![started])).unwrap_err();
    assert!(message.contains("no iteration"), "{message}");
    assert!(help.contains("fewer tasks"), "{help}");
}

#[test]
fn a_protocol_of_another_version_is_refused() {
    let mut m = metrics(vec![iteration(0, 4, 400, 1.0, 0.0)]);
    m.protocol = "rdma".to_string();
    let (message, help) = from_metrics(&m).unwrap_err();
    assert!(message.contains("`rdma`"), "{message}");
    assert!(help.contains("another version"), "{help}");
}

#[test]
fn a_pilot_with_impossible_times_is_refused() {
    let mut bad = iteration(0, 4, 100, 1.0, 0.0);
    bad.time_ms = f64::NAN;
    assert!(from_metrics(&metrics(vec![bad])).is_err());
}

#[test]
fn even_static_work_follows_the_model_and_grows_with_iterations() {
    let m = metrics((0..3).map(|i| iteration(i, 4, 400, 1.0, 0.0)).collect());
    let pilot = from_metrics(&m).unwrap();
    assert_eq!(pilot.steady_iterations, 2);
    assert!((pilot.fixed_ms - 5.0).abs() < 1e-9);
    let f = forecast(&pilot, &request("2,4,8", 30));
    assert!(f.simulated_because.is_empty(), "{:?}", f.simulated_because);
    for r in &f.rows {
        assert_eq!(r.method, "model");
        // 30 iterations of 400 ms of work over n workers, plus the fixed 5 ms.
        let expected = 5.0 + 30.0 * 400.0 / r.workers as f64;
        assert!((r.total_ms - expected).abs() < 1e-6, "{r:?}");
        assert!(
            (r.simulated_iteration_ms - r.iteration_ms).abs() < 1e-6,
            "{r:?}"
        );
    }
    assert_eq!(f.best_time, 8);
    // Perfect scaling: every count costs the same, so the cheapest near the best is the best.
    assert_eq!(f.cheapest, 8);
}

#[test]
fn uneven_tasks_are_simulated_and_the_cheapest_count_is_chosen_near_the_best() {
    let mut its: Vec<_> = (0..3).map(|i| iteration(i, 4, 400, 1.0, 0.8)).collect();
    for it in &mut its {
        it.policy = "daf".to_string();
        it.mo_ms = Some(0.05);
    }
    let pilot = from_metrics(&metrics(its)).unwrap();
    let f = forecast(&pilot, &request("1..512", 10));
    assert!(f.rows.iter().all(|r| r.method == "simulation"));
    let best = f.rows.iter().find(|r| r.workers == f.best_time).unwrap();
    let cheap = f.rows.iter().find(|r| r.workers == f.cheapest).unwrap();
    assert!(cheap.total_ms <= best.total_ms * 1.1 && cheap.worker_hours <= best.worker_hours);
    assert!(f.cheapest <= f.best_time);
    // 400 tasks cannot keep 512 workers busy: said so.
    assert!(
        f.caveats.iter().any(|c| c.contains("outnumber")),
        "{:?}",
        f.caveats
    );
}

#[test]
fn a_policy_the_pilot_did_not_run_is_a_stated_caveat() {
    let pilot = from_metrics(&metrics(vec![iteration(0, 4, 400, 1.0, 0.1)])).unwrap();
    let mut req = request("4", 10);
    req.policy = Some(PolicyName::Fsc);
    let f = forecast(&pilot, &req);
    assert!(
        f.caveats.iter().any(|c| c.contains("never measured")),
        "{:?}",
        f.caveats
    );
    assert!(
        f.caveats.iter().any(|c| c.contains("one iteration")),
        "{:?}",
        f.caveats
    );
}

#[test]
fn ten_thousand_workers_are_predicted_within_a_second() {
    let mut its: Vec<_> = (0..3).map(|i| iteration(i, 8, 100_000, 2.0, 1.0)).collect();
    for it in &mut its {
        it.policy = "daf".to_string();
        it.mo_ms = Some(0.02);
    }
    let pilot = from_metrics(&metrics(its)).unwrap();
    let started = std::time::Instant::now();
    let f = forecast(&pilot, &request("10000", 100));
    let took = started.elapsed();
    // Debug builds run several times slower than release, where this takes milliseconds.
    assert!(took.as_secs_f64() < 5.0, "{took:?}");
    assert_eq!(f.rows.len(), 1);
    assert!(f.master_bottleneck.is_some(), "{:?}", f.rows[0]);
}

#[test]
fn wall_times_read_as_slurm_wants_them() {
    assert_eq!(slurm_time(360), "00:06:00");
    assert_eq!(slurm_time(3 * 86_400 + 3_661), "3-01:01:01");
}

#[test]
fn a_load_slows_the_loaded_iterations_and_is_a_stated_caveat() {
    let m = metrics((0..3).map(|i| iteration(i, 4, 400, 1.0, 0.0)).collect());
    let pilot = from_metrics(&m).unwrap();
    let plain = forecast(&pilot, &request("4", 16));
    let mut req = request("4", 16);
    // Worker 0 at 75 % (4x slower) in the second half: a static iteration waits for its
    // 100 tasks of 4 ms.
    req.load = "8:0:75".parse().unwrap();
    let loaded = forecast(&pilot, &req);
    let r = &loaded.rows[0];
    assert_eq!(r.method, "simulation");
    let expected = 5.0 + 8.0 * 100.0 + 8.0 * 400.0;
    assert!((r.total_ms - expected).abs() < 1e-6, "{r:?}");
    assert!(plain.caveats.iter().all(|c| !c.contains("load")));
    assert!(
        loaded.caveats.iter().any(|c| c.contains("at most 4.0x"))
            && loaded
                .caveats
                .iter()
                .any(|c| c.contains("far from the pilot")),
        "{:?}",
        loaded.caveats
    );
    // A light load is emulated, and said so, but is not far from the pilot.
    req.load = "variable:8:20".parse().unwrap();
    let light = forecast(&pilot, &req);
    assert!(light.caveats.iter().any(|c| c.contains("emulated")));
    assert!(
        light
            .caveats
            .iter()
            .all(|c| !c.contains("far from the pilot"))
    );
}

/// The sbatch line launches the pilot's program through srun with the PMI plugin, with the
/// program's own arguments, the real run's size in place of the pilot's, and without the flags
/// that were the pilot's alone.
#[test]
fn the_sbatch_line_runs_the_pilots_program_at_the_real_size() {
    let mut m = metrics((0..4).map(|i| iteration(i, 4, 400, 1.0, 0.0)).collect());
    m.command = [
        "target/release/synthetic",
        "--workers",
        "4",
        "--iterations=4",
        "--tasks",
        "400",
        "--mean-ms",
        "1",
        "--metrics",
        "pilot.json",
        "--link-latency",
        "0.1",
        "--out",
        "it's here.csv",
    ]
    .map(String::from)
    .to_vec();
    let pilot = from_metrics(&m).unwrap();
    let mut asked = request("8", 100);
    asked.tasks = Some(2000);
    let f = forecast(&pilot, &asked);
    let line = sbatch(&f, &pilot, 16).line;
    // As the shell reads it: sbatch's words, then the script it wraps.
    let words = shell_split(&line);
    assert_eq!(
        words[..5],
        [
            "sbatch",
            "--nodes=1",
            "--ntasks=9",
            "--time=00:06:00",
            "--wrap"
        ]
    );
    assert_eq!(
        shell_split(&words[5]),
        [
            "srun",
            "--mpi=pmix",
            "target/release/synthetic",
            "--iterations",
            "100",
            "--tasks",
            "2000",
            "--mean-ms",
            "1",
            "--out",
            "it's here.csv",
            "--backend",
            "mpi",
            "--tuning",
            "off"
        ]
    );
    // Metrics that do not hold the command line: the program by its name, in this folder.
    m.command.clear();
    let pilot = from_metrics(&m).unwrap();
    let line = sbatch(&forecast(&pilot, &asked), &pilot, 16).line;
    assert!(
        line.ends_with("--wrap 'srun --mpi=pmix ./pilot --backend mpi --tuning off'"),
        "{line}"
    );
}

/// The words of `line` as `sh` reads them.
fn shell_split(line: &str) -> Vec<String> {
    let script = format!("for w in {line}; do printf '%s\\0' \"$w\"; done");
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_terminator('\0').map(String::from).collect()
}

/// The quoting survives a shell: the words read back unchanged.
#[test]
fn shell_words_read_back_as_written() {
    let words: Vec<String> = ["plain", "it's", "a b", "", "$HOME", "x'\"y"]
        .map(String::from)
        .to_vec();
    assert_eq!(shell_split(&shell_words(&words)), words);
}
