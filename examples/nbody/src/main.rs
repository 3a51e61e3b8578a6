//! N-Body: 2-D gravity, every body pulled by every other, one Master/Worker iteration per step.

mod master;
mod messages;
mod physics;
mod worker;

use std::path::PathBuf;
use std::time::Instant;

use clap::{Parser, ValueEnum};

use master::NBody;
use worker::NBodyWorker;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Master/Worker on the runtime.
    Mw,
    /// The plain sequential loop.
    Seq,
    /// Both, checking that they agree bit for bit, and print the speedup.
    Both,
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

fn main() -> mw::Result<()> {
    let cli = Cli::parse();
    let initial = physics::initial_bodies(cli.bodies as usize, cli.seed);

    let sequential = (cli.mode != Mode::Mw).then(|| {
        let started = Instant::now();
        let bodies = physics::simulate(initial.clone(), cli.steps);
        (bodies, started.elapsed())
    });
    if cli.mode == Mode::Seq {
        let (bodies, elapsed) = sequential.expect("sequential mode ran");
        if let Some(path) = &cli.out {
            std::fs::write(path, physics::to_csv(&bodies))
                .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
        }
        eprintln!(
            "sequential: {} bodies, {} steps in {:.1} ms",
            cli.bodies,
            cli.steps,
            elapsed.as_secs_f64() * 1e3
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
    let started = Instant::now();
    let report = mw::run_with(&cli.run, || master, NBodyWorker::default)?;
    let elapsed = started.elapsed();
    let Some(metrics) = report.metrics() else {
        return Ok(()); // an MPI worker rank
    };
    eprintln!(
        "master/worker: {} bodies, {} steps in {:.1} ms on {} workers",
        cli.bodies,
        cli.steps,
        elapsed.as_secs_f64() * 1e3,
        metrics.iterations.last().map_or(0, |i| i.workers)
    );
    if let Some((bodies, seq_elapsed)) = sequential {
        let parallel = result.lock().map(|b| b.clone()).unwrap_or_default();
        if parallel != bodies {
            return Err("master/worker result differs from the sequential loop".into());
        }
        eprintln!(
            "sequential: {:.1} ms; speedup {:.2}; results bit-identical",
            seq_elapsed.as_secs_f64() * 1e3,
            seq_elapsed.as_secs_f64() / elapsed.as_secs_f64()
        );
    }
    Ok(())
}
