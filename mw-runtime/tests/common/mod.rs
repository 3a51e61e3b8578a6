//! Scenarios shared by the local and MPI suites: a master that checks every result arrives
//! exactly once under its own `TaskId`, and workers that sleep, and panic on request.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::VecDeque;
use std::time::Duration;

use mw_runtime::prelude::*;
use mw_runtime::{PolicyName, RunConfig, RunMetrics, TunableId, TunablesHandle, TuningConfig};

/// A task: its iteration, its index and how long it takes (µs).
pub type Job = (u32, u32, u32);

#[derive(Debug, Clone)]
pub struct Scenario {
    /// Tasks per iteration (with durations in µs).
    pub iterations: Vec<Vec<u32>>,
    /// `nworkers` requested for each iteration after the first.
    pub nworkers: Vec<usize>,
    /// Worker 0 panics on its first task of this iteration.
    pub panic_at: Option<u32>,
}

pub struct Checker {
    scenario: Scenario,
    seen: Vec<Vec<u32>>,
    tunables: Option<TunablesHandle>,
    /// Streamed: the window asked for, and the iteration's tasks not yet given to `more_tasks`.
    stream: Option<(usize, VecDeque<Job>)>,
}

impl Checker {
    pub fn new(scenario: &Scenario) -> Self {
        Checker {
            scenario: scenario.clone(),
            seen: Vec::new(),
            tunables: None,
            stream: None,
        }
    }

    /// A checker that gives each iteration's tasks through `more_tasks`, `ahead` at most at a
    /// time, instead of from `partition`.
    pub fn streaming(scenario: &Scenario, ahead: usize) -> Self {
        Checker {
            stream: Some((ahead, VecDeque::new())),
            ..Checker::new(scenario)
        }
    }
}

impl Master for Checker {
    type Task = Job;
    type Result = (u32, u32, u64);
    type Shared = u32;

    fn initialize(&mut self, setup: &mut Setup) -> mw_runtime::Result<()> {
        self.tunables = Some(setup.tunables());
        if let Some((ahead, _)) = &self.stream {
            setup.stream_ahead(*ahead);
        }
        Ok(())
    }

    fn partition(&mut self, it: &Iteration) -> Work<u32, Job> {
        let Some(durations) = self.scenario.iterations.get(it.index) else {
            return Work::new(0, Vec::new());
        };
        self.seen.push(vec![0; durations.len()]);
        let i = it.index as u32;
        let tasks = durations
            .iter()
            .enumerate()
            .map(|(t, &us)| (i, t as u32, us));
        match &mut self.stream {
            Some((_, unsent)) => {
                unsent.extend(tasks);
                Work::new(i, Vec::new())
            }
            None => Work::new(i, tasks.collect()),
        }
    }

    fn more_tasks(&mut self, _it: &Iteration, room: usize) -> Vec<Job> {
        match &mut self.stream {
            Some((ahead, unsent)) => {
                assert!(room <= *ahead, "asked for {room} tasks, window {ahead}");
                unsent.drain(..room.min(unsent.len())).collect()
            }
            None => Vec::new(),
        }
    }

    fn recover(&mut self, task: TaskId, (iteration, index, value): (u32, u32, u64)) {
        assert_eq!(
            index as usize,
            task.index(),
            "result delivered under the wrong TaskId"
        );
        assert_eq!(value, u64::from(iteration) * 1_000_003 + u64::from(index));
        self.seen[iteration as usize][task.index()] += 1;
    }

    fn final_work(&mut self) -> mw_runtime::Result<()> {
        for (iteration, counts) in self.seen.iter().enumerate() {
            for (task, &count) in counts.iter().enumerate() {
                if count != 1 {
                    return Err(format!(
                        "task {task} of iteration {iteration} recovered {count} times"
                    )
                    .into());
                }
            }
        }
        if self.seen.len() != self.scenario.iterations.len() {
            return Err(format!(
                "{} iterations ran, {} planned",
                self.seen.len(),
                self.scenario.iterations.len()
            )
            .into());
        }
        Ok(())
    }

    fn end_iteration(&mut self, it: &Iteration) -> Flow {
        if let (Some(n), Some(handle)) = (self.scenario.nworkers.get(it.index), &self.tunables) {
            handle
                .request(TunableId::NWORKERS.change(*n as i64), "application")
                .unwrap();
        }
        Flow::Continue
    }
}

pub struct Sleeper {
    index: usize,
    panic_at: Option<u32>,
    always: bool,
}

impl Sleeper {
    /// A worker; worker 0 panics on its first task of iteration `panic_at`.
    pub fn new(panic_at: Option<u32>) -> Self {
        Sleeper {
            index: usize::MAX,
            panic_at,
            always: false,
        }
    }

    /// A worker that panics on every task.
    pub fn always_panicking() -> Self {
        Sleeper {
            index: usize::MAX,
            panic_at: None,
            always: true,
        }
    }
}

impl Worker for Sleeper {
    type Task = Job;
    type Result = (u32, u32, u64);
    type Shared = u32;

    fn initialize(&mut self, setup: &WorkerSetup) -> mw_runtime::Result<()> {
        self.index = setup.index();
        Ok(())
    }

    fn do_work(&mut self, iteration: &u32, &(it, index, us): &Job) -> (u32, u32, u64) {
        assert_eq!(*iteration, it, "shared part of another iteration");
        if self.always || (self.index == 0 && self.panic_at == Some(it)) {
            panic!("worker 0 breaks on purpose in iteration {it}");
        }
        if us > 0 {
            std::thread::sleep(Duration::from_micros(u64::from(us)));
        }
        (it, index, u64::from(it) * 1_000_003 + u64::from(index))
    }
}

/// A run with fixed settings: the tuner changes nothing.
pub fn config(pool: usize, policy: PolicyName, protocol: Protocol, factor: f64) -> RunConfig {
    RunConfig {
        workers: Some(pool),
        max_workers: Some(pool),
        policy: policy.into(),
        factor,
        protocol,
        backend: BackendChoice::Local,
        tuning: TuningConfig::off(),
        ..RunConfig::default()
    }
}

/// Runs a scenario; the checker's `final_work` fails the run unless every task of every planned
/// iteration was recovered exactly once.
pub fn run(scenario: &Scenario, config: &RunConfig) -> mw_runtime::Result<RunMetrics> {
    run_streamed(scenario, config, None)
}

/// Runs a scenario, its tasks streamed `ahead` at a time if given.
pub fn run_streamed(
    scenario: &Scenario,
    config: &RunConfig,
    ahead: Option<usize>,
) -> mw_runtime::Result<RunMetrics> {
    let checker = || match ahead {
        Some(ahead) => Checker::streaming(scenario, ahead),
        None => Checker::new(scenario),
    };
    let panic_at = scenario.panic_at;
    let report = mw_runtime::run_config(config, checker, move || Sleeper::new(panic_at))?;
    Ok(report.into_metrics().expect("the master has metrics"))
}

/// Keeps the panics the scenarios cause on purpose out of the output: a suite run without
/// libtest's capture (the MPI suite under `mpirun`) would print each with its backtrace. Any
/// other panic reaches the hook that was installed before.
pub fn quiet_on_purpose_panics() {
    let earlier = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
        if !message.is_some_and(|m| m.contains("on purpose")) {
            earlier(info);
        }
    }));
}

/// Whether an MPI launcher started this process (Open MPI's `mpirun`, hydra's `mpiexec` of MPICH
/// and Intel MPI, `srun` with PMI), or the master spawned it.
pub fn mpi_launched() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_RANK",
        "MW_SPAWNED_WORKER",
    ]
    .iter()
    .any(|var| std::env::var_os(var).is_some())
}

/// The processes the MPI launcher started, when it says.
pub fn mpi_launched_size() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .find_map(|var| std::env::var(var).ok()?.parse().ok())
}

/// What a suite with a harness of its own prints when it cannot run here: libtest's report of
/// an ignored test, so that the runner counts it ignored, not passed.
pub fn report_ignored(name: &str, why: &str) {
    println!("\nrunning 1 test");
    println!("test {name} ... ignored, {why}");
    println!(
        "\ntest result: ok. 0 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; \
         finished in 0.00s\n"
    );
}
