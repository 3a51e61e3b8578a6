//! How the master sends messages: the protocol every layer speaks of, from the configuration
//! (`--protocol`) to the performance model's formulas, the tuner's simulation and the links.

use std::fmt;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// How the master sends messages; the performance model has a branch for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// Every send completes (the receiver has taken the message) before the next starts.
    Sync,
    /// Sends are posted without waiting and overlap.
    #[default]
    Async,
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Sync => "sync",
            Protocol::Async => "async",
        })
    }
}
