//! # mw-runtime
//!
//! Write a parallel Master/Worker program by filling in a few hooks; run it on threads on a
//! laptop or on MPI across a cluster, unchanged; let the runtime measure it and tune how work is
//! cut (`factor`) and how many workers take part (`nworkers`) while it runs.
//!
//! ```
//! use mw_runtime::prelude::*;
//!
//! /// Sums the squares of 1..=100 on the workers.
//! struct Sum { total: u64 }
//!
//! impl Master for Sum {
//!     type Task = u64;
//!     type Result = u64;
//!     type Shared = ();
//!     fn partition(&mut self, it: &Iteration) -> Work<(), u64> {
//!         // One iteration of 100 tasks; an empty list ends the run.
//!         Work::tasks(if it.index == 0 { (1..=100).collect() } else { Vec::new() })
//!     }
//!     fn recover(&mut self, _task: TaskId, square: u64) {
//!         self.total += square;
//!     }
//!     fn final_work(&mut self) -> mw_runtime::Result<()> {
//!         assert_eq!(self.total, 338_350);
//!         Ok(())
//!     }
//! }
//!
//! #[derive(Default)]
//! struct Squarer;
//!
//! impl Worker for Squarer {
//!     type Task = u64;
//!     type Result = u64;
//!     type Shared = ();
//!     fn do_work(&mut self, _shared: &(), n: &u64) -> u64 {
//!         n * n
//!     }
//! }
//!
//! let args = RunArgs { workers: Some(4), backend: Some(BackendChoice::Local), ..Default::default() };
//! mw_runtime::run_with(&args, || Sum { total: 0 }, Squarer::default)?;
//! # Ok::<(), mw_runtime::Error>(())
//! ```
//!
//! Generated projects name this crate `mw` (`mw = { package = "mw-runtime", ... }`), so they
//! write `use mw::prelude::*;` and `mw::run(...)`.
//!
//! # Feature flags
//! - `mpi` (off by default): the MPI backend through rsmpi (needs an MPI library such as Open MPI
//!   and libclang to build). A binary started by `mpirun -np P` runs the master on rank 0 and
//!   workers on ranks `1..P`. Without the feature, `--backend mpi` explains how to rebuild.

// Every public item is reachable from the crate's root: what is not part of the API says so.
#![deny(unreachable_pub)]

// `::mw_runtime` paths written by the derive and hook macros also resolve inside this crate.
#[allow(unused_extern_crates)]
extern crate self as mw_runtime;

// Public modules are the ones a program browses as a unit (the codec, the metrics records, the
// model's formulas, the policies, the random numbers, the tuning, the prelude, and `agree`, which
// explains the bounds on `run`); every other module is private, and what programs use of it is
// named once, at the root below.
//
// Every item is documented once, at its home. As serde names `Serialize` both at its root and
// in `ser`, the items of a public module that most programs name (`Message`, `RunMetrics`,
// `PolicyName`, the tunables) are also re-exported at the root: those root names are
// `#[doc(no_inline)]`, listed as re-exports and documented in their module. Items of private
// modules have the root as their only path.
#[doc(hidden)]
pub mod __private;
pub mod agree;
mod app;
mod args;
mod clock;
pub mod codec;
mod config;
mod emulate;
mod engine;
mod error;
mod input;
mod interrupt;
mod launch;
mod layout;
mod load;
mod measure;
pub mod metrics;
pub mod model;
mod output;
pub mod policy;
mod progress;
mod protocol;
pub mod random;
mod run;
mod signal;
mod stats;
mod status;
mod summary;
mod trace;
mod transport;
pub mod tuning;

pub use app::{Flow, Iteration, Master, Setup, TaskError, TaskId, Work, Worker, WorkerSetup};
pub use args::parse_args;
#[doc(no_inline)]
pub use codec::{DecodeError, Message};
pub use config::{
    BackendChoice, ConfigFile, EmulatedLink, FaultConfig, LinkPreset, OnTaskFailure, RunArgs,
    RunConfig, RunSection,
};
pub use emulate::fault::exit_worker;
pub use error::{Error, ErrorKind, Result, ValueError, exit_status};
pub use input::{InputKind, read_input, read_input_text};
pub use load::{LoadPattern, LoadStep, LoadedWorkers};
#[doc(no_inline)]
pub use metrics::{Decision, RunMetrics};
pub use mw_macros::{Message, master, worker};
pub use output::write_output;
#[doc(no_inline)]
pub use policy::{PolicyChoice, PolicyName};
pub use protocol::Protocol;
pub use run::{Report, check_output, run, run_config, run_with};
pub use signal::Signal;
pub use stats::{Moments, TaskStats};
pub use status::report_exit_status;
#[doc(no_inline)]
pub use tuning::config::{Objective, TuneMode, TuningConfig};
#[doc(no_inline)]
pub use tuning::tunables::{Change, TakesEffect, Tunable, TunableId, Tunables, TunablesHandle};

/// The rsmpi crate, for programs that initialize MPI themselves: when MPI is already initialized,
/// runs use it and leave finalizing to the program, so one process can run several times.
#[cfg(feature = "mpi")]
pub use mpi;

/// What a Master/Worker program needs in scope.
pub mod prelude {
    #[doc(no_inline)]
    pub use crate::{Flow, Iteration, Master, Setup, TaskId, Work, Worker, WorkerSetup};
    // The trait and its derive.
    #[doc(no_inline)]
    pub use crate::Message;
    #[doc(no_inline)]
    pub use crate::{BackendChoice, Protocol, RunArgs};
}
