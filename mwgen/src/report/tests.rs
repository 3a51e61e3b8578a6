#![allow(clippy::unwrap_used)]

use super::html::escape;
use mw_runtime::metrics::{IterationMetrics, RunMetrics};

use super::{parse_metrics, plots, timeline};

fn iteration(index: usize, workers: usize, predicted_ms: Option<f64>) -> IterationMetrics {
    IterationMetrics {
        index,
        workers,
        factor: 0.5,
        policy: "daf".into(),
        tasks: 100,
        chunks: 3,
        time_ms: 10.0 + index as f64,
        predicted_ms,
        chunk_sizes: vec![50, 30, 20],
        busy_ms: vec![9.0; workers],
        ..IterationMetrics::default()
    }
}

fn run(iterations: Vec<IterationMetrics>, pool: usize) -> RunMetrics {
    RunMetrics {
        app: "test".into(),
        backend: "local".into(),
        pool,
        protocol: "async".into(),
        total_ms: 100.0,
        iterations,
        ..RunMetrics::default()
    }
}

fn figures(run: &RunMetrics) -> Vec<super::Figure> {
    let chosen = run.iterations.first().map(|_| 0);
    plots::draw_all(run, chosen).unwrap()
}

#[test]
fn every_plot_is_an_svg() {
    let run = run((0..5).map(|i| iteration(i, 3, Some(11.0))).collect(), 4);
    let figures = figures(&run);
    let files: Vec<&str> = figures.iter().map(|f| f.file).collect();
    assert_eq!(
        files,
        [
            "iteration_time.svg",
            "tunables.svg",
            "busy.svg",
            "chunks.svg"
        ]
    );
    for f in &figures {
        assert!(f.svg.trim_start().starts_with("<svg"), "{}", f.file);
        assert!(f.svg.trim_end().ends_with("</svg>"), "{}", f.file);
        assert!(
            f.svg.contains("<rect") || f.svg.contains("<polyline"),
            "{}",
            f.file
        );
    }
    assert!(figures[0].svg.contains("predicted by the model"));
}

/// A pool of 16 of which workers 0 and 2 ran: two rows, labelled 0 and 2.
#[test]
fn the_heat_map_shows_the_workers_that_ran() {
    // Iterations 10 to 12, so that no axis label of theirs reads as a worker.
    let mut its: Vec<IterationMetrics> = (10..13).map(|i| iteration(i, 2, None)).collect();
    for it in &mut its {
        it.busy_ms = vec![0.0; 16];
        it.busy_ms[0] = 9.0;
        it.busy_ms[2] = 5.0;
    }
    let figures = figures(&run(its, 16));
    let busy = figures.iter().find(|f| f.file == "busy.svg").unwrap();
    assert!(
        busy.caption
            .ends_with("Rows are the 2 workers that ran, of a pool of 16."),
        "{}",
        busy.caption
    );
    let labels: Vec<&str> = busy
        .svg
        .split("</text>")
        .filter_map(|t| t.rsplit('>').next())
        .map(str::trim)
        .collect();
    assert!(labels.contains(&"2") && !labels.contains(&"1") && !labels.contains(&"15"));
}

#[test]
fn no_iterations_null_predictions_and_one_worker_still_draw() {
    for run in [
        run(vec![], 0),
        run(vec![iteration(0, 1, None)], 1),
        run((0..3).map(|i| iteration(i, 1, None)).collect(), 1),
        // A prediction for some iterations only.
        run(
            vec![
                iteration(0, 2, None),
                iteration(1, 2, Some(9.0)),
                iteration(2, 2, None),
            ],
            2,
        ),
    ] {
        let figures = figures(&run);
        assert_eq!(figures.len(), 4);
        for f in &figures {
            assert!(f.svg.contains("</svg>"), "{}", f.file);
        }
        let page = super::html::page(&run, std::path::Path::new("m.json"), &figures);
        assert!(page.contains("<h2>Summary</h2>"));
    }
    let empty = figures(&run(vec![], 0));
    assert!(empty[0].svg.contains("no iterations recorded"));
}

#[test]
fn extreme_values_do_not_break_the_axes() {
    let mut its: Vec<IterationMetrics> = (0..3).map(|i| iteration(i, 2, Some(1e308))).collect();
    its[1].time_ms = -5.0;
    its[2].time_ms = 0.0;
    its[0].busy_ms = vec![];
    let figures = figures(&run(its, 2));
    assert_eq!(figures.len(), 4);
}

#[test]
fn metrics_errors_say_what_is_wrong() {
    let (message, help) = parse_metrics("{").unwrap_err();
    assert!(message.contains("EOF"), "{message}");
    assert!(help.contains("--metrics"), "{help}");
    let (message, help) = parse_metrics("{\"traceEvents\": []}").unwrap_err();
    assert_eq!(message, "it is a trace");
    assert!(help.contains("--trace"));
    let (message, _) = parse_metrics("{\"app\": \"x\"}").unwrap_err();
    assert!(message.contains("iterations"), "{message}");
    let (message, _) = parse_metrics("{\"iterations\": [{\"time_ms\": \"slow\"}]}").unwrap_err();
    assert!(message.contains("invalid type"), "{message}");
    // The runtime's own metrics type: a file of another version is refused, not read as zeros.
    let (message, help) =
        parse_metrics("{\"iterations\": [{\"index\": 0, \"time_ms\": 3.5}]}").unwrap_err();
    assert!(message.contains("missing field"), "{message}");
    assert!(help.contains("mw-runtime"), "{help}");
}

#[test]
fn traces_in_either_form_and_garbage() {
    let events = r#"[{"name":"iteration 0","ph":"X","ts":0,"dur":100,"pid":1,"tid":1},
                     {"name":"do_work","ph":"X","ts":10,"dur":50,"pid":2,"tid":2},
                     {"name":"process_name","ph":"M","pid":2,"args":{"name":"worker 0"}}]"#;
    let object = format!("{{\"traceEvents\": {events}}}");
    for text in [events.to_owned(), object] {
        let trace = timeline::parse(&text).unwrap();
        let run = run(vec![iteration(0, 1, None)], 1);
        let figure = timeline::draw(&trace, &run, Some(0)).unwrap();
        assert!(figure.svg.contains("do_work"), "legend names the slices");
    }
    assert!(timeline::parse("{\"traceEvents\": 3}").is_err());
    assert!(timeline::parse("not json").is_err());
    // A trace of another run: no slice for the iteration, a note instead of a plot.
    let trace = timeline::parse("[]").unwrap();
    let figure = timeline::draw(&trace, &run(vec![iteration(0, 1, None)], 1), Some(0)).unwrap();
    assert!(figure.svg.contains("no slice for this iteration"));
}

#[test]
fn html_escapes_what_the_metrics_say() {
    assert_eq!(
        escape("<b>\"a\" & 'b'</b>"),
        "&lt;b&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/b&gt;"
    );
    let mut run = run(vec![iteration(0, 1, None)], 1);
    run.app = "<script>alert(1)</script>".into();
    let page = super::html::page(&run, std::path::Path::new("m.json"), &figures(&run));
    assert!(!page.contains("<script>"));
}
