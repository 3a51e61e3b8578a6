//! The external control endpoint (`--control ADDR`, `mwgen ctl`): a running program's tunables,
//! read and changed from outside, for the user who started it only. See `README.md` beside
//! this file.
//!
//! The configuration parses its address; it reaches the tuner only through the
//! [`TunablesHandle`](crate::TunablesHandle), never the `Tuner` itself.

mod endpoint;
mod token;

pub use endpoint::{
    AUTH_TIMEOUT, ControlAddr, ControlStream, MAX_CONNECTIONS, MAX_LINE, MAX_UNAUTHENTICATED, Reply,
};
pub(crate) use endpoint::{ControlServer, Status};
