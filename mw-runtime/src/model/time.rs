//! Iteration time (7)–(9), efficiency and the performance index (13).

use super::{ModelError, Params, Protocol, Regime, positive, workers};

/// Which expression gives `Tt(n)`: for async, latency-bound when `mo ≥ k·αV/n`, bandwidth-bound
/// otherwise (decided for this `n` alone); [`Regime::Synchronous`] for sync.
///
/// # Errors
/// [`ModelError::InvalidParameter`] for invalid parameters, [`ModelError::NoWorkers`] for `n = 0`.
///
/// # Examples
/// ```
/// use mw_runtime::Protocol;
/// use mw_runtime::model::{Params, Regime, regime};
///
/// // k·αV = 2.048 ms: one message of 1/n of it outweighs mo = 1 ms up to n = 2.
/// let p = Params { tc_ms: 1600.0, volume_bytes: 4096.0, alpha: 0.5, mo_ms: 1.0,
///                  k_ms_per_byte: 0.001, lm_ms: 0.0 };
/// assert_eq!(regime(&p, 2, Protocol::Async)?, Regime::BandwidthBound);
/// assert_eq!(regime(&p, 3, Protocol::Async)?, Regime::LatencyBound);
/// assert_eq!(regime(&p, 3, Protocol::Sync)?, Regime::Synchronous);
/// # Ok::<(), mw_runtime::model::ModelError>(())
/// ```
pub fn regime(p: &Params, n: usize, protocol: Protocol) -> Result<Regime, ModelError> {
    p.validate()?;
    let nf = workers(n)?;
    Ok(regime_unchecked(p, nf, protocol))
}

pub(crate) fn regime_unchecked(p: &Params, n: f64, protocol: Protocol) -> Regime {
    match protocol {
        Protocol::Sync => Regime::Synchronous,
        Protocol::Async if p.mo_ms >= p.k_alpha_v() / n => Regime::LatencyBound,
        Protocol::Async => Regime::BandwidthBound,
    }
}

/// `Tt(n)`: the predicted time of one iteration with `n` workers, in ms.
///
/// - async, latency-bound (`mo ≥ k·αV/n`): `(n+1)·mo + (Tc + k·V)/n + λm`  (7)
/// - async, bandwidth-bound (`mo < k·αV/n`): `2·mo + (((n−1)·α + 1)·k·V + Tc)/n + λm`  (8)
/// - sync: `(n+1)·mo + (((n−1)·α + 1)·k·V + Tc)/n + λm`  (9)
///
/// # Errors
/// [`ModelError::InvalidParameter`] for invalid parameters, [`ModelError::NoWorkers`] for `n = 0`.
///
/// # Examples
/// ```
/// use mw_runtime::Protocol;
/// use mw_runtime::model::{Params, iteration_time};
///
/// let p = Params { tc_ms: 1600.0, volume_bytes: 4096.0, alpha: 0.5, mo_ms: 1.0,
///                  k_ms_per_byte: 0.001, lm_ms: 0.0 };
/// let tt = iteration_time(&p, 40, Protocol::Async)?;
/// assert!((tt - 81.1024).abs() < 1e-9);
/// # Ok::<(), mw_runtime::model::ModelError>(())
/// ```
pub fn iteration_time(p: &Params, n: usize, protocol: Protocol) -> Result<f64, ModelError> {
    p.validate()?;
    let nf = workers(n)?;
    Ok(iteration_time_unchecked(p, nf, protocol).0)
}

/// `Tt(n)` and the regime that gave it, for parameters already validated and `n ≥ 1`.
pub(crate) fn iteration_time_unchecked(p: &Params, n: f64, protocol: Protocol) -> (f64, Regime) {
    let Params {
        tc_ms: tc,
        volume_bytes: v,
        alpha,
        mo_ms: mo,
        k_ms_per_byte: k,
        lm_ms: lm,
    } = *p;
    let regime = regime_unchecked(p, n, protocol);
    let tt = match regime {
        Regime::LatencyBound => (n + 1.0) * mo + (tc + k * v) / n + lm,
        Regime::BandwidthBound => 2.0 * mo + (((n - 1.0) * alpha + 1.0) * k * v + tc) / n + lm,
        Regime::Synchronous => (n + 1.0) * mo + (((n - 1.0) * alpha + 1.0) * k * v + tc) / n + lm,
    };
    (tt, regime)
}

/// `S(n)`: the master's time to send one chunk to each of `n` workers, in ms — the distribution
/// phase that (7)–(9) start with (Cesar et al.'s function `S`):
///
/// - async, latency-bound: `n·mo + k·αV/n` (start-ups add up; only the last transfer shows)
/// - async, bandwidth-bound: `mo + k·αV` (transfers add up; only the first start-up shows)
/// - sync: `n·mo + k·αV` (both add up)
///
/// `Tt(n) = S(n) + Tc/n + mo + k·(1−α)V/n + λm` in every regime; the MCMC compares `S(n)` with
/// [`round_trip`].
///
/// # Errors
/// As [`iteration_time`].
pub fn send_phase(p: &Params, n: usize, protocol: Protocol) -> Result<f64, ModelError> {
    p.validate()?;
    let nf = workers(n)?;
    Ok(send_phase_unchecked(p, nf, protocol))
}

pub(crate) fn send_phase_unchecked(p: &Params, n: f64, protocol: Protocol) -> f64 {
    let (mo, kav) = (p.mo_ms, p.k_alpha_v());
    match regime_unchecked(p, n, protocol) {
        Regime::LatencyBound => n * mo + kav / n,
        Regime::BandwidthBound => mo + kav,
        Regime::Synchronous => n * mo + kav,
    }
}

/// One chunk's round trip with `n` workers, in ms: its send (`mo + k·αV/n`), its processing
/// (`Tc/n`) and its answer (`mo + k·(1−α)V/n`), that is `2·mo + (k·V + Tc)/n`.
///
/// # Errors
/// As [`iteration_time`].
pub fn round_trip(p: &Params, n: usize) -> Result<f64, ModelError> {
    p.validate()?;
    let nf = workers(n)?;
    Ok(round_trip_unchecked(p, nf))
}

pub(crate) fn round_trip_unchecked(p: &Params, n: f64) -> f64 {
    2.0 * p.mo_ms + (p.kv() + p.tc_ms) / n
}

/// `E(n) = Tc / (n·Tt(n))`: the share of the workers' available time spent on useful work (13).
///
/// # Errors
/// As [`iteration_time`], and [`ModelError::NoWork`] when `Tc = 0`.
///
/// # Examples
/// ```
/// use mw_runtime::Protocol;
/// use mw_runtime::model::{Params, efficiency};
///
/// let p = Params { tc_ms: 1600.0, volume_bytes: 4096.0, alpha: 0.5, mo_ms: 1.0,
///                  k_ms_per_byte: 0.001, lm_ms: 0.0 };
/// let e = efficiency(&p, 40, Protocol::Async)?;
/// assert!((e - 1600.0 / (40.0 * 81.1024)).abs() < 1e-12);
/// # Ok::<(), mw_runtime::model::ModelError>(())
/// ```
pub fn efficiency(p: &Params, n: usize, protocol: Protocol) -> Result<f64, ModelError> {
    let tt = iteration_time(p, n, protocol)?;
    efficiency_of(p.tc_ms, n as f64, tt)
}

/// `Pi(n) = Tt(n)/E(n) = n·Tt(n)²/Tc`: time per resource; the tuner minimizes it (13).
///
/// # Errors
/// As [`iteration_time`], and [`ModelError::NoWork`] when `Tc = 0`.
///
/// # Examples
/// ```
/// use mw_runtime::Protocol;
/// use mw_runtime::model::{Params, performance_index};
///
/// let p = Params { tc_ms: 1600.0, volume_bytes: 4096.0, alpha: 0.5, mo_ms: 1.0,
///                  k_ms_per_byte: 0.001, lm_ms: 0.0 };
/// let at_23 = performance_index(&p, 23, Protocol::Async)?;
/// let at_40 = performance_index(&p, 40, Protocol::Async)?;
/// assert!(at_23 < at_40);
/// # Ok::<(), mw_runtime::model::ModelError>(())
/// ```
pub fn performance_index(p: &Params, n: usize, protocol: Protocol) -> Result<f64, ModelError> {
    let tt = iteration_time(p, n, protocol)?;
    performance_index_of(p.tc_ms, n as f64, tt)
}

/// `E` from `Tc`, `n` and `Tt` (shared with the broadcast model).
pub(crate) fn efficiency_of(tc: f64, n: f64, tt: f64) -> Result<f64, ModelError> {
    positive("tc_ms", tc).map_err(|_| ModelError::NoWork)?;
    Ok(tc / (n * tt))
}

/// `Pi` from `Tc`, `n` and `Tt` (shared with the broadcast model).
pub(crate) fn performance_index_of(tc: f64, n: f64, tt: f64) -> Result<f64, ModelError> {
    positive("tc_ms", tc).map_err(|_| ModelError::NoWork)?;
    Ok(n * tt * tt / tc)
}
