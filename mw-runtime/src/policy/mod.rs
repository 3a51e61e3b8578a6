//! Task distribution policies: how an iteration's tasks are cut into chunks.
//!
//! The engine hands chunks out by self-scheduling: every worker that returns a chunk asks for the
//! next one. A [`Policy`] answers each request with a chunk size, knowing who asks, how many
//! tasks remain and the task times measured so far — enough for the batch policies of the papers
//! (`static`, `fsc`, `factoring`, `dpf`, `daf`) and for the dynamic loop-scheduling family whose
//! chunk sizes depend on the asking worker's speed. See `README.md` beside this file.

mod batch;
mod daf;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::measure::TaskStats;

pub use batch::{Factoring, Fsc, Static};
pub use daf::Daf;

/// Chooses chunk sizes for one iteration at a time.
pub trait Policy: Send + fmt::Debug {
    /// Starts an iteration.
    fn begin(&mut self, plan: &Plan<'_>);

    /// Size of the next chunk for the worker described by `ask`: between 1 and `ask.remaining`
    /// (the engine clamps it there).
    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize;

    /// A chunk of `tasks` tasks came back from `worker` after `busy` processing time. Adaptive
    /// policies learn from it; the engine also folds it into the [`TaskStats`] they are given.
    fn chunk_done(&mut self, worker: usize, tasks: usize, busy: Duration) {
        let _ = (worker, tasks, busy);
    }
}

/// What a policy knows at the start of an iteration.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    /// Tasks in the iteration (`M`).
    pub tasks: usize,
    /// Workers taking part (`N`).
    pub workers: usize,
    /// The distribution factor, `0 < factor ≤ 1`.
    pub factor: f64,
    /// The smallest chunk worth sending (at least 1): `--min-chunk`, as configured. (Nothing
    /// raises it from the master's chunk-managing capability yet.)
    pub min_chunk: usize,
    /// Task times measured so far, pooled and per worker.
    pub stats: &'a TaskStats,
}

/// A worker asking for its next chunk.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    /// The asking worker (its number in the pool).
    pub worker: usize,
    /// Tasks of the iteration not yet handed out (at least 1).
    pub remaining: usize,
    /// Task times measured so far, including this iteration's returned chunks.
    pub stats: &'a TaskStats,
}

/// The distribution policies, by their well-known names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
#[value(rename_all = "lowercase")]
pub enum PolicyName {
    /// One chunk of `M/N` tasks per worker (the papers' "no policy").
    Static,
    /// Fixed Size Chunking: batches of `factor·M` tasks cut into `N` equal chunks.
    Fsc,
    /// Factoring (Hummel): chunks of `R·factor/N` from the remaining `R`.
    Factoring,
    /// Dynamic Predictive Factoring: factoring whose factor the tuner adjusts between iterations.
    Dpf,
    /// Dynamic Adjusting Factoring: batch sizes from the measured task-time mean and deviation.
    Daf,
}

impl PolicyName {
    /// Every policy, in documentation order.
    pub const ALL: [PolicyName; 5] = [
        PolicyName::Static,
        PolicyName::Fsc,
        PolicyName::Factoring,
        PolicyName::Dpf,
        PolicyName::Daf,
    ];

    /// The names, for help and error messages.
    pub const ALL_NAMES: &'static str = "`static`, `fsc`, `factoring`, `dpf`, `daf`";

    /// The well-known name.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyName::Static => "static",
            PolicyName::Fsc => "fsc",
            PolicyName::Factoring => "factoring",
            PolicyName::Dpf => "dpf",
            PolicyName::Daf => "daf",
        }
    }

    /// Whether the policy uses `factor` (so tuning it makes sense).
    pub fn uses_factor(self) -> bool {
        matches!(
            self,
            PolicyName::Fsc | PolicyName::Factoring | PolicyName::Dpf
        )
    }

    /// A fresh policy of this kind.
    pub fn build(self) -> Box<dyn Policy> {
        match self {
            PolicyName::Static => Box::new(Static::default()),
            PolicyName::Fsc => Box::new(Fsc::default()),
            PolicyName::Factoring | PolicyName::Dpf => Box::new(Factoring::default()),
            PolicyName::Daf => Box::new(Daf::default()),
        }
    }
}

impl fmt::Display for PolicyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing a policy name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPolicy(pub String);

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown policy `{}`: expected one of {}",
            self.0,
            PolicyName::ALL_NAMES
        )
    }
}

impl std::error::Error for UnknownPolicy {}

impl FromStr for PolicyName {
    type Err = UnknownPolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PolicyName::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownPolicy(s.to_owned()))
    }
}

/// Splits `total` tasks into `parts` chunks whose sizes differ by at most one (larger first),
/// leaving out empty chunks.
pub(crate) fn split_even(total: usize, parts: usize) -> impl Iterator<Item = usize> {
    let parts = parts.max(1);
    let (base, extra) = (total / parts, total % parts);
    (0..parts)
        .map(move |i| base + usize::from(i < extra))
        .filter(|&size| size > 0)
}

/// Whether a worker holding `held` chunks, the last of `last` tasks, gets one more ahead:
/// while it holds no more than `depth` beyond the one it processes, and at least `depth + 1`
/// chunks of that size are left to cut for each of the `workers` taking part, so that the
/// last chunks of an iteration are still handed out to whoever is free first. The engine and
/// the factor tunlet's simulation both ask it.
pub(crate) fn sends_ahead(
    held: usize,
    last: usize,
    depth: usize,
    workers: usize,
    uncut: usize,
) -> bool {
    held > 0 && held <= depth && uncut >= (depth + 1) * workers * last
}

#[cfg(test)]
mod tests;
