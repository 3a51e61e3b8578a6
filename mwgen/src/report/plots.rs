//! The report's plots of the metrics, each drawn to an SVG string with plotters (SVG backend
//! only, as for `mwgen model --plot`: text is left to the viewer's fonts).

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use mw_runtime::Decision;
use mw_runtime::metrics::{IterationMetrics, RunMetrics};

use super::Figure;

pub(super) type DrawResult<T> = Result<T, Box<dyn std::error::Error>>;
/// A chart with plain numbers on both axes, drawn to SVG.
pub(super) type Chart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

pub(super) const SIZE: (u32, u32) = (960, 380);
pub(super) const BLUE: RGBColor = RGBColor(31, 119, 180);
pub(super) const ORANGE: RGBColor = RGBColor(255, 127, 14);
pub(super) const RED: RGBColor = RGBColor(214, 39, 40);
pub(super) const GREEN: RGBColor = RGBColor(44, 160, 44);
pub(super) const PURPLE: RGBColor = RGBColor(148, 103, 189);
pub(super) const GREY: RGBColor = RGBColor(127, 127, 127);
/// Cells of the busy-time heat map, at most: more iterations are merged into wider columns.
const MAX_CELLS: usize = 20_000;
/// Points are marked on lines with at most this many points.
const MAX_MARKERS: usize = 120;

/// The plots of the metrics: iteration time, tunables, busy workers, chunk sizes of iteration
/// `chosen` (a position in `run.iterations`).
pub(super) fn draw_all(run: &RunMetrics, chosen: Option<usize>) -> DrawResult<Vec<Figure>> {
    Ok(vec![
        iteration_time(run)?,
        tunables(run)?,
        busy(run)?,
        chunks(run, chosen)?,
    ])
}

/// Draws on a fresh SVG of the report's size.
pub(super) fn svg(
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult<()>,
) -> DrawResult<String> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        draw(&root)?;
        root.present()?;
    }
    Ok(text)
}

/// A plot with nothing to show says so.
pub(super) fn placeholder(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    note: &str,
) -> DrawResult<()> {
    root.draw(&Text::new(title.to_owned(), (16, 10), ("sans-serif", 20)))?;
    let (w, h) = root.dim_in_pixel();
    let style = ("sans-serif", 16).into_font().color(&GREY);
    root.draw(&Text::new(
        note.to_owned(),
        (w as i32 / 2 - 4 * note.len() as i32, h as i32 / 2),
        style,
    ))?;
    Ok(())
}

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy)]
pub(super) enum Key {
    Line(RGBColor),
    Dashed(RGBColor),
    /// A vertical dashed mark, as for decisions.
    Mark(RGBColor),
    Box(RGBColor),
}

/// Draws the title and, under it, the legend in one row, above the chart (so the legend never
/// hides data); returns the area left for the chart.
pub(super) fn header<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    title: &str,
    keys: &[(&str, Key)],
) -> DrawResult<DrawingArea<SVGBackend<'a>, Shift>> {
    let (head, body) = root.split_vertically(if keys.is_empty() { 40 } else { 62 });
    let (width, _) = head.dim_in_pixel();
    // No font metrics here: centre on an estimate of the text's width.
    let title_x = (width as i32 - 10 * title.chars().count() as i32).max(0) / 2;
    head.draw(&Text::new(
        title.to_owned(),
        (title_x, 8),
        ("sans-serif", 20),
    ))?;
    let mut x = 80;
    for &(label, key) in keys {
        let y = 46;
        match key {
            Key::Line(color) => head.draw(&PathElement::new(
                [(x, y), (x + 22, y)],
                color.stroke_width(2),
            ))?,
            Key::Dashed(color) => {
                for dash in [0, 9, 18] {
                    head.draw(&PathElement::new(
                        [(x + dash, y), (x + dash + 5, y)],
                        color.stroke_width(2),
                    ))?;
                }
            }
            Key::Mark(color) => {
                for dash in [-7, 0, 7] {
                    head.draw(&PathElement::new(
                        [(x + 11, y + dash - 2), (x + 11, y + dash + 2)],
                        color.stroke_width(1),
                    ))?;
                }
            }
            Key::Box(color) => head.draw(&Rectangle::new(
                [(x + 4, y - 6), (x + 18, y + 6)],
                color.filled(),
            ))?,
        }
        head.draw(&Text::new(
            label.to_owned(),
            (x + 28, y - 7),
            ("sans-serif", 13),
        ))?;
        x += 48 + 6 * label.chars().count() as i32;
    }
    Ok(body)
}

/// The x range of iteration plots: each iteration a unit wide, centred on its index.
fn iteration_range(iterations: &[IterationMetrics]) -> (f64, f64) {
    let first = iterations.first().map_or(0, |it| it.index) as f64;
    let last = iterations.last().map_or(0, |it| it.index) as f64;
    (first - 0.5, last.max(first) + 0.5)
}

/// A y axis from 0 (or the lowest value) to above the highest value, leaving room at the top
/// for the decision labels.
pub(super) fn value_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((0.0_f64, 0.0_f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let top = hi * 1.2;
    if top.is_finite() && top > lo {
        (lo, top)
    } else {
        (lo.min(0.0), lo.min(0.0) + 1.0)
    }
}

/// Tick labels of counts: whole numbers only.
pub(super) fn whole(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round())
    } else {
        String::new()
    }
}

/// Tick labels of values: few digits.
pub(super) fn short(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".to_owned()
    } else if !(1e-2..1e6).contains(&a) {
        format!("{v:.1e}")
    } else if a >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Rows of decision labels above each other, at most; a label that fits in none is left out
/// (its dashed line stays, and the page's table lists every decision).
const LABEL_ROWS: usize = 4;
/// Width of a character of the labels' 12-pixel font, in pixels, with a margin: SVG leaves the
/// text to the viewer's fonts, so the width is an estimate on the wide side.
const LABEL_CHAR_PX: i32 = 7;

/// Vertical dashed lines at the iteration boundaries where decisions took effect, labelled
/// with what changed; returns whether any was drawn.
fn decision_marks(
    chart: &mut Chart<'_, '_>,
    run: &RunMetrics,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
) -> DrawResult<bool> {
    let mut marks: Vec<(f64, String)> = run
        .decisions
        .iter()
        .map(|d| {
            (
                decision_x(run, d),
                format!("{} → {}", d.tunable, plain(&d.to)),
            )
        })
        .filter(|(x, _)| (x0..=x1).contains(x))
        .collect();
    marks.sort_by(|a, b| a.0.total_cmp(&b.0));
    let spans: Vec<(i32, i32)> = marks
        .iter()
        .map(|(x, text)| {
            let left = chart.backend_coord(&(*x, y1)).0 + 4;
            (left, left + LABEL_CHAR_PX * text.chars().count() as i32)
        })
        .collect();
    for ((x, text), row) in marks.iter().zip(label_rows(&spans, LABEL_ROWS)) {
        let line = DashedLineSeries::new([(*x, y0), (*x, y1)], 4, 3, GREY.stroke_width(1));
        chart.draw_series(line)?;
        let Some(row) = row else {
            continue;
        };
        let label_y = y1 - (y1 - y0) * (0.04 + 0.07 * row as f64);
        chart.draw_series([EmptyElement::at((*x, label_y))
            + Text::new(
                text.clone(),
                (4, 0),
                ("sans-serif", 12).into_font().color(&GREY),
            )])?;
    }
    Ok(!marks.is_empty())
}

/// The row of each label (by its horizontal span in pixels, in left-to-right order) so that no
/// two in a row overlap: the first row with room, or `None` when all `rows` are taken there.
fn label_rows(spans: &[(i32, i32)], rows: usize) -> Vec<Option<usize>> {
    let mut ends = vec![i32::MIN; rows];
    spans
        .iter()
        .map(|&(left, right)| {
            let row = ends.iter().position(|&end| end < left)?;
            ends[row] = right;
            Some(row)
        })
        .collect()
}

/// Where a decision stands on the iteration axis: at the boundary before its iteration, or, for
/// a change made inside an iteration, as far into it as its tasks done.
fn decision_x(run: &RunMetrics, d: &Decision) -> f64 {
    let inside = d.tasks_done.and_then(|done| {
        let it = run.iterations.iter().find(|it| it.index == d.iteration)?;
        (it.tasks > 0).then(|| done as f64 / it.tasks as f64)
    });
    d.iteration as f64 - 0.5 + inside.unwrap_or(0.0)
}

/// A tunable's value over the run as a step line: each iteration's value as it began, then the
/// changes made inside iterations where they were made.
fn tunable_steps(
    run: &RunMetrics,
    tunable: &str,
    value: impl Fn(&IterationMetrics) -> f64,
) -> Vec<(f64, f64)> {
    let mut points = Vec::new();
    for it in &run.iterations {
        let mut v = value(it);
        points.push((it.index as f64 - 0.5, v));
        for d in run
            .decisions
            .iter()
            .filter(|d| d.iteration == it.index && d.tasks_done.is_some() && d.tunable == tunable)
        {
            let x = decision_x(run, d);
            points.push((x, v));
            v = d.to.as_f64().unwrap_or(v);
            points.push((x, v));
        }
        points.push((it.index as f64 + 0.5, v));
    }
    points
}

/// A decision's value without JSON quotes.
pub(super) fn plain(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => format!("{f:.3}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_owned(),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

fn iteration_time(run: &RunMetrics) -> DrawResult<Figure> {
    let title = "Iteration time, measured and predicted";
    let its = &run.iterations;
    let svg = svg(|root| {
        if its.is_empty() {
            return placeholder(root, title, "no iterations recorded");
        }
        let mut keys = vec![("measured", Key::Line(BLUE))];
        if its.iter().any(|it| it.predicted_ms.is_some()) {
            keys.push(("predicted by the model", Key::Dashed(ORANGE)));
        }
        if !run.decisions.is_empty() {
            keys.push(("decision", Key::Mark(GREY)));
        }
        let body = header(root, title, &keys)?;
        let (x0, x1) = iteration_range(its);
        let values = its
            .iter()
            .flat_map(|it| std::iter::once(it.time_ms).chain(it.predicted_ms));
        let (y0, y1) = value_range(values);
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc("iteration")
            .y_desc("time (ms)")
            .x_label_formatter(&|v| whole(*v))
            .y_label_formatter(&|v| short(*v))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;

        let measured: Vec<(f64, f64)> =
            its.iter().map(|it| (it.index as f64, it.time_ms)).collect();
        chart.draw_series(LineSeries::new(measured.clone(), BLUE.stroke_width(2)))?;
        if measured.len() <= MAX_MARKERS {
            chart.draw_series(measured.iter().map(|&p| Circle::new(p, 3, BLUE.filled())))?;
        }

        for piece in predicted_pieces(its) {
            chart.draw_series(DashedLineSeries::new(
                piece.clone(),
                6,
                4,
                ORANGE.stroke_width(2),
            ))?;
            if piece.len() == 1 || measured.len() <= MAX_MARKERS {
                chart.draw_series(
                    piece
                        .iter()
                        .map(|&p| Circle::new(p, 3, ORANGE.stroke_width(1))),
                )?;
            }
        }
        decision_marks(&mut chart, run, (x0, x1), (y0, y1))?;
        Ok(())
    })?;
    let caption = if its.iter().any(|it| it.predicted_ms.is_some()) {
        "Wall time of each iteration (Tt) against the model's prediction made before it ran; \
         dashed lines mark where a tuning decision took effect."
    } else {
        "Wall time of each iteration (Tt); this run recorded no predictions (the tuner was off or \
         had no model yet)."
    };
    Ok(Figure {
        file: "iteration_time.svg",
        title: title.to_owned(),
        caption: caption.to_owned(),
        svg,
    })
}

/// Runs of consecutive iterations that have a prediction.
fn predicted_pieces(its: &[IterationMetrics]) -> Vec<Vec<(f64, f64)>> {
    let mut pieces: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current = Vec::new();
    for it in its {
        match it.predicted_ms {
            Some(p) => current.push((it.index as f64, p)),
            None if !current.is_empty() => pieces.push(std::mem::take(&mut current)),
            None => {}
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

fn tunables(run: &RunMetrics) -> DrawResult<Figure> {
    let title = "Tunables over the run: nworkers and factor";
    let its = &run.iterations;
    let svg = svg(|root| {
        if its.is_empty() {
            return placeholder(root, title, "no iterations recorded");
        }
        let mut keys = vec![
            ("nworkers (left axis)", Key::Line(BLUE)),
            ("factor (right axis)", Key::Line(RED)),
        ];
        if !run.decisions.is_empty() {
            keys.push(("decision", Key::Mark(GREY)));
        }
        let body = header(root, title, &keys)?;
        let (x0, x1) = iteration_range(its);
        let most = its
            .iter()
            .map(|it| it.workers)
            .max()
            .unwrap_or(0)
            .max(run.pool);
        let y1 = (most as f64 * 1.2).max(most as f64 + 1.0);
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .right_y_label_area_size(64)
            .build_cartesian_2d(x0..x1, 0.0..y1)?
            .set_secondary_coord(x0..x1, 0.0..1.2);
        chart
            .configure_mesh()
            .x_desc("iteration")
            .y_desc("nworkers")
            .x_label_formatter(&|v| whole(*v))
            .y_label_formatter(&|v| whole(*v))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        chart
            .configure_secondary_axes()
            .y_desc("factor")
            .label_style(("sans-serif", 12).into_font().color(&RED))
            .y_label_formatter(&|v| format!("{v:.1}"))
            .draw()?;
        chart.draw_series(LineSeries::new(
            tunable_steps(run, "nworkers", |it| it.workers as f64),
            BLUE.stroke_width(2),
        ))?;
        chart.draw_secondary_series(LineSeries::new(
            tunable_steps(run, "factor", |it| it.factor),
            RED.stroke_width(2),
        ))?;
        decision_marks(&mut chart, run, (x0, x1), (0.0, y1))?;
        Ok(())
    })?;
    Ok(Figure {
        file: "tunables.svg",
        title: title.to_owned(),
        caption: "Workers taking part and the distribution factor in force over the run; \
                  dashed lines mark the decisions that changed them, inside an iteration as far \
                  into it as its tasks were done."
            .to_owned(),
        svg,
    })
}

fn busy(run: &RunMetrics) -> DrawResult<Figure> {
    let title = "Busy share of each worker, per iteration";
    let its = &run.iterations;
    // Only the workers that ran: a pool of 16 of which 2 took part has 2 rows.
    let ran: Vec<usize> = (0..super::workers(run))
        .filter(|&w| {
            its.iter()
                .any(|it| it.busy_ms.get(w).is_some_and(|&b| b > 0.0))
        })
        .collect();
    let workers = ran.len();
    let svg = svg(|root| {
        if its.is_empty() || workers == 0 {
            return placeholder(root, title, "no per-worker times recorded");
        }
        let body = header(root, title, &[])?;
        let (plot, scale) = body.split_horizontally(SIZE.0 - 110);
        let (x0, x1) = iteration_range(its);
        let mut chart = ChartBuilder::on(&plot)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, -0.5..workers as f64 - 0.5)?;
        chart
            .configure_mesh()
            .x_desc("iteration")
            .y_desc("worker")
            .x_label_formatter(&|v| whole(*v))
            // Rows are the workers that ran, labelled with their index in the pool.
            .y_label_formatter(&|v| {
                let row = v.round();
                if (v - row).abs() > 1e-6 || row < 0.0 {
                    return String::new();
                }
                ran.get(row as usize)
                    .map_or(String::new(), |w| w.to_string())
            })
            .disable_mesh()
            .draw()?;
        // Neighbouring iterations share a column when there are too many cells to draw.
        let group = (its.len() * workers).div_ceil(MAX_CELLS).max(1);
        for columns in its.chunks(group) {
            let left = columns[0].index as f64 - 0.5;
            let right = columns[columns.len() - 1].index as f64 + 0.5;
            let time: f64 = columns.iter().map(|it| it.time_ms).sum();
            chart.draw_series(ran.iter().enumerate().map(|(row, &w)| {
                let busy: f64 = columns
                    .iter()
                    .map(|it| it.busy_ms.get(w).copied().unwrap_or(0.0))
                    .sum();
                let share = if time > 0.0 { busy / time } else { 0.0 };
                let y = row as f64;
                Rectangle::new([(left, y - 0.5), (right, y + 0.5)], shade(share).filled())
            }))?;
        }
        color_scale(&scale)
    })?;
    Ok(Figure {
        file: "busy.svg",
        title: title.to_owned(),
        caption: format!(
            "Each cell is a worker's do_work time in an iteration as a share of the iteration's \
             wall time: dark is busy, white is idle or not taking part. Rows are the {} that \
             ran, of a pool of {}.",
            crate::count(workers, "worker"),
            super::workers(run)
        ),
        svg,
    })
}

/// White (idle) to dark blue (busy all the time).
fn shade(share: f64) -> RGBColor {
    let s = if share.is_finite() {
        share.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mix = |from: f64, to: f64| (from + (to - from) * s).round() as u8;
    RGBColor(mix(255.0, 8.0), mix(255.0, 48.0), mix(255.0, 107.0))
}

fn color_scale(area: &DrawingArea<SVGBackend<'_>, Shift>) -> DrawResult<()> {
    let (top, height, steps) = (60, 240, 20);
    let step = height / steps;
    for i in 0..steps {
        let share = 1.0 - f64::from(i) / f64::from(steps - 1);
        let y = top + i * step;
        area.draw(&Rectangle::new(
            [(20, y), (44, y + step)],
            shade(share).filled(),
        ))?;
    }
    area.draw(&Rectangle::new(
        [(20, top), (44, top + steps * step)],
        BLACK.mix(0.4),
    ))?;
    let label = |text: &str, y: i32| Text::new(text.to_owned(), (50, y), ("sans-serif", 12));
    area.draw(&label("busy 100%", top))?;
    area.draw(&label("50%", top + steps * step / 2 - 6))?;
    area.draw(&label("idle 0%", top + steps * step - 12))?;
    Ok(())
}

fn chunks(run: &RunMetrics, chosen: Option<usize>) -> DrawResult<Figure> {
    let it = chosen.and_then(|i| run.iterations.get(i));
    let title = match it {
        Some(it) => format!(
            "Chunk sizes of iteration {} ({}, factor {:.2}, {} workers, {} tasks)",
            it.index, it.policy, it.factor, it.workers, it.tasks
        ),
        None => "Chunk sizes".to_owned(),
    };
    let svg = svg(|root| {
        let Some(it) = it.filter(|it| !it.chunk_sizes.is_empty()) else {
            return placeholder(root, &title, "no chunks recorded");
        };
        let sizes = &it.chunk_sizes;
        let top = sizes.iter().copied().max().unwrap_or(1).max(1) as f64 * 1.1;
        let body = header(root, &title, &[])?;
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5..sizes.len() as f64 - 0.5, 0.0..top)?;
        chart
            .configure_mesh()
            .x_desc("chunk, in the order the policy cut them")
            .y_desc("tasks")
            .x_label_formatter(&|v| whole(*v))
            .y_label_formatter(&|v| whole(*v))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        chart.draw_series(sizes.iter().enumerate().map(|(i, &n)| {
            let x = i as f64;
            Rectangle::new([(x - 0.4, 0.0), (x + 0.4, n as f64)], BLUE.filled())
        }))?;
        Ok(())
    })?;
    Ok(Figure {
        file: "chunks.svg",
        title,
        caption: "Tasks in each chunk, in the order the chunks were cut: factoring policies start \
                  with large chunks and finish with small ones to even out the end."
            .to_owned(),
        svg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_inside_an_iteration_steps_where_it_was_made() {
        let run = RunMetrics {
            iterations: (0..2)
                .map(|index| IterationMetrics {
                    index,
                    workers: if index == 0 { 1 } else { 16 },
                    tasks: 400,
                    ..IterationMetrics::default()
                })
                .collect(),
            decisions: vec![Decision {
                iteration: 0,
                tasks_done: Some(40),
                tunable: "nworkers".into(),
                from: 1.into(),
                to: 16.into(),
                ..Decision::default()
            }],
            ..RunMetrics::default()
        };
        assert!((decision_x(&run, &run.decisions[0]) - -0.4).abs() < 1e-12);
        let points = tunable_steps(&run, "nworkers", |it| it.workers as f64);
        let expected = [
            (-0.5, 1.0),
            (-0.4, 1.0),
            (-0.4, 16.0),
            (0.5, 16.0),
            (0.5, 16.0),
            (1.5, 16.0),
        ];
        assert_eq!(points.len(), expected.len(), "{points:?}");
        for ((x, y), (ex, ey)) in points.iter().zip(expected) {
            assert!((x - ex).abs() < 1e-12 && *y == ey, "{points:?}");
        }
        // Other tunables are not moved by it.
        let factor = tunable_steps(&run, "factor", |it| it.factor);
        assert_eq!(factor.len(), 4);
    }

    #[test]
    fn labels_take_the_first_row_with_room() {
        let spans = [
            (0, 50),
            (10, 60),
            (40, 90),
            (55, 100),
            (70, 120),
            (130, 150),
        ];
        assert_eq!(
            label_rows(&spans, 2),
            [Some(0), Some(1), None, Some(0), Some(1), Some(0)]
        );
    }

    /// Many decisions close together: the labels drawn never overlap in a row.
    #[test]
    fn decision_labels_do_not_overlap() {
        let run = RunMetrics {
            iterations: (0..40)
                .map(|index| IterationMetrics {
                    index,
                    workers: 4,
                    factor: 0.5,
                    time_ms: 10.0,
                    tasks: 100,
                    ..IterationMetrics::default()
                })
                .collect(),
            decisions: (0..30)
                .map(|i| Decision {
                    iteration: 1 + i % 20,
                    tunable: if i % 2 == 0 { "nworkers" } else { "factor" }.into(),
                    from: 1.into(),
                    to: (i + 2).into(),
                    ..Decision::default()
                })
                .collect(),
            ..RunMetrics::default()
        };
        let svg = tunables(&run).unwrap().svg;
        // Each label as (x, y, characters), from `<text x=".." y=".." ...>nworkers → 3</text>`.
        let mut labels: Vec<(i32, i32, i32)> = Vec::new();
        for piece in svg.split("<text").skip(1) {
            let Some((attributes, rest)) = piece.split_once('>') else {
                continue;
            };
            let text = rest.split("</text>").next().unwrap_or("").trim();
            if !text.contains(" → ") {
                continue;
            }
            let number = |name: &str| -> i32 {
                let value = attributes.split(&format!(" {name}=\"")).nth(1).unwrap();
                value.split('"').next().unwrap().parse::<f64>().unwrap() as i32
            };
            labels.push((number("x"), number("y"), text.chars().count() as i32));
        }
        assert!(labels.len() >= 4, "{svg}");
        for (i, a) in labels.iter().enumerate() {
            for b in &labels[i + 1..] {
                let apart = a.0 + LABEL_CHAR_PX * a.2 <= b.0 || b.0 + LABEL_CHAR_PX * b.2 <= a.0;
                assert!(a.1 != b.1 || apart, "{a:?} and {b:?} overlap");
            }
        }
    }
}
