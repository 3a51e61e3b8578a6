//! The number of workers of [`super::workers`] (Caymes-Scutari et al., POETRIES, §5, Tables
//! 1–2, Figs. 2–5) on a real network stack: the same synthetic program in N-Body's shape, built
//! with the `mpi` feature and run by `cluster/mw-cluster run` across the cluster in a box of
//! [`super::cluster`] (kernel TCP between network namespaces, each cable shaped to the paper's
//! 100 Mbit/s, the paper's 0.1 ms added), beside the same runs behind the in-process emulated
//! link, alternating between the two so that both see the same machine.
//!
//! Every fixed count runs on as many worker ranks; the tuned run starts at one worker with 19
//! ranks of workers, the pool the paper's MATE drew from, and the ranks it leaves out sleep.
//! The verdict is judged on the runs over kernel TCP, with the same targets as behind the link:
//! the tuned run within [`RATIO_TARGET`] of the best fixed count, and every change of the load
//! answered within [`LAG_TARGET`] iterations.
//!
//! Needs what [`super::cluster`] needs (root, `ip`, `tc`, `unshare`, `mpirun`); the box is taken
//! down by its names when the experiment ends, whether it succeeded or not, or at a SIGINT or
//! SIGTERM that ends `mw-bench` first.

use std::path::Path;
use std::time::Duration;

use mw_runtime::RunMetrics;
use serde_json::json;

use super::cluster::{self, BoxLink, ClusterBox};
use super::workers::{
    self, LAG_TARGET, Plan, RATIO_TARGET, RESULT_BYTES, Row, SHARED_BYTES, STDDEV, Setting,
    comparison, task_ms, time_figure, trajectory_figure, tuned_text, verdict_on,
};
use super::{LINK_LATENCY_MS, LINK_MBIT};
use crate::doc::Section;
use crate::{BenchError, Size};

const TITLE: &str = "Number of workers on kernel TCP (a cluster in a box)";

const PAPER: &str = "\
Caymes-Scutari et al. (POETRIES), §5, Tables 1–2 and Figs. 2–5: N-Body on 1, 2, 4, 8, 16 and 19
workers and under MATE from one worker, under a variable and an increasing external load, on a
cluster of one worker per node on 100 Mbit/s Ethernet. The section *Number of workers* runs it
behind this runtime's emulated link; here the same runs cross the kernel's TCP stack.";

/// The longest a run may take: one worker under `increasing` load takes about 75 s.
const RUN_LIMIT: Duration = Duration::from_secs(400);

/// Runs the experiment: at size `full` only, and only where [`cluster::able`].
///
/// # Errors
/// Not root, a tool missing, the box or a run failed.
pub fn run(size: Size) -> Result<Section, BenchError> {
    if size != Size::Full {
        return Ok(cluster::not_run(TITLE, PAPER, "cluster-workers", size));
    }
    let plan = workers::plan(Size::Full);
    let measured =
        cluster::with_synthetic("mw-bench-workers-tcp", |exe, dir| measure(&plan, exe, dir))?;
    Ok(section(&measured, &plan))
}

/// What the experiment measured.
struct Measured {
    rows: Vec<Row>,
    link: BoxLink,
    load_peak: Option<f64>,
}

/// Brings the box up and runs every configuration of `plan` on kernel TCP and behind the
/// emulated link, one after the other, `plan.repeats` times over.
fn measure(plan: &Plan, exe: &Path, dir: &Path) -> Result<Measured, String> {
    let (b, link) = BoxLink::papers(plan.pool.div_ceil(2))?;
    let load_watch = crate::machine::LoadWatch::start();
    let configs: Vec<(&str, Option<usize>)> = plan
        .loads
        .iter()
        .flat_map(|&load| {
            let fixed = plan.counts.iter().map(move |&n| (load, Some(n)));
            fixed.chain([(load, None)])
        })
        .collect();
    let mut runs: Vec<(Vec<RunMetrics>, Vec<RunMetrics>)> = vec![Default::default(); configs.len()];
    for _ in 0..plan.repeats.max(1) {
        for (&(load, workers), (tcp, emulated)) in configs.iter().zip(&mut runs) {
            tcp.push(over_tcp(&b, exe, dir, plan, load, workers)?);
            emulated.push(workers::emulated(plan, load, workers).map_err(|BenchError(e)| e)?);
            eprintln!(
                "mw-bench: workers on kernel TCP, `{load}`, {}: {:.2} s (link {:.2} s)",
                workers.map_or("tuned".to_owned(), |n| format!("{n} workers")),
                tcp.last().map_or(f64::NAN, |m| m.total_ms / 1e3),
                emulated.last().map_or(f64::NAN, |m| m.total_ms / 1e3),
            );
        }
    }
    let mut rows = Vec::new();
    for (&(load, workers), (tcp, emulated)) in configs.iter().zip(&runs) {
        rows.push(Row::of_runs((load, workers, Setting::Tcp), tcp));
        rows.push(Row::of_runs((load, workers, Setting::Link), emulated));
    }
    Ok(Measured {
        rows,
        link,
        load_peak: load_watch.finish(),
    })
}

/// One run of the synthetic program across the box under `load`: on `workers` worker ranks,
/// or tuned from one over the pool's ranks when `None`.
fn over_tcp(
    b: &ClusterBox,
    exe: &Path,
    dir: &Path,
    plan: &Plan,
    load: &str,
    workers: Option<usize>,
) -> Result<RunMetrics, String> {
    let (first, ranks, tuning) = match workers {
        Some(n) => (n, n, "off"),
        None => (1, plan.pool, "on"),
    };
    let mean_ms = task_ms(plan).map_err(|BenchError(e)| e)?;
    let args: Vec<String> = [
        "--tasks",
        &plan.tasks.to_string(),
        "--iterations",
        &plan.iterations.to_string(),
        "--mean-ms",
        &mean_ms.to_string(),
        "--stddev",
        &STDDEV.to_string(),
        "--shared-bytes",
        &SHARED_BYTES.to_string(),
        "--result-bytes",
        &RESULT_BYTES.to_string(),
        "--load",
        load,
        "--workers",
        &first.to_string(),
        "--max-workers",
        &ranks.to_string(),
        "--tuning",
        tuning,
        "--objective",
        "time",
        "--backend",
        "mpi",
        "--quiet",
    ]
    .map(str::to_owned)
    .to_vec();
    let metrics = dir.join("run.json");
    let _ = std::fs::remove_file(&metrics);
    b.mpirun(exe, ranks, &args, &metrics, RUN_LIMIT)
}

fn section(measured: &Measured, plan: &Plan) -> Section {
    let Measured {
        rows,
        link,
        load_peak,
    } = measured;
    let mut ours = format!(
        "{}. The synthetic example \
         (release, `--features mpi`) runs under `mw-cluster run` (Open MPI's TCP transport only, \
         `mpi_yield_when_idle 1`), the master's rank alone on the first node and the workers \
         split between the other two, so that every message crosses the master's cable. The \
         runs are those of *Number of workers*: {} iterations of {} sleeping tasks of {:.2} ms \
         ± {:.0} % (one worker under `--load variable` takes the paper's Table 1 time), {} \
         bytes to every worker each iteration and {} back per task, `daf`; the paper's fixed counts and {} between them, a fixed count `n` \
         on `n` worker ranks with `--tuning off`, the tuned run on {} worker ranks with \
         `--workers 1 --max-workers {} --tuning on --objective time`. After each run on kernel \
         TCP the same run on threads behind the emulated link (`--link-latency \
         {LINK_LATENCY_MS} --link-bandwidth {LINK_MBIT}`), {} times over; total run time in \
         seconds, the median of the runs with their range, and the tuned run over the best \
         fixed count run by run. Every rank is a process of this machine's 2 cores, where the \
         paper gave each worker a node.\n\n",
        link.opening(),
        plan.iterations,
        plan.tasks,
        task_ms(plan).unwrap_or(f64::NAN),
        STDDEV * 100.0,
        SHARED_BYTES,
        RESULT_BYTES,
        plan.counts
            .iter()
            .filter(|n| !workers::PAPER_COUNTS.contains(n))
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        plan.pool,
        plan.pool,
        plan.repeats,
    );
    let papers = [workers::PAPER_VARIABLE, workers::PAPER_INCREASING];
    let mut figures = Vec::new();
    for (i, load) in plan.loads.iter().enumerate() {
        ours.push_str(&format!(
            "**`--load {load}`**:\n\n{}\n",
            comparison(load, &papers[i.min(1)], rows, &plan.counts).markdown()
        ));
        ours.push_str(&tuned_text(rows, load, plan.pool).unwrap_or_default());
        figures.push(time_figure(
            rows,
            load,
            &plan.counts,
            &[Setting::Tcp, Setting::Link],
            "workers-tcp-time",
        ));
    }
    figures.push(trajectory_figure(rows, "workers-tcp-trajectory.svg"));
    let behind_link = verdict_on(rows, &plan.loads, plan.pool, Setting::Link);
    ours.push_str(&format!(
        "Judged the same way, the runs behind the emulated link in this experiment: {}\n",
        behind_link.line()
    ));
    if let Some(peak) = load_peak {
        ours.push_str(&format!(
            "\nThe 1-minute load average peaked at {peak:.1} on the 2 cores while these runs \
             went: every rank and thread of a run shares them, and a run's time includes its \
             waits for a core.\n"
        ));
    }
    ours.push_str(&link.no_delay_text());
    Section {
        title: TITLE.into(),
        verdict: verdict_on(rows, &plan.loads, plan.pool, Setting::Tcp),
        paper: PAPER.into(),
        ours,
        figures,
        data: {
            let mut data = link.json();
            data["rows"] = json!(rows);
            data["load_peak"] = json!(load_peak);
            data["targets"] = json!({ "ratio": RATIO_TARGET, "lag_iterations": LAG_TARGET });
            data
        },
        seconds: 0.0,
    }
}
