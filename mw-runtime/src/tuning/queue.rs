//! `mo` and `k` of the master's link, fitted as a queue.
//!
//! The master sends through one network card: a message waits for those sent before it to
//! leave, then takes `k·bytes` to leave itself, and arrives `mo` later. When the master sends
//! in bursts (the shared part to every worker, then their first chunks), the last messages of
//! a burst wait for all the others, so a straight line through `(bytes, trip)` reads the
//! queue's wait as bandwidth (with the shared part of N-Body's shape at 100 Mbit/s, `k` came
//! out 2 to 4 times the link's). Here the trips are explained instead by replaying the master's
//! send log through a link of the candidate `k`: a transfer's trip is its wait behind earlier
//! messages, plus `k` times its own bytes, plus `2·mo` (out and back). The answers share the
//! link back the same way: each is handed to it when its chunk has arrived and been processed,
//! and waits behind the answers handed to it before. Unreplayed, that wait grows along the
//! burst like the wait out, and read as bandwidth: with answers a third larger than their
//! chunks (`static`, a few bytes per task), `k` came out 1.4 times the link's. For each `k` the
//! best `mo` is the mean of what is left; the `k` of least squared error wins, found on a
//! geometric grid (near the last fit's `k` when there is one) and refined by golden-section
//! search.

use crate::measure::{SentMessage, Transfer};
use crate::model::{Fit, fit_latency_bandwidth};

/// `k` searched from here (10 TB/s) ...
const K_MIN: f64 = 1e-10;
/// ... to here (10 kB/s), in ms per byte.
const K_MAX: f64 = 1e-1;
/// Grid points (a ratio of 1.55 between neighbours), then golden-section steps between the
/// best one's neighbours (to 2·10⁻⁴ of `k`, far below what the transfers' jitter allows).
const GRID: usize = 48;
const REFINE: usize = 18;
/// Grid points searched on either side of the last fit's `k` (a factor of 5.8 each way).
const NEAR: i32 = 4;

/// Messages of one iteration's send log kept for the replay, beyond which the log is cut
/// ([`Log::new`]).
const REPLAY_SENDS: usize = 16 * 1024;
/// Messages kept before each kept transfer's own in a cut log.
const LEAD: usize = 64;

/// One iteration's send log and the transfers it gave.
#[derive(Debug, Clone, Default)]
pub(crate) struct Log {
    pub sends: Vec<SentMessage>,
    pub transfers: Vec<Transfer>,
}

impl Log {
    /// The log to replay for `transfers` (a sample of the iteration's) out of the iteration's
    /// `sends`. Every replay walks the whole log, at every step of the search for `k`: with a
    /// million chunks an iteration, that took the master a fifth of the iteration's time again
    /// after it. A longer log than [`REPLAY_SENDS`] is cut to the stretches before each
    /// transfer's messages, [`LEAD`] messages each: a message waits only for the backlog on the
    /// link when it was sent, and a backlog older than that many messages means a link busy
    /// without a break, where the sampled transfers' trips say as much of it as the replay.
    pub(crate) fn new(sends: &[SentMessage], mut transfers: Vec<Transfer>) -> Log {
        if sends.len() <= REPLAY_SENDS {
            return Log {
                sends: sends.to_vec(),
                transfers,
            };
        }
        // Transfers come in the order their answers did, not their chunks: the stretches are
        // taken in the order of the log, and each transfer's indices mapped into the cut one.
        let mut stretches: Vec<(usize, usize)> = transfers
            .iter()
            .filter_map(|t| t.out)
            .filter(|&(_, last)| last < sends.len())
            .map(|(first, last)| (first.saturating_sub(LEAD), last.max(first)))
            .collect();
        stretches.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(stretches.len());
        for (from, to) in stretches {
            match merged.last_mut() {
                Some(last) if from <= last.1 + 1 => last.1 = last.1.max(to),
                _ => merged.push((from, to)),
            }
        }
        // Where each stretch starts in the cut log.
        let mut kept = Vec::new();
        let mut starts = Vec::with_capacity(merged.len());
        for &(from, to) in &merged {
            starts.push(kept.len());
            kept.extend_from_slice(&sends[from..=to]);
        }
        let place = |index: usize| {
            let stretch = merged
                .partition_point(|&(from, _)| from <= index)
                .checked_sub(1)?;
            let (from, to) = merged[stretch];
            (index <= to).then(|| starts[stretch] + index - from)
        };
        for t in &mut transfers {
            t.out = t
                .out
                .and_then(|(first, last)| Some((place(first)?, place(last)?)));
        }
        Log {
            sends: kept,
            transfers,
        }
    }
}

/// The fit of `trip = 2·mo + k·bytes + wait(k)` over `logs` (`Fit::mo_ms` is the intercept,
/// `2·mo`, as for a straight line). Without any logged transfer, the straight line of
/// [`fit_latency_bandwidth`]. `near`, the `k` of the last fit, narrows the search to the grid
/// points around it (the whole grid when the best of those lies at their edge): a link's `k`
/// moves little between iterations, and every replay walks the whole send log.
pub(crate) fn fit(logs: &[Log], near: Option<f64>) -> Option<Fit> {
    let logged = logs
        .iter()
        .any(|l| l.transfers.iter().any(|t| t.out.is_some()));
    if !logged {
        let samples: Vec<(f64, f64)> = logs
            .iter()
            .flat_map(|l| l.transfers.iter().map(|t| (t.bytes, t.ms)))
            .collect();
        return fit_latency_bandwidth(&samples);
    }
    let count = logs.iter().map(|l| l.transfers.len()).sum::<usize>();
    if count < 2 {
        return None;
    }
    let mean = logs
        .iter()
        .flat_map(|l| &l.transfers)
        .map(|t| t.ms)
        .sum::<f64>()
        / count as f64;
    let sst: f64 = logs
        .iter()
        .flat_map(|l| &l.transfers)
        .map(|t| (t.ms - mean).powi(2))
        .sum();
    // One set of scratch buffers for every replay: the fit runs at every boundary, so its cost
    // is part of the tuner's own time.
    let mut scratch = Scratch::default();
    let mut error = |k: f64| residuals(logs, k, count, &mut scratch);
    let ratio = (K_MAX / K_MIN).powf(1.0 / (GRID - 1) as f64);
    let local = near
        .filter(|&k| (K_MIN..=K_MAX).contains(&k))
        .map(|k| {
            let grid: Vec<f64> = (-NEAR..=NEAR).map(|i| k * ratio.powi(i)).collect();
            let errors: Vec<f64> = grid.iter().map(|&k| error(k).1).collect();
            (grid, errors)
        })
        .filter(|(_, errors)| {
            let best = argmin(errors);
            best > 0 && best < errors.len() - 1
        });
    // The whole grid, with k = 0 as its first point.
    let (grid, errors) = local.unwrap_or_else(|| {
        let grid: Vec<f64> = std::iter::once(0.0)
            .chain((0..GRID).map(|i| K_MIN * ratio.powi(i as i32)))
            .collect();
        let errors = grid.iter().map(|&k| error(k).1).collect();
        (grid, errors)
    });
    let best = argmin(&errors);
    let (mut lo, mut hi) = (
        grid[best.saturating_sub(1)],
        grid[(best + 1).min(grid.len() - 1)],
    );
    // Golden-section search between the best point's neighbours; each step keeps one of the
    // two inner points, so it costs one replay.
    let golden = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (hi - golden * (hi - lo), lo + golden * (hi - lo));
    let (mut error_a, mut error_b) = (error(a).1, error(b).1);
    for _ in 0..REFINE {
        if error_a <= error_b {
            (hi, b, error_b) = (b, a, error_a);
            a = hi - golden * (hi - lo);
            error_a = error(a).1;
        } else {
            (lo, a, error_a) = (a, b, error_b);
            b = lo + golden * (hi - lo);
            error_b = error(b).1;
        }
    }
    let k = (lo + hi) / 2.0;
    let (intercept, sse) = error(k);
    let (k, intercept, sse) = if sse <= errors[best] {
        (k, intercept, sse)
    } else {
        let (intercept, sse) = error(grid[best]);
        (grid[best], intercept, sse)
    };
    let r2 = if sst > 0.0 { 1.0 - sse / sst } else { 1.0 };
    Some(Fit {
        mo_ms: intercept,
        k_ms_per_byte: k,
        r2,
        samples: count,
    })
}

/// The index of the least error.
fn argmin(errors: &[f64]) -> usize {
    (0..errors.len())
        .min_by(|&a, &b| errors[a].total_cmp(&errors[b]))
        .unwrap_or(0)
}

/// Buffers reused by every replay.
#[derive(Debug, Default)]
struct Scratch {
    /// When each message sent has left the link out.
    left: Vec<f64>,
    /// Each transfer's wait on the link back.
    back: Vec<f64>,
}

/// For a link of `k`: the best intercept (at least 0) and the squared error left.
fn residuals(logs: &[Log], k: f64, count: usize, scratch: &mut Scratch) -> (f64, f64) {
    let (mut sum, mut squares) = (0.0, 0.0);
    for log in logs {
        departures(&log.sends, k, &mut scratch.left);
        back_waits(log, k, scratch);
        for (t, back) in log.transfers.iter().zip(&scratch.back) {
            let wait = t.out.map_or(0.0, |(first, last)| {
                wait(&log.sends, &scratch.left, first, last, k)
            });
            let rest = t.ms - k * t.bytes - wait - back;
            sum += rest;
            squares += rest * rest;
        }
    }
    let n = count as f64;
    let intercept = (sum / n).max(0.0);
    // Σ(r − c)² without a second pass over the rests.
    let sse = (squares - 2.0 * intercept * sum + n * intercept * intercept).max(0.0);
    (intercept, sse)
}

/// Each transfer's wait for the link back of `k`, into `scratch.back`: its answer reaches the
/// link when its chunk has left the link out (`scratch.left`) and been processed (`mo` later
/// still, the same for every answer, which changes no wait), and waits for the answers before
/// it. The link sends them in order and the master receives them in the order they arrive,
/// which is the order of the transfers, so no sorting is needed. Transfers whose answer was
/// not logged wait 0 and hold the link for no time.
fn back_waits(log: &Log, k: f64, scratch: &mut Scratch) {
    let Scratch { left, back } = scratch;
    back.clear();
    let mut free = f64::NEG_INFINITY;
    back.extend(log.transfers.iter().map(|t| {
        let sent = t.out.and_then(|(_, last)| left.get(last));
        let (Some(&sent), Some((bytes, busy))) = (sent, t.back) else {
            return 0.0;
        };
        let ready = sent + busy;
        let start = free.max(ready);
        free = start + k * bytes;
        start - ready
    }));
}

/// When each message has left a link of `k` that sends them in order, into `left`.
fn departures(sends: &[SentMessage], k: f64, left: &mut Vec<f64>) {
    let mut free = f64::NEG_INFINITY;
    left.clear();
    left.extend(sends.iter().map(|s| {
        free = free.max(s.at_ms) + k * s.bytes;
        free
    }));
}

/// What the messages `first` and `last` of a transfer waited for the link beyond their own
/// sending time.
fn wait(sends: &[SentMessage], left: &[f64], first: usize, last: usize, k: f64) -> f64 {
    let (Some(start), Some(done)) = (sends.get(first), left.get(last)) else {
        return 0.0;
    };
    let own = if first == last {
        start.bytes
    } else {
        start.bytes + sends.get(last).map_or(0.0, |s| s.bytes)
    };
    (done - start.at_ms - k * own).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Transfers through a simulated link of `mo`, `k`: a burst of `n` shared parts of
    /// `shared` bytes, then a first chunk of `chunk` bytes to each worker, answered after
    /// `busy` ms; then one chunk per answer.
    fn burst(n: usize, shared: f64, chunk: f64, mo: f64, k: f64) -> Log {
        let mut sends = Vec::new();
        for _ in 0..n {
            sends.push(SentMessage {
                at_ms: 0.0,
                bytes: shared,
            });
        }
        for _ in 0..n {
            sends.push(SentMessage {
                at_ms: 0.0,
                bytes: chunk,
            });
        }
        let mut left = Vec::new();
        departures(&sends, k, &mut left);
        let answer = 320.0;
        let mut transfers = Vec::new();
        for i in 0..n {
            let trip = left[n + i] + mo + mo + answer * k;
            transfers.push(Transfer {
                bytes: shared + chunk + answer,
                ms: trip,
                out: Some((i, n + i)),
                back: None,
            });
        }
        // Later chunks, one at a time to an idle link.
        for j in 0..3 * n {
            let at = 1000.0 + 10.0 * j as f64;
            sends.push(SentMessage {
                at_ms: at,
                bytes: chunk,
            });
            transfers.push(Transfer {
                bytes: chunk + answer,
                ms: mo + chunk * k + mo + answer * k,
                out: Some((sends.len() - 1, sends.len() - 1)),
                back: None,
            });
        }
        Log { sends, transfers }
    }

    #[test]
    fn a_burst_is_read_as_a_queue_not_as_bandwidth() {
        // 100 Mbit/s, 0.1 ms: 8 workers, 40 kB shared parts, 2 kB chunks.
        let (mo, k) = (0.1, 8e-5);
        let log = burst(8, 40_000.0, 2_000.0, mo, k);
        let line: Vec<(f64, f64)> = log.transfers.iter().map(|t| (t.bytes, t.ms)).collect();
        let naive = fit_latency_bandwidth(&line).unwrap();
        assert!(naive.k_ms_per_byte > 2.0 * k, "{naive:?}");
        let fitted = fit(&[log], None).unwrap();
        assert!((fitted.k_ms_per_byte / k - 1.0).abs() < 0.01, "{fitted:?}");
        assert!((fitted.mo_ms / (2.0 * mo) - 1.0).abs() < 0.01, "{fitted:?}");
        assert!(fitted.r2 > 0.999, "{fitted:?}");
    }

    #[test]
    fn a_long_log_cut_to_the_stretches_before_its_sampled_transfers_fits_the_same() {
        // A million-chunk iteration's shape: bursts of 8 chunks (the workers' answers came
        // together) every 0.1 ms through a link of 100 Mbit/s, 0.05 ms, each chunk's trip
        // replayed whole; a sample of the transfers, as the estimate keeps.
        let (mo, k, chunk, answer) = (0.05, 8e-5, 120.0, 80.0);
        let sends: Vec<SentMessage> = (0..100_000)
            .map(|i| SentMessage {
                at_ms: 0.1 * (i / 8) as f64,
                bytes: chunk,
            })
            .collect();
        let mut left = Vec::new();
        departures(&sends, k, &mut left);
        let all: Vec<Transfer> = (0..sends.len())
            .map(|i| Transfer {
                bytes: chunk + answer,
                ms: left[i] - sends[i].at_ms + mo + mo + answer * k,
                out: Some((i, i)),
                back: None,
            })
            .collect();
        let sampled: Vec<Transfer> = all.iter().step_by(all.len() / 256).copied().collect();
        let cut = Log::new(&sends, sampled.clone());
        assert!(cut.sends.len() < sends.len() / 4, "{}", cut.sends.len());
        let whole = Log {
            sends: sends.clone(),
            transfers: sampled,
        };
        let (cut, whole) = (fit(&[cut], None).unwrap(), fit(&[whole], None).unwrap());
        assert!(
            (cut.k_ms_per_byte / whole.k_ms_per_byte - 1.0).abs() < 1e-6,
            "{cut:?}"
        );
        assert!(
            (cut.mo_ms / whole.mo_ms - 1.0).abs() < 1e-6,
            "{cut:?} {whole:?}"
        );
        assert!((whole.k_ms_per_byte / k - 1.0).abs() < 0.01, "{whole:?}");
        // A short log is kept whole.
        assert_eq!(Log::new(&sends[..1000], Vec::new()).sends.len(), 1000);
    }

    #[test]
    fn a_search_near_the_last_k_finds_what_the_whole_search_does() {
        let (mo, k) = (0.1, 8e-5);
        let log = burst(8, 40_000.0, 2_000.0, mo, k);
        let whole = fit(std::slice::from_ref(&log), None).unwrap();
        // Near the last k, or near one far from it: the best point at the near grid's edge
        // sends the search over the whole range.
        for last in [k * 1.3, k / 3.0, k * 1000.0, k / 1000.0] {
            let near = fit(std::slice::from_ref(&log), Some(last)).unwrap();
            assert!(
                (near.k_ms_per_byte / whole.k_ms_per_byte - 1.0).abs() < 1e-3,
                "{last}: {near:?} against {whole:?}"
            );
            assert!((near.mo_ms / whole.mo_ms - 1.0).abs() < 1e-3, "{near:?}");
        }
    }

    /// A burst of one chunk of `chunk` bytes to each of `n` workers through a simulated link
    /// of `mo`, `k` each way; each worker works `busy` ms and answers with `answer` bytes, and
    /// the answers queue on the link back when they come faster than it carries them.
    fn both_ways(n: usize, chunk: f64, answer: f64, busy: f64, mo: f64, k: f64) -> Log {
        let sends: Vec<SentMessage> = (0..n)
            .map(|_| SentMessage {
                at_ms: 0.0,
                bytes: chunk,
            })
            .collect();
        let mut free_back = f64::NEG_INFINITY;
        let transfers = (0..n)
            .map(|i| {
                let ready = (i + 1) as f64 * k * chunk + mo + busy;
                let start = free_back.max(ready);
                free_back = start + k * answer;
                Transfer {
                    bytes: chunk + answer,
                    ms: free_back + mo - busy,
                    out: Some((i, i)),
                    back: Some((answer, busy)),
                }
            })
            .collect();
        Log { sends, transfers }
    }

    #[test]
    fn answers_queued_on_the_link_back_are_not_read_as_bandwidth() {
        // `static` at 100 Mbit/s, 0.1 ms: 8 workers, chunks of 2,700 bytes answered with
        // 3,600 (the synthetic program's answers carry 8 bytes more per task).
        let (mo, k) = (0.1, 8e-5);
        let log = both_ways(8, 2_700.0, 3_600.0, 12.5, mo, k);
        let fitted = fit(std::slice::from_ref(&log), None).unwrap();
        assert!((fitted.k_ms_per_byte / k - 1.0).abs() < 0.01, "{fitted:?}");
        assert!((fitted.mo_ms / (2.0 * mo) - 1.0).abs() < 0.01, "{fitted:?}");
        // Replaying the link out alone, as before, the queue back read as a third more `k`.
        let mut out_only = log;
        for t in &mut out_only.transfers {
            t.back = None;
        }
        let before = fit(&[out_only], None).unwrap();
        assert!(before.k_ms_per_byte > 1.2 * k, "{before:?}");
    }

    #[test]
    fn without_a_log_it_is_the_straight_line() {
        let transfers = [(1e3, 0.3), (1e4, 1.2), (1e5, 10.2)]
            .iter()
            .map(|&(bytes, ms)| Transfer {
                bytes,
                ms,
                out: None,
                back: None,
            })
            .collect();
        let log = Log {
            sends: Vec::new(),
            transfers,
        };
        let line = fit_latency_bandwidth(&[(1e3, 0.3), (1e4, 1.2), (1e5, 10.2)]);
        assert_eq!(fit(&[log], None), line);
    }

    #[test]
    fn a_free_link_has_no_slope() {
        // Trips that do not grow with bytes: threads.
        let sends: Vec<SentMessage> = (0..20)
            .map(|i| SentMessage {
                at_ms: i as f64,
                bytes: 1000.0 * (1 + i % 4) as f64,
            })
            .collect();
        let transfers = (0..20)
            .map(|i| Transfer {
                bytes: sends[i].bytes,
                ms: 0.01 + 0.001 * (i % 3) as f64,
                out: Some((i, i)),
                back: None,
            })
            .collect();
        let fitted = fit(&[Log { sends, transfers }], None).unwrap();
        assert!(fitted.k_ms_per_byte < 1e-8, "{fitted:?}");
        assert!(fitted.r2 < 0.3, "{fitted:?}");
    }
}
