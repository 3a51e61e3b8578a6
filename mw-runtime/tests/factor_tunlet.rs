//! A tunlet written outside the crate that tunes the runtime's `factor` with the simulator the
//! built-in factor tunlet uses, unit-tested on views built from numbers: everything it reads
//! is public on `TunerView`.
#![allow(clippy::unwrap_used)]

use mw_runtime::tuning::simulate::simulate;
use mw_runtime::tuning::{Proposal, TunerView, TunerViewBuilder, Tunlet};
use mw_runtime::{PolicyChoice, PolicyName, Tunable, TunableId};

/// Tunes `factor` more coarsely than the built-in tunlet: simulates the next iteration with the
/// factor in force and with 0.25, 0.5, 0.75 and 1, and proposes the fastest.
#[derive(Debug, Default)]
struct CoarseFactor;

impl Tunlet for CoarseFactor {
    fn tunable(&self) -> Tunable {
        TunableId::FACTOR.tunable()
    }

    fn propose(&mut self, view: &TunerView<'_>) -> Option<Proposal> {
        let PolicyChoice::BuiltIn(policy) = *view.policy() else {
            return None;
        };
        if !policy.uses_factor() || view.tasks() == 0 {
            return None;
        }
        let workers = view.simulated_workers(view.workers());
        let seed = view.iteration() as u64;
        let time = |factor| simulate(&view.simulation(&workers, policy, factor), seed, 3);
        let now = time(view.factor());
        let (best, best_ms) = [0.25, 0.5, 0.75, 1.0]
            .into_iter()
            .map(|factor| (factor, time(factor)))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        (best != view.factor() && best_ms < now).then(|| {
            Proposal::new(
                TunableId::FACTOR,
                best,
                1.0 - best_ms / now,
                format!("simulated {best_ms:.1} ms against {now:.1} ms"),
            )
        })
    }
}

#[test]
fn costly_messages_call_for_the_fewest_chunks() {
    // Identical workers, regular tasks, 0.5 ms a message.
    let built = TunerViewBuilder::new(400, 4, 1.0)
        .policy(PolicyName::Factoring)
        .factor(0.25)
        .link(0.5, 0.0);
    let proposal = built.view(|view| CoarseFactor.propose(view)).unwrap();
    assert_eq!(proposal.tunable(), TunableId::FACTOR.tunable());
    assert_eq!(proposal.change().value(TunableId::FACTOR), Some(1.0));
    assert!(
        proposal.gain() > 0.0 && proposal.gain() < 1.0,
        "{proposal:?}"
    );
    // At the best factor there is nothing to propose.
    let best = built.factor(1.0);
    assert!(best.view(|view| CoarseFactor.propose(view)).is_none());
}

#[test]
fn a_slow_worker_calls_for_smaller_chunks() {
    // One worker four times slower: large first chunks would wait for it.
    let built = TunerViewBuilder::new(400, 4, 1.75)
        .worker_task_ms(&[4.0, 1.0, 1.0, 1.0])
        .policy(PolicyName::Factoring)
        .factor(1.0)
        .link(0.5, 0.0);
    built.view(|view| {
        assert_eq!(view.worker_task_ms()[0], Some(4.0));
        assert_eq!(view.simulated_workers(4)[0].mean_ms, 4.0);
    });
    let proposal = built.view(|view| CoarseFactor.propose(view)).unwrap();
    let Some(factor) = proposal.change().value(TunableId::FACTOR) else {
        panic!("{proposal:?}")
    };
    assert!(factor < 1.0, "{proposal:?}");
}

#[test]
fn policies_without_a_factor_are_left_alone() {
    let built = TunerViewBuilder::new(400, 4, 1.0)
        .policy(PolicyName::Daf)
        .link(0.5, 0.0);
    assert!(built.view(|view| CoarseFactor.propose(view)).is_none());
}

#[test]
fn the_view_reads_what_the_builder_was_given() {
    let built = TunerViewBuilder::new(1000, 8, 2.0)
        .iteration(3)
        .task_sd_ms(0.5)
        .bytes(64.0, 16.0, 4096.0)
        .prefetch(2)
        .min_chunk(4)
        .workers_range(2..=6);
    built.view(|view| {
        assert_eq!(
            (view.iteration(), view.tasks(), view.workers()),
            (3, 1000, 8)
        );
        assert_eq!((view.task_ms(), view.task_sd_ms()), (2.0, 0.5));
        assert_eq!(
            (view.task_bytes(), view.result_bytes(), view.shared_bytes()),
            (64.0, 16.0, 4096.0)
        );
        assert_eq!((view.prefetch(), view.min_chunk()), (2, 4));
        assert_eq!(view.workers_range(), 2..=6);
        assert_eq!(view.value(TunableId::NWORKERS), 8);
        assert_eq!(view.value(TunableId::FACTOR), 0.5);
        // Each worker's 125 tasks of 2 ms, evenly shared: 250 ms.
        assert_eq!(view.iteration_ms(), 250.0);
        assert!(view.predicted_ms(1000, 8).is_some());
    });
}
