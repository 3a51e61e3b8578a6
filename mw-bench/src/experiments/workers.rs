//! The number of workers (Caymes-Scutari et al., POETRIES, §5, Tables 1–2, Figs. 2–5): N-Body
//! run with 1, 2, 4, 8, 16 and 19 workers, and under MATE starting from one worker and tuned,
//! each under a variable and an increasing external load.
//!
//! Here the workload is the synthetic program in N-Body's communication shape (1000 bodies: the
//! 40,000 bytes of bodies sent to every worker each iteration, 100 tasks of 10 bodies, 320 bytes
//! back per task), 60 iterations as in the paper's Figs. 3 and 5, and the runtime's `--load
//! variable` and `--load increasing` (75 % load, period 8), behind the emulated 100 Mbit/s link
//! of the paper's cluster. The computation per iteration is the paper's own: the task time is
//! chosen so that one worker under the variable load takes Table 1's time (about a second an
//! iteration), whatever best count that gives. The tuned run starts at one worker with a pool of
//! 19 (`--workers 1 --max-workers 19 --tuning on`). Whether it answers each change of the load
//! (the paper's Figs. 3 and 5: within one or two iterations) is measured per phase of the load:
//! from two iterations after the change, the tuned run against the fixed count fastest over
//! the same iterations ([`phases`]).
//! The fixed counts are the paper's and 10, 12 and 14 besides, so that the tuned run is measured
//! against the fixed count nearest its own.
//!
//! The `nbody` example itself runs the same counts and loads behind the link too. Its tasks
//! compute, and a core of today computes 1000 bodies far faster than the paper's Pentium 4
//! while the bodies cost the link what they did, so its own best count is where this machine's
//! 2 cores run out: the section says so from its measured computation per iteration.

use mw_runtime::{LoadPattern, Objective, RunArgs, RunMetrics, TuneMode};
use mwgen::report::chart::{LineChart, Series};
use serde_json::json;

use super::{LINK_LATENCY_MS, LINK_MBIT, fixed, program, synthetic};
use crate::doc::{Figure, Section, Table, Verdict};
use crate::ideal::{against, median};
use crate::teardown::Scratch;
use crate::{BenchError, Size};

#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub(super) counts: Vec<usize>,
    pub(super) pool: usize,
    pub(super) iterations: usize,
    pub(super) tasks: usize,
    /// The computation of an iteration relative to the paper's (Table 1 at one worker).
    time_scale: f64,
    pub(super) loads: Vec<&'static str>,
    /// Runs of every link configuration, for the spread.
    pub(super) repeats: usize,
    /// Bodies of the runs of the `nbody` example itself.
    bodies: usize,
}

/// The N-Body communication shape of the synthetic runs: the bodies sent to every worker each
/// iteration, and the bytes back per task.
pub(super) const SHARED_BYTES: usize = 40_000;
pub(super) const RESULT_BYTES: usize = 320;
/// The deviation of the synthetic tasks' times.
pub(super) const STDDEV: f64 = 0.1;

pub(super) fn plan(size: Size) -> Plan {
    match size {
        Size::Full => Plan {
            // The paper's counts, and the gaps of its grid above 8 filled: a tuned run that
            // settles between the paper's counts is measured against fixed counts near its own,
            // not only against a coarser grid that would flatter it.
            counts: vec![1, 2, 4, 8, 10, 12, 14, 16, 19],
            pool: 19,
            iterations: 60,
            tasks: 100,
            time_scale: 1.0,
            loads: vec!["variable", "increasing"],
            repeats: 2,
            bodies: 1000,
        },
        Size::Tiny => Plan {
            counts: vec![1, 2, 4],
            pool: 4,
            iterations: 6,
            tasks: 20,
            time_scale: 0.01,
            loads: vec!["variable:2", "increasing:2"],
            repeats: 1,
            bodies: 100,
        },
    }
}

/// The paper's Tables 1 and 2: seconds with 1, 2, 4, 8, 16, 19 workers, then under MATE.
pub const PAPER_VARIABLE: [f64; 7] = [64.49, 34.61, 18.09, 10.37, 11.83, 15.49, 10.92];
pub const PAPER_INCREASING: [f64; 7] = [73.23, 37.11, 19.28, 11.76, 13.05, 14.50, 12.46];
pub const PAPER_COUNTS: [usize; 6] = [1, 2, 4, 8, 16, 19];

/// The iterations of the paper's Figs. 3 and 5, over which Tables 1 and 2 were timed.
pub const PAPER_ITERATIONS: usize = 60;

/// The tuned run's time over the best fixed count's, at most this (the paper: 1.05× and 1.06×).
pub const RATIO_TARGET: f64 = 1.05;

/// Iterations from a change of load to the tuner's answer, at most this (the paper's Figs. 3
/// and 5: "normalmente una o dos").
pub const LAG_TARGET: usize = 2;

/// The mean task time that gives the paper's computation: one worker under `load` takes Table
/// 1's time over its 60 iterations, so an iteration's tasks take that time over the load's mean
/// stretch of worker 0, spread over `tasks` tasks.
pub fn paper_task_ms(load: &LoadPattern, tasks: usize) -> f64 {
    let stretch: f64 = (0..PAPER_ITERATIONS)
        .map(|i| load.stretch(0, i))
        .sum::<f64>()
        / PAPER_ITERATIONS as f64;
    PAPER_VARIABLE[0] * 1e3 / PAPER_ITERATIONS as f64 / stretch / tasks as f64
}

/// How a row's runs were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    /// The synthetic program behind the emulated 100 Mbit/s link.
    Link,
    /// The `nbody` example itself, computing, behind the emulated link.
    NBody,
    /// The synthetic program under MPI across the cluster in a box, kernel TCP between nodes.
    Tcp,
}

impl Setting {
    fn label(self) -> &'static str {
        match self {
            Setting::Link => "here, 100 Mbit/s link (s)",
            Setting::NBody => "here, N-Body itself, 100 Mbit/s link (s)",
            Setting::Tcp => "here, kernel TCP across the box (s)",
        }
    }

    /// Where the runs were made, for the text.
    pub(super) fn network(self) -> &'static str {
        match self {
            Setting::Link => "behind the emulated 100 Mbit/s link",
            Setting::NBody => "with N-Body itself behind the emulated link",
            Setting::Tcp => "on kernel TCP across the cluster in a box",
        }
    }

    /// The setting in a figure's legend.
    fn short(self) -> &'static str {
        match self {
            Setting::Link => "100 Mbit/s link",
            Setting::NBody => "N-Body itself, link",
            Setting::Tcp => "kernel TCP",
        }
    }
}

/// One configuration, run one or more times.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    pub load: String,
    /// `None` for the tuned run.
    pub workers: Option<usize>,
    pub setting: Setting,
    /// The median of the runs' total times.
    pub total_ms: f64,
    /// Every run's total time, in the order run.
    pub runs_ms: Vec<f64>,
    /// Workers taking part in each iteration, in the first run.
    pub trajectory: Vec<usize>,
    /// The workers' computation in an iteration (`Tc`), the median over the first run's.
    pub tc_ms: f64,
    /// Each iteration's time, the median over the runs.
    pub iterations_ms: Vec<f64>,
}

/// The synthetic program's mean task time for `plan`: the paper's computation, scaled.
pub(super) fn task_ms(plan: &Plan) -> Result<f64, BenchError> {
    Ok(paper_task_ms(&parse_load("variable")?, plan.tasks) * plan.time_scale)
}

pub(super) fn parse_load(load: &str) -> Result<LoadPattern, BenchError> {
    load.parse()
        .map_err(|e| BenchError(format!("error: load `{load}`: {e}")))
}

fn measure(
    plan: &Plan,
    load: &str,
    workers: Option<usize>,
    repeats: usize,
) -> Result<Row, BenchError> {
    repeated((load, workers, Setting::Link), repeats, || {
        emulated(plan, load, workers)
    })
}

/// The runtime flags of a run on `workers` fixed, or tuned from one over the pool when `None`.
pub(super) fn run_args(plan: &Plan, workers: Option<usize>) -> RunArgs {
    match workers {
        Some(n) => fixed(n),
        None => RunArgs {
            workers: Some(1),
            max_workers: Some(plan.pool),
            tune: Some(TuneMode::On),
            objective: Some(Objective::Time),
            ..fixed(1)
        },
    }
}

/// One run of the synthetic program behind the emulated link under `load`: `workers` fixed, or
/// tuned from one when `None`.
pub(super) fn emulated(
    plan: &Plan,
    load: &str,
    workers: Option<usize>,
) -> Result<RunMetrics, BenchError> {
    let mut prog = program(plan.tasks, plan.iterations, task_ms(plan)?, STDDEV);
    prog.shared_bytes = SHARED_BYTES;
    prog.result_bytes = RESULT_BYTES;
    let run = RunArgs {
        load: Some(parse_load(load)?),
        link_latency: Some(LINK_LATENCY_MS),
        link_bandwidth: Some(LINK_MBIT),
        ..run_args(plan, workers)
    };
    Ok(synthetic(prog, run)?.metrics)
}

/// The row of `repeats` runs of one configuration (load, fixed workers or tuned, setting), each
/// made by `one`: their total times, and the first run's trajectory and computation.
fn repeated(
    (load, workers, setting): (&str, Option<usize>, Setting),
    repeats: usize,
    mut one: impl FnMut() -> Result<RunMetrics, BenchError>,
) -> Result<Row, BenchError> {
    let runs = (0..repeats.max(1))
        .map(|_| one())
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Row::of_runs((load, workers, setting), &runs))
}

impl Row {
    /// The row of one configuration's `runs`, in the order run: their total times, and the
    /// first run's trajectory and computation.
    pub(super) fn of_runs(
        (load, workers, setting): (&str, Option<usize>, Setting),
        runs: &[RunMetrics],
    ) -> Row {
        let runs_ms: Vec<f64> = runs.iter().map(|m| m.total_ms).collect();
        let iterations = runs.first().map_or(&[][..], |m| &m.iterations[..]);
        let iterations_ms = (0..iterations.len())
            .map(|i| {
                let times: Vec<f64> = runs
                    .iter()
                    .filter_map(|m| m.iterations.get(i).map(|it| it.time_ms))
                    .collect();
                median(&times)
            })
            .collect();
        Row {
            load: load.to_owned(),
            workers,
            setting,
            total_ms: median(&runs_ms),
            runs_ms,
            trajectory: iterations.iter().map(|i| i.workers).collect(),
            tc_ms: median(&iterations.iter().map(|i| i.tc_ms).collect::<Vec<_>>()),
            iterations_ms,
        }
    }
}

/// Runs of the `nbody` example itself behind the emulated link: `workers` fixed, or tuned from
/// one when `None`, as the synthetic runs.
fn measure_nbody(
    plan: &Plan,
    load: &str,
    workers: Option<usize>,
    repeats: usize,
) -> Result<Row, BenchError> {
    let mut args: Vec<String> = [
        "--bodies",
        &plan.bodies.to_string(),
        "--steps",
        &plan.iterations.to_string(),
        "--policy",
        "daf",
        "--load",
        load,
        "--link-latency",
        &LINK_LATENCY_MS.to_string(),
        "--link-bandwidth",
        &LINK_MBIT.to_string(),
    ]
    .map(str::to_owned)
    .to_vec();
    let (first, pool, tuning) = match workers {
        Some(n) => (n, n, "off"),
        None => (1, plan.pool, "on"),
    };
    args.extend([
        "--workers".to_owned(),
        first.to_string(),
        "--max-workers".to_owned(),
        pool.to_string(),
        "--tuning".to_owned(),
        tuning.to_owned(),
        "--objective".to_owned(),
        "time".to_owned(),
    ]);
    let scratch = Scratch::new("mw-bench-nbody").map_err(BenchError)?;
    let path = scratch.path().join("metrics.json");
    repeated((load, workers, Setting::NBody), repeats, || {
        super::children::nbody_metrics(&args, &path).map_err(BenchError)
    })
}

/// The fastest fixed count's row and the tuned row among `of` (one load and setting).
pub(super) fn best_and_tuned<'a>(of: &[&'a Row]) -> (Option<&'a Row>, Option<&'a Row>) {
    let best = of
        .iter()
        .copied()
        .filter(|r| r.workers.is_some())
        .min_by(|a, b| a.total_ms.total_cmp(&b.total_ms));
    let tuned = of.iter().copied().find(|r| r.workers.is_none());
    (best, tuned)
}

/// The rows of one load and setting.
pub(super) fn of<'a>(rows: &'a [Row], load: &str, setting: Setting) -> Vec<&'a Row> {
    rows.iter()
        .filter(|r| r.load == load && r.setting == setting)
        .collect()
}

/// The tuned run's time over the best fixed count's, run by run: the median and the range.
pub fn paired_ratios(best: &Row, tuned: &Row) -> Option<(f64, f64, f64)> {
    let ratios: Vec<f64> = tuned
        .runs_ms
        .iter()
        .zip(&best.runs_ms)
        .map(|(t, f)| t / f)
        .collect();
    if ratios.is_empty() {
        return None;
    }
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(0.0, f64::max);
    Some((median(&ratios), lo, hi))
}

/// `median` seconds, with the range when there were several runs.
fn seconds(row: &Row) -> String {
    let s = row.total_ms / 1e3;
    if row.runs_ms.len() < 2 {
        return format!("{s:.2}");
    }
    let lo = row.runs_ms.iter().copied().fold(f64::INFINITY, f64::min) / 1e3;
    let hi = row.runs_ms.iter().copied().fold(0.0, f64::max) / 1e3;
    format!("{s:.2} ({lo:.2}–{hi:.2})")
}

/// The tuned run's time over the best fixed run's, and the best fixed count.
pub fn tuned_against_best(fixed: &[(usize, f64)], tuned: f64) -> Option<(usize, f64)> {
    fixed
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|&(n, best)| (n, tuned / best))
}

/// The paper's row and ours for one load, in seconds: each setting's medians (with their range
/// over repeated runs), and the tuned run over the best fixed count, run by run.
pub fn comparison(load: &str, paper: &[f64; 7], rows: &[Row], counts: &[usize]) -> Table {
    let mut header = vec!["".to_owned()];
    header.extend(counts.iter().map(|n| format!("{n}")));
    header.push("tuned from 1".into());
    header.push("tuned / best fixed".into());
    let mut table = Table {
        header,
        rows: Vec::new(),
    };
    let paper_fixed: Vec<(usize, f64)> = PAPER_COUNTS
        .iter()
        .copied()
        .zip(paper[..6].iter().copied())
        .collect();
    let mut line = vec!["paper (s)".to_owned()];
    for n in counts {
        line.push(
            paper_fixed
                .iter()
                .find(|(c, _)| c == n)
                .map_or("–".into(), |(_, s)| format!("{s:.2}")),
        );
    }
    line.push(format!("{:.2}", paper[6]));
    line.push(
        tuned_against_best(&paper_fixed, paper[6])
            .map_or("–".into(), |(n, r)| format!("{r:.2} (best: {n})")),
    );
    table.rows.push(line);
    for setting in [Setting::Link, Setting::Tcp, Setting::NBody] {
        let of = of(rows, load, setting);
        if of.is_empty() {
            continue;
        }
        let mut line = vec![setting.label().to_owned()];
        for n in counts {
            line.push(
                of.iter()
                    .find(|r| r.workers == Some(*n))
                    .map_or("–".into(), |r| seconds(r)),
            );
        }
        let (best, tuned) = best_and_tuned(&of);
        line.push(tuned.map_or("–".into(), seconds));
        line.push(match (best, tuned) {
            (Some(best), Some(tuned)) => {
                let n = best.workers.unwrap_or(0);
                match paired_ratios(best, tuned) {
                    Some((r, lo, hi)) if tuned.runs_ms.len() > 1 => {
                        format!("{r:.2} ({lo:.2}–{hi:.2}; best: {n})")
                    }
                    Some((r, _, _)) => format!("{r:.2} (best: {n})"),
                    None => "–".into(),
                }
            }
            _ => "–".into(),
        });
        table.rows.push(line);
    }
    table
}

/// The iterations of a run of `iterations` where the load of some worker of a pool of `pool`
/// differs from the iteration before.
fn load_changes(load: &LoadPattern, pool: usize, iterations: usize) -> Vec<usize> {
    let loads = |i: usize| (0..pool).map(|w| load.percent(w, i)).collect::<Vec<_>>();
    (1..iterations)
        .filter(|&i| loads(i) != loads(i - 1))
        .collect()
}

/// The load changes of `load` over `iterations` (a pool of `pool` workers) and, for each, the
/// iterations the tuned `trajectory` took to reach its answer: the count it holds at the end of
/// the load's phase, held from that iteration on. `None` where the trajectory is too short.
pub fn lags(load: &LoadPattern, pool: usize, trajectory: &[usize]) -> Vec<(usize, Option<usize>)> {
    let changes = load_changes(load, pool, trajectory.len());
    changes
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            let end = changes.get(k + 1).copied().unwrap_or(trajectory.len());
            let answer = trajectory[end - 1];
            let settled = (c..end)
                .find(|&i| trajectory[i..end].iter().all(|&n| n == answer))
                .map(|i| i - c);
            (c, settled)
        })
        .collect()
}

/// `8: 1, 16: 3` — each load change's iteration and the iterations to the answer.
pub(super) fn lags_text(lags: &[(usize, Option<usize>)]) -> String {
    lags.iter()
        .map(|(c, lag)| format!("{c}: {}", lag.map_or("–".to_owned(), |l| l.to_string())))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the lags of a tuned `trajectory` cannot tell apart, said where it applies: a tuner that
/// held one count from before the first change of the load to the end has every lag 0 without
/// following the load at all. Empty otherwise.
pub(super) fn held_note(lags: &[(usize, Option<usize>)], trajectory: &[usize]) -> String {
    let Some(&(first, _)) = lags.first() else {
        return String::new();
    };
    let Some(held) = trajectory.get(first.saturating_sub(1)..) else {
        return String::new();
    };
    match held.first() {
        Some(&n) if held.iter().all(|&m| m == n) => format!(
            "; it held {n} workers from iteration {} to the end, through every change of the \
             load, so a lag of 0 here says that it did not move, not that it followed the load",
            first.saturating_sub(1)
        ),
        _ => String::new(),
    }
}

/// One phase of the load, from a change to the next (or the end), judged from [`LAG_TARGET`]
/// iterations after the change: the fixed count fastest over those iterations, and the tuned
/// run over the same iterations. This is what the paper's Figs. 3 and 5 show by eye: after each
/// change of the load, the tuner at a count as good as the best one for the new load.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Phase {
    /// The iteration of the load change, and one past the phase's last.
    pub start: usize,
    pub end: usize,
    /// The fixed count fastest over the judged iterations, and its time there.
    pub best: usize,
    pub best_ms: f64,
    /// The fewest and the most workers of the tuned run (first run) over the judged
    /// iterations, and its time there.
    pub tuned: (usize, usize),
    pub tuned_ms: f64,
}

impl Phase {
    pub fn ratio(&self) -> f64 {
        self.tuned_ms / self.best_ms
    }
}

/// The phases of `load` (a pool of `pool` workers) that begin with a change, each judged on the
/// fixed and tuned rows of one load and setting, `of`. Phases of no more than [`LAG_TARGET`]
/// iterations, and any when a row's iterations are missing, are left out.
pub fn phases(load: &LoadPattern, pool: usize, of: &[&Row]) -> Vec<Phase> {
    let (fixed, tuned): (Vec<&Row>, Vec<&Row>) = of.iter().partition(|r| r.workers.is_some());
    let Some(tuned) = tuned.first() else {
        return Vec::new();
    };
    let len = tuned.iterations_ms.len();
    let changes = load_changes(load, pool, len);
    let time = |row: &Row, from: usize, to: usize| -> Option<f64> {
        Some(row.iterations_ms.get(from..to)?.iter().sum())
    };
    changes
        .iter()
        .enumerate()
        .filter_map(|(k, &start)| {
            let end = changes.get(k + 1).copied().unwrap_or(len);
            let from = start + LAG_TARGET;
            if from >= end {
                return None;
            }
            let (best, best_ms) = fixed
                .iter()
                .filter_map(|r| Some((r.workers?, time(r, from, end)?)))
                .min_by(|a, b| a.1.total_cmp(&b.1))?;
            let held = tuned.trajectory.get(from..end)?;
            Some(Phase {
                start,
                end,
                best,
                best_ms,
                tuned: (*held.iter().min()?, *held.iter().max()?),
                tuned_ms: time(tuned, from, end)?,
            })
        })
        .collect()
}

/// `8–15: best 14, tuned 12, 1.04×` for each phase.
pub(super) fn phases_text(phases: &[Phase]) -> String {
    phases
        .iter()
        .map(|p| {
            let tuned = match p.tuned {
                (lo, hi) if lo == hi => lo.to_string(),
                (lo, hi) => format!("{lo}–{hi}"),
            };
            format!(
                "{}–{}: best {}, tuned {tuned}, {}×",
                p.start,
                p.end - 1,
                p.best,
                against(p.ratio(), RATIO_TARGET)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The paper's findings against ours behind the link: the tuned run within [`RATIO_TARGET`] of
/// the best fixed count, and each change of the load answered within [`LAG_TARGET`] iterations.
pub fn verdict(rows: &[Row], loads: &[&str], pool: usize) -> Verdict {
    verdict_on(rows, loads, pool, Setting::Link)
}

/// [`verdict`] on the rows of `setting`.
pub(super) fn verdict_on(rows: &[Row], loads: &[&str], pool: usize, setting: Setting) -> Verdict {
    let mut met = 0;
    let mut checks = 0;
    let mut parts = Vec::new();
    for load in loads {
        let these = of(rows, load, setting);
        let (Some(best), Some(tuned)) = best_and_tuned(&these) else {
            continue;
        };
        let n = best.workers.unwrap_or(0);
        let ratio = paired_ratios(best, tuned).map_or(f64::NAN, |r| r.0);
        let phases = parse_load(load)
            .map(|p| phases(&p, pool, &these))
            .unwrap_or_default();
        let late = phases
            .iter()
            .filter(|p| p.ratio().is_nan() || p.ratio() > RATIO_TARGET)
            .count();
        checks += 2;
        met += usize::from(ratio <= RATIO_TARGET) + usize::from(!phases.is_empty() && late == 0);
        parts.push(format!(
            "under `{load}` the best fixed count is {n}, the tuned run {}× it, and \
             {LAG_TARGET} iterations after a change of the load it ran within {RATIO_TARGET:.2}× \
             of the fixed count fastest for the new load in {} of {} phases (iterations: fastest \
             fixed count, tuned count, tuned over fastest: {})",
            against(ratio, RATIO_TARGET),
            phases.len() - late,
            phases.len(),
            phases_text(&phases),
        ));
    }
    let best_of = |paper: &[f64; 7]| {
        let fixed: Vec<(usize, f64)> = PAPER_COUNTS
            .iter()
            .copied()
            .zip(paper[..6].iter().copied())
            .collect();
        tuned_against_best(&fixed, paper[6])
    };
    let paper = [PAPER_VARIABLE, PAPER_INCREASING]
        .iter()
        .filter_map(best_of)
        .map(|(n, r)| format!("{n} workers best, the tuned run {r:.2}×"))
        .collect::<Vec<_>>()
        .join("; ");
    let why = format!(
        "{} with the paper's computation per iteration, {} \
         (targets: tuned ≤ {RATIO_TARGET:.2}× the best fixed count, and within \
         {RATIO_TARGET:.2}× of the fastest fixed count of each phase of the load from \
         {LAG_TARGET} iterations after its change; the paper: {paper}).",
        setting.network(),
        parts.join("; ")
    );
    match (checks > 0 && met == checks, met) {
        (true, _) => Verdict::Reproduced(why),
        (false, 0) => Verdict::Not(why),
        _ => Verdict::Partly(why),
    }
}

/// What the runs of the `nbody` example itself show, and why they are not the paper's replica:
/// their computation per byte sent, measured, against the link's cost of the bodies.
fn nbody_text(rows: &[Row], plan: &Plan) -> String {
    let Some(one) = plan.loads.first().and_then(|l| {
        of(rows, l, Setting::NBody)
            .into_iter()
            .find(|r| r.workers == Some(1))
    }) else {
        return String::new();
    };
    let shared_bytes = plan.bodies * 40;
    let link_ms = LINK_LATENCY_MS + shared_bytes as f64 * 8e-3 / LINK_MBIT;
    let mut found = Vec::new();
    for load in &plan.loads {
        if let (Some(best), Some(tuned)) = best_and_tuned(&of(rows, load, Setting::NBody)) {
            let ratio = paired_ratios(best, tuned).map_or(f64::NAN, |r| r.0);
            let most = tuned.trajectory.iter().copied().max().unwrap_or(0);
            found.push(format!(
                "under `{load}` its best fixed count is {}, and the tuned run {ratio:.2}× it, \
                 with at most {most} worker{}",
                best.workers.unwrap_or(0),
                if most == 1 { "" } else { "s" }
            ));
        }
    }
    format!(
        "The N-Body rows run the `nbody` example itself ({} bodies, 10 a task, `daf`, {} steps) \
         behind the same link, with the same flags. Its tasks compute, so past this machine's {} \
         cores more workers share them, and a core of today computes an iteration in {:.1} ms \
         (measured at one worker) while the link takes {link_ms:.1} ms to send the {shared_bytes} \
         bytes of bodies to each worker; the paper's Pentium 4 computed about a second an \
         iteration ({:.0} s over {PAPER_ITERATIONS} at one worker, Table 1). With this little \
         computation per byte, N-Body's own best count is small: {}. The synthetic rows, whose \
         iterations compute {:.0} ms (measured median) with N-Body's messages, stand in for the \
         paper's computation.\n\n",
        plan.bodies,
        plan.iterations,
        crate::machine::Machine::detect().cores,
        one.tc_ms,
        PAPER_VARIABLE[0],
        found.join("; "),
        plan.loads
            .first()
            .and_then(|l| of(rows, l, Setting::Link)
                .into_iter()
                .find(|r| r.workers == Some(1)))
            .map_or(f64::NAN, |r| r.tc_ms),
    )
}

const PAPER: &str = "\
Caymes-Scutari et al. (POETRIES), §5: N-Body on a cluster of Pentium 4 at 1.8 GHz on 100 Mbit/s,
one worker per machine, with 1, 2, 4, 8, 16, 19 workers and under MATE starting from one worker
(\"La aplicación comenzó con un worker, y durante la ejecución el número fue modificándose\"),
each alongside a variable and a gradually increasing external load. Execution time in seconds:

| load | 1 | 2 | 4 | 8 | 16 | 19 | MATE |
| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| variable (Table 1) | 64.49 | 34.61 | 18.09 | 10.37 | 11.83 | 15.49 | 10.92 |
| increasing (Table 2) | 73.23 | 37.11 | 19.28 | 11.76 | 13.05 | 14.50 | 12.46 |

The tuned run comes within 5–6 % of the best fixed count (8 workers), reached without knowing it
in advance; Figs. 3 and 5 show the number of workers adapting over 60 iterations, one or two
iterations after each change of load.";

/// How each tuned run of `rows` under `load` moved `nworkers` (first run), and the iterations
/// from each change of the load to its answer.
pub(super) fn tuned_text(rows: &[Row], load: &str, pool: usize) -> Result<String, BenchError> {
    let mut text = String::new();
    for tuned in rows
        .iter()
        .filter(|r| r.load == load && r.workers.is_none())
    {
        let changes = tuned.trajectory.windows(2).filter(|w| w[0] != w[1]).count();
        let last = tuned.trajectory.last().copied().unwrap_or(0);
        let most = tuned.trajectory.iter().copied().max().unwrap_or(0);
        let plural = if changes == 1 { "" } else { "s" };
        let lags = lags(&parse_load(load)?, pool, &tuned.trajectory);
        text.push_str(&format!(
            "Tuned under `{load}` {} (first run): {changes} change{plural} of `nworkers` between \
             iterations, at most {most}, {last} at the end; load change at iteration: \
             iterations to the answer, {}{}.\n\n",
            tuned.setting.network(),
            lags_text(&lags),
            held_note(&lags, &tuned.trajectory)
        ));
    }
    Ok(text)
}

/// Total time against the number of workers under `load`, a line for each of `settings` and
/// its tuned run dashed across (the paper's Figs. 2 and 4); the file is `{prefix}-{load}.svg`.
pub(super) fn time_figure(
    rows: &[Row],
    load: &str,
    counts: &[usize],
    settings: &[Setting],
    prefix: &str,
) -> Figure {
    let name = load.split(':').next().unwrap_or(load);
    let point = |r: &Row| r.workers.map(|n| (n as f64, r.total_ms / 1e3));
    let mut series = Vec::new();
    for &setting in settings {
        let of = of(rows, load, setting);
        series.push(Series::line(
            format!("fixed, {}", setting.short()),
            of.iter().copied().filter_map(point).collect(),
        ));
        if let Some(t) = of.iter().find(|r| r.workers.is_none()) {
            let (lo, hi) = (counts[0] as f64, *counts.last().unwrap_or(&1) as f64);
            series.push(Series::dashed(
                format!("tuned from 1, {}", setting.short()),
                vec![(lo, t.total_ms / 1e3), (hi, t.total_ms / 1e3)],
            ));
        }
    }
    Figure {
        file: format!("{prefix}-{name}.svg"),
        caption: format!(
            "Total time against the number of workers under `--load {load}` (the paper's Figs. \
             2 and 4); dashed: the tuned run."
        ),
        chart: LineChart {
            title: format!("Run time by number of workers, load {name}"),
            x_label: "workers".into(),
            y_label: "total time (s)".into(),
            series,
            log_x: true,
        },
    }
}

/// The tuned runs' `nworkers` in each iteration (the paper's Figs. 3 and 5).
pub(super) fn trajectory_figure(rows: &[Row], file: &str) -> Figure {
    let trajectories: Vec<Series> = rows
        .iter()
        .filter(|r| r.workers.is_none())
        .map(|r| {
            Series::line(
                format!("load {}, {}", r.load, r.setting.short()),
                r.trajectory
                    .iter()
                    .enumerate()
                    .map(|(i, &n)| (i as f64, n as f64))
                    .collect(),
            )
        })
        .collect();
    Figure {
        file: file.into(),
        caption: "nworkers chosen by the tuner in each iteration, starting from one worker \
                  (the paper's Figs. 3 and 5)."
            .into(),
        chart: LineChart {
            title: "Tuned number of workers over the run".into(),
            x_label: "iteration".into(),
            y_label: "nworkers".into(),
            series: trajectories,
            log_x: false,
        },
    }
}

/// Runs the experiment.
///
/// # Errors
/// A run that failed.
pub fn run(size: Size) -> Result<Section, BenchError> {
    let plan = plan(size);
    let mut rows = Vec::new();
    for load in &plan.loads {
        for &n in &plan.counts {
            rows.push(measure(&plan, load, Some(n), plan.repeats)?);
        }
        rows.push(measure(&plan, load, None, plan.repeats)?);
        for &n in &plan.counts {
            rows.push(measure_nbody(&plan, load, Some(n), plan.repeats)?);
        }
        rows.push(measure_nbody(&plan, load, None, plan.repeats)?);
    }
    let mut ours = format!(
        "{} iterations of {} sleeping tasks of {:.2} ms ± 10 % (the paper's computation{}: one \
         worker under `--load variable` takes Table 1's {:.2} s over {PAPER_ITERATIONS} \
         iterations), N-Body's shape (40,000 bytes to every worker, 320 bytes back per task), \
         `daf`; fixed runs `--tuning off`, the tuned run `--workers 1 --max-workers {} --tuning \
         on --objective time`. Behind the emulated link of the paper's cluster (`--link-latency \
         {LINK_LATENCY_MS} --link-bandwidth {LINK_MBIT}`: the master's network card, one link \
         each way shared by all workers). Total run time in seconds: {}; the tuned run over the \
         best fixed count, run by run. A load change is an iteration where the load of some \
         worker of the pool differs from the iteration before; the tuner's answer to it is the \
         number of workers it holds at the end of that load's phase, and the lag the iterations \
         from the change until it holds that number for good. The verdict judges each phase of \
         the load, from {LAG_TARGET} iterations after its change to the next: the tuned run's \
         time there (per iteration, the median of the runs) against the fixed count fastest \
         over the same iterations.\n\n",
        plan.iterations,
        plan.tasks,
        task_ms(&plan)?,
        if plan.time_scale == 1.0 {
            String::new()
        } else {
            format!(" scaled by {}", plan.time_scale)
        },
        PAPER_VARIABLE[0],
        plan.pool,
        match plan.repeats {
            1 => "one run each".to_owned(),
            n => format!("the median of {n} runs, with their range"),
        }
    );
    ours.push_str(&nbody_text(&rows, &plan));
    let papers = [PAPER_VARIABLE, PAPER_INCREASING];
    let mut figures = Vec::new();
    for (i, load) in plan.loads.iter().enumerate() {
        let paper = papers[i.min(1)];
        ours.push_str(&format!(
            "**`--load {load}`**:\n\n{}\n",
            comparison(load, &paper, &rows, &plan.counts).markdown()
        ));
        ours.push_str(&tuned_text(&rows, load, plan.pool)?);
        figures.push(time_figure(
            &rows,
            load,
            &plan.counts,
            &[Setting::Link, Setting::NBody],
            "workers-time",
        ));
    }
    figures.push(trajectory_figure(&rows, "workers-trajectory.svg"));
    Ok(Section {
        title: "Number of workers".into(),
        verdict: verdict(&rows, &plan.loads, plan.pool),
        paper: PAPER.into(),
        ours,
        figures,
        data: json!({ "rows": rows }),
        seconds: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_takes_the_median_of_its_runs_and_the_first_runs_trajectory() {
        let run = |total_ms: f64, workers: &[usize]| RunMetrics {
            total_ms,
            iterations: workers
                .iter()
                .map(|&w| mw_runtime::metrics::IterationMetrics {
                    workers: w,
                    tc_ms: 10.0 * w as f64,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let runs = [
            run(30.0, &[1, 2, 4]),
            run(10.0, &[1, 1, 1]),
            run(20.0, &[2, 2, 2]),
        ];
        let row = Row::of_runs(("variable", None, Setting::Tcp), &runs);
        assert_eq!(row.total_ms, 20.0);
        assert_eq!(row.runs_ms, vec![30.0, 10.0, 20.0]);
        assert_eq!(row.trajectory, vec![1, 2, 4]);
        assert_eq!(row.tc_ms, 20.0);
        assert_eq!(row.setting, Setting::Tcp);
    }

    #[test]
    fn a_tuner_that_never_moved_is_said_to_have_held_its_count() {
        let load: LoadPattern = "3:0:75".parse().unwrap();
        let still = [1, 4, 4, 4, 4, 4];
        let note = held_note(&lags(&load, 2, &still), &still);
        assert!(note.contains("held 4 workers from iteration 2"), "{note}");
        let moved = [1, 4, 4, 3, 3, 3];
        assert_eq!(held_note(&lags(&load, 2, &moved), &moved), "");
        assert_eq!(held_note(&[], &still), "");
    }

    #[test]
    fn the_papers_tuned_run_is_within_six_percent_of_the_best() {
        let fixed: Vec<(usize, f64)> = PAPER_COUNTS
            .iter()
            .copied()
            .zip(PAPER_VARIABLE[..6].iter().copied())
            .collect();
        let (n, r) = tuned_against_best(&fixed, PAPER_VARIABLE[6]).unwrap();
        assert_eq!(n, 8);
        assert!((r - 10.92 / 10.37).abs() < 1e-12);
        assert_eq!(tuned_against_best(&[], 1.0), None);
    }

    #[test]
    fn the_papers_computation_is_a_second_an_iteration_under_load() {
        // `variable`: worker 0 loaded (stretch 4) in 28 of 60 iterations, so the mean stretch is
        // (32 + 28·4) / 60 = 2.4; 64.49 s over 60 iterations is 1.075 s, 0.448 s unloaded.
        let ms = paper_task_ms(&"variable".parse().unwrap(), 100);
        assert!((ms - 64.49e3 / 60.0 / 2.4 / 100.0).abs() < 1e-9, "{ms}");
    }

    #[test]
    fn the_lag_counts_iterations_from_a_load_change_to_the_held_answer() {
        // Load on worker 0 from iteration 3 on (one change); the tuner moves at 4 and 5 and
        // holds 3 from 5: two iterations.
        let load: LoadPattern = "3:0:75".parse().unwrap();
        assert_eq!(
            lags(&load, 2, &[1, 2, 2, 2, 4, 3, 3, 3]),
            vec![(3, Some(2))]
        );
        // Answered at once.
        assert_eq!(lags(&load, 2, &[1, 2, 2, 3, 3, 3]), vec![(3, Some(0))]);
        // Two changes, the second never answered before the run ends: its last iteration.
        let load: LoadPattern = "2:0:75,4:0:0".parse().unwrap();
        assert_eq!(
            lags(&load, 1, &[1, 1, 1, 2, 2, 3]),
            vec![(2, Some(1)), (4, Some(1))]
        );
        assert_eq!(lags_text(&[(8, Some(1)), (16, None)]), "8: 1, 16: –");
    }

    #[test]
    fn each_phase_of_the_load_is_judged_against_its_fastest_fixed_count() {
        // Load on worker 0 from iteration 3 to 7: 4 workers are fastest before, 2 during.
        let load: LoadPattern = "3:0:75,7:0:0".parse().unwrap();
        let row = |workers: Option<usize>, iterations_ms: Vec<f64>, trajectory: Vec<usize>| Row {
            load: "l".into(),
            workers,
            setting: Setting::Link,
            total_ms: iterations_ms.iter().sum(),
            runs_ms: vec![iterations_ms.iter().sum()],
            trajectory,
            tc_ms: 100.0,
            iterations_ms,
        };
        let two = row(Some(2), vec![20.0; 10], vec![2; 10]);
        let four = row(
            Some(4),
            vec![10.0, 10.0, 10.0, 30.0, 30.0, 30.0, 30.0, 10.0, 10.0, 10.0],
            vec![4; 10],
        );
        // The tuner stays at 4 through the load (answers late) and is back at 4 after it.
        let tuned = row(
            None,
            vec![40.0, 10.0, 10.0, 30.0, 30.0, 30.0, 22.0, 10.0, 10.0, 10.0],
            vec![1, 4, 4, 4, 4, 4, 2, 4, 4, 4],
        );
        let phases = phases(&load, 2, &[&two, &four, &tuned]);
        assert_eq!(phases.len(), 2, "{phases:?}");
        // Judged from 2 iterations after each change: 5 and 6, then 9.
        let p = &phases[0];
        assert_eq!((p.start, p.end), (3, 7));
        assert_eq!((p.best, p.tuned), (2, (2, 4)));
        assert!((p.best_ms - 40.0).abs() < 1e-9 && (p.tuned_ms - 52.0).abs() < 1e-9);
        assert_eq!(
            phases_text(&phases),
            "3–6: best 2, tuned 2–4, 1.30×; 7–9: best 4, tuned 4, 1.00×"
        );
        let load: LoadPattern = "3:0:75,6:0:0".parse().unwrap();
        let phases_2 = super::phases(&load, 2, &[&two, &four, &tuned]);
        assert_eq!(
            phases_2
                .iter()
                .map(|p| (p.start, p.best))
                .collect::<Vec<_>>(),
            vec![(3, 2), (6, 4)]
        );
    }

    #[test]
    fn the_comparison_puts_ours_under_the_papers() {
        let row = |workers, runs_ms: Vec<f64>| Row {
            load: "variable".into(),
            workers,
            setting: Setting::Link,
            total_ms: median(&runs_ms),
            runs_ms,
            trajectory: vec![1, 2],
            tc_ms: 100.0,
            iterations_ms: vec![50.0, 50.0],
        };
        let rows = vec![
            row(Some(1), vec![4000.0, 4100.0, 3900.0]),
            row(Some(2), vec![2000.0, 2100.0, 1900.0]),
            row(None, vec![2500.0, 2100.0, 2090.0]),
        ];
        let md = comparison("variable", &PAPER_VARIABLE, &rows, &[1, 2]).markdown();
        let lines: Vec<&str> = md.lines().collect();
        assert!(
            lines[2].contains("64.49") && lines[2].contains("10.92"),
            "{md}"
        );
        assert!(lines[2].contains("1.05 (best: 8)"), "{md}");
        assert!(lines[3].starts_with("| here, 100 Mbit/s link (s)"), "{md}");
        // Medians with their ranges; the tuned run over the best, pair by pair: 2500/2000,
        // 2100/2100, 2090/1900.
        assert!(lines[3].contains("4.00 (3.90–4.10)"), "{md}");
        assert!(lines[3].contains("1.10 (1.00–1.25; best: 2)"), "{md}");
        assert_eq!(lines.len(), 4, "no other settings were given");
    }
}
