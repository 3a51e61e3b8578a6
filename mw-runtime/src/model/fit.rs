//! Estimating `mo` and `k` from observed transfers (Yalçınkaya and Steihaug do the same).

use serde::{Deserialize, Serialize};

/// A line `transfer_ms = mo + k·bytes` fitted to observed transfers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Fit {
    /// Per-message start-up time, in ms (≥ 0).
    pub mo_ms: f64,
    /// Per-byte cost, in ms per byte (≥ 0).
    pub k_ms_per_byte: f64,
    /// Coefficient of determination of the fitted line over the samples used: 1 is a perfect
    /// fit. It can fall below 0 when a clamp moved the line away from the samples' trend.
    pub r2: f64,
    /// How many samples were used (the finite ones with bytes ≥ 0).
    pub samples: usize,
}

/// `mo` and `k` as the tuner last fitted them ([`fit_latency_bandwidth`]), as the metrics of an
/// iteration record them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Link {
    pub mo_ms: f64,
    pub k_ms_per_byte: f64,
    /// Transfers the fit used.
    pub samples: usize,
    /// Whether `k` comes from a fit the tuner trusted (its r² high enough); otherwise `k` is the
    /// last such fit's, or 0.
    pub fitted: bool,
}

/// Least-squares fit of `transfer_ms = mo + k·bytes` to `(bytes, transfer_ms)` samples, with
/// `mo ≥ 0` and `k ≥ 0`.
///
/// Choices at the edges:
/// - samples with a non-finite value or negative bytes are skipped; negative transfer times are
///   kept (timing noise on tiny messages averages out over the fit);
/// - `None` with fewer than 2 usable samples, or when all of them have the same byte count:
///   latency and per-byte cost cannot be told apart then, and the caller should keep its
///   previous estimate;
/// - if the unconstrained line has a negative intercept or slope, the constrained least-squares
///   solution is returned instead: the better (smaller squared error) of the line through the
///   origin (`mo = 0`, `k = Σb·t/Σb²`, at least 0) and the flat line (`k = 0`, `mo` = mean time,
///   at least 0). For a convex quadratic error with a box constraint, the optimum lies on the
///   boundary when the unconstrained one is outside, so this is the exact constrained optimum.
///
/// # Examples
/// ```
/// use mw_runtime::model::fit_latency_bandwidth;
///
/// // 0.05 ms start-up, 1 GB/s.
/// let samples: Vec<(f64, f64)> =
///     [1e3, 1e4, 1e5, 1e6].iter().map(|&b| (b, 0.05 + 1e-6 * b)).collect();
/// let fit = fit_latency_bandwidth(&samples).unwrap();
/// assert!((fit.mo_ms - 0.05).abs() < 1e-9);
/// assert!((fit.k_ms_per_byte - 1e-6).abs() < 1e-15);
/// assert!(fit.r2 > 0.999_999);
///
/// assert!(fit_latency_bandwidth(&[(100.0, 1.0), (100.0, 1.2)]).is_none());
/// ```
pub fn fit_latency_bandwidth(samples: &[(f64, f64)]) -> Option<Fit> {
    let used: Vec<(f64, f64)> = samples
        .iter()
        .copied()
        .filter(|&(b, t)| b.is_finite() && t.is_finite() && b >= 0.0)
        .collect();
    if used.len() < 2 {
        return None;
    }
    let count = used.len() as f64;
    let mean_b = used.iter().map(|s| s.0).sum::<f64>() / count;
    let mean_t = used.iter().map(|s| s.1).sum::<f64>() / count;
    let (mut sbb, mut sbt) = (0.0, 0.0);
    for &(b, t) in &used {
        sbb += (b - mean_b) * (b - mean_b);
        sbt += (b - mean_b) * (t - mean_t);
    }
    // All byte counts equal (up to rounding): no slope can be fitted.
    if sbb <= (f64::EPSILON * mean_b).powi(2) * count || sbb == 0.0 {
        return None;
    }
    let sse = |mo: f64, k: f64| -> f64 {
        used.iter()
            .map(|&(b, t)| (t - mo - k * b).powi(2))
            .sum::<f64>()
    };
    let k = sbt / sbb;
    let mo = mean_t - k * mean_b;
    let (mo, k) = if mo >= 0.0 && k >= 0.0 {
        (mo, k)
    } else {
        let through_origin = {
            let sbb0: f64 = used.iter().map(|&(b, _)| b * b).sum();
            let sbt0: f64 = used.iter().map(|&(b, t)| b * t).sum();
            (0.0, (sbt0 / sbb0).max(0.0))
        };
        let flat = (mean_t.max(0.0), 0.0);
        if sse(through_origin.0, through_origin.1) <= sse(flat.0, flat.1) {
            through_origin
        } else {
            flat
        }
    };
    let sst: f64 = used.iter().map(|&(_, t)| (t - mean_t).powi(2)).sum();
    let residual = sse(mo, k);
    let r2 = if sst > 0.0 {
        1.0 - residual / sst
    } else if residual <= f64::EPSILON * mean_t.abs().max(1.0) {
        1.0
    } else {
        0.0
    };
    Some(Fit {
        mo_ms: mo,
        k_ms_per_byte: k,
        r2,
        samples: used.len(),
    })
}
