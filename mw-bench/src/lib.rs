//! `mw-bench`: the papers' experiments, run on this machine with the runtime, written up as
//! `BENCHMARKS.md` beside the figures, each of our numbers next to the paper's.
//!
//! ```text
//! cargo run --release -p mw-bench -- all -o results/      # the full suite
//! cargo run -p mw-bench -- all --size tiny -o out/         # seconds, for CI
//! ```
//!
//! One module per experiment under `experiments/`:
//! - `policies` — distribution policies on the synthetic workload (Cesar et al. 2006, Figs. 2–4);
//! - `workers` — fixed numbers of workers against the tuned number, under emulated load
//!   (Caymes-Scutari et al., POETRIES, Tables 1–2 and Figs. 2–5), with the synthetic program in
//!   N-Body's shape and with the N-Body example itself;
//! - `model` — the model's predicted iteration time and performance index against measured ones
//!   (Cesar et al. 2006, Figs. 7–10 and Tables 1–4);
//! - `xfire` — the factor fixed against tuned on the forest-fire example under variable load
//!   (Morajko et al. 2005, Table 2 and Fig. 2);
//! - `overhead` — the runtime against hand-written baselines (rayon, rsmpi, bincode, no trace);
//! - `predict` — whole runs predicted from a pilot's metrics (`mwgen predict`) against real runs;
//! - `heldout` — the tuner from one worker against the best fixed count and factor on workloads
//!   its rules were never adjusted on;
//! - `heterogeneous` — every policy and `--policy auto` on workers of unequal speed;
//! - `busy` — N-Body tuned beside another program that keeps every core busy, against N-Body
//!   fixed at one worker per core;
//! - `shaped` — the emulated link against MPI over TCP shaped with `tc` between network
//!   namespaces;
//! - `cluster` — the model validation on kernel TCP across a cluster in a box (`cluster/`),
//!   beside the emulated link;
//! - `cluster-workers` — the number of workers (POETRIES) on kernel TCP across the same box,
//!   beside the emulated link.
//!
//! Experiments run in this process through `mw_runtime::run_config` and the synthetic and xfire
//! examples' libraries; the runs of the N-Body example, the MPI runs and the runtime's MPI bench
//! start other programs, because those need their own binaries. `ideal` holds the arithmetic
//! of the ideal time, `doc` the Markdown, `machine` what the document says about this computer,
//! `merge` how one experiment rerun alone replaces its section in a document (`--merge`),
//! `teardown` what takes down the namespaces an experiment set up, even at a signal.
//!
//! Crates: clap (the command line, as every binary of the workspace), serde_json (the raw numbers
//! beside the document, so later runs can be compared), bincode (the codec's reference), and
//! mwgen's report module for the plots (plotters' SVG backend), so that the figures look like
//! `mwgen report`'s.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};

pub mod doc;
pub mod experiments;
pub mod ideal;
pub mod machine;
pub mod merge;
pub mod teardown;

use doc::{Document, Section};

/// Reproduce the papers' experiments and write BENCHMARKS.md with plots.
#[derive(Debug, Parser)]
#[command(name = "mw-bench", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// An experiment, or all of them.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Every experiment, in order
    All(Options),
    /// Distribution policies on the synthetic workload (Cesar et al. 2006, Figs. 2-4)
    Policies(Options),
    /// Fixed against tuned number of workers under emulated load (POETRIES, Tables 1-2)
    Workers(Options),
    /// Model's predicted against measured iteration time and index (Cesar et al., Figs. 7-10)
    Model(Options),
    /// Fixed against tuned factor on Xfire under variable load (Morajko et al. 2005, Table 2)
    Xfire(Options),
    /// The runtime against rayon, rsmpi, bincode, and itself without the trace
    Overhead(Options),
    /// Whole runs predicted from a pilot's metrics (mwgen predict) against real runs
    Predict(Options),
    /// The tuner against the best fixed count and factor on held-out workloads
    Heldout(Options),
    /// Every policy and `auto` on workers of unequal speed (steady and variable load)
    Heterogeneous(Options),
    /// N-Body tuned beside a program spinning on every core, against fixed at the core count
    Busy(Options),
    /// The emulated link against MPI over TCP shaped with `tc` between network namespaces (root)
    Shaped(Options),
    /// Model validation on kernel TCP across a cluster in a box, beside the emulated link (root)
    Cluster(Options),
    /// Fixed against tuned number of workers (POETRIES) on kernel TCP across the box (root)
    ClusterWorkers(Options),
}

/// Options every subcommand takes.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Folder to write BENCHMARKS.md into (created if missing)
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: PathBuf,
    /// How big the experiments are: `full` is the papers' experiments scaled to a 2-core
    /// machine (BENCHMARKS.md gives how long each took), `tiny` runs in seconds (for CI)
    #[arg(long, value_enum, default_value_t = Size::Full)]
    pub size: Size,
    /// Folder, relative to DIR, for the figures and the raw numbers (results.json)
    #[arg(long, value_name = "SUBDIR", default_value = "benchmarks")]
    pub figures: PathBuf,
    /// Put this experiment's section in place of its old version in the document already in
    /// DIR (and its numbers in SUBDIR/results.json), saying when, where and under what load it
    /// ran, instead of writing a document of its own
    #[arg(long)]
    pub merge: bool,
}

/// How big the experiments are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Size {
    /// Seconds: the shape of every experiment with a few small runs, programs not started.
    Tiny,
    /// The papers' experiments scaled to a 2-core machine (the sizes are in BENCHMARKS.md).
    Full,
}

impl Size {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Size::Tiny => "tiny",
            Size::Full => "full",
        }
    }
}

/// What went wrong, as a sentence for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchError(pub String);

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BenchError {}

impl From<mw_runtime::Error> for BenchError {
    fn from(e: mw_runtime::Error) -> Self {
        BenchError(e.to_string())
    }
}

impl From<synthetic::cli::Failure> for BenchError {
    fn from(e: synthetic::cli::Failure) -> Self {
        BenchError(e.to_string())
    }
}

/// Runs the command and writes the document; returns the path of `BENCHMARKS.md`.
///
/// # Errors
/// A run that failed, or a file that could not be written.
pub fn run(cli: &Cli) -> Result<PathBuf, BenchError> {
    let (options, which): (&Options, &[Experiment]) = match &cli.command {
        Command::All(o) => (o, &Experiment::ALL),
        Command::Policies(o) => (o, &[Experiment::Policies]),
        Command::Workers(o) => (o, &[Experiment::Workers]),
        Command::Model(o) => (o, &[Experiment::Model]),
        Command::Xfire(o) => (o, &[Experiment::Xfire]),
        Command::Overhead(o) => (o, &[Experiment::Overhead]),
        Command::Predict(o) => (o, &[Experiment::Predict]),
        Command::Heldout(o) => (o, &[Experiment::Heldout]),
        Command::Heterogeneous(o) => (o, &[Experiment::Heterogeneous]),
        Command::Busy(o) => (o, &[Experiment::Busy]),
        Command::Shaped(o) => (o, &[Experiment::Shaped]),
        Command::Cluster(o) => (o, &[Experiment::Cluster]),
        Command::ClusterWorkers(o) => (o, &[Experiment::ClusterWorkers]),
    };
    let existing = if options.merge {
        if matches!(cli.command, Command::All(_)) {
            return Err(BenchError(
                "error: --merge puts one experiment's section into the document; `all` writes \
                 the whole document\nhelp: leave out --merge, or name the experiment to run"
                    .into(),
            ));
        }
        Some(merge::Existing::read(
            &options.out,
            &options.figures,
            options.size,
        )?)
    } else {
        None
    };
    let in_the_box = [Experiment::Cluster, Experiment::ClusterWorkers];
    if which.iter().any(|e| in_the_box.contains(e)) && options.size == Size::Full {
        experiments::cluster::able()?;
    }
    let started = Instant::now();
    let load = machine::LoadWatch::start();
    let mut sections = Vec::new();
    for experiment in which {
        eprintln!(
            "mw-bench: {} ({} size) ...",
            experiment.name(),
            options.size.name()
        );
        let section_started = Instant::now();
        let mut section = experiment.run(options.size)?;
        section.seconds = section_started.elapsed().as_secs_f64();
        eprintln!(
            "mw-bench: {} done in {:.1} s",
            experiment.name(),
            section.seconds
        );
        sections.push(section);
    }
    let document = Document {
        size: options.size,
        command: command_line(cli),
        machine: machine::Machine::detect(),
        generated: machine::utc_now(),
        seconds: started.elapsed().as_secs_f64(),
        peak_load: load.finish(),
        sections,
    };
    match existing {
        Some(existing) => {
            write_figures(&document, &options.out, &options.figures)?;
            existing.merge(&document, &options.figures)
        }
        None => write(&document, &options.out, &options.figures),
    }
}

/// Writes `BENCHMARKS.md` into `out`, the figures and `results.json` into `out/figures`.
fn write(document: &Document, out: &Path, figures: &Path) -> Result<PathBuf, BenchError> {
    let figure_dir = write_figures(document, out, figures)?;
    let put = |path: PathBuf, text: &str| {
        std::fs::write(&path, text)
            .map_err(|e| BenchError(format!("error: cannot write `{}`: {e}", path.display())))
    };
    put(figure_dir.join("results.json"), &document.json())?;
    let path = out.join("BENCHMARKS.md");
    put(path.clone(), &document.markdown(figures))?;
    Ok(path)
}

/// Draws the figures of `document` into `out/figures` (created if missing); returns that folder.
fn write_figures(document: &Document, out: &Path, figures: &Path) -> Result<PathBuf, BenchError> {
    let figure_dir = out.join(figures);
    std::fs::create_dir_all(&figure_dir).map_err(|e| {
        BenchError(format!(
            "error: cannot create `{}`: {e}",
            figure_dir.display()
        ))
    })?;
    let put = |path: PathBuf, text: &str| {
        std::fs::write(&path, text)
            .map_err(|e| BenchError(format!("error: cannot write `{}`: {e}", path.display())))
    };
    for section in &document.sections {
        for figure in &section.figures {
            let svg = mwgen::report::chart::draw(&figure.chart)
                .map_err(|e| BenchError(format!("error: figure `{}`: {e}", figure.file)))?;
            put(figure_dir.join(&figure.file), &svg)?;
        }
    }
    Ok(figure_dir)
}

/// The command that reproduces this document.
fn command_line(cli: &Cli) -> String {
    let (name, options) = match &cli.command {
        Command::All(o) => ("all", o),
        Command::Policies(o) => ("policies", o),
        Command::Workers(o) => ("workers", o),
        Command::Model(o) => ("model", o),
        Command::Xfire(o) => ("xfire", o),
        Command::Overhead(o) => ("overhead", o),
        Command::Predict(o) => ("predict", o),
        Command::Heldout(o) => ("heldout", o),
        Command::Heterogeneous(o) => ("heterogeneous", o),
        Command::Busy(o) => ("busy", o),
        Command::Shaped(o) => ("shaped", o),
        Command::Cluster(o) => ("cluster", o),
        Command::ClusterWorkers(o) => ("cluster-workers", o),
    };
    let mut text = format!(
        "cargo run --release -p mw-bench -- {name} -o {}",
        options.out.display()
    );
    if options.size != Size::Full {
        text.push_str(&format!(" --size {}", options.size.name()));
    }
    if options.figures != Path::new("benchmarks") {
        text.push_str(&format!(" --figures {}", options.figures.display()));
    }
    if options.merge {
        text.push_str(" --merge");
    }
    text
}

/// The experiments, in the order of the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    Policies,
    Workers,
    Model,
    Xfire,
    Overhead,
    Predict,
    Heldout,
    Heterogeneous,
    Busy,
    Shaped,
    Cluster,
    ClusterWorkers,
}

impl Experiment {
    pub const ALL: [Experiment; 12] = [
        Experiment::Policies,
        Experiment::Workers,
        Experiment::Model,
        Experiment::Xfire,
        Experiment::Overhead,
        Experiment::Predict,
        Experiment::Heldout,
        Experiment::Heterogeneous,
        Experiment::Busy,
        Experiment::Shaped,
        Experiment::Cluster,
        Experiment::ClusterWorkers,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Experiment::Policies => "policies",
            Experiment::Workers => "workers",
            Experiment::Model => "model",
            Experiment::Xfire => "xfire",
            Experiment::Overhead => "overhead",
            Experiment::Predict => "predict",
            Experiment::Heldout => "heldout",
            Experiment::Heterogeneous => "heterogeneous",
            Experiment::Busy => "busy",
            Experiment::Shaped => "shaped",
            Experiment::Cluster => "cluster",
            Experiment::ClusterWorkers => "cluster-workers",
        }
    }

    fn run(self, size: Size) -> Result<Section, BenchError> {
        match self {
            Experiment::Policies => experiments::policies::run(size),
            Experiment::Workers => experiments::workers::run(size),
            Experiment::Model => experiments::model::run(size),
            Experiment::Xfire => experiments::xfire::run(size),
            Experiment::Overhead => experiments::overhead::run(size),
            Experiment::Predict => experiments::predict::run(size),
            Experiment::Heldout => experiments::heldout::run(size),
            Experiment::Heterogeneous => experiments::heterogeneous::run(size),
            Experiment::Busy => experiments::busy::run(size),
            Experiment::Shaped => experiments::shaped::run(size),
            Experiment::Cluster => experiments::cluster::run(size),
            Experiment::ClusterWorkers => experiments::cluster_workers::run(size),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_command_line_is_written_back() {
        let cli = Cli::parse_from(["mw-bench", "all", "-o", "out", "--size", "tiny"]);
        assert_eq!(
            command_line(&cli),
            "cargo run --release -p mw-bench -- all -o out --size tiny"
        );
        let cli = Cli::parse_from(["mw-bench", "model", "-o", ".", "--figures", "docs/b"]);
        assert_eq!(
            command_line(&cli),
            "cargo run --release -p mw-bench -- model -o . --figures docs/b"
        );
    }
}
