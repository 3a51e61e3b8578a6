//! A seed fixes the program: the master draws the same task times (and payloads) whatever the
//! backend, worker count or policy, since they travel in the tasks.

// Test helpers unwrap like the tests they serve.
#![allow(clippy::unwrap_used)]

use mw::PolicyName;
use mw::prelude::*;

use synthetic::master::{Settings, SyntheticMaster};
use synthetic::messages::Job;

fn iteration(index: usize, workers: usize, policy: PolicyName) -> Iteration {
    Iteration {
        index,
        workers,
        factor: 0.5,
        policy: policy.into(),
    }
}

/// The tasks of the first three iterations of a master with `seed`, seen under `workers` and
/// `policy`.
fn jobs(seed: u64, workers: usize, policy: PolicyName) -> Vec<Job> {
    let settings = Settings {
        tasks: 50,
        iterations: 3,
        stddev: 0.6,
        seed,
        ..Settings::default()
    };
    let mut master = SyntheticMaster::new(settings);
    (0..3)
        .flat_map(|i| master.partition(&iteration(i, workers, policy)).tasks)
        .collect()
}

#[test]
fn the_same_seed_gives_the_same_tasks_under_any_configuration() {
    let reference = jobs(11, 1, PolicyName::Static);
    assert_eq!(reference.len(), 150);
    for (workers, policy) in [(4, PolicyName::Daf), (7, PolicyName::Fsc)] {
        assert_eq!(jobs(11, workers, policy), reference);
    }
    let ids: Vec<u64> = reference.iter().map(|j| j.id).collect();
    assert_eq!(ids, (0..150).collect::<Vec<_>>());
    // Not all the same: the times are drawn.
    let first = reference[0].duration_ns;
    assert!(reference.iter().any(|j| j.duration_ns != first));
}

#[test]
fn another_seed_gives_other_times() {
    let a: Vec<u64> = jobs(11, 2, PolicyName::Daf)
        .iter()
        .map(|j| j.duration_ns)
        .collect();
    let b: Vec<u64> = jobs(12, 2, PolicyName::Daf)
        .iter()
        .map(|j| j.duration_ns)
        .collect();
    assert_ne!(a, b);
}

#[test]
fn the_run_ends_after_the_iterations_asked_for() {
    let mut master = SyntheticMaster::new(Settings {
        iterations: 2,
        ..Settings::default()
    });
    assert_eq!(
        master
            .partition(&iteration(1, 2, PolicyName::Daf))
            .tasks
            .len(),
        1000
    );
    assert!(
        master
            .partition(&iteration(2, 2, PolicyName::Daf))
            .tasks
            .is_empty()
    );
}
