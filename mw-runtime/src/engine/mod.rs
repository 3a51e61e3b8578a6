//! The iteration engine, the same on every backend: the master's loop in [`master`], the
//! workers' in [`worker`].

mod checkpoint;
pub(crate) mod master;
pub(crate) mod worker;
