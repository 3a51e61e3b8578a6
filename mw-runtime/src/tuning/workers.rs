//! `WorkersTunlet`: the number of workers from the performance model (DESIGN §6–7).

use serde_json::json;

use super::decide::Proposal;
use super::estimate::Estimate;
use crate::config::{Objective, Protocol};
use crate::measure::Observation;
use crate::model::balance::quality_bound;
use crate::tunables::Change;

/// Imbalance tolerated above the model's bound before the load counts as unbalanced.
pub(crate) const BALANCE_SLACK: f64 = 0.05;

/// Where the search happens.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Range {
    pub lo: usize,
    pub hi: usize,
}

/// The model at one worker count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Point {
    pub workers: usize,
    pub time_ms: f64,
    pub pi: f64,
}

/// Evaluates `Tt(n)` and `Pi(n) = n·Tt(n)²/Tc` over the range with the model variant that fits
/// the application (the broadcast one when the shared part dominates what is sent), `Tt`
/// calibrated by what the model left unexplained in recent iterations, never past the MCMC; and
/// proposes the `n` of lowest `Pi` (objective `index`) or of lowest `Tt` (`time`), the fewer
/// workers among equals. More workers are proposed only once the load is balanced: the measured
/// imbalance of the distribution phase within its bound for the current `n`, plus one task of
/// tail and [`BALANCE_SLACK`]. Fewer workers can always be proposed (they balance more easily).
pub(crate) fn propose(
    est: &Estimate,
    obs: &Observation,
    current: usize,
    range: Range,
    objective: Objective,
    protocol: Protocol,
) -> Option<Proposal> {
    let tasks = obs.facts.tasks;
    let variant = est.variant(&est.now, tasks);
    let mcmc = variant.mcmc(protocol);
    let hi = range.hi.min(tasks).min(mcmc.unwrap_or(usize::MAX)).max(1);
    let lo = range.lo.min(hi);
    let tc = variant.tc_ms();
    let point = |n: usize| -> Option<Point> {
        let t = est.time(&variant, n, protocol)?;
        Some(Point {
            workers: n,
            time_ms: t,
            pi: n as f64 * t * t / tc,
        })
    };
    let key = |p: &Point| match objective {
        Objective::Index => p.pi,
        Objective::Time => p.time_ms,
    };
    let mut best: Option<Point> = None;
    for n in lo..=hi {
        let p = point(n)?;
        if best.is_none_or(|b| key(&p) < key(&b)) {
            best = Some(p);
        }
    }
    let best = best?;
    let target = best.workers;
    if target == current {
        return None;
    }
    // Balance: the idle share of the distribution phase beyond what the model's communication
    // explains for a balanced iteration at this n, against the bound for this n.
    let mean = est.now.task_ms.max(f64::MIN_POSITIVE);
    let bound = quality_bound(mean, est.now.task_sd_ms, current.max(1)).unwrap_or(0.0);
    let mo = est.link.map_or(0.0, |l| l.mo_ms);
    let time = obs.facts.time_ms;
    let tail = if time > 0.0 {
        (mean + 2.0 * mo) / time
    } else {
        0.0
    };
    let expected = variant.time(current, protocol).map_or(0.0, |t| {
        let distribution = t - obs.serial_ms;
        if distribution > 0.0 {
            (1.0 - tc / current as f64 / distribution).max(0.0)
        } else {
            0.0
        }
    });
    let imbalance = (obs.distribution_imbalance() - expected).max(0.0);
    let allowance = bound + tail + BALANCE_SLACK;
    if target > current && imbalance > allowance {
        return None;
    }
    let now = point(current)?;
    let (gain, sensitivity, what) = match objective {
        Objective::Index => (
            1.0 - best.pi / now.pi,
            2.0,
            format!(
                "Pi({target}) = {:.3} < Pi({current}) = {:.3}",
                best.pi, now.pi
            ),
        ),
        Objective::Time => (
            1.0 - best.time_ms / now.time_ms,
            1.0,
            format!(
                "Tt({target}) = {:.2} ms < Tt({current}) = {:.2} ms",
                best.time_ms, now.time_ms
            ),
        ),
    };
    if !(gain.is_finite() && gain > 0.0) {
        return None;
    }
    let (k, mcmc_text) = (
        est.link.map_or(0.0, |l| l.k_ms_per_byte),
        mcmc.map_or("none".to_owned(), |m| m.to_string()),
    );
    let reason = format!(
        "{} model: {what}; Tt {:.2} → {:.2} ms; Tc {tc:.1} ms, mo {mo:.4} ms, k {k:.3e} ms/B, \
         MCMC {mcmc_text}, Q {imbalance:.2} ≤ {allowance:.2}",
        variant.name(),
        now.time_ms,
        best.time_ms,
    );
    let details = json!({
        "tunlet": "workers",
        "objective": objective.to_string(),
        "variant": variant.name(),
        "inputs": {
            "tasks": tasks,
            "tc_ms": tc,
            "task_mean_ms": est.now.task_ms,
            "task_stddev_ms": est.now.task_sd_ms,
            "mo_ms": mo,
            "k_ms_per_byte": k,
            "lm_ms": est.now.lm_ms(tasks),
            "calibration_ms": est.calibration_ms,
            "shared_bytes": est.shared_bytes,
            "imbalance": obs.distribution_imbalance(),
            "imbalance_beyond_model": imbalance,
            "imbalance_bound": bound,
        },
        "model": {
            "mcmc": mcmc,
            "range": [lo, hi],
            "current": {"workers": current, "time_ms": now.time_ms, "pi": now.pi},
            "proposed": {"workers": target, "time_ms": best.time_ms, "pi": best.pi},
        },
    });
    Some(Proposal {
        change: Change::Nworkers(target),
        from: current as f64,
        to: target as f64,
        gain,
        sensitivity,
        predicted_ms: best.time_ms,
        reason,
        details,
    })
}
