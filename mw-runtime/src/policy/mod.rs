//! Task distribution policies: how an iteration's tasks are cut into chunks.
//!
//! The engine hands chunks out by self-scheduling: every worker that returns a chunk asks for the
//! next one. A [`Policy`] answers each request with a chunk size, knowing who asks, how many
//! tasks remain and the task times measured so far — enough for the batch policies of the papers
//! (`static`, `fsc`, `factoring`, `dpf`, `daf`) and for the dynamic loop-scheduling family,
//! whose chunk sizes follow the asking worker's measured speed (`wf`, `awf-*`, `af`). See
//! `README.md` beside this file for each formula and its paper.
//!
//! A program can bring a policy of its own: implement [`Policy`] and hand it to
//! [`Setup::policy`](crate::Setup::policy) in `Master::initialize`.
//!
//! # Examples
//!
//! Chunks of a fixed 8 tasks, checked by cutting an iteration of 20 tasks the way the engine
//! does:
//!
//! ```
//! use mw_runtime::TaskStats;
//! use mw_runtime::policy::{Ask, Plan, Policy};
//!
//! #[derive(Debug)]
//! struct Eights;
//!
//! impl Policy for Eights {
//!     fn name(&self) -> &str {
//!         "eights"
//!     }
//!     fn begin(&mut self, _plan: &Plan<'_>) {}
//!     fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
//!         // Never more than remain: the engine refuses a chunk it cannot fill.
//!         ask.remaining.min(8)
//!     }
//! }
//!
//! let stats = TaskStats::new(2);
//! let mut policy = Eights;
//! policy.begin(&Plan { tasks: 20, workers: 2, factor: 0.5, min_chunk: 1, stats: &stats });
//! let mut remaining = 20;
//! let mut sizes = Vec::new();
//! while remaining > 0 {
//!     let size = policy.next_chunk(&Ask { worker: sizes.len() % 2, remaining, stats: &stats });
//!     remaining -= size;
//!     sizes.push(size);
//! }
//! assert_eq!(sizes, [8, 8, 4]);
//! ```
//!
//! In a program, `setup.policy(Box::new(Eights))` in `Master::initialize` makes every
//! iteration use it.

mod batch;
mod daf;
mod dls;
mod weighted;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::stats::TaskStats;

pub use batch::{Factoring, Fsc, Static};
pub use daf::Daf;
pub use dls::{Fac2, Gss, Mfsc, Ss, Tss};
pub use weighted::{Af, Awf, AwfVariant, Wf};

/// Chooses chunk sizes for one iteration at a time.
///
/// The engine calls [`begin`](Policy::begin) when it plans an iteration's tasks (and again when
/// the tuner changes `nworkers` or `factor` inside one, for the tasks not yet cut), then
/// [`next_chunk`](Policy::next_chunk) for every chunk it sends, and
/// [`chunk_done`](Policy::chunk_done) for every chunk answered. A policy lives for the whole run,
/// so it may carry what it learned from one iteration to the next.
pub trait Policy: Send + fmt::Debug {
    /// The policy's name, for the metrics and error messages.
    fn name(&self) -> &str;

    /// Starts an iteration.
    fn begin(&mut self, plan: &Plan<'_>);

    /// Size of the next chunk for the worker described by `ask`: between 1 and `ask.remaining`.
    /// Any other answer ends the run with an error that names the policy, before a task is
    /// handed out, so none is lost.
    fn next_chunk(&mut self, ask: &Ask<'_>) -> usize;

    /// A chunk came back. Adaptive policies learn from it; the engine also folds its task times
    /// into the [`TaskStats`] they are given.
    fn chunk_done(&mut self, done: &ChunkDone) {
        let _ = done;
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

/// A chunk answered by a worker.
#[derive(Debug, Clone, Copy)]
pub struct ChunkDone {
    /// The worker that answered.
    pub worker: usize,
    /// Tasks in the chunk.
    pub tasks: usize,
    /// The worker's processing time for them.
    pub busy: Duration,
    /// From the chunk's send to its answer: processing, the messages both ways and any wait
    /// behind the chunks the worker held before it.
    pub round_trip: Duration,
}

/// Checks a policy's answer before the engine cuts a chunk: between 1 and the tasks remaining.
///
/// # Errors
/// A configuration error naming the policy, the size and the tasks remaining.
#[inline]
pub(crate) fn checked(policy: &dyn Policy, size: usize, remaining: usize) -> Result<usize> {
    if (1..=remaining).contains(&size) {
        return Ok(size);
    }
    refused(policy, size, remaining)
}

/// The error of a policy's chunk outside `1..=remaining`.
#[cold]
fn refused(policy: &dyn Policy, size: usize, remaining: usize) -> Result<usize> {
    let what = if size == 0 {
        "an empty chunk".to_owned()
    } else {
        format!("a chunk of {size} tasks with only {remaining} left")
    };
    Err(Error::config(
        format!("error: policy `{}` returned {what}", policy.name()),
        "`Policy::next_chunk` must return between 1 and `ask.remaining` tasks; \
         no task was handed out",
    ))
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
    /// Self-scheduling: one task per chunk.
    Ss,
    /// Guided self-scheduling (Polychronopoulos and Kuck): `⌈R/N⌉` per chunk.
    Gss,
    /// Trapezoid self-scheduling (Tzen and Ni): chunks shrinking linearly.
    Tss,
    /// Practical factoring (Hummel et al.): batches of half the remaining tasks.
    Fac2,
    /// Weighted factoring (Flynn Hummel et al.): FAC2 scaled by each worker's measured speed.
    Wf,
    /// Adaptive weighted factoring, weights recomputed at every batch from processing times.
    #[serde(rename = "awf-b")]
    #[value(name = "awf-b")]
    AwfB,
    /// Adaptive weighted factoring, weights recomputed at every chunk from processing times.
    #[serde(rename = "awf-c")]
    #[value(name = "awf-c")]
    AwfC,
    /// Adaptive weighted factoring, weights recomputed at every batch from whole chunk trips.
    #[serde(rename = "awf-d")]
    #[value(name = "awf-d")]
    AwfD,
    /// Adaptive weighted factoring, weights recomputed at every chunk from whole chunk trips.
    #[serde(rename = "awf-e")]
    #[value(name = "awf-e")]
    AwfE,
    /// Adaptive factoring (Banicescu and Liu): chunks from each worker's measured mean and
    /// deviation.
    Af,
    /// Modified fixed size chunking: fixed chunks, as many as FAC2 cuts.
    Mfsc,
    /// Chosen and re-chosen while the program runs, by simulating every other policy on the
    /// measured task times and worker speeds (starts as `ss`).
    Auto,
}

impl PolicyName {
    /// Every policy, in documentation order.
    pub const ALL: [PolicyName; 17] = [
        PolicyName::Static,
        PolicyName::Fsc,
        PolicyName::Factoring,
        PolicyName::Dpf,
        PolicyName::Daf,
        PolicyName::Ss,
        PolicyName::Gss,
        PolicyName::Tss,
        PolicyName::Fac2,
        PolicyName::Wf,
        PolicyName::AwfB,
        PolicyName::AwfC,
        PolicyName::AwfD,
        PolicyName::AwfE,
        PolicyName::Af,
        PolicyName::Mfsc,
        PolicyName::Auto,
    ];

    /// The names, each in backquotes, separated by commas: for help and error messages.
    pub fn all_names() -> String {
        PolicyName::ALL
            .iter()
            .map(|p| format!("`{p}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The well-known name.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyName::Static => "static",
            PolicyName::Fsc => "fsc",
            PolicyName::Factoring => "factoring",
            PolicyName::Dpf => "dpf",
            PolicyName::Daf => "daf",
            PolicyName::Ss => "ss",
            PolicyName::Gss => "gss",
            PolicyName::Tss => "tss",
            PolicyName::Fac2 => "fac2",
            PolicyName::Wf => "wf",
            PolicyName::AwfB => "awf-b",
            PolicyName::AwfC => "awf-c",
            PolicyName::AwfD => "awf-d",
            PolicyName::AwfE => "awf-e",
            PolicyName::Af => "af",
            PolicyName::Mfsc => "mfsc",
            PolicyName::Auto => "auto",
        }
    }

    /// Whether the policy uses `factor` (so tuning it makes sense).
    pub fn uses_factor(self) -> bool {
        matches!(
            self,
            PolicyName::Fsc | PolicyName::Factoring | PolicyName::Dpf
        )
    }

    /// The policy a run starts with: `auto` starts as `ss`, which commits no task ahead of
    /// what it measured, so every worker's speed is known after its first few tasks and the
    /// tuner can choose for the rest of the first iteration.
    pub fn starting(self) -> PolicyName {
        match self {
            PolicyName::Auto => PolicyName::Ss,
            other => other,
        }
    }

    /// A fresh policy of this kind (`auto` builds its starting policy).
    pub fn build(self) -> Box<dyn Policy> {
        match self {
            PolicyName::Static => Box::new(Static::default()),
            PolicyName::Fsc => Box::new(Fsc::default()),
            PolicyName::Factoring => Box::new(Factoring::default()),
            PolicyName::Dpf => Box::new(Factoring::dpf()),
            PolicyName::Daf => Box::new(Daf::default()),
            PolicyName::Ss | PolicyName::Auto => Box::new(Ss),
            PolicyName::Gss => Box::new(Gss::default()),
            PolicyName::Tss => Box::new(Tss::default()),
            PolicyName::Fac2 => Box::new(Fac2::default()),
            PolicyName::Wf => Box::new(Wf::default()),
            PolicyName::AwfB => Box::new(Awf::new(AwfVariant::B)),
            PolicyName::AwfC => Box::new(Awf::new(AwfVariant::C)),
            PolicyName::AwfD => Box::new(Awf::new(AwfVariant::D)),
            PolicyName::AwfE => Box::new(Awf::new(AwfVariant::E)),
            PolicyName::Af => Box::new(Af::default()),
            PolicyName::Mfsc => Box::new(Mfsc::default()),
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
            PolicyName::all_names()
        )
    }
}

impl std::error::Error for UnknownPolicy {}

impl FromStr for PolicyName {
    type Err = UnknownPolicy;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        PolicyName::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownPolicy(s.to_owned()))
    }
}

/// A policy as `--policy` or `[run] policy` name it: a built-in one, or one the program
/// registers under a name of its own with
/// [`Setup::register_policy`](crate::Setup::register_policy). Flags are parsed before the
/// program is known, so a registered name is looked up only when the run starts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum PolicyChoice {
    BuiltIn(PolicyName),
    Registered(String),
}

impl From<PolicyName> for PolicyChoice {
    fn from(name: PolicyName) -> Self {
        PolicyChoice::BuiltIn(name)
    }
}

impl fmt::Display for PolicyChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyChoice::BuiltIn(name) => f.write_str(name.as_str()),
            PolicyChoice::Registered(name) => f.write_str(name),
        }
    }
}

impl FromStr for PolicyChoice {
    type Err = UnknownPolicy;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        if let Ok(name) = s.parse::<PolicyName>() {
            return Ok(PolicyChoice::BuiltIn(name));
        }
        if valid_name(s.trim()) {
            Ok(PolicyChoice::Registered(s.trim().to_owned()))
        } else {
            Err(UnknownPolicy(s.to_owned()))
        }
    }
}

impl TryFrom<String> for PolicyChoice {
    type Error = UnknownPolicy;

    fn try_from(s: String) -> std::result::Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<PolicyChoice> for String {
    fn from(choice: PolicyChoice) -> Self {
        choice.to_string()
    }
}

/// Whether `name` can name a registered policy: letters, digits, `-` and `_`, as the
/// built-in names.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Builds a fresh policy: a registered policy is built anew for every run and every
/// simulation of it, so that what one instance learns does not leak into another.
pub type PolicyFactory = Arc<dyn Fn() -> Box<dyn Policy> + Send + Sync>;

/// The policies a program registered, by name, in the order registered.
#[derive(Clone, Default)]
pub(crate) struct Registry {
    policies: Vec<(String, PolicyFactory)>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.policies.iter().map(|(name, _)| name))
            .finish()
    }
}

impl Registry {
    /// Adds `factory` under `name`.
    ///
    /// # Errors
    /// A configuration error when `name` is not a valid name, is a built-in policy's or is
    /// already registered.
    pub(crate) fn register(&mut self, name: &str, factory: PolicyFactory) -> Result<()> {
        if !valid_name(name) {
            return Err(Error::config(
                format!("error: `{name}` cannot name a policy"),
                "use letters, digits, `-` and `_`, as in `guided-tile`",
            ));
        }
        if let Ok(built_in) = name.parse::<PolicyName>() {
            return Err(Error::config(
                format!("error: policy name `{name}` is taken by the built-in policy `{built_in}`"),
                format!(
                    "register the policy under another name; the built-in names are {}",
                    PolicyName::all_names()
                ),
            ));
        }
        if self.find(name).is_some() {
            return Err(Error::config(
                format!("error: policy `{name}` is registered twice"),
                "register each policy once, under a name of its own",
            ));
        }
        self.policies.push((name.to_owned(), factory));
        Ok(())
    }

    /// Every registered policy with its factory, in the order registered.
    pub(crate) fn entries(&self) -> &[(String, PolicyFactory)] {
        &self.policies
    }

    /// The factory registered under `name` (compared as the built-in names are: case aside).
    pub(crate) fn find(&self, name: &str) -> Option<&PolicyFactory> {
        self.entry(name).map(|(_, factory)| factory)
    }

    /// `name` as the program registered it, for names typed in another case: the tuner tells
    /// policies apart by their registered names.
    pub(crate) fn registered_name(&self, name: &str) -> Option<&str> {
        self.entry(name).map(|(n, _)| n.as_str())
    }

    fn entry(&self, name: &str) -> Option<&(String, PolicyFactory)> {
        self.policies
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name.trim()))
    }

    /// A fresh policy for the registered `name`.
    ///
    /// # Errors
    /// A configuration error listing every name, built-in and registered, when none is
    /// registered under `name`.
    pub(crate) fn build(&self, name: &str) -> Result<Box<dyn Policy>> {
        if let Some(factory) = self.find(name) {
            return Ok(factory());
        }
        let registered: Vec<String> = self
            .policies
            .iter()
            .map(|(n, _)| format!("`{n}`"))
            .collect();
        let names = if registered.is_empty() {
            format!("{} (the program registers none)", PolicyName::all_names())
        } else {
            format!("{}, {}", PolicyName::all_names(), registered.join(", "))
        };
        Err(Error::config(
            format!("error: unknown policy `{name}`: expected one of {names}"),
            "pick one of these names with `--policy` or `[run] policy`, or register the policy \
             with `Setup::register_policy` in `Master::initialize`",
        ))
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
