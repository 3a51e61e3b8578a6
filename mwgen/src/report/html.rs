//! `index.html`: the summary table, every plot inlined as SVG, the decisions and the failures,
//! in one file with no outside resources (it opens from a mail attachment or a CI artifact).

use std::fmt::Write as _;
use std::path::Path;

use super::plots::plain;
use mw_runtime::metrics::RunMetrics;

use super::Figure;

const STYLE: &str = "\
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1000px;padding:0 1em;color:#222}
h1{font-size:1.6em;margin-bottom:.2em}
h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
.note{color:#666}
table{border-collapse:collapse;margin:.5em 0}
th,td{padding:.25em .8em;text-align:left;border-bottom:1px solid #eee;vertical-align:top}
th{font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:1em 0}
figure svg{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#555;font-size:.92em;margin-top:.3em}";

/// The page for `run`, read from `source`, with `figures` inlined.
pub(super) fn page(run: &RunMetrics, source: &Path, figures: &[Figure]) -> String {
    let mut html = String::with_capacity(figures.iter().map(|f| f.svg.len()).sum::<usize>() + 8192);
    let title = format!(
        "{} — run report",
        if run.app.is_empty() { "mw" } else { &run.app }
    );
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>{}</h1>\n\
         <p class=\"note\">From <code>{}</code>, by <code>mwgen report</code>.</p>\n",
        escape(&title),
        escape(&title),
        escape(&source.display().to_string()),
    );
    summary(&mut html, run);
    html += "<h2>Plots</h2>\n";
    for figure in figures {
        // The plot carries its title; the caption says what to look for.
        let _ = write!(
            html,
            "<figure id=\"{}\" aria-label=\"{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
            figure.file.trim_end_matches(".svg"),
            escape(&figure.title),
            strip_xml_declaration(&figure.svg),
            escape(&figure.caption),
        );
    }
    decisions(&mut html, run);
    failures(&mut html, run);
    html += "</body>\n</html>\n";
    html
}

fn summary(html: &mut String, run: &RunMetrics) {
    let its = &run.iterations;
    let mut rows: Vec<(&str, String)> = vec![
        ("Program", run.app.clone()),
        (
            "Backend",
            format!("{}, {} protocol", run.backend, run.protocol),
        ),
        ("Workers started (pool)", run.pool.to_string()),
        ("Total time", ms(run.total_ms)),
        ("Iterations", its.len().to_string()),
        (
            "Tasks",
            its.iter().map(|it| it.tasks).sum::<usize>().to_string(),
        ),
    ];
    if !its.is_empty() {
        let times = its.iter().map(|it| it.time_ms);
        let mean = times.clone().sum::<f64>() / its.len() as f64;
        let min = times.clone().fold(f64::INFINITY, f64::min);
        let max = times.fold(f64::NEG_INFINITY, f64::max);
        rows.push((
            "Iteration time",
            format!("mean {}, from {} to {}", ms(mean), ms(min), ms(max)),
        ));
        let errors: Vec<f64> = its
            .iter()
            .filter_map(|it| {
                let p = it.predicted_ms?;
                (it.time_ms > 0.0).then(|| (p - it.time_ms).abs() / it.time_ms)
            })
            .collect();
        rows.push((
            "Model's prediction",
            if errors.is_empty() {
                "none recorded".to_owned()
            } else {
                format!(
                    "{} of {} iterations predicted, mean error {:.1}%",
                    errors.len(),
                    its.len(),
                    100.0 * errors.iter().sum::<f64>() / errors.len() as f64
                )
            },
        ));
        let imbalance = its.iter().map(|it| it.imbalance).sum::<f64>() / its.len() as f64;
        rows.push((
            "Mean load imbalance Q",
            format!("{imbalance:.3} (0 is balanced)"),
        ));
        let to: u64 = its.iter().map(|it| it.bytes_to_workers).sum();
        let from: u64 = its.iter().map(|it| it.bytes_from_workers).sum();
        rows.push((
            "Data moved",
            format!("{} to workers, {} back", bytes(to), bytes(from)),
        ));
    }
    if let (Some(first), Some(last)) = (its.first(), its.last()) {
        let tunables = |it: &mw_runtime::metrics::IterationMetrics| {
            format!(
                "nworkers {}, factor {:.2}, policy {}",
                it.workers, it.factor, it.policy
            )
        };
        rows.push(("First tunables", tunables(first)));
        rows.push(("Final tunables", tunables(last)));
    }
    rows.push(("Tuning decisions", run.decisions.len().to_string()));
    rows.push(("Failed chunks (re-run)", run.failures.len().to_string()));

    *html += "<h2>Summary</h2>\n<table class=\"summary\">\n";
    for (name, value) in rows {
        let _ = writeln!(
            html,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(name),
            escape(&value)
        );
    }
    *html += "</table>\n";
}

fn decisions(html: &mut String, run: &RunMetrics) {
    *html += "<h2>Decisions</h2>\n";
    if run.decisions.is_empty() {
        *html += "<p class=\"note\">No tunable changed during the run.</p>\n";
        return;
    }
    *html += "<table>\n<tr><th>from iteration</th><th>tunable</th><th>from</th><th>to</th>\
              <th>reason</th></tr>\n";
    for d in &run.decisions {
        // The words first, the model's account (what `--verbose` prints) under them.
        let reason = if d.summary.is_empty() {
            escape(&d.reason)
        } else {
            format!(
                "{}<br><span class=\"note\">{}</span>",
                escape(&d.summary),
                escape(&d.reason)
            )
        };
        let _ = writeln!(
            html,
            "<tr><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td>{}</td></tr>",
            d.iteration,
            escape(&d.tunable),
            escape(&plain(&d.from)),
            escape(&plain(&d.to)),
            reason,
        );
    }
    *html += "</table>\n";
}

fn failures(html: &mut String, run: &RunMetrics) {
    if run.failures.is_empty() {
        return;
    }
    *html += "<h2>Failures</h2>\n<table>\n<tr><th>iteration</th><th>worker</th><th>tasks</th>\
              <th>message</th></tr>\n";
    for f in &run.failures {
        let last = f.first_task + f.tasks.saturating_sub(1);
        let _ = writeln!(
            html,
            "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}..={last}</td>\
             <td>{}</td></tr>",
            f.iteration,
            f.worker,
            f.first_task,
            escape(&f.message),
        );
    }
    *html += "</table>\n";
}

fn ms(value: f64) -> String {
    if value >= 10_000.0 {
        format!("{:.1} s", value / 1e3)
    } else if value >= 100.0 {
        format!("{value:.0} ms")
    } else {
        format!("{value:.2} ms")
    }
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Text made safe for HTML content and attribute values.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An `<?xml ...?>` line is not allowed inside HTML.
fn strip_xml_declaration(svg: &str) -> &str {
    match svg.strip_prefix("<?xml") {
        Some(rest) => rest
            .find("?>")
            .map_or(svg, |end| rest[end + 2..].trim_start()),
        None => svg,
    }
}
