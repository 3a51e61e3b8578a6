//! Starting a run on every rank (the master on rank 0, a worker elsewhere) and ending MPI after
//! it.

use mpi::topology::{Communicator, SimpleCommunicator};

use super::master_link::MpiMaster;
use super::worker_link::MpiWorker;
use super::{layout, lifeline};
use crate::config::Protocol;
use crate::engine::master::{guarded, run_master, stop_workers};
use crate::error::{Error, ErrorKind, Result};

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
    let universe = if mpi::environment::is_initialized() {
        None
    } else {
        Some(mpi::initialize().ok_or_else(|| Error::backend("MPI could not be initialized"))?)
    };
    // A communicator of its own for every run (a collective call, so every rank makes the same
    // one): a worker that finished the last run and already says `Ready` for the next cannot have
    // that message taken for a late answer of the last run.
    let world = SimpleCommunicator::world().duplicate();
    let size = world.size() as usize;
    if size < 2 {
        return Err(crate::launch::too_few_processes(
            size,
            crate::launch::detect(),
        ));
    }
    let rank = world.rank() as usize;
    let layout = layout::gather(&world);
    let lifelines = lifeline::connect(&world);
    if rank == 0 {
        if let Some(max) = config.max_workers.filter(|&m| m != size - 1) {
            eprintln!(
                "warning: --max-workers {max} is ignored under MPI: the pool is the {} launched \
                 worker ranks",
                size - 1
            );
        }
        let mut link = MpiMaster::new(world, config.protocol, layout, lifelines);
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
