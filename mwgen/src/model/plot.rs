//! `--plot`: Tt(n) and Pi(n) on one chart with two y axes, like the paper's Fig. 6.

use std::path::Path;

use mw_runtime::model::Point;
use plotters::style::RGBColor;

use crate::two_axes::{self, Chart, Curve, DrawResult, Mark};

/// What the plot shows.
pub(super) struct Series<'a> {
    pub points: &'a [Point],
    pub best_time: usize,
    pub best_index: usize,
}

const TIME_COLOR: RGBColor = RGBColor(31, 119, 180);
const INDEX_COLOR: RGBColor = RGBColor(214, 39, 40);

/// Draws the curve to `path` as SVG.
pub(super) fn draw(
    path: &Path,
    subtitle: &str,
    series: &Series<'_>,
    mcmc: Option<usize>,
) -> DrawResult<()> {
    let points = series.points;
    let times: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (p.workers as f64, p.time_ms))
        .collect();
    let indices: Vec<(f64, f64)> = points.iter().map(|p| (p.workers as f64, p.pi)).collect();
    let mut marks = Vec::new();
    if let Some(p) = points.iter().find(|p| p.workers == series.best_time) {
        marks.push(Mark {
            at: (p.workers as f64, p.time_ms),
            right: false,
            text: format!("lowest Tt: n = {}, {:.2} ms", p.workers, p.time_ms),
            offset: (-70, 14),
        });
    }
    if let Some(p) = points.iter().find(|p| p.workers == series.best_index) {
        marks.push(Mark {
            at: (p.workers as f64, p.pi),
            right: true,
            text: format!("lowest Pi: n = {}, Tt = {:.2} ms", p.workers, p.time_ms),
            offset: (-70, 14),
        });
    }
    let chart = Chart {
        title: "Predicted iteration time Tt(n) and performance index Pi(n)".to_string(),
        subtitle: subtitle.to_string(),
        x_label: "workers (n)".to_string(),
        left: Curve {
            label: "Tt(n), ms (left axis)".to_string(),
            axis: "Tt (ms)".to_string(),
            color: TIME_COLOR,
            top: axis_top(&times),
            points: times,
        },
        right: Curve {
            label: "Pi(n) (right axis)".to_string(),
            axis: "Pi = n·Tt²/Tc".to_string(),
            color: INDEX_COLOR,
            top: axis_top(&indices),
            points: indices,
        },
        marks,
        rule: mcmc.map(|m| (m as f64, format!("MCMC = {m}"))),
    };
    two_axes::draw(path, &chart)
}

/// The top of a y axis that starts at 0: high enough to show the curve around its minimum well,
/// not so high that the steep start (few workers) squashes it. Values above are clipped.
fn axis_top(curve: &[(f64, f64)]) -> f64 {
    let (lo, hi) = curve
        .iter()
        .map(|&(_, y)| y)
        .filter(|y| y.is_finite())
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), y| {
            (lo.min(y), hi.max(y))
        });
    let top = hi.min(2.5 * lo) * 1.05;
    if top.is_finite() && top > 0.0 {
        top
    } else {
        1.0
    }
}
