//! The external control endpoint (`--control ADDR`, `mwgen ctl`): a running program's tunables,
//! read and changed from outside, for the user who started it only. See `README.md` beside
//! this file.
//!
//! It sits below the configuration, which parses its address, and beside the tuner, which it
//! reaches only through the [`TunablesHandle`](crate::TunablesHandle): neither `config` nor
//! `control` depends on `tuning`.

mod endpoint;
mod token;

pub use endpoint::{
    AUTH_TIMEOUT, ControlAddr, ControlStream, MAX_CONNECTIONS, MAX_LINE, MAX_UNAUTHENTICATED, Reply,
};
pub(crate) use endpoint::{ControlServer, Status};
