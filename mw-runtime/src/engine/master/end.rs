//! The end of an iteration (its measurements, the tuner's turn, the metrics) and of a run
//! (the trace written, the workers stopped), also when a signal stopped it.

use std::time::Duration;

use crate::app::{Iteration, Master};
use crate::clock::{self, Instant};
use crate::error::Result;
use crate::measure::Facts;
use crate::metrics::{IterationMetrics, Measured};
use crate::transport::{FromWorker, MasterLink, ToWorker};
use crate::tuning::control::Status;

use super::{Engine, Round, ms};

impl<M, L> Engine<'_, M, L>
where
    M: Master,
    L: MasterLink<M::Task, M::Shared, M::Result>,
{
    /// Derives the iteration's measurements, lets the tuner act on them, and records the
    /// metrics.
    pub(super) fn record(
        &mut self,
        it: &Iteration,
        round: Round<M>,
        elapsed: Duration,
        predicted_ms: Option<f64>,
    ) {
        let tasks = round.produced;
        let joining = round.joining;
        let elapsed = elapsed.saturating_sub(joining);
        let facts = Facts {
            index: it.index,
            workers: it.workers,
            factor: it.factor,
            policy: self.policy_name.clone(),
            tasks,
            chunks: round.chunk_sizes.len(),
            time_ms: ms(elapsed),
            mixed: round.mixed,
        };
        // Deriving the measurements counts as the tuner's time too.
        let tuning_started = clock::now();
        let obs = round.probe.observe(facts);
        let current = self.tunables.current();
        let healthy = self.healthy.iter().filter(|&&h| h).count();
        self.tuner
            .observe(&obs, &current, healthy, &self.stats, &self.tunables);
        let tuning = round.tuning + clock::since(tuning_started);
        self.stats.end_iteration();
        self.metrics.iterations.push(IterationMetrics::measured(
            &obs,
            Measured {
                policy: self.policy.name().to_owned(),
                chunk_sizes: round.chunk_sizes,
                prefetched: round.prefetched,
                backups: round.backups,
                predicted_ms,
                link: self.tuner.link(),
                tuning,
            },
        ));
        if let (false, Some(last)) = (joining.is_zero(), self.metrics.iterations.last_mut()) {
            last.spawn_ms = Some(ms(joining));
            last.time_ms += ms(joining);
        }
        if let Some(control) = &self.control {
            control.publish(&Status {
                iteration: it.index,
                tunables: current,
                time_ms: obs.facts.time_ms,
                predicted_ms,
            });
        }
    }

    /// Writes `--trace`, if asked for; when the run failed, a failure to write is only a warning.
    pub(super) fn write_trace(&self, run_ok: bool) -> Result<()> {
        let Some(path) = &self.config.trace else {
            return Ok(());
        };
        if self.trace.dropped() > 0 {
            eprintln!(
                "warning: the trace holds the beginning of the run, {} events; {} later slices \
                 were dropped (raise --trace-limit to keep more)",
                self.config.trace_limit,
                self.trace.dropped()
            );
        }
        match self.trace.write(path, &self.metrics) {
            Err(e) if !run_ok => {
                eprintln!("warning: {e}");
                Ok(())
            }
            written => written,
        }
    }

    /// Ends a run stopped by `signal`: what ran is written as if the run had ended there, and
    /// only then are the workers stopped. A worker still busy is left behind (a thread) or ended
    /// (a rank) [`SIGNAL_PATIENCE`] later, and a launcher without recovery then ends the whole
    /// job, this process with it; the launcher also kills the ranks soon after passing a signal
    /// on. So the metrics of an interrupted run are written here, before MPI is finalized, not
    /// by the caller, and `final_work` does not run.
    pub(super) fn end_interrupted(&mut self, signal: &str, started: Instant) -> Result<()> {
        self.progress.finish();
        self.metrics.interrupted = Some(signal.to_owned());
        self.metrics.total_ms = ms(clock::since(started));
        self.write_trace(true)?;
        if let Some(path) = &self.config.metrics {
            self.metrics.write(path)?;
        }
        // Its error (a worker that cannot be told) changes nothing of a run already ended.
        let _ = self.shutdown(false, true);
        Ok(())
    }

    /// Tells every worker to stop and waits for each to finish `final_work`. After a run that
    /// `completed`, workers still busy with chunks (answered by copies) are waited for first
    /// (under `sync` a `Stop` would wait for them), as long as such a chunk may take before it
    /// counts as late (under MPI without recovery, as long as a worker may be silent); then
    /// they are left behind. Lost workers are not waited for at all.
    pub(super) fn shutdown(&mut self, completed: bool, interrupted: bool) -> Result<()> {
        // After a failure the chunks out are not waited for: their answers are dropped.
        if completed {
            self.wait_for_late()?;
        }
        let alive: Vec<bool> = self.standing.iter().map(|s| !s.lost).collect();
        // Stopped by a signal, the run ends within a second whatever the tasks are doing: a
        // worker still busy with a chunk is left behind (a thread) or ended (a rank).
        let patience = match interrupted {
            true => SIGNAL_PATIENCE,
            false => self.config.faults.liveness,
        };
        stop_alive(self.link, &alive, patience)
    }
}

/// Tells every worker of `link` to stop and waits for each to finish `final_work`: at the end
/// of a run, and after the master panicked, when no engine is left to do it.
#[cfg(feature = "mpi")]
pub(crate) fn stop_workers<T, S, R>(link: &mut impl MasterLink<T, S, R>) -> Result<()> {
    let alive = vec![true; link.pool()];
    stop_alive(link, &alive, STOP_PATIENCE)
}

/// How long the end of a run stopped by a signal waits for the workers to finish.
const SIGNAL_PATIENCE: Duration = Duration::from_millis(500);

/// How long the end of a run waits for workers to finish, unless told otherwise.
#[cfg(feature = "mpi")]
const STOP_PATIENCE: Duration = Duration::from_secs(60);

/// Tells the `alive` workers of `link` to stop and waits for each to finish `final_work`, for
/// `patience` at most: one that has not finished by then is left behind with a warning.
fn stop_alive<T, S, R>(
    link: &mut impl MasterLink<T, S, R>,
    alive: &[bool],
    patience: Duration,
) -> Result<()> {
    let mut first_error = None;
    let mut waiting = alive.to_vec();
    for worker in (0..waiting.len()).filter(|&w| waiting[w]) {
        if let Err(e) = link.send(worker, ToWorker::Stop) {
            first_error.get_or_insert(e);
        }
    }
    let deadline = clock::now() + patience;
    while waiting.contains(&true) {
        let left = deadline.saturating_duration_since(clock::now());
        if left.is_zero() {
            for worker in (0..waiting.len()).filter(|&w| waiting[w]) {
                eprintln!(
                    "warning: worker {worker} did not finish within {:.1} s of being told to \
                     stop; it is left behind",
                    patience.as_secs_f64()
                );
                link.forsake(worker);
            }
            break;
        }
        match link.recv_within(left) {
            Ok(Some((worker, FromWorker::Finished { error }))) => {
                if let Some(w) = waiting.get_mut(worker) {
                    *w = false;
                }
                if let Some(e) = error {
                    eprintln!("warning: worker {worker}: final_work failed: {e}");
                }
            }
            Ok(Some((worker, FromWorker::Lost { .. }))) => {
                if let Some(w) = waiting.get_mut(worker) {
                    *w = false;
                }
            }
            // Answers to chunks of an iteration that failed midway, and `Ready`s the master
            // never took: dropped, never recovered.
            Ok(Some(_) | None) => {}
            Err(e) => {
                first_error.get_or_insert(e);
                break;
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}
