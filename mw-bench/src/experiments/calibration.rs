//! The model's `mo` and `k` from calibration runs, for the model validation.
//!
//! In the validation every worker gets one chunk of one size (`static`), so within a run the
//! bytes of a trip never vary: the runtime tells `k` only from the queues its messages wait in.
//! Across runs at other `n` the bytes vary, but with the tasks per chunk, so a cost per task
//! reads as bandwidth. So the calibration runs each `n` at several volumes (the same chunking,
//! more bytes per task), and `k` is read from how the iteration time grows with the volume at
//! one `n`: by the model's own expressions (7)–(9), `Tt − Tc/n − λm − start-ups` is `k` times
//! `((n−1)·α + 1)·V/n` (or `V/n` when latency-bound), so the slope between two runs at one `n`
//! and in one regime is `k`; the median over such pairs (Theil–Sen's line: one run slowed by
//! other work on the machine does not tilt it), of bandwidth-bound runs wherever there are some,
//! since between latency-bound ones `V/n` differs too little to tell `k` from noise.
//! Yalçınkaya and Steihaug estimate latency and bandwidth the same way, by least squares of
//! measured times against the model. The runtime's own trips would
//! not do: under `sync`, once the master's sends outlast a worker's computing, the master takes
//! the first answers late, and their trips grow with the volume beyond the link's cost (at 10
//! workers and 2,222 bytes per task, 41 ms where the link charges 26), which no fit of one
//! run's trips can tell from bandwidth. `mo` comes from those trips at the case's own volume,
//! where the master keeps up: half the median of what `k` leaves of them, each run's trip being
//! the time the runtime's last fit gives one chunk and its answer, `2·mo + k·bytes` (where its
//! line passes through its measured trips, the queues' waits taken out, whatever share it gave
//! `mo` and `k`). Across a real network stack the trips can miss what a message costs the
//! iteration (the master's own share, the waits of processes that share its cores):
//! `startups_from_times` fits `mo` to the iteration times of the calibration runs instead.

use mw_runtime::model::Params;
use mw_runtime::{Protocol, RunMetrics};

use crate::ideal::median;

/// One run of the validation: median iteration time, median `λm`, the runtime's last fitted
/// trip, the volume, `α` and the drawn task time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Observed {
    pub workers: usize,
    pub time_ms: f64,
    pub lm_ms: f64,
    /// Bytes of one trip (a chunk and its answer) and its time by the runtime's last fit, in ms.
    pub trip: Option<(f64, f64)>,
    pub volume_bytes: f64,
    pub alpha: f64,
    pub tc_ms: f64,
}

impl Observed {
    /// A run's numbers from its metrics, with `tc_ms` the task time it drew.
    pub fn from_metrics(metrics: &RunMetrics, tc_ms: f64) -> Observed {
        let its = &metrics.iterations;
        let last = its.last();
        let trip = its.iter().rev().find_map(|i| {
            let (mo, k) = (i.mo_ms?, i.k_ms_per_byte?);
            let bytes = (i.bytes_to_workers + i.bytes_from_workers) as f64 / i.chunks.max(1) as f64;
            Some((bytes, 2.0 * mo + k * bytes))
        });
        Observed {
            workers: last.map_or(0, |i| i.workers),
            time_ms: median(&its.iter().map(|i| i.time_ms).collect::<Vec<_>>()),
            lm_ms: median(&its.iter().map(|i| i.lm_ms).collect::<Vec<_>>()),
            trip,
            volume_bytes: last.map_or(0.0, |i| i.volume_bytes as f64),
            alpha: last.map_or(0.5, |i| i.alpha),
            tc_ms,
        }
    }
}

/// The slope of `time = intercept + slope·bytes` through `points`, each of a group (its
/// worker count, say), by Theil–Sen: the median slope over the pairs of points of one group
/// whose bytes differ by more than 1 %, at least 0. `None` without such a pair.
pub(crate) fn slope<G: PartialEq + Copy>(points: &[(G, f64, f64)]) -> Option<f64> {
    let mut slopes = Vec::new();
    for (i, &(g0, x0, y0)) in points.iter().enumerate() {
        for &(g1, x1, y1) in &points[i + 1..] {
            if g0 == g1 && (x1 - x0).abs() > 0.01 * x0.abs().max(x1.abs()) {
                slopes.push((y1 - y0) / (x1 - x0));
            }
        }
    }
    (!slopes.is_empty()).then(|| median(&slopes).max(0.0))
}

/// What the model multiplies `k` by in a run's `Tt` (bytes), how many message start-ups it
/// charges that run (`mo` each), and whether it is latency-bound, at `mo` and `k`: expressions
/// (7)–(9), the regime of (7)/(8) decided with them (bandwidth-bound while `k` is unknown).
fn terms(o: &Observed, protocol: Protocol, mo: f64, k: Option<f64>) -> (f64, f64, bool) {
    let n = o.workers.max(1) as f64;
    let spread = ((n - 1.0) * o.alpha + 1.0) * o.volume_bytes / n;
    match protocol {
        Protocol::Sync => (spread, n + 1.0, false),
        Protocol::Async if k.is_some_and(|k| mo >= k * o.alpha * o.volume_bytes / n) => {
            (o.volume_bytes / n, n + 1.0, true)
        }
        Protocol::Async => (spread, 2.0, false),
    }
}

/// `params` with `mo` fitted to the iteration times of `runs` (calibration runs at the case's
/// volume) rather than taken from the runtime's trips: the least-squares `mo` of the runs'
/// relative errors, the measure the model is judged by, `Σ(c·r/T²) / Σ(c²/T²)` with `T` a run's
/// `Tt`, `c` the start-ups the model charges it and `r` what the model leaves of `T` at
/// `params`' `k` and `λm` without them; the regime (and so `c`) found again with each new `mo`
/// until it settles. The runs where start-ups are much of `Tt` (many workers) weigh most; where
/// they are a sliver of it, a task time drawn a little short reads as many start-ups. Where
/// messages cost the master, or the processes that share its cores, more than the wire's
/// latency, the trips do not show it and the iteration times do.
pub(crate) fn startups_from_times(
    params: &Params,
    runs: &[Observed],
    protocol: Protocol,
) -> Params {
    let k = params.k_ms_per_byte;
    let mut mo = params.mo_ms;
    for _ in 0..16 {
        let (mut cross, mut square) = (0.0, 0.0);
        for o in runs.iter().filter(|o| o.time_ms > 0.0) {
            let (bytes, startups, _) = terms(o, protocol, mo, Some(k));
            let rest = communication(o, params.lm_ms) - k * bytes;
            let weight = 1.0 / (o.time_ms * o.time_ms);
            cross += weight * startups * rest;
            square += weight * startups * startups;
        }
        let next = if square > 0.0 {
            (cross / square).max(0.0)
        } else {
            mo
        };
        if (next - mo).abs() <= 1e-9 {
            break;
        }
        mo = next;
    }
    Params {
        mo_ms: mo,
        ..*params
    }
}

/// What the model leaves of run `o`'s `Tt` for its messages, `(n+1)·mo + k·bytes`: the time
/// less the computation over the workers (`Tc/n`) and the master's own time `lm_ms`. Both fits
/// share it, so that they split the same remainder between `mo` and `k`.
fn communication(o: &Observed, lm_ms: f64) -> f64 {
    o.time_ms - o.tc_ms / o.workers.max(1) as f64 - lm_ms
}

/// Half the median of what `k` leaves of the trips of `runs`, at least 0 (0 without trips).
fn latency(runs: &[Observed], k: f64) -> f64 {
    let rests: Vec<f64> = runs
        .iter()
        .filter_map(|o| o.trip.map(|(bytes, ms)| ms - k * bytes))
        .collect();
    if rests.is_empty() {
        0.0
    } else {
        (median(&rests) / 2.0).max(0.0)
    }
}

/// The model's parameters: `k` the [`slope`] of the iteration times of `runs` (every volume)
/// against what the model multiplies it by, `mo` from the trips of `at_volume` (the runs at the
/// case's own volume), the two refined in turn (the regime of each run depends on both); `λm`
/// the median over `at_volume`, `Tc`, `V` and `α` those of its first run. `None` without runs
/// at the case's volume or without two volumes at one `n`.
pub(crate) fn calibrated(
    at_volume: &[Observed],
    runs: &[Observed],
    protocol: Protocol,
) -> Option<Params> {
    let first = at_volume.first()?;
    let (mut mo, mut k) = (latency(at_volume, 0.0), None);
    for _ in 0..3 {
        // `k` from the bandwidth-bound runs, the latency-bound ones only where there are no
        // others. Where latency binds, the emulated link's latency overlaps between messages
        // sent together while (7) charges `(n+1)·mo`, and the bytes `k` multiplies, `V/n`,
        // differ by little between volumes: a fraction of a millisecond of noise there
        // reads as a slope many times the link's, and such pairs tilt the median upwards.
        let points: Vec<(bool, (usize, f64, f64))> = runs
            .iter()
            .map(|o| {
                let (bytes, startups, latency_bound) = terms(o, protocol, mo, k);
                let rest = communication(o, o.lm_ms) - startups * mo;
                (latency_bound, (o.workers, bytes, rest))
            })
            .collect();
        let regime = |latency_bound: bool| -> Vec<(usize, f64, f64)> {
            points
                .iter()
                .filter(|(bound, _)| *bound == latency_bound)
                .map(|&(_, point)| point)
                .collect()
        };
        let fitted = slope(&regime(false)).or_else(|| slope(&regime(true)))?;
        k = Some(fitted);
        mo = latency(at_volume, fitted);
    }
    let k = k?;
    Some(Params {
        tc_ms: first.tc_ms,
        volume_bytes: first.volume_bytes,
        alpha: first.alpha.clamp(0.0, 1.0),
        mo_ms: mo,
        k_ms_per_byte: k,
        lm_ms: median(&at_volume.iter().map(|o| o.lm_ms).collect::<Vec<_>>()).max(0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mo_is_fitted_to_the_iteration_times_where_the_trips_miss_it() {
        // Runs of a model whose messages cost 0.08 ms each, most of them latency-bound, whose
        // trips the runtime fitted at no start-up at all.
        let real = Params {
            tc_ms: 100.0,
            volume_bytes: 1e4,
            alpha: 0.5,
            mo_ms: 0.08,
            k_ms_per_byte: 8e-5,
            lm_ms: 0.05,
        };
        let runs: Vec<Observed> = [2, 4, 8, 16, 32, 40]
            .into_iter()
            .map(|n| Observed {
                workers: n,
                time_ms: mw_runtime::model::iteration_time(&real, n, Protocol::Async).unwrap(),
                lm_ms: real.lm_ms,
                trip: Some((100.0, 8e-5 * 100.0)),
                volume_bytes: real.volume_bytes,
                alpha: real.alpha,
                tc_ms: real.tc_ms,
            })
            .collect();
        let from_trips = Params { mo_ms: 0.0, ..real };
        let fitted = startups_from_times(&from_trips, &runs, Protocol::Async);
        assert!((fitted.mo_ms - 0.08).abs() < 1e-9, "{fitted:?}");
        let the_rest_kept = Params {
            mo_ms: real.mo_ms,
            ..fitted
        };
        assert_eq!(the_rest_kept, real);
        // Under sync every run pays n + 1 start-ups, whatever `mo`.
        let sync: Vec<Observed> = runs
            .iter()
            .map(|o| Observed {
                time_ms: mw_runtime::model::iteration_time(&real, o.workers, Protocol::Sync)
                    .unwrap(),
                ..*o
            })
            .collect();
        let fitted = startups_from_times(&from_trips, &sync, Protocol::Sync);
        assert!((fitted.mo_ms - 0.08).abs() < 1e-9, "{fitted:?}");
    }

    #[test]
    fn the_slope_ignores_one_run_far_off() {
        // 0.1 ms a message, 8e-5 ms a byte, at 2 and 4 workers; one run was slowed 3 ms by
        // other work.
        let exact = |b: f64| 0.2 + 8e-5 * b;
        let mut points: Vec<(usize, f64, f64)> = [(2, 5e3), (2, 2e4), (2, 8e4), (4, 3e3), (4, 1e4)]
            .iter()
            .map(|&(n, b)| (n, b, exact(b)))
            .collect();
        points.extend([(4, 4e4, exact(4e4) + 3.0)]);
        let k = slope(&points).unwrap();
        assert!((k / 8e-5 - 1.0).abs() < 1e-9, "{k}");
        // A straight least-squares line would have been pulled off by the slow run.
        let line: Vec<(f64, f64)> = points.iter().map(|&(_, b, t)| (b, t)).collect();
        let ls = mw_runtime::model::fit_latency_bandwidth(&line).unwrap();
        assert!((ls.k_ms_per_byte / 8e-5 - 1.0).abs() > 0.1, "{ls:?}");
    }

    #[test]
    fn the_slope_is_taken_at_one_worker_count_only() {
        // A cost per task: at 2 workers chunks carry twice the tasks and bytes of 4 workers',
        // and take 1 ms more. Across counts that reads as bandwidth; at one count it does not.
        let points = [
            (2, 2e4, 0.2 + 8e-5 * 2e4 + 1.0),
            (4, 1e4, 0.2 + 8e-5 * 1e4),
            (4, 4e4, 0.2 + 8e-5 * 4e4),
        ];
        let k = slope(&points).unwrap();
        assert!((k / 8e-5 - 1.0).abs() < 1e-9, "{k}");
        assert_eq!(slope(&points[..2]), None);
        assert_eq!(slope(&[(2, 1000.0, 0.3), (2, 1004.0, 0.4)]), None);
        // Trips that shrink with bytes are read as no bandwidth cost at all.
        assert_eq!(slope(&[(2, 1e3, 0.5), (2, 2e3, 0.4)]), Some(0.0));
    }

    /// A run at `n` workers and `volume` bytes whose time is the model's at `mo`, `k`, its
    /// trip `late` ms beyond the link's.
    fn modelled(n: usize, volume: f64, protocol: Protocol, late: f64) -> Observed {
        let p = Params {
            tc_ms: 100.0,
            volume_bytes: volume,
            alpha: 0.5,
            mo_ms: 0.1,
            k_ms_per_byte: 8e-5,
            lm_ms: 0.2,
        };
        let trip = 2.0 * volume / n as f64;
        Observed {
            workers: n,
            time_ms: mw_runtime::model::iteration_time(&p, n, protocol).unwrap(),
            lm_ms: 0.2,
            trip: Some((trip, 0.2 + 8e-5 * trip + late)),
            volume_bytes: volume,
            alpha: 0.5,
            tc_ms: 100.0,
        }
    }

    #[test]
    fn the_calibration_reads_k_from_the_times_at_one_n() {
        for protocol in [Protocol::Async, Protocol::Sync] {
            let own: Vec<Observed> = [2, 4, 6, 8]
                .iter()
                .map(|&n| modelled(n, 1e4, protocol, 0.0))
                .collect();
            assert!(calibrated(&own, &own, protocol).is_none());
            // At 4 and 16 times the volume the master falls behind: trips 5 ms late. The
            // iteration times still follow the model, and `k` comes from them.
            let mut runs = own.clone();
            for &n in &[2, 4, 6, 8] {
                runs.push(modelled(n, 4e4, protocol, 5.0));
                runs.push(modelled(n, 1.6e5, protocol, 5.0));
            }
            let p = calibrated(&own, &runs, protocol).unwrap();
            assert!(
                (p.k_ms_per_byte / 8e-5 - 1.0).abs() < 1e-6,
                "{protocol}: {p:?}"
            );
            assert!((p.mo_ms - 0.1).abs() < 1e-6, "{protocol}: {p:?}");
            assert_eq!(p.lm_ms, 0.2);
            assert_eq!((p.tc_ms, p.volume_bytes, p.alpha), (100.0, 1e4, 0.5));
            assert!(calibrated(&[], &runs, protocol).is_none());
        }
    }

    #[test]
    fn latency_bound_runs_slowed_a_little_do_not_tilt_k() {
        let protocol = Protocol::Async;
        let mut runs: Vec<Observed> = Vec::new();
        for &n in &[2, 4, 6, 8] {
            for volume in [1e4, 4e4, 1.6e5] {
                runs.push(modelled(n, volume, protocol, 0.0));
            }
        }
        // From 40 workers on, 10 and 40 KB leave at most 1,000 bytes a worker: latency-bound,
        // where 0.3 ms more at the larger volume reads as five times the link's `k`.
        for n in (40..=64).step_by(2) {
            runs.push(modelled(n, 1e4, protocol, 0.0));
            let mut slowed = modelled(n, 4e4, protocol, 0.0);
            slowed.time_ms += 0.3;
            runs.push(slowed);
        }
        let own: Vec<Observed> = runs
            .iter()
            .filter(|o| o.volume_bytes == 1e4)
            .copied()
            .collect();
        let p = calibrated(&own, &runs, protocol).unwrap();
        assert!((p.k_ms_per_byte / 8e-5 - 1.0).abs() < 1e-6, "{p:?}");
        // Where every run is latency-bound, `k` still comes from them.
        let latency_bound: Vec<Observed> =
            runs.iter().filter(|o| o.workers >= 40).copied().collect();
        assert!(calibrated(&own, &latency_bound, protocol).is_some());
    }
}
