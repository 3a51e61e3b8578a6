//! The few lines the master prints on the standard error when a run ends (not with `--quiet`):
//!
//! ```text
//! mw: nbody finished in 4.2 s: 100 iterations, 102,400 tasks on a pool of 4 workers (local, async)
//! mw: final tunables: nworkers 3, factor 0.50, policy daf; objective index (parked worker threads are released)
//! mw: 1 decision: iteration 12: nworkers 4 → 3
//! mw: no failures
//! mw: metrics in `run.json`, trace in `run.trace.json`
//! ```
//!
//! and, while the run goes on, one line per decision (with `--verbose`, the model's account on
//! the line after it):
//!
//! ```text
//! mw: iteration 12: nworkers 4 → 3: best time per worker: expected 12% less time × workers
//! ```
//!
//! Iterations are numbered from 0 everywhere, as in the metrics' `index`.

use std::fmt::Write as _;
use std::path::Path;

use crate::metrics::Decision;
use crate::metrics::RunMetrics;
use crate::progress::human;

/// Decisions and failures listed one by one; past that, only counted.
const LISTED: usize = 3;

/// Where the run's files went.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Written<'a> {
    pub metrics: Option<&'a Path>,
    pub trace: Option<&'a Path>,
}

/// Prints the summary of `metrics` on the standard error.
pub(crate) fn print(metrics: &RunMetrics, written: &Written<'_>) {
    eprint!("{}", render(metrics, written));
}

/// The summary's lines, each ending in a newline.
pub(crate) fn render(metrics: &RunMetrics, written: &Written<'_>) -> String {
    let mut out = String::new();
    let tasks: usize = metrics.iterations.iter().map(|it| it.tasks).sum();
    let _ = writeln!(
        out,
        "mw: {} finished in {}: {}, {} tasks on a pool of {} ({}, {})",
        metrics.app,
        human(metrics.total_ms / 1e3),
        plural(metrics.iterations.len(), "iteration"),
        grouped(tasks),
        plural(metrics.pool, "worker"),
        metrics.backend,
        metrics.protocol,
    );
    if let Some((workers, factor, policy)) = final_tunables(metrics) {
        let _ = write!(
            out,
            "mw: final tunables: nworkers {workers}, factor {factor:.2}, policy {policy}"
        );
        // Empty in metrics written before the objective was recorded.
        if !metrics.objective.is_empty() {
            let _ = write!(
                out,
                "; objective {} ({})",
                metrics.objective, metrics.objective_reason
            );
        }
        out.push('\n');
    }

    let decisions = &metrics.decisions;
    if decisions.is_empty() {
        out += "mw: no tuning decisions\n";
    } else {
        let listed: Vec<String> = decisions
            .iter()
            .take(LISTED)
            .map(|d| format!("{}: {}", when(d), change(d)))
            .collect();
        let _ = writeln!(
            out,
            "mw: {}: {}{}",
            plural(decisions.len(), "decision"),
            listed.join("; "),
            more(decisions.len())
        );
    }

    let failures = &metrics.failures;
    if failures.is_empty() {
        out += "mw: no failures\n";
    } else {
        let listed: Vec<String> = failures
            .iter()
            .take(LISTED)
            .map(|f| {
                format!(
                    "worker {} on tasks {}..={} of iteration {} ({})",
                    f.worker,
                    f.first_task,
                    f.first_task + f.tasks.saturating_sub(1),
                    f.iteration,
                    f.message
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "mw: {} re-run elsewhere: {}{}",
            plural(failures.len(), "failed chunk"),
            listed.join("; "),
            more(failures.len())
        );
    }

    let mut files = Vec::new();
    if let Some(path) = written.metrics {
        files.push(format!("metrics in `{}`", path.display()));
    }
    if let Some(path) = written.trace {
        files.push(format!("trace in `{}`", path.display()));
    }
    if !files.is_empty() {
        let _ = writeln!(out, "mw: {}", files.join(", "));
    }
    out
}

/// The tunables in force when the run ended: the last iteration's, with the decisions taken
/// inside it or after it (which the engine applies at the next boundary, also when no iteration
/// follows).
fn final_tunables(metrics: &RunMetrics) -> Option<(usize, f64, String)> {
    let last = metrics.iterations.last()?;
    let (mut workers, mut factor, mut policy) = (last.workers, last.factor, last.policy.clone());
    let later = metrics.decisions.iter().filter(|d| {
        d.iteration > last.index || (d.iteration == last.index && d.tasks_done.is_some())
    });
    for d in later {
        match d.tunable.as_str() {
            "nworkers" => workers = d.to.as_u64().map_or(workers, |n| n as usize),
            "factor" => factor = d.to.as_f64().unwrap_or(factor),
            "policy" => policy = d.to.as_str().map_or(policy, str::to_owned),
            _ => {}
        }
    }
    Some((workers, factor, policy))
}

/// The line printed while the run goes on when a decision is taken; with `verbose`, the
/// model's account follows on a line of its own.
pub(crate) fn announcement(d: &Decision, verbose: bool) -> String {
    let why = if d.summary.is_empty() {
        &d.reason
    } else {
        &d.summary
    };
    let mut out = format!("mw: {}: {}: {why}\n", when(d), change(d));
    if verbose && !d.summary.is_empty() {
        let _ = writeln!(out, "mw:     {}", d.reason);
    }
    out
}

/// `iteration 12`, or `iteration 12 after 300 tasks` for a change made inside it.
fn when(d: &Decision) -> String {
    match d.tasks_done {
        Some(done) => format!("iteration {} after {}", d.iteration, plural(done, "task")),
        None => format!("iteration {}", d.iteration),
    }
}

/// `nworkers 4 → 3`, `factor 0.5 → 0.3`.
fn change(d: &Decision) -> String {
    format!("{} {} → {}", d.tunable, value(&d.from), value(&d.to))
}

/// A tunable's value for people: numbers with at most three decimals, text without quotes.
fn value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) if n.is_f64() => {
            let text = format!("{:.3}", n.as_f64().unwrap_or_default());
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        }
        other => other.to_string(),
    }
}

/// `1 worker`, `2 workers`, `12,000 tasks`.
pub(crate) fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{} {what}s", grouped(n))
    }
}

fn more(n: usize) -> String {
    if n > LISTED {
        format!("; and {} more", n - LISTED)
    } else {
        String::new()
    }
}

fn grouped(n: usize) -> String {
    crate::progress::grouped(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Failure, IterationMetrics};

    fn run(iterations: usize) -> RunMetrics {
        RunMetrics {
            app: "nbody".into(),
            backend: "local".into(),
            pool: 4,
            protocol: "async".into(),
            total_ms: 4_200.0,
            iterations: (0..iterations)
                .map(|index| IterationMetrics {
                    index,
                    workers: 3,
                    factor: 0.5,
                    policy: "daf".into(),
                    tasks: 1_024,
                    chunks: 10,
                    time_ms: 42.0,
                    tc_ms: 120.0,
                    lm_ms: 1.0,
                    bytes_to_workers: 0,
                    bytes_from_workers: 0,
                    imbalance: 0.1,
                    predicted_ms: None,
                    chunk_sizes: vec![],
                    busy_ms: vec![],
                    task_mean_ms: 0.1,
                    task_stddev_ms: 0.0,
                    ..IterationMetrics::default()
                })
                .collect(),
            decisions: Vec::new(),
            failures: Vec::new(),
            objective: "index".into(),
            objective_reason: "parked worker threads are released".into(),
            interrupted: None,
            command: Vec::new(),
        }
    }

    #[test]
    fn a_plain_run() {
        let text = render(&run(100), &Written::default());
        assert_eq!(
            text,
            "mw: nbody finished in 4.2 s: 100 iterations, 102,400 tasks on a pool of 4 workers \
             (local, async)\n\
             mw: final tunables: nworkers 3, factor 0.50, policy daf; objective index (parked \
             worker threads are released)\n\
             mw: no tuning decisions\n\
             mw: no failures\n"
        );
    }

    #[test]
    fn decisions_failures_and_files() {
        let mut metrics = run(20);
        metrics.decisions = (0..5_i64)
            .map(|i| Decision {
                iteration: 2 * i as usize + 2,
                tunable: "nworkers".into(),
                from: (4 - i).into(),
                to: (3 - i).into(),
                reason: "Pi is lower".into(),
                ..Decision::default()
            })
            .collect();
        metrics.failures.push(Failure {
            iteration: 3,
            worker: 2,
            first_task: 10,
            tasks: 5,
            message: "boom".into(),
        });
        let written = Written {
            metrics: Some(Path::new("m.json")),
            trace: Some(Path::new("t.json")),
        };
        let text = render(&metrics, &written);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert_eq!(
            lines[2],
            "mw: 5 decisions: iteration 2: nworkers 4 → 3; iteration 4: nworkers 3 → 2; \
             iteration 6: nworkers 2 → 1; and 2 more"
        );
        assert_eq!(
            lines[3],
            "mw: 1 failed chunk re-run elsewhere: worker 2 on tasks 10..=14 of iteration 3 (boom)"
        );
        assert_eq!(lines[4], "mw: metrics in `m.json`, trace in `t.json`");
    }

    #[test]
    fn the_objective_says_why_it_was_used() {
        let mut metrics = run(3);
        metrics.backend = "mpi".into();
        metrics.objective = "time".into();
        metrics.objective_reason = "parked MPI ranks keep their allocation".into();
        let text = render(&metrics, &Written::default());
        assert!(
            text.contains("policy daf; objective time (parked MPI ranks keep their allocation)\n"),
            "{text}"
        );
        // Metrics from before the objective was recorded: the line stops at the policy.
        metrics.objective.clear();
        let text = render(&metrics, &Written::default());
        assert!(text.contains("policy daf\nmw: no tuning"), "{text}");
    }

    /// A decision taken at the end of the last iteration (applied at the boundary that found
    /// no more work) or inside it: the final tunables are those it set.
    #[test]
    fn the_final_tunables_agree_with_the_last_decisions() {
        let mut metrics = run(4);
        let decision = |iteration, tasks_done, tunable: &str, from, to| Decision {
            iteration,
            tasks_done,
            tunable: tunable.into(),
            from,
            to,
            reason: "tuner".into(),
            ..Decision::default()
        };
        metrics.decisions = vec![
            decision(1, None, "nworkers", 4.into(), 3.into()),
            decision(3, Some(500), "factor", 0.5.into(), 0.3.into()),
            decision(4, None, "nworkers", 3.into(), 1.into()),
            decision(4, None, "policy", "daf".into(), "fsc".into()),
        ];
        let text = render(&metrics, &Written::default());
        assert!(
            text.contains("mw: final tunables: nworkers 1, factor 0.30, policy fsc;"),
            "{text}"
        );
        // A decision before the last iteration is already in its values.
        metrics.decisions.truncate(1);
        let text = render(&metrics, &Written::default());
        assert!(text.contains("final tunables: nworkers 3,"), "{text}");
    }

    #[test]
    fn a_decision_is_one_short_line_unless_verbose() {
        let long = "balanced model: Pi(3) = 0.123 < Pi(4) = 0.456; Tt 41.20 → 44.00 ms; ".repeat(5);
        let d = Decision {
            iteration: 1234,
            tasks_done: Some(56_789),
            tunable: "nworkers".into(),
            from: 128.into(),
            to: 64.into(),
            reason: long.clone(),
            summary: "best time per worker: expected 12% less time × workers".into(),
            ..Decision::default()
        };
        let line = announcement(&d, false);
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(
            line.chars().count() <= 120,
            "{} chars: {line}",
            line.chars().count()
        );
        assert!(line.starts_with("mw: iteration 1234 after 56,789 tasks: nworkers 128 → 64: best"));
        let verbose = announcement(&d, true);
        assert_eq!(
            verbose.lines().nth(1),
            Some(format!("mw:     {long}").as_str())
        );

        // Without a summary (a program's or an external change), the reason is the words.
        let external = Decision {
            iteration: 0,
            tunable: "factor".into(),
            from: 0.1.into(),
            to: (0.1_f64 + 0.2).into(),
            reason: "external".into(),
            ..Decision::default()
        };
        assert_eq!(
            announcement(&external, true),
            "mw: iteration 0: factor 0.1 → 0.3: external\n"
        );
    }

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(plural(1, "worker"), "1 worker");
        assert_eq!(plural(0, "iteration"), "0 iterations");
        assert_eq!(plural(12_000, "task"), "12,000 tasks");
        let mut metrics = run(1);
        metrics.pool = 1;
        let text = render(&metrics, &Written::default());
        assert!(
            text.contains(": 1 iteration, 1,024 tasks on a pool of 1 worker "),
            "{text}"
        );
    }

    #[test]
    fn a_run_without_iterations() {
        let text = render(&run(0), &Written::default());
        assert!(text.starts_with("mw: nbody finished in 4.2 s: 0 iterations, 0 tasks"));
        assert!(!text.contains("final tunables"));
    }
}
