//! N-Body: 2-D gravity, every body pulled by every other, one Master/Worker iteration per step.

mod master;
mod messages;
mod physics;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};

use master::NBody;
use messages::Body;
use worker::NBodyWorker;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Master/Worker on the runtime.
    Mw,
    /// The plain sequential loop.
    Seq,
    /// The same step with rayon's `par_iter`, on as many threads as workers.
    Rayon,
    /// Master/Worker and sequential, checking that they agree bit for bit; prints the speedup.
    Both,
    /// Sequential, rayon and Master/Worker, checking that all agree bit for bit; prints each
    /// speedup and Master/Worker's speed relative to rayon's.
    All,
}

/// 2-D gravitational N-Body simulation as a self-tuning Master/Worker program.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Number of bodies, at most 10000000
    #[arg(long, default_value_t = 1000, value_parser = parse_bodies)]
    bodies: u32,
    /// Time steps (iterations)
    #[arg(long, default_value_t = 10)]
    steps: usize,
    /// Seed of the initial state
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Bodies per task
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    task_bodies: u32,
    /// Write the final state as CSV `i,x,y,vx,vy` to this file
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// How to run
    #[arg(long, value_enum, default_value_t = Mode::Mw)]
    mode: Mode,
    #[command(flatten)]
    run: mw::RunArgs,
}

/// The most bodies: 400 MB of state on the master and on every worker, and 10^14 interactions
/// a step; far past what a run can finish, and refused before anything is allocated.
const MAX_BODIES: u32 = 10_000_000;

fn parse_bodies(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u64>() {
        Ok(n @ 1..) if n <= u64::from(MAX_BODIES) => Ok(n as u32),
        Ok(0) => Err("a simulation needs at least 1 body".into()),
        Ok(_) => Err(format!(
            "more than {MAX_BODIES} bodies: the state takes 40 bytes a body on the master and \
             on every worker, and a step N² interactions; ask for at most {MAX_BODIES}"
        )),
        Err(_) => Err(format!("`{text}` is not a whole number of bodies")),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs `f`, timing it.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let value = f();
    (value, started.elapsed())
}

/// Threads for the rayon run: as many as Master/Worker workers would be started.
fn rayon_threads(run: &mw::RunConfig) -> usize {
    run.max_workers
        .or(run.workers)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from))
}

/// The rayon run, timed once its threads are up (as the runtime's time leaves out starting its
/// workers).
fn simulate_rayon(
    initial: Vec<Body>,
    steps: usize,
    threads: usize,
) -> mw::Result<(Vec<Body>, Duration)> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| format!("cannot start {threads} rayon threads: {e}"))?;
    Ok(pool.install(|| timed(|| physics::simulate_rayon(initial, steps))))
}

fn write_out(path: Option<&PathBuf>, bodies: &[Body]) -> mw::Result<()> {
    match path {
        Some(path) => physics::write_csv(path, bodies),
        None => Ok(()),
    }
}

/// The runs the Master/Worker result is checked against, with their times.
#[derive(Default)]
struct References {
    sequential: Option<(Vec<Body>, Duration)>,
    rayon: Option<mw::Result<(Vec<Body>, Duration)>>,
}

fn main() -> ExitCode {
    mw::exit_status(run(&mw::parse_args()))
}

fn run(cli: &Cli) -> mw::Result<()> {
    // The runtime's flags and Mw.toml are checked (worker counts within the runtime's limit)
    // whichever mode runs, since the rayon run starts as many threads.
    let config = mw::RunConfig::resolve(&cli.run)?;
    // Written when the run ends: checked before it starts.
    if let Some(path) = &cli.out {
        mw::check_output(path, "--out")?;
    }
    let initial = physics::initial_bodies(cli.bodies as usize, cli.seed);
    let what = format!("{} bodies, {} steps", cli.bodies, cli.steps);
    let threads = rayon_threads(&config);

    match cli.mode {
        Mode::Seq => {
            let (bodies, elapsed) = timed(|| physics::simulate(initial, cli.steps));
            write_out(cli.out.as_ref(), &bodies)?;
            eprintln!("sequential: {what} in {:.1} ms", ms(elapsed));
            return Ok(());
        }
        Mode::Rayon => {
            let (bodies, elapsed) = simulate_rayon(initial, cli.steps, threads)?;
            write_out(cli.out.as_ref(), &bodies)?;
            eprintln!(
                "rayon: {what} in {:.1} ms on {threads} threads",
                ms(elapsed)
            );
            return Ok(());
        }
        Mode::Mw | Mode::Both | Mode::All => {}
    }

    // The reference runs happen where the master is built: on the master's process only (MPI
    // rank 0), with the workers already started and waiting for their first task, so they do
    // not compete with it for the cores.
    let mut references = References::default();
    let mut result = None;
    let master = || {
        if matches!(cli.mode, Mode::Both | Mode::All) {
            references.sequential = Some(timed(|| physics::simulate(initial.clone(), cli.steps)));
        }
        if cli.mode == Mode::All {
            references.rayon = Some(simulate_rayon(initial.clone(), cli.steps, threads));
        }
        let nbody = NBody::new(
            initial,
            cli.seed,
            cli.steps,
            cli.task_bodies as usize,
            cli.out.clone(),
        );
        result = Some(nbody.result.clone());
        nbody
    };
    let (report, wall) = timed(|| mw::run_with(&cli.run, master, NBodyWorker::default));
    let report = report?;
    let Some(metrics) = report.metrics() else {
        return Ok(()); // an MPI worker rank
    };
    // The runtime's time (its summary line's): from the master's start to its `final_work`.
    // The wall time adds starting and stopping the backend (under MPI, the MPI library).
    let run = Duration::from_secs_f64(metrics.total_ms / 1e3);
    let references_took = references
        .sequential
        .as_ref()
        .map_or(Duration::ZERO, |r| r.1)
        + match &references.rayon {
            Some(Ok((_, elapsed))) => *elapsed,
            _ => Duration::ZERO,
        };
    let backend = wall.saturating_sub(run + references_took);
    eprintln!(
        "master/worker: {what} in {:.1} ms on {} workers (the runtime's time, as its summary \
         line; {:.1} ms more to start and stop the {} backend)",
        ms(run),
        metrics.iterations.last().map_or(0, |i| i.workers),
        ms(backend),
        metrics.backend,
    );
    let parallel = result
        .and_then(|r| r.lock().map(|b| b.clone()).ok())
        .unwrap_or_default();
    if let Some((bodies, seq_elapsed)) = &references.sequential {
        if !physics::bit_identical(&parallel, bodies) {
            return Err("master/worker result differs from the sequential loop".into());
        }
        eprintln!(
            "sequential: {:.1} ms, on the master's process before its run; speedup {:.2}; \
             results bit-identical",
            ms(*seq_elapsed),
            seq_elapsed.as_secs_f64() / run.as_secs_f64()
        );
    }
    if let Some(rayon) = references.rayon {
        let (bodies, rayon_elapsed) = rayon?;
        if !physics::bit_identical(&parallel, &bodies) {
            return Err("master/worker result differs from rayon's".into());
        }
        let speedup = references
            .sequential
            .as_ref()
            .map_or(String::new(), |(_, seq)| {
                format!(
                    " (speedup {:.2})",
                    seq.as_secs_f64() / rayon_elapsed.as_secs_f64()
                )
            });
        eprintln!(
            "rayon: {:.1} ms on {threads} threads{speedup}; master/worker runs at {:.2}× rayon's \
             speed; results bit-identical",
            ms(rayon_elapsed),
            rayon_elapsed.as_secs_f64() / run.as_secs_f64()
        );
    }
    Ok(())
}
