//! The Master's Chunk Managing Capability, (10)–(12).
//!
//! With `n` workers the master keeps every worker fed as long as sending one chunk to each of
//! them, [`send_phase`](super::send_phase) `S(n)`, takes no longer than one chunk's
//! [`round_trip`](super::round_trip) `RT(n)`. `S(n) − RT(n)` never decreases as `n` grows (see
//! the README), so there is one crossing: the MCMC is the largest `n` with `S(n) ≤ RT(n)`, and
//! `MCMC + 1` is the smallest `n` at which the master falls behind (the paper's "exceeding
//! point" is the first `n` past the capability).

use super::time::{round_trip_unchecked, send_phase_unchecked};
use super::{ModelError, Params, Protocol, workers};

/// Worker counts above this are not searched: a capability this large is reported as `None`
/// (no limit).
pub const MCMC_LIMIT: usize = 1 << 31;

/// Whether, with `n` workers, the master takes longer to send one chunk to each of them than
/// one chunk takes to come back: `S(n) > RT(n)`.
///
/// # Errors
/// [`ModelError::InvalidParameter`] for invalid parameters, [`ModelError::NoWorkers`] for `n = 0`.
///
/// # Examples
/// ```
/// use mw_runtime::Protocol;
/// use mw_runtime::model::{Params, master_falls_behind};
///
/// let p = Params { tc_ms: 1600.0, volume_bytes: 4096.0, alpha: 0.5, mo_ms: 1.0,
///                  k_ms_per_byte: 0.001, lm_ms: 0.0 };
/// assert!(!master_falls_behind(&p, 41, Protocol::Async)?);
/// assert!(master_falls_behind(&p, 42, Protocol::Async)?);
/// # Ok::<(), mw_runtime::model::ModelError>(())
/// ```
pub fn master_falls_behind(p: &Params, n: usize, protocol: Protocol) -> Result<bool, ModelError> {
    p.validate()?;
    let nf = workers(n)?;
    Ok(behind(p, nf, protocol))
}

fn behind(p: &Params, n: f64, protocol: Protocol) -> bool {
    send_phase_unchecked(p, n, protocol) > round_trip_unchecked(p, n)
}

/// The MCMC: the largest number of workers the master can hand one chunk each before the first
/// answer comes back, that is the largest `n` for which [`master_falls_behind`] is false.
/// Past it, workers idle; the tuner does not choose more workers than this.
///
/// It is found from that definition, by bisection on `n` (the comparison is monotone in `n`),
/// so it follows the async regime wherever the crossing falls and needs no special case when
/// `mo = 0`. It equals [`mcmc_closed_form`] (tested); it is at least 1.
///
/// Returns `None` when the master never falls behind (`mo = 0` and `k·αV = 0`), or only beyond
/// [`MCMC_LIMIT`] workers.
///
/// # Errors
/// [`ModelError::InvalidParameter`] for invalid parameters.
///
/// # Examples
/// ```
/// use mw_runtime::Protocol;
/// use mw_runtime::model::{Params, mcmc};
///
/// let p = Params { tc_ms: 1600.0, volume_bytes: 4096.0, alpha: 0.5, mo_ms: 1.0,
///                  k_ms_per_byte: 0.001, lm_ms: 0.0 };
/// assert_eq!(mcmc(&p, Protocol::Async)?, Some(41));
/// assert_eq!(mcmc(&p, Protocol::Sync)?, Some(40));
/// # Ok::<(), mw_runtime::model::ModelError>(())
/// ```
pub fn mcmc(p: &Params, protocol: Protocol) -> Result<Option<usize>, ModelError> {
    p.validate()?;
    Ok(largest_keeping_up(|n| behind(p, n, protocol)))
}

/// The largest `n ≥ 1` with `!falls_behind(n)`, for a predicate that is false up to some `n` and
/// true after it; `None` if that `n` is beyond [`MCMC_LIMIT`].
///
/// `falls_behind(1)` is taken to be false: one worker can always be fed (the master has sent
/// everything before the only answer can return).
pub(crate) fn largest_keeping_up(falls_behind: impl Fn(f64) -> bool) -> Option<usize> {
    let limit = MCMC_LIMIT as u64;
    // Invariant: !falls_behind(lo), and falls_behind(hi) once the doubling stops.
    let mut lo: u64 = 1;
    let mut hi: u64 = 2;
    while !falls_behind(hi as f64) {
        if hi > limit {
            return None;
        }
        lo = hi;
        hi *= 2;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if falls_behind(mid as f64) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    if lo > limit {
        None
    } else {
        usize::try_from(lo).ok()
    }
}

/// The MCMC from the paper's closed forms, for comparison with [`mcmc`]:
///
/// - async, latency-bound: `⌊√(mo² + mo·((1−α)·k·V + Tc)) / mo⌋ + 1`  (10)
/// - async, bandwidth-bound: `⌊(k·V + Tc)/(k·α·V − mo)⌋`  (11)
/// - sync: `⌊((2mo − kαV) + √((kαV − 2mo)² + 4·mo·(kV + Tc))) / (2mo)⌋`  (12)
///
/// Each is the floor of the root of `S(n) = RT(n)` in its regime. For async, (11) is used when
/// its root lies where the application is bandwidth-bound (`n < k·αV/mo`), (10) otherwise.
/// With `mo = 0`, (10) and (12) divide by zero; their limit, `⌊(k·V + Tc)/(k·α·V)⌋`, is used.
/// `None` as for [`mcmc`].
///
/// # Errors
/// [`ModelError::InvalidParameter`] for invalid parameters.
///
/// # Examples
/// ```
/// use mw_runtime::Protocol;
/// use mw_runtime::model::{Params, mcmc, mcmc_closed_form};
///
/// let p = Params { tc_ms: 1600.0, volume_bytes: 4096.0, alpha: 0.5, mo_ms: 1.0,
///                  k_ms_per_byte: 0.001, lm_ms: 0.0 };
/// assert_eq!(mcmc_closed_form(&p, Protocol::Async)?, mcmc(&p, Protocol::Async)?);
/// # Ok::<(), mw_runtime::model::ModelError>(())
/// ```
pub fn mcmc_closed_form(p: &Params, protocol: Protocol) -> Result<Option<usize>, ModelError> {
    p.validate()?;
    let (mo, kv, kav, tc) = (p.mo_ms, p.kv(), p.k_alpha_v(), p.tc_ms);
    let root = if mo == 0.0 {
        // Both protocols send only bytes: S(n) = k·αV against RT(n) = (k·V + Tc)/n.
        if kav == 0.0 {
            return Ok(None);
        }
        (kv + tc) / kav
    } else {
        match protocol {
            Protocol::Async => {
                let eleven = (kav > mo).then(|| (kv + tc) / (kav - mo));
                match eleven {
                    Some(root) if root < kav / mo => root,
                    _ => {
                        let x = (1.0 - p.alpha) * kv + tc;
                        (mo * mo + mo * x).sqrt() / mo + 1.0
                    }
                }
            }
            Protocol::Sync => {
                let b = 2.0 * mo - kav;
                (b + ((kav - 2.0 * mo).powi(2) + 4.0 * mo * (kv + tc)).sqrt()) / (2.0 * mo)
            }
        }
    };
    let n = root.floor().max(1.0);
    Ok((n <= MCMC_LIMIT as f64).then_some(n as usize))
}
