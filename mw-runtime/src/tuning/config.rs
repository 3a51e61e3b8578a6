//! The `[tuning]` table of `Mw.toml` and the `--tuning` / `--control` flags.

use std::fmt;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Which tunables the in-process tuner may change (`--tuning`).
///
/// The default is `on`: a program tunes itself unless told not to. Runs that need fixed settings
/// (reproducing a measurement, comparing policies) say `--tuning off`; `--workers` and `--factor`
/// are then the values used throughout, otherwise they are where tuning starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
#[value(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TuneMode {
    /// Tune `factor` and `nworkers`.
    #[default]
    On,
    /// Keep every tunable as configured (external control still works).
    Off,
    /// Tune `factor` only (for `fsc`, `factoring` and `dpf`).
    Factor,
    /// Tune `nworkers` only.
    Workers,
}

impl TuneMode {
    /// Whether the tuner may change `factor`.
    pub fn tunes_factor(self) -> bool {
        matches!(self, TuneMode::On | TuneMode::Factor)
    }

    /// Whether the tuner may change `nworkers`.
    pub fn tunes_workers(self) -> bool {
        matches!(self, TuneMode::On | TuneMode::Workers)
    }
}

impl fmt::Display for TuneMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TuneMode::On => "on",
            TuneMode::Off => "off",
            TuneMode::Factor => "factor",
            TuneMode::Workers => "workers",
        })
    }
}

/// What the choice of `nworkers` minimizes (see the tuner's README).
///
/// Unless configured, it follows what a parked worker costs: see [`Objective::by_cost`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
#[value(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Objective {
    /// The performance index `Pi(n) = n·Tt(n)²/Tc`: the best time per resource.
    Index,
    /// The iteration time `Tt(n)`, whatever the number of workers it takes.
    Time,
}

impl Objective {
    /// The objective when none is configured: `index` when a parked worker can be released
    /// (a thread that waits costs no core), `time` when it keeps what it holds (an MPI rank
    /// launched by mpirun or srun keeps its allocation, so fewer workers only slow the run).
    pub fn by_cost(parked_released: bool) -> Objective {
        if parked_released {
            Objective::Index
        } else {
            Objective::Time
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Objective::Index => "index",
            Objective::Time => "time",
        })
    }
}

/// The `[tuning]` table of `Mw.toml`; every key is optional.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TuningSection {
    /// `on`, `off`, `factor` or `workers`.
    pub tune: Option<TuneMode>,
    /// The fewest workers the tuner chooses.
    pub min_workers: Option<usize>,
    /// The most workers the tuner chooses (at most the pool, `[run] max_workers`).
    pub max_workers: Option<usize>,
    /// Iterations a proposal must hold before it is acted on.
    pub persistence: Option<usize>,
    /// `index` or `time` [default: by what a parked worker costs].
    pub objective: Option<Objective>,
    /// Control endpoint: a Unix socket path or `127.0.0.1:PORT`.
    pub control: Option<String>,
}

/// The tuner's settings after `Mw.toml` and flags are merged.
#[derive(Debug, Clone, PartialEq)]
pub struct TuningConfig {
    pub mode: TuneMode,
    /// Lower end of the range of `nworkers` the tuner searches (default 1).
    pub min_workers: usize,
    /// Upper end (default: the pool).
    pub max_workers: Option<usize>,
    /// Consecutive iterations a proposal must hold before it is applied; also how many
    /// iterations a change is watched before it is kept or rolled back (default 2).
    pub persistence: usize,
    /// `None`: chosen by what a parked worker costs ([`Objective::by_cost`]).
    pub objective: Option<Objective>,
}

impl Default for TuningConfig {
    fn default() -> Self {
        TuningConfig {
            mode: TuneMode::On,
            min_workers: 1,
            max_workers: None,
            persistence: 2,
            objective: None,
        }
    }
}

impl TuningConfig {
    /// Fixed settings: the tuner changes nothing.
    pub fn off() -> Self {
        TuningConfig {
            mode: TuneMode::Off,
            ..TuningConfig::default()
        }
    }

    /// Merges a `[tuning]` table and the `--tuning` and `--objective` flags over the defaults.
    pub(crate) fn merge(
        file: &TuningSection,
        tune: Option<TuneMode>,
        objective: Option<Objective>,
    ) -> TuningConfig {
        let defaults = TuningConfig::default();
        TuningConfig {
            mode: tune.or(file.tune).unwrap_or(defaults.mode),
            min_workers: file.min_workers.unwrap_or(defaults.min_workers),
            max_workers: file.max_workers,
            persistence: file.persistence.unwrap_or(defaults.persistence),
            objective: objective.or(file.objective),
        }
    }

    /// Checks the ranges.
    ///
    /// # Errors
    /// The first value out of range, with what to do.
    pub fn validate(&self) -> Result<()> {
        if self.min_workers == 0 {
            return Err(Error::config(
                "error: `[tuning] min_workers` is 0",
                "the tuner needs at least one worker: set `min_workers` to 1 or more",
            ));
        }
        if let Some(max) = self.max_workers {
            if max < self.min_workers {
                return Err(Error::config(
                    format!(
                        "error: `[tuning] max_workers` = {max} is less than `min_workers` = {}",
                        self.min_workers
                    ),
                    "raise `max_workers` or lower `min_workers` in `[tuning]`",
                ));
            }
        }
        if self.persistence == 0 {
            return Err(Error::config(
                "error: `[tuning] persistence` is 0",
                "a proposal must hold for at least one iteration: set `persistence` to 1 or more \
                 (default 2)",
            ));
        }
        Ok(())
    }

    /// The objective of a run whose parked workers can (`true`) or cannot be released, and
    /// why it is the one, for the summary: `configured`, or what a parked worker costs.
    pub fn objective_for(&self, parked_released: bool, backend: &str) -> (Objective, String) {
        if let Some(objective) = self.objective {
            return (objective, "configured".to_owned());
        }
        let workers = match backend {
            "mpi" => "MPI ranks",
            "local" => "worker threads",
            _ => "workers",
        };
        let why = if parked_released {
            format!("parked {workers} are released")
        } else {
            format!("parked {workers} keep their allocation")
        };
        (Objective::by_cost(parked_released), why)
    }

    /// The range of `nworkers` the tuner searches, for a pool of `pool` workers.
    pub fn range(&self, pool: usize) -> (usize, usize) {
        let hi = self.max_workers.unwrap_or(pool).clamp(1, pool.max(1));
        (self.min_workers.clamp(1, hi), hi)
    }
}
