//! Emulation as a layer: what lets one machine reproduce a cluster experiment, wrapped around
//! the real parts through their own traits, so that the engine and the protocol know nothing
//! of it. `README.md` in this folder is its design.
//!
//! - [`worker`]: the emulated external load of `--load` and the emulated death of a worker
//!   ([`exit_worker`](crate::exit_worker), in [`fault`]), around a worker and its end of the
//!   link.
//! - [`network`]: the emulated network of `--link-latency` and `--link-bandwidth`, around the
//!   two ends of the local link, on the [`wire`] of each direction.

pub(crate) mod fault;
pub(crate) mod network;
mod wire;
pub(crate) mod worker;
