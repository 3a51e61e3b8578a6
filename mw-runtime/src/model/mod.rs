//! The performance model of a balanced Master/Worker iteration: pure functions of the measured
//! parameters, implementing the model of Cesar et al. 2006 (see README.md beside this file) and nothing else.
//!
//! Units are milliseconds and bytes throughout. The pieces:
//!
//! - [`iteration_time`] — `Tt(n)`, expressions (7)–(9), with the async [`Regime`] chosen for each
//!   `n`; [`efficiency`] and [`performance_index`] — `E(n)` and `Pi(n)`, expression (13).
//! - [`sweep`] — the whole curve over a range of `n`, with its [`Curve::best_time`] (argmin `Tt`)
//!   and [`Curve::best_index`] (argmin `Pi`, the tuner's choice).
//! - [`mcmc`] — the Master's Chunk Managing Capability, (10)–(12).
//! - [`broadcast`] — the variant where every worker receives the same data (N-Body).
//! - [`balance`] — the load-balance quality `Q` and its bound for a different `n`.
//! - [`fit_latency_bandwidth`] — `mo` and `k` by least squares from observed transfers.
//!
//! The folder's `README.md` derives the formulas and explains the choices made at the edges.
//!
//! Every function checks its inputs and returns a [`ModelError`] rather than panicking or
//! producing NaN: parameters must be finite and non-negative, `α` within `[0, 1]`, `n ≥ 1`, and
//! `Tc > 0` wherever the result divides by it (`E`, `Pi`).
//!
//! # Examples
//!
//! The paper's worked example (its Fig. 6):
//!
//! ```
//! use mw_runtime::Protocol;
//! use mw_runtime::model::{self, Params};
//!
//! let p = Params {
//!     tc_ms: 1600.0,
//!     volume_bytes: 4096.0,
//!     alpha: 0.5,
//!     mo_ms: 1.0,
//!     k_ms_per_byte: 0.001,
//!     lm_ms: 0.0,
//! };
//! let curve = model::sweep(&p, Protocol::Async, 1..=60)?;
//! assert_eq!(curve.best_time().workers, 40);
//! assert_eq!(curve.best_index().workers, 23);
//! assert_eq!(model::mcmc(&p, Protocol::Async)?, Some(41));
//! # Ok::<(), model::ModelError>(())
//! ```

pub mod balance;
pub mod broadcast;
mod curve;
mod error;
mod fit;
mod mcmc;
mod time;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub(crate) use crate::protocol::Protocol;
pub use curve::{Curve, MAX_SWEEP_POINTS, Point, sweep};
pub use error::ModelError;
pub(crate) use fit::Link;
pub use fit::{Fit, fit_latency_bandwidth};
pub use mcmc::{MCMC_LIMIT, master_falls_behind, mcmc, mcmc_closed_form};
pub use time::{efficiency, iteration_time, performance_index, regime, round_trip, send_phase};

/// The measured parameters of one iteration of a balanced application (Cesar et al. 2006).
///
/// A balanced application sends `αV/n` bytes to each worker, gets `(1−α)V/n` back from each, and
/// each worker computes for `Tc/n`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// `Tc`: total worker processing time of the iteration, in ms.
    pub tc_ms: f64,
    /// `V`: total bytes moved in the iteration, both directions.
    pub volume_bytes: f64,
    /// `α`: the share of `V` sent to the workers (the rest comes back), in `[0, 1]`.
    pub alpha: f64,
    /// `mo`: per-message start-up time (latency), in ms.
    pub mo_ms: f64,
    /// `k`: per-byte cost (inverse bandwidth), in ms per byte.
    pub k_ms_per_byte: f64,
    /// `λm`: the master's own processing time in the iteration, in ms.
    pub lm_ms: f64,
}

impl Params {
    /// Checks that every parameter is finite and non-negative and that `α` lies in `[0, 1]`.
    ///
    /// # Errors
    /// [`ModelError::InvalidParameter`] naming the first offending field.
    ///
    /// # Examples
    /// ```
    /// use mw_runtime::model::{ModelError, Params};
    ///
    /// let p = Params { tc_ms: 10.0, volume_bytes: 100.0, alpha: 1.5, mo_ms: 0.1,
    ///                  k_ms_per_byte: 1e-6, lm_ms: 0.0 };
    /// assert!(matches!(p.validate(), Err(ModelError::InvalidParameter { name: "alpha", .. })));
    /// ```
    pub fn validate(&self) -> Result<(), ModelError> {
        non_negative("tc_ms", self.tc_ms)?;
        non_negative("volume_bytes", self.volume_bytes)?;
        fraction("alpha", self.alpha)?;
        non_negative("mo_ms", self.mo_ms)?;
        non_negative("k_ms_per_byte", self.k_ms_per_byte)?;
        non_negative("lm_ms", self.lm_ms)
    }

    /// `k·V`: the time to move the whole volume at full bandwidth, in ms.
    pub(crate) fn kv(&self) -> f64 {
        self.k_ms_per_byte * self.volume_bytes
    }

    /// `k·α·V`: the time to move the part sent to the workers, in ms.
    pub(crate) fn k_alpha_v(&self) -> f64 {
        self.k_ms_per_byte * self.alpha * self.volume_bytes
    }
}

/// Which expression of the model sheet gives `Tt(n)`.
///
/// Under the async protocol the regime depends on `n`: a message to one worker costs `mo` to
/// start and `k·αV/n` to move, and the larger of the two dominates (Cesar et al. 2006).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Regime {
    /// Async, `mo ≥ k·(bytes of one message)`: start-up times add up, transfers overlap
    /// (expression (7); broadcast: POETRIES' (6)).
    #[serde(rename = "latency")]
    LatencyBound,
    /// Async, `mo < k·(bytes of one message)`: transfers add up, start-ups overlap
    /// (expression (8); broadcast: POETRIES' (5)).
    #[serde(rename = "bandwidth")]
    BandwidthBound,
    /// Sync protocol: both add up (expression (9)).
    #[serde(rename = "sync")]
    Synchronous,
}

impl Regime {
    /// Short lowercase name: `latency`, `bandwidth` or `sync`.
    pub fn name(self) -> &'static str {
        match self {
            Regime::LatencyBound => "latency",
            Regime::BandwidthBound => "bandwidth",
            Regime::Synchronous => "sync",
        }
    }
}

impl std::fmt::Display for Regime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

pub(crate) fn non_negative(name: &'static str, value: f64) -> Result<(), ModelError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(ModelError::InvalidParameter {
            name,
            value,
            expected: "a finite number >= 0",
        })
    }
}

pub(crate) fn positive(name: &'static str, value: f64) -> Result<(), ModelError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(ModelError::InvalidParameter {
            name,
            value,
            expected: "a finite number > 0",
        })
    }
}

fn fraction(name: &'static str, value: f64) -> Result<(), ModelError> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(ModelError::InvalidParameter {
            name,
            value,
            expected: "a number in [0, 1]",
        })
    }
}

pub(crate) fn workers(n: usize) -> Result<f64, ModelError> {
    if n == 0 {
        Err(ModelError::NoWorkers)
    } else {
        // Exact for any worker count below 2^53.
        Ok(n as f64)
    }
}
