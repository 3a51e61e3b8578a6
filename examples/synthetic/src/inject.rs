//! Faults on purpose (`--inject`), to watch the runtime survive them: a comma list of
//! `panic:W@I` (worker W panics), `error:W@I` (its `do_work` returns an error), `hang:W@I` (it
//! stops answering for good), `exit:W@I` (its process dies abruptly: `abort` under MPI, the
//! end of its thread on the local backend) and `master-panic@I` (the master panics in
//! `recover`). A worker's fault strikes once, at its first task from iteration I on; several
//! faults of one worker strike in turn, one a task, in the order of their iterations (of the
//! list within one iteration). A fault naming a worker the run does not have is refused when
//! the run starts.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Panic,
    Error,
    Hang,
    Exit,
    MasterPanic,
}

/// One fault: what, on which worker (none for the master's), from which iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    pub kind: Kind,
    pub worker: Option<usize>,
    pub iteration: u64,
}

/// The faults of a run.
#[derive(Debug, Clone, Default)]
pub struct Inject {
    pub faults: Vec<Fault>,
    /// Those that struck already, by their place in the list: each strikes once, also on a
    /// worker built again after its panic (its clones share this).
    struck: Arc<Mutex<HashSet<usize>>>,
}

impl Inject {
    /// Worker `worker`'s fault due at a task of iteration `iteration`, if any, striking it:
    /// of those due and not struck yet, the one of the earliest iteration (first in the list
    /// among equals).
    pub fn strike(&self, worker: usize, iteration: u64) -> Option<Kind> {
        let mut struck = self.struck.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, fault) = self
            .faults
            .iter()
            .enumerate()
            .filter(|(at, f)| {
                f.worker == Some(worker)
                    && f.iteration <= iteration
                    && f.kind != Kind::MasterPanic
                    && !struck.contains(at)
            })
            .min_by_key(|(at, f)| (f.iteration, *at))?;
        struck.insert(at);
        Some(fault.kind)
    }

    /// Refuses faults of workers a run of `pool` workers does not have (numbered from 0).
    ///
    /// # Errors
    /// The first such fault, with the workers there are.
    pub fn check_pool(&self, pool: usize) -> mw::Result<()> {
        let Some(fault) = self
            .faults
            .iter()
            .find(|f| f.worker.is_some_and(|w| w >= pool))
        else {
            return Ok(());
        };
        let worker = fault.worker.unwrap_or_default();
        let one = Inject {
            faults: vec![*fault],
            struck: Arc::default(),
        };
        let there = match pool {
            1 => "worker 0".to_owned(),
            n => format!("workers 0 to {}", n - 1),
        };
        Err(mw::Error::config(
            format!(
                "error: `--inject {one}` names worker {worker}, and this run has {pool} ({there})"
            ),
            format!(
                "inject into {there}, or start more workers (--max-workers; under MPI, more ranks)"
            ),
        ))
    }

    /// Whether the master panics in `recover` in iteration `iteration`.
    pub fn master_panics(&self, iteration: u64) -> bool {
        self.faults
            .iter()
            .any(|f| f.kind == Kind::MasterPanic && f.iteration == iteration)
    }

    /// Whether there is anything to inject.
    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }
}

/// Does what `kind` says, on worker `worker`: returns only for `Error`, with its message.
pub fn act(kind: Kind, worker: usize, iteration: u64) -> String {
    match kind {
        Kind::Panic => panic!("injected: worker {worker} panics in iteration {iteration}"),
        Kind::Hang => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        Kind::Exit => mw::exit_worker(),
        Kind::Error | Kind::MasterPanic => {
            format!("injected: worker {worker} fails a task in iteration {iteration}")
        }
    }
}

impl FromStr for Inject {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut faults = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            faults.push(fault(part)?);
        }
        if faults.is_empty() {
            return Err("no fault given: e.g. `panic:1@2,hang:0@3`".into());
        }
        Ok(Inject {
            faults,
            struck: Arc::default(),
        })
    }
}

fn fault(part: &str) -> Result<Fault, String> {
    let bad = |why: &str| {
        format!(
            "`{part}`: {why}; a fault is `panic:W@I`, `error:W@I`, `hang:W@I`, `exit:W@I` or \
             `master-panic@I` (W a worker, I an iteration)"
        )
    };
    let (what, iteration) = part.split_once('@').ok_or_else(|| bad("no `@ITERATION`"))?;
    let iteration: u64 = iteration
        .trim()
        .parse()
        .map_err(|_| bad("the iteration is not a whole number"))?;
    if what.trim() == "master-panic" {
        return Ok(Fault {
            kind: Kind::MasterPanic,
            worker: None,
            iteration,
        });
    }
    let (kind, worker) = what.split_once(':').ok_or_else(|| bad("no `:WORKER`"))?;
    let kind = match kind.trim() {
        "panic" => Kind::Panic,
        "error" => Kind::Error,
        "hang" => Kind::Hang,
        "exit" => Kind::Exit,
        _ => return Err(bad("unknown kind of fault")),
    };
    let worker = worker
        .trim()
        .parse()
        .map_err(|_| bad("the worker is not a whole number"))?;
    Ok(Fault {
        kind,
        worker: Some(worker),
        iteration,
    })
}

impl fmt::Display for Inject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, fault) in self.faults.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            let kind = match fault.kind {
                Kind::Panic => "panic",
                Kind::Error => "error",
                Kind::Hang => "hang",
                Kind::Exit => "exit",
                Kind::MasterPanic => "master-panic",
            };
            match fault.worker {
                Some(w) => write!(f, "{kind}:{w}@{}", fault.iteration)?,
                None => write!(f, "{kind}@{}", fault.iteration)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_back() {
        let text = "panic:1@2,error:0@0,hang:3@1,exit:2@4,master-panic@5";
        let inject: Inject = text.parse().unwrap();
        assert_eq!(inject.faults.len(), 5);
        assert_eq!(inject.to_string(), text);
        assert!(inject.master_panics(5) && !inject.master_panics(4));
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        for (text, says) in [
            ("panic:1", "no `@ITERATION`"),
            ("panic@1", "no `:WORKER`"),
            ("melt:1@1", "unknown kind"),
            ("panic:x@1", "worker is not"),
            ("panic:1@-1", "iteration is not"),
            ("", "no fault given"),
        ] {
            let err = text.parse::<Inject>().unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn several_faults_of_one_worker_strike_in_turn() {
        let inject: Inject = "error:1@3,panic:1@1,error:1@1,hang:2@0".parse().unwrap();
        assert_eq!(inject.strike(1, 0), None);
        assert_eq!(inject.strike(1, 1), Some(Kind::Panic));
        assert_eq!(inject.strike(1, 1), Some(Kind::Error));
        assert_eq!(inject.strike(1, 2), None);
        assert_eq!(inject.strike(1, 5), Some(Kind::Error));
        assert_eq!(inject.strike(1, 5), None);
        assert_eq!(inject.strike(2, 5), Some(Kind::Hang));
    }

    #[test]
    fn faults_of_workers_the_run_does_not_have_are_refused() {
        let inject: Inject = "panic:1@0,error:4@2,master-panic@9".parse().unwrap();
        inject.check_pool(5).unwrap();
        let err = inject.check_pool(4).unwrap_err().to_string();
        assert_eq!(
            err,
            "error: `--inject error:4@2` names worker 4, and this run has 4 (workers 0 to 3)\n\
             help: inject into workers 0 to 3, or start more workers (--max-workers; under MPI, \
             more ranks)"
        );
    }

    #[test]
    fn a_fault_strikes_once_from_its_iteration_on() {
        let inject: Inject = "error:7@2".parse().unwrap();
        assert_eq!(inject.strike(7, 1), None);
        assert_eq!(inject.strike(6, 2), None);
        assert_eq!(inject.strike(7, 3), Some(Kind::Error));
        assert_eq!(inject.strike(7, 3), None);
    }
}
