//! The command line: `synthetic [FLAGS]` runs the synthetic program and prints a summary.

use std::fmt;
use std::sync::mpsc;
use std::time::Duration;

use clap::{Args, Parser};

use crate::inject::Inject;
use crate::master::{Outcome, Settings, SyntheticMaster};
use crate::worker::SyntheticWorker;

/// The papers' synthetic Master/Worker programs: iterations of tasks with drawn durations and
/// payload sizes, to compare distribution policies and watch the tuner.
#[derive(Debug, Parser)]
#[command(version, about)]
pub struct Cli {
    #[command(flatten)]
    pub program: ProgramArgs,
    #[command(flatten)]
    pub run: mw::RunArgs,
}

/// The synthetic program's own flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Synthetic program")]
pub struct ProgramArgs {
    /// Tasks per iteration
    #[arg(long, value_name = "M", default_value_t = 1000, value_parser = at_least_one)]
    pub tasks: usize,
    /// Iterations
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = at_least_one)]
    pub iterations: usize,
    /// Mean task time, ms
    #[arg(
        long = "mean-ms",
        value_name = "MS",
        default_value_t = 1.0,
        value_parser = mean_ms,
        allow_negative_numbers = true
    )]
    pub mean_ms: f64,
    /// Standard deviation of the task times, as a fraction of the mean (0.8: 80 %)
    #[arg(
        long,
        value_name = "FRACTION",
        default_value_t = 0.3,
        value_parser = stddev,
        allow_negative_numbers = true
    )]
    pub stddev: f64,
    /// Seed of the task times (lognormal with the given mean and deviation)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Payload bytes in each task
    #[arg(long = "task-bytes", value_name = "BYTES", default_value_t = 16)]
    pub task_bytes: usize,
    /// Payload bytes in each result
    #[arg(long = "result-bytes", value_name = "BYTES", default_value_t = 8)]
    pub result_bytes: usize,
    /// Bytes every worker receives at the start of each iteration (N-Body's broadcast)
    #[arg(long = "shared-bytes", value_name = "BYTES", default_value_t = 0)]
    pub shared_bytes: usize,
    /// Spin on the CPU for each task's time instead of sleeping
    #[arg(long)]
    pub spin: bool,
    /// Faults to inject, a comma list of panic:W@I, error:W@I, hang:W@I, exit:W@I (worker W from iteration I) and master-panic@I
    #[arg(long, value_name = "SPEC")]
    pub inject: Option<Inject>,
}

impl ProgramArgs {
    /// The program's settings.
    pub fn settings(&self) -> Settings {
        Settings {
            tasks: self.tasks,
            iterations: self.iterations,
            mean_ms: self.mean_ms,
            stddev: self.stddev,
            seed: self.seed,
            task_bytes: self.task_bytes,
            result_bytes: self.result_bytes,
            shared_bytes: self.shared_bytes,
        }
    }
}

/// The most a master holds for one iteration: tasks, results and shared data.
pub const MAX_ITERATION_BYTES: usize = 1 << 30;

fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a whole number")),
    }
}

fn number_in(text: &str, low: f64, high: f64, example: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if (low..=high).contains(&x) => Ok(x),
        Ok(_) => Err(format!("must be in [{low}, {high}], e.g. {example}")),
        Err(_) => Err(format!("`{text}` is not a number")),
    }
}

fn mean_ms(text: &str) -> Result<f64, String> {
    number_in(text, 0.0, 3_600_000.0, "0.5")
}

fn stddev(text: &str) -> Result<f64, String> {
    number_in(text, 0.0, 10.0, "0.4 for 40 % of the mean")
}

/// Why a run did not complete.
#[derive(Debug)]
pub enum Failure {
    /// The flags describe a program that cannot run (exit status 2).
    Usage { message: String, help: String },
    /// The runtime refused the configuration (exit status 2) or the run failed (1).
    Run(mw::Error),
}

impl Failure {
    /// The process exit status.
    pub fn code(&self) -> u8 {
        match self {
            Failure::Usage { .. } => 2,
            Failure::Run(e) => e.status(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Usage { message, help } => write!(f, "error: {message}\nhelp: {help}"),
            Failure::Run(e) => f.write_str(&e.report()),
        }
    }
}

impl From<mw::Error> for Failure {
    fn from(e: mw::Error) -> Self {
        Failure::Run(e)
    }
}

/// Checks that an iteration fits in memory.
fn check_size(settings: &Settings) -> Result<(), Failure> {
    let per_task = settings.task_bytes.max(settings.result_bytes);
    let bytes = settings
        .tasks
        .checked_mul(per_task)
        .and_then(|b| b.checked_add(settings.shared_bytes));
    match bytes {
        Some(b) if b <= MAX_ITERATION_BYTES => Ok(()),
        _ => Err(Failure::Usage {
            message: format!(
                "an iteration of {} tasks of {} bytes and {} shared bytes needs more than {} GiB",
                settings.tasks,
                per_task,
                settings.shared_bytes,
                MAX_ITERATION_BYTES >> 30
            ),
            help: "lower --tasks, --task-bytes, --result-bytes or --shared-bytes".into(),
        }),
    }
}

/// Runs the program; the summary on the master, `None` on an MPI worker rank.
///
/// # Errors
/// Flags that describe an impossible program, a failed run, or results that fail their checks.
pub fn run(cli: &Cli) -> Result<Option<Summary>, Failure> {
    let settings = cli.program.settings();
    check_size(&settings)?;
    let config = mw::RunConfig::resolve(&cli.run)?;
    let (sender, outcomes) = mpsc::channel();
    let inject = cli.program.inject.clone().unwrap_or_default();
    let master = {
        let (settings, inject) = (settings.clone(), inject.clone());
        move || {
            SyntheticMaster::new(settings)
                .report_to(sender)
                .inject(inject)
        }
    };
    let (spin, result_bytes) = (cli.program.spin, cli.program.result_bytes);
    let worker = move || SyntheticWorker::new(spin, result_bytes, inject.clone());
    let report = mw::run_config(&config, master, worker)?;
    let Some(metrics) = report.into_metrics() else {
        return Ok(None);
    };
    let outcome = outcomes.try_recv().unwrap_or_default();
    Ok(Some(Summary {
        settings,
        spin,
        config,
        metrics,
        outcome,
    }))
}

/// A finished run, as the master saw it.
#[derive(Debug)]
pub struct Summary {
    pub settings: Settings,
    pub spin: bool,
    pub config: mw::RunConfig,
    pub metrics: mw::RunMetrics,
    pub outcome: Outcome,
}

impl Summary {
    /// Sum of the measured iteration times, ms.
    pub fn iterations_ms(&self) -> f64 {
        self.metrics.iterations.iter().map(|i| i.time_ms).sum()
    }

    /// The time the iterations would take with every worker busy all the time and no
    /// communication: each iteration's total task time over its workers, summed, in ms.
    pub fn ideal_ms(&self) -> f64 {
        self.metrics
            .iterations
            .iter()
            .zip(&self.outcome.task_time)
            .map(|(it, total)| ms(*total) / it.workers.max(1) as f64)
            .sum()
    }

    /// Ideal over measured iteration time.
    pub fn efficiency(&self) -> f64 {
        let measured = self.iterations_ms();
        if measured > 0.0 {
            self.ideal_ms() / measured
        } else {
            1.0
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Bytes with a binary unit.
fn bytes(n: f64) -> String {
    match n {
        n if n >= 1024.0 * 1024.0 => format!("{:.1} MiB", n / (1024.0 * 1024.0)),
        n if n >= 1024.0 => format!("{:.1} KiB", n / 1024.0),
        n => format!("{n:.0} B"),
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.settings;
        let m = &self.metrics;
        let n = m.iterations.len().max(1) as f64;
        writeln!(
            f,
            "program     {} iterations × {} tasks of {} ms ± {:.0} % (lognormal, {}); \
             {} B per task, {} B per result, {} B shared",
            s.iterations,
            s.tasks,
            s.mean_ms,
            s.stddev * 100.0,
            if self.spin { "spinning" } else { "sleeping" },
            s.task_bytes,
            s.result_bytes,
            s.shared_bytes
        )?;
        let workers: Vec<usize> = m.iterations.iter().map(|i| i.workers).collect();
        let (low, high) = (
            workers.iter().copied().min().unwrap_or(0),
            workers.iter().copied().max().unwrap_or(0),
        );
        let workers = if low == high {
            format!("{low}")
        } else {
            format!("{low}–{high}")
        };
        write!(
            f,
            "runtime     {} policy, {} protocol, {} backend, {workers} of {} workers",
            self.config.policy, m.protocol, m.backend, m.pool
        )?;
        if !self.config.load.is_none() {
            write!(f, ", load {}", self.config.load)?;
        }
        writeln!(f)?;
        let times = m.iterations.iter().map(|i| i.time_ms);
        let (min, max) = times.fold((f64::INFINITY, 0.0_f64), |(lo, hi), t| {
            (lo.min(t), hi.max(t))
        });
        writeln!(
            f,
            "time        {:.1} ms in all; {:.2} ms per iteration (min {:.2}, max {:.2})",
            m.total_ms,
            self.iterations_ms() / n,
            if min.is_finite() { min } else { 0.0 },
            max
        )?;
        writeln!(
            f,
            "ideal       {:.2} ms per iteration (task time / workers); efficiency {:.1} %",
            self.ideal_ms() / n,
            self.efficiency() * 100.0
        )?;
        let to: u64 = m.iterations.iter().map(|i| i.bytes_to_workers).sum();
        let from: u64 = m.iterations.iter().map(|i| i.bytes_from_workers).sum();
        writeln!(
            f,
            "volume      {} per iteration ({} to workers, {} back)",
            bytes((to + from) as f64 / n),
            bytes(to as f64 / n),
            bytes(from as f64 / n)
        )?;
        writeln!(
            f,
            "checks      {} results: every id, payload and checksum matches",
            self.outcome.results
        )
    }
}
