//! Distribution policies (Cesar et al. 2006, §5.4, Figs. 2–4): `static` (the paper's "none"),
//! `fsc`, `dpf` and `daf` on the synthetic program with 10,000 tasks per iteration: 25 workers
//! and tasks of 0.5 ms (Fig. 2) and 6 ms (Fig. 3), 50 workers and 6 ms (Fig. 4), the task time's
//! deviation from 0 to 80 % of the mean.
//!
//! Each run fixes the workers; `fsc` and `dpf` have their factor tuned, as in the paper
//! (`--tuning factor`), `fsc` starting at the paper's 0.25 (§5.1); `daf` computes its own. We report the mean iteration time and its
//! ratio to the ideal of [`crate::ideal`]. The paper's communication volumes are kept: 240 KB per
//! iteration at 0.5 ms (16 bytes out and 8 back per task), 1 MB at 6 ms (64 and 36), and so is
//! its network, emulated: `--link-latency 0.1 --link-bandwidth 100` (the spinning runs excepted).
//!
//! The paper finds `fsc` "usually by far the worst"; here it is not, and the section says why
//! from the runs: the chunks `fsc` cuts, how much their times deviate, what the link charges
//! per chunk, and one more run per case of `fsc` at the factor of the paper's simulation, which
//! sees only the mean task time ([`BLIND_FACTOR`]). At the largest deviation each policy runs
//! more than once, and the fastest is named with those whose range of times overlaps its own.

use mw_runtime::{PolicyName, TuneMode};
use mwgen::report::chart::{LineChart, Series};
use serde_json::json;

use super::{LINK_LATENCY_MS, LINK_MBIT, fixed, measured_and_ideal, program, synthetic};
use crate::doc::{Figure, Section, Table, Verdict, ms};
use crate::ideal::{Spread, median, ratio};
use crate::{BenchError, Size};

/// The policies compared, in the paper's order.
pub const POLICIES: [PolicyName; 4] = [
    PolicyName::Static,
    PolicyName::Fsc,
    PolicyName::Dpf,
    PolicyName::Daf,
];

/// One of the paper's figures: its workers, mean task time and bytes per task.
#[derive(Debug, Clone, Copy)]
struct Case {
    figure: &'static str,
    workers: usize,
    mean_ms: f64,
    task_bytes: usize,
    result_bytes: usize,
}

impl Case {
    const fn new(
        figure: &'static str,
        workers: usize,
        mean_ms: f64,
        bytes: (usize, usize),
    ) -> Case {
        Case {
            figure,
            workers,
            mean_ms,
            task_bytes: bytes.0,
            result_bytes: bytes.1,
        }
    }
}

/// The sizes of one size of the experiment.
#[derive(Debug, Clone)]
struct Plan {
    tasks: usize,
    iterations: usize,
    /// The paper's figures.
    cases: Vec<Case>,
    deviations: Vec<f64>,
    /// Runs of each policy at the largest deviation, the sweep's included: the verdict's
    /// fastest policy is judged on them.
    runs_at_top: usize,
    /// Spinning runs: workers, tasks, mean, deviations.
    spin: (usize, usize, f64, Vec<f64>),
}

fn plan(size: Size) -> Plan {
    match size {
        Size::Full => Plan {
            tasks: 10_000,
            iterations: 3,
            cases: vec![
                Case::new("Fig. 2", 25, 0.5, (16, 8)),
                Case::new("Fig. 3", 25, 6.0, (64, 36)),
                Case::new("Fig. 4", 50, 6.0, (16, 8)),
            ],
            deviations: vec![0.0, 0.2, 0.4, 0.6, 0.8],
            runs_at_top: 3,
            spin: (2, 1000, 0.5, vec![0.0, 0.8]),
        },
        Size::Tiny => Plan {
            tasks: 40,
            iterations: 3,
            cases: vec![
                Case::new("Fig. 2", 4, 0.5, (16, 8)),
                Case::new("Fig. 3", 4, 6.0, (64, 36)),
                Case::new("Fig. 4", 8, 6.0, (16, 8)),
            ],
            deviations: vec![0.0, 0.8],
            runs_at_top: 1,
            spin: (2, 40, 0.5, vec![0.8]),
        },
    }
}

/// One run's outcome.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    /// The paper's figure (`Fig. 2`), or `spinning`.
    pub case: String,
    pub workers: usize,
    pub policy: String,
    /// Tasks per iteration.
    pub tasks: usize,
    pub mean_ms: f64,
    pub deviation: f64,
    pub spin: bool,
    /// Mean measured iteration time, ms.
    pub time_ms: f64,
    /// Mean ideal iteration time, ms.
    pub ideal_ms: f64,
    pub chunks: f64,
    /// Bytes of a chunk and its answer, on average.
    pub chunk_bytes: f64,
    /// The factor each iteration started with.
    pub factors: Vec<f64>,
    /// The first iteration run with a factor the tuner chose (for a change inside an iteration,
    /// that iteration), if any.
    pub first_tuned: Option<usize>,
}

impl Row {
    pub fn ratio(&self) -> f64 {
        ratio(self.time_ms, self.ideal_ms)
    }
}

/// The factor `fsc` starts with and keeps for two iterations in Cesar et al. (2006), §5.1, before
/// its simulation proposes one.
pub const FSC_START: f64 = 0.25;

/// The factor `fsc` gets from a simulation that, as the paper's (§5.1: "only the mean
/// processing time of tasks is used"), sees every task at the mean: every factor then balances
/// the workers alike, and the fewest chunks cost least, so the largest factor tried wins. At
/// 1.0, `fsc` sends one chunk per worker, as `static`.
pub const BLIND_FACTOR: f64 = 1.0;

/// One run of `policy`; `fixed_factor` holds its factor there, untuned.
fn measure(
    policy: PolicyName,
    case: &Case,
    (tasks, iterations): (usize, usize),
    deviation: f64,
    spin: bool,
    fixed_factor: Option<f64>,
) -> Result<Row, BenchError> {
    let mut prog = program(tasks, iterations, case.mean_ms, deviation);
    prog.task_bytes = case.task_bytes;
    prog.result_bytes = case.result_bytes;
    prog.spin = spin;
    let mut run = fixed(case.workers);
    if policy == PolicyName::Fsc {
        run.factor = Some(FSC_START);
    }
    if !spin {
        run.link_latency = Some(LINK_LATENCY_MS);
        run.link_bandwidth = Some(LINK_MBIT);
    }
    run.policy = Some(policy.into());
    run.tune = Some(if policy.uses_factor() && fixed_factor.is_none() {
        TuneMode::Factor
    } else {
        TuneMode::Off
    });
    if fixed_factor.is_some() {
        run.factor = fixed_factor;
    }
    let summary = synthetic(prog, run)?;
    let (measured, ideal) = measured_and_ideal(&summary);
    let n = measured.len().max(1) as f64;
    let chunks = summary
        .metrics
        .iterations
        .iter()
        .map(|i| i.chunks)
        .sum::<usize>() as f64
        / n;
    let bytes: u64 = summary
        .metrics
        .iterations
        .iter()
        .map(|i| i.bytes_to_workers + i.bytes_from_workers)
        .sum();
    let chunk_bytes = bytes as f64 / (chunks * n).max(1.0);
    let first_tuned = summary
        .metrics
        .decisions
        .iter()
        .filter(|d| d.tunable == "factor")
        .map(|d| d.iteration)
        .min();
    Ok(Row {
        case: if spin {
            "spinning".into()
        } else {
            case.figure.into()
        },
        workers: case.workers,
        policy: policy.to_string(),
        tasks,
        mean_ms: case.mean_ms,
        deviation,
        spin,
        time_ms: measured.iter().sum::<f64>() / n,
        ideal_ms: ideal.iter().sum::<f64>() / n,
        chunks,
        chunk_bytes,
        factors: summary
            .metrics
            .iterations
            .iter()
            .map(|i| i.factor)
            .collect(),
        first_tuned,
    })
}

/// The best policy (lowest time) of the rows of one deviation.
pub fn best<'a>(rows: impl Iterator<Item = &'a Row>) -> Option<&'a Row> {
    rows.min_by(|a, b| a.time_ms.total_cmp(&b.time_ms))
}

/// Each policy's iteration times at `figure`'s largest deviation: the sweep's run and the
/// `repeats` there, in [`POLICIES`]' order.
pub fn at_top(rows: &[Row], repeats: &[Row], figure: &str) -> Vec<(String, Spread)> {
    let of_figure = || rows.iter().chain(repeats).filter(|r| r.case == figure);
    let top = of_figure().map(|r| r.deviation).fold(0.0, f64::max);
    POLICIES
        .iter()
        .filter_map(|p| {
            let times: Vec<f64> = of_figure()
                .filter(|r| r.deviation == top && r.policy == p.as_str())
                .map(|r| r.time_ms)
                .collect();
            (!times.is_empty()).then(|| (p.to_string(), Spread::of(&times)))
        })
        .collect()
}

/// The policy of the lowest median, and the others whose range of times overlaps its own: no
/// different from it.
pub fn fastest(spreads: &[(String, Spread)]) -> Option<(&str, Vec<&str>)> {
    let (name, best) = spreads
        .iter()
        .min_by(|a, b| a.1.median.total_cmp(&b.1.median))?;
    let ties = spreads
        .iter()
        .filter(|(other, s)| other != name && s.min <= best.max)
        .map(|(other, _)| other.as_str())
        .collect();
    Some((name.as_str(), ties))
}

/// `` `a` `` for a fastest policy alone, `` `a` (no different from `b`, `c`) `` when the ranges
/// of others overlap its own.
fn fastest_text(name: &str, ties: &[&str]) -> String {
    if ties.is_empty() {
        format!("`{name}`")
    } else {
        let ties: Vec<String> = ties.iter().map(|t| format!("`{t}`")).collect();
        format!("`{name}` (no different from {})", ties.join(", "))
    }
}

/// The paper's finding against ours, over the sleeping runs: DAF fastest at the largest
/// deviation, and FSC the slowest of the three factoring policies; with the [`reason`] when it
/// is not by far.
pub fn verdict(rows: &[Row], repeats: &[Row], blind: &[Row]) -> Verdict {
    let sleeping: Vec<&Row> = rows.iter().filter(|r| !r.spin).collect();
    let mut figures: Vec<&str> = sleeping.iter().map(|r| r.case.as_str()).collect();
    figures.dedup();
    let mut daf_best = Vec::new();
    let (mut fsc_worst, mut cases) = (0, 0);
    let mut fsc_over_daf = Vec::new();
    for &figure in &figures {
        let of_mean = || sleeping.iter().copied().filter(move |r| r.case == figure);
        let spreads = at_top(rows, repeats, figure);
        if let Some((name, ties)) = fastest(&spreads) {
            let daf = name == "daf" || ties.contains(&"daf");
            daf_best.push((figure, fastest_text(name, &ties), daf));
        }
        let mut deviations: Vec<f64> = of_mean().map(|r| r.deviation).collect();
        deviations.dedup();
        for d in deviations {
            let slowest = of_mean()
                .filter(|r| r.deviation == d && r.policy != "static")
                .max_by(|a, b| a.time_ms.total_cmp(&b.time_ms));
            cases += 1;
            fsc_worst += usize::from(slowest.is_some_and(|r| r.policy == "fsc"));
            let time = |p: &str| {
                of_mean()
                    .find(|r| r.deviation == d && r.policy == p)
                    .map(|r| r.time_ms)
            };
            if let (Some(fsc), Some(daf)) = (time("fsc"), time("daf")) {
                fsc_over_daf.push(fsc / daf);
            }
        }
    }
    let daf_wins = daf_best.iter().filter(|(_, _, daf)| *daf).count();
    let best_text: Vec<String> = daf_best
        .iter()
        .map(|(figure, text, _)| format!("{text} in {figure}"))
        .collect();
    // Runs per policy at the largest deviation: the sweep's and the repeats of one policy.
    let first = figures.first().copied().unwrap_or_default();
    let runs = 1 + repeats
        .iter()
        .filter(|r| r.case == first && r.policy == "daf")
        .count();
    let excess = median(&fsc_over_daf);
    // "By far": at least 10 % slower than `daf`.
    let far = excess >= 1.10;
    let why = format!(
        "at the largest deviation the fastest policy ({}) is {}; `fsc` is the slowest of `fsc`, \
         `dpf`, `daf` in {fsc_worst} of {cases} cases, its time {excess:.2}× `daf`'s (median over \
         the cases; one run each) (the paper: `daf` best, `fsc` \"usually by far the worst\"){}",
        if runs > 1 {
            format!("by the median of {runs} runs each")
        } else {
            "one run each".to_owned()
        },
        join_and(&best_text),
        if far {
            ".".to_owned()
        } else {
            format!(", which is not by far: {}", reason(rows, blind))
        }
    );
    match (daf_wins == daf_best.len(), 2 * fsc_worst > cases && far) {
        (true, true) => Verdict::Reproduced(why),
        (false, false) => Verdict::Not(why),
        _ => Verdict::Partly(why),
    }
}

/// `lo–hi` of `values` printed by `f`, or one value when they print alike.
fn span(values: &[f64], f: impl Fn(f64) -> String) -> String {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = (f(lo), f(hi));
    if lo == hi { lo } else { format!("{lo}–{hi}") }
}

/// Why `fsc` comes close to `daf` here, measured at each case's largest deviation: the chunks
/// `fsc` cut, how much their times deviate (independent task times average out within a
/// chunk: `c` tasks deviate `σ/√c` of the chunk's time), what the emulated link charges per
/// chunk, and `fsc`'s time at [`BLIND_FACTOR`] (`blind`), the factor of the paper's
/// simulation.
pub fn reason(rows: &[Row], blind: &[Row]) -> String {
    let sleeping: Vec<&Row> = rows.iter().filter(|r| !r.spin).collect();
    let top = sleeping.iter().map(|r| r.deviation).fold(0.0, f64::max);
    let at_top = |policy: &str| -> Vec<&Row> {
        sleeping
            .iter()
            .copied()
            .filter(|r| r.deviation == top && r.policy == policy)
            .collect()
    };
    let (fsc, daf) = (at_top("fsc"), at_top("daf"));
    if fsc.is_empty() || daf.is_empty() {
        return "no runs of `fsc` and `daf` to compare".into();
    }
    let per_chunk = |r: &Row| r.tasks as f64 / r.chunks.max(1.0);
    let sizes: Vec<f64> = fsc.iter().map(|r| per_chunk(r)).collect();
    let spread: Vec<f64> = sizes.iter().map(|c| top / c.sqrt()).collect();
    let link = |r: &Row| 2.0 * LINK_LATENCY_MS + r.chunk_bytes * 8e-3 / LINK_MBIT;
    let links: Vec<f64> = fsc.iter().map(|r| link(r)).collect();
    let shares: Vec<f64> = fsc
        .iter()
        .map(|r| link(r) / (per_chunk(r) * r.mean_ms))
        .collect();
    let chunks = |rows: &[&Row]| -> Vec<f64> { rows.iter().map(|r| r.chunks).collect() };
    let mut text = format!(
        "at {:.0} % `fsc`'s tuned factor cut chunks of {} tasks ({} chunks an iteration, `daf` \
         {}), whose times deviate only {} % since independent task times average out within a \
         chunk (the paper's `daf` derivation takes a chunk of F tasks to deviate F times a \
         task's σ), and the emulated link charges {} ms per chunk, {} % of a chunk's time",
        top * 100.0,
        span(&sizes, |c| format!("{c:.0}")),
        span(&chunks(&fsc), |c| format!("{c:.0}")),
        span(&chunks(&daf), |c| format!("{c:.0}")),
        span(&spread, |d| format!("{:.0}", d * 100.0)),
        span(&links, |l| format!("{l:.2}")),
        span(&shares, |s| format!("{:.1}", s * 100.0)),
    );
    let ratios: Vec<f64> = blind
        .iter()
        .filter_map(|b| {
            let d = daf.iter().find(|r| r.case == b.case)?;
            Some(b.time_ms / d.time_ms)
        })
        .collect();
    if !ratios.is_empty() {
        let factors: Vec<f64> = blind
            .iter()
            .filter_map(|b| b.factors.first().copied())
            .collect();
        let blind_sizes: Vec<f64> = blind.iter().map(per_chunk).collect();
        let blind_spread: Vec<f64> = blind_sizes.iter().map(|c| top / c.sqrt()).collect();
        text.push_str(&format!(
            "; the runtime's tuner simulates the measured deviations, where the paper's \
             simulation used the mean task time only, under which the fewest chunks win: factor \
             {}, one chunk per worker as `static`; with it, `fsc` at {:.0} % takes {}× `daf`'s \
             time, its chunks of {} tasks deviating {} %",
            span(&factors, |f| format!("{f:.1}")),
            top * 100.0,
            span(&ratios, |r| format!("{r:.2}")),
            span(&blind_sizes, |c| format!("{c:.0}")),
            span(&blind_spread, |d| format!("{:.0}", d * 100.0)),
        ));
    }
    text.push('.');
    text
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The table of one case: a row per deviation, `ms (ratio)` per policy, and the best policy. The
/// ideal shown is the median of the row's runs' ideals, and every ratio is over it, so that the
/// ratios compare the policies as their times do.
pub fn table(rows: &[Row], deviations: &[f64]) -> Table {
    let mut header = vec!["deviation".to_owned(), "ideal ms".to_owned()];
    header.extend(POLICIES.iter().map(|p| format!("{p} ms (× ideal)")));
    header.push("best".to_owned());
    let mut table = Table {
        header,
        rows: Vec::new(),
    };
    for &d in deviations {
        let of_d: Vec<&Row> = rows.iter().filter(|r| r.deviation == d).collect();
        let ideal = median(&of_d.iter().map(|r| r.ideal_ms).collect::<Vec<_>>());
        let mut line = vec![format!("{:.0} %", d * 100.0), ms(ideal)];
        for p in POLICIES {
            line.push(
                of_d.iter()
                    .find(|r| r.policy == p.as_str())
                    .map_or("–".to_owned(), |r| {
                        format!("{} ({:.2})", ms(r.time_ms), ratio(r.time_ms, ideal))
                    }),
            );
        }
        line.push(best(of_d.iter().copied()).map_or("–".into(), |r| r.policy.clone()));
        table.rows.push(line);
    }
    table
}

/// Each case's policies at its largest deviation over the sweep's run and the repeats, and the
/// fastest with those no different from it.
fn top_table(rows: &[Row], repeats: &[Row], cases: &[Case]) -> Table {
    let mut header = vec!["case".to_owned()];
    header.extend(POLICIES.iter().map(|p| format!("{p} ms")));
    header.push("fastest".to_owned());
    let mut table = Table {
        header,
        rows: Vec::new(),
    };
    for case in cases {
        let spreads = at_top(rows, repeats, case.figure);
        let mut line = vec![case.figure.to_owned()];
        for p in POLICIES {
            line.push(
                spreads
                    .iter()
                    .find(|(name, _)| name == p.as_str())
                    .map_or("–".to_owned(), |(_, s)| s.text(0)),
            );
        }
        line.push(
            fastest(&spreads).map_or("–".to_owned(), |(name, ties)| fastest_text(name, &ties)),
        );
        table.rows.push(line);
    }
    table
}

fn figure(rows: &[Row], case: &Case, file: String) -> Figure {
    let (workers, mean_ms) = (case.workers, case.mean_ms);
    let mut series: Vec<Series> = POLICIES
        .iter()
        .map(|p| {
            Series::line(
                p.as_str(),
                rows.iter()
                    .filter(|r| r.policy == p.as_str())
                    .map(|r| (r.deviation * 100.0, r.time_ms))
                    .collect(),
            )
        })
        .collect();
    series.push(Series::dashed(
        "ideal",
        rows.iter()
            .filter(|r| r.policy == POLICIES[0].as_str())
            .map(|r| (r.deviation * 100.0, r.ideal_ms))
            .collect(),
    ));
    Figure {
        file,
        caption: format!(
            "Mean iteration time by policy against the task time's deviation, {workers} workers, \
             tasks of {mean_ms} ms (sleeping); dashed: the ideal."
        ),
        chart: LineChart {
            title: format!(
                "Policies, {workers} workers, {mean_ms} ms tasks ({})",
                case.figure
            ),
            x_label: "deviation of the task time (% of the mean)".into(),
            y_label: "iteration time (ms)".into(),
            series,
            log_x: false,
        },
    }
}

const PAPER: &str = "\
Cesar et al. (2006), §5.4: \"Each execution has been made with 10,000 tasks and for 15 iterations
(Figs. 2–4). [...] the Dynamic Adjusting Factoring policy (DAF) leads to the best results and is
less affected by a high standard deviation, the factoring policy with Dynamic Predictive Factoring
(DPF) is quite good for a small or medium standard deviation only, and the Fixed Size Chunking
policy (FSC) is, usually by far, the worst one.\" Fig. 2: 25 workers, 0.5 ms per task, 240 KB per
iteration; Fig. 3: 25 workers, 6 ms, 1 MB; Fig. 4: 50 workers, 6 ms, 240 KB; deviation 0–80 %;
(a) DAF against no policy, (b) FSC, DPF and DAF. The figures' values are not in the text: the
comparison below is with this conclusion.";

/// Runs the experiment.
///
/// # Errors
/// A run that failed.
pub fn run(size: Size) -> Result<Section, BenchError> {
    let plan = plan(size);
    let mut rows = Vec::new();
    let mut ours = format!(
        "The paper's three cases, {} tasks per iteration, {} iterations per run (the paper: \
         15), sleeping tasks with lognormal times, behind the emulated link of the paper's \
         network (`--link-latency {LINK_LATENCY_MS} --link-bandwidth {LINK_MBIT}`); `fsc` and \
         `dpf` with their factor tuned (`--tuning factor`), `fsc` starting at {FSC_START} as in \
         §5.1, `static` and `daf` untuned. Times are the mean over the run's iterations, the \
         first included (where `daf` has no measurements yet and uses `dpf` with factor 0.5); \
         one run each in the sweep, {} at the largest deviation. \"× ideal\" is the time over the row's ideal: the iteration's task time \
         over the workers plus the communication the model predicts, the median over the row's \
         runs. The model's `(n+1)·mo` of start-ups is more than overlapping sends cost, so a \
         run can come in under the ideal (× ideal below 1).\n\n",
        plan.tasks, plan.iterations, plan.runs_at_top
    );
    let mut figures = Vec::new();
    let sizes = (plan.tasks, plan.iterations);
    let mut blind = Vec::new();
    let mut repeats = Vec::new();
    for case in &plan.cases {
        let mut of_case = Vec::new();
        for &d in &plan.deviations {
            for p in POLICIES {
                of_case.push(measure(p, case, sizes, d, false, None)?);
            }
        }
        let top = plan.deviations.iter().copied().fold(0.0, f64::max);
        // More runs at the largest deviation, where the verdict names the fastest policy.
        for _ in 1..plan.runs_at_top {
            for p in POLICIES {
                repeats.push(measure(p, case, sizes, top, false, None)?);
            }
        }
        // `fsc` at the largest deviation with the factor of a simulation blind to it.
        if top > 0.0 {
            blind.push(measure(
                PolicyName::Fsc,
                case,
                sizes,
                top,
                false,
                Some(BLIND_FACTOR),
            )?);
        }
        ours.push_str(&format!(
            "**{}: {} workers, tasks of {} ms** ({} B out, {} B back per task):\n\n{}\n",
            case.figure,
            case.workers,
            case.mean_ms,
            case.task_bytes,
            case.result_bytes,
            table(&of_case, &plan.deviations).markdown()
        ));
        figures.push(figure(
            &of_case,
            case,
            format!(
                "policies-{}.svg",
                case.figure.to_lowercase().replace(['.', ' '], "")
            ),
        ));
        rows.extend(of_case);
    }
    let (spin_workers, spin_tasks, spin_mean, spin_devs) = &plan.spin;
    let spin_case = Case::new("spinning", *spin_workers, *spin_mean, (16, 8));
    let mut spin_rows = Vec::new();
    for &d in spin_devs {
        for p in POLICIES {
            spin_rows.push(measure(
                p,
                &spin_case,
                (*spin_tasks, plan.iterations),
                d,
                true,
                None,
            )?);
        }
    }
    ours.push_str(&format!(
        "**Spinning tasks** (real CPU work; {spin_workers} workers fit {} cores only with the \
         master sharing one, so deviations from the ideal include that), {spin_tasks} tasks of \
         {spin_mean} ms:\n\n{}\n",
        std::thread::available_parallelism().map_or(1, usize::from),
        table(&spin_rows, spin_devs).markdown()
    ));
    let top = plan.deviations.iter().copied().fold(0.0, f64::max);
    let runs = match plan.runs_at_top {
        1 => "one run of each policy".to_owned(),
        n => format!("{n} runs of each policy, the sweep's and {} more", n - 1),
    };
    ours.push_str(&format!(
        "**At the largest deviation ({:.0} %), {runs}** (iteration time in ms, median and \
         range; policies whose range overlaps the fastest's are no different from it):\n\n{}\n",
        top * 100.0,
        top_table(&rows, &repeats, &plan.cases).markdown()
    ));
    ours.push_str(&fsc_start(&rows));
    ours.push_str(&format!(
        "What `fsc` against `daf` comes to here, and what the paper's setup did otherwise: {}\n\n",
        reason(&rows, &blind)
    ));
    let verdict = verdict(&rows, &repeats, &blind);
    rows.extend(spin_rows);
    Ok(Section {
        title: "Distribution policies".into(),
        verdict,
        paper: PAPER.into(),
        ours,
        figures,
        data: json!({ "rows": rows, "repeats_at_top": repeats, "fsc_blind": blind }),
        seconds: 0.0,
    })
}

/// What `fsc`'s runs did with the paper's start: 0.25 in the first two iterations, the simulated
/// factor from the third (Cesar et al. 2006, §5.1).
pub fn fsc_start(rows: &[Row]) -> String {
    let fsc: Vec<&Row> = rows.iter().filter(|r| r.policy == "fsc").collect();
    let held = fsc
        .iter()
        .filter(|r| r.first_tuned.is_none_or(|i| i >= 2))
        .count();
    let first = fsc
        .iter()
        .filter(|r| r.first_tuned.is_some_and(|i| i < 2))
        .count();
    let third: Vec<f64> = fsc
        .iter()
        .filter_map(|r| r.factors.get(2).copied())
        .collect();
    let third_text = if third.is_empty() {
        String::new()
    } else {
        format!(
            "; the factor the third iteration started with was {:.1}–{:.1} (median {:.1})",
            third.iter().copied().fold(f64::INFINITY, f64::min),
            third.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            median(&third)
        )
    };
    format!(
        "`fsc` and the paper's start (§5.1: factor {FSC_START} in the first two iterations, the \
         factor its simulation proposes from the third): every run started at {FSC_START}; in \
         {held} of {} runs the factor held through the first two iterations as in the paper, \
         in {first} the tuner changed it earlier (the runtime's tuner may act inside the first \
         iteration and at its end when it has evidence enough){third_text}.\n\n",
        fsc.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(policy: &str, deviation: f64, time_ms: f64) -> Row {
        Row {
            case: "Fig. 2".into(),
            workers: 25,
            policy: policy.into(),
            tasks: 10_000,
            mean_ms: 0.5,
            deviation,
            spin: false,
            time_ms,
            ideal_ms: 100.0,
            chunks: 10.0,
            chunk_bytes: 1000.0,
            factors: vec![0.25, 0.25, 0.4],
            first_tuned: Some(2),
        }
    }

    #[test]
    fn the_table_shows_ratios_and_the_best_policy() {
        let rows = vec![
            row("static", 0.8, 180.0),
            row("fsc", 0.8, 150.0),
            row("dpf", 0.8, 120.0),
            row("daf", 0.8, 110.0),
        ];
        let md = table(&rows, &[0.8]).markdown();
        let line = md.lines().nth(2).unwrap();
        assert!(line.starts_with("| 80 %"), "{line}");
        assert!(
            line.contains("180 (1.80)") && line.contains("110 (1.10)"),
            "{line}"
        );
        assert!(line.trim_end().ends_with("daf |"), "{line}");
    }

    #[test]
    fn ratios_are_over_the_ideal_shown() {
        let mut rows = vec![row("fsc", 0.8, 262.0), row("daf", 0.8, 251.0)];
        rows[0].ideal_ms = 260.0;
        rows[1].ideal_ms = 242.0;
        let md = table(&rows, &[0.8]).markdown();
        let line = md.lines().nth(2).unwrap();
        // The ideal shown is the median of 260 and 242; both ratios are over it.
        assert!(line.contains(" 251 |"), "{line}");
        assert!(
            line.contains("262 (1.04)") && line.contains("251 (1.00)"),
            "{line}"
        );
    }

    #[test]
    fn the_fsc_start_is_checked_against_the_paper() {
        let mut early = row("fsc", 0.0, 100.0);
        early.first_tuned = Some(0);
        let rows = vec![row("fsc", 0.8, 100.0), early, row("daf", 0.8, 90.0)];
        let text = fsc_start(&rows);
        assert!(text.contains("in 1 of 2 runs the factor held"), "{text}");
        assert!(text.contains("in 1 the tuner changed it earlier"), "{text}");
        assert!(text.contains("(median 0.4)"), "{text}");
    }

    #[test]
    fn the_reason_is_read_from_the_runs() {
        // `fsc` in 100 chunks of 100 tasks, `daf` in 500; at factor 1.0 `fsc` takes 1.2×.
        let mut fsc = row("fsc", 0.8, 105.0);
        fsc.chunks = 100.0;
        fsc.chunk_bytes = 5000.0;
        let mut daf = row("daf", 0.8, 100.0);
        daf.chunks = 500.0;
        let mut blind = row("fsc", 0.8, 120.0);
        blind.factors = vec![1.0; 3];
        let text = reason(&[fsc.clone(), daf.clone()], &[blind]);
        assert!(text.contains("chunks of 100 tasks (100 chunks"), "{text}");
        assert!(text.contains("`daf` 500"), "{text}");
        // 80 % over √100: 8 %; 0.2 ms + 5,000 bytes at 100 Mbit/s: 0.60 ms, of a 50 ms chunk.
        assert!(text.contains("deviate only 8 %"), "{text}");
        assert!(text.contains("charges 0.60 ms per chunk, 1.2 %"), "{text}");
        assert!(text.contains("factor 1.0, one chunk per worker"), "{text}");
        assert!(text.contains("takes 1.20× `daf`'s time"), "{text}");
        // The blind run's 10 chunks of 1,000 tasks: 80 % over √1000.
        assert!(
            text.contains("chunks of 1000 tasks deviating 3 %."),
            "{text}"
        );
        match verdict(&[fsc, daf], &[], &[]) {
            Verdict::Partly(why) => assert!(why.contains("not by far: at 80 %"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_fastest_policy_is_judged_on_the_repeats() {
        let rows = vec![row("dpf", 0.8, 100.0), row("daf", 0.8, 104.0)];
        let repeats = vec![
            row("dpf", 0.8, 112.0),
            row("daf", 0.8, 101.0),
            row("dpf", 0.8, 110.0),
            row("daf", 0.8, 102.0),
        ];
        let spreads = at_top(&rows, &repeats, "Fig. 2");
        assert_eq!(spreads[0].1.text(0), "110 (100–112)");
        // `daf`'s median 102 is the lowest; `dpf`'s range reaches down into `daf`'s.
        let (name, ties) = fastest(&spreads).unwrap();
        assert_eq!((name, ties), ("daf", vec!["dpf"]));
        match verdict(&rows, &repeats, &[]) {
            Verdict::Partly(why) | Verdict::Not(why) | Verdict::Reproduced(why) => {
                assert!(why.contains("(by the median of 3 runs each)"), "{why}");
                assert!(
                    why.contains("`daf` (no different from `dpf`) in Fig. 2"),
                    "{why}"
                );
            }
            other => panic!("{other:?}"),
        }
        let apart = vec![row("dpf", 0.8, 120.0), row("dpf", 0.8, 121.0)];
        let spreads = at_top(&rows[1..], &apart, "Fig. 2");
        let (_, ties) = fastest(&spreads).unwrap();
        assert!(ties.is_empty());
        let md = top_table(&rows, &repeats, &[Case::new("Fig. 2", 25, 0.5, (16, 8))]).markdown();
        assert!(md.contains("`daf` (no different from `dpf`)"), "{md}");
    }

    #[test]
    fn lists_read_as_sentences() {
        let items = |n: usize| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>();
        assert_eq!(join_and(&items(1)), "1");
        assert_eq!(join_and(&items(2)), "1 and 2");
        assert_eq!(join_and(&items(3)), "1, 2 and 3");
    }

    #[test]
    fn a_missing_policy_shows_a_dash() {
        let md = table(&[row("daf", 0.0, 105.0)], &[0.0]).markdown();
        assert!(md.lines().nth(2).unwrap().contains("–"));
    }
}
