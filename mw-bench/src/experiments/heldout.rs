//! Held-out workloads: the tuner, started from one worker, against the best fixed number of
//! workers and factor, on workloads its rules were never adjusted on.
//!
//! The papers' experiments are the workloads the tuner's rules were written and revised against,
//! so the tuner doing well on them shows little about a workload it has not seen. [`SETS`] are
//! fixed sets of other shapes (task-time distributions, volumes, loads, policies). Before each
//! change to the rules a new set is written down, and no set is edited afterwards to suit the
//! rules: a rule that does worse here is a worse rule. Only the newest set is held out from
//! every change so far; an older one may have shown the way to a change and is no longer
//! evidence for it, but it stays judged, each set on its own against the targets.
//!
//! Each workload runs with every fixed count of the plan and, for the policies with a factor,
//! every fixed factor, with the tuner off; then tuned from one worker (`--workers 1 --tuning on
//! --objective time`, the pool the largest fixed count). The score is the tuned run's time over
//! the best fixed run's.

use mw_runtime::{LoadPattern, Objective, PolicyName, RunArgs, TuneMode};
use serde_json::json;

use super::{LINK_LATENCY_MS, LINK_MBIT, fixed, program, synthetic};
use crate::doc::{Section, Table, Verdict, ms};
use crate::ideal::{against, median};
use crate::{BenchError, Size};

/// A set of held-out workloads, written down before a change to the tuner's rules.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Set {
    pub name: &'static str,
    /// What the set was written down before.
    pub before: &'static str,
    pub workloads: &'static [Workload],
}

/// The sets, oldest first; the last is the one held out from every change so far.
pub const SETS: [Set; 6] = [
    Set {
        name: "first set",
        before: "the rules were last revised on the papers' experiments",
        workloads: &FIRST,
    },
    Set {
        name: "second set",
        before: "the next change to the rules, found through the first set's worst workload",
        workloads: &SECOND,
    },
    Set {
        name: "third set",
        before: "the change the POETRIES replica's loaded phases led to (self-scheduling tails on \
                 unevenly loaded workers)",
        workloads: &THIRD,
    },
    Set {
        name: "fourth set",
        before: "the change the sets' iterations of fewer than 80 tasks led to (the first \
                 iteration measured one task at a time in short iterations too)",
        workloads: &FOURTH,
    },
    Set {
        name: "fifth set",
        before: "the change the busy machine's rollbacks led to (a chunk's waits for a core read \
                 when the chunk is expected to be long, not when the one before was)",
        workloads: &FIFTH,
    },
    Set {
        name: "sixth set",
        before: "the change the busy machine's runs from one worker led to (the first look acts on \
                 a change of the worker count predicted to gain nearly all it could)",
        workloads: &SIXTH,
    },
];

/// One held-out workload: the synthetic program's shape, its load and its policy.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Workload {
    pub name: &'static str,
    pub tasks: usize,
    /// Mean task time, ms (lognormal, as the synthetic program draws them).
    pub mean_ms: f64,
    /// Standard deviation of the task times, a fraction of the mean.
    pub stddev: f64,
    pub task_bytes: usize,
    pub result_bytes: usize,
    /// Bytes every worker receives at the start of each iteration.
    pub shared_bytes: usize,
    /// `--load`.
    pub load: &'static str,
    pub policy: PolicyName,
}

/// The first set. Fixed: the tuner's rules are judged on it, never adjusted on it.
const FIRST: [Workload; 6] = [
    Workload {
        name: "equal tasks, bulky",
        tasks: 64,
        mean_ms: 2.0,
        stddev: 0.0,
        task_bytes: 3_200,
        result_bytes: 3_200,
        shared_bytes: 0,
        load: "none",
        policy: PolicyName::Daf,
    },
    Workload {
        name: "heavy tail, variable load",
        tasks: 80,
        mean_ms: 1.5,
        stddev: 1.5,
        task_bytes: 16,
        result_bytes: 8,
        shared_bytes: 0,
        load: "variable:6",
        policy: PolicyName::Factoring,
    },
    Workload {
        name: "broadcast, increasing load",
        tasks: 50,
        mean_ms: 4.0,
        stddev: 0.1,
        task_bytes: 16,
        result_bytes: 256,
        shared_bytes: 20_000,
        load: "increasing:5",
        policy: PolicyName::Daf,
    },
    Workload {
        name: "many small tasks",
        tasks: 400,
        mean_ms: 0.25,
        stddev: 0.5,
        task_bytes: 64,
        result_bytes: 64,
        shared_bytes: 0,
        load: "none",
        policy: PolicyName::Fsc,
    },
    Workload {
        name: "load on all, then off",
        tasks: 120,
        mean_ms: 1.0,
        stddev: 0.3,
        task_bytes: 1_000,
        result_bytes: 100,
        shared_bytes: 0,
        load: "10:*:50,25:*:0",
        policy: PolicyName::Gss,
    },
    Workload {
        name: "large results, variable load",
        tasks: 60,
        mean_ms: 3.0,
        stddev: 0.2,
        task_bytes: 16,
        result_bytes: 8_000,
        shared_bytes: 0,
        load: "variable:10:50",
        policy: PolicyName::Dpf,
    },
];

/// The second set, written down before the change the first set's worst workload led to.
/// Fixed like the first.
const SECOND: [Workload; 6] = [
    Workload {
        name: "spread tasks, small messages",
        tasks: 120,
        mean_ms: 1.2,
        stddev: 0.8,
        task_bytes: 200,
        result_bytes: 200,
        shared_bytes: 0,
        load: "none",
        policy: PolicyName::Gss,
    },
    Workload {
        name: "few long tasks, variable load",
        tasks: 24,
        mean_ms: 10.0,
        stddev: 0.2,
        task_bytes: 64,
        result_bytes: 64,
        shared_bytes: 0,
        load: "variable:4",
        policy: PolicyName::Daf,
    },
    Workload {
        name: "bulky tasks, increasing load",
        tasks: 48,
        mean_ms: 3.0,
        stddev: 0.3,
        task_bytes: 6_000,
        result_bytes: 2_000,
        shared_bytes: 0,
        load: "increasing:8",
        policy: PolicyName::Fsc,
    },
    Workload {
        name: "large broadcast, no load",
        tasks: 80,
        mean_ms: 1.5,
        stddev: 0.2,
        task_bytes: 32,
        result_bytes: 64,
        shared_bytes: 40_000,
        load: "none",
        policy: PolicyName::Factoring,
    },
    Workload {
        name: "short tasks, bulky results",
        tasks: 300,
        mean_ms: 0.4,
        stddev: 0.1,
        task_bytes: 16,
        result_bytes: 2_000,
        shared_bytes: 0,
        load: "variable:5:30",
        policy: PolicyName::Dpf,
    },
    Workload {
        name: "uneven tasks, load on all",
        tasks: 100,
        mean_ms: 2.0,
        stddev: 0.5,
        task_bytes: 500,
        result_bytes: 500,
        shared_bytes: 0,
        load: "8:*:40",
        policy: PolicyName::Tss,
    },
];

/// The third set, written down before the change the POETRIES replica's loaded phases led to:
/// workers of different speeds, where the last chunks decide the iteration. Fixed like the
/// others.
const THIRD: [Workload; 6] = [
    Workload {
        name: "one loaded worker, broadcast",
        tasks: 90,
        mean_ms: 2.5,
        stddev: 0.1,
        task_bytes: 16,
        result_bytes: 200,
        shared_bytes: 30_000,
        load: "0:0:75",
        policy: PolicyName::Daf,
    },
    Workload {
        name: "equal tasks, no load",
        tasks: 96,
        mean_ms: 1.5,
        stddev: 0.0,
        task_bytes: 400,
        result_bytes: 400,
        shared_bytes: 0,
        load: "none",
        policy: PolicyName::Factoring,
    },
    Workload {
        name: "load coming worker by worker",
        tasks: 100,
        mean_ms: 1.5,
        stddev: 0.3,
        task_bytes: 64,
        result_bytes: 64,
        shared_bytes: 0,
        load: "increasing:10:70",
        policy: PolicyName::Gss,
    },
    Workload {
        name: "long tasks, variable load",
        tasks: 40,
        mean_ms: 5.0,
        stddev: 0.2,
        task_bytes: 32,
        result_bytes: 4_000,
        shared_bytes: 0,
        load: "variable:8",
        policy: PolicyName::Daf,
    },
    Workload {
        name: "weighted chunks, variable load",
        tasks: 120,
        mean_ms: 1.2,
        stddev: 0.4,
        task_bytes: 100,
        result_bytes: 100,
        shared_bytes: 0,
        load: "variable:5:60",
        policy: PolicyName::Wf,
    },
    Workload {
        name: "broadcast and spread tasks, increasing load",
        tasks: 70,
        mean_ms: 3.0,
        stddev: 0.6,
        task_bytes: 16,
        result_bytes: 64,
        shared_bytes: 15_000,
        load: "increasing:6:60",
        policy: PolicyName::AwfB,
    },
];

/// The fourth set. Fixed: the tuner's rules are judged on it, never adjusted on it.
const FOURTH: [Workload; 6] = [
    Workload {
        name: "few bulky tasks",
        tasks: 32,
        mean_ms: 4.0,
        stddev: 0.3,
        task_bytes: 8_000,
        result_bytes: 1_000,
        shared_bytes: 0,
        load: "none",
        policy: PolicyName::Gss,
    },
    Workload {
        name: "short tasks, loaded worker 0",
        tasks: 200,
        mean_ms: 0.5,
        stddev: 0.4,
        task_bytes: 32,
        result_bytes: 32,
        shared_bytes: 0,
        load: "0:0:60",
        policy: PolicyName::Fac2,
    },
    Workload {
        name: "broadcast, few long tasks",
        tasks: 30,
        mean_ms: 6.0,
        stddev: 0.1,
        task_bytes: 16,
        result_bytes: 500,
        shared_bytes: 25_000,
        load: "none",
        policy: PolicyName::Daf,
    },
    Workload {
        name: "skewed tasks, load on all midway",
        tasks: 150,
        mean_ms: 1.0,
        stddev: 1.0,
        task_bytes: 64,
        result_bytes: 64,
        shared_bytes: 0,
        load: "20:*:50",
        policy: PolicyName::Tss,
    },
    Workload {
        name: "mid-sized tasks, variable load",
        tasks: 56,
        mean_ms: 2.5,
        stddev: 0.2,
        task_bytes: 500,
        result_bytes: 2_000,
        shared_bytes: 0,
        load: "variable:6:40",
        policy: PolicyName::Dpf,
    },
    Workload {
        name: "many tiny tasks, increasing load",
        tasks: 600,
        mean_ms: 0.2,
        stddev: 0.5,
        task_bytes: 16,
        result_bytes: 16,
        shared_bytes: 0,
        load: "increasing:5:50",
        policy: PolicyName::Factoring,
    },
];

/// The fifth set, written down after the change it is named by and before the next one, with the
/// policies no earlier set runs. Fixed: the tuner's rules are judged on it, never adjusted on it.
const FIFTH: [Workload; 6] = [
    Workload {
        name: "self-scheduled short tasks",
        tasks: 240,
        mean_ms: 0.6,
        stddev: 0.3,
        task_bytes: 32,
        result_bytes: 32,
        shared_bytes: 0,
        load: "none",
        policy: PolicyName::Ss,
    },
    Workload {
        name: "heavy load easing, bulky results",
        tasks: 72,
        mean_ms: 2.0,
        stddev: 0.25,
        task_bytes: 64,
        result_bytes: 4_000,
        shared_bytes: 0,
        load: "0:*:60,20:*:20",
        policy: PolicyName::AwfC,
    },
    Workload {
        name: "heavy tail, broadcast",
        tasks: 90,
        mean_ms: 1.5,
        stddev: 1.2,
        task_bytes: 16,
        result_bytes: 128,
        shared_bytes: 20_000,
        load: "none",
        policy: PolicyName::Af,
    },
    Workload {
        name: "long tasks, load on all late",
        tasks: 36,
        mean_ms: 7.0,
        stddev: 0.15,
        task_bytes: 256,
        result_bytes: 256,
        shared_bytes: 0,
        load: "25:*:45",
        policy: PolicyName::Mfsc,
    },
    Workload {
        name: "static split, increasing load",
        tasks: 110,
        mean_ms: 1.2,
        stddev: 0.35,
        task_bytes: 100,
        result_bytes: 300,
        shared_bytes: 0,
        load: "increasing:4:55",
        policy: PolicyName::Static,
    },
    Workload {
        name: "large tasks out, variable load",
        tasks: 48,
        mean_ms: 2.5,
        stddev: 0.2,
        task_bytes: 12_000,
        result_bytes: 64,
        shared_bytes: 0,
        load: "variable:7:35",
        policy: PolicyName::AwfD,
    },
];

/// The sixth set, written down before the change it is named by, with shapes whose best count
/// may be small (bulky messages, few tasks), where the first look's change is a doubling.
/// Fixed: the tuner's rules are judged on it, never adjusted on it.
const SIXTH: [Workload; 6] = [
    Workload {
        name: "bulky short tasks, no load",
        tasks: 160,
        mean_ms: 0.4,
        stddev: 0.2,
        task_bytes: 6_000,
        result_bytes: 6_000,
        shared_bytes: 0,
        load: "none",
        policy: PolicyName::Gss,
    },
    Workload {
        name: "few tasks, large broadcast",
        tasks: 24,
        mean_ms: 4.0,
        stddev: 0.1,
        task_bytes: 64,
        result_bytes: 64,
        shared_bytes: 60_000,
        load: "none",
        policy: PolicyName::Daf,
    },
    Workload {
        name: "spread tasks, worker 0 loaded late",
        tasks: 96,
        mean_ms: 1.8,
        stddev: 0.8,
        task_bytes: 128,
        result_bytes: 512,
        shared_bytes: 0,
        load: "20:0:60",
        policy: PolicyName::Factoring,
    },
    Workload {
        name: "bulky results, variable load",
        tasks: 64,
        mean_ms: 1.0,
        stddev: 0.3,
        task_bytes: 32,
        result_bytes: 9_000,
        shared_bytes: 0,
        load: "variable:5:30",
        policy: PolicyName::Tss,
    },
    Workload {
        name: "medium tasks, broadcast, increasing load",
        tasks: 120,
        mean_ms: 1.3,
        stddev: 0.4,
        task_bytes: 200,
        result_bytes: 200,
        shared_bytes: 8_000,
        load: "increasing:3:50",
        policy: PolicyName::AwfE,
    },
    Workload {
        name: "long even tasks, bulky, no load",
        tasks: 40,
        mean_ms: 5.0,
        stddev: 0.05,
        task_bytes: 20_000,
        result_bytes: 20_000,
        shared_bytes: 0,
        load: "none",
        policy: PolicyName::Fsc,
    },
];

/// Tuned over best fixed: the median over the workloads at most this.
pub const MEDIAN_TARGET: f64 = 1.05;
/// Tuned over best fixed: every workload at most this.
pub const WORST_TARGET: f64 = 1.15;

#[derive(Debug, Clone)]
struct Plan {
    counts: Vec<usize>,
    /// The fixed factors, for the policies that have one.
    factors: Vec<f64>,
    iterations: usize,
    /// Task times are multiplied by this.
    time_scale: f64,
    /// Runs of each point, whose mean is its time: a single run of some workloads varies by
    /// ±20 % from one to the next, more than the targets' margins.
    repeats: usize,
}

fn plan(size: Size) -> Plan {
    match size {
        Size::Full => Plan {
            counts: vec![1, 2, 4, 8, 16],
            factors: vec![0.3, 0.5, 0.8],
            iterations: 40,
            time_scale: 1.0,
            repeats: 2,
        },
        Size::Tiny => Plan {
            counts: vec![1, 2, 4],
            factors: vec![0.5],
            iterations: 4,
            time_scale: 0.2,
            repeats: 1,
        },
    }
}

/// Whether the policy has a factor to fix or tune.
fn has_factor(policy: PolicyName) -> bool {
    matches!(
        policy,
        PolicyName::Factoring | PolicyName::Fsc | PolicyName::Dpf
    )
}

/// A fixed run: workers and factor (`None`: the policy's default).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Fixed {
    pub workers: usize,
    pub factor: Option<f64>,
    pub ms: f64,
}

/// One workload's runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Outcome {
    pub workload: Workload,
    pub fixed: Vec<Fixed>,
    pub tuned_ms: f64,
    /// Workers and factor of the tuned run's last iteration.
    pub tuned_workers: usize,
    pub tuned_factor: f64,
}

impl Outcome {
    /// The fastest fixed run.
    pub fn best(&self) -> Option<&Fixed> {
        self.fixed.iter().min_by(|a, b| a.ms.total_cmp(&b.ms))
    }

    /// The tuned run's time over the best fixed run's.
    pub fn ratio(&self) -> f64 {
        self.best().map_or(f64::NAN, |b| self.tuned_ms / b.ms)
    }
}

fn runtime(workload: &Workload, run: RunArgs) -> Result<RunArgs, BenchError> {
    let load: LoadPattern = workload
        .load
        .parse()
        .map_err(|e| BenchError(format!("error: load `{}`: {e}", workload.load)))?;
    Ok(RunArgs {
        policy: Some(workload.policy.into()),
        load: Some(load),
        link_latency: Some(LINK_LATENCY_MS),
        link_bandwidth: Some(LINK_MBIT),
        ..run
    })
}

fn measure(workload: &Workload, plan: &Plan) -> Result<Outcome, BenchError> {
    let mut prog = program(
        workload.tasks,
        plan.iterations,
        workload.mean_ms * plan.time_scale,
        workload.stddev,
    );
    prog.task_bytes = workload.task_bytes;
    prog.result_bytes = workload.result_bytes;
    prog.shared_bytes = workload.shared_bytes;
    let factors: Vec<Option<f64>> = if has_factor(workload.policy) {
        plan.factors.iter().copied().map(Some).collect()
    } else {
        vec![None]
    };
    let mut runs: Vec<Fixed> = plan
        .counts
        .iter()
        .flat_map(|&n| factors.iter().map(move |&factor| (n, factor)))
        .map(|(workers, factor)| Fixed {
            workers,
            factor,
            ms: 0.0,
        })
        .collect();
    let pool = plan.counts.iter().copied().max().unwrap_or(1);
    let tuned = RunArgs {
        max_workers: Some(pool),
        tune: Some(TuneMode::On),
        objective: Some(Objective::Time),
        ..fixed(1)
    };
    let repeats = plan.repeats.max(1);
    let (mut tuned_ms, mut last) = (0.0, None);
    // Round after round, every point once, so that a slower spell of the machine weighs on
    // each point alike.
    for _ in 0..repeats {
        for point in &mut runs {
            let run = runtime(
                workload,
                RunArgs {
                    factor: point.factor,
                    ..fixed(point.workers)
                },
            )?;
            point.ms += synthetic(prog.clone(), run)?.metrics.total_ms / repeats as f64;
        }
        let summary = synthetic(prog.clone(), runtime(workload, tuned.clone())?)?;
        tuned_ms += summary.metrics.total_ms / repeats as f64;
        last = summary.metrics.iterations.last().cloned();
    }
    Ok(Outcome {
        workload: *workload,
        fixed: runs,
        tuned_ms,
        tuned_workers: last.as_ref().map_or(0, |i| i.workers),
        tuned_factor: last.as_ref().map_or(f64::NAN, |i| i.factor),
    })
}

/// The median and the worst of tuned over best fixed.
pub fn score(outcomes: &[Outcome]) -> (f64, f64) {
    let ratios: Vec<f64> = outcomes.iter().map(Outcome::ratio).collect();
    let worst = ratios.iter().copied().fold(f64::NAN, f64::max);
    (median(&ratios), worst)
}

/// The targets against the numbers of every set, each on its own: the median of tuned over
/// best fixed at most [`MEDIAN_TARGET`], the worst at most [`WORST_TARGET`]. An older set
/// stays judged after a change was found through it: it no longer counts as evidence for that
/// change, but a rule that does worse on it is still a worse rule.
pub fn verdict(sets: &[(Set, Vec<Outcome>)]) -> Verdict {
    let newest = sets.len().saturating_sub(1);
    let mut met = 0;
    let mut parts = Vec::new();
    for (i, (set, outcomes)) in sets.iter().enumerate() {
        let (median, worst) = score(outcomes);
        let worst_name = outcomes
            .iter()
            .max_by(|a, b| a.ratio().total_cmp(&b.ratio()))
            .map_or("", |o| o.workload.name);
        let held = if i == newest {
            "held out from every change so far"
        } else {
            "a change may have been found through it"
        };
        met += usize::from(median <= MEDIAN_TARGET) + usize::from(worst <= WORST_TARGET);
        parts.push(format!(
            "the {} ({} workloads written down before {}; {held}): median {}×, worst {}× \
             ({worst_name})",
            set.name,
            outcomes.len(),
            set.before,
            against(median, MEDIAN_TARGET),
            against(worst, WORST_TARGET),
        ));
    }
    let why = format!(
        "tuned from one worker over the best fixed count and factor, {} (targets for each set: \
         median ≤ {MEDIAN_TARGET:.2}, worst ≤ {WORST_TARGET:.2}).",
        parts.join("; ")
    );
    match met {
        0 => Verdict::Not(why),
        m if m == 2 * sets.len() => Verdict::Reproduced(why),
        _ => Verdict::Partly(why),
    }
}

fn describe(w: &Workload, time_scale: f64) -> String {
    let mut text = format!(
        "{} tasks of {} ms ± {:.0} %, {} B out, {} B back",
        w.tasks,
        ms(w.mean_ms * time_scale),
        w.stddev * 100.0,
        w.task_bytes,
        w.result_bytes
    );
    if w.shared_bytes > 0 {
        text.push_str(&format!(", {} B to every worker", w.shared_bytes));
    }
    text.push_str(&format!(", `--load {}`, `{}`", w.load, w.policy));
    text
}

/// One row per workload.
pub fn table(outcomes: &[Outcome], time_scale: f64) -> Table {
    let mut table = Table::new([
        "workload",
        "shape",
        "best fixed: workers, factor → s",
        "tuned → s (last workers, factor)",
        "tuned / best fixed",
    ]);
    for o in outcomes {
        let best = o.best().map_or("–".to_owned(), |b| {
            format!(
                "{}, {} → {:.2}",
                b.workers,
                b.factor.map_or("–".to_owned(), |f| f.to_string()),
                b.ms / 1e3
            )
        });
        let factor = if has_factor(o.workload.policy) {
            format!("{:.1}", o.tuned_factor)
        } else {
            "–".to_owned()
        };
        table.push([
            o.workload.name.to_owned(),
            describe(&o.workload, time_scale),
            best,
            format!("{:.2} ({}, {factor})", o.tuned_ms / 1e3, o.tuned_workers),
            format!("{:.2}×", o.ratio()),
        ]);
    }
    table
}

/// Runs the experiment.
///
/// # Errors
/// A run that failed.
pub fn run(size: Size) -> Result<Section, BenchError> {
    let plan = plan(size);
    let sets = SETS
        .iter()
        .map(|set| {
            let outcomes = set
                .workloads
                .iter()
                .map(|w| measure(w, &plan))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((*set, outcomes))
        })
        .collect::<Result<Vec<_>, BenchError>>()?;
    let counts: Vec<String> = plan.counts.iter().map(usize::to_string).collect();
    let factors: Vec<String> = plan.factors.iter().map(f64::to_string).collect();
    let mut ours = format!(
        "The synthetic program, {} iterations, behind the emulated link (`--link-latency \
         {LINK_LATENCY_MS} --link-bandwidth {LINK_MBIT}`), {}. Fixed runs `--tuning \
         off` at {} workers and, for the policies with a factor, at factors {}; the tuned run \
         `--workers 1 --max-workers {} --tuning on --objective time`. Total run time in \
         seconds. The verdict judges each set on its own (targets: median {MEDIAN_TARGET:.2}, \
         worst {WORST_TARGET:.2}).",
        plan.iterations,
        match plan.repeats {
            0 | 1 => "one run each".to_owned(),
            n => format!(
                "{n} runs of each, in rounds (every fixed run and the tuned one, then again), \
                 a time their mean; the tuned run's workers and factor are its last run's"
            ),
        },
        counts.join(", "),
        factors.join(", "),
        plan.counts.iter().max().unwrap_or(&1),
    );
    for (set, outcomes) in &sets {
        let (median, worst) = score(outcomes);
        ours.push_str(&format!(
            "\n\n**The {}**, written down before {}: median of tuned over best fixed {}×, \
             worst {}×.\n\n{}",
            set.name,
            set.before,
            against(median, MEDIAN_TARGET),
            against(worst, WORST_TARGET),
            table(outcomes, plan.time_scale).markdown()
        ));
    }
    let data: Vec<_> = sets
        .iter()
        .map(|(set, outcomes)| json!({ "set": set.name, "before": set.before, "outcomes": outcomes }))
        .collect();
    Ok(Section {
        title: "Held-out workloads".into(),
        verdict: verdict(&sets),
        paper: "No paper's experiment: the papers tuned the workloads their rules were made \
                for. The sets are fixed in `mw-bench` (`experiments/heldout.rs`), a new one \
                before each change to the tuner's rules, and none is changed to suit them."
            .into(),
        ours,
        figures: Vec::new(),
        data: json!({ "sets": data }),
        seconds: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(fixed: &[(usize, f64)], tuned_ms: f64) -> Outcome {
        Outcome {
            workload: FIRST[0],
            fixed: fixed
                .iter()
                .map(|&(workers, ms)| Fixed {
                    workers,
                    factor: None,
                    ms,
                })
                .collect(),
            tuned_ms,
            tuned_workers: 4,
            tuned_factor: 0.5,
        }
    }

    /// Every load parses and fits every fixed count of the full plan, the smallest included (a
    /// load naming worker 1 cannot run on one worker).
    #[test]
    fn every_load_of_the_sets_parses_and_fits_every_count() {
        let fewest = plan(Size::Full).counts.into_iter().min().unwrap();
        for w in SETS.iter().flat_map(|s| s.workloads) {
            let load = w.load.parse::<LoadPattern>();
            assert!(load.is_ok(), "{}", w.load);
            assert!(load.unwrap().check_pool(fewest).is_ok(), "{}", w.load);
        }
    }

    #[test]
    fn the_tuned_run_is_scored_against_the_fastest_fixed_one() {
        let o = outcome(&[(1, 400.0), (2, 200.0), (4, 250.0)], 210.0);
        assert_eq!(o.best().unwrap().workers, 2);
        assert!((o.ratio() - 1.05).abs() < 1e-12);
    }

    #[test]
    fn the_verdict_follows_the_median_and_the_worst() {
        let good = outcome(&[(1, 100.0)], 101.0);
        let bad = outcome(&[(1, 100.0)], 130.0);
        let [first, second, ..] = SETS;
        let judged = |older: Vec<Outcome>, newest: Vec<Outcome>| {
            verdict(&[(first, older), (second, newest)])
        };
        let goods = vec![good.clone(), good.clone(), good.clone()];
        assert!(matches!(
            judged(goods.clone(), goods.clone()),
            Verdict::Reproduced(_)
        ));
        // An older set that misses still counts.
        match judged(vec![good.clone(), bad.clone(), bad.clone()], goods.clone()) {
            Verdict::Partly(why) => assert!(
                why.contains("the first set") && why.contains("median 1.30×"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
        match judged(goods, vec![good.clone(), good.clone(), bad.clone()]) {
            Verdict::Partly(why) => assert!(
                why.contains("the second set") && why.contains("worst 1.30×"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            judged(vec![bad.clone()], vec![bad.clone(), bad]),
            Verdict::Not(_)
        ));
        let md = table(&[good], 1.0).markdown();
        assert!(md.contains("1, – → 0.10") && md.contains("1.01×"), "{md}");
    }
}
