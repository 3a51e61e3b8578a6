//! The tunlets and the decision rules on synthetic measurements: iterations whose times come from
//! the model itself (or deliberately not), with known `mo`, `k` and `Tc`.
#![allow(clippy::unwrap_used)]

use super::config::{Objective, TuneMode, TuningConfig};
use super::estimate::Estimate;
use super::tunables::Decision;
use super::*;
use crate::measure::{Facts, Moments, Transfer};
use crate::model::{self, Params};
use crate::policy::{PolicyChoice, PolicyName};
use crate::protocol::Protocol;

const POOL: usize = 64;

/// What the tuner takes of a run configured as by default (asynchronous, one chunk ahead),
/// with `tuning`.
fn setup(tuning: TuningConfig) -> TunerSetup {
    TunerSetup {
        tuning,
        protocol: Protocol::Async,
        prefetch: 1,
        min_chunk: 1,
        auto_policy: false,
        quiet: false,
    }
}

/// The paper's worked example (Fig. 6), with `Tc` scaled by `load`: 1600 tasks of 1 ms.
fn fig6(load: f64) -> Params {
    Params {
        tc_ms: 1600.0 * load,
        volume_bytes: 4096.0,
        alpha: 0.5,
        mo_ms: 1.0,
        k_ms_per_byte: 0.001,
        lm_ms: 0.0,
    }
}

/// An iteration of `n` workers measured exactly as the model describes it (or taking `time_ms`
/// when given): balanced busy times, one transfer per chunk with `2·mo + k·bytes`.
fn measured(index: usize, n: usize, p: &Params, time_ms: Option<f64>) -> Observation {
    let tasks = 1600;
    let time = time_ms.unwrap_or_else(|| model::iteration_time(p, n, Protocol::Async).unwrap());
    let per_worker = p.tc_ms / n as f64;
    let per_task = p.tc_ms / tasks as f64;
    let mut worker_tasks = vec![Moments::default(); POOL];
    let mut busy_ms = vec![0.0; POOL];
    for w in 0..n {
        let count = (tasks / n) as u64;
        worker_tasks[w] = Moments::from_sums(
            count,
            per_task * count as f64,
            per_task * per_task * count as f64,
        );
        busy_ms[w] = per_worker;
    }
    let mut task = Moments::default();
    for t in &worker_tasks {
        task.merge(t);
    }
    let chunk = p.volume_bytes / (2 * n) as f64;
    let transfers = (0..4 * n)
        .map(|j| {
            let bytes = chunk * (0.5 + 0.25 * (j % 4) as f64);
            Transfer {
                bytes,
                ms: 2.0 * p.mo_ms + p.k_ms_per_byte * bytes,
                out: None,
                back: None,
            }
        })
        .collect();
    Observation {
        facts: Facts {
            index,
            workers: n,
            factor: 0.5,
            policy: PolicyName::Daf.into(),
            tasks,
            chunks: 4 * n,
            time_ms: time,
            mixed: false,
        },
        own_ms: p.tc_ms,
        tc_ms: p.tc_ms,
        busy_ms,
        active: n,
        serial_ms: 0.0,
        recover_ms: 0.0,
        cpu_share: None,
        wait_share: None,
        late_share: None,
        bytes_to: (p.alpha * p.volume_bytes) as u64,
        bytes_from: ((1.0 - p.alpha) * p.volume_bytes) as u64,
        shared_bytes: 0,
        task,
        worker_tasks,
        transfers,
        sends: Vec::new(),
    }
}

/// Calls `f` with the view the tuner gives its tunlets at a boundary, for `setting` after
/// `obs`.
fn in_view<R>(
    est: &Estimate,
    obs: &Observation,
    setting: &factor::Setting<'_>,
    f: impl FnOnce(&TunerView<'_>) -> R,
) -> R {
    let current = Tunables {
        nworkers: setting.workers,
        factor: setting.factor,
        policy: setting.policy.clone(),
    };
    let look = Look {
        estimate: est,
        obs,
        remaining: setting.tasks,
        current: &current,
        healthy: setting.workers,
        stats: setting.stats,
        first: false,
        factor: true,
        midway: None,
        iteration_tasks: setting.tasks,
    };
    let handle = TunablesHandle::new(current.clone(), setting.workers);
    let registered = crate::policy::Registry::default();
    let view = TunerView {
        look: &look,
        setting,
        range: workers::Range {
            lo: 1,
            hi: setting.workers,
        },
        objective: Objective::Time,
        nworkers: setting.workers,
        handle: &handle,
        registered: &registered,
    };
    f(&view)
}

/// What the workers tunlet proposes after `obs`, for an iteration of `tasks` tasks with
/// `current` workers taking part, through the view the tuner gives it.
fn propose_workers(
    est: &Estimate,
    obs: &Observation,
    tasks: usize,
    current: usize,
    range: workers::Range,
    objective: Objective,
    protocol: Protocol,
) -> Option<Proposal> {
    let tunables = Tunables {
        nworkers: current,
        factor: 0.5,
        policy: PolicyName::Daf.into(),
    };
    let stats = TaskStats::new(current);
    let look = Look {
        estimate: est,
        obs,
        remaining: tasks,
        current: &tunables,
        healthy: current,
        stats: &stats,
        first: false,
        factor: true,
        midway: None,
        iteration_tasks: tasks,
    };
    let setting = factor::Setting::of(&look, 1, protocol, 1);
    let handle = TunablesHandle::new(tunables.clone(), range.hi.max(current));
    let registered = crate::policy::Registry::default();
    let view = TunerView {
        look: &look,
        setting: &setting,
        range,
        objective,
        nworkers: current,
        handle: &handle,
        registered: &registered,
    };
    workers::propose(&view)
}

/// What the factor tunlet proposes for `setting` after `obs`.
fn factor_proposal(
    tunlet: &mut factor::FactorTunlet,
    est: &Estimate,
    obs: &Observation,
    setting: &factor::Setting<'_>,
) -> Option<Proposal> {
    in_view(est, obs, setting, |view| tunlet.propose_at(view))
}

/// A tuner and the tunables it acts on, iteration after iteration.
struct Harness {
    tuner: Tuner,
    handle: TunablesHandle,
    stats: TaskStats,
    decisions: Vec<Decision>,
    index: usize,
}

impl Harness {
    /// A run past its first boundary, where every proposal needs `persistence` iterations (at
    /// the first one, a large gain acts at once: see [`Harness::new`]).
    fn under_way(start: usize, objective: Objective) -> Harness {
        let mut h = Harness::new(start, objective);
        h.index = 1;
        h.tuner.looked = true;
        h
    }

    fn new(start: usize, objective: Objective) -> Harness {
        let setup = setup(TuningConfig {
            objective: Some(objective),
            max_workers: Some(60),
            ..TuningConfig::default()
        });
        let tunables = Tunables {
            nworkers: start,
            factor: 0.5,
            policy: PolicyName::Daf.into(),
        };
        Harness {
            tuner: Tuner::new(setup, None, objective),
            handle: TunablesHandle::new(tunables, POOL),
            stats: TaskStats::new(POOL),
            decisions: Vec::new(),
            index: 0,
        }
    }

    /// Runs one iteration measured by `measure(index, nworkers)`.
    fn step(&mut self, measure: impl Fn(usize, usize) -> Observation) {
        let applied = self.handle.apply_pending(self.index);
        self.tuner.applied(&applied);
        self.decisions
            .extend(applied.into_iter().map(|a| a.decision));
        let current = self.handle.current();
        let obs = measure(self.index, current.nworkers);
        self.tuner
            .observe(&obs, &current, POOL, &self.stats, &self.handle);
        self.index += 1;
    }

    fn nworkers(&self) -> usize {
        self.handle.current().nworkers
    }
}

#[test]
fn the_workers_tunlet_proposes_the_models_optimum() {
    let p = fig6(1.0);
    let mut est = Estimate::default();
    let obs = measured(0, 4, &p, None);
    let _ = est.update(&obs, Protocol::Async);
    let link = est.link.unwrap();
    assert!((link.mo_ms - 1.0).abs() < 1e-9 && (link.k_ms_per_byte - 0.001).abs() < 1e-12);
    assert!(est.calibration_ms.abs() < 1e-9, "{}", est.calibration_ms);
    let curve = model::sweep(&p, Protocol::Async, 1..=60).unwrap();
    let mcmc = model::mcmc(&p, Protocol::Async).unwrap();
    let range = workers::Range { lo: 1, hi: 60 };
    for (objective, expected) in [
        (Objective::Index, curve.capped(mcmc).best_index().workers),
        (Objective::Time, curve.best_time().workers),
    ] {
        let proposal = propose_workers(
            &est,
            &obs,
            obs.facts.tasks,
            4,
            range,
            objective,
            Protocol::Async,
        )
        .unwrap();
        assert_eq!(
            proposal.change,
            TunableId::NWORKERS.change(expected as i64),
            "{objective}"
        );
        let predicted = model::iteration_time(&p, expected, Protocol::Async).unwrap();
        assert!((proposal.predicted_ms - predicted).abs() < 1e-6);
    }
    // The paper's numbers: Pi at 23 workers, Tt at 40.
    assert_eq!(curve.best_index().workers, 23);
    // At the optimum there is nothing to propose.
    let at_optimum = measured(1, 23, &p, None);
    let _ = est.update(&at_optimum, Protocol::Async);
    assert!(
        propose_workers(
            &est,
            &at_optimum,
            at_optimum.facts.tasks,
            23,
            range,
            Objective::Index,
            Protocol::Async
        )
        .is_none()
    );
}

#[test]
fn the_mcmc_bounds_the_index_and_not_the_time() {
    // Cheap work, costly messages: the master cannot feed more than 2 workers before the first
    // answer returns, yet sending on while it is out still shortens the iteration: Tt falls to
    // the end of the range.
    let p = Params {
        tc_ms: 100.0,
        volume_bytes: 1e6,
        alpha: 0.9,
        mo_ms: 0.5,
        k_ms_per_byte: 1e-4,
        lm_ms: 0.0,
    };
    let mcmc = model::mcmc(&p, Protocol::Async).unwrap().unwrap();
    assert_eq!(mcmc, 2);
    let mut est = Estimate::default();
    let obs = measured(0, 1, &p, None);
    let _ = est.update(&obs, Protocol::Async);
    let range = workers::Range { lo: 1, hi: 32 };
    let propose = |objective| {
        propose_workers(
            &est,
            &obs,
            obs.facts.tasks,
            1,
            range,
            objective,
            Protocol::Async,
        )
    };
    let index = propose(Objective::Index);
    assert!(
        index.as_ref().is_none_or(|p| p.to <= mcmc as f64),
        "{index:?}"
    );
    let fastest = model::sweep(&p, Protocol::Async, 1..=32)
        .unwrap()
        .best_time()
        .workers;
    assert!(fastest > mcmc, "{fastest}");
    let time = propose(Objective::Time).unwrap();
    assert_eq!(time.change, TunableId::NWORKERS.change(fastest as i64));
}

#[test]
fn the_workers_tunlet_stays_within_its_range() {
    let p = fig6(1.0);
    let obs = measured(0, 4, &p, None);
    let mut est = Estimate::default();
    let _ = est.update(&obs, Protocol::Async);
    let narrow = workers::Range { lo: 2, hi: 10 };
    let proposal = propose_workers(
        &est,
        &obs,
        obs.facts.tasks,
        4,
        narrow,
        Objective::Index,
        Protocol::Async,
    )
    .unwrap();
    assert_eq!(proposal.change, TunableId::NWORKERS.change(10));
}

#[test]
fn a_persistent_proposal_is_applied_after_persistence_iterations() {
    let p = fig6(1.0);
    let mut h = Harness::under_way(4, Objective::Index);
    h.step(|i, n| measured(i, n, &p, None));
    assert_eq!(h.nworkers(), 4);
    h.step(|i, n| measured(i, n, &p, None));
    assert!(
        h.decisions.is_empty(),
        "nothing applies before the boundary"
    );
    h.step(|i, n| measured(i, n, &p, None));
    assert_eq!(h.nworkers(), 23, "{:?}", h.decisions);
    let d = &h.decisions[0];
    assert_eq!((d.iteration, d.tunable.as_str()), (3, "nworkers"));
    assert!(
        d.reason.starts_with("balanced model: Pi(23)"),
        "{}",
        d.reason
    );
    assert!(d.reason.contains("held 2 iterations"), "{}", d.reason);
    // For people, the same in words; the numbers stay in the reason.
    assert!(
        d.summary.starts_with("best time per worker: expected ")
            && d.summary.ends_with("% less time × workers"),
        "{}",
        d.summary
    );
    let predicted = model::iteration_time(&p, 23, Protocol::Async).unwrap();
    assert!((d.predicted_ms.unwrap() - predicted).abs() < 1e-6);
    assert_eq!(d.details["model"]["mcmc"], 41);
    // Kept: the new time is what the model said.
    for _ in 0..6 {
        h.step(|i, n| measured(i, n, &p, None));
    }
    assert_eq!(h.decisions.len(), 1, "{:?}", h.decisions);
    let prediction = h.tuner.predict(1600, 23).unwrap();
    assert!((prediction - predicted).abs() / predicted < 1e-6);
}

#[test]
fn the_first_boundary_acts_at_once_on_a_large_gain_only() {
    let p = fig6(1.0);
    // From one worker, the optimum promises far more than halving the index: applied after
    // the first iteration, and kept.
    let mut h = Harness::new(1, Objective::Index);
    h.step(|i, n| measured(i, n, &p, None));
    h.step(|i, n| measured(i, n, &p, None));
    assert_eq!(h.nworkers(), 23, "{:?}", h.decisions);
    assert_eq!(h.decisions[0].iteration, 1);
    assert!(h.decisions[0].reason.contains("held 1 iteration,"));
    for _ in 0..6 {
        h.step(|i, n| measured(i, n, &p, None));
    }
    assert_eq!(h.decisions.len(), 1, "{:?}", h.decisions);
    // Close to the optimum, the gain is small: the first boundary waits like any other.
    let mut h = Harness::new(12, Objective::Index);
    h.step(|i, n| measured(i, n, &p, None));
    h.step(|i, n| measured(i, n, &p, None));
    assert!(h.decisions.is_empty(), "{:?}", h.decisions);
    h.step(|i, n| measured(i, n, &p, None));
    assert_eq!(h.nworkers(), 23, "{:?}", h.decisions);
    assert!(h.decisions[0].reason.contains("held 2 iterations"));
}

#[test]
fn the_first_look_acts_at_once_on_more_workers_that_promise_nearly_all_they_could() {
    let numbers = |mut p: Proposal, from: f64, to: f64| {
        (p.from, p.to) = (from, to);
        p
    };
    let workers = |from: i64, to: i64, gain: f64| {
        let p = Proposal::new(TunableId::NWORKERS, to, gain, "test");
        numbers(p, from as f64, to as f64)
    };
    let factor = |gain: f64| {
        numbers(
            Proposal::new(TunableId::FACTOR, 0.3, gain, "test"),
            0.5,
            0.3,
        )
    };
    let needed = |p: &Proposal, first| Decider::persistence_needed(2, first, p);
    // One to two workers can gain at most half: 0.485 is nearly all of it.
    assert_eq!(needed(&workers(1, 2, 0.485), true), 1);
    assert_eq!(needed(&workers(1, 2, 0.485), false), 2);
    // Well short of what the doubling could give: it waits.
    assert_eq!(needed(&workers(1, 2, 0.40), true), 2);
    // Two to three: a third at most.
    assert_eq!(needed(&workers(2, 3, 0.31), true), 1);
    // Fewer workers, or another tunable, only at half the objective or more.
    assert_eq!(needed(&workers(4, 2, 0.45), true), 2);
    assert_eq!(needed(&factor(0.45), true), 2);
    assert_eq!(needed(&factor(0.55), true), 1);
}

#[test]
fn a_transient_spike_does_not_trigger_a_change() {
    let (quiet, spike) = (fig6(1.0), fig6(3.0));
    let mut h = Harness::new(23, Objective::Index);
    for i in 0..10 {
        let p = if i == 4 { spike } else { quiet };
        h.step(|i, n| measured(i, n, &p, None));
    }
    assert!(h.decisions.is_empty(), "{:?}", h.decisions);
    assert_eq!(h.nworkers(), 23);
}

#[test]
fn a_persistent_change_of_load_does() {
    let (quiet, loaded) = (fig6(1.0), fig6(3.0));
    let mut h = Harness::new(23, Objective::Index);
    for i in 0..8 {
        let p = if i >= 3 { loaded } else { quiet };
        h.step(|i, n| measured(i, n, &p, None));
    }
    let expected = model::sweep(&loaded, Protocol::Async, 1..=60)
        .unwrap()
        .capped(model::mcmc(&loaded, Protocol::Async).unwrap())
        .best_index()
        .workers;
    assert!(expected > 23);
    assert_eq!(h.decisions.len(), 1, "{:?}", h.decisions);
    assert_eq!(
        h.decisions[0].iteration, 5,
        "held during iterations 3 and 4"
    );
    assert_eq!(h.nworkers(), expected);
}

#[test]
fn a_change_that_made_things_worse_is_rolled_back_and_not_retried() {
    let p = fig6(1.0);
    let before = model::iteration_time(&p, 4, Protocol::Async).unwrap();
    // The system is not what the model says: more workers make it slower.
    let real = move |i: usize, n: usize| {
        let time = if n == 4 { before } else { before * 1.5 };
        measured(i, n, &p, Some(time))
    };
    let mut h = Harness::under_way(4, Objective::Index);
    for _ in 0..3 {
        h.step(real);
    }
    assert_eq!(h.nworkers(), 23, "{:?}", h.decisions);
    // Two iterations at 23 are watched, then undone.
    for _ in 0..3 {
        h.step(real);
    }
    assert_eq!(h.decisions.len(), 2, "{:?}", h.decisions);
    let back = &h.decisions[1];
    assert_eq!((back.iteration, back.to.as_u64()), (5, Some(4)));
    assert!(back.reason.starts_with("rollback:"), "{}", back.reason);
    assert!(back.summary.starts_with("undone: "), "{}", back.summary);
    assert!(back.measured_ms.unwrap() > before * 1.4);
    assert_eq!(back.details["tried"], 23.0);
    assert!((back.details["baseline_ms"].as_f64().unwrap() - before).abs() < 1e-9);
    // The model still prefers 23, but it was tried: no oscillation.
    for _ in 0..12 {
        h.step(real);
    }
    assert_eq!(h.decisions.len(), 2, "{:?}", h.decisions);
    assert_eq!(h.nworkers(), 4);
}

#[test]
fn hysteresis_lifts_when_conditions_change_a_lot() {
    let p = fig6(1.0);
    let before = model::iteration_time(&p, 4, Protocol::Async).unwrap();
    let mut h = Harness::new(4, Objective::Index);
    let worse = move |i: usize, n: usize| {
        let time = if n == 4 { before } else { before * 1.5 };
        measured(i, n, &p, Some(time))
    };
    for _ in 0..6 {
        h.step(worse);
    }
    assert_eq!(h.decisions.len(), 2);
    // Tasks now take three times as long, and the model is right again.
    let loaded = fig6(3.0);
    for _ in 0..4 {
        h.step(|i, n| measured(i, n, &loaded, None));
    }
    assert_eq!(h.decisions.len(), 3, "{:?}", h.decisions);
    assert!(h.nworkers() > 4);
}

#[test]
fn external_changes_hold_the_tunable_until_released() {
    let p = fig6(1.0);
    let mut h = Harness::new(4, Objective::Index);
    h.handle
        .request_why(
            TunableId::NWORKERS.change(8),
            crate::tuning::tunables::Why::plain(
                crate::tuning::tunables::Source::External,
                "external",
            ),
        )
        .unwrap();
    for _ in 0..6 {
        h.step(|i, n| measured(i, n, &p, None));
    }
    assert_eq!(h.nworkers(), 8);
    assert_eq!(h.decisions.len(), 1);
    assert_eq!(h.decisions[0].reason, "external");
    h.handle.release("nworkers").unwrap();
    for _ in 0..3 {
        h.step(|i, n| measured(i, n, &p, None));
    }
    assert_eq!(h.nworkers(), 23, "{:?}", h.decisions);
}

#[test]
fn tuning_off_measures_and_predicts_but_changes_nothing() {
    let p = fig6(1.0);
    let mut h = Harness::new(4, Objective::Index);
    h.tuner.config.mode = TuneMode::Off;
    assert_eq!(h.tuner.predict(1600, 4), None, "nothing measured yet");
    for _ in 0..6 {
        h.step(|i, n| measured(i, n, &p, None));
    }
    assert!(h.decisions.is_empty());
    let predicted = model::iteration_time(&p, 4, Protocol::Async).unwrap();
    assert!((h.tuner.predict(1600, 4).unwrap() - predicted).abs() < 1e-6);
}

#[test]
fn the_factor_tunlet_simulates_candidates() {
    let stats = TaskStats::new(POOL);
    let setting = |factor: f64| factor::Setting {
        tasks: 400,
        workers: 4,
        factor,
        policy: PolicyName::Factoring.into(),
        min_chunk: 1,
        protocol: Protocol::Async,
        prefetch: 0,
        stats: &stats,
    };
    // Identical workers, regular tasks, costly messages: the fewest chunks win.
    let p = Params {
        tc_ms: 400.0,
        volume_bytes: 4000.0,
        alpha: 0.5,
        mo_ms: 0.5,
        k_ms_per_byte: 0.0,
        lm_ms: 0.0,
    };
    let mut obs = measured(0, 4, &p, None);
    obs.facts.tasks = 400;
    let mut est = Estimate::default();
    let _ = est.update(&obs, Protocol::Async);
    let proposal = factor_proposal(
        &mut factor::FactorTunlet::default(),
        &est,
        &obs,
        &setting(0.2),
    )
    .unwrap();
    assert_eq!(proposal.change, TunableId::FACTOR.change(1.0));
    assert!(proposal.gain > 0.0);
    assert!(
        factor_proposal(
            &mut factor::FactorTunlet::default(),
            &est,
            &obs,
            &setting(1.0)
        )
        .is_none()
    );
    // One worker four times slower: big first chunks would wait for it.
    let slow = obs.worker_tasks[0];
    obs.worker_tasks[0] = Moments::from_sums(slow.count(), slow.sum() * 4.0, slow.sum_sq() * 16.0);
    let _ = est.update(&obs, Protocol::Async);
    let proposal = factor_proposal(
        &mut factor::FactorTunlet::default(),
        &est,
        &obs,
        &setting(1.0),
    )
    .unwrap();
    assert!(proposal.to < 1.0, "{proposal:?}");
    // The prediction is the model's time at the current factor scaled by the simulated gain:
    // positive even where the simulated imbalance is larger than the model's whole time.
    let base = est.predict(400, 4, Protocol::Async).unwrap();
    let expected = base * (1.0 - proposal.gain);
    assert!(
        proposal.predicted_ms > 0.0 && (proposal.predicted_ms - expected).abs() < 1e-9,
        "{proposal:?}, base {base}"
    );
    // Policies without a factor are left alone.
    let daf = factor::Setting {
        policy: PolicyName::Daf.into(),
        ..setting(0.5)
    };
    assert!(factor_proposal(&mut factor::FactorTunlet::default(), &est, &obs, &daf).is_none());
}

#[test]
fn the_factor_tunlet_reuses_its_simulation_while_the_inputs_hold() {
    let stats = TaskStats::new(POOL);
    let setting = factor::Setting {
        tasks: 1600,
        workers: 8,
        factor: 1.0,
        policy: PolicyName::Factoring.into(),
        min_chunk: 1,
        protocol: Protocol::Async,
        prefetch: 0,
        stats: &stats,
    };
    let p = fig6(1.0);
    let mut tunlet = factor::FactorTunlet::default();
    let mut est = Estimate::default();
    // Task times that vary, so that each simulation draws its own luck.
    let observe = |est: &mut Estimate, i: usize, slow: f64, jitter: f64| {
        let mut obs = measured(i, 8, &p, None);
        for (w, m) in obs.worker_tasks.iter_mut().take(8).enumerate() {
            let scale = if w == 0 { slow } else { 1.0 } * (1.0 + jitter * (w % 3) as f64);
            *m = Moments::from_sums(m.count(), m.sum() * scale, m.sum_sq() * scale * scale * 1.2);
        }
        let _ = est.update(&obs, Protocol::Async);
        obs
    };
    let obs = observe(&mut est, 0, 1.0, 0.0);
    let gain = |p: Option<decide::Proposal>| p.map(|p| (p.to, p.gain));
    let first = gain(factor_proposal(&mut tunlet, &est, &obs, &setting));
    assert_eq!(tunlet.simulations, 1);
    // Jitter of a few percent: the same candidates' times, the same proposal.
    let obs = observe(&mut est, 1, 1.0, 0.02);
    assert_eq!(
        gain(factor_proposal(&mut tunlet, &est, &obs, &setting)),
        first
    );
    assert_eq!(tunlet.simulations, 1);
    // One worker four times slower: simulated again, and smaller chunks win.
    let obs = observe(&mut est, 2, 4.0, 0.0);
    let slow = factor_proposal(&mut tunlet, &est, &obs, &setting).unwrap();
    assert_eq!(tunlet.simulations, 2);
    assert!(slow.to < 1.0, "{slow:?}");
    // A new setting (here the factor) is simulated afresh.
    let smaller = factor::Setting {
        factor: slow.to,
        ..setting
    };
    let at_smaller = gain(factor_proposal(&mut tunlet, &est, &obs, &smaller));
    assert_eq!(tunlet.simulations, 3);
    // A task count within a tenth (a growing workload): the same simulation, scaled; beyond
    // it, simulated anew.
    let more = |tasks| factor::Setting {
        tasks,
        ..smaller.clone()
    };
    assert_eq!(
        gain(factor_proposal(&mut tunlet, &est, &obs, &more(1_700))),
        at_smaller
    );
    assert_eq!(tunlet.simulations, 3);
    let _ = factor_proposal(&mut tunlet, &est, &obs, &more(2_400));
    assert_eq!(tunlet.simulations, 4);
}

#[test]
fn the_factor_tunlet_simulates_less_often_while_nothing_is_worth_proposing() {
    let stats = TaskStats::new(POOL);
    let setting = factor::Setting {
        tasks: 1600,
        workers: 8,
        factor: 1.0,
        policy: PolicyName::Factoring.into(),
        min_chunk: 1,
        protocol: Protocol::Async,
        prefetch: 0,
        stats: &stats,
    };
    let mut tunlet = factor::FactorTunlet::default();
    let mut est = Estimate::default();
    let mut simulated_at = Vec::new();
    let mut obs = measured(0, 8, &fig6(1.0), None);
    for i in 0..12 {
        // Costlier messages at every look: the last simulation's inputs never hold, and one
        // chunk per worker stays the fastest.
        let p = Params {
            mo_ms: 1.0 + 0.3 * i as f64,
            ..fig6(1.0)
        };
        obs = measured(i, 8, &p, None);
        let _ = est.update(&obs, Protocol::Async);
        let before = tunlet.simulations;
        assert!(
            factor_proposal(&mut tunlet, &est, &obs, &setting).is_none(),
            "{i}"
        );
        if tunlet.simulations > before {
            simulated_at.push(i);
        }
    }
    assert_eq!(simulated_at, [0, 2, 5, 10]);
    // One worker four times slower (load came): simulated at once, and smaller chunks win.
    let slow = obs.worker_tasks[0];
    obs.worker_tasks[0] = Moments::from_sums(slow.count(), slow.sum() * 4.0, slow.sum_sq() * 16.0);
    let _ = est.update(&obs, Protocol::Async);
    let proposal = factor_proposal(&mut tunlet, &est, &obs, &setting);
    assert_eq!(tunlet.simulations, 5);
    assert!(proposal.is_some_and(|p| p.to < 1.0));
}

#[test]
fn the_simulation_matches_the_obvious_cases() {
    use simulate::{SimWorker, Spec, simulate};
    let stats = TaskStats::new(4);
    let workers = [SimWorker {
        mean_ms: 1.0,
        sd_ms: 0.0,
    }; 4];
    let spec = Spec {
        tasks: 100,
        workers: &workers,
        policy: PolicyName::Static,
        factor: 0.5,
        min_chunk: 1,
        stats: &stats,
        protocol: Protocol::Sync,
        mo_ms: 0.0,
        k_ms_per_byte: 0.0,
        task_bytes: 0.0,
        result_bytes: 0.0,
        shared_bytes: 0.0,
        recover_ms_per_task: 0.0,
        serial_ms: 2.0,
        prefetch: 0,
    };
    // 25 tasks each, no communication: 25 ms, plus the master's serial work.
    assert!((simulate(&spec, 1, 3) - 27.0).abs() < 1e-9);
    // Sync sends of 1 ms each: the last worker starts 4 ms late (shared parts are empty but
    // still cost a start-up each: 4 more).
    let costly = Spec {
        mo_ms: 1.0,
        ..spec.clone()
    };
    let t = simulate(&costly, 1, 3);
    assert!((t - (8.0 + 25.0 + 1.0 + 2.0)).abs() < 1e-9, "{t}");
    // Deviation costs time on average (the slowest chunk decides), and the same seed gives the
    // same answer.
    let noisy_workers = [SimWorker {
        mean_ms: 1.0,
        sd_ms: 0.5,
    }; 4];
    let noisy = Spec {
        workers: &noisy_workers,
        ..spec.clone()
    };
    let a = simulate(&noisy, 9, 8);
    assert!(a > 27.0);
    assert_eq!(a, simulate(&noisy, 9, 8));
}

#[test]
fn the_simulation_takes_a_policy_factory() {
    use simulate::{SimWorker, Spec, simulate, simulate_with};
    let stats = TaskStats::new(3);
    let workers = [
        SimWorker {
            mean_ms: 1.0,
            sd_ms: 0.3,
        },
        SimWorker {
            mean_ms: 4.0,
            sd_ms: 1.2,
        },
        SimWorker {
            mean_ms: 1.0,
            sd_ms: 0.3,
        },
    ];
    let spec = Spec {
        tasks: 300,
        workers: &workers,
        policy: PolicyName::Static,
        factor: 0.5,
        min_chunk: 1,
        stats: &stats,
        protocol: Protocol::Async,
        mo_ms: 0.05,
        k_ms_per_byte: 0.0,
        task_bytes: 8.0,
        result_bytes: 8.0,
        shared_bytes: 0.0,
        recover_ms_per_task: 0.0,
        serial_ms: 1.0,
        prefetch: 1,
    };
    // A factory of `gss` policies simulates as `gss` named in the spec, with the same luck,
    // whatever policy the spec names.
    let by_name = simulate(
        &Spec {
            policy: PolicyName::Gss,
            ..spec.clone()
        },
        5,
        4,
    );
    let by_factory = simulate_with(&spec, &|| PolicyName::Gss.build(), 5, 4);
    assert_eq!(by_name, by_factory);
    // A policy of the program's own: chunks of 10, which the slow worker does not hold back
    // as it does `static`'s 100.
    #[derive(Debug)]
    struct Tens;
    impl crate::policy::Policy for Tens {
        fn name(&self) -> &str {
            "tens"
        }
        fn begin(&mut self, _plan: &crate::policy::Plan<'_>) {}
        fn next_chunk(&mut self, ask: &crate::policy::Ask<'_>) -> usize {
            ask.remaining.min(10)
        }
    }
    let tens = simulate_with(&spec, &|| Box::new(Tens), 5, 4);
    let fixed = simulate(&spec, 5, 4);
    assert!(tens < fixed * 0.6, "tens {tens} ms, static {fixed} ms");
}

#[test]
fn prefetched_chunks_hide_the_round_trip_in_the_simulation() {
    use simulate::{SimWorker, Spec, simulate};
    let stats = TaskStats::new(2);
    let workers = [SimWorker {
        mean_ms: 1.0,
        sd_ms: 0.0,
    }; 2];
    // 100 chunks of one 1 ms task on 2 workers, 0.5 ms per message each way.
    let plain = Spec {
        tasks: 100,
        workers: &workers,
        policy: PolicyName::Fsc,
        factor: 0.01,
        min_chunk: 1,
        stats: &stats,
        protocol: Protocol::Async,
        mo_ms: 0.5,
        k_ms_per_byte: 0.0,
        task_bytes: 0.0,
        result_bytes: 0.0,
        shared_bytes: 0.0,
        recover_ms_per_task: 0.0,
        serial_ms: 0.0,
        prefetch: 0,
    };
    // Without prefetch every chunk waits a round trip: about 2 ms a chunk, 50 chunks a worker.
    let without = simulate(&plain, 1, 1);
    assert!(without > 99.0, "{without}");
    // One ahead: the next chunk is there when the last is done, about 1 ms a chunk.
    let ahead = simulate(
        &Spec {
            prefetch: 1,
            ..plain.clone()
        },
        1,
        1,
    );
    assert!(ahead < 55.0, "{ahead}");
}

#[test]
fn scores_compare_iterations_of_different_sizes() {
    let p = fig6(1.0);
    let obs = measured(0, 4, &p, None);
    let mut bigger = obs.clone();
    bigger.facts.tasks *= 2;
    bigger.facts.time_ms *= 2.0;
    bigger.tc_ms *= 2.0;
    bigger.own_ms *= 2.0;
    for objective in [Objective::Time, Objective::Index] {
        let (a, b) = (score(&obs, objective), score(&bigger, objective));
        assert!((a - b).abs() < 1e-12 * a, "{objective}: {a} vs {b}");
    }
}

#[test]
fn the_index_counts_the_tasks_own_time_not_their_waits_for_a_core() {
    // N-Body on 2 cores beside a program spinning on both, as measured: one worker took 256 ms
    // an iteration, its tasks 197 ms of which 150 waiting for a core; two took 153 ms, their
    // tasks 111 ms of which 64 waiting. The same work, done faster: the index must prefer two.
    let p = fig6(1.0);
    let mut one = measured(0, 1, &p, Some(256.0));
    (one.tc_ms, one.own_ms, one.active) = (197.0, 47.0, 1);
    let mut two = measured(1, 2, &p, Some(153.0));
    (two.tc_ms, two.own_ms, two.active) = (111.0, 47.0, 2);
    let (one, two) = (score(&one, Objective::Index), score(&two, Objective::Index));
    assert!(two < one, "two workers {two} against one {one}");
}

#[test]
fn the_policy_tunlet_simulates_the_portfolio() {
    // 400 tasks of 1 ms on 4 workers, workers 0 and 1 four times slower: all together they do
    // 2.5 tasks a ms, so the ideal iteration takes 160 ms.
    let p = Params {
        tc_ms: 400.0,
        volume_bytes: 4000.0,
        alpha: 0.5,
        mo_ms: 0.01,
        k_ms_per_byte: 0.0,
        lm_ms: 0.0,
    };
    let mut obs = measured(0, 4, &p, None);
    obs.facts.tasks = 400;
    for w in [0, 1] {
        let m = obs.worker_tasks[w];
        obs.worker_tasks[w] = Moments::from_sums(m.count(), m.sum() * 4.0, m.sum_sq() * 16.0);
    }
    let mut stats = TaskStats::new(POOL);
    for (w, m) in obs.worker_tasks.iter().enumerate() {
        stats.record(w, m);
    }
    let mut est = Estimate::default();
    let _ = est.update(&obs, Protocol::Async);
    let setting = |policy: PolicyName| factor::Setting {
        tasks: 400,
        workers: 4,
        factor: 0.5,
        policy: policy.into(),
        min_chunk: 1,
        protocol: Protocol::Async,
        prefetch: 0,
        stats: &stats,
    };
    let mut tunlet = policy::PolicyTunlet::default();
    let proposal = in_view(&est, &obs, &setting(PolicyName::Static), |view| {
        tunlet.propose(view)
    })
    .unwrap();
    let Some(PolicyChoice::BuiltIn(best)) = proposal.change.value(TunableId::POLICY) else {
        panic!("{proposal:?}")
    };
    // Static waits for the slow workers' 100 tasks: 400 ms, where the best is near the ideal.
    let best_ms = proposal.predicted_ms / est.predict(400, 4, Protocol::Async).unwrap() * 400.0;
    assert!(proposal.gain > 0.5, "{proposal:?}");
    assert!(
        best_ms < 1.1 * 160.0,
        "{best} at {best_ms} ms: {proposal:?}"
    );
    let details = proposal.explanation.details();
    assert_eq!(details["simulated"].as_array().unwrap().len(), 15);
    // From the best there is nothing to propose; `dpf` is simulated as `factoring`.
    assert!(in_view(&est, &obs, &setting(best), |view| tunlet.propose(view)).is_none());
    let factoring = in_view(&est, &obs, &setting(PolicyName::Factoring), |view| {
        tunlet.propose(view)
    });
    let dpf = in_view(&est, &obs, &setting(PolicyName::Dpf), |view| {
        tunlet.propose(view)
    });
    assert_eq!(factoring.map(|p| p.gain), dpf.map(|p| p.gain));
    // Policies have no order: a streak counts proposals of the same policy.
    let mut decider = decide::Decider::default();
    let to = |policy: PolicyName| decide::Proposal {
        change: TunableId::POLICY.change(policy.into()),
        to: PolicyName::ALL.iter().position(|&p| p == policy).unwrap() as f64,
        ..proposal.clone()
    };
    assert_eq!(
        decider.hold(
            crate::tuning::tunables::Tunable::POLICY,
            decide::Evidence::For(&to(PolicyName::Wf)),
            0
        ),
        1
    );
    assert_eq!(
        decider.hold(
            crate::tuning::tunables::Tunable::POLICY,
            decide::Evidence::For(&to(PolicyName::Af)),
            0
        ),
        1
    );
    assert_eq!(
        decider.hold(
            crate::tuning::tunables::Tunable::POLICY,
            decide::Evidence::For(&to(PolicyName::Af)),
            0
        ),
        2
    );
    // The simulations are keyed on the policy that runs: two registered policies, and a
    // registered one and a built-in one, are told apart.
    let registered = |name: &str| factor::Setting {
        policy: PolicyChoice::Registered(name.into()),
        ..setting(PolicyName::Daf)
    };
    let key = |setting: &factor::Setting<'_>| {
        in_view(&est, &obs, setting, |view| {
            factor::Key::new(view, view.policy(), &view.simulated_workers(4))
        })
    };
    let tiles = key(&registered("tiles"));
    assert!(tiles.close_to(&key(&registered("tiles"))));
    assert!(!tiles.close_to(&key(&registered("pairs"))));
    assert!(!tiles.close_to(&key(&setting(PolicyName::Auto))));
}

#[test]
fn a_gain_within_the_noise_neither_counts_nor_breaks_a_streak() {
    use decide::Evidence::{For, Nothing, Weak};
    let up = decide::Proposal {
        change: TunableId::NWORKERS.change(8),
        from: 7.0,
        to: 8.0,
        gain: 0.1,
        sensitivity: 1.0,
        predicted_ms: 50.0,
        miss: 0.0,
        explanation: decide::Explanation::declared(String::new()),
    };
    let down = decide::Proposal {
        change: TunableId::NWORKERS.change(6),
        to: 6.0,
        ..up.clone()
    };
    let workers = crate::tuning::tunables::Tunable::NWORKERS;
    let mut decider = decide::Decider::default();
    // A loaded phase seen clearly at one look, looks within the noise between, and the next
    // loaded phase: two looks the same way.
    assert_eq!(decider.hold(workers, For(&up), 9), 1);
    for iteration in 10..25 {
        assert_eq!(decider.hold(workers, Weak, iteration), 1);
    }
    assert_eq!(decider.hold(workers, For(&up), 25), 2);
    // A look that proposes nothing breaks it, and so does one past the bar the other way.
    assert_eq!(decider.hold(workers, Nothing, 26), 0);
    assert_eq!(decider.hold(workers, For(&up), 27), 1);
    assert_eq!(decider.hold(workers, For(&down), 28), 1);
    assert_eq!(decider.hold(workers, For(&down), 29), 2);
    // A streak left unconfirmed for as long as hysteresis lasts is forgotten.
    let mut decider = decide::Decider::default();
    assert_eq!(decider.hold(workers, For(&up), 0), 1);
    let later = decide::HYSTERESIS_ITERATIONS;
    assert_eq!(decider.hold(workers, Weak, later), 0);
    assert_eq!(decider.hold(workers, For(&up), later), 1);
}

#[test]
fn the_policy_tunlet_keeps_proposing_a_close_second() {
    use policy::choose;
    let times = [
        (PolicyName::Daf, 100.0),
        (PolicyName::Ss, 90.0),
        (PolicyName::AwfB, 89.0),
        (PolicyName::Static, 150.0),
    ];
    // The fastest, when nothing was proposed before or the last proposal was the fastest.
    assert_eq!(
        choose(&times, PolicyName::Daf, None),
        (PolicyName::AwfB, 89.0)
    );
    assert_eq!(
        choose(&times, PolicyName::Daf, Some(PolicyName::AwfB)),
        (PolicyName::AwfB, 89.0)
    );
    // `ss`, proposed last time, is within 3 % of `awf-b`: proposed again, so that its
    // streak goes on.
    assert_eq!(
        choose(&times, PolicyName::Daf, Some(PolicyName::Ss)),
        (PolicyName::Ss, 90.0)
    );
    // Not a candidate far behind, nor one slower than the current policy.
    assert_eq!(
        choose(&times, PolicyName::Daf, Some(PolicyName::Static)),
        (PolicyName::AwfB, 89.0)
    );
    let close = [(PolicyName::Daf, 100.0), (PolicyName::Ss, 101.0)];
    assert_eq!(
        choose(&close, PolicyName::Daf, Some(PolicyName::Ss)),
        (PolicyName::Daf, 100.0)
    );
}

/// Factoring at 0.5 on 8 workers, 1,600 tasks of 0.1 ms behind messages of 0.5 ms, with the
/// factor tuned: the factor after six iterations that each take `time(simulated)`, where
/// `simulated` is the factor tunlet's time for the factor in force.
fn factor_after(time: impl Fn(f64) -> f64) -> f64 {
    let setup = setup(TuningConfig {
        mode: TuneMode::Factor,
        ..TuningConfig::default()
    });
    let tunables = Tunables {
        nworkers: 8,
        factor: 0.5,
        policy: PolicyName::Factoring.into(),
    };
    let mut h = Harness {
        tuner: Tuner::new(setup, None, Objective::Time),
        handle: TunablesHandle::new(tunables, POOL),
        stats: TaskStats::new(POOL),
        decisions: Vec::new(),
        index: 1,
    };
    h.tuner.looked = true;
    let p = Params {
        tc_ms: 160.0,
        volume_bytes: 4000.0,
        alpha: 0.5,
        mo_ms: 0.5,
        k_ms_per_byte: 0.0,
        lm_ms: 0.0,
    };
    // What the tunlet simulates for these measurements at the factor in force.
    let simulated = |factor: f64| {
        let obs = measured(0, 8, &p, None);
        let mut est = Estimate::default();
        let _ = est.update(&obs, Protocol::Async);
        let stats = TaskStats::new(POOL);
        let setting = factor::Setting {
            tasks: obs.facts.tasks,
            workers: 8,
            factor,
            policy: PolicyName::Factoring.into(),
            min_chunk: 1,
            protocol: Protocol::Async,
            prefetch: 0,
            stats: &stats,
        };
        in_view(&est, &obs, &setting, |view| {
            let workers = view.simulated_workers(8);
            simulate::simulate(
                &view.simulation(&workers, PolicyName::Factoring, factor),
                0,
                1,
            )
        })
    };
    for _ in 0..6 {
        let factor = h.handle.current().factor;
        let ms = time(simulated(factor));
        h.step(|i, n| {
            let mut obs = measured(i, n, &p, Some(ms));
            obs.facts.factor = factor;
            obs
        });
    }
    h.handle.current().factor
}

#[test]
fn a_simulated_gain_larger_than_the_simulations_miss_is_acted_on() {
    // Iterations as long as simulated: fewer, larger chunks save the messages' cost.
    assert_eq!(factor_after(|simulated| simulated), 1.0);
}

#[test]
fn a_simulated_gain_the_iterations_do_not_bear_out_is_not_acted_on() {
    // Iterations a third as long as simulated (the messages cost the master far less than the
    // simulation charges): the gain promised by fewer messages is within the miss.
    assert_eq!(factor_after(|simulated| simulated / 3.0), 0.5);
}

#[test]
fn a_simulation_short_of_the_iterations_still_lets_a_large_gain_through() {
    // Iterations half as long again as simulated (time the simulation does not count, the same
    // at every factor): the miss is a third of the measured time, and the gain of fewer
    // messages passes it. Over the simulated time the miss was a half, and blocked it.
    assert_eq!(factor_after(|simulated| simulated * 1.5), 1.0);
}

/// Proposes `tile` = 2 while it is 1, with a gain large enough to act on at the first look.
#[derive(Debug)]
struct DoubleTile(crate::tuning::tunables::TunableId<i64>);

impl Tunlet for DoubleTile {
    fn tunable(&self) -> Tunable {
        self.0.tunable()
    }
    fn propose(&mut self, view: &TunerView<'_>) -> Option<Proposal> {
        (view.value(self.0) == 1).then(|| Proposal::new(self.0, 2, 0.6, "larger tiles"))
    }
}

/// A program's tunable, read in `partition`, changed by its tunlet at a checkpoint inside
/// iteration 0: the rest of iteration 0 still runs with the old value (the shared part is
/// sent), so the change is judged on the iterations that run with the new one, not rolled
/// back because the tasks after the checkpoint happened to be slower.
#[test]
fn a_change_that_takes_effect_next_iteration_is_judged_on_that_iteration() {
    let p = fig6(1.0);
    let mut h = Harness::new(4, Objective::Time);
    let tile = h.handle.declare("tile", 1_i64, 1..=8).unwrap();
    h.tuner.add_tunlets(vec![Box::new(DoubleTile(tile))]);
    // Only the tile is left to the tuner.
    h.handle
        .request(TunableId::FACTOR.change(0.5), "fixed")
        .unwrap();
    h.handle
        .request(TunableId::NWORKERS.change(4), "fixed")
        .unwrap();
    h.handle.apply_pending(0);

    // Iteration 0: 1600 tasks of 1 ms on 4 workers; checkpoints every 400 tasks. The tasks
    // after the first checkpoint take 20 % longer, with the tile still 1.
    let span = |tasks: u64, ms: f64| Span {
        ms,
        tasks,
        busy_ms: tasks as f64,
        answers: tasks / 10,
        workers: 4,
        in_flight: (0.0, 0.0),
    };
    let so_far = |s: Span| {
        let mut obs = measured(0, 4, &p, Some(s.ms));
        obs.facts.tasks = s.tasks as usize;
        obs.facts.mixed = true;
        obs
    };
    let mut mixed = false;
    for s in [span(400, 100.0), span(800, 220.0), span(1200, 340.0)] {
        let current = h.handle.current();
        let asked = h.tuner.checkpoint(
            &so_far(s),
            s,
            1600 - s.tasks as usize,
            200,
            &current,
            POOL,
            &h.stats,
            &h.handle,
        );
        if asked {
            // What the engine does: the changes that take effect at once are applied now.
            let applied = h.handle.apply_tuned_now(0, s.tasks as usize);
            mixed |= !applied.is_empty();
            h.tuner.applied(&applied);
            h.decisions.extend(applied.into_iter().map(|a| a.decision));
        }
    }
    h.tuner.close_midway(span(1600, 460.0), 0, &h.handle);
    let current = h.handle.current();
    let mut obs = measured(0, 4, &p, Some(460.0));
    obs.facts.mixed = mixed;
    h.tuner.observe(&obs, &current, POOL, &h.stats, &h.handle);
    h.index = 1;
    // Iterations 1 to 3 run with tile 2, each a fifth faster than iteration 0.
    for _ in 0..3 {
        h.step(|i, n| measured(i, n, &p, Some(370.0)));
    }
    let tiles: Vec<_> = h.decisions.iter().filter(|d| d.tunable == "tile").collect();
    assert_eq!(tiles.len(), 1, "{tiles:#?}");
    assert_eq!((tiles[0].iteration, tiles[0].to.as_i64()), (1, Some(2)));
    assert_eq!(tiles[0].tasks_done, None, "{:?}", tiles[0]);
    assert_eq!(h.handle.value(tile), 2);
}

/// Proposes a factor though it names `tile`.
#[derive(Debug)]
struct Astray(crate::tuning::tunables::TunableId<i64>);

impl Tunlet for Astray {
    fn tunable(&self) -> Tunable {
        self.0.tunable()
    }
    fn propose(&mut self, _: &TunerView<'_>) -> Option<Proposal> {
        Some(Proposal::new(crate::TunableId::FACTOR, 0.9, 0.6, "astray"))
    }
}

/// Proposes a tile outside its range.
#[derive(Debug)]
struct TooLarge(crate::tuning::tunables::TunableId<i64>);

impl Tunlet for TooLarge {
    fn tunable(&self) -> Tunable {
        self.0.tunable()
    }
    fn propose(&mut self, _: &TunerView<'_>) -> Option<Proposal> {
        Some(Proposal::new(self.0, 100, 0.6, "too large"))
    }
}

#[test]
fn a_dropped_proposal_is_reported_once() {
    let p = fig6(1.0);
    let mut h = Harness::under_way(4, Objective::Time);
    h.tuner.quiet = true;
    let tile = h.handle.declare("tile", 1_i64, 1..=8).unwrap();
    h.tuner
        .add_tunlets(vec![Box::new(Astray(tile)), Box::new(TooLarge(tile))]);
    for _ in 0..3 {
        h.step(|i, n| measured(i, n, &p, None));
    }
    assert!(
        h.decisions.iter().all(|d| d.tunable != "tile"),
        "{:?}",
        h.decisions
    );
    assert_eq!(h.tuner.dropped.len(), 2, "{:?}", h.tuner.dropped);
    assert!(
        h.tuner.dropped[0].starts_with("the tunlet of `tile` proposed a value for `factor`"),
        "{}",
        h.tuner.dropped[0]
    );
    assert!(
        h.tuner.dropped[1].contains("`tile` = 100 is out of range"),
        "{}",
        h.tuner.dropped[1]
    );
}

/// The workers tunlet's proposal for an iteration of `n` workers measured as `p` describes on a
/// machine of 4 cores, the workers' tasks using the processor as `cpu`, `wait` and `late` say.
fn on_four_cores(p: &Params, n: usize, (cpu, wait, late): (f64, Option<f64>, f64)) -> usize {
    let mut obs = measured(0, n, p, None);
    obs.cpu_share = Some(cpu);
    obs.wait_share = wait;
    obs.late_share = wait.map(|_| late);
    let mut est = Estimate::synthetic(Layout::one_node(4));
    let _ = est.update(&obs, Protocol::Async);
    let range = workers::Range { lo: 1, hi: 60 };
    let tasks = obs.facts.tasks;
    propose_workers(
        &est,
        &obs,
        tasks,
        n,
        range,
        Objective::Index,
        Protocol::Async,
    )
    .map_or(n, |proposal| proposal.to as usize)
}

#[test]
fn other_programs_load_neither_grows_nor_shrinks_computing_work() {
    // The paper's example (best Pi at 23 workers on free cores) with tasks that compute, on 4
    // cores beside spinning processes: each worker got half a core.
    let p = fig6(1.0);
    // Its CPU time alone says the tasks sleep half the time: room for 8 workers.
    assert_eq!(on_four_cores(&p, 2, (0.5, None, 0.0)), 8);
    // The run-queue wait says they were computing: no more workers than cores.
    assert_eq!(on_four_cores(&p, 2, (0.5, Some(0.5), 0.0)), 4);

    // Costly messages, cheap work: on free cores the best Pi is below the cores.
    let p = Params {
        mo_ms: 4.0,
        ..fig6(0.05)
    };
    let free = on_four_cores(&p, 4, (1.0, Some(0.0), 0.0));
    assert!(free < 4, "{free}");
    // Workers that woke late for their chunks while there were no more of them than cores
    // waited for other programs: their trips would look as costly at any count, the pool is
    // not shrunk for it.
    assert_eq!(on_four_cores(&p, 4, (1.0, Some(0.0), 0.3)), 4);
    // 8 computing workers on the 4 cores crowd each other: their waits are their own, and
    // shrinking is allowed.
    let crowded = on_four_cores(&p, 8, (0.5, Some(0.5), 0.3));
    assert!(crowded <= 4, "{crowded}");
}
