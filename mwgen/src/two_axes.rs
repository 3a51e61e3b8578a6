//! Two curves against workers on one SVG chart, one y axis each, with marked points: what
//! `mwgen model --plot` (Tt and Pi, like the paper's Fig. 6) and `mwgen predict --plot` (time
//! and cost) draw.
//!
//! SVG only: plotters writes text as SVG `<text>` elements and leaves fonts to the viewer, so
//! nothing here needs a font library.

use std::path::Path;

use plotters::prelude::*;

pub(crate) type DrawResult<T> = Result<T, Box<dyn std::error::Error>>;

/// One curve and its axis; values above `top` are clipped.
pub(crate) struct Curve {
    /// The legend's label and the axis' description.
    pub label: String,
    pub axis: String,
    pub color: RGBColor,
    pub points: Vec<(f64, f64)>,
    pub top: f64,
}

/// A point marked and labelled on the left (`right: false`) or the right curve's axis.
pub(crate) struct Mark {
    pub at: (f64, f64),
    pub right: bool,
    pub text: String,
    /// Where the label goes, in pixels from the point.
    pub offset: (i32, i32),
}

/// What is drawn.
pub(crate) struct Chart {
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub left: Curve,
    pub right: Curve,
    pub marks: Vec<Mark>,
    /// A vertical line at a worker count, with its legend label.
    pub rule: Option<(f64, String)>,
}

const RULE_COLOR: RGBColor = RGBColor(127, 127, 127);

/// Draws `chart` to `path` as SVG.
pub(crate) fn draw(path: &Path, chart: &Chart) -> DrawResult<()> {
    let xs = chart.left.points.iter().map(|p| p.0);
    let (mut x0, mut x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    if !(x0.is_finite() && x1.is_finite()) {
        return Err("nothing to plot".into());
    }
    if x1 - x0 < 1.0 {
        x0 -= 1.0;
        x1 += 1.0;
    }
    let (left, right) = (&chart.left, &chart.right);

    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(56);
    title.draw(&Text::new(chart.title.clone(), (16, 8), ("sans-serif", 22)))?;
    title.draw(&Text::new(
        chart.subtitle.clone(),
        (16, 34),
        ("sans-serif", 13),
    ))?;
    let mut plot = ChartBuilder::on(&body)
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .right_y_label_area_size(72)
        .build_cartesian_2d(x0..x1, 0.0..left.top)?
        .set_secondary_coord(x0..x1, 0.0..right.top);
    plot.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(left.axis.as_str())
        .x_label_formatter(&|v| whole(*v))
        .y_label_formatter(&|v| short(*v))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    plot.configure_secondary_axes()
        .y_desc(right.axis.as_str())
        .label_style(("sans-serif", 12).into_font().color(&right.color))
        .y_label_formatter(&|v| short(*v))
        .draw()?;

    if let Some((x, label)) = chart.rule.as_ref().filter(|r| (x0..=x1).contains(&r.0)) {
        plot.draw_series(LineSeries::new(
            [(*x, 0.0), (*x, left.top)],
            RULE_COLOR.stroke_width(1),
        ))?
        .label(label.as_str())
        .legend(|(x, y)| PathElement::new([(x + 10, y - 6), (x + 10, y + 6)], RULE_COLOR));
    }
    for (i, piece) in clip_above(&left.points, left.top).into_iter().enumerate() {
        let drawn = plot.draw_series(LineSeries::new(piece, left.color.stroke_width(2)))?;
        if i == 0 {
            let color = left.color;
            drawn.label(left.label.as_str()).legend(move |(x, y)| {
                PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2))
            });
        }
    }
    for (i, piece) in clip_above(&right.points, right.top).into_iter().enumerate() {
        let drawn =
            plot.draw_secondary_series(LineSeries::new(piece, right.color.stroke_width(2)))?;
        if i == 0 {
            let color = right.color;
            drawn.label(right.label.as_str()).legend(move |(x, y)| {
                PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2))
            });
        }
    }
    for mark in &chart.marks {
        let color = if mark.right { right.color } else { left.color };
        let element = EmptyElement::at(mark.at)
            + Circle::new((0, 0), 6, color.filled())
            + Text::new(
                mark.text.clone(),
                mark.offset,
                ("sans-serif", 13).into_font().color(&color),
            );
        if mark.right {
            plot.draw_secondary_series([element])?;
        } else {
            plot.draw_series([element])?;
        }
    }

    plot.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 13))
        .draw()?;
    root.present()?;
    Ok(())
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
