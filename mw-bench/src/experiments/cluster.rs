//! The model validation of [`super::model`] (Cesar et al. 2006, Figs. 7–10) on a real network
//! stack: the synthetic example built with the `mpi` feature, run by `cluster/mw-cluster run`
//! across a cluster in a box of [`NODES`] nodes (network namespaces joined by a bridge, kernel
//! TCP between them, each cable shaped to the paper's 100 Mbit/s by `tc`'s token bucket),
//! beside the same runs behind the in-process emulated link. The master's rank has the first
//! node to itself and the workers are split between the others, so that every chunk and every
//! answer crosses the master's cable, the one link all workers share, as on the paper's
//! switched Ethernet.
//!
//! The same held-out scheme as [`super::model`]: calibrated on the runs at even `n` (each also
//! at [`VOLUMES`] times the case's volume), scored at every odd `n`, which the model has not
//! seen. Every rank is a process of this machine's cores, as the workers are threads behind the
//! emulated link: the tasks sleep, and the ranks wait for messages by sleeping too
//! (`mpi_yield_when_idle`, which `mw-cluster run` sets and the runtime's wait follows).
//!
//! The paper's network also had 0.1 ms of latency: the box adds it, with the kernel's `netem`
//! where it has it, otherwise with the box's relay (`mw-relay`, built here); where neither can,
//! the box runs without a delay and the section says why. Either way the section gives the
//! round trip measured between two nodes (`round_trip`).
//!
//! Needs root, `ip`, `tc`, `unshare` and `mpirun`: without them the experiment stops with an
//! error that says which is missing. The box has names of its own ([`PREFIX`], [`NET`]) and is
//! taken down by them when the experiment ends, whether it succeeded or not, or at a SIGINT or
//! SIGTERM that ends `mw-bench` first.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use mw_runtime::{PolicyName, RunMetrics};
use mwgen::report::chart::{LineChart, Series};
use serde_json::json;

use super::calibration::{Observed, calibrated, startups_from_times};
use super::children::{self, run_with_limit, workspace_manifest};
use super::model::{CASES, Case, PAPER_SCALE, Point, Sweep, VOLUMES, compare};
use super::model_mpi::synthetic_binary;
use super::{LINK_LATENCY_MS, LINK_MBIT, fixed, program, synthetic};
use crate::doc::{Figure, Section, Table, Verdict, ms, percent};
use crate::ideal::{Spread, median};
use crate::teardown::{Scratch, Teardown};
use crate::{BenchError, Size};

/// Nodes of the box: the master's and two of workers.
pub const NODES: usize = 3;
/// The box's names: namespaces `mwbench1..3`, bridge `mwbench-br`, cables `mwbench-vK`.
pub const PREFIX: &str = "mwbench";
/// The box's /24, used only inside it.
pub const NET: &str = "10.213.91";
/// The experiment's thresholds (issue targets): the error at every held-out `n` from half the
/// measured best `n` on, and the predicted best `n` against the measured one.
pub const ERROR_BOUND: f64 = 0.10;
pub const BEST_N_BOUND: f64 = 0.15;
/// Tasks per iteration, as in the emulated sweep, and iterations per run: two more than there,
/// since a run's time is their median and the ranks share the cores with other programs.
const TASKS: usize = 720;
const ITERATIONS: usize = 5;
/// Runs of every point on each network, alternating between them; the point keeps each
/// network's fastest. Here up to 56 processes share the machine's cores where the paper gave
/// every worker a node of its own, and a run's time moves from one run to the next with how
/// their wake-ups happen to fall (whole runs slower by a third, with the same busy time per
/// worker); that interference only ever adds time, so the least disturbed of a few runs is the
/// closest to what a cluster would measure.
const REPEATS: usize = 3;
/// Round trips timed between two nodes.
const ROUND_TRIPS: usize = 2000;

const TITLE: &str = "Model validation on kernel TCP (a cluster in a box)";

const PAPER: &str = "\
Cesar et al. (2006), §6.3, Figs. 7–10 and Tables 1–4: the model's iteration time and performance
index against measurements on a cluster of one worker per node on 100 Mbit/s switched Ethernet
with 0.1 ms of latency, 2 to 55 workers. The section *Model validation* runs them behind this
runtime's emulated link, whose cost is the model's own law; here the same runs cross the
kernel's TCP stack.";

/// The worker counts of a case whose largest is `last`: every `n` up to 8, then pairs of an
/// even (calibration) and the next odd (held-out) `n` every `stride` from 12, and `last` with
/// its neighbour.
pub fn counts(last: usize, stride: usize) -> Vec<usize> {
    let mut n: Vec<usize> = (2..=last.min(8)).collect();
    let mut even = 12;
    while even < last {
        n.extend([even, even + 1]);
        even += stride.max(2);
    }
    n.extend([last - 1, last]);
    n.retain(|&c| c >= 2 && c <= last);
    n.sort_unstable();
    n.dedup();
    n
}

#[derive(Debug, Clone)]
struct Plan {
    cases: Vec<Case>,
    /// Worker counts between 8 and a case's largest: a pair every `stride`.
    stride: usize,
    /// The most workers run (ranks: one more).
    max_workers: usize,
}

/// The cases of the paper's smaller volume, 100 KB (Figs. 7(a) to 10(a)), each up to the most
/// workers the paper ran it with: those where the emulated sweep's error grows with `n`, and
/// the four that fit the run time (most of a run of 56 ranks on 2 cores goes to starting and
/// ending them).
fn plan() -> Plan {
    Plan {
        cases: CASES
            .iter()
            .copied()
            .filter(|c| c.figure.ends_with("(a)"))
            .collect(),
        stride: 12,
        max_workers: 55,
    }
}

/// Why this machine cannot host the box, if it cannot.
fn missing() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("it needs root (network namespaces, links and qdiscs)".into());
    }
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
    };
    ["ip", "tc", "unshare", "mpirun"]
        .into_iter()
        .find(|tool| !on_path(tool))
        .map(|tool| format!("no `{tool}` on the PATH"))
}

/// An error unless this machine can host the box (root, `ip`, `tc`, `unshare`, `mpirun`).
///
/// # Errors
/// What is missing, as a sentence.
pub fn able() -> Result<(), BenchError> {
    match missing() {
        None => Ok(()),
        Some(why) => Err(BenchError(format!(
            "error: the cluster experiment cannot run: {why} (`cluster/mw-cluster` builds the \
             box; see cluster/README.md)"
        ))),
    }
}

/// A box brought up by `cluster/mw-cluster` under this experiment's names; taken down by them
/// when dropped, or at a signal that ends the process first.
pub(super) struct ClusterBox {
    script: Script,
    /// The delay added to each frame, ms, and what added it (`netem` or `relay`).
    pub(super) delay_ms: Option<f64>,
    pub(super) delay_with: Option<String>,
    /// Taken down before the folder holding its state is removed (fields drop in order; at a
    /// signal, the newest teardown runs first).
    _down: Teardown,
    _scratch: Scratch,
}

/// `cluster/mw-cluster` with this experiment's names and state.
#[derive(Debug, Clone)]
struct Script {
    path: PathBuf,
    state: PathBuf,
    /// The relay's binary, for a delay on a kernel without `netem`, where it built.
    relay: Option<PathBuf>,
}

impl Script {
    /// The script's command, with this experiment's names; behind `timeout -k 5 LIMIT` when
    /// given a limit (a run's `mpirun` may ignore SIGTERM).
    fn command(&self, limit: Option<Duration>) -> Command {
        let mut command = match limit {
            Some(limit) => {
                let mut command = Command::new("timeout");
                command.args(["-k", "5", &limit.as_secs().max(1).to_string()]);
                command.arg(&self.path);
                command
            }
            None => Command::new(&self.path),
        };
        command.env("MWC_PREFIX", PREFIX);
        command.env("MWC_NET", NET);
        command.env("MWC_STATE", &self.state);
        if let Some(relay) = &self.relay {
            command.env("MWC_RELAY", relay);
        }
        command
    }

    fn run(&self, args: &[String]) -> Result<(), String> {
        let mut command = self.command(None);
        command.args(args);
        let out = run_with_limit(command, Duration::from_secs(120))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
        }
    }

    /// Takes down what `up` made. `up` writes its state before it makes anything, and refuses
    /// without a trace over names that exist already: with no state there is nothing of ours
    /// to take down.
    fn down(&self) {
        if self.state.exists() {
            let _ = self.run(&["down".into()]);
        }
    }
}

impl ClusterBox {
    /// [`NODES`] nodes, each cable shaped to `mbit` both ways with `delay_ms` added by `netem`
    /// or the relay; where neither can add it, no delay (what `mw-cluster up --delay` said is
    /// returned beside the box).
    pub(super) fn up(
        mbit: f64,
        delay_ms: f64,
        slots: usize,
    ) -> Result<(ClusterBox, Option<String>), String> {
        let script = workspace_manifest()
            .parent()
            .map_or_else(|| PathBuf::from("cluster"), |dir| dir.join("cluster"))
            .join("mw-cluster");
        // The box's state in a folder of this run's own (`mw-cluster up` makes `state`).
        let scratch = Scratch::new("mw-bench-cluster")?;
        let state = scratch.path().join("state");
        // Without the relay built, the box says so where the kernel has no netem.
        let relay = relay_binary().ok();
        let script = Script {
            path: script,
            state,
            relay,
        };
        let down = {
            let script = script.clone();
            Teardown::new(move || script.down())
        };
        let mut b = ClusterBox {
            script,
            delay_ms: Some(delay_ms),
            delay_with: None,
            _down: down,
            _scratch: scratch,
        };
        let args = vec![
            "up".to_string(),
            NODES.to_string(),
            "--rate".into(),
            mbit.to_string(),
            "--slots".into(),
            slots.to_string(),
        ];
        let with_delay = [args.clone(), vec!["--delay".into(), delay_ms.to_string()]].concat();
        match b.script.run(&with_delay) {
            Ok(()) => {
                b.delay_with = b.delay_by();
                Ok((b, None))
            }
            Err(e) if e.contains("--delay") => {
                // What a failed `up` made is taken down before the box comes up without delay.
                let _ = b.script.run(&["down".into()]);
                b.delay_ms = None;
                b.script
                    .run(&args)
                    .map_err(|e| format!("`mw-cluster up` failed: {e}"))?;
                Ok((b, Some(e)))
            }
            Err(e) => Err(format!("`mw-cluster up` failed: {e}")),
        }
    }

    /// What added the delay, as the box's state says (`delay=0.1 by relay ...`).
    fn delay_by(&self) -> Option<String> {
        let config = std::fs::read_to_string(self.script.state.join("config")).ok()?;
        let by = config
            .split_whitespace()
            .skip_while(|w| *w != "by")
            .nth(1)?;
        Some(by.to_string())
    }

    fn node(k: usize) -> String {
        format!("{PREFIX}{k}")
    }

    /// One run of `exe` with `args` on `n` workers: the master alone on the first node, the
    /// workers split between the others; its metrics read back from `metrics`.
    pub(super) fn mpirun(
        &self,
        exe: &Path,
        n: usize,
        args: &[String],
        metrics: &Path,
        limit: Duration,
    ) -> Result<RunMetrics, String> {
        let second = n.div_ceil(2);
        let mut hosts = format!("{}:1,{}:{second}", Self::node(1), Self::node(2));
        if n > second {
            hosts.push_str(&format!(",{}:{}", Self::node(3), n - second));
        }
        let mut command = self.script.command(Some(limit));
        command.args([
            "run",
            "--oversubscribe",
            "--bind-to",
            "none",
            "--host",
            &hosts,
        ]);
        command.args(["-np", &(n + 1).to_string()]);
        command.arg(exe).args(args).arg("--metrics").arg(metrics);
        let out = run_with_limit(command, limit + Duration::from_secs(10))?;
        if !out.status.success() {
            return Err(format!(
                "`mw-cluster run` on {n} workers failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let text = std::fs::read_to_string(metrics)
            .map_err(|e| format!("no metrics at `{}`: {e}", metrics.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("metrics at `{}`: {e}", metrics.display()))
    }

    /// The network namespace of node `k`, as `ip netns` names it.
    fn namespace(k: usize) -> PathBuf {
        Path::new("/run/netns").join(Self::node(k))
    }
}

/// The box's network as an experiment found it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct BoxLink {
    /// The delay added, ms, and what added it (`netem` or `relay`); `None` without a delay.
    pub(super) delay_ms: Option<f64>,
    pub(super) delay_with: Option<String>,
    /// What `mw-cluster up --delay` said where it could not add the delay.
    pub(super) no_delay: Option<String>,
    /// The round trip between two nodes, ms: median, 10th and 90th percentiles.
    pub(super) rtt: (f64, f64, f64),
}

impl BoxLink {
    /// The box brought up with the papers' network (100 Mbit/s, 0.1 ms) for `slots` ranks a
    /// node, and its round trip measured.
    pub(super) fn papers(slots: usize) -> Result<(ClusterBox, BoxLink), String> {
        let (b, no_delay) = ClusterBox::up(LINK_MBIT, LINK_LATENCY_MS, slots)?;
        let rtt = round_trip()?;
        eprintln!("mw-bench: cluster up, round trip {:.3} ms", rtt.0);
        let link = BoxLink {
            delay_ms: b.delay_ms,
            delay_with: b.delay_with.clone(),
            no_delay,
            rtt,
        };
        Ok((b, link))
    }

    /// How the box was brought up and what its link is, for a section's opening:
    /// "`cluster/mw-cluster up 3 --rate 100 --delay 0.1`: 3 network namespaces …; 100 Mbit/s …".
    pub(super) fn opening(&self) -> String {
        format!(
            "`cluster/mw-cluster up {NODES} --rate {LINK_MBIT}{}`: {}; {}",
            self.delay_ms
                .map_or(String::new(), |d| format!(" --delay {d}")),
            box_text(self.delay_with.as_deref()),
            self.text()
        )
    }

    /// The link in words ([`link_text`]).
    pub(super) fn text(&self) -> String {
        link_text(self.delay_ms, self.delay_with.as_deref(), self.rtt)
    }

    /// What `mw-cluster up --delay` said where it could add no delay, as a paragraph; empty
    /// where it added one.
    pub(super) fn no_delay_text(&self) -> String {
        self.no_delay.as_ref().map_or(String::new(), |why| {
            format!(
                "\n`mw-cluster up --delay {LINK_LATENCY_MS}` said: {}\n",
                why.lines().last().unwrap_or(why)
            )
        })
    }

    /// The raw numbers, for results.json.
    pub(super) fn json(&self) -> serde_json::Value {
        let (median, p10, p90) = self.rtt;
        json!({
            "delay_ms": self.delay_ms,
            "delay_with": self.delay_with,
            "round_trip_ms": { "median": median, "p10": p10, "p90": p90 },
        })
    }
}

/// The box's relay (`mw-relay`), built in release.
fn relay_binary() -> Result<PathBuf, String> {
    let mut build = children::cargo();
    build.args([
        "build",
        "--release",
        "-p",
        "mw-relay",
        "--message-format=json",
    ]);
    build.arg("--manifest-path").arg(workspace_manifest());
    let out = run_with_limit(build, Duration::from_secs(600))?;
    let json = String::from_utf8_lossy(&out.stdout);
    children::executable(&json, "mw-relay", "bin").ok_or_else(|| {
        format!(
            "the relay did not build: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

/// A thread of this process in node `k`'s network namespace (namespaces are per thread).
fn enter(k: usize) -> Result<(), String> {
    let path = ClusterBox::namespace(k);
    let file = std::fs::File::open(&path).map_err(|e| format!("`{}`: {e}", path.display()))?;
    rustix::thread::move_into_link_name_space(
        std::os::fd::AsFd::as_fd(&file),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .map_err(|e| format!("cannot enter `{}`: {e}", path.display()))
}

/// The round trip of one byte over kernel TCP from node 2 to node 1 and back, in ms: the
/// median, 10th and 90th percentiles of [`ROUND_TRIPS`] (Nagle off), measured from threads
/// of this process moved into the two nodes.
fn round_trip() -> Result<(f64, f64, f64), String> {
    let address = format!("{NET}.2:7077");
    let listen = address.clone();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || -> Result<(), String> {
        enter(1)?;
        let listener = TcpListener::bind(&listen).map_err(|e| format!("bind {listen}: {e}"))?;
        let _ = ready_tx.send(());
        let (mut stream, _) = listener.accept().map_err(|e| e.to_string())?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let mut byte = [0u8; 1];
        for _ in 0..ROUND_TRIPS {
            stream.read_exact(&mut byte).map_err(|e| e.to_string())?;
            stream.write_all(&byte).map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    let client = std::thread::spawn(move || -> Result<Vec<f64>, String> {
        enter(2)?;
        ready_rx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| "the listener in the first node did not start".to_string())?;
        let mut stream = TcpStream::connect(&address).map_err(|e| format!("{address}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        let mut byte = [1u8; 1];
        let mut times = Vec::with_capacity(ROUND_TRIPS);
        for _ in 0..ROUND_TRIPS {
            let started = Instant::now();
            stream.write_all(&byte).map_err(|e| e.to_string())?;
            stream.read_exact(&mut byte).map_err(|e| e.to_string())?;
            times.push(started.elapsed().as_secs_f64() * 1e3);
        }
        Ok(times)
    });
    let times = client
        .join()
        .map_err(|_| "the round-trip client failed".to_string())??;
    server
        .join()
        .map_err(|_| "the round-trip server failed".to_string())??;
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q) as usize];
    Ok((median(&times), at(0.1), at(0.9)))
}

/// The synthetic program's flags for one run of `case` at `volume` times its volume.
fn flags(case: &Case, volume: f64) -> (f64, usize) {
    let bytes = case.volume_bytes as f64 * PAPER_SCALE * volume;
    (case.tc_ms / TASKS as f64, bytes as usize / TASKS / 2)
}

/// One run of `case` on `n` worker ranks across the box.
fn over_tcp(
    b: &ClusterBox,
    exe: &Path,
    dir: &Path,
    case: &Case,
    n: usize,
    volume: f64,
) -> Result<Observed, String> {
    let (mean_ms, per_task) = flags(case, volume);
    let config = dir.join("Mw.toml");
    std::fs::write(
        &config,
        format!(
            "[run]\npolicy = \"{}\"\nprotocol = \"{}\"\n\n[tuning]\ntune = \"off\"\n",
            PolicyName::Static,
            case.protocol
        ),
    )
    .map_err(|e| format!("cannot write `{}`: {e}", config.display()))?;
    let args: Vec<String> = [
        "--tasks",
        &TASKS.to_string(),
        "--iterations",
        &ITERATIONS.to_string(),
        "--mean-ms",
        &mean_ms.to_string(),
        "--stddev",
        "0",
        "--task-bytes",
        &per_task.to_string(),
        "--result-bytes",
        &per_task.to_string(),
        "--backend",
        "mpi",
        "--quiet",
        "--config",
        &config.display().to_string(),
    ]
    .map(str::to_owned)
    .to_vec();
    let metrics = dir.join("run.json");
    let _ = std::fs::remove_file(&metrics);
    let m = b.mpirun(exe, n, &args, &metrics, Duration::from_secs(300))?;
    // Equal tasks: the drawn task time is the mean's.
    Ok(Observed::from_metrics(&m, case.tc_ms))
}

/// The same run on threads in this process, behind the emulated link.
fn emulated(case: &Case, n: usize, volume: f64) -> Result<Observed, String> {
    let (mean_ms, per_task) = flags(case, volume);
    let mut prog = program(TASKS, ITERATIONS, mean_ms, 0.0);
    prog.task_bytes = per_task;
    prog.result_bytes = per_task;
    let mut run = fixed(n);
    run.policy = Some(PolicyName::Static.into());
    run.protocol = Some(case.protocol);
    run.link_latency = Some(LINK_LATENCY_MS);
    run.link_bandwidth = Some(LINK_MBIT);
    let summary = synthetic(prog, run).map_err(|BenchError(e)| e)?;
    let drawn: Vec<f64> = summary
        .outcome
        .task_time
        .iter()
        .map(|d| d.as_secs_f64() * 1e3)
        .collect();
    Ok(Observed::from_metrics(&summary.metrics, median(&drawn)))
}

/// The faster of two runs of a point (the first where they tie).
fn faster(a: Observed, b: Observed) -> Observed {
    if b.time_ms < a.time_ms { b } else { a }
}

/// One network's runs of a case: at the case's volume at every `n`, and at the other
/// [`VOLUMES`] at the even `n`.
#[derive(Debug, Default)]
struct Runs {
    observed: Vec<(usize, f64)>,
    at_volume: Vec<Observed>,
    other_volumes: Vec<Observed>,
}

impl Runs {
    /// The model calibrated on the runs at `calibrated_on` (every volume) against every `n`:
    /// with `mo` fitted to their iteration times, and with `mo` from the runtime's trips (as in
    /// *Model validation*); `None` where the calibration found no parameters.
    fn sweeps(
        mut self,
        case: &Case,
        calibrated_on: &[usize],
    ) -> Result<Option<(Sweep, Sweep)>, String> {
        self.other_volumes.extend(self.at_volume.iter().copied());
        let Some(by_trips) = calibrated(&self.at_volume, &self.other_volumes, case.protocol) else {
            return Ok(None);
        };
        let by_times = startups_from_times(&by_trips, &self.at_volume, case.protocol);
        let sweep = |params| {
            compare(
                case.figure,
                case.protocol,
                params,
                &self.observed,
                calibrated_on,
            )
            .map_err(|BenchError(e)| e)
        };
        Ok(Some((sweep(&by_times)?, sweep(&by_trips)?)))
    }
}

/// One case's sweeps over `counts` on both networks, `observe(n, volume)` making the run on
/// kernel TCP and then the same behind the emulated link, so that the two see the same load on
/// the machine; each network's model calibrated on its own runs at even `n`.
fn sweeps(
    case: &Case,
    counts: &[usize],
    mut observe: impl FnMut(usize, f64) -> Result<(Observed, Observed), String>,
) -> Result<Option<Pair>, String> {
    let (mut tcp, mut emulated) = (Runs::default(), Runs::default());
    let mut calibrated_on = Vec::new();
    for &n in counts {
        let (t, e) = observe(n, 1.0)?;
        tcp.observed.push((n, t.time_ms));
        emulated.observed.push((n, e.time_ms));
        if n % 2 == 0 {
            calibrated_on.push(n);
            tcp.at_volume.push(t);
            emulated.at_volume.push(e);
            for &volume in VOLUMES.iter().filter(|&&v| v != 1.0) {
                let (t, e) = observe(n, volume)?;
                tcp.other_volumes.push(t);
                emulated.other_volumes.push(e);
            }
        }
    }
    Ok(
        match (
            tcp.sweeps(case, &calibrated_on)?,
            emulated.sweeps(case, &calibrated_on)?,
        ) {
            (Some((tcp, tcp_trips)), Some((emulated, emulated_trips))) => Some(Pair {
                tcp,
                emulated,
                from_trips: Some((tcp_trips, emulated_trips)),
            }),
            _ => None,
        },
    )
}

/// One case on both networks.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Pair {
    /// Each network's sweep, `mo` fitted to its calibration runs' iteration times.
    pub tcp: Sweep,
    pub emulated: Sweep,
    /// The same calibrated with `mo` from the runtime's trips, TCP's and the emulated link's.
    pub from_trips: Option<(Sweep, Sweep)>,
}

/// A sweep judged per point: the worst |error| over the held-out `n` from half the measured
/// best `n` (by `Tt`) on, and whether the predicted best `n` by `Tt` and by `Pi` lie within
/// [`BEST_N_BOUND`] of the measured.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Judged {
    pub worst_error: f64,
    pub worst_at: usize,
    pub best_tt_close: bool,
    pub best_pi_close: bool,
}

impl Judged {
    /// `+11.8 % at n = 37`.
    fn worst_text(&self) -> String {
        format!("{} at n = {}", percent(self.worst_error), self.worst_at)
    }
}

fn error(p: &Point) -> f64 {
    (p.predicted_ms - p.measured_ms) / p.measured_ms
}

pub fn judge(s: &Sweep) -> Judged {
    let [tt_real, tt_pred, pi_real, pi_pred] = s.best();
    let from = tt_real.unwrap_or(0) / 2;
    let (worst_error, worst_at) = s
        .points
        .iter()
        .filter(|p| p.held_out && p.workers >= from && p.measured_ms > 0.0)
        .map(|p| (error(p), p.workers))
        .max_by(|a, b| a.0.abs().total_cmp(&b.0.abs()))
        .unwrap_or((f64::NAN, 0));
    let close = |real: Option<usize>, predicted: Option<usize>| match (real, predicted) {
        (Some(r), Some(p)) => (p as f64 - r as f64).abs() <= BEST_N_BOUND * r as f64,
        _ => false,
    };
    Judged {
        worst_error,
        worst_at,
        best_tt_close: close(tt_real, tt_pred),
        best_pi_close: close(pi_real, pi_pred),
    }
}

fn n_text(n: Option<usize>) -> String {
    n.map_or("–".into(), |n| n.to_string())
}

/// The verdict from the kernel TCP sweeps alone (the emulated ones are the comparison).
pub fn verdict(pairs: &[Pair], link: &str) -> Verdict {
    let judged: Vec<(String, Judged)> = pairs
        .iter()
        .map(|p| (p.tcp.figure.clone(), judge(&p.tcp)))
        .collect();
    let within = |j: &Judged| j.worst_error.abs() <= ERROR_BOUND;
    let good = judged
        .iter()
        .filter(|(_, j)| within(j) && j.best_tt_close && j.best_pi_close)
        .count();
    let worst = judged
        .iter()
        .map(|(f, j)| {
            format!(
                "{f} {} at n = {}",
                percent(j.worst_error).trim_start_matches('+'),
                j.worst_at
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let best = |pick: fn(&Judged) -> bool| judged.iter().filter(|(_, j)| pick(j)).count();
    let why = format!(
        "on kernel TCP ({link}), the worst error of `Tt` at the held-out `n` from half the \
         measured best on: {worst} (within {:.0} % in {} of {} cases); predicted best `n` within \
         ±{:.0} % of the measured by `Tt` in {} and by `Pi` in {} of {} cases; all three met in \
         {good} of {} cases.",
        ERROR_BOUND * 100.0,
        judged.iter().filter(|(_, j)| within(j)).count(),
        judged.len(),
        BEST_N_BOUND * 100.0,
        best(|j| j.best_tt_close),
        best(|j| j.best_pi_close),
        judged.len(),
        judged.len(),
    );
    if judged.is_empty() || (good == 0 && judged.iter().all(|(_, j)| !within(j))) {
        Verdict::Not(why)
    } else if good == judged.len() {
        Verdict::Reproduced(why)
    } else {
        Verdict::Partly(why)
    }
}

/// The summary table: per case and network, the calibration, the best `n` and the worst error.
pub fn summary(pairs: &[Pair]) -> Table {
    let mut table = Table::new([
        "case",
        "network",
        "mo (ms)",
        "k (ns/B)",
        "λm (ms)",
        "best n by Tt: measured / predicted",
        "best n by Pi: measured / predicted",
        "worst held-out error from half the best n",
        "mo from the runtime's trips (ms)",
        "worst held-out error with it",
    ]);
    for pair in pairs {
        let trips = pair.from_trips.as_ref();
        for (network, s, trips) in [
            ("kernel TCP", &pair.tcp, trips.map(|t| &t.0)),
            ("emulated", &pair.emulated, trips.map(|t| &t.1)),
        ] {
            let [tt_real, tt_pred, pi_real, pi_pred] = s.best();
            let j = judge(s);
            table.push([
                format!(
                    "Fig. {} ({}, Tc {} ms, V {:.0} KB, n ≤ {})",
                    s.figure,
                    s.protocol,
                    ms(s.tc_ms),
                    s.volume_bytes / 1000.0,
                    s.points.last().map_or(0, |p| p.workers)
                ),
                network.into(),
                format!("{:.4}", s.mo_ms),
                format!("{:.1}", s.k_ms_per_byte * 1e6),
                format!("{:.3}", s.lm_ms),
                format!("{} / {}", n_text(tt_real), n_text(tt_pred)),
                format!("{} / {}", n_text(pi_real), n_text(pi_pred)),
                j.worst_text(),
                trips.map_or("–".into(), |t| format!("{:.4}", t.mo_ms)),
                trips.map_or("–".into(), |t| judge(t).worst_text()),
            ]);
        }
    }
    table
}

/// Every held-out `n` of a case: measured and predicted `Tt` on both networks, and the errors.
pub fn held_out(pair: &Pair) -> Table {
    let mut table = Table::new([
        "n",
        "TCP: Tt measured (ms)",
        "predicted",
        "error",
        "emulated: Tt measured (ms)",
        "predicted",
        "error",
        "TCP over emulated, measured",
    ]);
    for (t, e) in pair.tcp.points.iter().zip(&pair.emulated.points) {
        if !t.held_out {
            continue;
        }
        table.push([
            t.workers.to_string(),
            ms(t.measured_ms),
            ms(t.predicted_ms),
            percent(error(t)),
            ms(e.measured_ms),
            ms(e.predicted_ms),
            percent(error(e)),
            format!("{:.2}×", t.measured_ms / e.measured_ms),
        ]);
    }
    table
}

fn figure(pair: &Pair) -> Figure {
    let name = pair.tcp.figure.replace(['(', ')'], "");
    let points = |s: &Sweep, f: fn(&Point) -> f64| -> Vec<(f64, f64)> {
        s.points.iter().map(|p| (p.workers as f64, f(p))).collect()
    };
    Figure {
        file: format!("cluster-{name}.svg"),
        caption: format!(
            "Fig. {}: iteration time measured and predicted on kernel TCP across the box and \
             behind the emulated link, each model calibrated on its own runs at even n.",
            pair.tcp.figure
        ),
        chart: LineChart {
            title: format!(
                "Kernel TCP and emulated link, case of Fig. {}",
                pair.tcp.figure
            ),
            x_label: "workers".into(),
            y_label: "Tt (ms)".into(),
            series: vec![
                Series::line("TCP measured", points(&pair.tcp, |p| p.measured_ms)),
                Series::dashed("TCP predicted", points(&pair.tcp, |p| p.predicted_ms)),
                Series::line(
                    "emulated measured",
                    points(&pair.emulated, |p| p.measured_ms),
                ),
                Series::dashed(
                    "emulated predicted",
                    points(&pair.emulated, |p| p.predicted_ms),
                ),
            ],
            log_x: false,
        },
    }
}

/// How the two networks' runs differ, case by case: the measured `Tt` on kernel TCP over that
/// behind the emulated link at the same `n`, and the calibrated `k` and `mo` of the one over
/// the other's.
fn differences(pairs: &[Pair]) -> String {
    let cases: Vec<String> = pairs
        .iter()
        .map(|p| {
            let ratios: Vec<f64> = p
                .tcp
                .points
                .iter()
                .zip(&p.emulated.points)
                .map(|(t, e)| t.measured_ms / e.measured_ms)
                .collect();
            format!(
                "{} {} (k {:.2}×, mo {:.4} against {:.4} ms)",
                p.tcp.figure,
                Spread::of(&ratios).times(),
                p.tcp.k_ms_per_byte / p.emulated.k_ms_per_byte,
                p.tcp.mo_ms,
                p.emulated.mo_ms
            )
        })
        .collect();
    format!(
        "Kernel TCP against the emulated link, each run on TCP followed by the same run behind \
         the emulated link: measured `Tt` on TCP over emulated at the same `n`, median over the \
         counts (range), and the calibrated `k` and `mo` of TCP against the emulated link's: \
         {}.",
        cases.join("; ")
    )
}

/// What the box's link is, in words, for the text: its rate and its delay (and what added it)
/// or measured round trip.
fn link_text(delay_ms: Option<f64>, delay_with: Option<&str>, rtt: (f64, f64, f64)) -> String {
    let (median, p10, p90) = rtt;
    let measured = format!(
        "measured TCP round trip of one byte between two nodes {median:.3} ms (10–90 %: \
         {p10:.3}–{p90:.3})"
    );
    match (delay_ms, delay_with) {
        (Some(d), Some("relay")) => format!(
            "{LINK_MBIT} Mbit/s and {d} ms added to every frame by the box's relay (this kernel \
             has no `netem`); {measured}"
        ),
        (Some(d), _) => {
            format!(
                "{LINK_MBIT} Mbit/s and {d} ms added by `netem` on each node's sends; {measured}"
            )
        }
        (None, _) => format!(
            "{LINK_MBIT} Mbit/s, no delay added; {measured} against the paper's 0.1 ms each way"
        ),
    }
}

/// How the box joins its nodes, in words, for the text.
fn box_text(delay_with: Option<&str>) -> String {
    if delay_with == Some("relay") {
        format!(
            "{NODES} network namespaces joined by the box's relay (a switch in user space that \
             holds every frame the delay), kernel TCP between them, what each node sends shaped \
             by `tc`'s token bucket and what it receives paced by the relay"
        )
    } else {
        format!(
            "{NODES} network namespaces on a bridge, kernel TCP between them, each cable shaped \
             both ways by `tc`'s token bucket"
        )
    }
}

/// Runs the experiment: at size `full` only, and only where [`able`] (it refuses otherwise).
///
/// # Errors
/// Not root, a tool missing, the box or a run failed.
pub fn run(size: Size) -> Result<Section, BenchError> {
    if size != Size::Full {
        return Ok(not_run(TITLE, PAPER, "cluster", size));
    }
    let plan = plan();
    let measured = with_synthetic("mw-bench-cluster-runs", |exe, dir| measure(&plan, exe, dir))?;
    Ok(section(&measured, &plan))
}

/// The section of an experiment in the box, `mw-bench {command}`, at a `size` it does not run
/// at: it brings up namespaces as root, at `full` only.
pub(super) fn not_run(title: &str, paper: &str, command: &str, size: Size) -> Section {
    Section {
        title: title.into(),
        verdict: Verdict::Measured(format!(
            "not run at size `{}`: it brings up network namespaces as root and runs at `full` \
             (`mw-bench {command} -o DIR`).",
            size.name()
        )),
        paper: paper.into(),
        ours: String::new(),
        figures: Vec::new(),
        data: json!({ "not_run": size.name() }),
        seconds: 0.0,
    }
}

/// Where [`able`], `measure(exe, dir)` with the synthetic example built with the `mpi` feature
/// and a scratch folder named after `scratch` (see [`Scratch`]), removed when it returns.
///
/// # Errors
/// Not root, a tool missing, the build failed, or what `measure` returned.
pub(super) fn with_synthetic<T>(
    scratch: &str,
    measure: impl FnOnce(&Path, &Path) -> Result<T, String>,
) -> Result<T, BenchError> {
    able()?;
    let exe = synthetic_binary().map_err(BenchError)?;
    let scratch = Scratch::new(scratch).map_err(|e| BenchError(format!("error: {e}")))?;
    measure(&exe, scratch.path()).map_err(|e| BenchError(format!("error: {e}")))
}

/// What the experiment measured: both networks' sweeps and the box's link.
struct Measured {
    pairs: Vec<Pair>,
    link: BoxLink,
    /// The highest 1-minute load average while the sweeps ran.
    load_peak: Option<f64>,
}

/// Brings the box up, measures its round trip and runs the plan's sweeps on both networks; the
/// box is taken down when this returns, whatever it returns.
fn measure(plan: &Plan, exe: &Path, dir: &Path) -> Result<Measured, String> {
    let (b, link) = BoxLink::papers(plan.max_workers.div_ceil(2))?;
    let load = crate::machine::LoadWatch::start();
    let mut pairs = Vec::new();
    for case in &plan.cases {
        let counts = counts(case.paper_workers.min(plan.max_workers), plan.stride);
        let pair = sweeps(case, &counts, |n, v| {
            let mut best = (over_tcp(&b, exe, dir, case, n, v)?, emulated(case, n, v)?);
            for _ in 1..REPEATS {
                let (tcp, emulated) = (over_tcp(&b, exe, dir, case, n, v)?, emulated(case, n, v)?);
                best = (faster(best.0, tcp), faster(best.1, emulated));
            }
            Ok(best)
        })?;
        if let Some(pair) = pair {
            eprintln!(
                "mw-bench: cluster {}: worst held-out error {}",
                case.figure,
                percent(judge(&pair.tcp).worst_error)
            );
            pairs.push(pair);
        }
    }
    Ok(Measured {
        pairs,
        link,
        load_peak: load.finish(),
    })
}

fn section(measured: &Measured, plan: &Plan) -> Section {
    let Measured {
        pairs,
        link,
        load_peak,
    } = measured;
    let mut ours = format!(
        "{}. The synthetic example (release, `--features mpi`) runs under `mw-cluster run` \
         (Open MPI's TCP transport only, `mpi_yield_when_idle 1`) with the master's rank alone \
         on the first node and the workers split between the other two, so that every message \
         crosses the master's cable. The same {TASKS} equal sleeping tasks per iteration cut by \
         `static`, {ITERATIONS} iterations per run (a run's time is its median iteration), the \
         paper's `Tc` and `V` scaled by 1/10, as in *Model validation*; after each run on kernel \
         TCP the same run on threads behind the emulated link (`--link-latency \
         {LINK_LATENCY_MS} --link-bandwidth {LINK_MBIT}`), {REPEATS} times, and each point is \
         the fastest of its {REPEATS} runs on each network: here every rank shares the \
         machine's cores where the paper gave each worker a node, and how their wake-ups fall \
         only ever adds time. Worker counts: every `n` up to 8, then an even and the \
         next odd `n` every {} from 12 up to the most the paper ran (at most {}); each network's model is \
         calibrated on its own runs at even `n` (at {} times the volume) and scored at every odd \
         `n`. The thresholds: |error| ≤ {:.0} % at every held-out `n` from half the measured best \
         `n` on, the predicted best `n` within ±{:.0} % of the measured. The model is expression \
         (7)–(9), the paper's, with `k` and `λm` calibrated as in *Model validation* and `mo` \
         fitted to the calibration runs' own iteration times: by least squares of the \
         relative errors (the measure the model is judged by) over the runs at even `n` at \
         the case's volume, `mo` times the start-ups the model charges (`n + 1` where latency \
         binds) against what it leaves of `Tt` without them. That is the cost of a \
         message as the iteration sees it, with the master's own share and the waits of \
         processes that share the cores; *Model validation* takes `mo` from the runtime's own \
         fits of its trips instead, which the summary gives beside it with the worst error it \
         leads to.\n\n{}\n",
        link.opening(),
        plan.stride,
        plan.max_workers,
        VOLUMES
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        ERROR_BOUND * 100.0,
        BEST_N_BOUND * 100.0,
        summary(pairs).markdown()
    );
    if let Some(peak) = load_peak {
        ours.push_str(&format!(
            "\nThe 1-minute load average peaked at {peak:.1} on the 2 cores while these runs \
             went: every rank and thread of a run shares them, with whatever else ran on the \
             machine, and a run's time includes its waits for a core.\n"
        ));
    }
    ours.push_str(&link.no_delay_text());
    ours.push_str(&format!("\n{}\n", differences(pairs)));
    for pair in pairs {
        ours.push_str(&format!(
            "\nHeld out, Fig. {}:\n\n{}",
            pair.tcp.figure,
            held_out(pair).markdown()
        ));
    }
    Section {
        title: TITLE.into(),
        verdict: verdict(pairs, &link.text()),
        paper: PAPER.into(),
        ours,
        figures: pairs.iter().map(figure).collect(),
        data: {
            let mut data = link.json();
            data["pairs"] = json!(pairs);
            data["load_peak"] = json!(load_peak);
            data
        },
        seconds: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use mw_runtime::Protocol;
    use mw_runtime::model;

    use super::*;
    use crate::experiments::model::tests::params;

    /// The model's own times over `counts`, each scaled by `off(n)`; calibrated on even `n`.
    fn sweep_of(counts: &[usize], off: impl Fn(usize) -> f64) -> Sweep {
        let p = params();
        let observed: Vec<(usize, f64)> = counts
            .iter()
            .map(|&n| {
                let t = model::iteration_time(&p, n, Protocol::Async).unwrap();
                (n, t * off(n))
            })
            .collect();
        let even: Vec<usize> = counts.iter().copied().filter(|n| n % 2 == 0).collect();
        compare("7(a)", Protocol::Async, &p, &observed, &even).unwrap()
    }

    #[test]
    fn the_counts_pair_every_held_out_n_with_a_calibration_n() {
        assert_eq!(
            counts(40, 12),
            [2, 3, 4, 5, 6, 7, 8, 12, 13, 24, 25, 36, 37, 39, 40]
        );
        assert_eq!(
            counts(55, 12),
            [2, 3, 4, 5, 6, 7, 8, 12, 13, 24, 25, 36, 37, 48, 49, 54, 55]
        );
        assert_eq!(counts(5, 12), [2, 3, 4, 5]);
    }

    #[test]
    fn a_sweep_is_judged_at_its_worst_held_out_point() {
        // The Fig. 6 example: best Tt at 40, best Pi at 23; 20 % off at 41 only.
        let counts: Vec<usize> = (10..=60).collect();
        let s = sweep_of(&counts, |n| if n == 41 { 1.0 / 1.2 } else { 1.0 });
        let j = judge(&s);
        assert_eq!(j.worst_at, 41);
        assert!((j.worst_error - 0.2).abs() < 1e-9, "{j:?}");
        // 41 measured fastest: the predicted 40 is within 15 % of it.
        assert!(j.best_tt_close, "{j:?}");
        // Off by 50 % at a held-out n below half the best: not counted.
        let s = sweep_of(&counts, |n| if n == 11 { 2.0 } else { 1.0 });
        assert_eq!(judge(&s).worst_error, 0.0);
    }

    #[test]
    fn the_verdict_follows_the_tcp_sweeps() {
        let counts: Vec<usize> = (10..=60).collect();
        let exact = sweep_of(&counts, |_| 1.0);
        let off = sweep_of(&counts, |n| if n % 2 == 1 { 1.5 } else { 1.0 });
        let pair = |tcp: &Sweep| Pair {
            tcp: tcp.clone(),
            emulated: exact.clone(),
            from_trips: None,
        };
        assert!(matches!(
            verdict(&[pair(&exact)], "a link"),
            Verdict::Reproduced(_)
        ));
        match verdict(&[pair(&exact), pair(&off)], "a link") {
            Verdict::Partly(why) => {
                assert!(why.contains("on kernel TCP (a link)"), "{why}");
                assert!(why.contains("within 10 % in 1 of 2 cases"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(verdict(&[pair(&off)], "a link"), Verdict::Not(_)));
        assert!(matches!(verdict(&[], "a link"), Verdict::Not(_)));
    }

    #[test]
    fn the_section_shows_every_held_out_n_on_both_networks() {
        let counts = counts(20, 12);
        let tcp = sweep_of(&counts, |n| if n == 13 { 1.25 } else { 1.0 });
        let emulated = sweep_of(&counts, |_| 1.0);
        let measured = Measured {
            pairs: vec![Pair {
                tcp,
                emulated,
                from_trips: None,
            }],
            link: BoxLink {
                delay_ms: None,
                delay_with: None,
                no_delay: Some("Specified qdisc kind is unknown".into()),
                rtt: (0.08, 0.07, 0.1),
            },
            load_peak: Some(3.5),
        };
        let s = section(&measured, &plan());
        for n in [3, 5, 7, 13, 19] {
            assert!(s.ours.contains(&format!("\n| {n} ")), "{n}: {}", s.ours);
        }
        assert!(s.ours.contains(" -20.0 % |"), "{}", s.ours);
        assert!(s.ours.contains("no delay added"), "{}", s.ours);
        assert!(
            s.ours
                .contains("round trip of one byte between two nodes 0.080 ms")
        );
        assert!(s.ours.contains("Specified qdisc kind is unknown"));
        assert!(s.ours.contains("load average peaked at 3.5"), "{}", s.ours);
        assert!(
            s.ours.contains("7(a) 1.00× (1.00–1.25) (k 1.00×"),
            "{}",
            s.ours
        );
        assert_eq!(s.figures.len(), 1);
    }

    #[test]
    fn the_section_says_what_added_the_delay() {
        let counts = counts(8, 12);
        let measured = Measured {
            pairs: vec![Pair {
                tcp: sweep_of(&counts, |_| 1.0),
                emulated: sweep_of(&counts, |_| 1.0),
                from_trips: None,
            }],
            link: BoxLink {
                delay_ms: Some(0.1),
                delay_with: Some("relay".into()),
                no_delay: None,
                rtt: (0.23, 0.21, 0.26),
            },
            load_peak: None,
        };
        let s = section(&measured, &plan());
        assert!(
            s.ours.contains("up 3 --rate 100 --delay 0.1`"),
            "{}",
            s.ours
        );
        assert!(s.ours.contains("joined by the box's relay"), "{}", s.ours);
        assert!(
            s.ours
                .contains("0.1 ms added to every frame by the box's relay"),
            "{}",
            s.ours
        );
        assert!(!s.ours.contains("no delay added"), "{}", s.ours);
        assert_eq!(s.data["delay_with"], "relay");
        let netem = link_text(Some(0.1), Some("netem"), (0.2, 0.2, 0.2));
        assert!(netem.contains("added by `netem`"), "{netem}");
    }

    /// The box the experiment brings up has the paper's 0.1 ms each way, by `netem` or the
    /// relay: a round trip of one byte between two nodes takes 0.2 ms more than on the box
    /// without delay (a few hundredths of a ms).
    #[test]
    #[ignore = "needs root, network namespaces and tap devices; builds the relay"]
    fn the_box_adds_the_papers_latency_each_way() {
        let (b, no_delay) = ClusterBox::up(LINK_MBIT, LINK_LATENCY_MS, 1).unwrap();
        assert_eq!(no_delay, None);
        assert_eq!(b.delay_ms, Some(LINK_LATENCY_MS));
        assert!(
            matches!(b.delay_with.as_deref(), Some("netem" | "relay")),
            "{:?}",
            b.delay_with
        );
        let (median, p10, p90) = round_trip().unwrap();
        eprintln!(
            "round trip {median:.3} ms (10–90 %: {p10:.3}–{p90:.3}), delay by {:?}",
            b.delay_with
        );
        assert!((0.19..0.30).contains(&median), "round trip {median} ms");
    }

    #[test]
    fn below_full_size_it_says_it_did_not_run() {
        let s = run(Size::Tiny).unwrap();
        assert!(
            matches!(&s.verdict, Verdict::Measured(why) if why.starts_with("not run at size `tiny`")),
            "{:?}",
            s.verdict
        );
    }
}
