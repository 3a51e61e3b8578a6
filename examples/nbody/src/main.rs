//! N-Body: 2-D gravity, every body pulled by every other, one Master/Worker iteration per step.

mod master;
mod messages;
mod physics;
mod worker;

use std::path::PathBuf;
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
    /// Number of bodies
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
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

fn simulate_rayon(initial: Vec<Body>, steps: usize, threads: usize) -> mw::Result<Vec<Body>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| format!("cannot start {threads} rayon threads: {e}"))?;
    Ok(pool.install(|| physics::simulate_rayon(initial, steps)))
}

fn write_out(path: Option<&PathBuf>, bodies: &[Body]) -> mw::Result<()> {
    if let Some(path) = path {
        std::fs::write(path, physics::to_csv(bodies))
            .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
    }
    Ok(())
}

fn main() -> mw::Result<()> {
    let cli = Cli::parse();
    // The runtime's flags and Mw.toml are checked (worker counts within the runtime's limit)
    // whichever mode runs, since the rayon run starts as many threads.
    let config = mw::RunConfig::resolve(&cli.run)?;
    // Written when the run ends: checked before it starts.
    if let Some(path) = &cli.out {
        mw::check_output(path, "--out")?;
    }
    let initial = physics::initial_bodies(cli.bodies as usize, cli.seed);
    let what = format!("{} bodies, {} steps", cli.bodies, cli.steps);

    let sequential = matches!(cli.mode, Mode::Seq | Mode::Both | Mode::All)
        .then(|| timed(|| physics::simulate(initial.clone(), cli.steps)));
    if let (Mode::Seq, Some((bodies, elapsed))) = (cli.mode, &sequential) {
        write_out(cli.out.as_ref(), bodies)?;
        eprintln!("sequential: {what} in {:.1} ms", ms(*elapsed));
        return Ok(());
    }

    let threads = rayon_threads(&config);
    let rayon = match cli.mode {
        Mode::Rayon | Mode::All => {
            let (bodies, elapsed) = timed(|| simulate_rayon(initial.clone(), cli.steps, threads));
            Some((bodies?, elapsed))
        }
        _ => None,
    };
    if let (Mode::Rayon, Some((bodies, elapsed))) = (cli.mode, &rayon) {
        write_out(cli.out.as_ref(), bodies)?;
        eprintln!(
            "rayon: {what} in {:.1} ms on {threads} threads",
            ms(*elapsed)
        );
        return Ok(());
    }

    let master = NBody::new(
        initial,
        cli.steps,
        cli.task_bodies as usize,
        cli.out.clone(),
    );
    let result = master.result.clone();
    let (report, elapsed) = timed(|| mw::run_with(&cli.run, || master, NBodyWorker::default));
    let report = report?;
    let Some(metrics) = report.metrics() else {
        return Ok(()); // an MPI worker rank
    };
    eprintln!(
        "master/worker: {what} in {:.1} ms on {} workers",
        ms(elapsed),
        metrics.iterations.last().map_or(0, |i| i.workers)
    );
    let parallel = result.lock().map(|b| b.clone()).unwrap_or_default();
    if let Some((bodies, seq_elapsed)) = &sequential {
        if !physics::bit_identical(&parallel, bodies) {
            return Err("master/worker result differs from the sequential loop".into());
        }
        eprintln!(
            "sequential: {:.1} ms; speedup {:.2}; results bit-identical",
            ms(*seq_elapsed),
            seq_elapsed.as_secs_f64() / elapsed.as_secs_f64()
        );
    }
    if let Some((bodies, rayon_elapsed)) = &rayon {
        if !physics::bit_identical(&parallel, bodies) {
            return Err("master/worker result differs from rayon's".into());
        }
        let speedup = sequential.as_ref().map_or(String::new(), |(_, seq)| {
            format!(
                " (speedup {:.2})",
                seq.as_secs_f64() / rayon_elapsed.as_secs_f64()
            )
        });
        eprintln!(
            "rayon: {:.1} ms on {threads} threads{speedup}; master/worker runs at {:.2}× rayon's \
             speed; results bit-identical",
            ms(*rayon_elapsed),
            rayon_elapsed.as_secs_f64() / elapsed.as_secs_f64()
        );
    }
    Ok(())
}
