//! The few lines the master prints on the standard error when a run ends (not with `--quiet`):
//!
//! ```text
//! mw: nbody finished in 4.2 s: 100 iterations, 102,400 tasks on a pool of 4 workers (local, async)
//! mw: final tunables: nworkers 3, factor 0.50, policy daf; objective index (parked worker threads are released)
//! mw: 1 decision: iteration 12 nworkers 4 → 3 (Pi lowest at 3 workers)
//! mw: no failures
//! mw: metrics in `run.json`, trace in `run.trace.json`
//! ```

use std::fmt::Write as _;
use std::path::Path;

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
    if let Some(last) = metrics.iterations.last() {
        let _ = write!(
            out,
            "mw: final tunables: nworkers {}, factor {:.2}, policy {}",
            last.workers, last.factor, last.policy
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
            .map(|d| {
                format!(
                    "iteration {} {} {} → {} ({})",
                    d.iteration, d.tunable, d.from, d.to, d.reason
                )
            })
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

fn plural(n: usize, what: &str) -> String {
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
    use crate::tunables::Decision;

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
            "mw: 5 decisions: iteration 2 nworkers 4 → 3 (Pi is lower); iteration 4 nworkers \
             3 → 2 (Pi is lower); iteration 6 nworkers 2 → 1 (Pi is lower); and 2 more"
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

    #[test]
    fn a_run_without_iterations() {
        let text = render(&run(0), &Written::default());
        assert!(text.starts_with("mw: nbody finished in 4.2 s: 0 iterations, 0 tasks"));
        assert!(!text.contains("final tunables"));
    }
}
