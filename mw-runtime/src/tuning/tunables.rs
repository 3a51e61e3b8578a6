//! The well-known tunables (`nworkers`, `factor`, `policy`), the tunables a program declares of
//! its own, and the decisions that change them.
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

/// The values the runtime tunes while the program runs.
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

/// One requested change to a tunable.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// New `nworkers`.
    Nworkers(usize),
    /// New `factor`.
    Factor(f64),
    /// New `policy`.
    Policy(PolicyChoice),
    /// A new value for a tunable the program declared ([`TunableId::change`]).
    Declared(DeclaredId, f64),
}

/// A tunable: one of the runtime's own, or one the program declared
/// ([`TunablesHandle::declare`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tunable {
    /// `nworkers`.
    Nworkers,
    /// `factor`.
    Factor,
    /// `policy`.
    Policy,
    /// A tunable of the program's own.
    Declared(DeclaredId),
}

impl Tunable {
    /// The runtime's tunables, in the order the control endpoint lists them.
    pub const BUILT_IN: [Tunable; 3] = [Tunable::Nworkers, Tunable::Factor, Tunable::Policy];

    /// The built-in tunable of that well-known name.
    pub fn built_in(name: &str) -> Option<Tunable> {
        Tunable::BUILT_IN
            .into_iter()
            .find(|t| t.built_in_name() == Some(name))
    }

    /// The well-known name of a built-in tunable; `None` for a declared one (its name is in the
    /// [`TunablesHandle`]).
    pub fn built_in_name(self) -> Option<&'static str> {
        match self {
            Tunable::Nworkers => Some("nworkers"),
            Tunable::Factor => Some("factor"),
            Tunable::Policy => Some("policy"),
            Tunable::Declared(_) => None,
        }
    }
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

impl Tunable {
    /// When a change of a built-in tunable takes effect; `None` for a declared one (see
    /// [`TunablesHandle::takes_effect`]).
    pub fn built_in_takes_effect(self) -> Option<TakesEffect> {
        match self {
            Tunable::Nworkers => Some(TakesEffect::AtOnce),
            Tunable::Factor | Tunable::Policy => Some(TakesEffect::NextChunk),
            Tunable::Declared(_) => None,
        }
    }
}

/// Which of the program's declared tunables: obtained from [`TunableId::tunable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeclaredId(usize);

/// A typed handle on a numeric tunable: a built-in one ([`TunableId::FACTOR`],
/// [`TunableId::NWORKERS`]) or one the program declared with [`TunablesHandle::declare`]. Read
/// its value with [`TunablesHandle::value`] (or [`TunerView::value`](crate::tuning::TunerView::value)),
/// propose one from a [`Tunlet`](crate::tuning::Tunlet) with
/// [`Proposal::new`](crate::tuning::Proposal::new). (`policy` is not a number: a tunlet proposes
/// it with [`Proposal::policy`](crate::tuning::Proposal::policy).)
pub struct TunableId<T> {
    tunable: Numeric,
    kind: PhantomData<fn() -> T>,
}

/// The numeric tunables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Numeric {
    Nworkers,
    Factor,
    Declared(DeclaredId),
}

impl TunableId<i64> {
    /// `nworkers`: workers taking part, from 1 to the pool.
    pub const NWORKERS: TunableId<i64> = TunableId {
        tunable: Numeric::Nworkers,
        kind: PhantomData,
    };
}

impl TunableId<f64> {
    /// `factor`: how work is cut into chunks, in `(0, 1]`.
    pub const FACTOR: TunableId<f64> = TunableId {
        tunable: Numeric::Factor,
        kind: PhantomData,
    };
}

impl<T> Clone for TunableId<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for TunableId<T> {}

impl<T> fmt::Debug for TunableId<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TunableId({:?})", self.tunable)
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
        match self.tunable {
            Numeric::Nworkers => Tunable::Nworkers,
            Numeric::Factor => Tunable::Factor,
            Numeric::Declared(id) => Tunable::Declared(id),
        }
    }

    /// The change that sets this tunable to `value` (a negative worker count as 0, which the
    /// range check refuses).
    pub fn change(self, value: T) -> Change {
        let v = value.to_f64();
        match self.tunable {
            Numeric::Nworkers => Change::Nworkers(v.max(0.0) as usize),
            Numeric::Factor => Change::Factor(v),
            Numeric::Declared(id) => Change::Declared(id, v),
        }
    }
}

/// The types a declared tunable can hold: whole numbers (`i64`, e.g. a tile size) and real
/// numbers (`f64`).
pub trait TunableValue: Copy + PartialOrd + fmt::Display + private::Sealed {
    /// Whether only whole numbers are valid.
    const WHOLE: bool;
    /// The value as the tuner and the metrics hold it.
    fn to_f64(self) -> f64;
    /// The value back from the tuner's number.
    fn from_f64(value: f64) -> Self;
}

mod private {
    pub trait Sealed {}
    impl Sealed for i64 {}
    impl Sealed for f64 {}
}

impl TunableValue for i64 {
    const WHOLE: bool = true;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(value: f64) -> Self {
        value.round() as i64
    }
}

impl TunableValue for f64 {
    const WHOLE: bool = false;
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(value: f64) -> Self {
        value
    }
}

/// A declared tunable: its name, range and value in force.
#[derive(Debug, Clone, PartialEq)]
struct Declared {
    name: String,
    min: f64,
    max: f64,
    whole: bool,
    value: f64,
    takes_effect: TakesEffect,
}

impl Declared {
    fn check(&self, value: f64) -> Result<()> {
        if value >= self.min && value <= self.max && (!self.whole || value.fract() == 0.0) {
            return Ok(());
        }
        let kind = if self.whole {
            "a whole number"
        } else {
            "a number"
        };
        Err(Error::config(
            format!("error: `{}` = {value} is out of range", self.name),
            format!(
                "`{}` takes {kind} between {} and {}",
                self.name, self.min, self.max
            ),
        ))
    }

    fn json(&self, value: f64) -> serde_json::Value {
        if self.whole {
            (value as i64).into()
        } else {
            value.into()
        }
    }
}

impl Change {
    /// Which tunable it changes.
    pub fn tunable(&self) -> Tunable {
        match self {
            Change::Nworkers(_) => Tunable::Nworkers,
            Change::Factor(_) => Tunable::Factor,
            Change::Policy(_) => Tunable::Policy,
            Change::Declared(id, _) => Tunable::Declared(*id),
        }
    }

    /// Checks the value against its range, for a pool of `pool` workers (a declared tunable's
    /// range is checked by the [`TunablesHandle`] it was declared on).
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
            Change::Policy(PolicyChoice::BuiltIn(PolicyName::Auto)) => Err(Error::config(
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
        match Tunable::built_in(name) {
            Some(Tunable::Nworkers) => value
                .parse()
                .map(Change::Nworkers)
                .map_err(|_| bad("a whole number of workers")),
            Some(Tunable::Factor) => value
                .parse()
                .map(Change::Factor)
                .map_err(|_| bad("a number in (0, 1]")),
            Some(Tunable::Policy) => {
                value
                    .parse::<PolicyChoice>()
                    .map(Change::Policy)
                    .map_err(|_| {
                        bad(&format!(
                            "one of {} or the name of a policy the program registered",
                            PolicyName::all_names()
                        ))
                    })
            }
            _ => Err(Error::config(
                format!("error: no tunable is named `{name}`"),
                format!(
                    "the tunables are {}",
                    in_words(Tunable::BUILT_IN.iter().filter_map(|t| t.built_in_name()))
                ),
            )),
        }
    }

    fn value(&self) -> serde_json::Value {
        match self {
            Change::Nworkers(n) => (*n).into(),
            Change::Factor(f) => (*f).into(),
            Change::Policy(p) => p.to_string().into(),
            Change::Declared(_, v) => (*v).into(),
        }
    }
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
                std::mem::replace(&mut self.policy, p.clone())
                    .to_string()
                    .into()
            }
            _ => return None,
        };
        Some(Decision {
            iteration,
            tasks_done: None,
            tunable: change
                .tunable()
                .built_in_name()
                .unwrap_or_default()
                .to_owned(),
            from,
            to: change.value(),
            reason: why.reason.clone(),
            summary: why.summary.clone(),
            predicted_ms: why.predicted_ms,
            measured_ms: why.measured_ms,
            details: why.details.clone(),
        })
    }

    /// The value of a tunable by its well-known name, as text.
    pub fn get(&self, name: &str) -> Option<String> {
        Tunable::built_in(name).and_then(|t| self.text(t))
    }

    /// The value of a built-in tunable, as text; `None` for a declared one.
    fn text(&self, tunable: Tunable) -> Option<String> {
        match tunable {
            Tunable::Nworkers => Some(self.nworkers.to_string()),
            Tunable::Factor => Some(self.factor.to_string()),
            Tunable::Policy => Some(self.policy.to_string()),
            Tunable::Declared(_) => None,
        }
    }
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
    /// The program's own tunables, by [`DeclaredId`].
    declared: Vec<Declared>,
    pool: usize,
    pending: Vec<(Change, Why)>,
    /// Tunables set by the application or from outside: the tuner leaves them alone.
    held: Vec<Tunable>,
    /// Names of the policies the program registered, which `policy` can be set to.
    registered: Vec<String>,
}

impl State {
    /// `change` if it is valid, a registered policy named as the program spelled it: names are
    /// accepted whatever their case, and the tuner tells policies apart by their registered
    /// names.
    fn checked(&self, change: Change) -> Result<Change> {
        match change {
            Change::Declared(id, value) => {
                self.declared[id.0].check(value)?;
                Ok(change)
            }
            Change::Policy(PolicyChoice::Registered(name)) => self
                .registered
                .iter()
                .find(|r| r.eq_ignore_ascii_case(&name))
                .map(|r| Change::Policy(PolicyChoice::Registered(r.clone())))
                .ok_or_else(|| self.no_such_policy(&name)),
            _ => change.validate(self.pool).map(|()| change),
        }
    }

    /// `policy` as a number ([`policy_number`]), among the policies registered.
    fn policy_number(&self, policy: &PolicyChoice) -> f64 {
        policy_number(policy, self.registered.iter().map(String::as_str))
    }

    /// The error for a policy name that is neither built in nor registered.
    fn no_such_policy(&self, name: &str) -> Error {
        let registered = if self.registered.is_empty() {
            "the program registered none".to_owned()
        } else {
            format!("the program registered `{}`", self.registered.join("`, `"))
        };
        Error::config(
            format!("error: no policy is named `{name}`"),
            format!(
                "the built-in policies are {}; {registered}",
                PolicyName::all_names()
            ),
        )
    }

    fn name(&self, tunable: Tunable) -> String {
        match tunable {
            Tunable::Declared(id) => self.declared[id.0].name.clone(),
            _ => tunable.built_in_name().unwrap_or_default().to_owned(),
        }
    }

    fn takes_effect(&self, tunable: Tunable) -> TakesEffect {
        match tunable {
            Tunable::Declared(id) => self.declared[id.0].takes_effect,
            _ => tunable
                .built_in_takes_effect()
                .unwrap_or(TakesEffect::NextIteration),
        }
    }

    fn find(&self, name: &str) -> Result<Tunable> {
        Tunable::built_in(name)
            .or_else(|| {
                let index = self.declared.iter().position(|d| d.name == name)?;
                Some(Tunable::Declared(DeclaredId(index)))
            })
            .ok_or_else(|| {
                Error::config(
                    format!("error: no tunable is named `{name}`"),
                    format!("the tunables are {}", self.names()),
                )
            })
    }

    /// Every tunable's name in backticks, for messages.
    fn names(&self) -> String {
        let built_in = Tunable::BUILT_IN.iter().filter_map(|t| t.built_in_name());
        in_words(built_in.chain(self.declared.iter().map(|d| d.name.as_str())))
    }

    /// Applies `change`; the decision that records it, or `None` when the value does not change.
    fn apply(&mut self, change: &Change, iteration: usize, why: &Why) -> Option<Decision> {
        let Change::Declared(id, value) = *change else {
            return self.current.apply(change, iteration, why);
        };
        let declared = &mut self.declared[id.0];
        if declared.value == value {
            return None;
        }
        let from = std::mem::replace(&mut declared.value, value);
        Some(Decision {
            iteration,
            tasks_done: None,
            tunable: declared.name.clone(),
            from: declared.json(from),
            to: declared.json(value),
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
    pub(crate) fn new(current: Tunables, pool: usize) -> Self {
        TunablesHandle {
            inner: Arc::new(Mutex::new(State {
                current,
                declared: Vec::new(),
                pool,
                pending: Vec::new(),
                held: Vec::new(),
                registered: Vec::new(),
            })),
        }
    }

    /// The policies the program registered: `policy` can be set to them from now on.
    pub(crate) fn register_policies(&self, names: impl IntoIterator<Item = String>) {
        self.lock().registered.extend(names);
    }

    /// Starts the run with `policy` (a registered one, named when the run started), as if it
    /// had been the starting value.
    pub(crate) fn start_with_policy(&self, policy: PolicyChoice) {
        self.lock().current.policy = policy;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent under every operation, so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tunables in force for the current iteration.
    pub fn current(&self) -> Tunables {
        self.lock().current.clone()
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
    pub fn declare<T: TunableValue>(
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
    pub fn declare_with<T: TunableValue>(
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
        let declared = Declared {
            name: name.to_owned(),
            min: range.start().to_f64(),
            max: range.end().to_f64(),
            whole: T::WHOLE,
            value: start.to_f64(),
            takes_effect,
        };
        declared.check(declared.value)?;
        state.declared.push(declared);
        Ok(TunableId {
            tunable: Numeric::Declared(DeclaredId(state.declared.len() - 1)),
            kind: PhantomData,
        })
    }

    /// The value in force of a numeric tunable: a built-in one or one the program declared.
    pub fn value<T: TunableValue>(&self, id: TunableId<T>) -> T {
        T::from_f64(self.number(id.tunable()))
    }

    /// The value in force of any tunable, as the tuner holds it: `nworkers` and `factor` as
    /// numbers, `policy` as [`policy_number`] numbers it.
    pub(crate) fn number(&self, tunable: Tunable) -> f64 {
        let state = self.lock();
        match tunable {
            Tunable::Nworkers => state.current.nworkers as f64,
            Tunable::Factor => state.current.factor,
            Tunable::Policy => state.policy_number(&state.current.policy),
            Tunable::Declared(id) => state.declared[id.0].value,
        }
    }

    /// `policy` as the tuner numbers it ([`policy_number`]), among the policies registered.
    pub(crate) fn policy_number(&self, policy: &PolicyChoice) -> f64 {
        self.lock().policy_number(policy)
    }

    /// When a change of `tunable` takes effect.
    pub fn takes_effect(&self, tunable: Tunable) -> TakesEffect {
        self.lock().takes_effect(tunable)
    }

    /// A tunable's name: the well-known one, or the one it was declared with.
    pub fn name(&self, tunable: Tunable) -> String {
        self.lock().name(tunable)
    }

    /// Every tunable with its value in force, `NAME=VALUE` separated by spaces (the control
    /// endpoint's `get`).
    pub fn list(&self) -> String {
        let state = self.lock();
        let built_in = Tunable::BUILT_IN
            .iter()
            .filter_map(|&t| Some(format!("{}={}", t.built_in_name()?, state.current.text(t)?)));
        let declared = state
            .declared
            .iter()
            .map(|d| format!("{}={}", d.name, d.json(d.value)));
        built_in.chain(declared).collect::<Vec<_>>().join(" ")
    }

    /// The value in force of the tunable named `name`, as text.
    ///
    /// # Errors
    /// When no tunable has that name; the message lists them.
    pub fn get_text(&self, name: &str) -> Result<String> {
        let state = self.lock();
        match state.find(name)? {
            Tunable::Declared(id) => {
                let d = &state.declared[id.0];
                Ok(d.json(d.value).to_string())
            }
            _ => Ok(state.current.get(name).unwrap_or_default()),
        }
    }

    /// Parses a change from a tunable's name and a value in text, as an external controller
    /// sends them; declared tunables included.
    ///
    /// # Errors
    /// When the name is not a tunable or the value does not parse.
    pub fn parse(&self, name: &str, value: &str) -> Result<Change> {
        let state = self.lock();
        let Tunable::Declared(id) = state.find(name)? else {
            return Change::parse(name, value);
        };
        let d = &state.declared[id.0];
        let parsed = if d.whole {
            value.parse::<i64>().ok().map(|v| v as f64)
        } else {
            value.parse::<f64>().ok().filter(|v| v.is_finite())
        };
        parsed.map(|v| Change::Declared(id, v)).ok_or_else(|| {
            let kind = if d.whole {
                "a whole number"
            } else {
                "a number"
            };
            Error::config(
                format!("error: `{value}` is not a valid value for `{name}`"),
                format!("`{name}` takes {kind} between {} and {}", d.min, d.max),
            )
        })
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
        let tunable = change.tunable();
        state.pending.retain(|(c, _)| c.tunable() != tunable);
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
        let tunable = change.tunable();
        let taken = state.held.contains(&tunable)
            || state
                .pending
                .iter()
                .any(|(c, w)| c.tunable() == tunable && w.source != Source::Tuner);
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
            let tunable = change.tunable();
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
                && state.takes_effect(change.tunable()) != TakesEffect::NextIteration
        });
        state.pending = others;
        let mut applied = Vec::new();
        for (change, why) in &tuned {
            if let Some(mut decision) = state.apply(change, iteration, why) {
                decision.tasks_done = Some(tasks_done);
                applied.push(Applied {
                    decision,
                    tunable: change.tunable(),
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

    #[test]
    fn policy_is_set_from_outside_to_a_built_in_or_a_registered_name_only() {
        let start = Tunables {
            nworkers: 2,
            factor: 0.5,
            policy: PolicyName::Daf.into(),
        };
        let handle = TunablesHandle::new(start, 8);
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

    #[test]
    fn every_policy_has_a_number_of_its_own() {
        let start = Tunables {
            nworkers: 2,
            factor: 0.5,
            policy: PolicyName::Daf.into(),
        };
        let handle = TunablesHandle::new(start, 8);
        handle.register_policies(["tiles".to_owned(), "pairs".to_owned()]);
        let number = |name: &str| handle.policy_number(&name.parse().unwrap());
        assert_eq!(handle.number(Tunable::Policy), number("daf"));
        let all = PolicyName::ALL.len() as f64;
        assert_eq!(number("static"), 0.0);
        assert_eq!(number("auto"), all - 1.0);
        assert_eq!(number("tiles"), all);
        assert_eq!(number("Pairs"), all + 1.0);
    }

    #[test]
    fn a_flood_of_requests_makes_one_decision_per_tunable_the_last_value_winning() {
        let start = Tunables {
            nworkers: 2,
            factor: 0.5,
            policy: PolicyName::Daf.into(),
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

    #[test]
    fn a_declared_tunable_is_checked_against_its_range_and_named_in_its_decisions() {
        let start = Tunables {
            nworkers: 2,
            factor: 0.5,
            policy: PolicyName::Daf.into(),
        };
        let handle = TunablesHandle::new(start, 8);
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
}
