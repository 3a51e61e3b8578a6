//! Connecting every rank to a run (the master's end on rank 0, a worker's elsewhere) and ending
//! MPI after it; the run itself is started where every backend's is (`run/`).

use std::sync::Mutex;

use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Root;

use super::master_link::MpiMaster;
use super::spawn::{self, Spawner};
use super::start_watch::{self, StartWatch};
use super::worker_link::MpiWorker;
use super::{layout, lifeline};
use crate::app::WorkerSetup;
use crate::codec::Message;
use crate::config::RunConfig;
use crate::error::{Error, Result};
use crate::protocol::Protocol;
use crate::transport::{MasterLink, WorkerLink};

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
        match initialize() {
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

/// Starts MPI, keeping the process's handlers of SIGINT and SIGTERM: a library MPI loads may put
/// in its own (PSM's `libinfinipath`, which Intel MPI's fabric library loads, ends the process
/// with status 1 on SIGINT), and the run's must be the ones a signal reaches, so that the master
/// stops the run and writes what ran.
#[allow(unsafe_code)] // sigaction: read two dispositions, then put the same ones back.
fn initialize() -> Option<mpi::environment::Universe> {
    const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];
    // SAFETY: an all-zero `sigaction` is a valid value for the kernel to fill in.
    let mut before: [libc::sigaction; 2] = unsafe { std::mem::zeroed() };
    for (signal, action) in SIGNALS.iter().zip(&mut before) {
        // SAFETY: reads the disposition of a valid signal into `action`.
        unsafe { libc::sigaction(*signal, std::ptr::null(), action) };
    }
    let universe = mpi::initialize();
    for (signal, action) in SIGNALS.iter().zip(&before) {
        // SAFETY: as above.
        let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::sigaction(*signal, std::ptr::null(), &mut now) };
        if now.sa_sigaction != action.sa_sigaction {
            // SAFETY: puts back a disposition the kernel gave for the same signal.
            unsafe { libc::sigaction(*signal, action, std::ptr::null_mut()) };
        }
    }
    universe
}

/// This process's end of an MPI run: the master's on rank 0, a worker's elsewhere. One per
/// process, made once: the master's, larger, is not worth a box.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Joined<T, S, R> {
    Master(MasterEnd<T, S, R>),
    Worker(WorkerEnd<T, R>),
}

/// The master's end: its link, the configuration it runs with, and MPI to end after it.
pub(crate) struct MasterEnd<T, S, R> {
    link: MpiMaster<T, S, R>,
    /// The run's configuration as the pool's start makes it (see [`connect`]).
    config: RunConfig,
    universe: Option<mpi::environment::Universe>,
}

impl<T: Message, S: Message, R: Message> MasterEnd<T, S, R> {
    pub(crate) fn link(&mut self) -> &mut impl MasterLink<T, S, R> {
        &mut self.link
    }

    pub(crate) fn config(&self) -> &RunConfig {
        &self.config
    }

    /// After the master panicked, the workers are stopped without waiting for each to take its
    /// `Stop`: under sync, a worker still busy with a chunk waits for the master to take its
    /// answer.
    pub(crate) fn unsynchronized(&mut self) -> &mut impl MasterLink<T, S, R> {
        self.link.protocol = Protocol::Async;
        &mut self.link
    }

    /// Ends the link and MPI (left unfinalized after a loss, with the workers' lifelines held
    /// open until this process exits), saying what the spawner did.
    pub(crate) fn close(mut self) {
        let leave_unfinalized = self.link.lost_any();
        if let Some(summary) = self.link.spawner.summary().filter(|_| !self.config.quiet) {
            eprintln!("{summary}");
        }
        if leave_unfinalized {
            // The workers leave once this process has ended.
            self.link.hold_lifelines_until_exit();
        }
        drop(self.link);
        finalize(self.universe, leave_unfinalized);
    }
}

/// A worker's end: its link, who it is, and MPI to end after it.
pub(crate) struct WorkerEnd<T, R> {
    link: MpiWorker<T, R>,
    setup: WorkerSetup,
    /// A spawned worker's parent intercommunicator, disconnected when it ends.
    parent: Option<mpi::topology::InterCommunicator>,
    universe: Option<mpi::environment::Universe>,
}

impl<T: Message, R: Message> WorkerEnd<T, R> {
    pub(crate) fn link<S: Message>(&mut self) -> &mut impl WorkerLink<T, S, R> {
        &mut self.link
    }

    pub(crate) fn setup(&self) -> &WorkerSetup {
        &self.setup
    }

    /// Ends the link and MPI (left unfinalized when the master said so or is gone: then only
    /// once the master's process has ended).
    pub(crate) fn close(self) {
        let leave_unfinalized = self.link.leave();
        if let Some(parent) = self.parent {
            if leave_unfinalized {
                std::mem::forget(parent);
            } else {
                // `MPI_Comm_disconnect`, with the master doing the same. Disconnected, the
                // parent is `MPI_COMM_NULL`, which rsmpi's finalization then leaves alone.
                drop(parent);
            }
        }
        finalize(self.universe, leave_unfinalized);
    }
}

/// Connects this process to the run: the master's end on rank 0, a worker's elsewhere (a
/// spawned worker joins through its parent); `None` for a process started as a spawned worker
/// without a parent to join, which has nothing to do. MPI is initialized here unless the
/// application already did (then it is also the application's to finalize).
pub(crate) fn connect<T, S, R>(config: &RunConfig) -> Result<Option<Joined<T, S, R>>> {
    if mpi::environment::is_finalized() {
        return Err(Error::backend(
            "MPI was already finalized by an earlier run in this process; to run several times, \
             call `mpi::initialize()` yourself first and keep the universe alive",
        ));
    }
    let universe = match started() {
        Some(universe) => Some(universe),
        None if mpi::environment::is_initialized() => None,
        None => Some(initialize().ok_or_else(|| Error::backend("MPI could not be initialized"))?),
    };
    // A communicator of its own for every run (a collective call, so every rank makes the same
    // one): a worker that finished the last run and already says `Ready` for the next cannot have
    // that message taken for a late answer of the last run.
    if let Some(joining) = spawn::joining() {
        return Ok(join_spawned(config, universe, &joining).map(Joined::Worker));
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
    let lifelines = lifeline::connect(&world, pool, pool - launched, config.faults.liveness);
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
        let link = MpiMaster::new(
            world,
            config.protocol,
            layout,
            lifelines,
            spawner,
            config.faults.liveness,
        );
        // Unless told otherwise, a pool that can grow and whose `nworkers` is tuned starts with
        // the ranks already paid for, and the tuner spawns more when it wants them.
        let grows = pool > launched && config.tuning.mode.tunes_workers();
        let config = RunConfig {
            workers: if grows {
                config.workers.or(Some(launched))
            } else {
                config.workers
            },
            ..config.clone()
        };
        Ok(Some(Joined::Master(MasterEnd {
            link,
            config,
            universe,
        })))
    } else {
        let setup = WorkerSetup {
            index: rank - 1,
            pool: size - 1,
            backend: "mpi",
        };
        Ok(Some(Joined::Worker(WorkerEnd {
            link: MpiWorker::new(world, config.protocol),
            setup,
            parent: None,
            universe,
        })))
    }
}

/// A spawned worker's end: it joins the master through its parent intercommunicator, and is
/// released (its communicators freed, the parent disconnected) when it closes.
fn join_spawned<T, R>(
    config: &RunConfig,
    universe: Option<mpi::environment::Universe>,
    joining: &spawn::Joining,
) -> Option<WorkerEnd<T, R>> {
    let Some((parent, merged, secret)) = spawn::join() else {
        eprintln!(
            "warning: this process was started as a spawned worker (`{}` is set) but has no \
             parent to join; it stops",
            spawn::ENV
        );
        finalize(universe, false);
        return None;
    };
    lifeline::join_spawned(
        &joining.contact,
        secret,
        joining.index as u32 + 1,
        config.faults.liveness,
    );
    let setup = WorkerSetup {
        index: joining.index,
        pool: joining.pool,
        backend: "mpi",
    };
    Some(WorkerEnd {
        link: MpiWorker::new(merged, config.protocol),
        setup,
        parent: Some(parent),
        universe,
    })
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
