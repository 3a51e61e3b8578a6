//! `mwgen report`: plots of a run's metrics (and trace), as SVG files and one self-contained
//! HTML page that holds them all.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use mw_runtime::InputKind;

use crate::CliError;

pub mod chart;
mod html;
mod plots;
#[cfg(test)]
mod tests;
mod timeline;

pub(crate) const LONG_ABOUT: &str = "\
Draw plots of a run from the metrics it wrote (`--metrics PATH`), and optionally its trace
(`--trace PATH`), into a folder: one SVG file per plot and an index.html that holds them all
with a summary table.

The plots: iteration time, measured and as the model predicted it; nworkers and factor over the
iterations with the tuning decisions marked (like the papers' Figs. 3 and 5); how busy each
worker was in each iteration; the chunk sizes of one iteration as the policy cut them; and, with
a trace, a timeline of that iteration on the master and every worker.

Example:
  nbody --steps 50 --metrics run.json --trace run.trace.json
  mwgen report run.json --trace run.trace.json -o report/";

/// Arguments of `mwgen report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// The metrics file a run wrote with `--metrics`
    #[arg(value_name = "METRICS.json")]
    pub metrics: PathBuf,

    /// The trace the same run wrote with `--trace`: adds a timeline of the chosen iteration
    #[arg(long, value_name = "TRACE.json")]
    pub trace: Option<PathBuf>,

    /// Folder to write the plots and index.html into (created if missing)
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: PathBuf,

    /// The iteration whose chunk sizes (and timeline) to draw [default: the first]
    #[arg(long, value_name = "N")]
    pub iteration: Option<usize>,
}

use mw_runtime::metrics::RunMetrics;

/// Workers to give a row in per-worker plots: the pool, or more if the busy times say so.
pub(crate) fn workers(run: &RunMetrics) -> usize {
    let seen = run.iterations.iter().map(|it| it.busy_ms.len()).max();
    run.pool.max(seen.unwrap_or(0))
}

/// One plot of the report.
#[derive(Debug)]
pub(crate) struct Figure {
    /// File name in the output folder.
    pub file: &'static str,
    pub title: String,
    /// What to look for, one sentence.
    pub caption: String,
    pub svg: String,
}

/// Runs `mwgen report`, printing the files it wrote to `out`.
///
/// # Errors
/// An unreadable or malformed metrics or trace file, an iteration that is not in the run, or an
/// output folder that cannot be written.
pub fn run(args: &ReportArgs, out: &mut dyn Write) -> Result<(), CliError> {
    // The output folder first: a place that cannot be written is said before any drawing.
    std::fs::create_dir_all(&args.out).map_err(|e| cannot_write(&args.out, &e))?;
    let index = args.out.join("index.html");
    if let Err(e) = mw_runtime::check_output(&index, "-o") {
        let (message, help) = match e.kind() {
            mw_runtime::ErrorKind::Config { message, help } => (message.clone(), help.clone()),
            _ => (e.to_string(), String::new()),
        };
        let message = message.trim_start_matches("error: ").to_owned();
        return Err(CliError::failure(
            message,
            Some(help).filter(|h| !h.is_empty()),
        ));
    }
    let run = load_metrics(&args.metrics)?;
    let chosen = choose_iteration(&run, args.iteration)?;
    let trace = match &args.trace {
        Some(path) => Some(timeline::load(path)?),
        None => None,
    };

    let mut figures = plots::draw_all(&run, chosen).map_err(plot_failed)?;
    if let Some(trace) = &trace {
        figures.push(timeline::draw(trace, &run, chosen).map_err(plot_failed)?);
    }
    let page = html::page(&run, &args.metrics, &figures);

    for figure in &figures {
        let path = args.out.join(figure.file);
        std::fs::write(&path, &figure.svg).map_err(|e| cannot_write(&path, &e))?;
    }
    std::fs::write(&index, page).map_err(|e| cannot_write(&index, &e))?;

    let mut line = |text: String| writeln!(out, "{text}").map_err(CliError::output);
    for figure in &figures {
        line(format!("wrote {}", args.out.join(figure.file).display()))?;
    }
    line(format!("wrote {}", index.display()))
}

/// Reads and parses a metrics file, with advice when it is something else.
pub(crate) fn load_metrics(path: &Path) -> Result<RunMetrics, CliError> {
    let text = mw_runtime::read_input_text(path, InputKind::Metrics).map_err(|e| {
        CliError::failure(
            format!("cannot read the metrics file `{}`: {e}", path.display()),
            Some("a program writes one when run with `--metrics PATH`".to_owned()),
        )
    })?;
    parse_metrics(&text).map_err(|(message, help)| {
        CliError::usage(
            format!("`{}` is not a metrics file: {message}", path.display()),
            help,
        )
    })
}

/// Whether `text` is a trace (Chrome's trace-event JSON, in the object or the array form)
/// rather than metrics: told by its opening, without parsing it all.
pub(crate) fn is_trace(text: &str) -> bool {
    let text = text.trim_start();
    text.starts_with('[')
        || text
            .strip_prefix('{')
            .is_some_and(|rest| rest.trim_start().starts_with("\"traceEvents\""))
}

/// Parses metrics JSON; the error is a message and a help line.
pub(crate) fn parse_metrics(text: &str) -> Result<RunMetrics, (String, String)> {
    let help = "give the JSON a program writes with `--metrics PATH`";
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| (e.to_string(), help.to_owned()))?;
    if value.get("traceEvents").is_some() || value.is_array() {
        return Err((
            "it is a trace".to_owned(),
            "pass a trace with `--trace TRACE.json`, beside the metrics file".to_owned(),
        ));
    }
    if value.get("iterations").is_none() {
        return Err(("it has no `iterations`".to_owned(), help.to_owned()));
    }
    serde_json::from_value(value).map_err(|e| {
        let help = format!(
            "the report reads the metrics of mw-runtime {}: run the program again with this \
             version, or use the mwgen of the version that wrote them",
            env!("CARGO_PKG_VERSION")
        );
        (e.to_string(), help)
    })
}

/// The iteration to detail: `asked`, else the first; it must exist when asked for.
fn choose_iteration(run: &RunMetrics, asked: Option<usize>) -> Result<Option<usize>, CliError> {
    let Some(index) = asked else {
        return Ok(run.iterations.first().map(|_| 0));
    };
    match run.iterations.iter().position(|it| it.index == index) {
        Some(position) => Ok(Some(position)),
        None => Err(CliError::usage(
            format!("the run has no iteration {index}"),
            match (run.iterations.first(), run.iterations.last()) {
                (Some(first), Some(last)) => format!(
                    "choose an iteration from {} to {} with --iteration",
                    first.index, last.index
                ),
                _ => "the run recorded no iterations: leave out --iteration".to_owned(),
            },
        )),
    }
}

fn plot_failed(e: Box<dyn std::error::Error>) -> CliError {
    CliError::failure(format!("failed to draw a plot: {e}"), None)
}

fn cannot_write(path: &Path, e: &std::io::Error) -> CliError {
    CliError::failure(
        format!("cannot write `{}`: {e}", path.display()),
        Some("choose an output folder you can write to with -o DIR".to_owned()),
    )
}
