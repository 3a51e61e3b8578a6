//! Load-balance quality (Cesar et al. 2006): how far an iteration was from perfectly balanced, and a bound
//! on how well it can be balanced with a different number of workers.
//!
//! The model of `Tt(n)` holds for balanced iterations only, so `nworkers` should change only once
//! the load is balanced, and only towards an `n` where balancing is likely to hold.

use super::{ModelError, non_negative, positive, workers};

/// `Q = 1 − (1/n)·Σλ_i / Tt`: the workers' mean idle share of the iteration, from each worker's
/// busy time `λ_i` (`busy_ms`) and the iteration time `Tt`. 0 means perfectly balanced (every
/// worker busy throughout); values near 1 mean most workers waited.
///
/// The value is not clamped: a negative `Q` means some busy time exceeds the iteration time,
/// which only inconsistent measurements produce.
///
/// # Errors
/// [`ModelError::NoWorkers`] for an empty `busy_ms`; [`ModelError::InvalidParameter`] for a
/// negative or non-finite busy time or an iteration time that is not > 0.
///
/// # Examples
/// ```
/// use mw_runtime::model::balance::imbalance;
///
/// assert_eq!(imbalance(&[100.0, 100.0], 100.0)?, 0.0);
/// assert_eq!(imbalance(&[100.0, 50.0], 100.0)?, 0.25);
/// # Ok::<(), mw_runtime::model::ModelError>(())
/// ```
pub fn imbalance(busy_ms: &[f64], iteration_ms: f64) -> Result<f64, ModelError> {
    let n = workers(busy_ms.len())?;
    positive("iteration_ms", iteration_ms)?;
    let mut total = 0.0;
    for &busy in busy_ms {
        non_negative("busy_ms", busy)?;
        total += busy;
    }
    Ok(1.0 - total / n / iteration_ms)
}

/// The bound on `Q` for `n` workers whose tasks take `mean_ms` on average with standard deviation
/// `std_dev_ms`: `1 − 1/(1 + (σ/μ)·√(n/2))`. It grows with `n` and with `σ/μ`: the more workers
/// and the more irregular the tasks, the harder the load is to balance.
///
/// # Errors
/// [`ModelError::InvalidParameter`] unless `μ > 0` and `σ ≥ 0` (both finite);
/// [`ModelError::NoWorkers`] for `n = 0`.
///
/// # Examples
/// ```
/// use mw_runtime::model::balance::quality_bound;
///
/// assert_eq!(quality_bound(10.0, 0.0, 8)?, 0.0);           // identical tasks
/// assert!((quality_bound(10.0, 5.0, 8)? - 0.5).abs() < 1e-12); // σ/μ·√4 = 1
/// # Ok::<(), mw_runtime::model::ModelError>(())
/// ```
pub fn quality_bound(mean_ms: f64, std_dev_ms: f64, n: usize) -> Result<f64, ModelError> {
    positive("mean_ms", mean_ms)?;
    non_negative("std_dev_ms", std_dev_ms)?;
    let n = workers(n)?;
    Ok(1.0 - 1.0 / (1.0 + (std_dev_ms / mean_ms) * (n / 2.0).sqrt()))
}
