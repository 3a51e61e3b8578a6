//! Run configuration: `Mw.toml` in the project directory, overridden by command-line flags.
//!
//! Applications flatten [`RunArgs`] into their own clap parser, so every program accepts the
//! runtime's flags beside its own.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::error::ValueError;
use crate::error::{Error, ErrorKind, Result};
use crate::input::{InputKind, read_input_text};
use crate::load::LoadPattern;
use crate::policy::{PolicyChoice, PolicyName};
use crate::tuning::control::ControlAddr;
use crate::tuning::tunables::{Tunables, check_factor};

mod faults;

pub(crate) use crate::protocol::Protocol;
pub(crate) use crate::tuning::config::{Objective, TuneMode, TuningConfig, TuningSection};
pub(crate) use faults::BACKUP_MARGIN;
pub use faults::{FaultConfig, OnTaskFailure};

/// Which communication backend runs the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum BackendChoice {
    /// MPI when started by `mpirun` or `srun` with 2 or more processes, threads otherwise.
    #[default]
    Auto,
    /// One thread per worker in this process.
    Local,
    /// One MPI rank per worker; needs the `mpi` feature.
    Mpi,
}

/// The runtime's command-line flags; flatten into your own parser with `#[command(flatten)]`.
/// Flags left out fall back to `Mw.toml`, then to the defaults.
#[derive(Debug, Clone, Default, Args)]
// Negative numbers reach the value parsers, which say what is allowed (clap would call `-1` an
// unexpected argument).
#[command(next_help_heading = "Runtime", allow_negative_numbers = true)]
pub struct RunArgs {
    /// Workers taking part at the start (`nworkers`) [default: one per core, at most the pool; under MPI the pool]
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub workers: Option<usize>,
    /// Workers started, the most that can take part [default: with nworkers tuned, room to grow (4 per core, at least 16); else --workers, else one per core; under MPI the launched ranks]
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub max_workers: Option<usize>,
    /// Task distribution policy: a built-in one or one the program registers [default: daf]
    #[arg(long, value_name = "NAME")]
    pub policy: Option<PolicyChoice>,
    /// Distribution factor, in (0, 1] [default: 0.5]
    #[arg(long, value_name = "F", value_parser = parse_factor)]
    pub factor: Option<f64>,
    /// Smallest chunk, in tasks [default: 1]
    #[arg(long, value_name = "TASKS", value_parser = parse_count)]
    pub min_chunk: Option<usize>,
    /// Message protocol [default: async]
    #[arg(long, value_name = "P")]
    pub protocol: Option<Protocol>,
    /// Chunks a worker may hold beyond the one it processes, so it never waits for the next; 0 turns it off [default: 1 under async; sync: 0]
    #[arg(long, value_name = "CHUNKS", value_parser = parse_whole)]
    pub prefetch: Option<usize>,
    /// Communication backend [default: auto]
    #[arg(long, value_name = "B")]
    pub backend: Option<BackendChoice>,
    /// Write run metrics as JSON to this file when the run ends
    #[arg(long, value_name = "PATH")]
    pub metrics: Option<PathBuf>,
    /// Write a Chrome trace-event JSON of the run to this file (open it in Perfetto or chrome://tracing)
    #[arg(long, value_name = "PATH")]
    pub trace: Option<PathBuf>,
    /// Events the trace keeps; a longer run keeps its beginning, plus counters and decisions for all of it [default: 1000000]
    #[arg(long, value_name = "EVENTS", value_parser = parse_whole)]
    pub trace_limit: Option<usize>,
    /// No progress line and no summary at the end of the run
    #[arg(long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// With each tuning decision, the model's numbers behind it (also kept in the metrics)
    #[arg(long)]
    pub verbose: bool,
    /// Emulated external load: none, variable, increasing, or ITERATION:WORKERS:PERCENT,... [default: none]
    ///
    /// `variable[:PERIOD[:PERCENT]]` (defaults 8 and 75): PERCENT load on the even-numbered
    /// workers in iterations PERIOD..2·PERIOD, 3·PERIOD..4·PERIOD, ...
    /// `increasing[:PERIOD[:PERCENT]]`: worker w is loaded from iteration PERIOD·(w+1) on.
    /// Steps such as `0:0-3:75,8:0-3:0`: workers 0 to 3 at 75 % from iteration 0, at 0 % from
    /// iteration 8 (WORKERS is `*`, `N` or `N-M`). An emulation: a worker under p % load sleeps
    /// t·p/(100−p) after each task that took t.
    #[arg(long, value_name = "PATTERN", value_parser = parse_load)]
    pub load: Option<LoadPattern>,
    /// Emulated network on the local backend: one-way latency of every message, in ms
    ///
    /// With `--link-bandwidth`, an emulation of the master's network card: one link each way,
    /// shared by all workers, a message occupying it for bytes/bandwidth then arriving a latency
    /// later. Refused under MPI, where the network is real.
    #[arg(long, value_name = "MS", value_parser = parse_positive, allow_negative_numbers = true)]
    pub link_latency: Option<f64>,
    /// Emulated network on the local backend: bandwidth of the master's link each way, in megabits per second (100 for the papers' Fast Ethernet)
    #[arg(long, value_name = "MBIT", value_parser = parse_positive, allow_negative_numbers = true)]
    pub link_bandwidth: Option<f64>,
    /// Emulated network on the local backend, by name: fast-ethernet, gigabit, 10-gigabit or infiniband
    ///
    /// Sets the latency and bandwidth of a common network (`fast-ethernet` is the papers' 100
    /// Mbit/s switched Ethernet); `--link-latency` and `--link-bandwidth` override either part.
    #[arg(long, value_name = "NETWORK")]
    pub link: Option<LinkPreset>,
    /// Configuration file [default: Mw.toml if present]
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// What the tuner may change while the program runs [default: on]
    ///
    /// Not `--tune`: `mpirun` reads `--tune FILE` anywhere on its command line, the program's
    /// arguments included, as its own option.
    #[arg(long = "tuning", value_name = "WHAT")]
    pub tune: Option<TuneMode>,
    /// What the choice of `nworkers` minimizes: `index` (time per resource) or `time` [default: time
    /// for MPI ranks, which keep their allocation when parked; index for threads]
    #[arg(long, value_name = "GOAL")]
    pub objective: Option<Objective>,
    /// Expose the tunables on a control endpoint: a Unix socket path or 127.0.0.1:PORT
    #[arg(long, value_name = "ADDR")]
    pub control: Option<ControlAddr>,
    /// Attempts at a failing task beyond the first, on another worker when there is one [default: 2]
    #[arg(long, value_name = "N", value_parser = faults::parse_retries, help_heading = "Faults")]
    pub task_retries: Option<u32>,
    /// What a task that failed every attempt does: end the run (`fail`), or go on without it, telling the master's `task_failed` (`skip`) [default: fail]
    #[arg(long, value_name = "WHAT", help_heading = "Faults")]
    pub on_task_failure: Option<OnTaskFailure>,
    /// Copy a chunk to an idle worker once it has been out this many times its expected time; the first answer wins; 0: never [default: 2]
    #[arg(long, value_name = "TIMES", value_parser = faults::parse_backup, help_heading = "Faults")]
    pub backup_after: Option<f64>,
    /// Save what the run needs to go on (the master's `checkpoint` hook, the iteration, the tunables) to this file at every iteration boundary
    #[arg(long, value_name = "PATH", help_heading = "Faults")]
    pub checkpoint: Option<PathBuf>,
    /// Inside a long iteration (a one-bag job), save a checkpoint every this many seconds too [default: 5]
    #[arg(long, value_name = "SECS", value_parser = faults::parse_seconds, help_heading = "Faults")]
    pub checkpoint_every: Option<f64>,
    /// Go on from a checkpoint written by --checkpoint, as if the run had never stopped
    #[arg(long, value_name = "PATH", help_heading = "Faults")]
    pub resume: Option<PathBuf>,
    /// Declare a worker lost once it holds chunks and the master listened this many seconds without hearing from it; its chunks run elsewhere [default: 60]
    #[arg(long, value_name = "SECS", value_parser = faults::parse_seconds, help_heading = "Faults")]
    pub liveness_timeout: Option<f64>,
}

fn parse_count(text: &str) -> std::result::Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) if is_negative(text) => Err("must be at least 1".into()),
        Err(_) => Err(format!("`{text}` is not a whole number")),
    }
}

/// A whole number, 0 included; ranges are checked with the file's values in `validate`, so the
/// flag and the key get the same error and `help:` line.
fn parse_whole(text: &str) -> std::result::Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) => Ok(n),
        Err(_) if is_negative(text) => Err("must be 0 or more".into()),
        Err(_) => Err(format!("`{text}` is not a whole number")),
    }
}

fn is_negative(text: &str) -> bool {
    text.trim().parse::<f64>().is_ok_and(|v| v < 0.0)
}

/// The most chunks a worker may hold beyond the one it processes: one hides the round trip;
/// a few more ride out a master that is briefly busy elsewhere.
pub(crate) const MAX_PREFETCH: usize = 8;

/// The most workers a run may ask for: far past any speed-up on one machine, and far below
/// what exhausts its threads or memory (100,000 threads abort the process).
pub(crate) const MAX_WORKERS: usize = 4096;

/// The largest smallest chunk: a billion tasks is past any iteration a chunk could split, and
/// keeps `workers × min_chunk` far from overflowing.
pub(crate) const MAX_MIN_CHUNK: usize = 1_000_000_000;

/// The most events a trace may keep: about 11 GB of memory and of file at 110 bytes an event.
pub(crate) const MAX_TRACE_LIMIT: usize = 100_000_000;

/// Events a trace keeps by default (`--trace-limit`).
const DEFAULT_TRACE_LIMIT: usize = 1_000_000;

fn parse_load(text: &str) -> std::result::Result<LoadPattern, ValueError> {
    text.parse()
}

/// A link's latency or bandwidth: the error carries the `help:` line the `[run]` keys get.
fn parse_positive(text: &str) -> std::result::Result<f64, String> {
    const HELP: &str = "\n\nhelp: give the one-way latency in ms (e.g. --link-latency 0.1) and the \
                        bandwidth in megabits per second (e.g. --link-bandwidth 100 for Fast \
                        Ethernet), or name a network with --link";
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err(format!("must be a positive number{HELP}")),
        Err(_) => Err(format!("`{text}` is not a number{HELP}")),
    }
}

/// A number; its range is checked once, with the factor from `Mw.toml` or set while the run
/// goes on (`tunables::check_factor`), so every refusal reads the same.
fn parse_factor(text: &str) -> std::result::Result<f64, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number"))
}

/// The `[run]` table of `Mw.toml`; every key is optional.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    pub workers: Option<usize>,
    pub max_workers: Option<usize>,
    pub policy: Option<PolicyChoice>,
    pub factor: Option<f64>,
    pub min_chunk: Option<usize>,
    pub protocol: Option<Protocol>,
    pub prefetch: Option<usize>,
    pub backend: Option<BackendChoice>,
    pub metrics: Option<PathBuf>,
    pub trace: Option<PathBuf>,
    pub trace_limit: Option<usize>,
    pub quiet: Option<bool>,
    /// Emulated external load, in the syntax of `--load`.
    pub load: Option<LoadPattern>,
    /// Emulated link, as `--link` (a named network), `--link-latency` (ms) and
    /// `--link-bandwidth` (Mbit/s).
    pub link: Option<LinkPreset>,
    pub link_latency: Option<f64>,
    pub link_bandwidth: Option<f64>,
    /// Failing tasks and lost workers, as the flags of the same names.
    pub task_retries: Option<u32>,
    pub on_task_failure: Option<OnTaskFailure>,
    pub backup_after: Option<f64>,
    /// Seconds.
    pub liveness_timeout: Option<f64>,
    /// As `--checkpoint`.
    pub checkpoint: Option<PathBuf>,
}

/// `Mw.toml`: the run defaults of a project, plus the answers `mwgen new` was given (kept in
/// `[project]`, which the runtime does not read).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default)]
    pub run: RunSection,
    #[serde(default)]
    pub tuning: TuningSection,
    #[serde(default)]
    pub project: toml::Table,
}

impl ConfigFile {
    /// Reads and parses a configuration file. It is read only when it is the user's own (or
    /// root's) and nobody else may write it, since it decides where a run writes; and only
    /// when it is a regular file of at most [`InputKind::Config`]'s limit (1 MiB).
    ///
    /// # Errors
    /// When the file is missing, cannot be read, is not the user's own, is a device or a pipe
    /// or too large, or is not valid TOML of the expected shape; the message names the file
    /// and gives the reason (of TOML, the line and column), the `help:` line what to do.
    pub fn load(path: &Path) -> Result<ConfigFile> {
        let text = read_input_text(path, InputKind::Config).map_err(|e| unreadable(path, &e))?;
        ConfigFile::parse(&text).map_err(|message| {
            ErrorKind::ConfigFile {
                path: path.to_owned(),
                message,
            }
            .into()
        })
    }

    /// Parses configuration text; the error is toml's report with line and column.
    ///
    /// # Errors
    /// The text is not valid TOML or has unknown keys or wrong value types.
    pub fn parse(text: &str) -> std::result::Result<ConfigFile, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }
}

/// Why the configuration file at `path` cannot be read, and what to do.
fn unreadable(path: &Path, e: &std::io::Error) -> Error {
    let shown = path.display();
    match e.kind() {
        _ if crate::input::Untrusted::is(e) => Error::config(
            format!("error: the configuration file `{shown}` is not read: {e}"),
            format!(
                "make it yours and private (`chmod go-w {shown}`, as its owner), or copy it to a \
                 file of your own and pass that with --config"
            ),
        ),
        std::io::ErrorKind::NotFound => Error::config(
            format!("error: the configuration file `{shown}` was not found"),
            "check the path given to --config, or leave --config out (a run reads `Mw.toml` of \
             the current directory when there is one)",
        ),
        _ => Error::config(
            format!("error: cannot read the configuration file `{shown}`: {e}"),
            "give --config a TOML file such as the `Mw.toml` that `mwgen new` writes",
        ),
    }
}

/// The settings of a run after `Mw.toml` and flags are merged and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// Workers taking part at the start; `None`: one per core on the local backend (at most the
    /// pool), the whole pool under MPI (the launched ranks when the pool grows past them and
    /// `nworkers` is tuned).
    pub workers: Option<usize>,
    /// Workers started (the pool); `None`: see [`RunConfig::local_pool`] for the local backend.
    /// Under MPI the pool is the launched ranks but one, or more when this asks for more: the
    /// rest are spawned as needed (as many as the allocation has free slots for).
    pub max_workers: Option<usize>,
    /// The policy: a built-in one, or one the program registers under a name of its own
    /// ([`Setup::register_policy`](crate::Setup::register_policy)), looked up when the run
    /// starts.
    pub policy: PolicyChoice,
    pub factor: f64,
    pub min_chunk: usize,
    pub protocol: Protocol,
    /// Chunks a worker may hold beyond the one it processes (under `async`); `None`: 1 under
    /// `async`, 0 under `sync`. See [`RunConfig::prefetch_depth`].
    pub prefetch: Option<usize>,
    pub backend: BackendChoice,
    pub metrics: Option<PathBuf>,
    /// What the tuner may change, within which range, how cautiously, towards what.
    pub tuning: TuningConfig,
    /// Where to expose the tunables while the run lasts (`--control`).
    pub control: Option<ControlAddr>,
    /// Where to write the Chrome trace of the run; `None`: no trace is recorded.
    pub trace: Option<PathBuf>,
    /// Events the trace keeps at most (slices and arrow ends).
    pub trace_limit: usize,
    /// No progress line, no summary.
    pub quiet: bool,
    /// Each tuning decision with the model's numbers behind it, not only its summary.
    pub verbose: bool,
    /// Emulated external load on the workers ([`LoadPattern::None`] for none).
    pub load: LoadPattern,
    /// Emulated network between master and workers on the local backend.
    pub link: Option<EmulatedLink>,
    /// Failing tasks, stragglers, silent workers.
    pub faults: FaultConfig,
    /// Where to save a checkpoint at every iteration boundary (`--checkpoint`).
    pub checkpoint: Option<PathBuf>,
    /// How often to save one inside a long iteration (`--checkpoint-every`).
    pub checkpoint_every: std::time::Duration,
    /// The checkpoint to go on from (`--resume`).
    pub resume: Option<PathBuf>,
}

/// An emulated network (`--link-latency`, `--link-bandwidth`): the master's network card, one
/// link each way shared by all workers. A message waits for the link to be free, occupies it
/// for its encoded size over the bandwidth, and arrives `latency` after it has left.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EmulatedLink {
    /// One-way latency of every message, in ms (0 when only a bandwidth is given).
    pub latency_ms: f64,
    /// Megabits per second each way; `None`: no limit.
    pub bandwidth_mbit: Option<f64>,
}

/// Common networks for `--link`, with a typical one-way latency and the bandwidth each way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum LinkPreset {
    /// 100 Mbit/s switched Ethernet, 0.1 ms: the clusters of the POETRIES and Cesar et al. papers.
    FastEthernet,
    /// 1 Gbit/s Ethernet, 0.05 ms.
    Gigabit,
    /// 10 Gbit/s Ethernet, 0.02 ms.
    #[value(name = "10-gigabit")]
    #[serde(rename = "10-gigabit")]
    TenGigabit,
    /// 100 Gbit/s InfiniBand (HDR), 0.002 ms.
    Infiniband,
}

impl LinkPreset {
    /// The network as an emulated link.
    pub fn link(self) -> EmulatedLink {
        let (latency_ms, mbit) = match self {
            LinkPreset::FastEthernet => (0.1, 100.0),
            LinkPreset::Gigabit => (0.05, 1_000.0),
            LinkPreset::TenGigabit => (0.02, 10_000.0),
            LinkPreset::Infiniband => (0.002, 100_000.0),
        };
        EmulatedLink {
            latency_ms,
            bandwidth_mbit: Some(mbit),
        }
    }
}

impl EmulatedLink {
    /// `k`: the link's cost per byte, in ms.
    pub fn ms_per_byte(&self) -> f64 {
        self.bandwidth_mbit.map_or(0.0, |mbit| 8.0 / (mbit * 1e3))
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            workers: None,
            max_workers: None,
            policy: PolicyName::Daf.into(),
            factor: 0.5,
            min_chunk: 1,
            protocol: Protocol::Async,
            prefetch: None,
            backend: BackendChoice::Auto,
            metrics: None,
            tuning: TuningConfig::default(),
            control: None,
            trace: None,
            trace_limit: DEFAULT_TRACE_LIMIT,
            quiet: false,
            verbose: false,
            load: LoadPattern::None,
            link: None,
            faults: FaultConfig::default(),
            checkpoint: None,
            checkpoint_every: std::time::Duration::from_secs(5),
            resume: None,
        }
    }
}

impl RunConfig {
    /// Merges the defaults, the configuration file (`--config`, else `Mw.toml` in the current
    /// directory when present) and the flags, in rising priority, and checks the result.
    ///
    /// # Errors
    /// An unreadable or malformed configuration file, or values out of range.
    pub fn resolve(args: &RunArgs) -> Result<RunConfig> {
        let default = Path::new("Mw.toml");
        let file = match &args.config {
            Some(path) => ConfigFile::load(path)?,
            // Whatever is there (a pipe, another user's file) is looked at and refused, not
            // passed over in silence.
            None if std::fs::symlink_metadata(default).is_ok() => ConfigFile::load(default)?,
            None => ConfigFile::default(),
        };
        RunConfig::merge_file(&file, args)
    }

    /// Merges a whole configuration file (`[run]` and `[tuning]`) and flags over the defaults,
    /// and checks the result.
    ///
    /// # Errors
    /// Values out of range, or a control endpoint that is not a local address.
    pub fn merge_file(file: &ConfigFile, args: &RunArgs) -> Result<RunConfig> {
        let mut config = RunConfig::merge(&file.run, args)?;
        config.tuning = TuningConfig::merge(&file.tuning, args.tune, args.objective);
        config.control = match (&args.control, &file.tuning.control) {
            (Some(addr), _) => Some(addr.clone()),
            (None, Some(text)) => Some(text.parse().map_err(|e: ValueError| {
                Error::config(
                    format!("error: `[tuning] control` = `{text}`: {}", e.message()),
                    e.help(),
                )
            })?),
            (None, None) => None,
        };
        config.validate()?;
        Ok(config)
    }

    /// Merges a `[run]` table and flags over the defaults, and checks the result.
    ///
    /// # Errors
    /// Values out of range, with what to do about them.
    pub fn merge(file: &RunSection, args: &RunArgs) -> Result<RunConfig> {
        let defaults = RunConfig::default();
        for (key, value) in [
            ("link_latency", file.link_latency),
            ("link_bandwidth", file.link_bandwidth),
        ] {
            if let Some(v) = value.filter(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(Error::config(
                    format!("error: `[run] {key}` = {v} is not a positive number"),
                    "give the one-way latency in ms (e.g. 0.1) and the bandwidth in megabits per \
                     second (e.g. 100 for Fast Ethernet), or leave the key out",
                ));
            }
        }
        let config = RunConfig {
            workers: args.workers.or(file.workers),
            max_workers: args.max_workers.or(file.max_workers),
            policy: args
                .policy
                .clone()
                .or_else(|| file.policy.clone())
                .unwrap_or_else(|| defaults.policy.clone()),
            factor: args.factor.or(file.factor).unwrap_or(defaults.factor),
            min_chunk: args
                .min_chunk
                .or(file.min_chunk)
                .unwrap_or(defaults.min_chunk),
            protocol: args.protocol.or(file.protocol).unwrap_or(defaults.protocol),
            prefetch: args.prefetch.or(file.prefetch),
            backend: args.backend.or(file.backend).unwrap_or(defaults.backend),
            metrics: args.metrics.clone().or_else(|| file.metrics.clone()),
            tuning: TuningConfig {
                mode: args.tune.unwrap_or(defaults.tuning.mode),
                objective: args.objective,
                ..defaults.tuning
            },
            control: args.control.clone(),
            trace: args.trace.clone().or_else(|| file.trace.clone()),
            trace_limit: args
                .trace_limit
                .or(file.trace_limit)
                .unwrap_or(defaults.trace_limit),
            quiet: args.quiet || file.quiet.unwrap_or(defaults.quiet),
            verbose: args.verbose,
            load: args
                .load
                .clone()
                .or_else(|| file.load.clone())
                .unwrap_or_default(),
            link: {
                let preset = args.link.or(file.link).map(LinkPreset::link);
                match (
                    args.link_latency.or(file.link_latency),
                    args.link_bandwidth.or(file.link_bandwidth),
                ) {
                    (None, None) => preset,
                    (latency, bandwidth) => Some(EmulatedLink {
                        latency_ms: latency.or(preset.map(|p| p.latency_ms)).unwrap_or(0.0),
                        bandwidth_mbit: bandwidth.or(preset.and_then(|p| p.bandwidth_mbit)),
                    }),
                }
            },
            faults: FaultConfig {
                task_retries: args
                    .task_retries
                    .or(file.task_retries)
                    .unwrap_or(defaults.faults.task_retries),
                on_task_failure: args
                    .on_task_failure
                    .or(file.on_task_failure)
                    .unwrap_or(defaults.faults.on_task_failure),
                backup_after: args
                    .backup_after
                    .or(file.backup_after)
                    .unwrap_or(defaults.faults.backup_after),
                liveness: match args.liveness_timeout.or(file.liveness_timeout) {
                    Some(secs) if secs.is_finite() && secs > 0.0 && secs <= 1e9 => {
                        std::time::Duration::from_secs_f64(secs)
                    }
                    Some(secs) => {
                        return Err(Error::config(
                            format!("error: `liveness_timeout` = {secs} is not a positive number"),
                            "give the seconds a busy worker may stay silent (default 60)",
                        ));
                    }
                    None => defaults.faults.liveness,
                },
            },
            checkpoint: args.checkpoint.clone().or_else(|| file.checkpoint.clone()),
            checkpoint_every: args.checkpoint_every.map_or(
                defaults.checkpoint_every,
                std::time::Duration::from_secs_f64,
            ),
            resume: args.resume.clone(),
        };
        config.validate()?;
        Ok(config)
    }

    /// Checks ranges: at least one worker, `workers ≤ max_workers`, factor in `(0, 1]`, prefetch
    /// only under `async`.
    ///
    /// # Errors
    /// The first value out of range, with what to do.
    pub fn validate(&self) -> Result<()> {
        if self.workers == Some(0) || self.max_workers == Some(0) {
            return Err(Error::config(
                "error: a run with 0 workers",
                "a run needs at least one worker: set --workers and --max-workers to 1 or more",
            ));
        }
        let counts = [
            ("workers", self.workers),
            ("max_workers", self.max_workers),
            ("[tuning] min_workers", Some(self.tuning.min_workers)),
            ("[tuning] max_workers", self.tuning.max_workers),
        ];
        if let Some((key, n)) = counts
            .into_iter()
            .find_map(|(key, n)| n.filter(|&n| n > MAX_WORKERS).map(|n| (key, n)))
        {
            return Err(Error::config(
                format!("error: `{key}` = {n} is more than {MAX_WORKERS} workers"),
                format!(
                    "each worker is a thread of this process (under MPI, a rank): ask for at \
                     most {MAX_WORKERS}"
                ),
            ));
        }
        if let (Some(workers), Some(max)) = (self.workers, self.max_workers) {
            if max < workers {
                return Err(Error::config(
                    format!("error: `workers` = {workers} is more than `max_workers` = {max}"),
                    "raise --max-workers or lower --workers",
                ));
            }
        }
        if self.min_chunk == 0 {
            return Err(Error::config(
                "error: `min_chunk` is 0",
                "a chunk holds at least one task: set --min-chunk 1 or more",
            ));
        }
        if self.min_chunk > MAX_MIN_CHUNK {
            return Err(Error::config(
                format!(
                    "error: `min_chunk` = {} is more than {MAX_MIN_CHUNK} tasks",
                    self.min_chunk
                ),
                format!(
                    "a chunk larger than an iteration holds the whole iteration: set --min-chunk \
                     to at most {MAX_MIN_CHUNK} (default 1)"
                ),
            ));
        }
        if self.trace_limit > MAX_TRACE_LIMIT {
            return Err(Error::config(
                format!(
                    "error: `trace_limit` = {} is more than {MAX_TRACE_LIMIT} events",
                    self.trace_limit
                ),
                format!(
                    "a trace event takes about 110 bytes of memory and of file: set \
                     --trace-limit to at most {MAX_TRACE_LIMIT} (default 1000000)"
                ),
            ));
        }
        check_factor(self.factor)?;
        if let Some(link) = &self.link {
            let bad = |key: &str, value: f64| {
                Error::config(
                    format!("error: `{key}` = {value} is not a positive number"),
                    "give the one-way latency in ms (e.g. 0.1) and the bandwidth in megabits \
                     per second (e.g. 100 for Fast Ethernet)",
                )
            };
            if !(link.latency_ms.is_finite() && link.latency_ms >= 0.0) {
                return Err(bad("link_latency", link.latency_ms));
            }
            if let Some(mbit) = link.bandwidth_mbit.filter(|b| !(b.is_finite() && *b > 0.0)) {
                return Err(bad("link_bandwidth", mbit));
            }
        }
        match self.prefetch {
            Some(n) if n > MAX_PREFETCH => {
                return Err(Error::config(
                    format!("error: `prefetch` = {n} is more than {MAX_PREFETCH} chunks"),
                    format!(
                        "one chunk ahead hides the round trip: set --prefetch 1 (at most \
                         {MAX_PREFETCH})"
                    ),
                ));
            }
            Some(n) if n > 0 && self.protocol == Protocol::Sync => {
                return Err(Error::config(
                    format!("error: `prefetch` = {n} needs the async protocol"),
                    "under sync a send waits until the worker takes the message, and a busy \
                     worker takes its next chunk only when it is done: use --protocol async, or \
                     --prefetch 0",
                ));
            }
            _ => {}
        }
        self.faults.validate()?;
        self.tuning.validate()
    }

    /// Chunks a worker may hold beyond the one it is processing: the next ones wait at the
    /// worker, so it starts on them as soon as it is done instead of after a round trip to the
    /// master. `prefetch` when given, else 1 under `async` and 0 under `sync` (a synchronous send
    /// to a busy worker would hold the master until that worker is done).
    ///
    /// The engine hands chunks out ahead only while many tasks are left to cut, so the last
    /// chunks of an iteration still go to whichever worker is free first.
    pub fn prefetch_depth(&self) -> usize {
        match (self.prefetch, self.protocol) {
            (_, Protocol::Sync) => 0,
            (Some(n), Protocol::Async) => n,
            (None, Protocol::Async) => 1,
        }
    }

    /// What the tuner takes of this configuration.
    pub(crate) fn tuner_setup(&self) -> crate::tuning::TunerSetup {
        crate::tuning::TunerSetup {
            tuning: self.tuning.clone(),
            protocol: self.protocol,
            prefetch: self.prefetch_depth(),
            min_chunk: self.min_chunk,
            auto_policy: self.policy == PolicyChoice::BuiltIn(PolicyName::Auto),
            quiet: self.quiet,
        }
    }

    /// Threads to start on the local backend: `max_workers` when given. Otherwise, when the
    /// tuner may change `nworkers`, room to grow: the larger of the starting workers and
    /// `[tuning] max_workers`, else of the starting workers and four threads per core (16 to
    /// 256) — parked threads block on a channel and cost no CPU, only a stack and what
    /// `Worker::initialize` allocates. Without workers tuning, `workers`, else one per core.
    pub fn local_pool(&self) -> usize {
        if let Some(max) = self.max_workers {
            return max;
        }
        let start = self.workers.unwrap_or_else(cores);
        if self.tuning.mode.tunes_workers() {
            start.max(self.tuning.max_workers.unwrap_or_else(default_tuned_pool))
        } else {
            start
        }
    }

    /// Workers taking part at the start on the local backend: `workers`, else one per core,
    /// at most the pool.
    pub fn local_start(&self, pool: usize) -> usize {
        self.workers.unwrap_or_else(cores).clamp(1, pool.max(1))
    }

    /// The tunables a run over `pool` workers starts with.
    pub fn tunables(&self, pool: usize) -> Tunables {
        Tunables {
            nworkers: self.workers.unwrap_or(pool).clamp(1, pool.max(1)),
            factor: self.factor,
            policy: self.starting_policy().into(),
        }
    }

    /// The policy that cuts the first chunks: `auto` starts as [`PolicyName::starting`] says;
    /// a registered policy is looked up once the program has registered it, before any chunk
    /// is cut, and `daf` stands in until then.
    pub(crate) fn starting_policy(&self) -> PolicyName {
        match &self.policy {
            PolicyChoice::BuiltIn(name) => name.starting(),
            PolicyChoice::Registered(_) => PolicyName::Daf,
        }
    }
}

/// The cores of this machine (2 when unknown).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, usize::from)
}

/// The local pool when `nworkers` is tuned and no bound was given: four threads per core, at
/// least 16 and at most 256 — enough for workloads that wait more than they compute (the
/// papers' workers are other machines) to find their best worker count.
pub(crate) fn default_tuned_pool() -> usize {
    (4 * cores()).clamp(16, 256)
}

#[cfg(test)]
mod tests;
