//! The model's inputs: `mo` and `k` by least squares over a sliding window of transfers; the
//! other parameters both as last measured (what the tunlets judge, so that a single odd
//! iteration cannot look persistent) and smoothed by an exponentially weighted moving average
//! (what the prediction of the next iteration uses).

use std::collections::VecDeque;
use std::sync::Arc;

use crate::clock::{self, Instant};
use crate::layout::Layout;
use crate::measure::{Moments, Observation, SentMessage, Transfer};
pub(crate) use crate::model::Link;
use crate::model::broadcast::{self, BroadcastParams};
use crate::model::{self, ModelError, Params};
use crate::protocol::Protocol;

use super::machine::{CoreUse, Machine, Ticks};
use super::queue::{self, Log};

/// Iterations whose transfers the fit of `mo` and `k` uses.
pub(crate) const FIT_WINDOW: usize = 4;
/// Transfers kept per iteration (evenly spread over the iteration's chunks).
pub(crate) const FIT_SAMPLES: usize = 256;
/// Iterations between fits of `k` over its whole range (the others search near the last one).
pub(crate) const WHOLE_SEARCH_EVERY: usize = 8;
/// Weight of the newest iteration in the moving averages.
pub(crate) const EWMA: f64 = 0.5;
/// A fit explaining less of the transfers' variance than this (r²) does not set `k`: message
/// size then says little about transfer time, and `k` keeps its last well-fitted value (or 0).
pub(crate) const MIN_R2: f64 = 0.3;
/// A worker whose rate of tasks lies within this share of the pool's mean counts at the mean:
/// the spread of a few tasks' times, not a slower machine.
pub(crate) const RATE_SPREAD: f64 = 0.1;

/// The per-iteration inputs of the model, per task where the task count may change.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Inputs {
    /// Processing time per task (`Tc/M`), in ms.
    pub task_ms: f64,
    /// Deviation of one task's time, in ms.
    pub task_sd_ms: f64,
    /// Bytes of chunks sent per task (the shared part left out).
    pub to_per_task: f64,
    /// Bytes of answers per task.
    pub from_per_task: f64,
    /// Master time in `recover`, per task, in ms.
    pub recover_per_task_ms: f64,
    /// Master time in `partition` and `end_iteration`, in ms.
    pub serial_ms: f64,
}

impl Inputs {
    /// `λm` for an iteration of `tasks` tasks, in ms.
    pub(super) fn lm_ms(&self, tasks: usize) -> f64 {
        self.serial_ms + self.recover_per_task_ms * tasks as f64
    }
}

/// Everything the tunlets and the prediction need.
#[derive(Debug, Clone, Default)]
pub(crate) struct Estimate {
    window: VecDeque<Log>,
    pub link: Option<Link>,
    /// The last iteration's inputs.
    pub now: Inputs,
    /// The inputs smoothed over recent iterations.
    pub smooth: Inputs,
    /// Bytes of the shared part, sent to each worker taking part.
    pub shared_bytes: f64,
    /// What the model leaves unexplained in the measured time, either way: the tail of the last
    /// chunks, waits the model does not count, master work that overlaps the workers'. Added
    /// to every `Tt(n)`.
    pub calibration_ms: f64,
    /// Per worker of the pool: task-time moments of the last iteration it took part in.
    pub workers: Vec<Moments>,
    /// Workers that took part in the last iteration.
    pub active: usize,
    /// Per worker of the pool: tasks per ms in the last iteration, for those that took part,
    /// and the relative standard error of its mean task time.
    rates: Vec<Option<(f64, f64)>>,
    /// The workers' nodes and their cores, when the backend knows them.
    pub layout: Option<Arc<Layout>>,
    /// Share of the processing time that kept a core busy, as last measured.
    pub cpu_share: Option<f64>,
    /// Share of the processing time spent waiting for a core, as last measured.
    pub wait_share: Option<f64>,
    /// The workers' waits for a core before their chunks over the chunks' processing time, as
    /// last measured.
    pub late_share: Option<f64>,
    /// The machine's processor counts at the last update, and the share of their time stolen
    /// by a hypervisor since the one before (0 when unknown).
    ticks: Option<Ticks>,
    steal: f64,
    /// The master thread's run-queue wait at the last update, and when; and its share of the
    /// wall time since the update before.
    master_wait: Option<(Instant, u64)>,
    master_wait_share: f64,
    /// Iterations observed.
    pub iterations: usize,
}

/// Which expression of the model sheet describes the application.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Variant {
    /// Work and data split among the workers: (7)–(9).
    Balanced(Params),
    /// The shared part, sent whole to every worker, dominates what is sent: POETRIES' (5)–(8).
    Broadcast(BroadcastParams),
}

impl Variant {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Variant::Balanced(_) => "balanced",
            Variant::Broadcast(_) => "broadcast",
        }
    }

    /// `Tt(n)`, in ms.
    pub(super) fn time(&self, n: usize, protocol: Protocol) -> Result<f64, ModelError> {
        match self {
            Variant::Balanced(p) => model::iteration_time(p, n, protocol),
            Variant::Broadcast(p) => broadcast::iteration_time(p, n),
        }
    }

    /// The same model with `Tc` = `tc_ms`.
    pub(super) fn with_tc(self, tc_ms: f64) -> Variant {
        match self {
            Variant::Balanced(p) => Variant::Balanced(Params { tc_ms, ..p }),
            Variant::Broadcast(p) => Variant::Broadcast(BroadcastParams { tc_ms, ..p }),
        }
    }

    /// `Tc`, in ms.
    pub(super) fn tc_ms(&self) -> f64 {
        match self {
            Variant::Balanced(p) => p.tc_ms,
            Variant::Broadcast(p) => p.tc_ms,
        }
    }

    /// The MCMC: the most workers the master can feed (`None`: no limit).
    pub(super) fn mcmc(&self, protocol: Protocol) -> Option<usize> {
        match self {
            Variant::Balanced(p) => model::mcmc(p, protocol).ok().flatten(),
            Variant::Broadcast(p) => broadcast::mcmc(p).ok().flatten(),
        }
    }
}

impl Estimate {
    /// Nothing measured yet, with the workers on the machines of `layout` when known.
    /// Called on the master's thread: its run-queue wait counts from here, so that the first
    /// look already knows whether the master waited for a core.
    pub(super) fn on(layout: Option<Layout>) -> Estimate {
        Estimate {
            layout: layout.map(Arc::new),
            ticks: Ticks::now(),
            master_wait: clock::thread_run_delay().map(|delay| (clock::now(), delay)),
            ..Estimate::default()
        }
    }

    /// Nothing measured yet, on a synthetic machine of `layout` whose master thread never
    /// waits for a core and whose processors are never stolen.
    #[cfg(test)]
    pub(crate) fn synthetic(layout: Layout) -> Estimate {
        Estimate {
            layout: Some(Arc::new(layout)),
            ..Estimate::default()
        }
    }

    /// Folds in one iteration; returns the share of its time the model did not explain.
    pub(super) fn update(&mut self, obs: &Observation, protocol: Protocol) -> f64 {
        let tasks = obs.facts.tasks.max(1) as f64;
        let n = obs.active as f64;
        let shared_total = obs.shared_bytes as f64 * n;
        let chunk_bytes = (obs.bytes_to as f64 - shared_total).max(0.0);
        let first = self.iterations == 0;
        let mix = |old: f64, new: f64| {
            if first {
                new
            } else {
                EWMA * new + (1.0 - EWMA) * old
            }
        };
        self.now = Inputs {
            task_ms: obs.tc_ms / tasks,
            task_sd_ms: obs.task.stddev(),
            to_per_task: chunk_bytes / tasks,
            from_per_task: obs.bytes_from as f64 / tasks,
            recover_per_task_ms: obs.recover_ms / tasks,
            serial_ms: obs.serial_ms,
        };
        let (old, now) = (self.smooth, self.now);
        self.smooth = Inputs {
            task_ms: mix(old.task_ms, now.task_ms),
            task_sd_ms: mix(old.task_sd_ms, now.task_sd_ms),
            to_per_task: mix(old.to_per_task, now.to_per_task),
            from_per_task: mix(old.from_per_task, now.from_per_task),
            recover_per_task_ms: mix(old.recover_per_task_ms, now.recover_per_task_ms),
            serial_ms: mix(old.serial_ms, now.serial_ms),
        };
        self.shared_bytes = obs.shared_bytes as f64;
        self.active = obs.active;
        if obs.cpu_share.is_some() {
            self.cpu_share = obs.cpu_share;
        }
        if obs.wait_share.is_some() {
            self.wait_share = obs.wait_share;
        }
        if obs.late_share.is_some() {
            self.late_share = obs.late_share;
        }
        let ticks = Ticks::now();
        if let Some(steal) = ticks
            .zip(self.ticks)
            .and_then(|(now, then)| now.steal_since(&then))
        {
            self.steal = steal;
        }
        self.ticks = ticks.or(self.ticks);
        if let Some(delay) = clock::thread_run_delay() {
            let now = clock::now();
            if let Some((then, before)) = self.master_wait {
                let wall = now.saturating_duration_since(then).as_nanos() as f64;
                if wall > 0.0 {
                    self.master_wait_share = delay.saturating_sub(before) as f64 / wall;
                }
            }
            self.master_wait = Some((now, delay));
        }
        self.workers
            .resize(obs.worker_tasks.len(), Moments::default());
        for (slot, moments) in self.workers.iter_mut().zip(&obs.worker_tasks) {
            if moments.count() > 0 {
                *slot = *moments;
            }
        }
        self.rates = obs
            .worker_tasks
            .iter()
            .map(|m| {
                let (count, mean) = (m.count() as f64, m.mean());
                (count > 0.0 && mean > 0.0).then(|| (1.0 / mean, m.stddev() / mean / count.sqrt()))
            })
            .collect();
        self.fit(&obs.sends, &obs.transfers);
        // The unexplained rest, from this iteration's own numbers at the n it ran with. An
        // iteration whose settings changed midway ran with no single n: it calibrates nothing.
        let rest = self
            .variant_for(obs.tc_ms, chunk_bytes, obs.bytes_from as f64, obs.lm_ms())
            .time(obs.active, protocol)
            .map_or(0.0, |model| obs.facts.time_ms - model);
        if !obs.facts.mixed {
            self.calibration_ms = mix(self.calibration_ms, rest);
        }
        self.iterations += 1;
        if obs.facts.time_ms > 0.0 {
            rest / obs.facts.time_ms
        } else {
            0.0
        }
    }

    /// Refits `mo` and `k` over the window. Each transfer holds two messages (the chunk and its
    /// answer), so the fitted intercept is `2·mo`. When all transfers have the same size, `k`
    /// keeps its last value and `mo` follows the mean.
    fn fit(&mut self, sends: &[SentMessage], transfers: &[Transfer]) {
        let stride = transfers.len().div_ceil(FIT_SAMPLES).max(1);
        let kept: Vec<Transfer> = transfers.iter().step_by(stride).copied().collect();
        if kept.is_empty() {
            return;
        }
        self.window.push_back(Log::new(sends, kept));
        while self.window.len() > FIT_WINDOW {
            self.window.pop_front();
        }
        let samples: Vec<(f64, f64)> = self
            .window
            .iter()
            .flat_map(|log| &log.transfers)
            .map(|t| (t.bytes, t.ms))
            .collect();
        // Near the last fit's `k`, with the whole range searched now and then in case the
        // error has a deeper minimum far from it.
        let near = self
            .link
            .filter(|l| l.fitted && self.iterations % WHOLE_SEARCH_EVERY != 0)
            .map(|l| l.k_ms_per_byte);
        self.link = Some(match queue::fit(self.window.make_contiguous(), near) {
            Some(fit) if fit.r2 >= MIN_R2 => Link {
                mo_ms: fit.mo_ms / 2.0,
                k_ms_per_byte: fit.k_ms_per_byte,
                samples: fit.samples,
                fitted: true,
            },
            _ => {
                let last = self.link.filter(|l| l.fitted);
                let k = last.map_or(0.0, |l| l.k_ms_per_byte);
                let mean =
                    samples.iter().map(|&(b, t)| t - k * b).sum::<f64>() / samples.len() as f64;
                Link {
                    mo_ms: (mean / 2.0).max(0.0),
                    k_ms_per_byte: k,
                    samples: samples.len(),
                    fitted: last.is_some(),
                }
            }
        });
    }

    /// The model for an iteration of `tasks` tasks with the given inputs.
    pub(super) fn variant(&self, inputs: &Inputs, tasks: usize) -> Variant {
        let m = tasks as f64;
        self.variant_for(
            inputs.task_ms * m,
            inputs.to_per_task * m,
            inputs.from_per_task * m,
            inputs.lm_ms(tasks),
        )
    }

    /// The calibrated model time: `Tt(n)` plus [`calibration_ms`](Estimate::calibration_ms),
    /// never below a microsecond.
    pub(super) fn time(&self, variant: &Variant, n: usize, protocol: Protocol) -> Option<f64> {
        variant
            .time(n, protocol)
            .ok()
            .map(|t| (t + self.calibration_ms).max(1e-3))
            .filter(|t| t.is_finite())
    }

    /// The broadcast variant when the shared part, sent whole to each of the workers that took
    /// part last, is at least as large as the chunks; the balanced one otherwise, its volume
    /// counting the shared part as last sent.
    fn variant_for(&self, tc: f64, chunk_bytes: f64, result_bytes: f64, lm: f64) -> Variant {
        let (mo, k) = self.link.map_or((0.0, 0.0), |l| (l.mo_ms, l.k_ms_per_byte));
        let tc = tc.max(f64::MIN_POSITIVE);
        let shared_total = self.shared_bytes * self.active.max(1) as f64;
        if self.shared_bytes > 0.0 && shared_total >= chunk_bytes {
            Variant::Broadcast(BroadcastParams {
                tc_ms: tc,
                shared_bytes: self.shared_bytes,
                result_bytes: result_bytes + chunk_bytes,
                mo_ms: mo,
                k_ms_per_byte: k,
                lm_ms: lm,
            })
        } else {
            let sent = chunk_bytes + shared_total;
            let volume = sent + result_bytes;
            Variant::Balanced(Params {
                tc_ms: tc,
                volume_bytes: volume,
                alpha: if volume > 0.0 { sent / volume } else { 0.5 },
                mo_ms: mo,
                k_ms_per_byte: k,
                lm_ms: lm,
            })
        }
    }

    /// The machine model at the last measurement, when the layout and the CPU share are known.
    /// Steal is read on the master's machine: it counts when the workers run there too.
    pub(super) fn machine(&self) -> Option<Machine> {
        let layout = self.layout.as_ref()?;
        let used = CoreUse {
            cpu: self.cpu_share?,
            wait: self.wait_share,
            steal: if layout.nodes() == 1 { self.steal } else { 0.0 },
            // The master late to take answers and send chunks, or the workers late to start
            // them: waits outside the tasks.
            late: self.late_share.unwrap_or(0.0).max(self.master_wait_share),
        };
        Machine::measured(layout, self.active, self.now.task_ms, used)
    }

    /// How much longer tasks take with `n` workers than with the `active` ones measured: 1
    /// without a machine model.
    pub(super) fn stretch(&self, n: usize) -> f64 {
        self.machine()
            .map_or(1.0, |m| m.stretch(n, self.active.max(1)))
    }

    /// How much longer the first `n` workers take to get through the tasks than the `active`
    /// ones measured would at `n` of them: `(n/a)·R(a)/R(n)`, `R(n)` the sum of the first `n`
    /// workers' rates (the engine activates the lowest-numbered first). Self-scheduling gives
    /// each worker tasks at its own pace, so under a load on some machines (the papers' load
    /// generator) the worker added or removed is not one of the mean: from 7 workers of which 4
    /// are loaded to 4 times their task time, an 8th unloaded one adds a quarter of the pool's
    /// rate, a 7th loaded one a sixteenth. A worker not measured in the last iteration counts at
    /// the mean rate, and so does one within [`RATE_SPREAD`] of it or within twice the standard
    /// error of its own mean (a few tasks at a checkpoint); 1 when fewer than two workers were
    /// measured.
    pub(super) fn pace(&self, n: usize) -> f64 {
        let (count, total) = self
            .rates
            .iter()
            .flatten()
            .fold((0usize, 0.0), |(c, s), (r, _)| (c + 1, s + r));
        if count < 2 || total <= 0.0 || total.is_nan() {
            return 1.0;
        }
        let mean = total / count as f64;
        let rate = |i: usize| match self.rates.get(i).copied().flatten() {
            Some((r, se)) if (r / mean - 1.0).abs() > RATE_SPREAD.max(2.0 * se) => r,
            _ => mean,
        };
        let sum = |n: usize| (0..n).map(rate).sum::<f64>();
        let a = self.active.max(1);
        let (now, then) = (sum(a), sum(n.max(1)));
        if now > 0.0 && then > 0.0 {
            (n.max(1) as f64 / a as f64) * now / then
        } else {
            1.0
        }
    }

    /// The model of an iteration of `tasks` tasks with the given inputs run on `n` workers:
    /// [`variant`](Estimate::variant) with `Tc` stretched by the cores' contention at `n` and by
    /// the workers' own rates ([`pace`](Estimate::pace)).
    pub(super) fn variant_at(&self, inputs: &Inputs, tasks: usize, n: usize) -> Variant {
        let variant = self.variant(inputs, tasks);
        let stretch = self.stretch(n) * self.pace(n);
        if stretch == 1.0 {
            variant
        } else {
            variant.with_tc(variant.tc_ms() * stretch)
        }
    }

    /// The predicted time of an iteration of `tasks` tasks on `n` workers, from the smoothed
    /// inputs, in ms.
    pub(super) fn predict(&self, tasks: usize, n: usize, protocol: Protocol) -> Option<f64> {
        if self.iterations == 0 || tasks == 0 {
            return None;
        }
        let n = n.clamp(1, tasks);
        self.time(&self.variant_at(&self.smooth, tasks, n), n, protocol)
    }
}

impl Estimate {
    /// Whether `worker` took part in the iteration last looked at.
    pub(crate) fn took_part(&self, worker: usize) -> bool {
        self.rates.get(worker).is_some_and(Option::is_some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(active: usize, rates: &[f64]) -> Estimate {
        Estimate {
            active,
            rates: rates
                .iter()
                .map(|&r| Some((r, 0.01)))
                .chain([None; 4])
                .collect(),
            ..Estimate::default()
        }
    }

    #[test]
    fn a_loaded_worker_adds_less_than_the_mean() {
        // 7 workers, the even ones loaded to 4 times their task time: 4 tasks per ms in all.
        let est = measured(7, &[0.25, 1.0, 0.25, 1.0, 0.25, 1.0, 0.25]);
        assert!((est.pace(7) - 1.0).abs() < 1e-12);
        // Without worker 6 (loaded), the pool loses a sixteenth of its rate, not a seventh.
        let six = (6.0 / 7.0) * 4.0 / 3.75;
        assert!((est.pace(6) - six).abs() < 1e-12, "{}", est.pace(6));
        // Worker 7 was not measured: it counts at the mean.
        let eight = (8.0 / 7.0) * 4.0 / (4.0 + 4.0 / 7.0);
        assert!((est.pace(8) - eight).abs() < 1e-12, "{}", est.pace(8));
    }

    #[test]
    fn the_workers_that_took_part_are_simulated_first() {
        // Worker 0 was lost with slow tasks measured; workers 1 and 2 took its place.
        let mut est = measured(2, &[0.0, 1.0, 1.0]);
        est.rates[0] = None;
        est.workers = vec![
            Moments::from_sums(10, 40.0, 160.0),
            Moments::from_sums(10, 10.0, 10.0),
            Moments::from_sums(10, 10.0, 10.0),
        ];
        let two = super::super::factor::sim_workers(&est, 2);
        assert!(two.iter().all(|w| w.mean_ms == 1.0), "{two:?}");
        // Beyond them, the others as last measured.
        let three = super::super::factor::sim_workers(&est, 3);
        assert_eq!(three[2].mean_ms, 4.0);
    }

    #[test]
    fn workers_alike_within_the_spread_are_the_mean() {
        let est = measured(3, &[1.0, 1.05, 0.97]);
        for n in 1..=6 {
            assert!((est.pace(n) - 1.0).abs() < 1e-12, "{n}: {}", est.pace(n));
        }
        // A worker of a few tasks is the mean unless it differs beyond its standard error.
        let mut few = measured(2, &[1.0, 0.7]);
        few.rates[..2].copy_from_slice(&[Some((1.0, 0.2)), Some((0.7, 0.2))]);
        assert_eq!(few.pace(1), 1.0);
        // Measured well, worker 0 alone does its tasks faster than the pool's mean.
        few.rates[..2].copy_from_slice(&[Some((1.0, 0.05)), Some((0.7, 0.05))]);
        assert!((few.pace(1) - 0.85).abs() < 1e-12, "{}", few.pace(1));
        // Fewer than two measured workers: nothing to compare.
        assert_eq!(measured(1, &[0.25]).pace(4), 1.0);
    }
}
