//! The model validation of [`super::model`] under MPI on this machine: the synthetic example
//! built with the `mpi` feature, run by `mpirun --oversubscribe` with one rank per worker and
//! one for the master, over the real transport (Open MPI's shared memory between the ranks of
//! one node) instead of the emulated link. The same held-out scheme: calibrated on the runs at
//! even `n`, each at the same volumes as behind the emulated link, scored on those at odd `n`.
//! Here `k` is what a byte costs between two processes of one machine: encoding it, Open MPI's
//! copies through shared memory and decoding it.
//!
//! Only a few ranks fit: every rank is a process, and a waiting rank spins and yields before it
//! sleeps, so the ranks' waits compete with the master for the 2 cores; `n` stops at
//! [`MAX_WORKERS`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use mw_runtime::PolicyName;

use super::calibration::Observed;
use super::children::{self, run_with_limit};
use super::model::{CASES, Case, PAPER_SCALE, Sweep, VOLUMES, sweep};
use crate::BenchError;
use crate::teardown::Scratch;

/// The most workers run under MPI (ranks: one more).
pub const MAX_WORKERS: usize = 7;
/// Tasks per iteration and iterations per run, as in the emulated sweep.
const TASKS: usize = 720;
const ITERATIONS: usize = 3;

/// The cases run under MPI: one asynchronous and one synchronous, of the paper's smaller volume.
pub fn cases() -> Vec<Case> {
    CASES
        .iter()
        .copied()
        .filter(|c| c.figure == "7(a)" || c.figure == "10(a)")
        .collect()
}

/// The synthetic example built with the `mpi` feature, in release.
pub(super) fn synthetic_binary() -> Result<PathBuf, String> {
    let mut build = children::cargo();
    build.args(["build", "--release", "-p", "synthetic", "--features", "mpi"]);
    build.args(["--message-format=json", "--manifest-path"]);
    build.arg(children::workspace_manifest());
    let out = run_with_limit(build, Duration::from_secs(1200))?;
    let json = String::from_utf8_lossy(&out.stdout);
    children::executable(&json, "synthetic", "bin").ok_or_else(|| {
        format!(
            "the synthetic example did not build with `--features mpi`: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

/// One run of `case` on `n` worker ranks at `volume` times its volume; its metrics are read
/// back from `dir`.
fn observe(exe: &Path, dir: &Path, case: &Case, n: usize, volume: f64) -> Result<Observed, String> {
    let tc = case.tc_ms;
    let bytes = case.volume_bytes as f64 * PAPER_SCALE * volume;
    let per_task = (bytes as usize / TASKS / 2).to_string();
    let name = format!("run-{}-{n}.json", case.figure.replace(['(', ')'], ""));
    let config = format!(
        "[run]\npolicy = \"{}\"\nprotocol = \"{}\"\n\n[tuning]\ntune = \"off\"\n",
        PolicyName::Static,
        case.protocol
    );
    let args = [
        "--tasks".to_string(),
        TASKS.to_string(),
        "--iterations".into(),
        ITERATIONS.to_string(),
        "--mean-ms".into(),
        (tc / TASKS as f64).to_string(),
        "--stddev".into(),
        "0".into(),
        "--task-bytes".into(),
        per_task.clone(),
        "--result-bytes".into(),
        per_task,
        "--backend".into(),
        "mpi".into(),
        "--quiet".into(),
    ];
    let m = children::mpirun_metrics(
        exe,
        dir,
        n + 1,
        &args,
        &config,
        &name,
        Duration::from_secs(120),
    )?;
    // Equal tasks: the drawn task time is the mean's.
    Ok(Observed::from_metrics(&m, tc))
}

/// The sweeps of [`cases`] under MPI, n = 2..[`MAX_WORKERS`]; an error says why they could not
/// run (no `mpirun`, the build failed, a run failed).
pub fn sweeps() -> Result<Vec<Sweep>, String> {
    if !children::mpirun_available() {
        return Err("no `mpirun` on the PATH".into());
    }
    let exe = synthetic_binary()?;
    let scratch = Scratch::new("mw-bench-model-mpi")?;
    let dir = scratch.path();
    let mut sweeps = Vec::new();
    for case in cases() {
        let found = sweep(&case, 2..=MAX_WORKERS, &VOLUMES, |n, volume| {
            observe(&exe, dir, &case, n, volume).map_err(BenchError)
        })
        .map_err(|BenchError(e)| e)?;
        sweeps.extend(found);
    }
    Ok(sweeps)
}
