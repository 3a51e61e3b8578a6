//! Starting a run on every rank (the master on rank 0, a worker elsewhere) and ending MPI after
//! it.

use std::sync::Mutex;

use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Root;

use super::master_link::MpiMaster;
use super::spawn::{self, Spawner};
use super::start_watch::{self, StartWatch};
use super::worker_link::MpiWorker;
use super::{layout, lifeline};
use crate::engine::master::{guarded, run_master, stop_workers};
use crate::error::{Error, ErrorKind, Result};
use crate::protocol::Protocol;

/// MPI as the runtime started it to agree on the checks before a run ([`agree_at_start`]),
/// for the run to take over and end.
static STARTED: Mutex<Option<mpi::environment::Universe>> = Mutex::new(None);

fn started() -> Option<mpi::environment::Universe> {
    STARTED.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// Ends MPI if the runtime started it for [`agree_at_start`] and no MPI run took it over (the
/// program ran on threads in a launched job): every rank that started MPI must end it.
pub(crate) fn end_started() {
    drop(started());
}

/// Settles a check made on every rank before a run (configuration, output files) by the
/// master's outcome, so that no rank waits for a master that already left: MPI is started, the
/// master broadcasts whether its check passed, and on a failure every worker rank leaves at
/// once, quietly (exit status 1; the master reports the error), while the master returns it.
/// Every rank of the job makes the same checks in the same order, as they run the same program
/// with the same arguments.
pub(crate) fn agree_at_start(outcome: crate::error::Result<()>) -> crate::error::Result<()> {
    let mut kept = STARTED.lock().unwrap_or_else(|e| e.into_inner());
    // Until every rank has started MPI and heard the master's outcome.
    let _watch = StartWatch::arm(start_watch::PATIENCE);
    if kept.is_none() && !mpi::environment::is_initialized() {
        match mpi::initialize() {
            Some(universe) => *kept = Some(universe),
            None => return outcome,
        }
    }
    let world = SimpleCommunicator::world();
    let mut failed = [u8::from(outcome.is_err())];
    world.process_at_rank(0).broadcast_into(&mut failed[..]);
    if world.rank() != 0 && failed[0] != 0 {
        // Nothing to finalize with: the master leaves without it too.
        std::mem::forget(kept.take());
        std::process::exit(1);
    }
    outcome
}

/// Runs this process's part: the master on rank 0, a worker elsewhere. MPI is initialized here
/// unless the application already did (then it is also the application's to finalize).
pub(crate) fn run<M, W>(
    config: &crate::config::RunConfig,
    master: impl FnOnce() -> M,
    worker: impl Fn() -> W,
    app: &str,
) -> Result<Option<crate::metrics::RunMetrics>>
where
    M: crate::app::Master,
    W: crate::app::Worker<Task = M::Task, Result = M::Result, Shared = M::Shared>,
{
    if mpi::environment::is_finalized() {
        return Err(Error::backend(
            "MPI was already finalized by an earlier run in this process; to run several times, \
             call `mpi::initialize()` yourself first and keep the universe alive",
        ));
    }
    let universe = match started() {
        Some(universe) => Some(universe),
        None if mpi::environment::is_initialized() => None,
        None => {
            Some(mpi::initialize().ok_or_else(|| Error::backend("MPI could not be initialized"))?)
        }
    };
    // A communicator of its own for every run (a collective call, so every rank makes the same
    // one): a worker that finished the last run and already says `Ready` for the next cannot have
    // that message taken for a late answer of the last run.
    if let Some(joining) = spawn::joining() {
        serve_spawned(config, worker, universe, &joining);
        return Ok(None);
    }
    let world = SimpleCommunicator::world().duplicate();
    if world.rank() == 0 {
        super::library::warn_at_start();
    }
    let size = world.size() as usize;
    if size < 2 {
        return Err(crate::launch::too_few_processes(
            size,
            crate::launch::detect(),
        ));
    }
    let rank = world.rank() as usize;
    // With `--max-workers` above the launched worker ranks, the rest are spawned as needed.
    let launched = size - 1;
    let asked = config.max_workers.unwrap_or(launched).max(launched);
    // Spawned workers need free slots in the allocation: a spawn Open MPI refuses leaves it
    // unable to finalize, so the pool takes only what the allocation can hold.
    let srun = crate::launch::detect()
        .is_some_and(|launch| launch.launcher == crate::launch::Launcher::Srun);
    let free = if asked <= launched {
        None
    } else if srun {
        // Slurm's PMIx server does not serve spawns: the tasks srun started are the pool.
        Some(0)
    } else {
        spawn::free_slots(size)
    };
    let pool = free.map_or(asked, |free| asked.min(launched + free));
    if rank == 0 && pool < asked && srun {
        eprintln!(
            "warning: --max-workers {asked} asks for workers beyond the {launched} tasks srun \
             started, and under srun no process can be spawned (Slurm's PMIx does not serve \
             MPI_Comm_spawn); the run goes on with a pool of {pool}: launch with `mpirun -np \
             {size}` inside the allocation to grow into its free slots"
        );
    } else if rank == 0 && pool < asked {
        eprintln!(
            "warning: --max-workers {asked} asks for {} worker(s) beyond the {launched} launched \
             rank(s), but the allocation has room for {} more ({}); the run goes on with a pool \
             of {pool}",
            asked - launched,
            pool - launched,
            spawn::no_room(size),
        );
    }
    let layout = layout::gather(&world, pool - launched);
    let lifelines = lifeline::connect(&world, pool, pool - launched);
    if rank == 0 {
        if let Some(max) = config.max_workers.filter(|&m| m < launched) {
            eprintln!(
                "warning: --max-workers {max} is below the {launched} launched worker ranks, \
                 which all take part in the pool"
            );
        }
        let contact = lifelines
            .as_ref()
            .map(|l| (l.contact().encode(), l.contact().secret()));
        let spawner = Spawner::new(launched, pool, contact);
        let mut link = MpiMaster::new(world, config.protocol, layout, lifelines, spawner);
        // Unless told otherwise, a pool that can grow and whose `nworkers` is tuned starts with
        // the ranks already paid for, and the tuner spawns more when it wants them.
        let elastic = crate::config::RunConfig {
            workers: config.workers.or(Some(launched)),
            ..config.clone()
        };
        let grows = pool > launched && config.tuning.mode.tunes_workers();
        let config = if grows { &elastic } else { config };
        let outcome = guarded(|| run_master(&mut master(), &mut link, config, app));
        let leave_unfinalized = link.lost_any();
        let panicked = outcome
            .as_ref()
            .is_err_and(|e| matches!(e.kind(), ErrorKind::MasterPanicked { .. }));
        if panicked {
            // The engine unwound without stopping the workers: stop them here, or they would
            // wait for the master forever. Without waiting for each to take its `Stop`: under
            // sync, a worker still busy with a chunk waits for the master to take its answer.
            link.protocol = Protocol::Async;
            if let Err(stop) = stop_workers(&mut link) {
                eprintln!("warning: after the master's panic, stopping the workers: {stop}");
            }
        }
        if let Some(summary) = link.spawner.summary().filter(|_| !config.quiet) {
            eprintln!("{summary}");
        }
        drop(link);
        finalize(universe, leave_unfinalized);
        outcome.map(Some)
    } else {
        let setup = crate::app::WorkerSetup {
            index: rank - 1,
            pool: size - 1,
            backend: "mpi",
        };
        let mut link = MpiWorker::new(world, config.protocol);
        crate::engine::worker::serve(&worker, &setup, &config.load, &mut link);
        let leave_unfinalized = link.leave_unfinalized;
        drop(link);
        finalize(universe, leave_unfinalized);
        Ok(None)
    }
}

/// A spawned worker's part: it joins the master through its parent intercommunicator, serves,
/// and is released (its communicators freed, the parent disconnected) before it ends.
fn serve_spawned<W: crate::app::Worker>(
    config: &crate::config::RunConfig,
    worker: impl Fn() -> W,
    universe: Option<mpi::environment::Universe>,
    joining: &spawn::Joining,
) {
    let Some((parent, merged, secret)) = spawn::join() else {
        eprintln!(
            "warning: this process was started as a spawned worker (`{}` is set) but has no \
             parent to join; it stops",
            spawn::ENV
        );
        finalize(universe, false);
        return;
    };
    lifeline::join_spawned(&joining.contact, secret, joining.index as u32 + 1);
    let setup = crate::app::WorkerSetup {
        index: joining.index,
        pool: joining.pool,
        backend: "mpi",
    };
    let mut link = MpiWorker::new(merged, config.protocol);
    crate::engine::worker::serve(&worker, &setup, &config.load, &mut link);
    let leave_unfinalized = link.leave_unfinalized;
    drop(link);
    if leave_unfinalized {
        std::mem::forget(parent);
    } else {
        // `MPI_Comm_disconnect`, with the master doing the same. Disconnected, the parent is
        // `MPI_COMM_NULL`, which rsmpi's finalization then leaves alone.
        drop(parent);
    }
    finalize(universe, leave_unfinalized);
}

/// Ends MPI when this run started it. After a worker was lost, `MPI_Finalize` is left out on
/// every rank: its closing synchronization over the whole job sometimes waits forever for the
/// dead rank (in about one run in six with Open MPI 4.1 here), while processes that leave
/// without it end the job cleanly under `orte_enable_recovery` (mpirun exits 0).
pub(super) fn finalize(universe: Option<mpi::environment::Universe>, leave_unfinalized: bool) {
    if leave_unfinalized {
        std::mem::forget(universe);
    } else {
        drop(universe);
    }
}
