//! The command line: `xfire [FLAGS]` runs the simulation on the Master/Worker runtime;
//! `xfire ros ...` prints the Rothermel rate of spread of one head fire.

use std::fmt;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, mpsc};

use clap::{Args, Parser, Subcommand};
use serde::Serialize;

use crate::app::{FireMaster, FireWorker, Outcome, SimParams};
use crate::rothermel::{FT_MIN_PER_MPH, FuelBed, Moisture, Spread};
use crate::terrain::{Landscape, Scenario};
use crate::{fuels, output};

/// Forest-fire front propagation (Rothermel surface spread) as a self-tuning Master/Worker
/// program.
#[derive(Debug, Parser)]
#[command(version, about, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub sim: SimArgs,
    #[command(flatten)]
    pub run: mw::RunArgs,
}

/// Commands beside the simulation.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Rate of spread of a head fire with the wind blowing straight upslope
    Ros(RosArgs),
}

/// `xfire ros`: values are read as text and checked here, so that bad input gets an `error:` and
/// a `help:` line.
#[derive(Debug, Clone, Args)]
pub struct RosArgs {
    /// Standard fuel model, 1–13 (Albini 1976)
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub fuel: String,
    /// Midflame wind speed, mi/h, blowing upslope
    #[arg(long = "wind-mph", value_name = "U", allow_hyphen_values = true)]
    pub wind_mph: String,
    /// Slope steepness, % (rise over run × 100)
    #[arg(long = "slope-pct", value_name = "S", allow_hyphen_values = true)]
    pub slope_pct: String,
    /// Fuel moistures, %: 1-h,10-h,100-h dead, live herbaceous, live woody
    #[arg(
        long,
        value_name = "LIST",
        default_value = "6,7,8,60,90",
        allow_hyphen_values = true
    )]
    pub moisture: String,
    /// Cap the effective wind at 0.9·I_R (Rothermel's wind limit)
    #[arg(long)]
    pub wind_limit: bool,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
}

/// The simulation's own flags.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Simulation")]
pub struct SimArgs {
    /// Steps to simulate
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub steps: usize,
    /// Length of a step, min
    #[arg(long = "dt-min", value_name = "MIN", default_value_t = 2.0, value_parser = positive)]
    pub dt_min: f64,
    /// Cells along each side of the square landscape
    #[arg(long, value_name = "CELLS", default_value_t = 160, value_parser = grid_size)]
    pub grid: usize,
    /// Side of a cell, m
    #[arg(long = "cell-m", value_name = "M", default_value_t = 30.0, value_parser = positive)]
    pub cell_m: f64,
    /// Seed of the synthetic landscape (fuels, hills, wind)
    #[arg(long, value_name = "SEED", default_value_t = 1)]
    pub seed: u64,
    /// Fire-line points per task
    #[arg(long = "segment-points", value_name = "N", default_value_t = 64, value_parser = at_least_one)]
    pub segment_points: usize,
    /// Largest distance between neighbouring fire-line points, m [default: a third of a cell]
    #[arg(long = "spacing-m", value_name = "M", value_parser = positive)]
    pub spacing_m: Option<f64>,
    /// Mean midflame wind speed, mi/h
    #[arg(long = "wind-mph", value_name = "U", default_value_t = 6.0, value_parser = non_negative)]
    pub wind_mph: f64,
    /// Direction the wind blows toward, degrees clockwise from north
    #[arg(
        long = "wind-toward-deg",
        value_name = "DEG",
        default_value_t = 60.0,
        allow_hyphen_values = true
    )]
    pub wind_toward_deg: f64,
    /// Fuel moistures, %: 1-h,10-h,100-h dead, live herbaceous, live woody
    #[arg(long, value_name = "LIST", default_value = "6,7,8,60,90", value_parser = moisture_list)]
    pub moisture: [f64; 5],
    /// Cap the effective wind at 0.9·I_R (Rothermel's wind limit)
    #[arg(long)]
    pub wind_limit: bool,
    /// Write PREFIX.csv (the final fire line) and PREFIX.svg (a picture of the burned area)
    #[arg(long, value_name = "PREFIX")]
    pub out: Option<PathBuf>,
}

impl SimArgs {
    /// The landscape these flags describe.
    pub fn scenario(&self) -> Scenario {
        Scenario {
            grid: self.grid,
            cell_m: self.cell_m,
            seed: self.seed,
            wind_mph: self.wind_mph,
            wind_toward_deg: self.wind_toward_deg,
            moisture: Moisture::from_percent(self.moisture),
            wind_limit: self.wind_limit,
        }
    }

    /// The simulation parameters these flags describe.
    pub fn params(&self) -> SimParams {
        SimParams {
            steps: self.steps,
            dt_min: self.dt_min,
            segment_points: self.segment_points,
            spacing_m: self.spacing_m.unwrap_or(self.cell_m / 3.0),
            ignition_radius_m: self.cell_m,
        }
    }
}

/// A failure to report: `error:` and `help:` lines, and the exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    pub message: String,
    pub help: String,
    /// 2 for bad input, 1 for a failed run.
    pub code: u8,
}

impl CliError {
    fn input(message: impl Into<String>, help: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            help: help.into(),
            code: 2,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}\nhelp: {}", self.message, self.help)
    }
}

impl std::error::Error for CliError {}

/// Runs what the command line asks for.
///
/// # Errors
/// Bad input (exit status 2) or a failed run (1).
pub fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Some(Command::Ros(args)) => {
            say(&ros(&args)?);
            Ok(())
        }
        None => simulate(&cli.sim, &cli.run),
    }
}

/// Prints a line to stdout; a closed pipe (`xfire ... | head`) is not an error.
fn say(text: &str) {
    let _ = writeln!(std::io::stdout(), "{text}");
}

/// What `xfire ros --json` prints (contract: these keys).
#[derive(Debug, Serialize)]
struct RosJson {
    r0_ft_min: f64,
    ros_ft_min: f64,
    ros_m_min: f64,
    length_to_width: f64,
    reaction_intensity_btu_ft2_min: f64,
}

/// The output of `xfire ros`.
///
/// # Errors
/// A fuel model outside 1–13, a negative or non-numeric wind or slope, or a moisture list that
/// is not five non-negative percentages.
pub fn ros(args: &RosArgs) -> Result<String, CliError> {
    let fuel = args
        .fuel
        .trim()
        .parse::<u8>()
        .ok()
        .and_then(fuels::standard)
        .ok_or_else(|| {
            CliError::input(
                format!("`--fuel {}` is not a standard fuel model", args.fuel),
                "choose a fuel model from 1 to 13 (Anderson 1982), e.g. `--fuel 1` for short grass",
            )
        })?;
    let wind = number(
        &args.wind_mph,
        "--wind-mph",
        "a midflame wind speed in mi/h, e.g. `--wind-mph 5`",
    )?;
    let slope = number(
        &args.slope_pct,
        "--slope-pct",
        "a slope in percent, e.g. `--slope-pct 30`",
    )?;
    let moisture = moisture_list(&args.moisture).map_err(|why| {
        CliError::input(
            format!("`--moisture {}`: {why}", args.moisture),
            "give five percentages: 1-h,10-h,100-h dead, live herbaceous, live woody, e.g. \
             `--moisture 6,7,8,60,90`",
        )
    })?;
    let bed = FuelBed::new(fuel, &Moisture::from_percent(moisture));
    let spread = bed.head_upslope(wind * FT_MIN_PER_MPH, slope / 100.0, args.wind_limit);
    if args.json {
        let json = RosJson {
            r0_ft_min: spread.r0_ft_min,
            ros_ft_min: spread.ros_ft_min,
            ros_m_min: spread.ros_m_min(),
            length_to_width: spread.length_to_width,
            reaction_intensity_btu_ft2_min: bed.reaction_intensity,
        };
        serde_json::to_string(&json).map_err(|e| CliError {
            message: format!("cannot print JSON: {e}"),
            help: "this is a bug in xfire".into(),
            code: 1,
        })
    } else {
        Ok(ros_table(fuel, &bed, &spread))
    }
}

fn ros_table(fuel: &fuels::FuelModel, bed: &FuelBed, s: &Spread) -> String {
    let mut rows = vec![
        format!("fuel model {} ({})", fuel.number, fuel.name),
        format!("no-wind no-slope rate  {:10.3} ft/min", s.r0_ft_min),
        format!(
            "head fire rate         {:10.3} ft/min  {:.3} m/min  {:.2} ch/h",
            s.ros_ft_min,
            s.ros_m_min(),
            s.ros_ft_min / 1.1
        ),
        format!("backing rate           {:10.3} ft/min", s.backing_ft_min()),
        format!("flanking rate          {:10.3} ft/min", s.flanking_ft_min()),
        format!("length-to-width        {:10.3}", s.length_to_width),
        format!(
            "effective wind         {:10.3} mi/h{}",
            s.effective_wind_ft_min / FT_MIN_PER_MPH,
            if s.wind_limited { " (wind limit)" } else { "" }
        ),
        format!("wind factor φw         {:10.3}", s.phi_w),
        format!("slope factor φs        {:10.3}", s.phi_s),
        format!(
            "reaction intensity     {:10.1} BTU/ft²/min",
            bed.reaction_intensity
        ),
        format!(
            "heat per unit area     {:10.1} BTU/ft²",
            bed.heat_per_unit_area()
        ),
        format!(
            "dead extinction        {:10.1} %",
            bed.dead_extinction * 100.0
        ),
    ];
    if bed.live_extinction > 0.0 {
        rows.push(format!(
            "live extinction        {:10.1} %",
            bed.live_extinction * 100.0
        ));
    }
    rows.join("\n")
}

/// A finite, non-negative number given to `flag`.
fn number(text: &str, flag: &str, help: &str) -> Result<f64, CliError> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        Ok(_) => Err(CliError::input(
            format!("`{flag} {text}` must be zero or more"),
            format!("give {help}"),
        )),
        Err(_) => Err(CliError::input(
            format!("`{flag} {text}` is not a number"),
            format!("give {help}"),
        )),
    }
}

/// Five non-negative percentages separated by commas.
fn moisture_list(text: &str) -> Result<[f64; 5], String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() != 5 {
        return Err(format!("expected 5 values, found {}", parts.len()));
    }
    let mut out = [0.0; 5];
    for (slot, part) in out.iter_mut().zip(&parts) {
        match part.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => *slot = x,
            _ => return Err(format!("`{part}` is not a percentage of zero or more")),
        }
    }
    Ok(out)
}

fn positive(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err("must be a number greater than 0".into()),
    }
}

fn non_negative(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err("must be a number of 0 or more".into()),
    }
}

fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("must be a whole number of 1 or more".into()),
    }
}

fn grid_size(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (4..=4000).contains(&n) => Ok(n),
        _ => Err("must be a whole number from 4 to 4000".into()),
    }
}

/// Runs the simulation on the runtime and prints a summary.
fn simulate(sim: &SimArgs, run: &mw::RunArgs) -> Result<(), CliError> {
    // Written when the run ends: checked before it starts.
    for path in sim.out.iter().flat_map(|prefix| output::paths(prefix)) {
        mw::check_output(&path, "--out").map_err(runtime_error)?;
    }
    let land = Arc::new(Landscape::synthetic(&sim.scenario()));
    let params = sim.params();
    let (report, outcome) = mpsc::channel::<Outcome>();
    let master = || {
        FireMaster::new(Arc::clone(&land), params.clone())
            .write_to(sim.out.clone())
            .report_to(report)
    };
    let worker = {
        let land = Arc::clone(&land);
        move || FireWorker::new(Arc::clone(&land))
    };
    let result = mw::run_with(run, master, worker).map_err(runtime_error)?;
    // Only the master's process has an outcome (MPI worker ranks do not).
    if let Ok(outcome) = outcome.try_recv() {
        say(&summary(sim, &land, &outcome, result.metrics()));
    }
    Ok(())
}

fn runtime_error(e: mw::Error) -> CliError {
    let (message, help, code) = match e.kind() {
        mw::ErrorKind::Config { message, help } => (
            message.trim_start_matches("error: ").to_owned(),
            help.clone(),
            2,
        ),
        // A configuration file refused is 2 as well.
        _ => (
            e.to_string(),
            "see the message above; `xfire --help` lists the flags".to_owned(),
            e.status(),
        ),
    };
    CliError {
        message,
        help,
        code,
    }
}

fn summary(
    sim: &SimArgs,
    land: &Landscape,
    o: &Outcome,
    metrics: Option<&mw::RunMetrics>,
) -> String {
    let (nx, ny) = land.size();
    let first = o.steps.first();
    let last = o.steps.last();
    let mut lines = vec![
        format!(
            "xfire: {} steps of {} min ({:.0} min) over {nx}×{ny} cells of {} m (seed {})",
            o.steps.len(),
            sim.dt_min,
            o.minutes,
            sim.cell_m,
            sim.seed
        ),
        format!(
            "burned {:.1} ha; fire line {:.2} km in {} points",
            o.front.area() / 1e4,
            o.front.perimeter() / 1e3,
            o.front.points.len()
        ),
    ];
    if let (Some(first), Some(last)) = (first, last) {
        lines.push(format!(
            "work per step: {} → {} points, {} → {} tasks; {} points held by non-burnable cells in the last step",
            first.points, last.points, first.tasks, last.tasks, last.blocked
        ));
    }
    if let Some(m) = metrics {
        lines.push(format!(
            "{} backend, {} workers, {:.0} ms in all",
            m.backend, m.pool, m.total_ms
        ));
    }
    if let Some(prefix) = &sim.out {
        lines.push(format!("wrote {0}.csv and {0}.svg", prefix.display()));
    }
    lines.join("\n")
}
