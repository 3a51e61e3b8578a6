//! `--plot`: predicted total time and cost against workers, on two y axes, the best-time and
//! cheapest counts marked. SVG only, as `mwgen model --plot`.

use std::path::Path;

use plotters::prelude::*;

use super::forecast::Forecast;

const TIME_COLOR: RGBColor = RGBColor(31, 119, 180);
const COST_COLOR: RGBColor = RGBColor(214, 39, 40);

type DrawResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Draws the forecast to `path` as SVG.
pub(super) fn draw(path: &Path, subtitle: &str, f: &Forecast) -> DrawResult<()> {
    let (Some(first), Some(last)) = (f.rows.first(), f.rows.last()) else {
        return Err("nothing to plot".into());
    };
    let (mut x0, mut x1) = (first.workers as f64, last.workers as f64);
    if x1 - x0 < 1.0 {
        x0 -= 1.0;
        x1 += 1.0;
    }
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

    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(56);
    title.draw(&Text::new(
        "Predicted run time and cost against workers",
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
        .build_cartesian_2d(x0..x1, 0.0..top(&seconds))?
        .set_secondary_coord(x0..x1, 0.0..top(&cost));
    chart
        .configure_mesh()
        .x_desc("workers")
        .y_desc("total time (s)")
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    chart
        .configure_secondary_axes()
        .y_desc("cost (worker-hours)")
        .label_style(("sans-serif", 12).into_font().color(&COST_COLOR))
        .draw()?;
    chart
        .draw_series(LineSeries::new(seconds.clone(), TIME_COLOR.stroke_width(2)))?
        .label("total time, s (left axis)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], TIME_COLOR.stroke_width(2)));
    chart
        .draw_secondary_series(LineSeries::new(cost.clone(), COST_COLOR.stroke_width(2)))?
        .label("worker-hours (right axis)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], COST_COLOR.stroke_width(2)));
    if let Some(&(x, y)) = seconds.iter().find(|p| p.0 == f.best_time as f64) {
        chart.draw_series([EmptyElement::at((x, y))
            + Circle::new((0, 0), 6, TIME_COLOR.filled())
            + Text::new(
                format!("fastest: {} workers", f.best_time),
                (-60, 12),
                ("sans-serif", 13).into_font().color(&TIME_COLOR),
            )])?;
    }
    if let Some(&(x, y)) = cost.iter().find(|p| p.0 == f.cheapest as f64) {
        chart.draw_secondary_series([EmptyElement::at((x, y))
            + Circle::new((0, 0), 6, COST_COLOR.filled())
            + Text::new(
                format!("cheapest near the best: {} workers", f.cheapest),
                (-60, -22),
                ("sans-serif", 13).into_font().color(&COST_COLOR),
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
