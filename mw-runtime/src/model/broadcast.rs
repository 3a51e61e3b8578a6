//! The broadcast variant (N-Body; POETRIES, expressions 5–8): every worker receives the same
//! `Vi` bytes whatever `n` is, so the data sent grows with `n` instead of being split by it.
//!
//! Async protocol only, as in the source. A message carries `Vi` bytes for every `n`, so the
//! regime does not depend on `n`: latency-bound when `mo ≥ k·Vi`, bandwidth-bound otherwise.
//!
//! - bandwidth-bound: `Tt(n) = 2·mo + k·n·Vi + (Tc + k·Vm)/n + λm`,
//!   optimum `n = √((Tc + k·Vm)/(k·Vi))`
//! - latency-bound: `Tt(n) = (n+1)·mo + k·Vi + (Tc + k·Vm)/n + λm`,
//!   optimum `n = √((Tc + k·Vm)/mo)`
//!
//! The source prints `k·Vm` in the first optimum's denominator; differentiating its own
//! expression (5) gives `k·Vi`, which is used here. `λm` is not in the source's expressions; it
//! adds a constant (it shifts `Pi`, not the optimum of `Tt`), as in (7)–(9).

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use super::mcmc::largest_keeping_up;
use super::time::{efficiency_of, performance_index_of};
use super::{Curve, ModelError, Regime, non_negative, workers};

/// The measured parameters of one iteration of a broadcast application.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BroadcastParams {
    /// `Tc`: total worker processing time of the iteration, in ms.
    pub tc_ms: f64,
    /// `Vi`: bytes sent to *each* worker (the shared data), whatever the number of workers.
    pub shared_bytes: f64,
    /// `Vm`: total bytes of results, all workers together.
    pub result_bytes: f64,
    /// `mo`: per-message start-up time, in ms.
    pub mo_ms: f64,
    /// `k`: per-byte cost (inverse bandwidth), in ms per byte.
    pub k_ms_per_byte: f64,
    /// `λm`: the master's own processing time in the iteration, in ms.
    pub lm_ms: f64,
}

impl BroadcastParams {
    /// Checks that every parameter is finite and non-negative.
    ///
    /// # Errors
    /// [`ModelError::InvalidParameter`] naming the first offending field.
    pub fn validate(&self) -> Result<(), ModelError> {
        non_negative("tc_ms", self.tc_ms)?;
        non_negative("shared_bytes", self.shared_bytes)?;
        non_negative("result_bytes", self.result_bytes)?;
        non_negative("mo_ms", self.mo_ms)?;
        non_negative("k_ms_per_byte", self.k_ms_per_byte)?;
        non_negative("lm_ms", self.lm_ms)
    }

    fn k_vi(&self) -> f64 {
        self.k_ms_per_byte * self.shared_bytes
    }

    /// `Tc + k·Vm`: the part of `Tt` that the workers share out.
    fn divisible(&self) -> f64 {
        self.tc_ms + self.k_ms_per_byte * self.result_bytes
    }

    fn regime_unchecked(&self) -> Regime {
        if self.mo_ms >= self.k_vi() {
            Regime::LatencyBound
        } else {
            Regime::BandwidthBound
        }
    }

    fn time_unchecked(&self, n: f64) -> (f64, Regime) {
        let (mo, kvi, lm) = (self.mo_ms, self.k_vi(), self.lm_ms);
        let regime = self.regime_unchecked();
        let tt = match regime {
            Regime::BandwidthBound => 2.0 * mo + kvi * n + self.divisible() / n + lm,
            _ => (n + 1.0) * mo + kvi + self.divisible() / n + lm,
        };
        (tt, regime)
    }

    /// `S(n)`: bandwidth-bound `mo + k·n·Vi`, latency-bound `n·mo + k·Vi`.
    fn send_phase_unchecked(&self, n: f64) -> f64 {
        match self.regime_unchecked() {
            Regime::BandwidthBound => self.mo_ms + self.k_vi() * n,
            _ => n * self.mo_ms + self.k_vi(),
        }
    }

    /// One chunk's round trip: `mo + k·Vi` out, `Tc/n`, `mo + k·Vm/n` back.
    fn round_trip_unchecked(&self, n: f64) -> f64 {
        2.0 * self.mo_ms + self.k_vi() + self.divisible() / n
    }
}

/// The regime, the same for every `n`: latency-bound when `mo ≥ k·Vi`.
///
/// # Errors
/// [`ModelError::InvalidParameter`] for invalid parameters.
pub fn regime(p: &BroadcastParams) -> Result<Regime, ModelError> {
    p.validate()?;
    Ok(p.regime_unchecked())
}

/// `Tt(n)` of a broadcast application, in ms.
///
/// # Errors
/// [`ModelError::InvalidParameter`] for invalid parameters, [`ModelError::NoWorkers`] for `n = 0`.
///
/// # Examples
/// ```
/// use mw_runtime::model::broadcast::{BroadcastParams, iteration_time};
///
/// // 1 MB of bodies to each worker, 1 MB of results in all, 1 s of work.
/// let p = BroadcastParams { tc_ms: 1000.0, shared_bytes: 1e6, result_bytes: 1e6,
///                           mo_ms: 0.05, k_ms_per_byte: 1e-5, lm_ms: 0.0 };
/// // bandwidth-bound: 2·0.05 + 10·4 + (1000 + 10)/4
/// assert!((iteration_time(&p, 4)? - 292.6).abs() < 1e-9);
/// # Ok::<(), mw_runtime::model::ModelError>(())
/// ```
pub fn iteration_time(p: &BroadcastParams, n: usize) -> Result<f64, ModelError> {
    p.validate()?;
    let nf = workers(n)?;
    Ok(p.time_unchecked(nf).0)
}

/// The real `n` that minimizes `Tt` (POETRIES' (7)/(8), the first corrected as the module
/// documentation says): `√((Tc + k·Vm)/(k·Vi))` when bandwidth-bound, `√((Tc + k·Vm)/mo)` when
/// latency-bound. `None` when more workers always help (`mo = k·Vi = 0`).
///
/// # Errors
/// [`ModelError::InvalidParameter`] for invalid parameters.
///
/// # Examples
/// ```
/// use mw_runtime::model::broadcast::{BroadcastParams, optimum_workers};
///
/// let p = BroadcastParams { tc_ms: 1000.0, shared_bytes: 1e6, result_bytes: 1e6,
///                           mo_ms: 0.05, k_ms_per_byte: 1e-5, lm_ms: 0.0 };
/// let n = optimum_workers(&p)?.unwrap();
/// assert!((n - (1010.0_f64 / 10.0).sqrt()).abs() < 1e-12);
/// # Ok::<(), mw_runtime::model::ModelError>(())
/// ```
pub fn optimum_workers(p: &BroadcastParams) -> Result<Option<f64>, ModelError> {
    p.validate()?;
    let per_worker = match p.regime_unchecked() {
        Regime::BandwidthBound => p.k_vi(),
        _ => p.mo_ms,
    };
    Ok((per_worker > 0.0).then(|| (p.divisible() / per_worker).sqrt()))
}

/// The whole number of workers of lowest `Tt`: `⌊optimum⌋` or `⌈optimum⌉`, whichever is faster
/// (`Tt` is convex in `n`), at least 1; the fewer among equals. `None` as for
/// [`optimum_workers`].
///
/// # Errors
/// [`ModelError::InvalidParameter`] for invalid parameters.
pub fn best_workers(p: &BroadcastParams) -> Result<Option<usize>, ModelError> {
    let Some(opt) = optimum_workers(p)? else {
        return Ok(None);
    };
    if opt >= super::MCMC_LIMIT as f64 {
        return Ok(None);
    }
    let low = opt.floor().max(1.0);
    let high = opt.ceil().max(1.0);
    let best = if p.time_unchecked(high).0 < p.time_unchecked(low).0 {
        high
    } else {
        low
    };
    Ok(Some(best as usize))
}

/// `Tt`, `E` and `Pi` over a range of worker counts, as [`sweep`](super::sweep) does for the
/// balanced model.
///
/// # Errors
/// As [`sweep`](super::sweep).
pub fn sweep(p: &BroadcastParams, workers: RangeInclusive<usize>) -> Result<Curve, ModelError> {
    p.validate()?;
    Curve::build(p.tc_ms, workers, |n| p.time_unchecked(n))
}

/// The MCMC of a broadcast application by the same definition as [`mcmc`](super::mcmc): the
/// largest `n` for which sending the shared data to `n` workers, `S(n)`, takes no longer than one
/// chunk's round trip. The model sheet has no closed form for it; this one follows from the
/// send phase of POETRIES (`n·mo + k·Vi` latency-bound, `mo + k·n·Vi` bandwidth-bound).
/// `None` when the master never falls behind (`mo = k·Vi = 0`).
///
/// # Errors
/// [`ModelError::InvalidParameter`] for invalid parameters.
pub fn mcmc(p: &BroadcastParams) -> Result<Option<usize>, ModelError> {
    p.validate()?;
    Ok(largest_keeping_up(|n| {
        p.send_phase_unchecked(n) > p.round_trip_unchecked(n)
    }))
}

/// `E(n)` of a broadcast application.
///
/// # Errors
/// As [`iteration_time`], and [`ModelError::NoWork`] when `Tc = 0`.
pub fn efficiency(p: &BroadcastParams, n: usize) -> Result<f64, ModelError> {
    let tt = iteration_time(p, n)?;
    efficiency_of(p.tc_ms, n as f64, tt)
}

/// `Pi(n)` of a broadcast application.
///
/// # Errors
/// As [`iteration_time`], and [`ModelError::NoWork`] when `Tc = 0`.
pub fn performance_index(p: &BroadcastParams, n: usize) -> Result<f64, ModelError> {
    let tt = iteration_time(p, n)?;
    performance_index_of(p.tc_ms, n as f64, tt)
}
