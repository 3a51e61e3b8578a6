//! The well-known tunables (`nworkers`, `factor`, `policy`) and the decisions that change them.
//!
//! The master reads one [`Tunables`] value at every iteration boundary. Changes requested in the
//! meantime — by the tuner, the application or an external controller — wait in a
//! [`TunablesHandle`] and take effect together at the next boundary, never mid-iteration.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::policy::PolicyName;

/// The values the runtime tunes while the program runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tunables {
    /// Workers taking part in an iteration, `1..=pool`.
    pub nworkers: usize,
    /// How work is cut into chunks, `0 < factor ≤ 1`.
    pub factor: f64,
    /// The distribution policy.
    pub policy: PolicyName,
}

/// One requested change to a tunable.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// New `nworkers`.
    Nworkers(usize),
    /// New `factor`.
    Factor(f64),
    /// New `policy`.
    Policy(PolicyName),
}

impl Change {
    /// The tunable's well-known name.
    pub fn tunable(&self) -> &'static str {
        match self {
            Change::Nworkers(_) => "nworkers",
            Change::Factor(_) => "factor",
            Change::Policy(_) => "policy",
        }
    }

    /// Checks the value against its range, for a pool of `pool` workers.
    ///
    /// # Errors
    /// A configuration error naming the tunable, the value and the valid range.
    pub fn validate(&self, pool: usize) -> Result<()> {
        match *self {
            Change::Nworkers(n) if n == 0 || n > pool => Err(Error::config(
                format!("error: `nworkers` = {n} is out of range"),
                format!("choose between 1 and the pool of {pool} workers (see --max-workers)"),
            )),
            Change::Factor(f) => check_factor(f),
            Change::Policy(PolicyName::Auto) => Err(Error::config(
                "error: `policy` cannot be set to `auto` while the program runs",
                "`auto` is chosen when the run starts (`--policy auto`); set a policy by name, \
                 e.g. `wf`",
            )),
            _ => Ok(()),
        }
    }

    /// Parses a change from a tunable's name and a value in text, as an external controller sends
    /// them.
    ///
    /// # Errors
    /// When the name is not a tunable or the value does not parse.
    pub fn parse(name: &str, value: &str) -> Result<Change> {
        let bad = |expected: &str| {
            Error::config(
                format!("error: `{value}` is not a valid value for `{name}`"),
                format!("`{name}` takes {expected}"),
            )
        };
        match name {
            "nworkers" => value
                .parse()
                .map(Change::Nworkers)
                .map_err(|_| bad("a whole number of workers")),
            "factor" => value
                .parse()
                .map(Change::Factor)
                .map_err(|_| bad("a number in (0, 1]")),
            "policy" => value
                .parse()
                .map(Change::Policy)
                .map_err(|_| bad(&format!("one of {}", PolicyName::ALL_NAMES))),
            _ => Err(Error::config(
                format!("error: no tunable is named `{name}`"),
                "the tunables are `nworkers`, `factor` and `policy`",
            )),
        }
    }

    fn value(&self) -> serde_json::Value {
        match self {
            Change::Nworkers(n) => (*n).into(),
            Change::Factor(f) => (*f).into(),
            Change::Policy(p) => p.as_str().into(),
        }
    }
}

/// Refuses factors outside `(0, 1]`.
pub(crate) fn check_factor(factor: f64) -> Result<()> {
    if factor > 0.0 && factor <= 1.0 {
        Ok(())
    } else {
        Err(Error::config(
            format!("error: `factor` = {factor} is out of range"),
            "the factor is a fraction of the remaining work: choose a value in (0, 1], e.g. 0.5",
        ))
    }
}

impl Tunables {
    /// Applies `change`, returning the decision that records it, or `None` when the value does
    /// not change.
    pub(crate) fn apply(
        &mut self,
        change: &Change,
        iteration: usize,
        why: &Why,
    ) -> Option<Decision> {
        let from = match change {
            Change::Nworkers(n) if *n != self.nworkers => {
                std::mem::replace(&mut self.nworkers, *n).into()
            }
            Change::Factor(f) if *f != self.factor => {
                std::mem::replace(&mut self.factor, *f).into()
            }
            Change::Policy(p) if *p != self.policy => {
                std::mem::replace(&mut self.policy, *p).as_str().into()
            }
            _ => return None,
        };
        Some(Decision {
            iteration,
            tasks_done: None,
            tunable: change.tunable().to_owned(),
            from,
            to: change.value(),
            reason: why.reason.clone(),
            predicted_ms: why.predicted_ms,
            measured_ms: why.measured_ms,
            details: why.details.clone(),
        })
    }

    /// The value of a tunable by its well-known name, as text.
    pub fn get(&self, name: &str) -> Option<String> {
        match name {
            "nworkers" => Some(self.nworkers.to_string()),
            "factor" => Some(self.factor.to_string()),
            "policy" => Some(self.policy.to_string()),
            _ => None,
        }
    }
}

/// Who asked for a change: the tuner's own changes are watched and may be rolled back; a change
/// from the application or from outside holds the tunable at its value (the tuner leaves it
/// alone until it is released).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Tuner,
    Application,
    External,
}

/// Why a change is requested: the text logged with the decision, and what the model said.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Why {
    pub source: Source,
    pub reason: String,
    pub predicted_ms: Option<f64>,
    pub measured_ms: Option<f64>,
    pub details: serde_json::Value,
}

impl Why {
    pub(crate) fn plain(source: Source, reason: &str) -> Why {
        Why {
            source,
            reason: reason.to_owned(),
            predicted_ms: None,
            measured_ms: None,
            details: serde_json::Value::Null,
        }
    }
}

/// A change of a tunable, with why it was made. Listed under `decisions` in the metrics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The first iteration that runs with the new value, or, for a change made inside an
    /// iteration, that iteration.
    pub iteration: usize,
    /// For a change made inside an iteration: how many of its tasks were done when it was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_done: Option<usize>,
    /// `nworkers`, `factor` or `policy`.
    pub tunable: String,
    /// Value before.
    pub from: serde_json::Value,
    /// Value after.
    pub to: serde_json::Value,
    /// Why: the tuner's reasoning, `application`, or `external`.
    pub reason: String,
    /// The model's prediction of the iteration time with the new value, in ms (tuner only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_ms: Option<f64>,
    /// The measured iteration time the decision was taken on, in ms (tuner only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_ms: Option<f64>,
    /// The inputs and the model's numbers behind a tuner's decision.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
}

/// A shared handle on the tunables of a running program: read the values in force, request
/// changes that take effect at the next iteration boundary.
///
/// # Examples
/// ```no_run
/// # fn f(setup: &mw_runtime::Setup) -> mw_runtime::Result<()> {
/// let tunables = setup.tunables();
/// tunables.request(mw_runtime::Change::Nworkers(4), "application")?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TunablesHandle {
    inner: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    current: Tunables,
    pool: usize,
    pending: Vec<(Change, Why)>,
    /// Tunables set by the application or from outside: the tuner leaves them alone.
    held: Vec<&'static str>,
}

/// A decision taken at an iteration boundary, with who asked for it.
#[derive(Debug, Clone)]
pub(crate) struct Applied {
    pub decision: Decision,
    pub source: Source,
}

impl TunablesHandle {
    pub(crate) fn new(current: Tunables, pool: usize) -> Self {
        TunablesHandle {
            inner: Arc::new(Mutex::new(State {
                current,
                pool,
                pending: Vec::new(),
                held: Vec::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent under every operation, so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tunables in force for the current iteration.
    pub fn current(&self) -> Tunables {
        self.lock().current.clone()
    }

    /// Requests a change for the next iteration boundary; `reason` is logged with the decision.
    /// The tuner then leaves that tunable at the value asked for.
    ///
    /// # Errors
    /// When the value is out of range; nothing is queued then.
    pub fn request(&self, change: Change, reason: &str) -> Result<()> {
        self.request_why(change, Why::plain(Source::Application, reason))
    }

    /// Workers started: the most that can take part.
    pub fn pool(&self) -> usize {
        self.lock().pool
    }

    /// Queues `change`, replacing any change of the same tunable still waiting: the last value
    /// asked for wins, so a flood of requests makes one decision per tunable and boundary.
    pub(crate) fn request_why(&self, change: Change, why: Why) -> Result<()> {
        let mut state = self.lock();
        change.validate(state.pool)?;
        let name = change.tunable();
        state.pending.retain(|(c, _)| c.tunable() != name);
        state.pending.push((change, why));
        Ok(())
    }

    /// Queues a change the tuner proposes, unless the application or an external controller
    /// holds that tunable or has already asked for a change of it at this boundary; returns
    /// whether it was queued.
    pub(crate) fn request_tuned(&self, change: Change, why: Why) -> bool {
        let mut state = self.lock();
        let name = change.tunable();
        let taken = state.held.contains(&name)
            || state
                .pending
                .iter()
                .any(|(c, w)| c.tunable() == name && w.source != Source::Tuner);
        if taken || change.validate(state.pool).is_err() {
            return false;
        }
        state.pending.push((change, why));
        true
    }

    /// Hands a held tunable back to the tuner (`set NAME auto` on the control endpoint).
    ///
    /// # Errors
    /// When `name` is not a tunable.
    pub(crate) fn release(&self, name: &str) -> Result<()> {
        let name = tunable_name(name)?;
        let mut state = self.lock();
        state.held.retain(|&h| h != name);
        Ok(())
    }

    /// Tunables the tuner must leave alone.
    pub(crate) fn held(&self) -> Vec<&'static str> {
        self.lock().held.clone()
    }

    /// Applies the queued changes at the start of `iteration`, returning the decisions taken
    /// (at most one per tunable: a later request replaced an earlier one); changes from the
    /// application or from outside hold their tunable.
    pub(crate) fn apply_pending(&self, iteration: usize) -> Vec<Applied> {
        let mut state = self.lock();
        let pending = std::mem::take(&mut state.pending);
        let mut applied = Vec::new();
        for (change, why) in &pending {
            if why.source != Source::Tuner && !state.held.contains(&change.tunable()) {
                state.held.push(change.tunable());
            }
            if let Some(decision) = state.current.apply(change, iteration, why) {
                applied.push(Applied {
                    decision,
                    source: why.source,
                });
            }
        }
        applied
    }
}

impl TunablesHandle {
    /// Applies the tuner's queued changes at once, inside `iteration` with `tasks_done` of its
    /// tasks done; requests from the application or from outside wait for the boundary.
    pub(crate) fn apply_tuned_now(&self, iteration: usize, tasks_done: usize) -> Vec<Applied> {
        let mut state = self.lock();
        let (tuned, others): (Vec<_>, Vec<_>) = std::mem::take(&mut state.pending)
            .into_iter()
            .partition(|(_, why)| why.source == Source::Tuner);
        state.pending = others;
        let mut applied = Vec::new();
        for (change, why) in &tuned {
            if let Some(mut decision) = state.current.apply(change, iteration, why) {
                decision.tasks_done = Some(tasks_done);
                applied.push(Applied {
                    decision,
                    source: why.source,
                });
            }
        }
        applied
    }
}

/// The `&'static` name of a tunable.
fn tunable_name(name: &str) -> Result<&'static str> {
    ["nworkers", "factor", "policy"]
        .into_iter()
        .find(|&n| n == name)
        .ok_or_else(|| {
            Error::config(
                format!("error: no tunable is named `{name}`"),
                "the tunables are `nworkers`, `factor` and `policy`",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_requests_makes_one_decision_per_tunable_the_last_value_winning() {
        let start = Tunables {
            nworkers: 2,
            factor: 0.5,
            policy: PolicyName::Daf,
        };
        let handle = TunablesHandle::new(start, 8);
        let external = || Why::plain(Source::External, "external");
        for i in 0..100_000 {
            let change = Change::Nworkers(1 + i % 8);
            handle.request_why(change, external()).unwrap();
            let factor = Change::Factor(if i % 2 == 0 { 0.25 } else { 0.75 });
            handle.request_why(factor, external()).unwrap();
        }
        let applied = handle.apply_pending(1);
        let decided: Vec<(&str, &serde_json::Value)> = applied
            .iter()
            .map(|a| (a.decision.tunable.as_str(), &a.decision.to))
            .collect();
        // The last requests were nworkers 8 (99,999 % 8 = 7) and factor 0.75.
        assert_eq!(
            decided,
            [
                ("nworkers", &serde_json::Value::from(8)),
                ("factor", &serde_json::Value::from(0.75))
            ]
        );
        assert_eq!(handle.current().nworkers, 8);
        assert!(handle.apply_pending(2).is_empty());
    }
}
