//! A worker rank that dies outright (not a panic: the process ends) must end the run with an error,
//! not leave the master waiting. Run it under MPI and expect a non-zero exit within seconds:
//!
//!     mpirun -np 3 target/debug/deps/mpi_crash-<hash>
//!
//! Started without MPI, it says so and passes.

use mw_runtime::RunConfig;
use mw_runtime::prelude::*;

struct Many;

impl Master for Many {
    type Task = u32;
    type Result = u32;
    type Shared = ();
    fn partition(&mut self, it: &Iteration) -> Work<(), u32> {
        Work::tasks(if it.index < 50 {
            (0..100).collect()
        } else {
            Vec::new()
        })
    }
    fn recover(&mut self, _: TaskId, _: u32) {}
}

struct Fragile(usize);

impl Worker for Fragile {
    type Task = u32;
    type Result = u32;
    type Shared = ();
    fn initialize(&mut self, setup: &WorkerSetup) -> mw_runtime::Result<()> {
        self.0 = setup.index();
        Ok(())
    }
    fn do_work(&mut self, _: &(), task: &u32) -> u32 {
        if self.0 == 0 && *task == 7 {
            // Not a panic: the process is gone, as after a segfault or an OOM kill.
            std::process::exit(3);
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
        *task
    }
}

fn main() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_none() {
        println!("mpi crash test skipped: launch it with mpirun");
        return;
    }
    let config = RunConfig {
        backend: BackendChoice::Mpi,
        ..RunConfig::default()
    };
    let outcome = mw_runtime::run_config(&config, || Many, || Fragile(usize::MAX));
    println!("run ended: {:?}", outcome.map(|r| r.metrics().is_some()));
}
