//! The model evaluated over a range of worker counts, and its two optima.

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use super::time::{efficiency_of, iteration_time_unchecked, performance_index_of};
use super::{ModelError, Params, Protocol, Regime};

/// The longest range [`sweep`] evaluates, in worker counts.
pub const MAX_SWEEP_POINTS: usize = 1 << 20;

/// The model at one worker count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// `n`.
    pub workers: usize,
    /// `Tt(n)`, in ms.
    pub time_ms: f64,
    /// `E(n) = Tc/(n·Tt(n))`.
    pub efficiency: f64,
    /// `Pi(n) = n·Tt(n)²/Tc`.
    pub pi: f64,
    /// The expression that gave `Tt(n)`.
    pub regime: Regime,
}

/// The model over a range of consecutive worker counts, ascending; never empty.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Curve {
    points: Vec<Point>,
}

/// Evaluates `Tt`, `E` and `Pi` for every `n` in `workers`.
///
/// # Errors
/// [`ModelError::InvalidParameter`] for invalid parameters, [`ModelError::NoWork`] when
/// `Tc = 0` (there is no `Pi` without work), [`ModelError::InvalidRange`] when the range is
/// empty, starts at 0, or holds more than [`MAX_SWEEP_POINTS`] counts.
///
/// # Examples
/// ```
/// use mw_runtime::Protocol;
/// use mw_runtime::model::{Params, sweep};
///
/// let p = Params { tc_ms: 1600.0, volume_bytes: 4096.0, alpha: 0.5, mo_ms: 1.0,
///                  k_ms_per_byte: 0.001, lm_ms: 0.0 };
/// let curve = sweep(&p, Protocol::Async, 10..=60)?;
/// assert_eq!(curve.points().len(), 51);
/// let best = curve.best_index();
/// assert_eq!((best.workers, format!("{:.2}", best.time_ms)), (23, "93.74".to_string()));
/// # Ok::<(), mw_runtime::model::ModelError>(())
/// ```
pub fn sweep(
    p: &Params,
    protocol: Protocol,
    workers: RangeInclusive<usize>,
) -> Result<Curve, ModelError> {
    p.validate()?;
    Curve::build(p.tc_ms, workers, |n| {
        iteration_time_unchecked(p, n, protocol)
    })
}

impl Curve {
    /// Evaluates `time(n)` (`Tt` and its regime) over `workers`, for parameters already checked.
    pub(crate) fn build(
        tc: f64,
        workers: RangeInclusive<usize>,
        time: impl Fn(f64) -> (f64, Regime),
    ) -> Result<Curve, ModelError> {
        let (min, max) = (*workers.start(), *workers.end());
        if min == 0 || min > max || max - min >= MAX_SWEEP_POINTS {
            return Err(ModelError::InvalidRange { min, max });
        }
        let points = workers
            .map(|n| {
                let nf = n as f64;
                let (time_ms, regime) = time(nf);
                Ok(Point {
                    workers: n,
                    time_ms,
                    efficiency: efficiency_of(tc, nf, time_ms)?,
                    pi: performance_index_of(tc, nf, time_ms)?,
                    regime,
                })
            })
            .collect::<Result<Vec<_>, ModelError>>()?;
        Ok(Curve { points })
    }

    /// Every point, by ascending worker count.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// The point at `workers`, if the curve covers it.
    pub fn get(&self, workers: usize) -> Option<&Point> {
        let first = self.points[0].workers;
        self.points.get(workers.checked_sub(first)?)
    }

    /// The point of lowest `Tt` (the fewest workers among equals).
    pub fn best_time(&self) -> &Point {
        self.argmin(|p| p.time_ms)
    }

    /// The point of lowest `Pi` (the fewest workers among equals): the best time per resource,
    /// the tuner's choice of `nworkers`.
    pub fn best_index(&self) -> &Point {
        self.argmin(|p| p.pi)
    }

    /// The curve up to `limit` workers (typically the [`mcmc`](super::mcmc)), so that its optima
    /// do not go past it. `None` keeps the whole curve. If the curve starts above `limit`, only
    /// its first point is kept: a curve is never empty.
    ///
    /// # Examples
    /// ```
    /// use mw_runtime::Protocol;
    /// use mw_runtime::model::{Params, mcmc, sweep};
    ///
    /// // Cheap work, costly messages: the master saturates early.
    /// let p = Params { tc_ms: 100.0, volume_bytes: 1e6, alpha: 0.9, mo_ms: 0.5,
    ///                  k_ms_per_byte: 1e-4, lm_ms: 0.0 };
    /// let limit = mcmc(&p, Protocol::Async)?;
    /// assert_eq!(limit, Some(2));
    /// let curve = sweep(&p, Protocol::Async, 1..=32)?.capped(limit);
    /// assert!(curve.best_index().workers <= 2);
    /// # Ok::<(), mw_runtime::model::ModelError>(())
    /// ```
    pub fn capped(&self, limit: Option<usize>) -> Curve {
        let Some(limit) = limit else {
            return self.clone();
        };
        let keep = self.points.iter().filter(|p| p.workers <= limit).count();
        Curve {
            points: self.points[..keep.max(1)].to_vec(),
        }
    }

    fn argmin(&self, key: impl Fn(&Point) -> f64) -> &Point {
        let mut best = &self.points[0];
        for p in &self.points[1..] {
            if key(p) < key(best) {
                best = p;
            }
        }
        best
    }
}
