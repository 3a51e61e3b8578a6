//! Growing past the launched ranks under MPI: `--max-workers 6` with one launched worker rank,
//! and `nworkers` asked to go up and down, so worker processes are spawned, released and
//! spawned again. Run it under MPI, e.g.
//!
//!     cargo test -p mw-runtime --features mpi --test mpi_elastic --no-run
//!     mpirun -np 2 --oversubscribe target/debug/deps/mpi_elastic-<hash> [sync]
//!
//! (Open MPI 5: `mpirun -np 2 --oversubscribe -x OMPI_MCA_rmaps_base_oversubscribe=1`; MPICH:
//! `mpiexec -n 2`; Intel MPI: `mpiexec -genv I_MPI_SPAWN on -genv I_MPI_SHM_SPIN_RATIO 1 -n 2`.)
//! With room to oversubscribe (Open MPI's variable, or hydra, which spawns onto its hosts as
//! asked) the run must reach 6 workers; without it (and no free slot in the allocation), and
//! under Intel MPI without both variables, which the runtime then spawns nothing under (see the
//! README), the pool stays the launched worker, and the run must finish on it.
//! Either way every result is recovered exactly once (the checker's `final_work`). Spawned
//! workers run this same program with the same arguments: their run returns no metrics.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Checker, Scenario, Sleeper, config};
use mw_runtime::prelude::*;
use mw_runtime::{PolicyName, RunConfig};

fn main() {
    if !common::mpi_launched() {
        common::report_ignored(
            "mpi_elastic",
            &format!(
                "needs an MPI launcher: `mpirun -np 2 --oversubscribe {}` (see the file's doc)",
                std::env::args().next().unwrap_or_default()
            ),
        );
        return;
    }
    let protocol = if std::env::args().any(|a| a == "sync") {
        Protocol::Sync
    } else {
        Protocol::Async
    };
    let launched = common::mpi_launched_size().map_or(1, |size| size - 1);
    let hydra = std::env::var_os("MPI_LOCALNRANKS").is_some();
    // Intel MPI's hydra gives its ranks `I_MPI_` variables of its own; it spawns only with two.
    let intel = std::env::vars_os().any(|(key, _)| key.to_string_lossy().starts_with("I_MPI_"));
    let var_is = |key: &str, value: &str| std::env::var(key).is_ok_and(|v| v == value);
    let intel_spawns = var_is("I_MPI_SPAWN", "on") && var_is("I_MPI_SHM_SPIN_RATIO", "1");
    let oversubscribed = if intel {
        intel_spawns
    } else {
        hydra || var_is("OMPI_MCA_rmaps_base_oversubscribe", "1")
    };
    // Without room for more processes, the pool is the launched ranks.
    let expected = if oversubscribed { 6 } else { launched };
    // Up to 6 (5 spawned), down to 2 (4 released), up to 4 (2 spawned anew). Few spawns: Open
    // MPI 4.1 with PMIx 4 hangs in about one spawn in a hundred (see the transport's README).
    let scenario = Scenario {
        iterations: (0..4).map(|_| vec![3_000; 48]).collect(),
        nworkers: [6, 2, 4].map(|n| n.min(expected)).to_vec(),
        panic_at: None,
    };
    let config = RunConfig {
        backend: BackendChoice::Mpi,
        workers: Some(1),
        max_workers: Some(6),
        ..config(6, PolicyName::Daf, protocol, 0.5)
    };
    let outcome =
        mw_runtime::run_config(&config, || Checker::new(&scenario), || Sleeper::new(None));
    let metrics = match outcome {
        Ok(report) => match report.into_metrics() {
            Some(metrics) => metrics,
            // A worker, launched or spawned.
            None => return,
        },
        Err(e) => {
            println!("elastic/{protocol}: the run failed: {e}");
            println!("0 passed, 1 failed");
            std::process::exit(1);
        }
    };
    let most = metrics
        .iterations
        .iter()
        .map(|i| i.workers)
        .max()
        .unwrap_or(0);
    let mut wrong = Vec::new();
    if metrics.pool != expected {
        wrong.push(format!("the pool is {}, not {expected}", metrics.pool));
    }
    if most != expected {
        wrong.push(format!("at most {most} workers took part, not {expected}"));
    }
    let objective = if oversubscribed {
        // 5 of the 6 workers are spawned, released when parked.
        metrics.objective == "index" && metrics.objective_reason.contains("spawned")
    } else {
        metrics.objective == "time"
    };
    if !objective {
        wrong.push(format!(
            "objective {} ({})",
            metrics.objective, metrics.objective_reason
        ));
    }
    let workers: Vec<usize> = metrics.iterations.iter().map(|i| i.workers).collect();
    if wrong.is_empty() {
        println!("elastic/{protocol}: ok, workers by iteration {workers:?}");
        println!("1 passed, 0 failed");
    } else {
        println!("elastic/{protocol}: {}", wrong.join("; "));
        println!("0 passed, 1 failed");
        std::process::exit(1);
    }
}
