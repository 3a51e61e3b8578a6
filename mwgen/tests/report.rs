//! `mwgen report` as a user runs it, on a recorded run (`tests/fixtures/report/`), and the page
//! it writes as a browser shows it.
#![allow(clippy::unwrap_used)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use assert_cmd::cargo::cargo_bin_cmd;

const PLOTS: [&str; 5] = [
    "iteration_time.svg",
    "tunables.svg",
    "busy.svg",
    "chunks.svg",
    "timeline.svg",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name)
}

fn mwgen() -> Command {
    cargo_bin_cmd!("mwgen")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The report of the fixture, with its trace, in a fresh folder.
fn report(extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    mwgen()
        .arg("report")
        .arg(fixture("run.metrics.json"))
        .arg("--trace")
        .arg(fixture("run.trace.json"))
        .arg("-o")
        .arg(&out)
        .args(extra)
        .assert()
        .success();
    (dir, out)
}

#[test]
fn the_report_of_a_recorded_run_has_every_plot_in_one_page() {
    let (_dir, out) = report(&[]);
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    for plot in PLOTS {
        let svg = std::fs::read_to_string(out.join(plot)).unwrap();
        assert!(svg.contains("<svg") && svg.contains("</svg>"), "{plot}");
        let id = plot.trim_end_matches(".svg");
        assert!(
            page.contains(&format!("<figure id=\"{id}\"")),
            "{plot} not in the page"
        );
    }
    assert_eq!(page.matches("<svg").count(), PLOTS.len());
    // Self-contained: nothing to fetch.
    assert!(
        !page.contains(" src=") && !page.contains(" href="),
        "{page}"
    );
    // The summary and the run's decisions and failure.
    for expected in [
        "<td>fixgen</td>",
        "nworkers 3, factor 0.30, policy factoring",
        "application: fewer workers",
        "application: smaller batches",
        "worker 2 breaks on purpose",
        "Chunk sizes of iteration 0",
        "Timeline of iteration 0",
    ] {
        assert!(page.contains(expected), "missing {expected:?}");
    }
}

#[test]
fn it_says_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let assert = mwgen()
        .arg("report")
        .arg(fixture("run.metrics.json"))
        .args(["--iteration", "6", "-o"])
        .arg(dir.path())
        .assert()
        .success();
    let stdout = text(&assert.get_output().stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}");
    assert!(lines.iter().all(|l| l.starts_with("wrote ")));
    assert!(lines[4].ends_with("index.html"));
    // No trace, no timeline.
    assert!(!dir.path().join("timeline.svg").exists());
    let chunks = std::fs::read_to_string(dir.path().join("chunks.svg")).unwrap();
    assert!(chunks.contains("Chunk sizes of iteration 6"));
}

/// Runs `mwgen report` on `metrics` and returns its exit code and standard error.
fn failing(metrics: &Path, extra: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let output = mwgen()
        .arg("report")
        .arg(metrics)
        .arg("-o")
        .arg(dir.path().join("out"))
        .args(extra)
        .timeout(std::time::Duration::from_secs(10))
        .output()
        .unwrap();
    (output.status.code().unwrap_or(-1), text(&output.stderr))
}

#[test]
fn bad_input_gets_an_error_and_help_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, content: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        path
    };
    let metrics_as_trace = fixture("run.metrics.json");
    let metrics_as_trace = metrics_as_trace.to_str().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success());
    let cases = [
        (
            dir.path().join("missing.json"),
            vec![],
            1,
            "cannot read the metrics file",
        ),
        (
            write("garbage.json", "{\"iterations\": [1, 2"),
            vec![],
            2,
            "is not a metrics file",
        ),
        (fixture("run.trace.json"), vec![], 2, "it is a trace"),
        (
            write("other.json", "{\"app\": \"x\"}"),
            vec![],
            2,
            "has no `iterations`",
        ),
        (
            fixture("run.metrics.json"),
            vec!["--iteration", "99"],
            2,
            "no iteration 99",
        ),
        (
            fixture("run.metrics.json"),
            vec!["--trace", "/nonexistent/t.json"],
            1,
            "cannot read the trace",
        ),
        (
            fixture("run.metrics.json"),
            vec!["--trace", metrics_as_trace],
            2,
            "is not a trace",
        ),
        // Read with a bound: a device or a pipe is refused at once, never read for ever.
        (
            PathBuf::from("/dev/zero"),
            vec![],
            1,
            "it is a character device, not a regular file",
        ),
        (
            fixture("run.metrics.json"),
            vec!["--trace", "/dev/zero"],
            1,
            "it is a character device, not a regular file",
        ),
        (fifo.clone(), vec![], 1, "it is a pipe (FIFO)"),
    ];
    for (path, extra, code, message) in cases {
        let (status, stderr) = failing(&path, &extra);
        assert_eq!(status, code, "{path:?} {extra:?}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{stderr}");
        assert!(
            lines[0].starts_with("error: ") && lines[0].contains(message),
            "{stderr}"
        );
        assert!(lines[1].starts_with("help: "), "{stderr}");
    }
}

#[test]
fn an_output_folder_that_cannot_be_written_is_said_before_anything_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    // The metrics file is missing too: the output folder is checked first.
    let output = mwgen()
        .arg("report")
        .arg(dir.path().join("missing.json"))
        .arg("-o")
        .arg(file.join("report"))
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(lines[0].starts_with("error: cannot write `"), "{stderr}");
    assert!(lines[1].starts_with("help: "), "{stderr}");
}

#[test]
fn a_run_without_iterations_still_makes_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = dir.path().join("empty.json");
    std::fs::write(
        &metrics,
        r#"{"app": "empty", "backend": "local", "pool": 1, "protocol": "sync", "total_ms": 0.1,
            "iterations": [], "decisions": []}"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    mwgen()
        .arg("report")
        .arg(&metrics)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(page.contains("no iterations recorded"));
}

/// Headless Chromium, if installed: `CHROMIUM`, else `chromium` or `chromium-browser` on the
/// path.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// Loads `page` in headless Chromium and returns the DOM after its scripts ran.
fn dump_dom(browser: &Path, page: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Process::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--window-size=1200,900",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Read while it runs: the DOM is larger than a pipe holds.
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut dom = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut dom).map(|_| dom)
    });
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("chromium did not finish loading the page in 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    text(&reader.join().unwrap().unwrap())
}

#[test]
fn the_page_shows_its_plots_in_a_browser() {
    let Some(browser) = chromium() else {
        // Printed past the test harness's capture, so that a skip is seen.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED the_page_shows_its_plots_in_a_browser: Chromium is not installed \
             (apt-get install chromium, or set CHROMIUM=/path/to/chromium)"
        );
        return;
    };
    let (_dir, out) = report(&[]);
    // A copy of the page with a check appended: every plot laid out at a real size and drawn.
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    let check = r#"<script>
const plots = [...document.querySelectorAll("figure > svg")];
const drawn = plots.filter(svg => {
  const box = svg.getBoundingClientRect();
  const marks = svg.querySelectorAll("rect, polyline, path, line, circle, text").length;
  return box.width > 300 && box.height > 100 && marks > 20;
});
const out = document.createElement("pre");
out.id = "mw-check";
out.textContent = `MW-CHECK plots=${plots.length} drawn=${drawn.length}`;
document.body.appendChild(out);
</script>
</body>"#;
    let checked = out.join("check.html");
    std::fs::write(&checked, page.replace("</body>", check)).unwrap();
    let dom = dump_dom(&browser, &checked);
    let expected = format!("MW-CHECK plots={0} drawn={0}", PLOTS.len());
    assert!(
        dom.contains(&expected),
        "expected `{expected}` in the page as Chromium shows it; got: {}",
        dom.lines()
            .find(|l| l.contains("MW-CHECK"))
            .unwrap_or("no check line (did the page load?)")
    );
}
