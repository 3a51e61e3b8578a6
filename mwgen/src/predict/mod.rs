//! `mwgen predict`: a whole run predicted from the metrics of a short pilot run, for each
//! worker count asked, to choose how many workers to book and for how long.
//!
//! [`pilot`] reduces the pilot's metrics to the parameters it measured; [`forecast()`] predicts
//! with the model of Cesar et al. 2006 where its assumptions hold and with the runtime's event
//! simulation ([`mw_runtime::tuning::simulate`]) elsewhere; this file holds the flags and the output.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use mw_runtime::{LoadPattern, PolicyName};

use crate::CliError;

pub mod forecast;
pub mod pilot;
mod plot;

pub use forecast::{Forecast, Request, Row, forecast};

pub(crate) const LONG_ABOUT: &str = "\
Predict a whole run from the metrics of a short pilot run.

Run the program for a few iterations (or the first part of a one-bag job) with --metrics, then
ask for the real run's size and the worker counts to compare. The prediction uses the measured
task times and their spread, each worker's speed, bytes, the master's own time and the link's
mo and k: the performance model (Cesar et al. 2006; POETRIES' broadcast variant when the shared
part dominates) where its assumptions hold, and an event simulation of the policy's chunks
elsewhere (uneven tasks, factoring policies, workers of different speeds, a master that
saturates, workers slowed by --load). Prints each count's time, cost and efficiency, the
fastest count, the cheapest within 10 % of the fastest, the MCMC, where the master becomes the
bottleneck, a ready sbatch line, and what the prediction cannot vouch for.

Example:
  target/release/synthetic --workers 4 --tuning off --iterations 4 --metrics pilot.json
  mwgen predict --metrics pilot.json --workers 1..64 --iterations 100
  mwgen predict --metrics pilot.json --workers 8 --iterations 100 --load variable";

/// The most worker counts a range is evaluated at; longer ranges are thinned evenly on a log
/// scale, keeping both ends.
pub const MAX_COUNTS: usize = 100;
/// The largest worker count accepted.
pub const MAX_WORKERS: usize = 1_000_000;

/// Arguments of `mwgen predict`.
#[derive(Debug, Clone, Args)]
pub struct PredictArgs {
    /// The pilot run's metrics (`--metrics PATH` of the program)
    #[arg(long, value_name = "PILOT.json", help_heading = "Pilot")]
    pub metrics: PathBuf,

    /// Worker counts: one (`8`), a list (`2,4,8`) or a range (`1..64`), or a mix
    #[arg(
        long,
        value_name = "N",
        default_value = "1..64",
        help_heading = "Real run"
    )]
    pub workers: String,

    /// Iterations of the real run [default: the pilot's]
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Real run"
    )]
    pub iterations: Option<i64>,

    /// Tasks per iteration of the real run (a one-bag job: all its tasks) [default: the
    /// pilot's]
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        help_heading = "Real run"
    )]
    pub tasks: Option<i64>,

    /// A distribution policy other than the pilot's (simulated, with a caveat)
    #[arg(long, value_name = "POLICY", help_heading = "Real run")]
    pub policy: Option<String>,

    /// Emulated external load on the workers, as the program's `--load` (e.g. `variable`,
    /// `increasing:4:50`, `0:0-3:75,8:0-3:0`)
    #[arg(long, value_name = "SPEC", help_heading = "Real run")]
    pub load: Option<String>,

    /// The real network's latency: per-message start-up time in ms
    #[arg(
        long,
        value_name = "MS",
        allow_negative_numbers = true,
        conflicts_with = "mo",
        help_heading = "Network"
    )]
    pub link_latency: Option<f64>,

    /// The real network's bandwidth in megabits per second
    #[arg(
        long,
        value_name = "MBIT",
        allow_negative_numbers = true,
        conflicts_with = "k",
        help_heading = "Network"
    )]
    pub link_bandwidth: Option<f64>,

    /// Per-message start-up time `mo` in ms, as measured by another run
    #[arg(
        long,
        value_name = "MS",
        allow_negative_numbers = true,
        help_heading = "Network"
    )]
    pub mo: Option<f64>,

    /// Per-byte cost `k` in ms per byte, as measured by another run
    #[arg(
        long,
        value_name = "MS",
        allow_negative_numbers = true,
        help_heading = "Network"
    )]
    pub k: Option<f64>,

    /// Cores of one cluster node, one MPI rank each, for the sbatch line
    #[arg(
        long,
        value_name = "N",
        default_value_t = 32,
        allow_negative_numbers = true,
        help_heading = "Output"
    )]
    pub cores_per_node: i64,

    /// Print JSON instead of a table
    #[arg(long, help_heading = "Output")]
    pub json: bool,

    /// Also draw total time and cost against workers as an SVG file
    #[arg(long, value_name = "FILE.svg", help_heading = "Output")]
    pub plot: Option<PathBuf>,
}

/// What `--json` prints: the forecast and the batch line.
#[derive(Debug, serde::Serialize)]
struct Report<'a> {
    pilot: PilotSummary<'a>,
    #[serde(flatten)]
    forecast: &'a Forecast,
    sbatch: Sbatch,
}

#[derive(Debug, serde::Serialize)]
struct PilotSummary<'a> {
    app: &'a str,
    backend: &'a str,
    workers: usize,
    iterations: usize,
    tasks: f64,
    task_mean_ms: f64,
    task_stddev_ms: f64,
    iteration_ms: f64,
}

/// A batch request for the cheapest count near the best time.
#[derive(Debug, serde::Serialize)]
struct Sbatch {
    workers: usize,
    nodes: usize,
    tasks: usize,
    wall_seconds: u64,
    line: String,
}

/// Runs `mwgen predict`.
///
/// # Errors
/// A usage error (exit code 2) for invalid flags; a failure when the pilot's metrics cannot be
/// used or the output or plot cannot be written.
pub fn run(args: &PredictArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let pilot = pilot::read(&args.metrics)?;
    let request = request(args, &pilot)?;
    let cores = positive("--cores-per-node", args.cores_per_node)? as usize;
    let f = forecast(&pilot, &request);
    let sbatch = sbatch(&f, &pilot, cores);
    if let Some(path) = &args.plot {
        let subtitle = format!(
            "{}: {} of {}, policy {}, from a pilot of {}",
            pilot.app,
            crate::count(f.iterations, "iteration"),
            crate::count(f.tasks, "task"),
            f.policy,
            crate::count(pilot.workers, "worker")
        );
        plot::draw(path, &subtitle, &f).map_err(|e| {
            CliError::failure(
                format!("failed to write the plot `{}`: {e}", path.display()),
                Some("check that the folder exists and is writable".to_string()),
            )
        })?;
    }
    if args.json {
        let report = Report {
            pilot: PilotSummary {
                app: &pilot.app,
                backend: &pilot.backend,
                workers: pilot.workers,
                iterations: pilot.iterations,
                tasks: pilot.tasks,
                task_mean_ms: pilot.task_mean_ms,
                task_stddev_ms: pilot.task_sd_ms,
                iteration_ms: pilot.iteration_ms,
            },
            forecast: &f,
            sbatch,
        };
        serde_json::to_writer_pretty(&mut *out, &report).map_err(|e| CliError::output(e.into()))?;
        writeln!(out).map_err(CliError::output)
    } else {
        print_table(&pilot, &f, &sbatch, out).map_err(CliError::output)
    }
}

/// Checks the flags against the pilot and builds the request.
fn request(args: &PredictArgs, pilot: &pilot::Pilot) -> Result<Request, CliError> {
    let workers = parse_workers(&args.workers)?;
    let iterations = match args.iterations {
        Some(n) => positive("--iterations", n)? as usize,
        None => pilot.iterations,
    };
    let tasks = args
        .tasks
        .map(|n| positive("--tasks", n).map(|n| n as usize))
        .transpose()?;
    let policy = match &args.policy {
        Some(name) => Some(name.parse::<PolicyName>().map_err(|e| {
            CliError::usage(
                format!("invalid value `{name}` for `--policy`: {e}"),
                format!("give one of {}", PolicyName::all_names()),
            )
        })?),
        None => None,
    };
    if policy.is_none() && pilot.policy.is_none() {
        return Err(CliError::failure(
            format!(
                "the pilot ran policy `{}`, which this mwgen cannot simulate",
                pilot.policy_name
            ),
            Some(format!(
                "give --policy one of {} (the prediction will say it was not measured)",
                PolicyName::all_names()
            )),
        ));
    }
    let load = match &args.load {
        Some(spec) => spec.parse::<LoadPattern>().map_err(|e| {
            CliError::usage(
                format!("invalid value `{spec}` for `--load`: {}", e.message()),
                e.help().to_string(),
            )
        })?,
        None => LoadPattern::None,
    };
    let mo = match (args.link_latency, args.mo) {
        (Some(ms), _) => Some(non_negative("--link-latency", ms)?),
        (None, Some(ms)) => Some(non_negative("--mo", ms)?),
        (None, None) => None,
    };
    let k = match (args.link_bandwidth, args.k) {
        (Some(mbit), _) => {
            if !(mbit.is_finite() && mbit > 0.0) {
                return Err(CliError::usage(
                    format!("invalid value `{mbit}` for `--link-bandwidth`: must be > 0"),
                    "give the bandwidth in megabits per second, e.g. 100 or 10000",
                ));
            }
            // Mbit/s → ms per byte: 8 bits a byte, 10⁶ bits a megabit, 10³ ms a second.
            Some(8.0 / (mbit * 1000.0))
        }
        (None, Some(k)) => Some(non_negative("--k", k)?),
        (None, None) => None,
    };
    Ok(Request {
        thinned: thinned(&args.workers),
        workers,
        iterations,
        tasks,
        mo_ms: mo,
        k_ms_per_byte: k,
        policy,
        load,
    })
}

fn positive(flag: &str, n: i64) -> Result<u64, CliError> {
    if n < 1 {
        return Err(CliError::usage(
            format!("invalid value `{n}` for `{flag}`: must be at least 1"),
            format!("`{flag}` counts things; give a whole number of 1 or more"),
        ));
    }
    Ok(n as u64)
}

fn non_negative(flag: &str, v: f64) -> Result<f64, CliError> {
    if !(v.is_finite() && v >= 0.0) {
        return Err(CliError::usage(
            format!("invalid value `{v}` for `{flag}`: must be a number ≥ 0"),
            format!("`{flag}` is a time in ms"),
        ));
    }
    Ok(v)
}

/// Parses `8`, `2,4,8`, `1..64` (both ends included) or a mix, sorted and without repeats;
/// a long range is thinned to [`MAX_COUNTS`] counts.
///
/// # Errors
/// A usage error naming the part that is not a count or a range of counts.
pub fn parse_workers(spec: &str) -> Result<Vec<usize>, CliError> {
    let bad = |part: &str, why: &str| {
        CliError::usage(
            format!("invalid value `{part}` in `--workers`: {why}"),
            "give a count (8), a list (2,4,8) or a range (1..64) of counts from 1",
        )
    };
    let count = |s: &str| -> Result<usize, CliError> {
        let n: usize = s
            .trim()
            .parse()
            .map_err(|_| bad(s.trim(), "not a whole number"))?;
        if n == 0 || n > MAX_WORKERS {
            return Err(bad(s.trim(), &format!("must be from 1 to {MAX_WORKERS}")));
        }
        Ok(n)
    };
    let mut counts = Vec::new();
    for part in spec.split(',') {
        match part.split_once("..") {
            Some((a, b)) => {
                let (a, b) = (count(a)?, count(b.trim_start_matches('='))?);
                if a > b {
                    return Err(bad(part.trim(), "the range runs backwards"));
                }
                counts.extend(thin(a, b));
            }
            None => counts.push(count(part)?),
        }
    }
    counts.sort_unstable();
    counts.dedup();
    Ok(counts)
}

/// Whether a range of `spec` (already checked by [`parse_workers`]) was thinned.
fn thinned(spec: &str) -> bool {
    spec.split(',').any(|part| {
        part.split_once("..").is_some_and(|(a, b)| {
            let a = a.trim().parse::<usize>().unwrap_or(0);
            let b = b
                .trim()
                .trim_start_matches('=')
                .parse::<usize>()
                .unwrap_or(0);
            b >= a + MAX_COUNTS
        })
    })
}

/// Every count of `a..=b`, or [`MAX_COUNTS`] of them evenly spread on a log scale.
fn thin(a: usize, b: usize) -> Vec<usize> {
    if b - a < MAX_COUNTS {
        return (a..=b).collect();
    }
    let (la, lb) = ((a as f64).ln(), (b as f64).ln());
    let last = (MAX_COUNTS - 1) as f64;
    let mut counts: Vec<usize> = (0..MAX_COUNTS)
        .map(|i| (la + (lb - la) * i as f64 / last).exp().round() as usize)
        .map(|n| n.clamp(a, b))
        .collect();
    counts.dedup();
    counts
}

/// The batch line for the cheapest count near the best time: one rank per core, the master's
/// rank too, and a wall time with a margin of the prediction's uncertainty twice over plus
/// five minutes for the queue's start and stop.
fn sbatch(f: &Forecast, pilot: &pilot::Pilot, cores: usize) -> Sbatch {
    let total_ms = f
        .rows
        .iter()
        .find(|r| r.workers == f.cheapest)
        .map_or(0.0, |r| r.total_ms);
    let tasks = f.cheapest + 1;
    let nodes = tasks.div_ceil(cores);
    let seconds = total_ms / 1000.0 * (1.0 + 2.0 * f.uncertainty) + 300.0;
    let wall = (seconds / 60.0).ceil() as u64 * 60;
    // `--mpi=pmix`: the PMI plugin Debian's Open MPI is built with (the README's Slurm section).
    let program = shell_words(&program(pilot, f));
    let line = format!(
        "sbatch --nodes={nodes} --ntasks={tasks} --time={} --wrap {}",
        slurm_time(wall),
        shell_word(&format!(
            "srun --mpi=pmix {program} --backend mpi --tuning off"
        ))
    );
    Sbatch {
        workers: f.cheapest,
        nodes,
        tasks,
        wall_seconds: wall,
        line,
    }
}

/// Runtime flags the launch line sets or that belong to the pilot alone (its worker count,
/// its files, its emulated network and load), each with a value.
const PILOT_FLAGS: [&str; 11] = [
    "--workers",
    "--max-workers",
    "--backend",
    "--tuning",
    "--metrics",
    "--trace",
    "--link",
    "--link-latency",
    "--link-bandwidth",
    "--load",
    "--resume",
];

/// The program and its own arguments for the real run: the pilot's command line without the
/// [`PILOT_FLAGS`], its iteration and task counts (`--iterations`, `--steps`, `--tasks`, when
/// they are the pilot's measured counts) replaced by the real run's; `./APP` alone when the
/// metrics do not hold the command line.
fn program(pilot: &pilot::Pilot, f: &Forecast) -> Vec<String> {
    let Some((name, args)) = pilot.command.split_first() else {
        return vec![format!("./{}", pilot.app)];
    };
    let sizes = [
        ("--iterations", pilot.iterations as f64, f.iterations),
        ("--steps", pilot.iterations as f64, f.iterations),
        ("--tasks", pilot.tasks.round(), f.tasks),
    ];
    let mut out = vec![name.clone()];
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        if PILOT_FLAGS.contains(&flag) {
            if inline.is_none() {
                args.next();
            }
            continue;
        }
        let Some(&(_, measured, real)) = sizes.iter().find(|(s, ..)| *s == flag) else {
            out.push(arg.clone());
            continue;
        };
        let value = match inline {
            Some(value) => Some(value),
            None => args.next().cloned(),
        };
        let value = match value {
            Some(v) if v.parse::<f64>().is_ok_and(|v| v == measured) => real.to_string(),
            Some(v) => v,
            None => String::new(),
        };
        out.push(flag.to_owned());
        out.push(value);
    }
    out
}

/// Words for a POSIX shell: each quoted when it holds more than `[A-Za-z0-9_./=:,+%@-]`.
fn shell_words(words: &[String]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| shell_word(w)).collect();
    quoted.join(" ")
}

fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./=:,+%@-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Slurm's `--time`: `HH:MM:SS`, or `D-HH:MM:SS` from a day on.
fn slurm_time(seconds: u64) -> String {
    let (days, s) = (seconds / 86_400, seconds % 86_400);
    let hms = format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60);
    if days > 0 {
        format!("{days}-{hms}")
    } else {
        hms
    }
}

fn print_table(
    pilot: &pilot::Pilot,
    f: &Forecast,
    sbatch: &Sbatch,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "pilot: {} on {}, {}, {} of {:.0} tasks, task {:.4} ± {:.4} ms, {:.2} ms per iteration",
        pilot.app,
        pilot.backend,
        crate::count(pilot.workers, "worker"),
        crate::count(pilot.iterations, "iteration"),
        pilot.tasks,
        pilot.task_mean_ms,
        pilot.task_sd_ms,
        pilot.iteration_ms
    )?;
    writeln!(
        out,
        "run:   {} of {}, policy {}, {} protocol, mo = {:.4} ms, k = {:.3e} ms/B",
        crate::count(f.iterations, "iteration"),
        crate::count(f.tasks, "task"),
        f.policy,
        pilot.protocol,
        f.mo_ms,
        f.k_ms_per_byte
    )?;
    if f.simulated_because.is_empty() {
        writeln!(out, "method: the {} model (its assumptions hold)", f.model)?;
    } else {
        writeln!(
            out,
            "method: event simulation, because {}",
            f.simulated_because.join("; ")
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:>7}  {:>14}  {:>12}  {:>7}  {:>7}",
        "workers", "time", "worker-hours", "E", "master"
    )?;
    for r in &f.rows {
        let mut marks = Vec::new();
        if r.workers == f.best_time {
            marks.push("fastest");
        }
        if r.workers == f.cheapest {
            marks.push("cheapest near the fastest");
        }
        let row = format!(
            "{:>7}  {:>14}  {:>12.4}  {:>6.1}%  {:>6.0}%  {}",
            r.workers,
            duration(r.total_ms),
            r.worker_hours,
            100.0 * r.efficiency,
            100.0 * r.master_busy,
            if marks.is_empty() {
                String::new()
            } else {
                format!("<- {}", marks.join(", "))
            }
        );
        writeln!(out, "{}", row.trim_end())?;
    }
    writeln!(out)?;
    let time_of = |n: usize| f.rows.iter().find(|r| r.workers == n).map(|r| r.total_ms);
    let pm = format!("± {:.0} %", 100.0 * f.uncertainty);
    if let Some(t) = time_of(f.best_time) {
        writeln!(
            out,
            "fastest:    {}, {} {pm}",
            crate::count(f.best_time, "worker"),
            duration(t)
        )?;
    }
    if let Some(t) = time_of(f.cheapest) {
        writeln!(
            out,
            "cheapest:   {}, {} {pm} (fewest worker-hours within {:.0} % of the fastest)",
            crate::count(f.cheapest, "worker"),
            duration(t),
            100.0 * forecast::NEAR_BEST
        )?;
    }
    match f.mcmc {
        Some(m) => writeln!(
            out,
            "MCMC:       {m} workers (the most the master can feed before the first answer returns)"
        )?,
        None => writeln!(out, "MCMC:       none (the master never falls behind)")?,
    }
    match f.master_bottleneck {
        Some(n) => writeln!(
            out,
            "master:     the bottleneck from {n} workers (it or its link busy {:.0} % of an iteration or more)",
            100.0 * forecast::MASTER_SATURATED
        )?,
        None => writeln!(
            out,
            "master:     not the bottleneck at any count asked (busy under {:.0} %)",
            100.0 * forecast::MASTER_SATURATED
        )?,
    }
    let fastest = f.rows.iter().find(|r| r.workers == f.best_time);
    if let Some(r) = fastest.filter(|r| Some(r.workers) != f.rows.last().map(|l| l.workers)) {
        writeln!(
            out,
            "            at the fastest count it or its link is busy {:.0} %: more workers only add messages",
            100.0 * r.master_busy
        )?;
    }
    writeln!(out, "sbatch:     {}", sbatch.line)?;
    for c in &f.caveats {
        writeln!(out, "caveat: {c}")?;
    }
    Ok(())
}

/// A time in ms as the user reads it: ms, s, or h:mm:ss.
fn duration(ms: f64) -> String {
    if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else if ms < 600_000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else {
        let s = (ms / 1000.0).round() as u64;
        format!("{}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
    }
}

#[cfg(test)]
mod tests;
