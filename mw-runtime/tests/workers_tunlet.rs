//! A worker-count tunlet written outside the crate, reading the performance model the built-in
//! one evaluates through the public `TunerView`, unit-tested on views built from numbers.
#![allow(clippy::unwrap_used)]

use mw_runtime::TunableId;
use mw_runtime::tuning::{Proposal, TunerView, TunerViewBuilder, Tunlet};

/// Proposes the worker count of the model's least iteration time over the range, never past
/// the MCMC; unlike the built-in tunlet, it ignores the load's balance and the machine.
#[derive(Debug, Default)]
struct FastestByModel;

impl Tunlet for FastestByModel {
    fn tunable(&self) -> mw_runtime::Tunable {
        TunableId::NWORKERS.tunable()
    }

    fn propose(&mut self, view: &TunerView<'_>) -> Option<Proposal> {
        let tasks = view.iteration_tasks();
        let range = view.workers_range();
        let hi = (*range.end()).min(view.mcmc(tasks).unwrap_or(usize::MAX));
        let now = view.model_ms(tasks, view.nworkers())?;
        let (best, best_ms) = (*range.start()..=hi)
            .filter_map(|n| Some((n, view.model_ms(tasks, n)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        (best != view.nworkers() && best_ms < now).then(|| {
            Proposal::new(
                TunableId::NWORKERS,
                best as i64,
                1.0 - best_ms / now,
                format!("model: {best_ms:.1} ms at {best} workers"),
            )
        })
    }
}

#[test]
fn cheap_messages_call_for_more_workers_and_costly_ones_for_fewer() {
    // 400 tasks of 1 ms on 4 workers, over 1 to 16.
    let cheap = TunerViewBuilder::new(400, 4, 1.0)
        .link(0.001, 0.0)
        .workers_range(1..=16);
    let proposal = cheap.view(|view| FastestByModel.propose(view)).unwrap();
    let more = proposal.change().value(TunableId::NWORKERS).unwrap();
    assert!(more > 4, "{proposal:?}");
    cheap.view(|view| {
        assert_eq!(view.model_variant(400), "balanced");
        assert_eq!(view.calibration_ms(), 0.0);
        assert!(
            view.model_work_ms(400) > 399.0,
            "{}",
            view.model_work_ms(400)
        );
        assert!(view.machine().is_none());
    });

    // Each message costs a quarter of the work: in the model a worker's chunk is one message
    // of the master's, `Tt ≈ n·mo + Tc/n`, best at `√(Tc/mo)` = 2 workers.
    let costly = TunerViewBuilder::new(400, 4, 1.0)
        .link(100.0, 0.0)
        .workers_range(1..=16);
    let mcmc = costly.view(|view| view.mcmc(400));
    let proposal = costly.view(|view| FastestByModel.propose(view)).unwrap();
    let fewer = proposal.change().value(TunableId::NWORKERS).unwrap();
    assert_eq!(fewer, 2, "{proposal:?} (MCMC {mcmc:?})");
}
