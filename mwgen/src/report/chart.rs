//! A plain line chart in the report's style, for callers outside the report (the benchmark
//! suite draws its figures with it): named series of `(x, y)` points, solid or dashed, a title,
//! axis labels and the legend above the plot, drawn to an SVG string with the same plotters code
//! and colours as `mwgen report`.
//!
//! # Examples
//! ```
//! use mwgen::report::chart::{LineChart, Series};
//!
//! let chart = LineChart {
//!     title: "Iteration time".into(),
//!     x_label: "workers".into(),
//!     y_label: "time (ms)".into(),
//!     series: vec![
//!         Series::line("measured", vec![(1.0, 100.0), (2.0, 52.0), (4.0, 27.0)]),
//!         Series::dashed("predicted", vec![(1.0, 100.0), (2.0, 50.0), (4.0, 25.0)]),
//!     ],
//!     log_x: false,
//! };
//! let svg = mwgen::report::chart::draw(&chart).unwrap();
//! assert!(svg.starts_with("<svg"));
//! ```

use plotters::prelude::*;

use super::plots::{
    BLUE, GREEN, GREY, Key, ORANGE, PURPLE, RED, header, placeholder, short, svg, value_range,
};

/// Colours given to the series in order (then repeated).
const PALETTE: [RGBColor; 6] = [BLUE, ORANGE, GREEN, RED, PURPLE, GREY];

/// One named line of a [`LineChart`].
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    /// Points in the order they are joined; non-finite values are left out.
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

impl Series {
    /// A solid line.
    pub fn line(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            label: label.into(),
            points,
            dashed: false,
        }
    }

    /// A dashed line (for predictions and references).
    pub fn dashed(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            dashed: true,
            ..Series::line(label, points)
        }
    }
}

/// A chart of lines over a shared x axis.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// A logarithmic x axis (for worker counts 1, 2, 4, 8, ...); x values must then be positive.
    pub log_x: bool,
}

/// The error of drawing a chart (plotters' own error, as text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartError(pub String);

impl std::fmt::Display for ChartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot draw the chart: {}", self.0)
    }
}

impl std::error::Error for ChartError {}

/// Draws `chart` as an SVG document; a chart with no finite point says so in its middle.
///
/// # Errors
/// When plotters fails to lay out the chart.
pub fn draw(chart: &LineChart) -> Result<String, ChartError> {
    draw_svg(chart).map_err(|e| ChartError(e.to_string()))
}

fn finite(chart: &LineChart) -> Vec<Vec<(f64, f64)>> {
    chart
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite() && (!chart.log_x || *x > 0.0))
                .collect()
        })
        .collect()
}

fn draw_svg(chart: &LineChart) -> super::plots::DrawResult<String> {
    let lines = finite(chart);
    svg(|root| {
        let xs = || lines.iter().flatten().map(|p| p.0);
        let (Some(x0), Some(x1)) = (xs().reduce(f64::min), xs().reduce(f64::max)) else {
            return placeholder(root, &chart.title, "no data");
        };
        let keys: Vec<(&str, Key)> = chart
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let color = PALETTE[i % PALETTE.len()];
                let key = if s.dashed {
                    Key::Dashed(color)
                } else {
                    Key::Line(color)
                };
                (s.label.as_str(), key)
            })
            .collect();
        let body = header(root, &chart.title, &keys)?;
        let (y0, y1) = value_range(lines.iter().flatten().map(|p| p.1));
        let (x0, x1) = if x1 > x0 {
            (x0, x1)
        } else {
            (x0 - 0.5, x1 + 0.5)
        };
        let mut builder = ChartBuilder::on(&body);
        builder
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64);
        if chart.log_x {
            let mut plot = builder.build_cartesian_2d((x0..x1).log_scale(), y0..y1)?;
            plot.configure_mesh()
                .x_desc(chart.x_label.as_str())
                .y_desc(chart.y_label.as_str())
                .x_label_formatter(&|v| short(*v))
                .y_label_formatter(&|v| short(*v))
                .light_line_style(WHITE.mix(0.0))
                .draw()?;
            for (i, (series, points)) in chart.series.iter().zip(&lines).enumerate() {
                let style = PALETTE[i % PALETTE.len()].stroke_width(2);
                if series.dashed {
                    plot.draw_series(DashedLineSeries::new(points.clone(), 6, 4, style))?;
                } else {
                    plot.draw_series(LineSeries::new(points.clone(), style))?;
                }
                plot.draw_series(points.iter().map(|&p| Circle::new(p, 3, style)))?;
            }
        } else {
            let mut plot = builder.build_cartesian_2d(x0..x1, y0..y1)?;
            plot.configure_mesh()
                .x_desc(chart.x_label.as_str())
                .y_desc(chart.y_label.as_str())
                .x_label_formatter(&|v| short(*v))
                .y_label_formatter(&|v| short(*v))
                .light_line_style(WHITE.mix(0.0))
                .draw()?;
            for (i, (series, points)) in chart.series.iter().zip(&lines).enumerate() {
                let style = PALETTE[i % PALETTE.len()].stroke_width(2);
                if series.dashed {
                    plot.draw_series(DashedLineSeries::new(points.clone(), 6, 4, style))?;
                } else {
                    plot.draw_series(LineSeries::new(points.clone(), style))?;
                }
                plot.draw_series(points.iter().map(|&p| Circle::new(p, 3, style)))?;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(series: Vec<Series>, log_x: bool) -> LineChart {
        LineChart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series,
            log_x,
        }
    }

    #[test]
    fn draws_every_series_with_its_label() {
        let svg = draw(&chart(
            vec![
                Series::line("alpha", vec![(1.0, 1.0), (2.0, 3.0)]),
                Series::dashed("beta", vec![(1.0, 2.0), (2.0, 1.0)]),
            ],
            false,
        ))
        .unwrap();
        assert!(svg.contains("alpha") && svg.contains("beta"));
        assert!(svg.contains("<polyline"), "lines are drawn");
    }

    #[test]
    fn a_chart_without_finite_points_says_so() {
        let svg = draw(&chart(
            vec![Series::line("a", vec![(f64::NAN, 1.0)])],
            false,
        ))
        .unwrap();
        assert!(svg.contains("no data"));
        let svg = draw(&chart(vec![Series::line("a", vec![(0.0, 1.0)])], true)).unwrap();
        assert!(svg.contains("no data"), "x = 0 has no place on a log axis");
    }

    #[test]
    fn a_single_point_and_a_log_axis_draw() {
        let svg = draw(&chart(vec![Series::line("a", vec![(3.0, 1.0)])], false)).unwrap();
        assert!(svg.contains("<circle"));
        let svg = draw(&chart(
            vec![Series::line("a", vec![(1.0, 5.0), (19.0, 1.0)])],
            true,
        ))
        .unwrap();
        assert!(svg.contains("<polyline"));
    }
}
