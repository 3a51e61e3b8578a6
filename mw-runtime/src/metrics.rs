//! The metrics a run leaves behind (`--metrics PATH`): the JSON contract of `docs/ARCHITECTURE.md` ("What a run leaves behind").

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::measure::{Moments, Observation};

/// Everything measured in one run.
/// `mwgen report` and `mwgen predict` read these same types: a file that lacks a field without
/// a default was written by another version, and is refused rather than read as zeros.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunMetrics {
    /// The program's name.
    pub app: String,
    /// `local` or `mpi`.
    pub backend: String,
    /// Workers started.
    pub pool: usize,
    /// `sync` or `async`.
    pub protocol: String,
    /// Wall time of the whole run, in ms.
    pub total_ms: f64,
    pub iterations: Vec<IterationMetrics>,
    /// Changes of tunables, in the order they took effect.
    #[serde(default)]
    pub decisions: Vec<Decision>,
    /// Chunks whose `do_work` panicked and were re-run elsewhere.
    #[serde(default)]
    pub failures: Vec<Failure>,
    /// What the choice of `nworkers` minimized: `index` or `time`.
    #[serde(default)]
    pub objective: String,
    /// Why: `configured`, or what a parked worker costs on the backend (`parked MPI ranks keep
    /// their allocation`).
    #[serde(default)]
    pub objective_reason: String,
    /// The signal that stopped the run (`"SIGINT"`, `"SIGTERM"`): the iterations are those
    /// that ended before it, `total_ms` the time until the stop. Absent when the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// The program's command line, its name first: what `mwgen predict` turns into the launch
    /// line of a larger run. Empty in metrics written before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
}

/// One iteration: `partition` → every result recovered → `end_iteration`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct IterationMetrics {
    pub index: usize,
    /// Workers that took part (`nworkers`, fewer if workers failed).
    pub workers: usize,
    pub factor: f64,
    pub policy: String,
    /// Tasks `partition` returned.
    pub tasks: usize,
    /// Chunks the policy cut.
    pub chunks: usize,
    /// Wall time of the iteration (`Tt`), in ms.
    pub time_ms: f64,
    /// Total worker processing time (`Tc`), in ms.
    pub tc_ms: f64,
    /// Master processing time in `partition`, `recover` and `end_iteration` (`λm`), in ms.
    pub lm_ms: f64,
    /// Encoded bytes sent to workers (shared parts and chunks).
    pub bytes_to_workers: u64,
    /// Encoded bytes of the workers' answers.
    pub bytes_from_workers: u64,
    /// Load-balance quality `Q = 1 − (1/n)·Σλ_i/Tt`: 0 when every worker is busy all the time.
    pub imbalance: f64,
    /// The model's prediction of `time_ms`, made before the iteration ran.
    pub predicted_ms: Option<f64>,
    /// Task count of each chunk, in the order the chunks were cut.
    pub chunk_sizes: Vec<usize>,
    /// Chunks sent ahead (prefetched) to a worker that still held another.
    #[serde(default)]
    pub prefetched: usize,
    /// Late chunks copied to an idle worker (`--backup-after`); the first answer won.
    #[serde(default)]
    pub backups: usize,
    /// Time taken to save the checkpoint after this iteration (`--checkpoint`), in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_ms: Option<f64>,
    /// Time the master spent spawning workers that joined in this iteration (MPI, with
    /// `--max-workers` above the launched ranks), in ms: part of `time_ms`, left out of what the
    /// tuner measures, since no number of workers explains it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn_ms: Option<f64>,
    /// Processing time of each worker of the pool in this iteration, in ms.
    pub busy_ms: Vec<f64>,
    /// Mean time of one task in this iteration, in ms (`μ`).
    pub task_mean_ms: f64,
    /// Standard deviation of one task's time in this iteration, in ms (`σ`).
    pub task_stddev_ms: f64,
    /// `μ` of each worker of the pool in this iteration (0 for a worker that took no part).
    #[serde(default)]
    pub worker_task_mean_ms: Vec<f64>,
    /// `σ` of each worker of the pool in this iteration.
    #[serde(default)]
    pub worker_task_stddev_ms: Vec<f64>,
    /// `V`: every byte moved, both directions (`bytes_to_workers + bytes_from_workers`).
    #[serde(default)]
    pub volume_bytes: u64,
    /// `α`: the share of `V` sent to the workers.
    #[serde(default)]
    pub alpha: f64,
    /// Bytes of the shared part, sent once to each worker taking part.
    #[serde(default)]
    pub shared_bytes: u64,
    /// `mo`: per-message start-up time estimated by least squares over the transfers of recent
    /// iterations, in ms; `None` until a transfer has been measured.
    #[serde(default)]
    pub mo_ms: Option<f64>,
    /// `k`: per-byte cost estimated with `mo`, in ms per byte.
    #[serde(default)]
    pub k_ms_per_byte: Option<f64>,
    /// Time the tuner spent on this iteration (prediction, model, tunlets), in ms.
    #[serde(default)]
    pub tuning_ms: f64,
}

/// What the engine knows of an iteration beside its [`Observation`]: how it cut and sent the
/// chunks, what it predicted, and what the tuner estimated.
#[derive(Debug)]
pub(crate) struct Measured {
    /// The policy's name (an own policy's too, which `Facts` cannot name).
    pub policy: String,
    pub chunk_sizes: Vec<usize>,
    pub prefetched: usize,
    pub backups: usize,
    pub predicted_ms: Option<f64>,
    /// `mo` and `k` as estimated after the iteration.
    pub link: Option<crate::model::Link>,
    /// Time the tuner spent on the iteration.
    pub tuning: Duration,
}

impl IterationMetrics {
    /// The metrics of one iteration, from what the engine measured.
    pub(crate) fn measured(obs: &Observation, measured: Measured) -> Self {
        let facts = &obs.facts;
        let per_worker =
            |f: fn(&Moments) -> f64| -> Vec<f64> { obs.worker_tasks.iter().map(f).collect() };
        IterationMetrics {
            index: facts.index,
            workers: facts.workers,
            factor: facts.factor,
            policy: measured.policy,
            tasks: facts.tasks,
            chunks: facts.chunks,
            time_ms: facts.time_ms,
            tc_ms: obs.tc_ms,
            lm_ms: obs.lm_ms(),
            bytes_to_workers: obs.bytes_to,
            bytes_from_workers: obs.bytes_from,
            imbalance: obs.imbalance(),
            predicted_ms: measured.predicted_ms,
            chunk_sizes: measured.chunk_sizes,
            prefetched: measured.prefetched,
            backups: measured.backups,
            checkpoint_ms: None,
            spawn_ms: None,
            busy_ms: obs.busy_ms.clone(),
            task_mean_ms: obs.task.mean(),
            task_stddev_ms: obs.task.stddev(),
            worker_task_mean_ms: per_worker(Moments::mean),
            worker_task_stddev_ms: per_worker(Moments::stddev),
            volume_bytes: obs.bytes_to + obs.bytes_from,
            alpha: obs.alpha(),
            shared_bytes: obs.shared_bytes,
            mo_ms: measured.link.map(|l| l.mo_ms),
            k_ms_per_byte: measured.link.map(|l| l.k_ms_per_byte),
            tuning_ms: measured.tuning.as_secs_f64() * 1e3,
        }
    }
}

/// A change of a tunable, with why it was made. Listed under `decisions` in the metrics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The first iteration that runs with the new value, or, for a change made inside an
    /// iteration, that iteration.
    pub iteration: usize,
    /// For a change made inside an iteration: how many of its tasks were done when it was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_done: Option<usize>,
    /// `nworkers`, `factor` or `policy`.
    pub tunable: String,
    /// Value before.
    pub from: serde_json::Value,
    /// Value after.
    pub to: serde_json::Value,
    /// Why: the tuner's reasoning with the model's numbers, `application`, or `external`.
    pub reason: String,
    /// The tuner's decision in a few words, as printed while the run goes on: why in words and
    /// the expected gain (the model's numbers are in `reason` and `details`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    /// The model's prediction of the iteration time with the new value, in ms (tuner only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_ms: Option<f64>,
    /// The measured iteration time the decision was taken on, in ms (tuner only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_ms: Option<f64>,
    /// The inputs and the model's numbers behind a tuner's decision.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
}

/// A chunk whose `do_work` panicked.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[non_exhaustive]
pub struct Failure {
    pub iteration: usize,
    pub worker: usize,
    /// First task of the chunk.
    pub first_task: usize,
    pub tasks: usize,
    pub message: String,
}

impl RunMetrics {
    /// Writes the metrics as pretty-printed JSON, whole or not at all (see
    /// [`write_output`](crate::write_output)): a run killed while writing leaves the previous
    /// file, never a cut one.
    ///
    /// # Errors
    /// When the file cannot be created or written.
    pub fn write(&self, path: &Path) -> Result<()> {
        crate::write_output(path, |out| {
            serde_json::to_writer_pretty(&mut *out, self).map_err(std::io::Error::other)?;
            out.write_all(b"\n")
        })
    }

    /// Reads metrics written by [`write`](RunMetrics::write): a regular file of at most
    /// [`InputKind::Metrics`](crate::InputKind::Metrics)'s limit.
    ///
    /// # Errors
    /// When the file cannot be read (a device, a pipe, too large) or is not metrics JSON.
    pub fn read(path: &Path) -> Result<RunMetrics> {
        let shown = path.display();
        let text = crate::read_input_text(path, crate::InputKind::Metrics).map_err(|e| {
            Error::config(
                format!("error: cannot read the metrics `{shown}`: {e}"),
                "give the file a run wrote with `--metrics PATH`",
            )
        })?;
        serde_json::from_str(&text).map_err(|e| {
            Error::config(
                format!("error: `{shown}` is not a metrics file: {e}"),
                "give the file a run wrote with `--metrics PATH`",
            )
        })
    }
}
