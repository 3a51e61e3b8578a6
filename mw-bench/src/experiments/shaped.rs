//! The emulated link against the real network stack. The synthetic program runs under MPI over
//! TCP between two network namespaces joined by a veth pair, both ends shaped to the papers'
//! 100 Mbit/s by `tc`'s token bucket filter (`tbf`), and on threads behind the emulated link at
//! the same bandwidth; the iteration times and the runtime's fitted `k` are compared.
//!
//! The master's rank stays in the machine's namespace: PMIx's clients reach their server over
//! TCP, so the worker's namespace reaches it through the veth pair (and PMIx must accept
//! connections from other addresses). Only the bandwidth is shaped: `tbf` adds no delay, and
//! `netem`, which would, is not in every kernel. Needs root, `ip`, `tc` and `mpirun`; the section
//! says which was missing otherwise.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use mw_runtime::RunMetrics;
use serde_json::json;

use super::children::run_with_limit;
use super::model_mpi::synthetic_binary;
use crate::doc::{Section, Table, Verdict};
use crate::ideal::{Spread, median};
use crate::teardown::{Scratch, Teardown};
use crate::{BenchError, Size};

/// The shaped and emulated bandwidth, Mbit/s.
const MBIT: f64 = 100.0;
/// The emulated link's latency, ms: about what a TCP message between two namespaces of one
/// machine takes, which the shaped link does not change.
const LATENCY_MS: f64 = 0.05;
/// Bytes per task sent (the rows of the table); answers carry [`RESULT_BYTES`].
const TASK_BYTES: [usize; 2] = [5_000, 20_000];
const RESULT_BYTES: usize = 2_000;
const TASKS: usize = 200;
const ITERATIONS: usize = 5;
/// Runs of each kind per row, interleaved.
const ROUNDS: usize = 3;
/// The veth pair's addresses, a network of its own.
const MASTER_ADDRESS: &str = "10.213.77.1";
const WORKER_ADDRESS: &str = "10.213.77.2";
const NETWORK: &str = "10.213.77.0/24";

const PAPER: &str = "No counterpart in the papers, whose clusters had real 100 Mbit/s \
Ethernet. A check of this project's emulation of it (`--link-latency`, `--link-bandwidth`) \
against the kernel's TCP stack with the bandwidth shaped the same.";

/// The namespace and veth pair of one experiment, removed when dropped (or at a signal that
/// ends the process first).
struct ShapedLink {
    namespace: String,
    _removed: Teardown,
}

impl ShapedLink {
    /// A namespace for the worker, joined to this one by a veth pair shaped to [`MBIT`] both
    /// ways.
    fn create() -> Result<ShapedLink, String> {
        let id = std::process::id() % 100_000;
        let namespace = format!("mw-bench-{id}");
        let removed = {
            let namespace = namespace.clone();
            // Deleting the namespace deletes its end of the pair, and so the pair.
            Teardown::new(move || {
                let _ = Command::new("ip")
                    .args(["netns", "del", &namespace])
                    .output();
            })
        };
        let link = ShapedLink {
            namespace,
            _removed: removed,
        };
        let (outer, inner) = (format!("mwo{id}"), format!("mwi{id}"));
        let rate = format!("{MBIT}mbit");
        let ns = link.namespace.as_str();
        let tbf = |dev: &str| {
            [
                "qdisc", "add", "dev", dev, "root", "tbf", "rate", &rate, "burst", "32kbit",
                "latency", "100ms",
            ]
            .map(str::to_owned)
            .to_vec()
        };
        let mut steps: Vec<Vec<String>> = vec![
            vec!["ip".into(), "netns".into(), "add".into(), ns.into()],
            words(&format!("ip link add {outer} type veth peer name {inner}")),
            words(&format!("ip link set {inner} netns {ns}")),
            words(&format!("ip addr add {MASTER_ADDRESS}/24 dev {outer}")),
            words(&format!("ip link set {outer} up")),
            words(&format!(
                "ip -n {ns} addr add {WORKER_ADDRESS}/24 dev {inner}"
            )),
            words(&format!("ip -n {ns} link set {inner} up")),
            words(&format!("ip -n {ns} link set lo up")),
        ];
        steps.push([vec!["tc".to_owned()], tbf(&outer)].concat());
        steps.push([words(&format!("ip netns exec {ns} tc")), tbf(&inner)].concat());
        for step in &steps {
            let out = Command::new(&step[0])
                .args(&step[1..])
                .output()
                .map_err(|e| format!("`{}` cannot start: {e}", step[0]))?;
            if !out.status.success() {
                return Err(format!(
                    "`{}` failed: {}",
                    step.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        Ok(link)
    }
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

/// The synthetic program's flags for `task_bytes`.
fn program(task_bytes: usize) -> Vec<String> {
    let text = format!(
        "--tasks {TASKS} --iterations {ITERATIONS} --mean-ms 1 --stddev 0 --task-bytes \
         {task_bytes} --result-bytes {RESULT_BYTES} --policy factoring --factor 0.5 --tuning off \
         --quiet"
    );
    words(&text)
}

/// The synthetic program under MPI: the master here, its one worker in the shaped namespace.
fn over_tcp(exe: &Path, link: &ShapedLink, task_bytes: usize, dir: &Path) -> Result<Run, String> {
    let metrics = dir.join("tcp.json");
    let mut args = program(task_bytes);
    args.extend(["--backend".into(), "mpi".into()]);
    let mut command = Command::new("mpirun");
    command.env("OMPI_ALLOW_RUN_AS_ROOT", "1");
    command.env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    command.env("PMIX_MCA_ptl_tcp_remote_connections", "1");
    command.env("PMIX_MCA_ptl_tcp_if_include", NETWORK);
    command.args([
        "--oversubscribe",
        "-x",
        "PMIX_MCA_ptl_tcp_remote_connections",
    ]);
    command.args([
        "-x",
        "PMIX_MCA_ptl_tcp_if_include",
        "--mca",
        "btl",
        "tcp,self",
    ]);
    command.args(["--mca", "btl_tcp_if_include", NETWORK, "-np", "1"]);
    command.arg(exe).args(&args).arg("--metrics").arg(&metrics);
    command.args([":", "-np", "1", "ip", "netns", "exec", &link.namespace]);
    command.arg(exe).args(&args);
    let out = run_with_limit(command, Duration::from_secs(120))?;
    if !out.status.success() {
        return Err(format!(
            "mpirun across the namespaces failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Run::read(&metrics)
}

/// The same program on threads behind the emulated link.
fn emulated(exe: &Path, task_bytes: usize, dir: &Path) -> Result<Run, String> {
    let metrics = dir.join("emulated.json");
    let mut command = Command::new(exe);
    command.args(program(task_bytes));
    command.args(["--backend", "local", "--workers", "1", "--max-workers", "1"]);
    command.args(["--link-latency", &LATENCY_MS.to_string()]);
    command.args(["--link-bandwidth", &MBIT.to_string()]);
    command.arg("--metrics").arg(&metrics);
    let out = run_with_limit(command, Duration::from_secs(120))?;
    if !out.status.success() {
        return Err(format!(
            "the emulated run failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Run::read(&metrics)
}

/// What one run measured: the median iteration time past the first (ms) and the median of the
/// runtime's fitted `k` (ns per byte).
#[derive(Debug, Clone, Copy)]
struct Run {
    iteration_ms: f64,
    k_ns: f64,
}

impl Run {
    fn read(path: &Path) -> Result<Run, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("no metrics at `{}`: {e}", path.display()))?;
        let m: RunMetrics =
            serde_json::from_str(&text).map_err(|e| format!("`{}`: {e}", path.display()))?;
        let later = m.iterations.iter().skip(1);
        let times: Vec<f64> = later.clone().map(|it| it.time_ms).collect();
        let k: Vec<f64> = later.filter_map(|it| it.k_ms_per_byte).collect();
        Ok(Run {
            iteration_ms: median(&times),
            k_ns: median(&k) * 1e6,
        })
    }
}

/// One row: both kinds of run at `task_bytes`, [`ROUNDS`] each, interleaved.
#[derive(Debug, Clone, serde::Serialize)]
struct Row {
    task_bytes: usize,
    tcp_ms: Vec<f64>,
    emulated_ms: Vec<f64>,
    tcp_k_ns: Vec<f64>,
    emulated_k_ns: Vec<f64>,
}

fn measure(exe: &Path, link: &ShapedLink, dir: &Path) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for task_bytes in TASK_BYTES {
        let mut row = Row {
            task_bytes,
            tcp_ms: Vec::new(),
            emulated_ms: Vec::new(),
            tcp_k_ns: Vec::new(),
            emulated_k_ns: Vec::new(),
        };
        for round in 0..ROUNDS {
            let (tcp, emu) = if round % 2 == 0 {
                let tcp = over_tcp(exe, link, task_bytes, dir)?;
                (tcp, emulated(exe, task_bytes, dir)?)
            } else {
                let emu = emulated(exe, task_bytes, dir)?;
                (over_tcp(exe, link, task_bytes, dir)?, emu)
            };
            row.tcp_ms.push(tcp.iteration_ms);
            row.emulated_ms.push(emu.iteration_ms);
            row.tcp_k_ns.push(tcp.k_ns);
            row.emulated_k_ns.push(emu.k_ns);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Why the experiment cannot run here, if it cannot.
fn missing() -> Option<String> {
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
    };
    ["ip", "tc", "mpirun"]
        .into_iter()
        .find(|tool| !on_path(tool))
        .map(|tool| format!("no `{tool}` on the PATH"))
}

pub fn run(size: Size) -> Result<Section, BenchError> {
    let skipped = if size != Size::Full {
        Some(format!(
            "skipped at size `{}` (runs at `full`)",
            size.name()
        ))
    } else {
        missing()
    };
    let measured = match skipped {
        Some(why) => Err(why),
        None => (|| {
            let exe = synthetic_binary()?;
            let scratch = Scratch::new("mw-bench-shaped")?;
            let link = ShapedLink::create()?;
            measure(&exe, &link, scratch.path())
        })(),
    };
    Ok(match measured {
        Ok(rows) => section(&rows),
        Err(why) => Section {
            title: TITLE.into(),
            verdict: Verdict::Measured(format!("not run: {why}.")),
            paper: PAPER.into(),
            ours: String::new(),
            figures: Vec::new(),
            data: json!({ "skipped": why }),
            seconds: 0.0,
        },
    })
}

const TITLE: &str = "The emulated link against a shaped TCP link";

fn section(rows: &[Row]) -> Section {
    let mut table = Table::new([
        "bytes per task (answer 2000)",
        "MPI over shaped TCP, ms per iteration",
        "emulated link, ms per iteration",
        "emulated over TCP",
        "fitted k over TCP, ns/B",
        "fitted k emulated, ns/B",
    ]);
    let nominal = 8e3 / MBIT;
    let (mut time_ratios, mut k_ratios) = (Vec::new(), Vec::new());
    for row in rows {
        let ratio: Vec<f64> = row
            .emulated_ms
            .iter()
            .zip(&row.tcp_ms)
            .map(|(e, t)| e / t)
            .collect();
        time_ratios.extend(&ratio);
        k_ratios.extend(row.tcp_k_ns.iter().map(|k| k / nominal));
        table.push([
            row.task_bytes.to_string(),
            Spread::of(&row.tcp_ms).text(0),
            Spread::of(&row.emulated_ms).text(0),
            Spread::of(&ratio).times(),
            Spread::of(&row.tcp_k_ns).text(1),
            Spread::of(&row.emulated_k_ns).text(1),
        ]);
    }
    let time = Spread::of(&time_ratios);
    let k_tcp = Spread::of(&k_ratios);
    let verdict = format!(
        "behind the emulated {MBIT} Mbit/s link an iteration takes {} the time it takes under \
         MPI over TCP shaped to {MBIT} Mbit/s; the runtime fits `k` over TCP at {} the nominal \
         {nominal:.0} ns per byte: headers, acknowledgements and the token bucket's bursts, which \
         the emulation leaves out (it charges payload bytes at the nominal rate), so to emulate \
         payload over TCP on such a link give `--link-bandwidth` about {:.0} % less.",
        time.times(),
        k_tcp.times(),
        (1.0 - 1.0 / k_tcp.median) * 100.0
    );
    let ours = format!(
        "The synthetic example (release, `--features mpi`): {TASKS} tasks of 1 ms (sleeping) per \
         iteration, {ITERATIONS} iterations, `factoring` at factor 0.5, one worker, tuning off. \
         Under MPI the master's rank runs in this machine's namespace and the worker's in a \
         namespace of its own, joined by a veth pair whose both ends are shaped with `tc qdisc \
         add dev DEV root tbf rate {MBIT}mbit burst 32kbit latency 100ms`, Open MPI's TCP \
         transport only (`--mca btl tcp,self`). On threads: `--link-latency {LATENCY_MS} \
         --link-bandwidth {MBIT}` (`tbf` adds no delay; `netem`, which would, is not in every \
         kernel). Medians of {ROUNDS} runs of each, interleaved, with their range; a run's time is \
         its median iteration past the first, its `k` the median of the runtime's fits \
         (`k_ms_per_byte` in the metrics).\n\n{}",
        table.markdown()
    );
    Section {
        title: TITLE.into(),
        verdict: Verdict::Measured(verdict),
        paper: PAPER.into(),
        ours,
        figures: Vec::new(),
        data: json!({ "rows": rows }),
        seconds: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_compares_the_runs_row_by_row() {
        let rows = [Row {
            task_bytes: 5_000,
            tcp_ms: vec![100.0, 110.0, 120.0],
            emulated_ms: vec![90.0, 99.0, 108.0],
            tcp_k_ns: vec![88.0, 88.0, 88.0],
            emulated_k_ns: vec![81.0, 80.0, 82.0],
        }];
        let s = section(&rows);
        let Verdict::Measured(text) = &s.verdict else {
            panic!("{:?}", s.verdict)
        };
        assert!(text.contains("0.90× (0.90–0.90) the time"), "{text}");
        assert!(
            text.contains("1.10× (1.10–1.10) the nominal 80 ns"),
            "{text}"
        );
        assert!(text.contains("about 9 % less"), "{text}");
        assert!(s.ours.contains("| 5000 "), "{}", s.ours);
    }

    #[test]
    fn below_full_size_it_says_why_it_did_not_run() {
        let s = run(Size::Tiny).unwrap();
        assert_eq!(
            s.verdict,
            Verdict::Measured("not run: skipped at size `tiny` (runs at `full`).".into())
        );
    }
}
