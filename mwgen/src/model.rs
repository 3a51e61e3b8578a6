//! `mwgen model`: the performance model (Cesar et al. 2006), offline.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use mw_runtime::Protocol;
use mw_runtime::model::broadcast::{self, BroadcastParams};
use mw_runtime::model::{self, MAX_SWEEP_POINTS, ModelError, Params, Point};
use serde::Serialize;

use crate::CliError;

mod plot;

pub(crate) const LONG_ABOUT: &str = "\
Evaluate the performance model offline.

For each number of workers n, prints the predicted iteration time Tt(n), the efficiency
E(n) = Tc/(n·Tt) and the performance index Pi(n) = n·Tt²/Tc, then the n of lowest Tt, the n of
lowest Pi (the tuner's choice), and the MCMC: the most workers the master can feed before the
first answer comes back.

Example (the paper's Fig. 6):
  mwgen model --tc 1600 --volume 4096 --latency 1 --per-byte 0.001 --max-workers 60";

/// Arguments of `mwgen model`.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// Total processing time of all workers in one iteration (Tc), in ms
    #[arg(
        long,
        value_name = "MS",
        allow_negative_numbers = true,
        help_heading = "Model"
    )]
    pub tc: f64,

    /// Total bytes moved in one iteration, both directions (V)
    #[arg(
        long,
        value_name = "BYTES",
        allow_negative_numbers = true,
        required_unless_present = "broadcast",
        help_heading = "Model"
    )]
    pub volume: Option<f64>,

    /// Per-message start-up time (mo), in ms
    #[arg(
        long,
        value_name = "MS",
        allow_negative_numbers = true,
        help_heading = "Model"
    )]
    pub latency: f64,

    /// Per-byte cost, the inverse bandwidth (k), in ms per byte
    #[arg(
        long,
        value_name = "MS",
        allow_negative_numbers = true,
        help_heading = "Model"
    )]
    pub per_byte: f64,

    /// Share of the volume sent to the workers (α); the rest comes back
    #[arg(
        long,
        value_name = "A",
        default_value_t = 0.5,
        allow_negative_numbers = true,
        help_heading = "Model"
    )]
    pub alpha: f64,

    /// How the master sends messages
    #[arg(
        long,
        value_name = "P",
        default_value = "async",
        help_heading = "Model"
    )]
    pub protocol: Protocol,

    /// The master's own processing time in one iteration (λm), in ms
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 0.0,
        allow_negative_numbers = true,
        help_heading = "Model"
    )]
    pub lm: f64,

    /// Bytes of shared data sent to *each* worker (Vi), for an application that broadcasts
    /// its data, like N-Body; replaces --volume and --alpha
    #[arg(
        long,
        value_name = "BYTES",
        allow_negative_numbers = true,
        conflicts_with_all = ["volume", "alpha"],
        help_heading = "Broadcast model"
    )]
    pub broadcast: Option<f64>,

    /// With --broadcast: total bytes of results, all workers together (Vm)
    #[arg(
        long,
        value_name = "BYTES",
        allow_negative_numbers = true,
        requires = "broadcast",
        conflicts_with_all = ["volume", "alpha"],
        help_heading = "Broadcast model"
    )]
    pub results: Option<f64>,

    /// Fewest workers to evaluate
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true,
        value_parser = parse_workers,
        help_heading = "Range"
    )]
    pub min_workers: usize,

    /// Most workers to evaluate
    #[arg(
        long,
        value_name = "N",
        default_value_t = 64,
        allow_negative_numbers = true,
        value_parser = parse_workers,
        help_heading = "Range"
    )]
    pub max_workers: usize,

    /// Print JSON instead of a table
    #[arg(long, help_heading = "Output")]
    pub json: bool,

    /// Also draw Tt(n) and Pi(n), with both optima marked, as an SVG file
    #[arg(long, value_name = "FILE.svg", help_heading = "Output")]
    pub plot: Option<PathBuf>,
}

/// A number of workers: a negative one gets the rule `evaluate` gives 0 (clap's own parser
/// would say "invalid digit").
fn parse_workers(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) => Ok(n),
        Err(_) if text.trim().parse::<f64>().is_ok_and(|v| v < 0.0) => {
            Err("must be at least 1".into())
        }
        Err(_) => Err(format!("`{text}` is not a whole number")),
    }
}

/// The evaluated model, as `--json` prints it.
#[derive(Debug, Serialize)]
struct Report {
    model: &'static str,
    protocol: Protocol,
    params: Parameters,
    best_time: Best,
    best_index: Best,
    mcmc: Option<usize>,
    /// The tuner's choice: lowest Pi in the range, not past the MCMC.
    choice: Best,
    curve: Vec<Point>,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Parameters {
    Balanced(Params),
    Broadcast(BroadcastParams),
}

#[derive(Debug, Clone, Copy, Serialize)]
struct Best {
    workers: usize,
    time_ms: f64,
    efficiency: f64,
    pi: f64,
}

impl From<&Point> for Best {
    fn from(p: &Point) -> Self {
        Best {
            workers: p.workers,
            time_ms: p.time_ms,
            efficiency: p.efficiency,
            pi: p.pi,
        }
    }
}

/// Runs `mwgen model`.
///
/// # Errors
/// A usage error (exit code 2) for invalid parameters or range; a failure if the output or the
/// plot cannot be written.
pub fn run(args: &ModelArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let report = evaluate(args)?;
    if let Some(path) = &args.plot {
        plot::draw(path, &report_title(args), &report.curve_view(), report.mcmc).map_err(|e| {
            CliError::failure(
                format!("failed to write the plot `{}`: {e}", path.display()),
                Some("check that the folder exists and is writable".to_string()),
            )
        })?;
    }
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report).map_err(|e| CliError::output(e.into()))?;
        writeln!(out).map_err(CliError::output)
    } else {
        print_table(args, &report, out).map_err(CliError::output)
    }
}

fn evaluate(args: &ModelArgs) -> Result<Report, CliError> {
    // One rule for 0 and below: the model divides by Tc.
    if !(args.tc.is_finite() && args.tc > 0.0) {
        let (_, help) = flag_of("tc_ms");
        return Err(CliError::usage(
            format!(
                "invalid value `{}` for `--tc`: must be positive",
                number(args.tc)
            ),
            help,
        ));
    }
    if args.min_workers == 0 || args.max_workers == 0 {
        let flag = if args.max_workers == 0 {
            "--max-workers"
        } else {
            "--min-workers"
        };
        return Err(CliError::usage(
            format!("`{flag}` must be at least 1"),
            "the model needs at least one worker",
        ));
    }
    if args.min_workers > args.max_workers {
        return Err(CliError::usage(
            format!(
                "`--min-workers` ({}) is above `--max-workers` ({})",
                args.min_workers, args.max_workers
            ),
            "give a --max-workers at least as large as --min-workers",
        ));
    }
    if args.max_workers - args.min_workers >= MAX_SWEEP_POINTS {
        return Err(CliError::usage(
            format!(
                "the range {}..={} is too long",
                args.min_workers, args.max_workers
            ),
            format!("evaluate at most {MAX_SWEEP_POINTS} worker counts at once"),
        ));
    }
    let range = args.min_workers..=args.max_workers;
    let (model, params, curve, mcmc) = match args.broadcast {
        None => {
            let p = Params {
                tc_ms: args.tc,
                // clap requires --volume unless --broadcast is given.
                volume_bytes: args.volume.unwrap_or_default(),
                alpha: args.alpha,
                mo_ms: args.latency,
                k_ms_per_byte: args.per_byte,
                lm_ms: args.lm,
            };
            let curve = model::sweep(&p, args.protocol, range).map_err(flag_error)?;
            let mcmc = model::mcmc(&p, args.protocol).map_err(flag_error)?;
            ("balanced", Parameters::Balanced(p), curve, mcmc)
        }
        Some(shared_bytes) => {
            if args.protocol == Protocol::Sync {
                return Err(CliError::usage(
                    "the broadcast model is defined for the async protocol only",
                    "drop `--protocol sync`, or model the application with --volume and --alpha",
                ));
            }
            let p = BroadcastParams {
                tc_ms: args.tc,
                shared_bytes,
                result_bytes: args.results.unwrap_or(0.0),
                mo_ms: args.latency,
                k_ms_per_byte: args.per_byte,
                lm_ms: args.lm,
            };
            let curve = broadcast::sweep(&p, range).map_err(flag_error)?;
            let mcmc = broadcast::mcmc(&p).map_err(flag_error)?;
            ("broadcast", Parameters::Broadcast(p), curve, mcmc)
        }
    };
    Ok(Report {
        model,
        protocol: args.protocol,
        params,
        best_time: curve.best_time().into(),
        best_index: curve.best_index().into(),
        mcmc,
        choice: curve.capped(mcmc).best_index().into(),
        curve: curve.points().to_vec(),
    })
}

impl Report {
    fn curve_view(&self) -> plot::Series<'_> {
        plot::Series {
            points: &self.curve,
            best_time: self.best_time.workers,
            best_index: self.best_index.workers,
        }
    }
}

/// Turns a model error into a usage error that names the flag.
fn flag_error(e: ModelError) -> CliError {
    match e {
        ModelError::InvalidParameter {
            name,
            value,
            expected,
        } => {
            let (flag, help) = flag_of(name);
            CliError::usage(
                format!(
                    "invalid value `{}` for `{flag}`: must be {expected}",
                    number(value)
                ),
                help,
            )
        }
        ModelError::NoWork => CliError::usage(
            "invalid value `0` for `--tc`: must be positive",
            "the performance index divides by the total processing time; give it in ms",
        ),
        other => CliError::usage(other.to_string(), "see `mwgen model --help`"),
    }
}

fn flag_of(parameter: &str) -> (&'static str, &'static str) {
    match parameter {
        "tc_ms" => (
            "--tc",
            "`--tc` is the total processing time of all workers in one iteration, in ms",
        ),
        "volume_bytes" => (
            "--volume",
            "`--volume` is the number of bytes moved in one iteration, both directions",
        ),
        "alpha" => (
            "--alpha",
            "`--alpha` is the share of the volume sent to the workers: 0.5 sends half, gets half back",
        ),
        "mo_ms" => (
            "--latency",
            "`--latency` is the start-up time of one message in ms, e.g. 0.05",
        ),
        "k_ms_per_byte" => (
            "--per-byte",
            "`--per-byte` is the cost of one byte in ms (the inverse bandwidth): 0.000001 for 1 GB/s",
        ),
        "lm_ms" => (
            "--lm",
            "`--lm` is the master's own processing time per iteration, in ms",
        ),
        "shared_bytes" => (
            "--broadcast",
            "`--broadcast` is the number of bytes each worker receives",
        ),
        "result_bytes" => (
            "--results",
            "`--results` is the number of result bytes of all workers together",
        ),
        _ => ("an argument", "see `mwgen model --help`"),
    }
}

fn report_title(args: &ModelArgs) -> String {
    match args.broadcast {
        None => format!(
            "{} protocol, Tc = {} ms, V = {} B (α = {}), mo = {} ms, k = {} ms/B, λm = {} ms",
            args.protocol,
            number(args.tc),
            number(args.volume.unwrap_or_default()),
            number(args.alpha),
            number(args.latency),
            number(args.per_byte),
            number(args.lm)
        ),
        Some(vi) => format!(
            "broadcast, async protocol, Tc = {} ms, Vi = {} B to each worker, Vm = {} B, mo = {} ms, k = {} ms/B, λm = {} ms",
            number(args.tc),
            number(vi),
            number(args.results.unwrap_or(0.0)),
            number(args.latency),
            number(args.per_byte),
            number(args.lm)
        ),
    }
}

fn print_table(args: &ModelArgs, report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "model: {}", report_title(args))?;
    writeln!(out)?;
    writeln!(
        out,
        "{:>7}  {:>12}  {:>6}  {:>12}  regime",
        "workers", "Tt (ms)", "E", "Pi"
    )?;
    for p in &report.curve {
        let mut marks = Vec::new();
        if p.workers == report.best_time.workers {
            marks.push("lowest Tt");
        }
        if p.workers == report.best_index.workers {
            marks.push("lowest Pi");
        }
        let row = format!(
            "{:>7}  {:>12}  {:>6.4}  {:>12}  {:<9}  {}",
            p.workers,
            fixed(p.time_ms, 4),
            p.efficiency,
            fixed(p.pi, 4),
            p.regime,
            if marks.is_empty() {
                String::new()
            } else {
                format!("<- {}", marks.join(", "))
            }
        );
        writeln!(out, "{}", row.trim_end())?;
        if report.mcmc == Some(p.workers) && p.workers != args.max_workers {
            writeln!(
                out,
                "{:>7}  past the MCMC: the master cannot feed more workers",
                "--"
            )?;
        }
    }
    writeln!(out)?;
    let (bt, bi, choice) = (&report.best_time, &report.best_index, &report.choice);
    writeln!(
        out,
        "lowest Tt:  {}, Tt = {} ms",
        crate::count(bt.workers, "worker"),
        fixed(bt.time_ms, 2)
    )?;
    writeln!(
        out,
        "lowest Pi:  {}, Tt = {} ms, Pi = {}",
        crate::count(bi.workers, "worker"),
        fixed(bi.time_ms, 2),
        fixed(bi.pi, 2)
    )?;
    match report.mcmc {
        Some(m) => writeln!(
            out,
            "MCMC:       {m} workers (the most the master can feed before the first answer returns)"
        )?,
        None => writeln!(out, "MCMC:       none (the master never falls behind)")?,
    }
    if choice.workers != bi.workers {
        writeln!(
            out,
            "tuner:      {} workers (lowest Pi not past the MCMC)",
            choice.workers
        )?;
    }
    if bt.workers == args.max_workers && args.min_workers < args.max_workers {
        writeln!(
            out,
            "note: Tt still falls at --max-workers {}; raise it to find the lowest Tt",
            args.max_workers
        )?;
    }
    Ok(())
}

/// Beyond this magnitude (and below its inverse) numbers are written in scientific notation:
/// `1e308` has 309 digits written out.
const PLAIN_RANGE: f64 = 1e9;

/// A parameter as the user would write it: shortest form, scientific beyond the plain range.
fn number(value: f64) -> String {
    if is_plain(value) {
        format!("{value}")
    } else {
        format!("{value:e}")
    }
}

/// A computed value with `decimals` decimals, or five significant digits in scientific
/// notation beyond the plain range.
fn fixed(value: f64, decimals: usize) -> String {
    if is_plain(value) {
        format!("{value:.decimals$}")
    } else {
        format!("{value:.4e}")
    }
}

fn is_plain(value: f64) -> bool {
    let size = value.abs();
    !value.is_finite() || size == 0.0 || (1.0 / PLAIN_RANGE..PLAIN_RANGE).contains(&size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_beyond_the_plain_range_are_scientific() {
        assert_eq!(number(1600.0), "1600");
        assert_eq!(number(0.001), "0.001");
        assert_eq!(number(1e308), "1e308");
        assert_eq!(number(-5.0), "-5");
        assert_eq!(fixed(1e308 / 3.0, 4), "3.3333e307");
        assert_eq!(fixed(12.345_67, 2), "12.35");
        assert_eq!(fixed(0.0, 2), "0.00");
        assert_eq!(fixed(2e-12, 4), "2.0000e-12");
    }
}
