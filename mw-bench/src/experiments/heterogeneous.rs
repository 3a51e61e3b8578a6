//! Distribution policies on workers of unequal speed: every policy of the portfolio side by
//! side with `--policy auto`, on steady and variable emulated load, against the ideal (the
//! iteration's task time over the workers' total speed).

use serde::Serialize;
use serde_json::json;

use super::{fixed, program, synthetic};
use crate::doc::{Section, Table, Verdict};
use crate::ideal::Spread;
use crate::{BenchError, Size};
use mw_runtime::{LoadPattern, PolicyName, TuneMode};

/// Workers of every run.
const WORKERS: usize = 4;

/// One workload: tasks, their mean and deviation, and the emulated load.
#[derive(Debug, Clone, Copy)]
struct Workload {
    name: &'static str,
    tasks: usize,
    mean_ms: f64,
    stddev: f64,
    load: &'static str,
    /// Behind the papers' emulated 100 Mbit/s network (0.1 ms, 100 Mbit/s), where each chunk
    /// costs a message: on threads alone a message costs next to nothing.
    link: bool,
}

const WORKLOADS: [Workload; 7] = [
    Workload {
        name: "steady, 1 ms ± 30 %",
        tasks: 2000,
        mean_ms: 1.0,
        stddev: 0.3,
        load: "0:0-1:75",
        link: false,
    },
    Workload {
        name: "steady, 1 ms ± 100 %",
        tasks: 2000,
        mean_ms: 1.0,
        stddev: 1.0,
        load: "0:0-1:75",
        link: false,
    },
    Workload {
        name: "steady, small 0.1 ms ± 30 %",
        tasks: 4000,
        mean_ms: 0.1,
        stddev: 0.3,
        load: "0:0-1:75",
        link: false,
    },
    Workload {
        name: "steady, large 10 ms ± 30 %",
        tasks: 200,
        mean_ms: 10.0,
        stddev: 0.3,
        load: "0:0-1:75",
        link: false,
    },
    Workload {
        name: "variable, 1 ms ± 30 %",
        tasks: 2000,
        mean_ms: 1.0,
        stddev: 0.3,
        load: "variable:2:75",
        link: false,
    },
    Workload {
        name: "none, 1 ms ± 30 %",
        tasks: 2000,
        mean_ms: 1.0,
        stddev: 0.3,
        load: "none",
        link: false,
    },
    Workload {
        name: "steady, 0.1 ms ± 30 %, 100 Mbit/s link",
        tasks: 4000,
        mean_ms: 0.1,
        stddev: 0.3,
        load: "0:0-1:75",
        link: true,
    },
];

/// One run: a policy on a workload, its mean iteration time and the ideal's.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub workload: String,
    pub policy: String,
    pub time_ms: f64,
    pub ideal_ms: f64,
    /// For `auto`: the policies it ran, per iteration.
    pub chosen: Vec<String>,
}

/// The policies compared: every one but `dpf` (the same cuts as `factoring`), then `auto`.
fn policies(size: Size) -> Vec<PolicyName> {
    match size {
        Size::Tiny => vec![PolicyName::Static, PolicyName::AwfB, PolicyName::Auto],
        Size::Full => PolicyName::ALL
            .into_iter()
            .filter(|&p| p != PolicyName::Dpf)
            .collect(),
    }
}

fn measure(w: &Workload, policy: PolicyName, size: Size) -> Result<Row, BenchError> {
    let (tasks, iterations) = match size {
        Size::Tiny => (w.tasks / 20, 2),
        Size::Full => (w.tasks, 8),
    };
    let load: LoadPattern = w
        .load
        .parse()
        .map_err(|e: mw_runtime::ValueError| BenchError(e.message().to_owned()))?;
    let mut run = fixed(WORKERS);
    run.policy = Some(policy.into());
    run.load = Some(load.clone());
    // `auto` chooses the policy (and the factor); the others keep theirs, as configured.
    run.tune = Some(if policy == PolicyName::Auto {
        TuneMode::Factor
    } else {
        TuneMode::Off
    });
    // Loaded workers are slow, not stuck: no backup copies of their chunks.
    run.backup_after = Some(1000.0);
    if w.link {
        run.link_latency = Some(0.1);
        run.link_bandwidth = Some(100.0);
    }
    let summary = synthetic(program(tasks, iterations, w.mean_ms, w.stddev), run)?;
    let n = summary.metrics.iterations.len().max(1) as f64;
    let ideal: f64 = summary
        .metrics
        .iterations
        .iter()
        .zip(&summary.outcome.task_time)
        .map(|(it, total)| {
            let speed: f64 = (0..WORKERS)
                .map(|worker| 1.0 - load.percent(worker, it.index) / 100.0)
                .sum();
            total.as_secs_f64() * 1e3 / speed.max(f64::MIN_POSITIVE)
        })
        .sum();
    Ok(Row {
        workload: w.name.to_owned(),
        policy: policy.to_string(),
        time_ms: summary
            .metrics
            .iterations
            .iter()
            .map(|i| i.time_ms)
            .sum::<f64>()
            / n,
        ideal_ms: ideal / n,
        chosen: summary
            .metrics
            .iterations
            .iter()
            .map(|i| i.policy.clone())
            .collect(),
    })
}

/// The rows of workload `w`.
fn of_workload(rows: &[Row], w: &Workload) -> Vec<Row> {
    rows.iter()
        .filter(|r| r.workload == w.name)
        .cloned()
        .collect()
}

/// A workload's best single policy's row and `auto`'s.
fn best_and_auto(of: &[Row]) -> Option<(&Row, &Row)> {
    Some((best_single(of)?, of.iter().find(|r| r.policy == "auto")?))
}

/// The fastest single policy of a workload's rows (`auto` left out).
fn best_single(rows: &[Row]) -> Option<&Row> {
    rows.iter()
        .filter(|r| r.policy != "auto")
        .min_by(|a, b| a.time_ms.total_cmp(&b.time_ms))
}

/// `auto` against a workload's best single policy, rerun in pairs: one run of each settles
/// nothing when they are a percent apart.
#[derive(Debug, Clone, Serialize)]
pub struct Paired {
    pub workload: String,
    pub best: String,
    /// `auto`'s time over the best single policy's, pair by pair (the first pair from the
    /// comparison of every policy).
    pub ratios: Vec<f64>,
}

/// Reruns `auto` and each workload's best single policy `extra` times more, in alternating
/// order.
fn paired(rows: &[Row], extra: usize, size: Size) -> Result<Vec<Paired>, BenchError> {
    let mut pairs = Vec::new();
    for w in &WORKLOADS {
        let of = of_workload(rows, w);
        let Some((best, auto)) = best_and_auto(&of) else {
            continue;
        };
        let single: PolicyName = best
            .policy
            .parse()
            .map_err(|_| BenchError(format!("error: `{}` is not a policy", best.policy)))?;
        let mut ratios = vec![auto.time_ms / best.time_ms];
        for round in 0..extra {
            let (a, b) = if round % 2 == 0 {
                let a = measure(w, PolicyName::Auto, size)?;
                (a, measure(w, single, size)?)
            } else {
                let b = measure(w, single, size)?;
                (measure(w, PolicyName::Auto, size)?, b)
            };
            ratios.push(a.time_ms / b.time_ms);
        }
        pairs.push(Paired {
            workload: w.name.to_owned(),
            best: best.policy.clone(),
            ratios,
        });
    }
    Ok(pairs)
}

/// The verdict: `auto` against the best single policy of each workload (the median of the
/// paired runs where there are some), and on their sum; the best adaptive weighted policy
/// against the ideal on the first workload.
fn verdict(rows: &[Row], pairs: &[Paired]) -> Verdict {
    let mut worst = 0.0_f64;
    let (mut auto_sum, mut singles) = (0.0, std::collections::BTreeMap::<String, f64>::new());
    for w in &WORKLOADS {
        let of = of_workload(rows, w);
        let Some((best, auto)) = best_and_auto(&of) else {
            continue;
        };
        let ratio = pairs
            .iter()
            .find(|p| p.workload == w.name)
            .map_or(auto.time_ms / best.time_ms, |p| {
                Spread::of(&p.ratios).median
            });
        worst = worst.max(ratio);
        auto_sum += auto.time_ms;
        for r in of.iter().filter(|r| r.policy != "auto") {
            *singles.entry(r.policy.clone()).or_default() += r.time_ms;
        }
    }
    let best_sum = singles.values().copied().fold(f64::INFINITY, f64::min);
    let awf = rows
        .iter()
        .filter(|r| r.workload == WORKLOADS[0].name && r.policy.starts_with("awf"))
        .map(|r| r.time_ms / r.ideal_ms)
        .fold(f64::INFINITY, f64::min);
    let same = pairs
        .iter()
        .filter(|p| Spread::of(&p.ratios).holds(1.0))
        .count();
    let why = format!(
        "`auto` within {worst:.2}× of the best single policy on every workload (the median of \
         paired runs), no different from it on {same} of {} (the pairs' range holds 1), {:.2}× \
         the best single policy on their sum; the best adaptive weighted policy at {awf:.2}× \
         the ideal under steady load",
        pairs.len(),
        auto_sum / best_sum
    );
    if worst <= 1.05 && auto_sum < best_sum && awf <= 1.10 {
        Verdict::Measured(why)
    } else {
        Verdict::Partly(why)
    }
}

fn table(rows: &[Row]) -> Table {
    let mut table = Table::new(["workload", "policy", "ms / iteration", "× ideal", "ran"]);
    for r in rows {
        let mut ran = r.chosen.clone();
        ran.dedup();
        table.push([
            r.workload.clone(),
            format!("`{}`", r.policy),
            format!("{:.1}", r.time_ms),
            format!("{:.2}", r.time_ms / r.ideal_ms),
            ran.join(" → "),
        ]);
    }
    table
}

/// Paired reruns of `auto` and the best single policy, beyond the first pair.
fn extra_pairs(size: Size) -> usize {
    match size {
        Size::Tiny => 0,
        Size::Full => 3,
    }
}

pub fn run(size: Size) -> Result<Section, BenchError> {
    let mut rows = Vec::new();
    for w in &WORKLOADS {
        for p in policies(size) {
            rows.push(measure(w, p, size)?);
        }
    }
    let pairs = paired(&rows, extra_pairs(size), size)?;
    let mut pair_table = Table::new([
        "workload",
        "best single policy",
        "`auto` over it, paired runs",
    ]);
    for p in &pairs {
        let r = Spread::of(&p.ratios);
        let mut text = format!("{} ({} pairs)", r.times(), p.ratios.len());
        if r.holds(1.0) {
            text.push_str(": no difference");
        }
        pair_table.push([p.workload.clone(), format!("`{}`", p.best), text]);
    }
    let ours = format!(
        "{WORKERS} workers on threads, sleeping tasks with lognormal times; steady load is \
         `--load 0:0-1:75` (workers 0 and 1 at 75 %, a quarter of the others' speed), variable \
         load `--load variable:2:75` (the even workers loaded every other two iterations); the last \
         workload runs behind the emulated 100 Mbit/s network (`--link-latency 0.1 \
         --link-bandwidth 100`), where every chunk costs a message. \
         Every policy untuned (`--tune off`) but `auto` (`--tune factor`: it chooses the policy \
         and the factor, starting as `ss`); backup copies off (`--backup-after 1000`). The \
         ideal is the iteration's drawn task time over the workers' total speed. Times are the \
         mean over the run's iterations, the first ones included, where `auto` starts as `ss` \
         and chooses once every worker has answered a few tasks.\n\n{}\n\
         Then `auto` and each workload's best single policy again, {} times more each in \
         alternating order, and `auto`'s time over the policy's pair by pair (median and range; \
         a range that holds 1 is no difference):\n\n{}\n",
        table(&rows).markdown(),
        extra_pairs(size),
        pair_table.markdown()
    );
    Ok(Section {
        title: "Heterogeneous workers".into(),
        verdict: verdict(&rows, &pairs),
        paper: "Issue #17 asks for the dynamic loop-scheduling portfolio (Banicescu et al.'s \
                adaptive weighted factoring within 1.10× of the ideal under steady load) and for \
                `--policy auto` within 1.05× of the best single policy on each workload and \
                better than every one on their sum."
            .into(),
        ours,
        figures: Vec::new(),
        data: json!({ "rows": rows, "paired": pairs }),
        seconds: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(workload: &Workload, policy: &str, time_ms: f64) -> Row {
        Row {
            workload: workload.name.to_owned(),
            policy: policy.to_owned(),
            time_ms,
            ideal_ms: 100.0,
            chosen: vec!["daf".into(), policy.into()],
        }
    }

    #[test]
    fn auto_is_judged_on_every_workload_and_their_sum() {
        let mut rows = Vec::new();
        for (i, w) in WORKLOADS.iter().enumerate() {
            // `ss` best on the first three workloads, `awf-b` on the others; the sum of either is
            // above `auto`'s.
            let (ss, awf) = if i < 3 {
                (105.0, 108.0)
            } else {
                (120.0, 105.0)
            };
            rows.extend([
                row(w, "ss", ss),
                row(w, "awf-b", awf),
                row(w, "auto", 106.0),
            ]);
        }
        let v = verdict(&rows, &[]);
        assert!(matches!(v, Verdict::Measured(_)), "{v:?}");
        assert!(v.line().contains("within 1.01×"), "{}", v.line());
        // Paired runs decide where there are some: here 1.04× on the first workload.
        let pairs = [Paired {
            workload: WORKLOADS[0].name.to_owned(),
            best: "ss".into(),
            ratios: vec![1.01, 1.04, 1.06],
        }];
        let v = verdict(&rows, &pairs);
        assert!(v.line().contains("within 1.04×"), "{}", v.line());
        assert!(
            v.line().contains("no different from it on 0 of 1"),
            "{}",
            v.line()
        );
        // Worse than 1.05× the best on one workload: only partly.
        rows[2].time_ms = 200.0;
        assert!(matches!(verdict(&rows, &[]), Verdict::Partly(_)));
        let table = table(&rows).markdown();
        assert!(table.contains("daf → auto"), "{table}");
    }
}
