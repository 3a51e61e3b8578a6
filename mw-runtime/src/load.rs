//! Emulated external load (`--load PATTERN`, `[run] load = "..."`): slows chosen workers in
//! chosen iterations, the way the papers' load generator does on a shared cluster.
//!
//! The papers' experiments ran a load generator beside the application: Morajko et al. (ICCS
//! 2005) put "75 % CPU load in a half of machines every eight iterations", and the POETRIES
//! N-Body runs used a *variable* and a gradually *increasing* pattern. A process competing with a
//! p % CPU hog keeps `1 − p/100` of its core, so a task that took `t` takes `t / (1 − p/100)`.
//!
//! This module reads the patterns; the emulation layer (`emulate/`) **emulates** the load: after
//! each task a loaded worker sleeps the extra `t · p / (100 − p)`, so its measured `do_work`
//! time is stretched by the right factor. Nothing else competes for the core — the emulation
//! slows the worker, not its neighbours, and needs no spare cores, which is what lets a 2-core
//! machine reproduce a cluster experiment. It is applied on the worker (any backend), from the
//! pattern every process parses from the same command line and the iteration index that
//! travels with the iteration's shared part.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::ValueError;

/// Iterations per phase of `variable` and `increasing` when the pattern does not say.
pub(crate) const DEFAULT_PERIOD: usize = 8;
/// Load of `variable` and `increasing` when the pattern does not say, in %.
pub(crate) const DEFAULT_PERCENT: f64 = 75.0;

/// Which workers carry emulated external load, in which iterations (`--load PATTERN`,
/// `[run] load = "..."`).
///
/// # Patterns
/// ```text
/// PATTERN  = "none"
///          | "variable"   [ ":" PERIOD [ ":" PERCENT ] ]      defaults: 8, 75
///          | "increasing" [ ":" PERIOD [ ":" PERCENT ] ]      defaults: 8, 75
///          | STEP { "," STEP }
/// STEP     = ITERATION ":" WORKERS ":" PERCENT
/// WORKERS  = "*" | N | N "-" M                                 (inclusive; N ≤ M)
/// PERCENT  = a decimal number in [0, 100), an optional "%" after it
/// ```
/// - `none`: no load (the default).
/// - `variable`: PERCENT load on the even-numbered workers (0, 2, 4, …: half the pool, rounded
///   up) during iterations `PERIOD..2·PERIOD`, `3·PERIOD..4·PERIOD`, …: switched on at iteration
///   8, off at 16, on at 24, … by default. The runtime activates the lowest-numbered workers
///   first, so half of the workers taking part are loaded whatever `nworkers` is.
/// - `increasing`: one more loaded worker every PERIOD iterations: worker `w` carries PERCENT
///   load from iteration `PERIOD·(w+1)` on (worker 0 from 8, workers 0–1 from 16, … by default).
/// - steps: each `ITERATION:WORKERS:PERCENT` sets the load of those workers from that iteration
///   on, until a later step changes it; workers no step names carry none. Steps apply in
///   iteration order, and in written order within one iteration. `0:0-3:75,8:0-3:0` is 75 % on
///   workers 0 to 3 during iterations 0–7, and no load from iteration 8.
///
/// # Examples
/// ```
/// use mw_runtime::LoadPattern;
///
/// let load: LoadPattern = "0:0-3:75,8:0-3:0".parse()?;
/// assert_eq!(load.percent(2, 7), 75.0);
/// assert_eq!(load.percent(2, 8), 0.0);
/// assert_eq!(load.percent(4, 0), 0.0);
///
/// let variable: LoadPattern = "variable".parse()?;
/// assert_eq!(variable.percent(0, 7), 0.0);
/// assert_eq!(variable.percent(0, 8), 75.0);
/// assert_eq!(variable.percent(1, 8), 0.0);
/// assert_eq!(variable.stretch(0, 8), 4.0);
///
/// let error = "variable:0".parse::<LoadPattern>().unwrap_err();
/// assert!(error.to_string().contains("help:"));
/// # Ok::<(), mw_runtime::ValueError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum LoadPattern {
    /// No load.
    #[default]
    None,
    /// `percent` load on the even-numbered workers, on during odd-numbered phases of `period`
    /// iterations (the first phase is unloaded).
    Variable { period: usize, percent: f64 },
    /// Worker `w` carries `percent` load from iteration `period·(w+1)` on.
    Increasing { period: usize, percent: f64 },
    /// Explicit steps, sorted by iteration (stable: written order within one iteration).
    Steps(Vec<LoadStep>),
}

/// From `iteration` on, the workers `workers` carry `percent` load.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadStep {
    pub iteration: usize,
    pub workers: LoadedWorkers,
    pub percent: f64,
}

/// The workers a step names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadedWorkers {
    /// `*`: every worker.
    All,
    /// `N-M` (or `N`, when `first == last`): workers `first..=last`.
    Range { first: usize, last: usize },
}

impl LoadedWorkers {
    /// Whether `worker` is one of them.
    pub fn contains(self, worker: usize) -> bool {
        match self {
            LoadedWorkers::All => true,
            LoadedWorkers::Range { first, last } => (first..=last).contains(&worker),
        }
    }
}

impl LoadPattern {
    /// The emulated external load on `worker` during `iteration`, in % (0 when unloaded).
    pub fn percent(&self, worker: usize, iteration: usize) -> f64 {
        match self {
            LoadPattern::None => 0.0,
            LoadPattern::Variable { period, percent } => {
                let on = (iteration / (*period).max(1)) % 2 == 1;
                if on && worker % 2 == 0 { *percent } else { 0.0 }
            }
            LoadPattern::Increasing { period, percent } => {
                let loaded = iteration / (*period).max(1);
                if worker < loaded { *percent } else { 0.0 }
            }
            LoadPattern::Steps(steps) => steps
                .iter()
                .take_while(|s| s.iteration <= iteration)
                .filter(|s| s.workers.contains(worker))
                .last()
                .map_or(0.0, |s| s.percent),
        }
    }

    /// The factor by which load stretches `worker`'s task times in `iteration`:
    /// `1 / (1 − p/100)`, 1 when unloaded.
    pub fn stretch(&self, worker: usize, iteration: usize) -> f64 {
        1.0 / (1.0 - self.percent(worker, iteration) / 100.0)
    }

    /// Refuses a pattern naming workers a run of `pool` workers (numbered from 0) does not
    /// have: a step's `N` or `N-M` past the last worker.
    ///
    /// # Errors
    /// A configuration error naming the first such step and the workers there are.
    pub fn check_pool(&self, pool: usize) -> crate::Result<()> {
        let LoadPattern::Steps(steps) = self else {
            return Ok(());
        };
        let beyond = steps.iter().find_map(|step| match step.workers {
            LoadedWorkers::Range { last, .. } if last >= pool => Some((step, last)),
            _ => None,
        });
        let Some((step, last)) = beyond else {
            return Ok(());
        };
        let there = match pool {
            1 => "worker 0".to_owned(),
            n => format!("workers 0 to {}", n - 1),
        };
        let named = LoadPattern::Steps(vec![step.clone()]);
        Err(crate::Error::config(
            format!(
                "error: `--load {named}` names worker {last}, and this run has {pool} ({there})"
            ),
            format!(
                "load {there} (`*` names them all), or start more workers (--max-workers; under \
                 MPI, more ranks)"
            ),
        ))
    }

    /// Whether the pattern never loads anyone.
    pub fn is_none(&self) -> bool {
        match self {
            LoadPattern::None => true,
            LoadPattern::Variable { percent, .. } | LoadPattern::Increasing { percent, .. } => {
                *percent == 0.0
            }
            LoadPattern::Steps(steps) => steps.iter().all(|s| s.percent == 0.0),
        }
    }
}

const GRAMMAR_HELP: &str = "use `none`, `variable[:PERIOD[:PERCENT]]`, \
     `increasing[:PERIOD[:PERCENT]]`, or steps `ITERATION:WORKERS:PERCENT,...` with WORKERS `*`, \
     `N` or `N-M` (e.g. `0:0-3:75,8:0-3:0`)";

impl FromStr for LoadPattern {
    type Err = ValueError;

    fn from_str(text: &str) -> Result<Self, ValueError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ValueError::new("the load pattern is empty", GRAMMAR_HELP));
        }
        let mut parts = text.split(':').map(str::trim);
        let head = parts.next().unwrap_or_default();
        match head {
            "none" if text == "none" => Ok(LoadPattern::None),
            "none" => Err(ValueError::new(
                format!("`none` takes no parameters, got `{text}`"),
                "write `--load none`",
            )),
            "variable" | "increasing" => {
                let rest: Vec<&str> = parts.collect();
                if rest.len() > 2 {
                    return Err(ValueError::new(
                        format!("`{text}` has too many parameters"),
                        format!("write `{head}`, `{head}:PERIOD` or `{head}:PERIOD:PERCENT`"),
                    ));
                }
                let period = match rest.first() {
                    Some(p) => parse_period(p, head)?,
                    None => DEFAULT_PERIOD,
                };
                let percent = match rest.get(1) {
                    Some(p) => parse_percent(p)?,
                    None => DEFAULT_PERCENT,
                };
                Ok(if head == "variable" {
                    LoadPattern::Variable { period, percent }
                } else {
                    LoadPattern::Increasing { period, percent }
                })
            }
            _ if head.starts_with(|c: char| c.is_ascii_digit()) => {
                let mut steps = text
                    .split(',')
                    .map(parse_step)
                    .collect::<Result<Vec<_>, _>>()?;
                steps.sort_by_key(|s| s.iteration);
                Ok(LoadPattern::Steps(steps))
            }
            _ => Err(ValueError::new(
                format!("unknown load pattern `{head}`"),
                GRAMMAR_HELP,
            )),
        }
    }
}

fn parse_period(text: &str, pattern: &str) -> Result<usize, ValueError> {
    match text.parse::<usize>() {
        Ok(0) | Err(_) => Err(ValueError::new(
            format!(
                "the period of `{pattern}` must be a whole number of iterations ≥ 1, got `{text}`"
            ),
            format!("e.g. `{pattern}:8` changes the load every 8 iterations"),
        )),
        Ok(period) => Ok(period),
    }
}

fn parse_percent(text: &str) -> Result<f64, ValueError> {
    let number = text.strip_suffix('%').unwrap_or(text).trim();
    let help = "a worker under p % external load keeps 1 − p/100 of its core, so p must be in \
                [0, 100), e.g. 75";
    match number.parse::<f64>() {
        Ok(p) if (0.0..100.0).contains(&p) => Ok(p),
        Ok(p) => Err(ValueError::new(format!("load {p} % is out of range"), help)),
        Err(_) => Err(ValueError::new(
            format!("`{text}` is not a load percentage"),
            help,
        )),
    }
}

fn parse_step(step: &str) -> Result<LoadStep, ValueError> {
    let step = step.trim();
    let help = "a step is `ITERATION:WORKERS:PERCENT` with WORKERS `*`, `N` or `N-M`, \
                e.g. `8:0-3:75`";
    let fields: Vec<&str> = step.split(':').map(str::trim).collect();
    let [iteration, workers, percent] = fields[..] else {
        return Err(ValueError::new(
            format!("step `{step}` does not have three fields"),
            help,
        ));
    };
    let iteration = iteration.parse::<usize>().map_err(|_| {
        ValueError::new(
            format!("step `{step}`: `{iteration}` is not an iteration number"),
            help,
        )
    })?;
    let number = |text: &str| {
        text.trim().parse::<usize>().map_err(|_| {
            ValueError::new(
                format!("step `{step}`: `{text}` is not a worker number"),
                help,
            )
        })
    };
    let workers = match workers.split_once('-') {
        _ if workers == "*" => LoadedWorkers::All,
        Some((first, last)) => {
            let (first, last) = (number(first)?, number(last)?);
            if first > last {
                return Err(ValueError::new(
                    format!("step `{step}`: the worker range {first}-{last} is empty"),
                    format!("write the lower number first: `{last}-{first}`"),
                ));
            }
            LoadedWorkers::Range { first, last }
        }
        None => {
            let worker = number(workers)?;
            LoadedWorkers::Range {
                first: worker,
                last: worker,
            }
        }
    };
    let percent = parse_percent(percent)
        .map_err(|e| ValueError::new(format!("step `{step}`: {}", e.message()), e.help()))?;
    Ok(LoadStep {
        iteration,
        workers,
        percent,
    })
}

impl fmt::Display for LoadPattern {
    /// The pattern in the syntax it is parsed from.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadPattern::None => f.write_str("none"),
            LoadPattern::Variable { period, percent } => write!(f, "variable:{period}:{percent}"),
            LoadPattern::Increasing { period, percent } => {
                write!(f, "increasing:{period}:{percent}")
            }
            LoadPattern::Steps(steps) => {
                for (i, step) in steps.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}:", step.iteration)?;
                    match step.workers {
                        LoadedWorkers::All => f.write_str("*")?,
                        LoadedWorkers::Range { first, last } if first == last => {
                            write!(f, "{first}")?
                        }
                        LoadedWorkers::Range { first, last } => write!(f, "{first}-{last}")?,
                    }
                    write!(f, ":{}", step.percent)?;
                }
                Ok(())
            }
        }
    }
}

impl TryFrom<String> for LoadPattern {
    type Error = ValueError;

    fn try_from(text: String) -> Result<Self, ValueError> {
        text.parse()
    }
}

impl From<LoadPattern> for String {
    fn from(pattern: LoadPattern) -> String {
        pattern.to_string()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn parse(text: &str) -> LoadPattern {
        text.parse().unwrap()
    }

    fn error(text: &str) -> String {
        text.parse::<LoadPattern>().unwrap_err().to_string()
    }

    /// The loaded workers among `0..pool` in `iteration`.
    fn loaded(pattern: &LoadPattern, pool: usize, iteration: usize) -> Vec<usize> {
        (0..pool)
            .filter(|&w| pattern.percent(w, iteration) > 0.0)
            .collect()
    }

    #[test]
    fn named_patterns_and_their_parameters() {
        assert_eq!(parse("none"), LoadPattern::None);
        assert_eq!(parse(" none "), LoadPattern::None);
        assert_eq!(
            parse("variable"),
            LoadPattern::Variable {
                period: 8,
                percent: 75.0
            }
        );
        assert_eq!(
            parse("variable:4"),
            LoadPattern::Variable {
                period: 4,
                percent: 75.0
            }
        );
        assert_eq!(
            parse("increasing:2:50%"),
            LoadPattern::Increasing {
                period: 2,
                percent: 50.0
            }
        );
        assert_eq!(parse("increasing:3:12.5").percent(0, 3), 12.5);
    }

    #[test]
    fn steps_are_sorted_by_iteration_keeping_written_order() {
        let pattern = parse("8:0-3:0, 0:0-3:75,0:2:50,5:*:10");
        let LoadPattern::Steps(steps) = &pattern else {
            panic!("{pattern:?}")
        };
        let order: Vec<_> = steps.iter().map(|s| (s.iteration, s.percent)).collect();
        assert_eq!(order, [(0, 75.0), (0, 50.0), (5, 10.0), (8, 0.0)]);
        assert_eq!(pattern.to_string(), "0:0-3:75,0:2:50,5:*:10,8:0-3:0");
        assert_eq!(parse(&pattern.to_string()), pattern);
    }

    #[test]
    fn display_round_trips() {
        for text in ["none", "variable:8:75", "increasing:3:12.5", "0:1:75,4:*:0"] {
            assert_eq!(parse(text).to_string(), text);
        }
    }

    #[test]
    fn variable_loads_even_workers_in_odd_phases() {
        let pattern = parse("variable");
        for iteration in 0..8 {
            assert_eq!(loaded(&pattern, 5, iteration), Vec::<usize>::new());
        }
        for iteration in 8..16 {
            assert_eq!(loaded(&pattern, 5, iteration), [0, 2, 4]);
            assert_eq!(pattern.percent(0, iteration), 75.0);
        }
        assert!(loaded(&pattern, 5, 16).is_empty());
        assert_eq!(loaded(&pattern, 4, 24), [0, 2]);
        let short = parse("variable:2:50");
        let on: Vec<bool> = (0..8).map(|i| short.percent(0, i) == 50.0).collect();
        assert_eq!(on, [false, false, true, true, false, false, true, true]);
    }

    #[test]
    fn increasing_loads_one_more_worker_each_period() {
        let pattern = parse("increasing");
        assert!(loaded(&pattern, 4, 7).is_empty());
        assert_eq!(loaded(&pattern, 4, 8), [0]);
        assert_eq!(loaded(&pattern, 4, 15), [0]);
        assert_eq!(loaded(&pattern, 4, 16), [0, 1]);
        assert_eq!(loaded(&pattern, 4, 39), [0, 1, 2, 3]);
        assert_eq!(loaded(&pattern, 4, 1000), [0, 1, 2, 3]);
        let fast = parse("increasing:1:20");
        assert_eq!(loaded(&fast, 8, 3), [0, 1, 2]);
    }

    #[test]
    fn steps_hold_until_changed() {
        let pattern = parse("0:0-3:75,8:0-3:0");
        assert_eq!(loaded(&pattern, 6, 0), [0, 1, 2, 3]);
        assert_eq!(loaded(&pattern, 6, 7), [0, 1, 2, 3]);
        assert!(loaded(&pattern, 6, 8).is_empty());
        assert!(loaded(&pattern, 6, 100).is_empty());

        let pattern = parse("2:1:50,4:*:25,4:3:0,6:1-2:0");
        assert!(loaded(&pattern, 4, 1).is_empty());
        assert_eq!(loaded(&pattern, 4, 2), [1]);
        assert_eq!(pattern.percent(1, 3), 50.0);
        assert_eq!(loaded(&pattern, 4, 4), [0, 1, 2]);
        assert_eq!(pattern.percent(1, 5), 25.0);
        assert_eq!(loaded(&pattern, 4, 6), [0]);
        // A later step in the same iteration wins.
        assert_eq!(parse("0:0:10,0:0:20").percent(0, 0), 20.0);
    }

    #[test]
    fn steps_naming_workers_the_run_does_not_have_are_refused() {
        let load: LoadPattern = "0:*:50,2:0-3:75".parse().unwrap();
        load.check_pool(4).unwrap();
        let err = load.check_pool(3).unwrap_err().to_string();
        assert_eq!(
            err,
            "error: `--load 2:0-3:75` names worker 3, and this run has 3 (workers 0 to 2)\nhelp: \
             load workers 0 to 2 (`*` names them all), or start more workers (--max-workers; \
             under MPI, more ranks)"
        );
        let one: LoadPattern = "0:1:50".parse().unwrap();
        assert!(
            one.check_pool(1)
                .unwrap_err()
                .to_string()
                .contains("(worker 0)")
        );
        // The named patterns name no worker.
        for pattern in ["variable", "increasing:2", "none"] {
            pattern
                .parse::<LoadPattern>()
                .unwrap()
                .check_pool(1)
                .unwrap();
        }
    }

    #[test]
    fn stretch_is_the_inverse_of_the_core_left() {
        let pattern = parse("0:0:75,0:1:50,0:2:0");
        assert_eq!(pattern.stretch(0, 0), 4.0);
        assert_eq!(pattern.stretch(1, 0), 2.0);
        assert_eq!(pattern.stretch(2, 0), 1.0);
        assert_eq!(LoadPattern::None.stretch(9, 9), 1.0);
        assert!(LoadPattern::None.is_none());
        assert!(parse("0:*:0").is_none());
        assert!(!parse("variable").is_none());
    }

    #[test]
    fn bad_patterns_say_what_is_wrong_and_how_to_fix_it() {
        let cases = [
            ("", "empty"),
            ("busy", "unknown load pattern `busy`"),
            ("none:3", "takes no parameters"),
            ("variable:0", "must be a whole number of iterations"),
            ("variable:x", "got `x`"),
            ("variable:8:75:1", "too many parameters"),
            ("increasing:8:100", "load 100 % is out of range"),
            ("variable:8:-5", "load -5 % is out of range"),
            ("0:0-3:100", "step `0:0-3:100`: load 100 % is out of range"),
            ("0:0-3:-1", "out of range"),
            ("0:0-3:NaN", "out of range"),
            ("0:0-3:inf", "out of range"),
            ("0:0-3:lots", "`lots` is not a load percentage"),
            ("0:3-1:50", "the worker range 3-1 is empty"),
            ("0:a:50", "`a` is not a worker number"),
            ("0:1-:50", "`` is not a worker number"),
            ("x:1:50", "unknown load pattern"),
            ("1x:1:50", "`1x` is not an iteration number"),
            ("0:1", "does not have three fields"),
            ("0:1:50,", "does not have three fields"),
            ("0:1:50:7", "does not have three fields"),
            ("99999999999999999999999:1:50", "is not an iteration number"),
        ];
        for (text, expected) in cases {
            let e = error(text);
            assert!(e.contains(expected), "{text:?}: {e}");
            assert!(e.contains("\nhelp: "), "{text:?}: {e}");
        }
    }

    #[test]
    fn serde_reads_and_writes_the_text_form() {
        #[derive(Debug, Deserialize, Serialize, PartialEq)]
        struct RunTable {
            load: LoadPattern,
        }
        let run: RunTable = toml::from_str("load = \"variable:4\"").unwrap();
        assert_eq!(
            run.load,
            LoadPattern::Variable {
                period: 4,
                percent: 75.0
            }
        );
        assert_eq!(
            toml::to_string(&run).unwrap().trim(),
            "load = \"variable:4:75\""
        );
        let e = toml::from_str::<RunTable>("load = \"0:0:100\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("out of range") && e.contains("help:"), "{e}");
    }
}
