//! The tunables: one registry holds the runtime's own (`nworkers`, `factor`, `policy`) and
//! those a program declares, each entry with its name, its range, when a change takes effect
//! and its value in force; and the decisions that change them.
//!
//! The master reads one [`Tunables`] value at every iteration boundary. Changes requested in the
//! meantime — by the tuner, the application or an external controller — wait in a
//! [`TunablesHandle`] and take effect together at the next boundary; only the tuner's changes
//! of a tunable that takes effect inside an iteration ([`TakesEffect`]) are applied at a
//! checkpoint.

use std::fmt;
use std::marker::PhantomData;
use std::ops::RangeInclusive;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
pub(crate) use crate::metrics::Decision;
use crate::policy::{PolicyChoice, PolicyName};

/// The runtime's tunables in force: what the master reads at every iteration boundary (the
/// values of the registry's first three entries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tunables {
    /// Workers taking part in an iteration, `1..=pool`.
    pub nworkers: usize,
    /// How work is cut into chunks, `0 < factor ≤ 1`.
    pub factor: f64,
    /// The distribution policy: a built-in one, or with `--policy auto` one the program
    /// registered ([`Setup::register_policy`](crate::Setup::register_policy)).
    pub policy: PolicyChoice,
}

/// A tunable: an entry of the registry, the runtime's own or one the program declared. Obtain
/// it from a [`TunableId`] ([`TunableId::tunable`]); the [`TunablesHandle`] knows its name and
/// when a change of it takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tunable(usize);

impl Tunable {
    pub(crate) const NWORKERS: Tunable = Tunable(0);
    pub(crate) const FACTOR: Tunable = Tunable(1);
    pub(crate) const POLICY: Tunable = Tunable(2);
}

/// When a change of a tunable takes effect: the tuner judges a change only on the work done
/// once it has, so a change made inside an iteration is judged on the tasks that follow it only
/// when those tasks run with the new value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TakesEffect {
    /// At once: the tasks answered from then on run with it (`nworkers`: workers join or leave
    /// when it changes).
    AtOnce,
    /// With the next chunk cut (`factor`, `policy`: the policy plans the tasks not yet cut
    /// anew).
    NextChunk,
    /// At the next iteration boundary: a value the program reads in `partition` or hands to
    /// the workers in the shared part. A change the tuner asks for inside an iteration waits
    /// for the boundary, and is judged on the iterations that run with it.
    NextIteration,
}

/// A typed handle on a tunable: a built-in one ([`TunableId::NWORKERS`],
/// [`TunableId::FACTOR`], [`TunableId::POLICY`]) or one the program declared with
/// [`TunablesHandle::declare`]. Read its value with [`TunablesHandle::value`] (or
/// [`TunerView::value`](crate::tuning::TunerView::value)), propose one from a
/// [`Tunlet`](crate::tuning::Tunlet) with [`Proposal::new`](crate::tuning::Proposal::new),
/// request one with [`change`](TunableId::change).
pub struct TunableId<T> {
    tunable: Tunable,
    kind: PhantomData<fn() -> T>,
}

impl TunableId<i64> {
    /// `nworkers`: workers taking part, from 1 to the pool.
    pub const NWORKERS: TunableId<i64> = TunableId::of(Tunable::NWORKERS);
}

impl TunableId<f64> {
    /// `factor`: how work is cut into chunks, in `(0, 1]`.
    pub const FACTOR: TunableId<f64> = TunableId::of(Tunable::FACTOR);
}

impl TunableId<PolicyChoice> {
    /// `policy`: the distribution policy, a built-in one or one the program registered.
    pub const POLICY: TunableId<PolicyChoice> = TunableId::of(Tunable::POLICY);
}

impl<T> TunableId<T> {
    const fn of(tunable: Tunable) -> Self {
        TunableId {
            tunable,
            kind: PhantomData,
        }
    }
}

impl<T> Clone for TunableId<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for TunableId<T> {}

impl<T> fmt::Debug for TunableId<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TunableId({})", self.tunable.0)
    }
}

impl<T> PartialEq for TunableId<T> {
    fn eq(&self, other: &Self) -> bool {
        self.tunable == other.tunable
    }
}

impl<T: TunableValue> TunableId<T> {
    /// The tunable this handle names.
    pub fn tunable(self) -> Tunable {
        self.tunable
    }

    /// The change that sets this tunable to `value`, for
    /// [`TunablesHandle::request`]; its range is checked there.
    pub fn change(self, value: T) -> Change {
        Change {
            tunable: self.tunable,
            value: value.into_value(),
        }
    }
}

/// The types a tunable holds: whole numbers (`i64`: `nworkers`, a tile size), real numbers
/// (`f64`: `factor`) and policies ([`PolicyChoice`]). A program declares whole and real ones.
pub trait TunableValue: Clone + fmt::Display + private::Sealed {}

impl TunableValue for i64 {}
impl TunableValue for f64 {}
impl TunableValue for PolicyChoice {}

mod private {
    use crate::policy::PolicyChoice;

    /// A tunable's value, of one of the kinds a [`TunableValue`](super::TunableValue) is:
    /// nameable only inside the crate (the registry holds values so).
    #[derive(Debug, Clone, PartialEq)]
    pub enum Value {
        Whole(i64),
        Real(f64),
        Policy(PolicyChoice),
    }

    /// The value as the registry holds it, and back.
    pub trait Sealed: Sized {
        fn into_value(self) -> Value;
        fn from_value(value: &Value) -> Option<Self>;
    }

    impl Sealed for i64 {
        fn into_value(self) -> Value {
            Value::Whole(self)
        }
        fn from_value(value: &Value) -> Option<Self> {
            match *value {
                Value::Whole(v) => Some(v),
                _ => None,
            }
        }
    }

    impl Sealed for f64 {
        fn into_value(self) -> Value {
            Value::Real(self)
        }
        fn from_value(value: &Value) -> Option<Self> {
            match *value {
                Value::Real(v) => Some(v),
                _ => None,
            }
        }
    }

    impl Sealed for PolicyChoice {
        fn into_value(self) -> Value {
            Value::Policy(self)
        }
        fn from_value(value: &Value) -> Option<Self> {
            match value {
                Value::Policy(p) => Some(p.clone()),
                _ => None,
            }
        }
    }
}

use private::Value;

impl Value {
    /// As the metrics' decisions record it.
    fn json(&self) -> serde_json::Value {
        match self {
            Value::Whole(v) => (*v).into(),
            Value::Real(v) => (*v).into(),
            Value::Policy(p) => p.to_string().into(),
        }
    }

    /// As the tuner compares values: numbers as they are; a policy by its place among the
    /// policies (`registered` after the built-in ones, see [`policy_number`]).
    fn number<'a>(&self, registered: impl IntoIterator<Item = &'a str>) -> f64 {
        match self {
            Value::Whole(v) => *v as f64,
            Value::Real(v) => *v,
            Value::Policy(p) => policy_number(p, registered),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Whole(v) => v.fmt(f),
            Value::Real(v) => v.fmt(f),
            Value::Policy(p) => p.fmt(f),
        }
    }
}

/// One requested change: a tunable and its new value. Made by [`TunableId::change`], or
/// parsed from text by [`TunablesHandle::parse`].
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    tunable: Tunable,
    value: Value,
}

impl Change {
    /// Which tunable it changes.
    pub fn tunable(&self) -> Tunable {
        self.tunable
    }

    /// The new value, when the change is of the tunable `id` names.
    pub fn value<T: TunableValue>(&self, id: TunableId<T>) -> Option<T> {
        (self.tunable == id.tunable)
            .then(|| T::from_value(&self.value))
            .flatten()
    }

    /// Whether its tunable's values have an order (numbers do; policies do not).
    pub(crate) fn ordered(&self) -> bool {
        !matches!(self.value, Value::Policy(_))
    }
}

/// What values a tunable takes.
#[derive(Debug, Clone, PartialEq)]
enum Domain {
    /// Numbers from `min` to `max` (`min` itself refused when `open`), whole ones only when
    /// `whole`.
    Number {
        min: f64,
        max: f64,
        open: bool,
        whole: bool,
    },
    /// A built-in policy but `auto`, or one of the policies the program registered (as it
    /// spelled them: the tuner tells policies apart by their registered names).
    Policy { registered: Vec<String> },
}

/// An entry of the registry: a tunable's name, the values it takes, when a change takes
/// effect, and its value in force.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    name: String,
    domain: Domain,
    takes_effect: TakesEffect,
    value: Value,
    /// What it takes, in words, for the message of a value that does not parse: "`NAME`
    /// takes …".
    takes: String,
    /// The help of the message of a value out of range.
    range_help: String,
}

impl Entry {
    /// `nworkers` for a pool of `pool` workers.
    fn nworkers(value: usize, pool: usize) -> Entry {
        Entry {
            name: "nworkers".to_owned(),
            domain: Domain::Number {
                min: 1.0,
                max: pool as f64,
                open: false,
                whole: true,
            },
            takes_effect: TakesEffect::AtOnce,
            value: Value::Whole(value as i64),
            takes: "a whole number of workers".to_owned(),
            range_help: format!(
                "choose between 1 and the pool of {pool} workers (see --max-workers)"
            ),
        }
    }

    fn factor(value: f64) -> Entry {
        Entry {
            name: "factor".to_owned(),
            domain: Domain::Number {
                min: 0.0,
                max: 1.0,
                open: true,
                whole: false,
            },
            takes_effect: TakesEffect::NextChunk,
            value: Value::Real(value),
            takes: "a number in (0, 1]".to_owned(),
            range_help: "the factor is a fraction of the remaining work: choose a value in \
                         (0, 1], e.g. 0.5"
                .to_owned(),
        }
    }

    fn policy(value: PolicyChoice) -> Entry {
        Entry {
            name: "policy".to_owned(),
            domain: Domain::Policy {
                registered: Vec::new(),
            },
            takes_effect: TakesEffect::NextChunk,
            value: Value::Policy(value),
            takes: format!(
                "one of {} or the name of a policy the program registered",
                PolicyName::all_names()
            ),
            range_help: String::new(),
        }
    }

    /// A tunable the program declares: a whole or real number over `min..=max`.
    fn declared(name: &str, value: Value, min: f64, max: f64, takes_effect: TakesEffect) -> Entry {
        let whole = matches!(value, Value::Whole(_));
        let kind = if whole { "a whole number" } else { "a number" };
        let takes = format!("{kind} between {min} and {max}");
        Entry {
            name: name.to_owned(),
            domain: Domain::Number {
                min,
                max,
                open: false,
                whole,
            },
            takes_effect,
            value,
            range_help: format!("`{name}` takes {takes}"),
            takes,
        }
    }

    /// The policies the program registered, when this is `policy`.
    fn registered(&self) -> &[String] {
        match &self.domain {
            Domain::Policy { registered } => registered,
            Domain::Number { .. } => &[],
        }
    }

    /// `value` if this tunable takes it; a registered policy named as the program spelled it
    /// (names are accepted whatever their case).
    fn checked(&self, value: Value) -> Result<Value> {
        let name = &self.name;
        match (&self.domain, value) {
            (
                &Domain::Number {
                    min,
                    max,
                    open,
                    whole,
                },
                value @ (Value::Whole(_) | Value::Real(_)),
            ) => {
                let v = value.number([]);
                let low = if open { v > min } else { v >= min };
                let kind = whole == matches!(value, Value::Whole(_));
                if !kind {
                    Err(Error::config(
                        format!("error: `{value}` is not a valid value for `{name}`"),
                        format!("`{name}` takes {}", self.takes),
                    ))
                } else if low && v <= max {
                    Ok(value)
                } else {
                    Err(self.out_of_range(&value))
                }
            }
            (Domain::Policy { .. }, Value::Policy(PolicyChoice::BuiltIn(PolicyName::Auto))) => {
                Err(Error::config(
                    "error: `policy` cannot be set to `auto` while the program runs",
                    "`auto` is chosen when the run starts (`--policy auto`); set a policy by \
                     name, e.g. `wf`",
                ))
            }
            (Domain::Policy { registered }, Value::Policy(PolicyChoice::Registered(asked))) => {
                registered
                    .iter()
                    .find(|r| r.eq_ignore_ascii_case(&asked))
                    .map(|r| Value::Policy(PolicyChoice::Registered(r.clone())))
                    .ok_or_else(|| no_such_policy(&asked, registered))
            }
            (Domain::Policy { .. }, policy @ Value::Policy(_)) => Ok(policy),
            (_, value) => Err(Error::config(
                format!("error: `{value}` is not a valid value for `{name}`"),
                format!("`{name}` takes {}", self.takes),
            )),
        }
    }

    fn out_of_range(&self, value: &Value) -> Error {
        Error::config(
            format!("error: `{}` = {value} is out of range", self.name),
            self.range_help.clone(),
        )
    }

    /// The value `text` says, unchecked against the range.
    fn parse(&self, text: &str) -> Result<Value> {
        let value = match &self.domain {
            Domain::Number { whole: true, .. } => text.parse().ok().map(Value::Whole),
            Domain::Number { whole: false, .. } => text
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .map(Value::Real),
            Domain::Policy { .. } => text.parse().ok().map(Value::Policy),
        };
        value.ok_or_else(|| {
            Error::config(
                format!("error: `{text}` is not a valid value for `{}`", self.name),
                format!("`{}` takes {}", self.name, self.takes),
            )
        })
    }
}

/// The error for a policy name that is neither built in nor registered.
fn no_such_policy(name: &str, registered: &[String]) -> Error {
    let registered = if registered.is_empty() {
        "the program registered none".to_owned()
    } else {
        format!("the program registered `{}`", registered.join("`, `"))
    };
    Error::config(
        format!("error: no policy is named `{name}`"),
        format!(
            "the built-in policies are {}; {registered}",
            PolicyName::all_names()
        ),
    )
}

/// A policy as the tuner holds it in proposals and decisions, a number: its place in
/// [`PolicyName::ALL`], or for a registered one its place in `registered` (the order registered)
/// after them. The tuner's only numbering of policies: the tunables and the policy tunlet both
/// use it.
pub(crate) fn policy_number<'a>(
    policy: &PolicyChoice,
    registered: impl IntoIterator<Item = &'a str>,
) -> f64 {
    let place = match policy {
        PolicyChoice::BuiltIn(name) => PolicyName::ALL.iter().position(|p| p == name),
        PolicyChoice::Registered(name) => registered
            .into_iter()
            .position(|r| r.eq_ignore_ascii_case(name))
            .map(|i| PolicyName::ALL.len() + i),
    };
    place.unwrap_or(0) as f64
}

/// Refuses factors outside `(0, 1]`, as a change of `factor` is refused.
pub(crate) fn check_factor(factor: f64) -> Result<()> {
    Entry::factor(factor).checked(Value::Real(factor)).map(drop)
}

/// Names in backticks, for messages: "`a`, `b` and `c`".
fn in_words<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut names: Vec<String> = names.into_iter().map(|n| format!("`{n}`")).collect();
    let last = names.pop().unwrap_or_default();
    if names.is_empty() {
        last
    } else {
        format!("{} and {last}", names.join(", "))
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
    /// The decision in a few words, for people (the tuner's); empty when `reason` is short.
    pub summary: String,
    pub predicted_ms: Option<f64>,
    pub measured_ms: Option<f64>,
    pub details: serde_json::Value,
}

impl Why {
    pub(crate) fn plain(source: Source, reason: &str) -> Why {
        Why {
            source,
            reason: reason.to_owned(),
            summary: String::new(),
            predicted_ms: None,
            measured_ms: None,
            details: serde_json::Value::Null,
        }
    }
}

/// A shared handle on the tunables of a running program: read the values in force, request
/// changes that take effect at the next iteration boundary.
///
/// # Examples
/// ```no_run
/// # fn f(setup: &mw_runtime::Setup) -> mw_runtime::Result<()> {
/// use mw_runtime::TunableId;
///
/// let tunables = setup.tunables();
/// tunables.request(TunableId::NWORKERS.change(4), "application")?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TunablesHandle {
    inner: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    /// The registry: `nworkers`, `factor`, `policy`, then the program's own, by [`Tunable`].
    entries: Vec<Entry>,
    pending: Vec<(Change, Why)>,
    /// Tunables set by the application or from outside: the tuner leaves them alone.
    held: Vec<Tunable>,
    pool: usize,
}

impl State {
    fn entry(&self, tunable: Tunable) -> &Entry {
        &self.entries[tunable.0]
    }

    /// `change` if it is valid (see [`Entry::checked`]).
    fn checked(&self, change: Change) -> Result<Change> {
        let value = self.entry(change.tunable).checked(change.value)?;
        Ok(Change { value, ..change })
    }

    /// The runtime's tunables in force.
    fn current(&self) -> Tunables {
        let value = |t: Tunable| &self.entry(t).value;
        Tunables {
            nworkers: match value(Tunable::NWORKERS) {
                Value::Whole(n) => (*n).max(0) as usize,
                _ => 0,
            },
            factor: match value(Tunable::FACTOR) {
                Value::Real(f) => *f,
                _ => f64::NAN,
            },
            policy: match value(Tunable::POLICY) {
                Value::Policy(p) => p.clone(),
                _ => PolicyName::Daf.into(),
            },
        }
    }

    /// A value as the tuner compares it.
    fn number(&self, value: &Value) -> f64 {
        let registered = self.entry(Tunable::POLICY).registered();
        value.number(registered.iter().map(String::as_str))
    }

    fn find(&self, name: &str) -> Result<Tunable> {
        self.entries
            .iter()
            .position(|e| e.name == name)
            .map(Tunable)
            .ok_or_else(|| {
                Error::config(
                    format!("error: no tunable is named `{name}`"),
                    format!("the tunables are {}", self.names()),
                )
            })
    }

    /// Every tunable's name in backticks, for messages.
    fn names(&self) -> String {
        in_words(self.entries.iter().map(|e| e.name.as_str()))
    }

    /// Applies `change`; the decision that records it, or `None` when the value does not change.
    fn apply(&mut self, change: &Change, iteration: usize, why: &Why) -> Option<Decision> {
        let entry = &mut self.entries[change.tunable.0];
        if entry.value == change.value {
            return None;
        }
        let from = std::mem::replace(&mut entry.value, change.value.clone());
        Some(Decision {
            iteration,
            tasks_done: None,
            tunable: entry.name.clone(),
            from: from.json(),
            to: change.value.json(),
            reason: why.reason.clone(),
            summary: why.summary.clone(),
            predicted_ms: why.predicted_ms,
            measured_ms: why.measured_ms,
            details: why.details.clone(),
        })
    }
}

/// A decision taken at an iteration boundary, with who asked for it.
#[derive(Debug, Clone)]
pub(crate) struct Applied {
    pub decision: Decision,
    pub tunable: Tunable,
    pub source: Source,
}

impl TunablesHandle {
    /// The registry of the runtime's tunables, starting at `current`, for a pool of `pool`
    /// workers.
    pub(crate) fn new(current: Tunables, pool: usize) -> Self {
        let entries = vec![
            Entry::nworkers(current.nworkers, pool),
            Entry::factor(current.factor),
            Entry::policy(current.policy),
        ];
        TunablesHandle {
            inner: Arc::new(Mutex::new(State {
                entries,
                pending: Vec::new(),
                held: Vec::new(),
                pool,
            })),
        }
    }

    /// The policies the program registered: `policy` can be set to them from now on.
    pub(crate) fn register_policies(&self, names: impl IntoIterator<Item = String>) {
        let mut state = self.lock();
        if let Domain::Policy { registered } = &mut state.entries[Tunable::POLICY.0].domain {
            registered.extend(names);
        }
    }

    /// Starts the run with `policy` (a registered one, named when the run started), as if it
    /// had been the starting value.
    pub(crate) fn start_with_policy(&self, policy: PolicyChoice) {
        self.lock().entries[Tunable::POLICY.0].value = Value::Policy(policy);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent under every operation, so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The runtime's tunables in force for the current iteration.
    pub fn current(&self) -> Tunables {
        self.lock().current()
    }

    /// Declares a tunable of the program's own, named `name`, starting at `start`, valid over
    /// `range`: its value can then be read with [`value`](TunablesHandle::value) (in force from
    /// one iteration boundary to the next, like the runtime's), proposed by a
    /// [`Tunlet`](crate::tuning::Tunlet) of the program's ([`Setup::tunlet`](crate::Setup::tunlet)),
    /// requested by the application, or set from outside (`mwgen ctl ADDR set NAME VALUE`).
    /// Every change is logged as a decision under `name`, as the runtime's are.
    ///
    /// # Examples
    /// ```no_run
    /// # fn f(setup: &mw_runtime::Setup) -> mw_runtime::Result<()> {
    /// let tunables = setup.tunables();
    /// let tile = tunables.declare("tile", 16_i64, 4..=64)?;
    /// assert_eq!(tunables.value(tile), 16);
    /// assert!(tunables.request(tile.change(128), "application").is_err());
    /// # Ok(()) }
    /// ```
    ///
    /// The example in [`crate::tuning`] runs a program whose tunlet tunes such a tunable.
    ///
    /// A change takes effect at the next iteration boundary
    /// ([`TakesEffect::NextIteration`]); [`declare_with`](TunablesHandle::declare_with) says
    /// otherwise.
    ///
    /// # Errors
    /// When `name` is taken (by a runtime tunable or an earlier declaration), is not one word
    /// of letters, digits, `_` or `-`, or `start` lies outside `range`.
    pub fn declare<T: TunableValue + Copy + PartialOrd>(
        &self,
        name: &str,
        start: T,
        range: RangeInclusive<T>,
    ) -> Result<TunableId<T>> {
        self.declare_with(name, start, range, TakesEffect::NextIteration)
    }

    /// Declares a tunable as [`declare`](TunablesHandle::declare) does, whose changes take
    /// effect as `takes_effect` says: [`TakesEffect::AtOnce`] or [`TakesEffect::NextChunk`]
    /// for a value the program reads as it goes (in `more_tasks`, say), so that a change the
    /// tuner makes inside an iteration is applied there and judged on the tasks that follow.
    ///
    /// # Errors
    /// As [`declare`](TunablesHandle::declare).
    pub fn declare_with<T: TunableValue + Copy + PartialOrd>(
        &self,
        name: &str,
        start: T,
        range: RangeInclusive<T>,
        takes_effect: TakesEffect,
    ) -> Result<TunableId<T>> {
        let mut state = self.lock();
        if state.find(name).is_ok() {
            return Err(Error::config(
                format!("error: a tunable named `{name}` already exists"),
                format!("choose another name; the tunables are {}", state.names()),
            ));
        }
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if name.is_empty() || !name.chars().all(word) {
            return Err(Error::config(
                format!("error: `{name}` is not a valid tunable name"),
                "name it with letters, digits, `_` or `-`, e.g. `tile_size`",
            ));
        }
        let number = |v: T| state.number(&v.into_value());
        let (min, max) = (number(*range.start()), number(*range.end()));
        let value = start.into_value();
        let entry = Entry::declared(name, value.clone(), min, max, takes_effect);
        entry.checked(value)?;
        state.entries.push(entry);
        Ok(TunableId::of(Tunable(state.entries.len() - 1)))
    }

    /// The value in force of a tunable: a built-in one or one the program declared.
    pub fn value<T: TunableValue>(&self, id: TunableId<T>) -> T {
        let state = self.lock();
        let value = &state.entry(id.tunable).value;
        // A `TunableId<T>` is made only for an entry holding a `T` (a constant of the runtime's
        // or `declare::<T>`): another kind would be an id of another program's registry.
        T::from_value(value).unwrap_or_else(|| unreachable!("{value:?} is not the id's kind"))
    }

    /// The value in force of any tunable, as the tuner compares values: numbers as they are,
    /// `policy` as [`policy_number`] numbers it.
    pub(crate) fn number(&self, tunable: Tunable) -> f64 {
        let state = self.lock();
        state.number(&state.entry(tunable).value)
    }

    /// The value `change` asks for, as the tuner compares values.
    pub(crate) fn number_of(&self, change: &Change) -> f64 {
        self.lock().number(&change.value)
    }

    /// The change that sets `tunable` back to its value in force.
    pub(crate) fn in_force(&self, tunable: Tunable) -> Change {
        Change {
            tunable,
            value: self.lock().entry(tunable).value.clone(),
        }
    }

    /// When a change of `tunable` takes effect.
    pub fn takes_effect(&self, tunable: Tunable) -> TakesEffect {
        self.lock().entry(tunable).takes_effect
    }

    /// A tunable's name: the well-known one, or the one it was declared with.
    pub fn name(&self, tunable: Tunable) -> String {
        self.lock().entry(tunable).name.clone()
    }

    /// Every tunable with its value in force, `NAME=VALUE` separated by spaces (the control
    /// endpoint's `get`).
    pub fn list(&self) -> String {
        let state = self.lock();
        let all: Vec<String> = state
            .entries
            .iter()
            .map(|e| format!("{}={}", e.name, e.value))
            .collect();
        all.join(" ")
    }

    /// The value in force of the tunable named `name`, as text.
    ///
    /// # Errors
    /// When no tunable has that name; the message lists them.
    pub fn get_text(&self, name: &str) -> Result<String> {
        let state = self.lock();
        let tunable = state.find(name)?;
        Ok(state.entry(tunable).value.to_string())
    }

    /// Parses a change from a tunable's name and a value in text, as an external controller
    /// sends them.
    ///
    /// # Errors
    /// When the name is not a tunable or the value does not parse.
    pub fn parse(&self, name: &str, value: &str) -> Result<Change> {
        let state = self.lock();
        let tunable = state.find(name)?;
        let value = state.entry(tunable).parse(value)?;
        Ok(Change { tunable, value })
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
        let change = state.checked(change)?;
        let tunable = change.tunable;
        state.pending.retain(|(c, _)| c.tunable != tunable);
        state.pending.push((change, why));
        Ok(())
    }

    /// Whether `change` is valid: its value within its tunable's range.
    ///
    /// # Errors
    /// As [`request`](TunablesHandle::request) for an invalid value.
    pub(crate) fn check(&self, change: &Change) -> Result<()> {
        self.lock().checked(change.clone()).map(drop)
    }

    /// Queues a change the tuner proposes, unless the application or an external controller
    /// holds that tunable or has already asked for a change of it at this boundary; returns
    /// whether it was queued.
    pub(crate) fn request_tuned(&self, change: Change, why: Why) -> bool {
        let mut state = self.lock();
        let tunable = change.tunable;
        let taken = state.held.contains(&tunable)
            || state
                .pending
                .iter()
                .any(|(c, w)| c.tunable == tunable && w.source != Source::Tuner);
        if taken {
            return false;
        }
        let Ok(change) = state.checked(change) else {
            return false;
        };
        state.pending.push((change, why));
        true
    }

    /// Hands a held tunable back to the tuner (`set NAME auto` on the control endpoint).
    ///
    /// # Errors
    /// When `name` is not a tunable.
    pub(crate) fn release(&self, name: &str) -> Result<()> {
        let mut state = self.lock();
        let tunable = state.find(name)?;
        state.held.retain(|&h| h != tunable);
        Ok(())
    }

    /// Tunables the tuner must leave alone.
    pub(crate) fn held(&self) -> Vec<Tunable> {
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
            let tunable = change.tunable;
            if why.source != Source::Tuner && !state.held.contains(&tunable) {
                state.held.push(tunable);
            }
            if let Some(decision) = state.apply(change, iteration, why) {
                applied.push(Applied {
                    decision,
                    tunable,
                    source: why.source,
                });
            }
        }
        applied
    }

    /// Applies the tuner's queued changes that take effect inside an iteration, at once, inside
    /// `iteration` with `tasks_done` of its tasks done; those that take effect at the next
    /// iteration, and requests from the application or from outside, wait for the boundary.
    pub(crate) fn apply_tuned_now(&self, iteration: usize, tasks_done: usize) -> Vec<Applied> {
        let mut state = self.lock();
        let pending = std::mem::take(&mut state.pending);
        let (tuned, others): (Vec<_>, Vec<_>) = pending.into_iter().partition(|(change, why)| {
            why.source == Source::Tuner
                && state.entry(change.tunable).takes_effect != TakesEffect::NextIteration
        });
        state.pending = others;
        let mut applied = Vec::new();
        for (change, why) in &tuned {
            if let Some(mut decision) = state.apply(change, iteration, why) {
                decision.tasks_done = Some(tasks_done);
                applied.push(Applied {
                    decision,
                    tunable: change.tunable,
                    source: why.source,
                });
            }
        }
        applied
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two workers, factor 0.5, `daf`.
    const START: Tunables = Tunables {
        nworkers: 2,
        factor: 0.5,
        policy: PolicyChoice::BuiltIn(PolicyName::Daf),
    };

    #[test]
    fn policy_is_set_from_outside_to_a_built_in_or_a_registered_name_only() {
        let handle = TunablesHandle::new(START, 8);
        let external = |name: &str, value: &str| {
            let change = handle.parse(name, value)?;
            handle.request_why(change, Why::plain(Source::External, "external"))
        };
        let e = external("policy", "tiles").unwrap_err().to_string();
        assert!(e.contains("no policy is named `tiles`"), "{e}");
        assert!(e.contains("the program registered none"), "{e}");
        handle.register_policies(["tiles".to_owned(), "pairs".to_owned()]);
        external("policy", "Tiles").unwrap();
        handle.apply_pending(1);
        // As the program spelled it: the tuner tells policies apart by their registered names.
        assert_eq!(
            handle.current().policy,
            PolicyChoice::Registered("tiles".into())
        );
        external("policy", "wf").unwrap();
        let e = external("policy", "tile").unwrap_err().to_string();
        assert!(e.contains("registered `tiles`, `pairs`"), "{e}");
        let e = external("policy", "two words").unwrap_err().to_string();
        assert!(
            e.contains("or the name of a policy the program registered"),
            "{e}"
        );
    }

    /// The runtime's tunables are entries of the registry like a program's own: named, read,
    /// parsed, checked and changed the same way, each through its typed id.
    #[test]
    fn the_runtime_tunables_are_registry_entries_like_the_programs() {
        let handle = TunablesHandle::new(START, 8);
        let tile = handle
            .declare_with("tile", 16_i64, 4..=64, TakesEffect::NextChunk)
            .unwrap();
        let ids = [
            (
                TunableId::NWORKERS.tunable(),
                "nworkers",
                TakesEffect::AtOnce,
                "4",
            ),
            (
                TunableId::FACTOR.tunable(),
                "factor",
                TakesEffect::NextChunk,
                "0.25",
            ),
            (
                TunableId::POLICY.tunable(),
                "policy",
                TakesEffect::NextChunk,
                "wf",
            ),
            (tile.tunable(), "tile", TakesEffect::NextChunk, "32"),
        ];
        for (tunable, name, takes_effect, text) in ids {
            assert_eq!(handle.name(tunable), name);
            assert_eq!(handle.takes_effect(tunable), takes_effect);
            let change = handle.parse(name, text).unwrap();
            assert_eq!(change.tunable(), tunable);
            handle.request(change, "application").unwrap();
        }
        let applied = handle.apply_pending(1);
        assert_eq!(applied.len(), 4);
        assert_eq!(handle.list(), "nworkers=4 factor=0.25 policy=wf tile=32");
        assert_eq!(handle.value(TunableId::NWORKERS), 4);
        assert_eq!(handle.value(TunableId::FACTOR), 0.25);
        assert_eq!(handle.value(TunableId::POLICY), PolicyName::Wf.into());
        assert_eq!(handle.value(tile), 32);
        assert_eq!(handle.current().policy, PolicyName::Wf.into());
        // Out of range or of another kind, each says so in the same words.
        for (name, text, says) in [
            ("nworkers", "9", "`nworkers` = 9 is out of range"),
            ("factor", "0", "`factor` = 0 is out of range"),
            ("tile", "65", "`tile` = 65 is out of range"),
            (
                "nworkers",
                "two",
                "`two` is not a valid value for `nworkers`",
            ),
            ("factor", "nan", "`nan` is not a valid value for `factor`"),
        ] {
            let e = handle
                .parse(name, text)
                .and_then(|change| handle.request(change, "application"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(says) && e.contains("help:"), "{e}");
        }
    }

    #[test]
    fn every_policy_has_a_number_of_its_own() {
        let handle = TunablesHandle::new(START, 8);
        handle.register_policies(["tiles".to_owned(), "pairs".to_owned()]);
        let number =
            |name: &str| handle.number_of(&TunableId::POLICY.change(name.parse().unwrap()));
        assert_eq!(handle.number(Tunable::POLICY), number("daf"));
        let all = PolicyName::ALL.len() as f64;
        assert_eq!(number("static"), 0.0);
        assert_eq!(number("auto"), all - 1.0);
        assert_eq!(number("tiles"), all);
        assert_eq!(number("Pairs"), all + 1.0);
    }

    #[test]
    fn a_flood_of_requests_makes_one_decision_per_tunable_the_last_value_winning() {
        let handle = TunablesHandle::new(START, 8);
        let external = || Why::plain(Source::External, "external");
        for i in 0..100_000 {
            let change = TunableId::NWORKERS.change(1 + i % 8);
            handle.request_why(change, external()).unwrap();
            let factor = TunableId::FACTOR.change(if i % 2 == 0 { 0.25 } else { 0.75 });
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

    #[test]
    fn a_declared_tunable_is_checked_against_its_range_and_named_in_its_decisions() {
        let handle = TunablesHandle::new(START, 8);
        let tile = handle.declare("tile", 16_i64, 4..=64).unwrap();
        let rate = handle.declare("rate", 0.5_f64, 0.0..=1.0).unwrap();
        for (name, start) in [("tile", 1), ("factor", 1), ("two words", 1), ("", 1)] {
            let e = handle.declare(name, start, 0..=4).unwrap_err();
            assert!(e.to_string().contains(&format!("`{name}`")), "{e}");
        }
        assert!(handle.declare("step", 9_i64, 1..=8).is_err());
        assert_eq!(
            handle.list(),
            "nworkers=2 factor=0.5 policy=daf tile=16 rate=0.5"
        );
        assert!(handle.request(tile.change(65), "application").is_err());
        let e = handle.parse("tile", "4.5").unwrap_err();
        assert!(
            e.to_string().contains("not a valid value for `tile`"),
            "{e}"
        );
        let e = handle.parse("tiles", "4").unwrap_err().to_string();
        assert!(
            e.contains("`nworkers`, `factor`, `policy`, `tile` and `rate`"),
            "{e}"
        );
        let change = handle.parse("tile", "32").unwrap();
        handle
            .request_why(change, Why::plain(Source::External, "external"))
            .unwrap();
        handle.request(rate.change(0.25), "application").unwrap();
        let applied = handle.apply_pending(3);
        let decided: Vec<(&str, String, String)> = applied
            .iter()
            .map(|a| {
                let d = &a.decision;
                (d.tunable.as_str(), d.from.to_string(), d.to.to_string())
            })
            .collect();
        assert_eq!(
            decided,
            [
                ("tile", "16".into(), "32".into()),
                ("rate", "0.5".into(), "0.25".into())
            ]
        );
        assert_eq!((handle.value(tile), handle.value(rate)), (32, 0.25));
        // Set from outside: held until handed back.
        assert_eq!(handle.held(), [tile.tunable(), rate.tunable()]);
        handle.release("tile").unwrap();
        assert_eq!(handle.held(), [rate.tunable()]);
        assert!(!handle.request_tuned(rate.change(0.75), Why::plain(Source::Tuner, "tuner")));
    }

    #[test]
    fn auto_cannot_be_set_while_running_but_every_other_policy_can() {
        let handle = TunablesHandle::new(START, 4);
        let e = handle
            .parse("policy", "auto")
            .and_then(|change| handle.request(change, "application"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`auto`") && e.contains("--policy auto"), "{e}");
        for name in PolicyName::ALL
            .into_iter()
            .filter(|&p| p != PolicyName::Auto)
        {
            let change = TunableId::POLICY.change(name.into());
            assert!(handle.request(change, "application").is_ok(), "{name}");
        }
    }
}
