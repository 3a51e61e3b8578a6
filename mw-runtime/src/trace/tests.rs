#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::time::Duration;

use crate::clock;

use serde_json::Value;

use super::chrome::write_to;
use super::{Heard, MasterWork, Recorder, SentChunk, Trace};
use crate::metrics::{Decision, IterationMetrics, RunMetrics};

fn iteration(index: usize, workers: usize, predicted_ms: Option<f64>) -> IterationMetrics {
    IterationMetrics {
        index,
        workers,
        factor: 0.5,
        policy: "fsc".into(),
        tasks: 4,
        chunks: 2,
        time_ms: 2.0,
        tc_ms: 3.0,
        lm_ms: 0.1,
        bytes_to_workers: 40,
        bytes_from_workers: 40,
        imbalance: 0.25,
        predicted_ms,
        chunk_sizes: vec![2, 2],
        busy_ms: vec![1.5; workers],
        task_mean_ms: 0.75,
        task_stddev_ms: 0.1,
        ..IterationMetrics::default()
    }
}

fn metrics(iterations: Vec<IterationMetrics>, decisions: Vec<Decision>) -> RunMetrics {
    RunMetrics {
        app: "test".into(),
        backend: "local".into(),
        pool: 2,
        protocol: "async".into(),
        total_ms: 5.0,
        iterations,
        decisions,
        failures: Vec::new(),
        objective: "index".into(),
        objective_reason: "configured".into(),
        interrupted: None,
        command: Vec::new(),
    }
}

fn done(chunk: u64, tasks: usize, busy: Duration) -> Heard<'static> {
    Heard::Results {
        chunk,
        tasks,
        failed: None,
        began: None,
        busy_ns: busy.as_nanos() as u64,
    }
}

fn pause() {
    std::thread::sleep(Duration::from_micros(200));
}

/// One iteration on two workers, one chunk each, as the engine would record it.
fn record_iteration(trace: &mut Trace, index: usize, first_chunk: u64) {
    let started = clock::now();
    trace.iteration_begins(index);
    pause();
    trace.master(started, MasterWork::Partition);
    for worker in 0..2 {
        let mark = trace.mark();
        trace.shared_sent(mark, worker);
    }
    for worker in 0..2 {
        let mark = trace.mark();
        trace.chunk_sent(mark, worker, first_chunk + worker as u64, 2);
    }
    for worker in 0..2 {
        let mark = trace.mark();
        pause();
        let chunk = first_chunk + worker as u64;
        trace.received(mark, worker, done(chunk, 2, Duration::from_micros(100)));
        let mark = trace.mark();
        trace.recovered(mark, worker, chunk, 2);
    }
    let closing = clock::now();
    trace.master(closing, MasterWork::EndIteration);
    trace.iteration_ends(index, started);
}

fn written(trace: &Trace, metrics: &RunMetrics) -> Value {
    let recorder = trace.recorder.as_deref().unwrap();
    let mut out = Vec::new();
    write_to(recorder, metrics, &mut out).unwrap();
    serde_json::from_slice(&out).unwrap()
}

fn events(json: &Value) -> &[Value] {
    json["traceEvents"].as_array().unwrap()
}

fn named<'a>(json: &'a Value, ph: &str, name: &str) -> Vec<&'a Value> {
    events(json)
        .iter()
        .filter(|e| e["ph"] == ph && e["name"] == name)
        .collect()
}

/// Flow ids with their start and end events: every id must have exactly one of each.
fn flows(json: &Value) -> HashMap<u64, (Vec<&Value>, Vec<&Value>)> {
    let mut flows: HashMap<u64, (Vec<&Value>, Vec<&Value>)> = HashMap::new();
    for e in events(json) {
        let entry = || e["id"].as_u64().unwrap();
        match e["ph"].as_str() {
            Some("s") => flows.entry(entry()).or_default().0.push(e),
            Some("f") => flows.entry(entry()).or_default().1.push(e),
            _ => {}
        }
    }
    flows
}

/// The complete event on track `pid` whose span holds `ts`, innermost first.
fn enclosing<'a>(json: &'a Value, pid: &Value, ts: f64) -> Option<&'a Value> {
    events(json)
        .iter()
        .filter(|e| e["ph"] == "X" && &e["pid"] == pid)
        .filter(|e| {
            let start = e["ts"].as_f64().unwrap();
            start < ts && ts < start + e["dur"].as_f64().unwrap()
        })
        .min_by(|a, b| {
            a["dur"]
                .as_f64()
                .unwrap()
                .total_cmp(&b["dur"].as_f64().unwrap())
        })
}

#[test]
fn an_off_trace_reads_no_clock_and_writes_nothing() {
    let mut trace = Trace::off();
    assert!(trace.recorder.is_none());
    assert!(trace.mark().0.is_none());
    trace.chunk_sent(trace.mark(), 0, 0, 1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    trace.write(&path, &metrics(vec![], vec![])).unwrap();
    assert!(!path.exists());
}

#[test]
fn do_work_sits_in_the_middle_of_its_round_trip() {
    let Trace {
        recorder: Some(mut r),
    } = Trace::new(2, 10)
    else {
        unreachable!()
    };
    let held = SentChunk {
        chunk: 7,
        tasks: 3,
        sent: 1_000,
    };
    // 400 ns round trip, 100 ns of work: 150 ns each way.
    r.place_work(0, held, 100, 1_400);
    let span = r.spans[0];
    assert_eq!(
        (span.start, span.dur, span.chunk, span.tasks),
        (1_150, 100, 7, 3)
    );
    // A worker cannot have worked longer than the round trip it was part of.
    r.place_work(1, held, 10_000, 1_400);
    assert_eq!((r.spans[1].start, r.spans[1].dur), (1_000, 400));
}

#[test]
fn a_prefetched_chunk_works_after_the_one_before_it() {
    let Trace {
        recorder: Some(mut r),
    } = Trace::new(1, 10)
    else {
        unreachable!()
    };
    let first = SentChunk {
        chunk: 1,
        tasks: 1,
        sent: 1_000,
    };
    // Sent ahead at 1,100, while the worker still held chunk 1 (worked 1,150..1,250).
    let second = SentChunk {
        chunk: 2,
        tasks: 1,
        sent: 1_100,
    };
    r.place_work(0, first, 100, 1_400);
    r.place_work(0, second, 100, 1_650);
    // Its trip counts from the end of chunk 1's work: 400 ns, 100 of them working.
    assert_eq!((r.spans[1].start, r.spans[1].dur), (1_400, 100));
}

#[test]
fn a_small_run_has_named_tracks_slices_paired_flows_counters_and_decisions() {
    let mut trace = Trace::new(2, 1_000);
    record_iteration(&mut trace, 0, 0);
    record_iteration(&mut trace, 1, 2);
    let decision = Decision {
        iteration: 1,
        tunable: "nworkers".into(),
        from: 2.into(),
        to: 1.into(),
        reason: "Pi is lowest at 1 worker".into(),
        ..Decision::default()
    };
    let run = metrics(
        vec![iteration(0, 2, None), iteration(1, 1, Some(1.8))],
        vec![decision],
    );
    let json = written(&trace, &run);

    let process = |pid: u64| -> String {
        events(&json)
            .iter()
            .find(|e| e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == pid)
            .map(|e| e["args"]["name"].as_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(process(1), "master");
    assert_eq!(process(2), "worker 0");
    assert_eq!(process(3), "worker 1");
    assert_eq!(named(&json, "M", "thread_name").len(), 3);

    assert_eq!(named(&json, "X", "iteration 0").len(), 1);
    assert_eq!(named(&json, "X", "partition").len(), 2);
    assert_eq!(named(&json, "X", "send shared").len(), 4);
    assert_eq!(named(&json, "X", "send chunk").len(), 4);
    assert_eq!(named(&json, "X", "receive").len(), 4);
    assert_eq!(named(&json, "X", "recover").len(), 4);
    assert_eq!(named(&json, "X", "end_iteration").len(), 2);
    let work = named(&json, "X", "do_work");
    assert_eq!(work.len(), 4);
    assert!(work.iter().all(|e| e["pid"] == 2 || e["pid"] == 3));

    // Out to the worker and back, for each of the 4 chunks: each arrow bound to the right slices.
    let flows = flows(&json);
    assert_eq!(flows.len(), 8);
    for (id, (starts, ends)) in &flows {
        assert_eq!((starts.len(), ends.len()), (1, 1), "flow {id}");
        let (s, f) = (starts[0], ends[0]);
        assert_eq!(
            (&s["cat"], &s["name"]),
            (&f["cat"], &f["name"]),
            "flow {id}"
        );
        assert_eq!(f["bp"], "e");
        let from = enclosing(&json, &s["pid"], s["ts"].as_f64().unwrap()).unwrap();
        let to = enclosing(&json, &f["pid"], f["ts"].as_f64().unwrap()).unwrap();
        let (expect_from, expect_to) = if id % 2 == 0 {
            ("send chunk", "do_work")
        } else {
            ("do_work", "recover")
        };
        assert_eq!(
            (from["name"].as_str(), to["name"].as_str()),
            (Some(expect_from), Some(expect_to))
        );
        assert_eq!(from["args"]["chunk"], id / 2);
        assert_eq!(to["args"]["chunk"], id / 2);
        assert!(
            s["ts"].as_f64() <= f["ts"].as_f64(),
            "flow {id} goes back in time"
        );
    }

    assert_eq!(named(&json, "C", "nworkers").len(), 2);
    assert_eq!(named(&json, "C", "nworkers")[1]["args"]["n"], 1.0);
    assert_eq!(named(&json, "C", "factor").len(), 2);
    assert_eq!(named(&json, "C", "iteration time (measured)").len(), 2);
    // Only iteration 1 has a prediction.
    let predicted = named(&json, "C", "iteration time (predicted)");
    assert_eq!(predicted.len(), 1);
    assert_eq!(predicted[0]["args"]["ms"], 1.8);

    let decisions = named(&json, "i", "nworkers 2 → 1");
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0]["args"]["reason"], "Pi is lowest at 1 worker");
    assert_eq!(
        decisions[0]["ts"],
        named(&json, "X", "iteration 1")[0]["ts"]
    );

    assert_eq!(json["otherData"]["slices_dropped"], 0);
    assert_eq!(json["otherData"]["event_limit"], 1_000);
}

#[test]
fn events_are_in_time_order_with_enclosing_slices_first() {
    let mut trace = Trace::new(2, 1_000);
    record_iteration(&mut trace, 0, 0);
    let json = written(&trace, &metrics(vec![iteration(0, 2, None)], vec![]));
    let timed: Vec<&Value> = events(&json).iter().filter(|e| e["ph"] != "M").collect();
    for pair in timed.windows(2) {
        assert!(pair[0]["ts"].as_f64() <= pair[1]["ts"].as_f64(), "{pair:?}");
    }
    // The iteration starts with its partition (same instant): it must come first.
    let position = |name: &str| timed.iter().position(|e| e["name"] == name).unwrap();
    assert!(position("iteration 0") < position("partition"));
    // Slices on one track nest or follow each other, never overlap.
    for pid in [1, 2, 3] {
        let mut open: Vec<f64> = Vec::new();
        for e in timed.iter().filter(|e| e["ph"] == "X" && e["pid"] == pid) {
            let (start, end) = (
                e["ts"].as_f64().unwrap(),
                e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap(),
            );
            while open.last().is_some_and(|&top| top <= start) {
                open.pop();
            }
            if let Some(&top) = open.last() {
                assert!(end <= top + 1e-9, "{e} overlaps its parent on track {pid}");
            }
            open.push(end);
        }
    }
}

#[test]
fn the_limit_keeps_the_beginning_and_every_counter() {
    // An iteration of `record_iteration` writes 20 events: the second does not fit.
    let mut trace = Trace::new(2, 30);
    for index in 0..4 {
        record_iteration(&mut trace, index, 2 * index as u64);
    }
    assert!(trace.dropped() > 0);
    let run = metrics((0..4).map(|i| iteration(i, 2, Some(2.0))).collect(), vec![]);
    let json = written(&trace, &run);
    let bounded = |e: &&Value| {
        let slice = e["ph"] == "X" && !e["name"].as_str().unwrap().starts_with("iteration");
        slice || e["ph"] == "s" || e["ph"] == "f"
    };
    let written = events(&json).iter().filter(bounded).count();
    assert!((20..=30).contains(&written), "{written} events");
    // The beginning is kept whole: all of iteration 0, then iteration 1 until it was full.
    assert_eq!(named(&json, "X", "do_work").len(), 2);
    assert_eq!(named(&json, "X", "partition").len(), 2);
    assert_eq!(json["otherData"]["slices_dropped"], trace.dropped());
    assert!(
        json["otherData"]["note"]
            .as_str()
            .unwrap()
            .contains("--trace-limit")
    );
    // Arrows only where both ends were kept.
    for (id, (starts, ends)) in flows(&json) {
        assert_eq!((starts.len(), ends.len()), (1, 1), "flow {id}");
    }
    assert_eq!(named(&json, "C", "iteration time (measured)").len(), 4);
    assert_eq!(named(&json, "C", "iteration time (predicted)").len(), 4);
    assert_eq!(named(&json, "X", "iteration 3").len(), 1);
}

#[test]
fn a_panicked_chunk_is_an_instant_on_its_worker() {
    let mut trace = Trace::new(2, 100);
    let started = clock::now();
    trace.iteration_begins(0);
    let mark = trace.mark();
    trace.chunk_sent(mark, 1, 0, 3);
    let failed = Heard::Failure {
        chunk: 0,
        message: "index out of bounds",
    };
    let mark = trace.mark();
    trace.received(mark, 1, failed);
    trace.iteration_ends(0, started);
    let json = written(&trace, &metrics(vec![iteration(0, 2, None)], vec![]));
    let panics = named(&json, "i", "task failed");
    assert_eq!(panics.len(), 1);
    assert_eq!(panics[0]["pid"], 3);
    assert_eq!(panics[0]["args"]["message"], "index out of bounds");
    assert_eq!(named(&json, "X", "receive failure").len(), 1);
    assert!(named(&json, "X", "do_work").is_empty());
    assert!(
        flows(&json).is_empty(),
        "no arrow to a chunk that never finished"
    );
}

#[test]
fn a_recorder_without_iterations_still_writes_valid_json() {
    let trace = Trace::new(1, 10);
    let json = written(&trace, &metrics(vec![], vec![]));
    assert_eq!(named(&json, "M", "process_name").len(), 3);
    assert_eq!(json["displayTimeUnit"], "ms");
    let _: &Recorder = trace.recorder.as_deref().unwrap();
}

#[test]
fn local_work_is_placed_exactly_and_arrows_never_go_back_in_time() {
    let mut trace = Trace::new(1, 100);
    let started = clock::now();
    trace.iteration_begins(0);
    // The worker starts, and even finishes, before the master's send has returned.
    let sending = trace.mark();
    let began = clock::now();
    trace.chunk_sent(sending, 0, 0, 1);
    let waiting = trace.mark();
    let answer = Heard::Results {
        chunk: 0,
        tasks: 1,
        failed: None,
        began: Some(began),
        busy_ns: 10,
    };
    trace.received(waiting, 0, answer);
    let recovering = trace.mark();
    trace.recovered(recovering, 0, 0, 1);
    trace.iteration_ends(0, started);

    let recorder = trace.recorder.as_deref().unwrap();
    let work = recorder
        .spans
        .iter()
        .find(|s| s.kind == super::Kind::DoWork)
        .unwrap();
    assert_eq!((work.start, work.dur), (recorder.ns(began), 10));

    let json = written(&trace, &metrics(vec![iteration(0, 1, None)], vec![]));
    let flows = flows(&json);
    assert_eq!(flows.len(), 2);
    for (id, (starts, ends)) in flows {
        let (s, f) = (starts[0], ends[0]);
        assert!(s["ts"].as_f64() < f["ts"].as_f64(), "flow {id}: {s} → {f}");
        assert!(enclosing(&json, &s["pid"], s["ts"].as_f64().unwrap()).is_some());
        assert!(enclosing(&json, &f["pid"], f["ts"].as_f64().unwrap()).is_some());
    }
}
