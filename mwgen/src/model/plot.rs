//! `--plot`: Tt(n) and Pi(n) on one chart with two y axes, like the paper's Fig. 6.
//!
//! SVG only: plotters writes text as SVG `<text>` elements and leaves fonts to the viewer, so
//! nothing here needs a font library.

use std::path::Path;

use mw_runtime::model::Point;
use plotters::prelude::*;

/// What the plot shows.
pub(super) struct Series<'a> {
    pub points: &'a [Point],
    pub best_time: usize,
    pub best_index: usize,
}

const TIME_COLOR: RGBColor = RGBColor(31, 119, 180);
const INDEX_COLOR: RGBColor = RGBColor(214, 39, 40);
const MCMC_COLOR: RGBColor = RGBColor(127, 127, 127);

type DrawResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Draws the curve to `path` as SVG.
pub(super) fn draw(
    path: &Path,
    subtitle: &str,
    series: &Series<'_>,
    mcmc: Option<usize>,
) -> DrawResult<()> {
    let points = series.points;
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Err("nothing to plot".into());
    };
    let (mut x0, mut x1) = (first.workers as f64, last.workers as f64);
    if x1 - x0 < 1.0 {
        x0 -= 1.0;
        x1 += 1.0;
    }
    let times: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (p.workers as f64, p.time_ms))
        .collect();
    let indices: Vec<(f64, f64)> = points.iter().map(|p| (p.workers as f64, p.pi)).collect();
    let time_top = axis_top(&times);
    let index_top = axis_top(&indices);

    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(56);
    title.draw(&Text::new(
        "Predicted iteration time Tt(n) and performance index Pi(n)",
        (16, 8),
        ("sans-serif", 22),
    ))?;
    title.draw(&Text::new(
        subtitle.to_string(),
        (16, 34),
        ("sans-serif", 13),
    ))?;

    let mut chart = ChartBuilder::on(&body)
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .right_y_label_area_size(72)
        .build_cartesian_2d(x0..x1, 0.0..time_top)?
        .set_secondary_coord(x0..x1, 0.0..index_top);
    chart
        .configure_mesh()
        .x_desc("workers (n)")
        .y_desc("Tt (ms)")
        .x_label_formatter(&|v| whole(*v))
        .y_label_formatter(&|v| short(*v))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    chart
        .configure_secondary_axes()
        .y_desc("Pi = n·Tt²/Tc")
        .label_style(("sans-serif", 12).into_font().color(&INDEX_COLOR))
        .y_label_formatter(&|v| short(*v))
        .draw()?;

    if let Some(m) = mcmc.map(|m| m as f64).filter(|m| (x0..=x1).contains(m)) {
        chart
            .draw_series(LineSeries::new(
                [(m, 0.0), (m, time_top)],
                MCMC_COLOR.stroke_width(1),
            ))?
            .label(format!("MCMC = {m}"))
            .legend(|(x, y)| PathElement::new([(x + 10, y - 6), (x + 10, y + 6)], MCMC_COLOR));
    }

    for (i, piece) in clip_above(&times, time_top).into_iter().enumerate() {
        let drawn = chart.draw_series(LineSeries::new(piece, TIME_COLOR.stroke_width(2)))?;
        if i == 0 {
            drawn.label("Tt(n), ms (left axis)").legend(|(x, y)| {
                PathElement::new([(x, y), (x + 20, y)], TIME_COLOR.stroke_width(2))
            });
        }
    }
    for (i, piece) in clip_above(&indices, index_top).into_iter().enumerate() {
        let drawn =
            chart.draw_secondary_series(LineSeries::new(piece, INDEX_COLOR.stroke_width(2)))?;
        if i == 0 {
            drawn.label("Pi(n) (right axis)").legend(|(x, y)| {
                PathElement::new([(x, y), (x + 20, y)], INDEX_COLOR.stroke_width(2))
            });
        }
    }

    if let Some(p) = points.iter().find(|p| p.workers == series.best_time) {
        chart.draw_series([EmptyElement::at((p.workers as f64, p.time_ms))
            + Circle::new((0, 0), 6, TIME_COLOR.filled())
            + Text::new(
                format!("lowest Tt: n = {}, {:.2} ms", p.workers, p.time_ms),
                (-70, 14),
                ("sans-serif", 13).into_font().color(&TIME_COLOR),
            )])?;
    }
    if let Some(p) = points.iter().find(|p| p.workers == series.best_index) {
        chart.draw_secondary_series([EmptyElement::at((p.workers as f64, p.pi))
            + Circle::new((0, 0), 6, INDEX_COLOR.filled())
            + Text::new(
                format!("lowest Pi: n = {}, Tt = {:.2} ms", p.workers, p.time_ms),
                (-70, 14),
                ("sans-serif", 13).into_font().color(&INDEX_COLOR),
            )])?;
    }

    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 13))
        .draw()?;
    root.present()?;
    Ok(())
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

/// The parts of a polyline at or below `top`, cut where it crosses `top`.
fn clip_above(line: &[(f64, f64)], top: f64) -> Vec<Vec<(f64, f64)>> {
    let mut pieces = Vec::new();
    let mut piece: Vec<(f64, f64)> = Vec::new();
    let mut previous: Option<(f64, f64)> = None;
    for &(x, y) in line {
        if let Some((px, py)) = previous
            && (py > top) != (y > top)
        {
            let cross = (px + (x - px) * (top - py) / (y - py), top);
            piece.push(cross);
            if y > top {
                pieces.push(std::mem::take(&mut piece));
            }
        }
        if y <= top {
            piece.push((x, y));
        }
        previous = Some((x, y));
    }
    if !piece.is_empty() {
        pieces.push(piece);
    }
    pieces
}

/// Worker-count tick labels: whole numbers only.
fn whole(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round())
    } else {
        String::new()
    }
}

/// Value tick labels: few digits, no exponent for ordinary magnitudes.
fn short(v: f64) -> String {
    if v == 0.0 || (v.abs() < 1e6 && v == v.round()) {
        format!("{v:.0}")
    } else if v.abs() >= 1e6 || v.abs() < 1e-2 {
        format!("{v:.1e}")
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::clip_above;

    #[test]
    fn clipping_cuts_where_the_line_crosses() {
        let line = [(1.0, 10.0), (2.0, 4.0), (3.0, 2.0), (4.0, 6.0)];
        let pieces = clip_above(&line, 5.0);
        assert_eq!(
            pieces,
            vec![vec![
                (1.0 + 5.0 / 6.0, 5.0),
                (2.0, 4.0),
                (3.0, 2.0),
                (3.75, 5.0)
            ]]
        );
        assert_eq!(clip_above(&line, 100.0), vec![line.to_vec()]);
        assert!(clip_above(&line, 1.0).is_empty());
    }
}
