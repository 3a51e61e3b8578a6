//! What a pilot run measured, read from its `--metrics` file and reduced to the parameters a
//! prediction needs: per-task time and its spread, each worker's speed, bytes per task, the
//! master's own time per task, `mo` and `k`, and the run's fixed costs.

use std::path::Path;

use mw_runtime::metrics::{IterationMetrics, RunMetrics};
use mw_runtime::tuning::simulate::SimWorker;
use mw_runtime::{InputKind, PolicyName, Protocol};

use crate::CliError;

/// The measured parameters of a pilot run.
#[derive(Debug, Clone)]
pub struct Pilot {
    pub app: String,
    pub backend: String,
    pub protocol: Protocol,
    /// The policy of the pilot's last iteration; `None` for a name this build does not know.
    pub policy: Option<PolicyName>,
    pub policy_name: String,
    pub factor: f64,
    /// Workers that took part in the last iteration.
    pub workers: usize,
    /// Finished iterations, and those the steady-state values are averaged over (all but the
    /// first when there are several: the first pays for warming up).
    pub iterations: usize,
    pub steady_iterations: usize,
    /// Tasks per iteration (mean).
    pub tasks: f64,
    /// Pooled task time and its deviation, in ms.
    pub task_mean_ms: f64,
    pub task_sd_ms: f64,
    /// Each worker's task time that took part in the steady iterations.
    pub worker_speeds: Vec<SimWorker>,
    /// Bytes of one task, one result, and the shared part each worker gets every iteration.
    pub task_bytes: f64,
    pub result_bytes: f64,
    pub shared_bytes: f64,
    /// Master time in `partition`, `recover` and `end_iteration`, per task, in ms.
    pub master_ms_per_task: f64,
    /// The link's per-message start-up and per-byte cost, when the pilot measured them.
    pub mo_ms: Option<f64>,
    pub k_ms_per_byte: Option<f64>,
    /// Chunks held ahead (the async protocol's prefetch, seen in the pilot).
    pub prefetch: usize,
    /// Mean time of a steady iteration, and the relative spread of the steady iterations.
    pub iteration_ms: f64,
    pub iteration_spread: f64,
    /// The first iteration's time beyond a steady one (warm-up), in ms.
    pub warmup_ms: f64,
    /// The run's time outside iterations (start, stop, writing files), in ms.
    pub fixed_ms: f64,
    /// Tuning decisions the pilot took: its tunables were not fixed.
    pub decisions: usize,
    /// Chunks that failed or were backed up.
    pub faults: usize,
    /// The pilot's command line, its program first; empty when the metrics do not hold it.
    pub command: Vec<String>,
}

/// Reads and checks the metrics file of a pilot run.
///
/// # Errors
/// A failure naming the file when it cannot be read, is not metrics JSON of this version (a
/// truncated file, another format), or holds no finished iteration.
pub fn read(path: &Path) -> Result<Pilot, CliError> {
    let text = mw_runtime::read_input_text(path, InputKind::Metrics).map_err(|e| {
        CliError::failure(
            format!("cannot read the metrics `{}`: {e}", path.display()),
            Some("give the file a pilot run wrote with `--metrics PATH`".to_string()),
        )
    })?;
    if crate::report::is_trace(&text) {
        return Err(CliError::usage(
            format!("`{}` is a trace, not a metrics file", path.display()),
            "give the metrics the pilot wrote with `--metrics PATH` (the trace is `--trace`'s)",
        ));
    }
    let metrics: RunMetrics = serde_json::from_str(&text).map_err(|e| {
        let help = if e.is_eof() {
            "the file ends early: it was cut short (a pilot still running, a full disk); run the pilot again".to_string()
        } else {
            format!(
                "predict reads the metrics of mw-runtime {}; run the pilot again with this version",
                env!("CARGO_PKG_VERSION")
            )
        };
        CliError::failure(
            format!("`{}` is not a metrics file this version can read: {e}", path.display()),
            Some(help),
        )
    })?;
    from_metrics(&metrics).map_err(|(message, help)| {
        CliError::failure(
            format!("the pilot `{}` {message}", path.display()),
            Some(help.to_string()),
        )
    })
}

/// Reduces a run's metrics to the pilot's parameters.
///
/// # Errors
/// What is wrong with the metrics (completing "the pilot ... "), and what to do.
pub fn from_metrics(m: &RunMetrics) -> Result<Pilot, (String, &'static str)> {
    let finished: Vec<&IterationMetrics> = m.iterations.iter().filter(|i| i.tasks > 0).collect();
    let Some(last) = finished.last() else {
        return Err((
            "finished no iteration with tasks".to_string(),
            "run the pilot until at least one iteration ends (a one-bag job: give it fewer tasks)",
        ));
    };
    for it in &finished {
        let values = [
            it.time_ms,
            it.tc_ms,
            it.lm_ms,
            it.task_mean_ms,
            it.task_stddev_ms,
        ];
        if values.iter().any(|v| !v.is_finite() || *v < 0.0) || it.time_ms == 0.0 {
            return Err((
                format!("has impossible times in iteration {}", it.index),
                "the file was edited or damaged; run the pilot again",
            ));
        }
    }
    let protocol = match m.protocol.as_str() {
        "sync" => Protocol::Sync,
        "async" => Protocol::Async,
        other => {
            return Err((
                format!("ran an unknown protocol `{other}`"),
                "the metrics come from another version; run the pilot again with this one",
            ));
        }
    };
    let steady: &[&IterationMetrics] = if finished.len() > 1 {
        &finished[1..]
    } else {
        &finished
    };
    let count = steady.len() as f64;
    let mean =
        |f: &dyn Fn(&IterationMetrics) -> f64| steady.iter().map(|i| f(i)).sum::<f64>() / count;
    let tasks = mean(&|i| i.tasks as f64);
    let all_tasks: f64 = steady.iter().map(|i| i.tasks as f64).sum();
    let task_mean_ms = steady
        .iter()
        .map(|i| i.task_mean_ms * i.tasks as f64)
        .sum::<f64>()
        / all_tasks;
    // Pooled deviation: within-iteration variance plus the spread of the iterations' means.
    let variance = steady
        .iter()
        .map(|i| {
            let d = i.task_mean_ms - task_mean_ms;
            (i.task_stddev_ms * i.task_stddev_ms + d * d) * i.tasks as f64
        })
        .sum::<f64>()
        / all_tasks;
    let shared_bytes = mean(&|i| i.shared_bytes as f64);
    let task_bytes = mean(&|i| {
        (i.bytes_to_workers as f64 - i.shared_bytes as f64 * i.workers as f64).max(0.0)
            / i.tasks as f64
    });
    let result_bytes = mean(&|i| i.bytes_from_workers as f64 / i.tasks as f64);
    // Medians where one disturbed iteration (a busy machine, a backup copy) would pull a
    // mean far off.
    let iteration_ms = median(steady.iter().map(|i| i.time_ms)).unwrap_or(last.time_ms);
    let measured_ms: f64 = m.iterations.iter().map(|i| i.time_ms).sum();
    let warmup_ms = if finished.len() > 1 {
        (finished[0].time_ms - iteration_ms).max(0.0)
    } else {
        0.0
    };
    Ok(Pilot {
        app: m.app.clone(),
        backend: m.backend.clone(),
        protocol,
        policy: last.policy.parse().ok(),
        policy_name: last.policy.clone(),
        factor: last.factor,
        workers: last.workers.max(1),
        iterations: finished.len(),
        steady_iterations: steady.len(),
        tasks,
        task_mean_ms,
        task_sd_ms: variance.sqrt(),
        worker_speeds: worker_speeds(steady, task_mean_ms, variance.sqrt()),
        task_bytes,
        result_bytes,
        shared_bytes,
        master_ms_per_task: median(steady.iter().map(|i| i.lm_ms / i.tasks as f64)).unwrap_or(0.0),
        mo_ms: median(finished.iter().filter_map(|i| i.mo_ms)),
        k_ms_per_byte: median(finished.iter().filter_map(|i| i.k_ms_per_byte)),
        prefetch: usize::from(
            protocol == Protocol::Async && steady.iter().any(|i| i.prefetched > 0),
        ),
        iteration_ms,
        iteration_spread: (mean(&|i| (i.time_ms - iteration_ms).powi(2))).sqrt() / iteration_ms,
        warmup_ms,
        fixed_ms: (m.total_ms - measured_ms).max(0.0),
        decisions: m.decisions.len(),
        faults: m.failures.len() + steady.iter().map(|i| i.backups).sum::<usize>(),
        command: m.command.clone(),
    })
}

/// The median of finite values, `None` without any.
fn median(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 0 {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}

/// Each worker's mean task time over the steady iterations, weighted by its share of the
/// work; workers that took no part are left out. Without per-worker times, one pooled worker.
fn worker_speeds(steady: &[&IterationMetrics], mean_ms: f64, sd_ms: f64) -> Vec<SimWorker> {
    let pool = steady
        .iter()
        .map(|i| i.worker_task_mean_ms.len())
        .max()
        .unwrap_or(0);
    let mut speeds = Vec::new();
    for w in 0..pool {
        let (mut weight, mut sum, mut sd) = (0.0, 0.0, 0.0);
        for it in steady {
            let Some(&mu) = it.worker_task_mean_ms.get(w) else {
                continue;
            };
            let busy = it.busy_ms.get(w).copied().unwrap_or(0.0);
            if mu > 0.0 && busy > 0.0 {
                weight += busy;
                sum += mu * busy;
                sd += it.worker_task_stddev_ms.get(w).copied().unwrap_or(sd_ms) * busy;
            }
        }
        if weight > 0.0 {
            speeds.push(SimWorker {
                mean_ms: sum / weight,
                sd_ms: sd / weight,
            });
        }
    }
    if speeds.is_empty() {
        speeds.push(SimWorker { mean_ms, sd_ms });
    }
    speeds
}
