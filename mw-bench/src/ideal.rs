//! The ideal iteration time the policies are measured against, and the arithmetic of comparing.
//!
//! Ideal: every worker busy all the time on an equal share of the iteration's task time, plus
//! the communication the model (Cesar et al. 2006, expressions 7–9) predicts for the iteration's volume
//! with the `mo` and `k` the runtime estimated — i.e. `Tt(n)` of the balanced model with `Tc` the
//! drawn task time and `λm = 0`. Without estimates of `mo` and `k` it is `Tc / n`.

use mw_runtime::Protocol;
use mw_runtime::metrics::IterationMetrics;
use mw_runtime::model::{self, Params};

/// The ideal time of one iteration whose tasks took `task_ms` in all, in ms.
pub fn iteration_ms(task_ms: f64, it: &IterationMetrics, protocol: Protocol) -> f64 {
    let n = it.workers.max(1);
    let compute = task_ms / n as f64;
    let (Some(mo_ms), Some(k_ms_per_byte)) = (it.mo_ms, it.k_ms_per_byte) else {
        return compute;
    };
    let params = Params {
        tc_ms: task_ms,
        volume_bytes: it.volume_bytes as f64,
        alpha: it.alpha,
        mo_ms,
        k_ms_per_byte,
        lm_ms: 0.0,
    };
    model::iteration_time(&params, n, protocol).unwrap_or(compute)
}

/// Measured over ideal: 1 is ideal, 1.25 is 25 % slower than ideal.
pub fn ratio(measured: f64, ideal: f64) -> f64 {
    if ideal > 0.0 {
        measured / ideal
    } else {
        f64::NAN
    }
}

/// The median of `values` (the mean of the middle two for an even count); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// A median with the least and largest of its samples.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of the finite `values`; NaN throughout when there are none.
    pub fn of(values: &[f64]) -> Spread {
        let finite = values.iter().copied().filter(|x| x.is_finite());
        Spread {
            median: median(values),
            min: finite.clone().fold(f64::NAN, f64::min),
            max: finite.fold(f64::NAN, f64::max),
        }
    }

    /// Whether `value` lies inside the range: a ratio whose range holds 1 is no difference.
    pub fn holds(&self, value: f64) -> bool {
        self.min <= value && value <= self.max
    }

    /// A ratio: `median× (min–max)` with two decimals.
    pub fn times(&self) -> String {
        format!("{:.2}× ({:.2}–{:.2})", self.median, self.min, self.max)
    }

    /// `median (min–max)` with `digits` decimals.
    pub fn text(&self, digits: usize) -> String {
        format!(
            "{:.digits$} ({:.digits$}–{:.digits$})",
            self.median, self.min, self.max
        )
    }
}

/// The position of the smallest finite value, if any.
pub fn argmin(values: &[f64]) -> Option<usize> {
    values
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map(|(i, _)| i)
}

/// `value` with two decimals, or as many more (up to four) as it takes for the text to be on
/// the same side of `target` as the value: a median of 1.054 against a target of at most 1.05
/// reads 1.054, not 1.05, which would read as met.
pub fn against(value: f64, target: f64) -> String {
    let met = value <= target;
    (2..=4)
        .map(|digits| format!("{value:.digits$}"))
        .find(|text| {
            text.parse::<f64>()
                .is_ok_and(|shown| (shown <= target) == met)
        })
        .unwrap_or_else(|| format!("{value:.4}"))
}

/// The performance index `Pi = n·Tt²/Tc` of a measured iteration (Cesar et al. 2006, expression 13).
pub fn performance_index(workers: usize, time_ms: f64, tc_ms: f64) -> f64 {
    if tc_ms > 0.0 {
        workers as f64 * time_ms * time_ms / tc_ms
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iteration(workers: usize, mo: Option<f64>, k: Option<f64>) -> IterationMetrics {
        IterationMetrics {
            workers,
            volume_bytes: 4096,
            alpha: 0.5,
            mo_ms: mo,
            k_ms_per_byte: k,
            ..IterationMetrics::default()
        }
    }

    #[test]
    fn without_estimates_the_ideal_is_the_even_share() {
        assert_eq!(
            iteration_ms(1000.0, &iteration(4, None, Some(0.001)), Protocol::Async),
            250.0
        );
    }

    #[test]
    fn with_estimates_the_ideal_adds_the_modelled_communication() {
        // The paper's Fig. 6 example at 40 workers: Tt = 81.10 ms (latency-bound, expression 7).
        let ideal = iteration_ms(
            1600.0,
            &iteration(40, Some(1.0), Some(0.001)),
            Protocol::Async,
        );
        assert!((ideal - 81.1024).abs() < 1e-3, "{ideal}");
        // Sync (9) at 4 workers: 5·1 + ((3·0.5 + 1)·4.096 + 1600)/4 = 407.56.
        let sync = iteration_ms(
            1600.0,
            &iteration(4, Some(1.0), Some(0.001)),
            Protocol::Sync,
        );
        assert!((sync - 407.56).abs() < 1e-9, "{sync}");
    }

    #[test]
    fn a_value_shown_against_its_target_is_on_its_side() {
        assert_eq!(against(1.054, 1.05), "1.054");
        assert_eq!(against(1.0504, 1.05), "1.0504");
        assert_eq!(against(1.046, 1.05), "1.05");
        assert_eq!(against(1.03, 1.05), "1.03");
        assert_eq!(against(1.2, 1.05), "1.20");
        assert_eq!(against(f64::NAN, 1.05), "NaN");
    }

    #[test]
    fn ratios_medians_and_minima() {
        assert_eq!(ratio(125.0, 100.0), 1.25);
        assert!(ratio(1.0, 0.0).is_nan());
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(argmin(&[3.0, f64::NAN, 1.0, 1.0, 2.0]), Some(2));
        assert_eq!(argmin(&[f64::NAN]), None);
        assert_eq!(
            performance_index(23, 93.7433, 1600.0),
            23.0 * 93.7433 * 93.7433 / 1600.0
        );
        assert!(performance_index(2, 1.0, 0.0).is_nan());
    }

    #[test]
    fn a_spread_holds_its_range() {
        let s = Spread::of(&[1.2, 0.9, f64::NAN, 1.05]);
        assert_eq!((s.median, s.min, s.max), (1.05, 0.9, 1.2));
        assert!(s.holds(1.0) && !s.holds(1.3));
        assert_eq!(s.text(2), "1.05 (0.90–1.20)");
        assert_eq!(s.times(), "1.05× (0.90–1.20)");
        assert!(!Spread::of(&[]).holds(1.0));
    }
}
