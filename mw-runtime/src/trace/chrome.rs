//! Writing a recorded trace as Chrome trace-event JSON (the "JSON object format": `traceEvents`
//! plus `otherData`), streamed one event at a time in time order.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};

use super::{Answer, Kind, MasterWork, Recorder, Span};
use crate::error::Result;
use crate::metrics::{IterationMetrics, RunMetrics};

/// The master's process and thread id; worker `w` is `WORKER_BASE + w`. (Id 0 means "no
/// process" to some viewers.)
pub(super) const MASTER: u64 = 1;
const WORKER_BASE: u64 = 2;
/// Slices are drawn at least this long (ns), so that a flow arrow's end, put at least half of
/// this inside its slice, stays inside whatever rounding a viewer applies to microsecond
/// timestamps.
const MIN_DUR: u64 = 4;

/// One line of `traceEvents`.
#[derive(Debug, Serialize)]
struct Event<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    cat: &'static str,
    ph: &'static str,
    /// Microseconds, to the nanosecond.
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u64,
    tid: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    /// Flow ends bind to the slice around them ("enclosing"), not to the next one.
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    /// Instant scope: `g` global, `t` thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Args::is_none")]
    args: Args,
}

impl<'a> Event<'a> {
    fn new(name: &'a str, cat: &'static str, ph: &'static str, ts: u64, pid: u64) -> Self {
        Event {
            name,
            cat,
            ph,
            ts: micros(ts),
            dur: None,
            pid,
            tid: pid,
            id: None,
            bp: None,
            s: None,
            args: Args::None,
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Args {
    None,
    Slice(SliceArgs),
    Value(Value),
}

impl Args {
    fn is_none(&self) -> bool {
        matches!(self, Args::None)
    }
}

#[derive(Debug, Serialize)]
struct SliceArgs {
    iteration: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    to: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    chunk: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tasks: Option<u32>,
}

/// Something to write, in the order the items are sorted.
#[derive(Debug, Clone, Copy)]
enum Item {
    Span(usize),
    Iteration(usize),
    /// An end of flow arrow `id`, in span `span` at `at`: where it leaves (`out`) or arrives.
    Flow {
        span: usize,
        id: u64,
        at: u64,
        out: bool,
    },
    /// The counters of `metrics.iterations[i]`, at the start of its iteration.
    Counters {
        metrics: usize,
        at: u64,
    },
    Decision {
        index: usize,
        at: u64,
    },
    Failure(usize),
}

/// Writes `recorder`'s trace to `path`.
pub(super) fn write(recorder: &Recorder, metrics: &RunMetrics, path: &Path) -> Result<()> {
    crate::write_output(path, |mut out| write_to(recorder, metrics, &mut out))
}

pub(super) fn write_to(
    recorder: &Recorder,
    metrics: &RunMetrics,
    out: &mut impl Write,
) -> std::io::Result<()> {
    out.write_all(b"{\"traceEvents\":[\n")?;
    let mut first = true;
    let mut emit = |event: &Event<'_>| -> std::io::Result<()> {
        if !std::mem::take(&mut first) {
            out.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut *out, event).map_err(std::io::Error::other)
    };
    let pool = metrics.pool.max(recorder.holding.len());
    for event in metadata(pool) {
        emit(&event)?;
    }
    for item in items(recorder, metrics) {
        write_item(item, recorder, metrics, &mut emit)?;
    }
    out.write_all(b"\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":")?;
    serde_json::to_writer(&mut *out, &other_data(recorder, metrics))?;
    out.write_all(b"}\n")
}

/// Names of the processes and threads, and their order.
fn metadata(pool: usize) -> Vec<Event<'static>> {
    let mut events = Vec::with_capacity(3 * (pool + 1));
    let tracks = std::iter::once((MASTER, "master".to_owned()))
        .chain((0..pool).map(|w| (WORKER_BASE + w as u64, format!("worker {w}"))));
    for (sort, (pid, name)) in tracks.enumerate() {
        let meta = |name: &'static str, args: Value| Event {
            args: Args::Value(args),
            ..Event::new(name, "", "M", 0, pid)
        };
        events.push(meta("process_name", json!({ "name": name })));
        events.push(meta("process_sort_index", json!({ "sort_index": sort })));
        events.push(meta("thread_name", json!({ "name": name })));
    }
    events
}

/// Everything to write after the metadata, sorted by time; at equal times an enclosing slice
/// comes before what it encloses, and slices before the flow ends bound to them.
fn items(recorder: &Recorder, metrics: &RunMetrics) -> Vec<Item> {
    let spans = &recorder.spans;
    // Where each chunk's arrows leave their slices: out of its send near the start, out of its
    // do_work near the end. Each arrow ends in its target slice, after it left.
    let leaves = |kind: Kind, at: fn(&Span) -> u64| -> HashMap<u64, u64> {
        spans
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| (s.chunk, at(s)))
            .collect()
    };
    let sent = leaves(Kind::SendChunk, early);
    let worked = leaves(Kind::DoWork, late);
    let recovered = leaves(Kind::Recover, late);

    let mut items = Vec::with_capacity(spans.len() * 2 + recorder.iterations.len() * 2);
    for (i, span) in spans.iter().enumerate() {
        items.push(Item::Span(i));
        let chunk = span.chunk;
        match span.kind {
            Kind::SendChunk if worked.contains_key(&chunk) => items.push(Item::Flow {
                span: i,
                id: 2 * chunk,
                at: early(span),
                out: true,
            }),
            Kind::DoWork => {
                if let Some(&left) = sent.get(&chunk) {
                    items.push(Item::Flow {
                        span: i,
                        id: 2 * chunk,
                        at: arrival(span, left),
                        out: false,
                    });
                }
                if recovered.contains_key(&chunk) {
                    items.push(Item::Flow {
                        span: i,
                        id: 2 * chunk + 1,
                        at: late(span),
                        out: true,
                    });
                }
            }
            Kind::Recover => {
                if let Some(&left) = worked.get(&chunk) {
                    items.push(Item::Flow {
                        span: i,
                        id: 2 * chunk + 1,
                        at: arrival(span, left),
                        out: false,
                    });
                }
            }
            _ => {}
        }
    }
    items.extend((0..recorder.iterations.len()).map(Item::Iteration));
    for (i, it) in metrics.iterations.iter().enumerate() {
        if let Some(at) = iteration_start(recorder, it.index) {
            items.push(Item::Counters { metrics: i, at });
        }
    }
    let run_end = recorder.iterations.last().map_or(0, |it| it.end);
    let mut midway = recorder.midway.iter();
    for (index, decision) in metrics.decisions.iter().enumerate() {
        // A decision made inside an iteration stands where it was made.
        let inside = decision
            .tasks_done
            .is_some()
            .then(|| midway.next().copied())
            .flatten();
        let at = inside
            .or_else(|| iteration_start(recorder, decision.iteration))
            .unwrap_or(run_end);
        items.push(Item::Decision { index, at });
    }
    items.extend((0..recorder.failures.len()).map(Item::Failure));

    items.sort_by_key(|item| match *item {
        Item::Span(i) => (spans[i].start, 0, Reverse(shown(spans[i].dur))),
        Item::Iteration(i) => {
            let it = &recorder.iterations[i];
            (it.start, 0, Reverse(shown(it.end - it.start)))
        }
        Item::Flow { at, .. } => (at, 1, Reverse(0)),
        Item::Counters { at, .. } | Item::Decision { at, .. } => (at, 2, Reverse(0)),
        Item::Failure(i) => (recorder.failures[i].at, 2, Reverse(0)),
    });
    items
}

fn iteration_start(recorder: &Recorder, index: usize) -> Option<u64> {
    let iterations = &recorder.iterations;
    iterations
        .binary_search_by_key(&index, |it| it.index)
        .ok()
        .map(|i| iterations[i].start)
}

fn shown(dur: u64) -> u64 {
    dur.max(MIN_DUR)
}

/// The earliest and latest instants well inside a slice (see [`MIN_DUR`]).
fn early(span: &Span) -> u64 {
    span.start + MIN_DUR / 2
}

fn late(span: &Span) -> u64 {
    span.start + shown(span.dur) - MIN_DUR / 2
}

/// Where an arrow that left at `left` ends in `span`: its middle, unless that is too early.
fn arrival(span: &Span, left: u64) -> u64 {
    (span.start + shown(span.dur) / 2)
        .max(left + 1)
        .clamp(early(span), late(span))
}

fn micros(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// Writes the events of `item` (one, or one per counter).
fn write_item(
    item: Item,
    recorder: &Recorder,
    metrics: &RunMetrics,
    emit: &mut dyn FnMut(&Event<'_>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    match item {
        Item::Span(i) => emit(&span_event(&recorder.spans[i])),
        Item::Iteration(i) => {
            let it = &recorder.iterations[i];
            let args = metrics
                .iterations
                .iter()
                .find(|m| m.index == it.index)
                .map_or_else(|| json!({ "index": it.index }), iteration_args);
            let name = format!("iteration {}", it.index);
            emit(&Event {
                dur: Some(micros(shown(it.end - it.start))),
                args: Args::Value(args),
                ..Event::new(&name, "iteration", "X", it.start, MASTER)
            })
        }
        Item::Flow { span, id, at, out } => {
            let ph = if out { "s" } else { "f" };
            emit(&Event {
                id: Some(id),
                bp: (!out).then_some("e"),
                ..Event::new("chunk", "flow", ph, at, track(&recorder.spans[span]))
            })
        }
        Item::Counters { metrics: i, at } => {
            // One event per counter, so that both viewers give each a track of its own
            // (Chrome stacks the series of a single counter).
            let it = &metrics.iterations[i];
            let mut counter = |name: &str, key: &str, value: f64| {
                emit(&Event {
                    args: Args::Value(json!({ key: value })),
                    ..Event::new(name, "", "C", at, MASTER)
                })
            };
            counter("nworkers", "n", it.workers as f64)?;
            counter("factor", "f", it.factor)?;
            counter("iteration time (measured)", "ms", it.time_ms)?;
            match it.predicted_ms {
                Some(predicted) => counter("iteration time (predicted)", "ms", predicted),
                None => Ok(()),
            }
        }
        Item::Decision { index, at } => {
            let d = &metrics.decisions[index];
            if d.tasks_done.is_some() {
                // The counter tracks follow a change made inside an iteration at once.
                let (name, key) = match d.tunable.as_str() {
                    "nworkers" => ("nworkers", "n"),
                    "factor" => ("factor", "f"),
                    _ => ("", ""),
                };
                if let (false, Some(value)) = (name.is_empty(), d.to.as_f64()) {
                    emit(&Event {
                        args: Args::Value(json!({ key: value })),
                        ..Event::new(name, "", "C", at, MASTER)
                    })?;
                }
            }
            let name = format!("{} {} → {}", d.tunable, d.from, d.to);
            emit(&Event {
                s: Some("g"),
                args: Args::Value(json!({
                    "iteration": d.iteration,
                    "tasks_done": d.tasks_done,
                    "tunable": d.tunable,
                    "from": d.from,
                    "to": d.to,
                    "reason": d.reason,
                })),
                ..Event::new(&name, "decision", "i", at, MASTER)
            })
        }
        Item::Failure(i) => {
            let failure = &recorder.failures[i];
            emit(&Event {
                s: Some("t"),
                args: Args::Value(json!({
                    "iteration": failure.iteration,
                    "chunk": failure.chunk,
                    "message": failure.message,
                })),
                ..Event::new(
                    "task failed",
                    "failure",
                    "i",
                    failure.at,
                    WORKER_BASE + u64::from(failure.worker),
                )
            })
        }
    }
}

fn iteration_args(it: &IterationMetrics) -> Value {
    json!({
        "index": it.index,
        "workers": it.workers,
        "factor": it.factor,
        "policy": it.policy,
        "tasks": it.tasks,
        "chunks": it.chunks,
        "time_ms": it.time_ms,
        "predicted_ms": it.predicted_ms,
    })
}

fn track(span: &Span) -> u64 {
    match span.kind {
        Kind::DoWork => WORKER_BASE + u64::from(span.worker),
        _ => MASTER,
    }
}

fn span_event(span: &Span) -> Event<'static> {
    let (name, cat) = match span.kind {
        Kind::Master(MasterWork::Partition) => ("partition", "master"),
        Kind::Master(MasterWork::EndIteration) => ("end_iteration", "master"),
        Kind::SendShared => ("send shared", "send"),
        Kind::SendChunk => ("send chunk", "send"),
        Kind::Receive(Answer::Results) => ("receive", "receive"),
        Kind::Receive(Answer::Failure) => ("receive failure", "receive"),
        Kind::Receive(Answer::Other) => ("receive", "receive"),
        Kind::Recover => ("recover", "master"),
        Kind::DoWork => ("do_work", "work"),
    };
    let worker = Some(span.worker);
    let chunk = Some(span.chunk);
    let tasks = Some(span.tasks);
    let none = SliceArgs {
        iteration: span.iteration,
        to: None,
        from: None,
        chunk: None,
        tasks: None,
    };
    let args = match span.kind {
        Kind::Master(_) => none,
        Kind::SendShared => SliceArgs { to: worker, ..none },
        Kind::SendChunk => SliceArgs {
            to: worker,
            chunk,
            tasks,
            ..none
        },
        Kind::Receive(_) | Kind::Recover => SliceArgs {
            from: worker,
            chunk,
            tasks,
            ..none
        },
        Kind::DoWork => SliceArgs {
            chunk,
            tasks,
            ..none
        },
    };
    Event {
        dur: Some(micros(shown(span.dur))),
        args: Args::Slice(args),
        ..Event::new(name, cat, "X", span.start, track(span))
    }
}

fn other_data(recorder: &Recorder, metrics: &RunMetrics) -> Value {
    let mut data = json!({
        "app": metrics.app,
        "backend": metrics.backend,
        "pool": metrics.pool,
        "protocol": metrics.protocol,
        "total_ms": metrics.total_ms,
        "clock": if metrics.backend == "mpi" {
            "the master's; each do_work slice is placed in the middle of its chunk's round trip"
        } else {
            "one process: every slice is timed on the same clock"
        },
        "event_limit": recorder.limit,
        "slices_kept": recorder.spans.len(),
        "slices_dropped": recorder.dropped,
    });
    if recorder.dropped > 0 {
        data["note"] = json!(format!(
            "the trace holds the first {} slices of the run, within its limit of {} events, and \
             dropped {} later ones (raise --trace-limit to keep more); the counters and \
             decisions cover every iteration",
            recorder.spans.len(),
            recorder.limit,
            recorder.dropped
        ));
    }
    data
}
