//! `--trace`: the timeline of one iteration on the master and every worker, from the Chrome
//! trace a run wrote.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;
use serde::Deserialize;

use super::plots::{BLUE, DrawResult, GREEN, Key, ORANGE, PURPLE, header, placeholder, short, svg};
use mw_runtime::metrics::RunMetrics;

use super::Figure;
use crate::CliError;

/// The master's track in the traces the runtime writes; worker `w` is `WORKER_BASE + w`.
const MASTER: u64 = 1;
const WORKER_BASE: u64 = 2;
/// Slices drawn at most; an iteration with more is drawn from its beginning.
const MAX_SLICES: usize = 50_000;
const LIGHT_GREY: RGBColor = RGBColor(199, 199, 199);

/// The parts of a trace the timeline needs: its complete events.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    slices: Vec<Slice>,
}

#[derive(Debug, Clone, Deserialize)]
struct Slice {
    #[serde(default)]
    name: String,
    #[serde(default)]
    ph: String,
    /// Microseconds.
    #[serde(default)]
    ts: f64,
    #[serde(default)]
    dur: f64,
    #[serde(default)]
    pid: u64,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TraceFile {
    Object {
        #[serde(rename = "traceEvents")]
        events: Vec<Slice>,
    },
    Array(Vec<Slice>),
}

/// Reads a Chrome trace-event file, in the object or the array form.
pub(crate) fn load(path: &Path) -> Result<Trace, CliError> {
    let text = mw_runtime::read_input_text(path, mw_runtime::InputKind::Trace).map_err(|e| {
        CliError::failure(
            format!("cannot read the trace `{}`: {e}", path.display()),
            Some("a program writes one when run with `--trace PATH`".to_owned()),
        )
    })?;
    parse(&text).map_err(|message| {
        CliError::usage(
            format!("`{}` is not a trace: {message}", path.display()),
            "give the Chrome trace-event JSON a program writes with `--trace PATH`",
        )
    })
}

pub(crate) fn parse(text: &str) -> Result<Trace, String> {
    let file: TraceFile = serde_json::from_str(text).map_err(|e| {
        if e.is_data() {
            "expected `traceEvents`, a list of events".to_owned()
        } else {
            e.to_string()
        }
    })?;
    let events = match file {
        TraceFile::Object { events } | TraceFile::Array(events) => events,
    };
    let slices = events
        .into_iter()
        .filter(|e| e.ph == "X" && e.ts.is_finite() && e.dur.is_finite())
        .collect();
    Ok(Trace { slices })
}

const LEGEND: [(&str, RGBColor); 5] = [
    ("do_work", BLUE),
    ("send", ORANGE),
    ("receive (the master waits)", LIGHT_GREY),
    ("recover", GREEN),
    ("partition, end_iteration", PURPLE),
];

/// What a slice shows: its entry in [`LEGEND`].
fn kind(name: &str) -> Option<(&'static str, RGBColor)> {
    let entry = match name {
        "do_work" => 0,
        "send chunk" | "send shared" => 1,
        "receive" | "receive failure" => 2,
        "recover" => 3,
        "partition" | "end_iteration" => 4,
        _ => return None,
    };
    Some(LEGEND[entry])
}

/// The timeline of iteration `chosen` (a position in `run.iterations`).
pub(crate) fn draw(trace: &Trace, run: &RunMetrics, chosen: Option<usize>) -> DrawResult<Figure> {
    let index = chosen
        .and_then(|i| run.iterations.get(i))
        .map(|it| it.index);
    let title = match index {
        Some(i) => format!("Timeline of iteration {i}"),
        None => "Timeline".to_owned(),
    };
    let name = index.map(|i| format!("iteration {i}"));
    let window = trace
        .slices
        .iter()
        .find(|s| s.pid == MASTER && Some(&s.name) == name.as_ref())
        .map(|s| (s.ts, s.ts + s.dur));
    let svg = svg(|root| {
        let Some((start, end)) = window.filter(|(s, e)| e > s) else {
            return placeholder(root, &title, "the trace has no slice for this iteration");
        };
        let inside: Vec<&Slice> = trace
            .slices
            .iter()
            .filter(|s| s.ts >= start && s.ts <= end && kind(&s.name).is_some())
            .take(MAX_SLICES)
            .collect();
        // Rows: the master on top, then the workers that appear, in order.
        let mut rows: BTreeMap<u64, usize> = BTreeMap::new();
        rows.insert(MASTER, 0);
        for s in &inside {
            rows.entry(s.pid).or_insert(0);
        }
        // The master on top: rows count up from the bottom of the chart.
        let count = rows.len();
        for (row, slot) in rows.values_mut().enumerate() {
            *slot = count - 1 - row;
        }
        let labels: Vec<String> = rows.keys().rev().map(|&pid| row_label(pid)).collect();
        let count = count as f64;

        let keys: Vec<(&str, Key)> = LEGEND
            .iter()
            .map(|&(label, color)| (label, Key::Box(color)))
            .collect();
        let body = header(root, &title, &keys)?;

        let ms = |ts: f64| (ts - start) / 1e3;
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..ms(end), -0.5..count - 0.5)?;
        chart
            .configure_mesh()
            .x_desc("time since the iteration began (ms)")
            .x_label_formatter(&|v| short(*v))
            .y_labels(rows.len())
            .y_label_formatter(&|v| {
                let row = v.round();
                if (v - row).abs() < 1e-9 && row >= 0.0 {
                    labels.get(row as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .disable_y_mesh()
            .light_line_style(WHITE.mix(0.0))
            .draw()?;

        chart.draw_series(inside.iter().filter_map(|s| {
            let (_, color) = kind(&s.name)?;
            let y = rows.get(&s.pid).copied().unwrap_or(0) as f64;
            let (x0, x1) = (ms(s.ts), ms(s.ts + s.dur).min(ms(end)));
            Some(Rectangle::new(
                [(x0, y - 0.35), (x1, y + 0.35)],
                color.filled(),
            ))
        }))?;
        Ok(())
    })?;
    Ok(Figure {
        file: "timeline.svg",
        title,
        caption: "What the master and each worker did during the iteration, from the trace: \
                  blue do_work, orange sends, grey the master waiting for answers, green \
                  recover. Open the trace in Perfetto for every iteration and the arrows \
                  between them."
            .to_owned(),
        svg,
    })
}

fn row_label(pid: u64) -> String {
    match pid {
        MASTER => "master".to_owned(),
        pid if pid >= WORKER_BASE => format!("worker {}", pid - WORKER_BASE),
        pid => format!("track {pid}"),
    }
}
