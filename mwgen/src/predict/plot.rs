//! `--plot`: predicted total time and cost against workers, on two y axes, the best-time and
//! cheapest counts marked. SVG only, as `mwgen model --plot`.

use std::path::Path;

use plotters::style::RGBColor;

use super::forecast::Forecast;
use crate::two_axes::{self, Chart, Curve, DrawResult, Mark};

const TIME_COLOR: RGBColor = RGBColor(31, 119, 180);
const COST_COLOR: RGBColor = RGBColor(214, 39, 40);

/// Draws the forecast to `path` as SVG.
pub(super) fn draw(path: &Path, subtitle: &str, f: &Forecast) -> DrawResult<()> {
    let seconds: Vec<(f64, f64)> = f
        .rows
        .iter()
        .map(|r| (r.workers as f64, r.total_ms / 1000.0))
        .collect();
    let cost: Vec<(f64, f64)> = f
        .rows
        .iter()
        .map(|r| (r.workers as f64, r.worker_hours))
        .collect();
    let top = |line: &[(f64, f64)]| {
        let hi = line.iter().map(|p| p.1).fold(0.0, f64::max) * 1.05;
        if hi > 0.0 { hi } else { 1.0 }
    };
    let mut marks = Vec::new();
    if let Some(&at) = seconds.iter().find(|p| p.0 == f.best_time as f64) {
        marks.push(Mark {
            at,
            right: false,
            text: format!("fastest: {}", crate::count(f.best_time, "worker")),
            offset: (-60, 12),
        });
    }
    if let Some(&at) = cost.iter().find(|p| p.0 == f.cheapest as f64) {
        marks.push(Mark {
            at,
            right: true,
            text: format!(
                "cheapest near the best: {}",
                crate::count(f.cheapest, "worker")
            ),
            offset: (-60, -22),
        });
    }
    let chart = Chart {
        title: "Predicted run time and cost against workers".to_string(),
        subtitle: subtitle.to_string(),
        x_label: "workers".to_string(),
        left: Curve {
            label: "total time, s (left axis)".to_string(),
            axis: "total time (s)".to_string(),
            color: TIME_COLOR,
            top: top(&seconds),
            points: seconds,
        },
        right: Curve {
            label: "worker-hours (right axis)".to_string(),
            axis: "cost (worker-hours)".to_string(),
            color: COST_COLOR,
            top: top(&cost),
            points: cost,
        },
        marks,
        rule: None,
    };
    two_axes::draw(path, &chart)
}
