//! Distribution policies (Cesar et al. 2006, §5.4, Figs. 2–4): `static` (the paper's "none"),
//! `fsc`, `dpf` and `daf` on the synthetic program with 25 workers and 10,000 tasks per
//! iteration of mean 0.5 ms and 6 ms, the task time's deviation from 0 to 80 % of the mean.
//!
//! Each run fixes the workers; `fsc` and `dpf` have their factor tuned between iterations, as in
//! the paper (`--tuning factor`); `daf` computes its own. We report the mean iteration time and its
//! ratio to the ideal of [`crate::ideal`]. The paper's communication volumes are kept: 240 KB per
//! iteration at 0.5 ms (16 bytes out and 8 back per task), 1 MB at 6 ms (64 and 36), and so is
//! its network, emulated: `--link-latency 0.1 --link-bandwidth 100` (the spinning runs excepted).

use mw_runtime::{PolicyName, TuneMode};
use mwgen::report::chart::{LineChart, Series};
use serde_json::json;

use super::{LINK_LATENCY_MS, LINK_MBIT, fixed, measured_and_ideal, program, synthetic};
use crate::doc::{Figure, Section, Table, Verdict, ms};
use crate::ideal::{median, ratio};
use crate::{BenchError, Size};

/// The policies compared, in the paper's order.
pub const POLICIES: [PolicyName; 4] = [
    PolicyName::Static,
    PolicyName::Fsc,
    PolicyName::Dpf,
    PolicyName::Daf,
];

/// The sizes of one size of the experiment.
#[derive(Debug, Clone)]
struct Plan {
    workers: usize,
    tasks: usize,
    iterations: usize,
    /// `(mean ms, task bytes, result bytes)`.
    means: Vec<(f64, usize, usize)>,
    deviations: Vec<f64>,
    /// Spinning runs: workers, tasks, mean, deviations.
    spin: (usize, usize, f64, Vec<f64>),
}

fn plan(size: Size) -> Plan {
    match size {
        Size::Full => Plan {
            workers: 25,
            tasks: 10_000,
            iterations: 3,
            means: vec![(0.5, 16, 8), (6.0, 64, 36)],
            deviations: vec![0.0, 0.2, 0.4, 0.6, 0.8],
            spin: (2, 1000, 0.5, vec![0.0, 0.8]),
        },
        Size::Tiny => Plan {
            workers: 4,
            tasks: 40,
            iterations: 2,
            means: vec![(0.5, 16, 8), (6.0, 64, 36)],
            deviations: vec![0.0, 0.8],
            spin: (2, 40, 0.5, vec![0.8]),
        },
    }
}

/// One run's outcome.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    pub policy: String,
    pub mean_ms: f64,
    pub deviation: f64,
    pub spin: bool,
    /// Mean measured iteration time, ms.
    pub time_ms: f64,
    /// Mean ideal iteration time, ms.
    pub ideal_ms: f64,
    pub chunks: f64,
}

impl Row {
    pub fn ratio(&self) -> f64 {
        ratio(self.time_ms, self.ideal_ms)
    }
}

fn measure(
    policy: PolicyName,
    workers: usize,
    tasks: usize,
    iterations: usize,
    (mean_ms, task_bytes, result_bytes): (f64, usize, usize),
    deviation: f64,
    spin: bool,
) -> Result<Row, BenchError> {
    let mut prog = program(tasks, iterations, mean_ms, deviation);
    prog.task_bytes = task_bytes;
    prog.result_bytes = result_bytes;
    prog.spin = spin;
    let mut run = fixed(workers);
    if !spin {
        run.link_latency = Some(LINK_LATENCY_MS);
        run.link_bandwidth = Some(LINK_MBIT);
    }
    run.policy = Some(policy);
    run.tune = Some(if policy.uses_factor() {
        TuneMode::Factor
    } else {
        TuneMode::Off
    });
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
    Ok(Row {
        policy: policy.to_string(),
        mean_ms,
        deviation,
        spin,
        time_ms: measured.iter().sum::<f64>() / n,
        ideal_ms: ideal.iter().sum::<f64>() / n,
        chunks,
    })
}

/// The best policy (lowest time) of the rows of one deviation.
pub fn best<'a>(rows: impl Iterator<Item = &'a Row>) -> Option<&'a Row> {
    rows.min_by(|a, b| a.time_ms.total_cmp(&b.time_ms))
}

/// The paper's finding against ours, over the sleeping runs: DAF fastest at the largest
/// deviation, and FSC the slowest of the three factoring policies.
pub fn verdict(rows: &[Row]) -> Verdict {
    let sleeping: Vec<&Row> = rows.iter().filter(|r| !r.spin).collect();
    let mut means: Vec<f64> = sleeping.iter().map(|r| r.mean_ms).collect();
    means.dedup();
    let mut daf_best = Vec::new();
    let (mut fsc_worst, mut cases) = (0, 0);
    let mut fsc_over_daf = Vec::new();
    for &mean in &means {
        let of_mean = || sleeping.iter().copied().filter(move |r| r.mean_ms == mean);
        let top = of_mean().map(|r| r.deviation).fold(0.0, f64::max);
        if let Some(b) = best(of_mean().filter(|r| r.deviation == top)) {
            daf_best.push((mean, b.policy.clone()));
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
    let daf_wins = daf_best.iter().filter(|(_, p)| p == "daf").count();
    let best_text: Vec<String> = daf_best
        .iter()
        .map(|(mean, p)| format!("`{p}` at {mean} ms"))
        .collect();
    let excess = median(&fsc_over_daf);
    // "By far": at least 10 % slower than `daf`.
    let far = excess >= 1.10;
    let why = format!(
        "at the largest deviation the fastest policy is {}; `fsc` is the slowest of `fsc`, \
         `dpf`, `daf` in {fsc_worst} of {cases} cases, its time {excess:.2}× `daf`'s (median over \
         the cases; one run each){} (the paper: `daf` best, `fsc` \"usually by far the worst\").",
        best_text.join(" and "),
        if far { "" } else { ", which is not by far" }
    );
    match (daf_wins == daf_best.len(), 2 * fsc_worst > cases && far) {
        (true, true) => Verdict::Reproduced(why),
        (false, false) => Verdict::Not(why),
        _ => Verdict::Partly(why),
    }
}

/// The table of one mean: a row per deviation, `ms (ratio)` per policy, and the best policy.
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
                        format!("{} ({:.2})", ms(r.time_ms), r.ratio())
                    }),
            );
        }
        line.push(best(of_d.iter().copied()).map_or("–".into(), |r| r.policy.clone()));
        table.rows.push(line);
    }
    table
}

fn figure(rows: &[Row], mean_ms: f64, workers: usize, file: String) -> Figure {
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
            title: format!("Policies, {workers} workers, {mean_ms} ms tasks"),
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
        "{} workers, {} tasks per iteration, {} iterations per run (the paper: 15), sleeping \
         tasks with lognormal times, behind the emulated link of the paper's network \
         (`--link-latency {LINK_LATENCY_MS} --link-bandwidth {LINK_MBIT}`); `fsc` and `dpf` with \
         their factor tuned between iterations (`--tuning factor`), `static` and `daf` untuned. \
         Times are the mean over the run's iterations, the first included (where `daf` has no \
         measurements yet and uses `dpf` with factor 0.5); \"× ideal\" is measured over ideal, \
         the ideal being the iteration's task time over the workers plus the communication the \
         model predicts. The model's `(n+1)·mo` of start-ups is more than overlapping sends \
         cost, so a run can come in under the ideal (× ideal below 1).\n\n",
        plan.workers, plan.tasks, plan.iterations
    );
    let mut figures = Vec::new();
    for &mean in &plan.means {
        let mut of_mean = Vec::new();
        for &d in &plan.deviations {
            for p in POLICIES {
                let row = measure(p, plan.workers, plan.tasks, plan.iterations, mean, d, false)?;
                of_mean.push(row);
            }
        }
        ours.push_str(&format!(
            "**Tasks of {} ms** ({} B out, {} B back per task):\n\n{}\n",
            mean.0,
            mean.1,
            mean.2,
            table(&of_mean, &plan.deviations).markdown()
        ));
        figures.push(figure(
            &of_mean,
            mean.0,
            plan.workers,
            format!("policies-{}ms.svg", mean.0),
        ));
        rows.extend(of_mean);
    }
    let (spin_workers, spin_tasks, spin_mean, spin_devs) = &plan.spin;
    let mut spin_rows = Vec::new();
    for &d in spin_devs {
        for p in POLICIES {
            spin_rows.push(measure(
                p,
                *spin_workers,
                *spin_tasks,
                plan.iterations,
                (*spin_mean, 16, 8),
                d,
                true,
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
    let worst = |mean: f64| {
        rows.iter()
            .filter(|r| r.mean_ms == mean)
            .max_by(|a, b| a.deviation.total_cmp(&b.deviation))
            .map(|r| r.deviation)
    };
    for &(mean, _, _) in &plan.means {
        if let Some(d) = worst(mean) {
            let at = rows
                .iter()
                .filter(|r| r.mean_ms == mean && r.deviation == d);
            if let Some(b) = best(at) {
                ours.push_str(&format!(
                    "At {mean} ms and the largest deviation ({:.0} %), the fastest policy is \
                     `{}` at {:.2}× the ideal.\n\n",
                    d * 100.0,
                    b.policy,
                    b.ratio()
                ));
            }
        }
    }
    let verdict = verdict(&rows);
    rows.extend(spin_rows);
    Ok(Section {
        title: "Distribution policies".into(),
        verdict,
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

    fn row(policy: &str, deviation: f64, time_ms: f64) -> Row {
        Row {
            policy: policy.into(),
            mean_ms: 0.5,
            deviation,
            spin: false,
            time_ms,
            ideal_ms: 100.0,
            chunks: 10.0,
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
    fn a_missing_policy_shows_a_dash() {
        let md = table(&[row("daf", 0.0, 105.0)], &[0.0]).markdown();
        assert!(md.lines().nth(2).unwrap().contains("–"));
    }
}
