//! Starting a program: choose the backend, build the master and the workers, run.

use clap::Parser;

use crate::agree::{Agreed, SameResult, SameShared, SameTask};
use crate::app::{Master, Worker, WorkerSetup};
use crate::config::{BackendChoice, RunArgs, RunConfig};
use crate::emulate::network;
use crate::emulate::worker::{Emulated, EmulatedEnd, Emulation};
#[cfg(feature = "mpi")]
use crate::engine::master::stop_workers;
use crate::engine::{
    master::{guarded, run_master},
    worker::serve,
};
use crate::error::{Error, ErrorKind, Result};
use crate::launch;
use crate::load::LoadPattern;
use crate::metrics::RunMetrics;
use crate::output::writable;
use crate::status::{self, Outcome};
use crate::summary;
use crate::transport::{WorkerLink, local};
use std::path::Path;
use std::sync::Arc;

mod thread;

/// What a finished run leaves: the metrics on the master, nothing on an MPI worker rank.
#[derive(Debug)]
#[non_exhaustive]
pub struct Report {
    metrics: Option<RunMetrics>,
}

impl Report {
    /// The run's metrics; `None` on MPI worker ranks.
    pub fn metrics(&self) -> Option<&RunMetrics> {
        self.metrics.as_ref()
    }

    /// Takes the metrics out of the report.
    pub fn into_metrics(self) -> Option<RunMetrics> {
        self.metrics
    }
}

/// Command line of a program that has no flags of its own.
#[derive(Debug, Parser)]
struct RuntimeOnly {
    #[command(flatten)]
    run: RunArgs,
}

/// Runs a Master/Worker program whose command line holds only the runtime's flags
/// (`--workers`, `--policy`, ...).
///
/// `master` is called once, on the master; `worker` once per worker (per thread on the local
/// backend, per rank under MPI), so that each process builds only what it runs, and again for a
/// worker whose `do_work` panicked. It owns what it captures (`move ||`): a worker thread
/// that hangs for good is left behind when the run ends, so it cannot borrow from the caller. Programs with
/// flags of their own flatten [`RunArgs`] into their parser and call [`run_with`].
///
/// The worker must exchange the master's messages: its `Task`, `Result` and `Shared` are the
/// master's (the bounds from [`agree`](crate::agree) say so, and name both types when not).
///
/// # Stopping
/// SIGINT or SIGTERM stops the run at once: no new chunk is sent, the workers are told to stop,
/// the metrics (marked `interrupted`) and the trace of what ran are written, and the process
/// exits with 130 or 143 instead of returning. A second signal exits at once.
///
/// # Errors
/// Invalid configuration, a task that failed on every worker, a backend failure, or an error
/// returned by a hook. Invalid flags print clap's message and exit with status 2.
pub fn run<M, W>(
    master: impl FnOnce() -> M,
    worker: impl Fn() -> W + Send + Sync + 'static,
) -> Result<()>
where
    M: Master,
    W: Worker,
    W::Task: SameTask<M::Task, M, W>,
    W::Result: SameResult<M::Result, M, W>,
    W::Shared: SameShared<M::Shared, M, W>,
{
    // Before the flags are parsed: a refused flag (status 2) is reported too.
    status::report_exit_status();
    let args = RuntimeOnly::parse().run;
    run_with(&args, master, worker).map(drop)
}

/// Runs a Master/Worker program with the given runtime flags.
///
/// # Examples
/// ```
/// use mw_runtime::prelude::*;
///
/// struct Squares { total: u64 }
/// impl Master for Squares {
///     type Task = u64;
///     type Result = u64;
///     type Shared = ();
///     fn partition(&mut self, it: &Iteration) -> Work<(), u64> {
///         Work::tasks(if it.index == 0 { (1..=10).collect() } else { vec![] })
///     }
///     fn recover(&mut self, _task: TaskId, square: u64) { self.total += square; }
/// }
///
/// #[derive(Default)]
/// struct Squarer;
/// impl Worker for Squarer {
///     type Task = u64;
///     type Result = u64;
///     type Shared = ();
///     fn do_work(&mut self, _: &(), n: &u64) -> u64 { n * n }
/// }
///
/// let args = RunArgs { workers: Some(2), backend: Some(BackendChoice::Local), ..RunArgs::default() };
/// mw_runtime::run_with(&args, || Squares { total: 0 }, Squarer::default)?;
/// # Ok::<(), mw_runtime::Error>(())
/// ```
///
/// # Errors
/// As for [`run`].
pub fn run_with<M, W>(
    args: &RunArgs,
    master: impl FnOnce() -> M,
    worker: impl Fn() -> W + Send + Sync + 'static,
) -> Result<Report>
where
    M: Master,
    W: Worker,
    W::Task: SameTask<M::Task, M, W>,
    W::Result: SameResult<M::Result, M, W>,
    W::Shared: SameShared<M::Shared, M, W>,
{
    let config = RunConfig::resolve(args)?;
    run_config(&config, master, worker)
}

/// Runs with a configuration already resolved.
///
/// # Errors
/// As for [`run`].
pub fn run_config<M, W>(
    config: &RunConfig,
    master: impl FnOnce() -> M,
    worker: impl Fn() -> W + Send + Sync + 'static,
) -> Result<Report>
where
    M: Master,
    W: Worker,
    W::Task: SameTask<M::Task, M, W>,
    W::Result: SameResult<M::Result, M, W>,
    W::Shared: SameShared<M::Shared, M, W>,
{
    status::report_exit_status();
    // One generic body, its outcome recorded on every way out.
    let result = (move || {
        let use_mpi = match config.backend {
            BackendChoice::Local => false,
            BackendChoice::Mpi => true,
            BackendChoice::Auto => launch::is_spawned_worker() || launched(),
        };
        // Written when the run ends: checked before it starts, on every rank at once under MPI.
        let ready = config
            .validate()
            .and_then(|()| crate::interrupt::watch())
            .and_then(|()| check_outputs(config));
        if use_mpi { agreed(ready) } else { ready }?;
        let worker = move || Agreed::<M, W>::new(worker());
        if use_mpi && config.link.is_some() {
            return Err(Error::config(
                "error: `--link`, `--link-latency` and `--link-bandwidth` emulate a network on the \
             local backend, and this run is on MPI",
                "under MPI the network is real: leave the link flags (and `[run] link`, \
             `link_latency`, `link_bandwidth`) out, or run on threads with `--backend local`",
            ));
        }
        let metrics = if use_mpi {
            run_mpi(config, master, worker)?
        } else {
            let metrics = run_local(config, master, worker);
            #[cfg(feature = "mpi")]
            crate::transport::mpi::end_started();
            Some(metrics?)
        };
        // The engine wrote those of an interrupted run already.
        let unwritten = metrics.as_ref().filter(|m| m.interrupted.is_none());
        if let (Some(metrics), Some(path)) = (unwritten, &config.metrics) {
            metrics.write(path)?;
        }
        if let Some(signal) = crate::interrupt::received() {
            // As the signal's default action would have, but with what ran written down. Worker
            // ranks leave quietly: the master says it.
            if let Some(metrics) = &metrics {
                eprintln!(
                    "mw: interrupted by {} after {}{}",
                    signal.name(),
                    summary::plural(metrics.iterations.len(), "iteration"),
                    written(config)
                );
            }
            status::set_outcome(Outcome::Interrupted(signal));
            status::report_now(signal.exit_code());
            std::process::exit(signal.exit_code());
        }
        if let Some(metrics) = metrics.as_ref().filter(|_| !config.quiet) {
            let written = summary::Written {
                metrics: config.metrics.as_deref(),
                trace: config.trace.as_deref(),
            };
            summary::print(metrics, &written);
        }
        Ok(Report { metrics })
    })();
    record(&result);
    result
}

/// Records how a run ended, for the exit status line.
fn record<T>(result: &Result<T>) {
    let outcome = match result {
        Ok(_) => Outcome::Completed,
        Err(e) => match e.kind() {
            ErrorKind::Interrupted { signal } => Outcome::Interrupted(*signal),
            _ => Outcome::Failed,
        },
    };
    status::set_outcome(outcome);
    status::report_now(if result.is_ok() { 0 } else { 1 });
}

/// Whether several processes were launched together (by mpirun, mpiexec or srun).
fn launched() -> bool {
    launch::detect().is_some_and(|launch| launch.size > 1)
}

/// A check made before a run on every process of a launched job, settled by the master's
/// outcome: a failure ends the worker ranks at once, quietly, and is returned on the master,
/// instead of leaving the workers waiting for a master that left (see [`check_output`]). On a
/// process started alone, the outcome as it is.
pub(crate) fn agreed(outcome: Result<()>) -> Result<()> {
    #[cfg(feature = "mpi")]
    if launched() && !launch::is_spawned_worker() {
        return crate::transport::mpi::agree_at_start(outcome);
    }
    outcome
}

/// Checks that this process can write `path`, given with `flag` (named in the error), before
/// any work is done: its directory takes a new file, and `path` is not a directory, a device
/// or a pipe. Nothing is left behind and an existing file is not touched.
///
/// Under MPI only rank 0, the master, writes outputs, so the other ranks take its verdict:
/// when it fails, they leave at once, quietly, and the master returns the error (so every rank
/// of the job must call this with the same paths, as the same program with the same arguments
/// does). A rank that left alone would leave the others waiting for it.
///
/// # Examples
/// ```
/// let dir = std::env::temp_dir();
/// mw_runtime::check_output(&dir.join("final.csv"), "--out")?;
/// let e = mw_runtime::check_output(&dir.join("no-such-dir/final.csv"), "--out").unwrap_err();
/// assert!(e.to_string().starts_with("error: cannot write"));
/// # Ok::<(), mw_runtime::Error>(())
/// ```
///
/// # Errors
/// A configuration error, `cannot write PATH` with the reason and what to do, when the
/// directory is missing or not writable, or `path` is not a regular file.
pub fn check_output(path: &Path, flag: &str) -> Result<()> {
    agreed(writable(path, flag))
}

/// Checks the outputs of a run (`--metrics`, `--trace`, `--checkpoint`) before it starts: they
/// are written when it ends or after its first iteration.
///
/// # Errors
/// As [`check_output`], for the first that cannot be written.
fn check_outputs(config: &RunConfig) -> Result<()> {
    let outputs = [
        ("--metrics", &config.metrics),
        ("--trace", &config.trace),
        ("--checkpoint", &config.checkpoint),
    ];
    for (flag, path) in outputs {
        if let Some(path) = path {
            writable(path, flag)?;
        }
    }
    Ok(())
}

/// Where the outputs of an interrupted run went, for its last line.
fn written(config: &RunConfig) -> String {
    let files: Vec<String> = [("metrics", &config.metrics), ("trace", &config.trace)]
        .into_iter()
        .filter_map(|(what, path)| Some(format!("{what} in `{}`", path.as_ref()?.display())))
        .collect();
    match files.is_empty() {
        true => String::new(),
        false => format!("; {}", files.join(", ")),
    }
}

/// This rank's part: the master on rank 0, a worker elsewhere, each on its end of the MPI link.
#[cfg(feature = "mpi")]
fn run_mpi<M, W>(
    config: &RunConfig,
    master: impl FnOnce() -> M,
    worker: impl Fn() -> W + Send + Sync + 'static,
) -> Result<Option<RunMetrics>>
where
    M: Master,
    W: Worker<Task = M::Task, Result = M::Result, Shared = M::Shared>,
{
    use crate::transport::mpi::{Joined, connect};
    match connect::<M::Task, M::Shared, M::Result>(config)? {
        None => Ok(None),
        Some(Joined::Master(mut end)) => {
            let config = end.config().clone();
            let outcome = guarded(|| run_master(&mut master(), end.link(), &config, &app_name()));
            let panicked = outcome
                .as_ref()
                .is_err_and(|e| matches!(e.kind(), ErrorKind::MasterPanicked { .. }));
            if panicked {
                // The engine unwound without stopping the workers: stopped here, or they would
                // wait for the master forever.
                if let Err(stop) = stop_workers(end.unsynchronized()) {
                    eprintln!("warning: after the master's panic, stopping the workers: {stop}");
                }
            }
            end.close();
            outcome.map(Some)
        }
        Some(Joined::Worker(mut end)) => {
            let setup = end.setup().clone();
            serve_emulated(&worker, &setup, &config.load, end.link());
            end.close();
            Ok(None)
        }
    }
}

#[cfg(not(feature = "mpi"))]
fn run_mpi<M, W>(
    _: &RunConfig,
    _: impl FnOnce() -> M,
    _: impl Fn() -> W + Sync,
) -> Result<Option<RunMetrics>> {
    let launched = match launch::detect() {
        Some(launch) => format!(" (it was started by {launch})"),
        None => String::new(),
    };
    Err(Error::config(
        format!("error: the MPI backend is not available in this build{launched}"),
        "rebuild with `cargo build --release --features mpi`, or run on threads with \
         `--backend local`",
    ))
}

/// Master on this thread, one scoped thread per worker of the pool.
fn run_local<M, W>(
    config: &RunConfig,
    master: impl FnOnce() -> M,
    worker: impl Fn() -> W + Send + Sync + 'static,
) -> Result<RunMetrics>
where
    M: Master,
    W: Worker<Task = M::Task, Result = M::Result, Shared = M::Shared>,
{
    let pool = config.local_pool();
    let config = &RunConfig {
        workers: Some(config.local_start(pool)),
        ..config.clone()
    };
    let (link, ends) = local::connect(pool, config.protocol);
    let (mut link, ends) = network::connect(link, ends, config.protocol, config.link);
    let worker = Arc::new(worker);
    // Worker threads are not scoped: one that hangs in `do_work` for good is given up on and
    // left behind, instead of keeping the run from ending. The others are joined.
    let mut threads = Vec::with_capacity(pool);
    for (index, mut end) in ends.into_iter().enumerate() {
        let setup = WorkerSetup {
            index,
            pool,
            backend: "local",
        };
        let (worker, load) = (Arc::clone(&worker), config.load.clone());
        let spawned = thread::start(format!("mw-worker-{index}"), move || {
            serve_emulated(&*worker, &setup, &load, &mut end)
        });
        match spawned {
            Ok(thread) => threads.push(thread),
            Err(e) => {
                // The threads started so far see their inbox closed and end.
                drop(link);
                return Err(Error::config(
                    format!("error: cannot start worker thread {index} of {pool}: {e}"),
                    "ask for fewer workers (--workers, --max-workers), or raise the limits on \
                     threads and memory (ulimit -u, ulimit -v)",
                ));
            }
        }
    }
    let outcome = guarded(|| run_master(&mut master(), &mut link, config, &app_name()));
    let gone = link.link().forsaken_workers();
    drop(link);
    for (index, thread) in threads.into_iter().enumerate() {
        if !gone.contains(&index) {
            let _ = thread.join();
        }
    }
    outcome
}

/// Serves the master as worker `setup.index`, under the emulated load `load` and, on threads,
/// able to die the emulated death (`exit_worker`). An MPI worker without load serves as it is:
/// nothing is added to its path (there `exit_worker` aborts the process).
fn serve_emulated<W, L>(
    build: &impl Fn() -> W,
    setup: &WorkerSetup,
    load: &LoadPattern,
    link: &mut L,
) where
    W: Worker,
    L: WorkerLink<W::Task, W::Shared, W::Result>,
{
    if setup.backend != "local" && load.is_none() {
        return serve(build, setup, link);
    }
    let emulation = Emulation::new(setup);
    let build = || Emulated::new(build, &emulation);
    serve(
        &build,
        setup,
        &mut EmulatedEnd::new(link, &emulation, load, setup),
    );
}

fn app_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|arg0| {
            std::path::Path::new(&arg0)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "mw".to_owned())
}
