use super::*;
use crate::measure::{Moments, TaskStats};

/// Chunk sizes a policy hands out for one iteration, asking round-robin.
fn sizes(
    policy: PolicyName,
    tasks: usize,
    workers: usize,
    factor: f64,
    stats: &TaskStats,
) -> Vec<usize> {
    let mut p = policy.build();
    p.begin(&Plan {
        tasks,
        workers,
        factor,
        min_chunk: 1,
        stats,
    });
    let mut remaining = tasks;
    let mut out = Vec::new();
    while remaining > 0 {
        let ask = Ask {
            worker: out.len() % workers,
            remaining,
            stats,
        };
        let size = p.next_chunk(&ask).clamp(1, remaining);
        remaining -= size;
        out.push(size);
    }
    out
}

#[test]
fn factoring_reproduces_the_papers_example() {
    // Morajko et al., Table 1: M = 1000, N = 4, f = 0.5, T = 1.
    let expected: Vec<usize> = [125, 62, 32, 16, 8, 4, 2, 1]
        .iter()
        .flat_map(|&g| [g; 4])
        .collect();
    let stats = TaskStats::new(4);
    assert_eq!(sizes(PolicyName::Factoring, 1000, 4, 0.5, &stats), expected);
    assert_eq!(sizes(PolicyName::Dpf, 1000, 4, 0.5, &stats), expected);
}

#[test]
fn static_gives_one_chunk_per_worker() {
    let stats = TaskStats::new(4);
    assert_eq!(
        sizes(PolicyName::Static, 10, 4, 0.5, &stats),
        vec![3, 3, 2, 2]
    );
    assert_eq!(sizes(PolicyName::Static, 2, 4, 0.5, &stats), vec![1, 1]);
}

#[test]
fn fsc_batches_hold_factor_times_m() {
    let stats = TaskStats::new(4);
    // 0.2 · 1000 = 200 tasks a batch, 50 a chunk.
    assert_eq!(sizes(PolicyName::Fsc, 1000, 4, 0.2, &stats), vec![50; 20]);
    // 0.2 · 103 ≈ 21 tasks a batch, cut 6, 5, 5, 5: no batch leaves a straggler chunk.
    let odd = sizes(PolicyName::Fsc, 103, 4, 0.2, &stats);
    assert_eq!(odd.iter().sum::<usize>(), 103);
    assert_eq!(&odd[..8], &[6, 5, 5, 5, 6, 5, 5, 5], "{odd:?}");
    // 0.5 · 400 = 200 a batch on 16 workers: chunks of 13 and 12, two batches in all.
    let wide = sizes(PolicyName::Fsc, 400, 16, 0.5, &TaskStats::new(16));
    assert_eq!(wide.len(), 32, "{wide:?}");
    assert!(wide.iter().all(|&c| c == 12 || c == 13), "{wide:?}");
}

#[test]
fn daf_without_measurements_runs_as_dpf_with_half() {
    let stats = TaskStats::new(4);
    assert_eq!(
        sizes(PolicyName::Daf, 1000, 4, 0.9, &stats),
        sizes(PolicyName::Dpf, 1000, 4, 0.5, &stats)
    );
}

#[test]
fn daf_batches_follow_the_measured_spread() {
    let mut stats = TaskStats::new(4);
    // μ = 1 ms, σ = 0: x0 = 1, x_j = 2.
    stats.record(0, &Moments::from_sums(100, 100.0, 100.0));
    let even = sizes(PolicyName::Daf, 1000, 4, 0.5, &stats);
    assert_eq!(
        &even[..4],
        &[250, 250, 250, 250],
        "first batch is all of R0/x0: {even:?}"
    );
    assert_eq!(even.iter().sum::<usize>(), 1000);

    // σ/μ = 1 with N = 4: x0 = 1 + √2 ≈ 2.41 → chunks of 1000/2.41/4 ≈ 104.
    let mut noisy = TaskStats::new(4);
    noisy.record(0, &Moments::from_sums(2, 2.0, 4.0)); // samples 0 and 2 ms
    let sizes_noisy = sizes(PolicyName::Daf, 1000, 4, 0.5, &noisy);
    assert_eq!(sizes_noisy[0], 104, "{sizes_noisy:?}");
    assert_eq!(sizes_noisy.iter().sum::<usize>(), 1000);
    // Sizes shrink batch after batch, until the lower limit puts the rest in the last N chunks.
    let (body, last) = sizes_noisy.split_at(sizes_noisy.len() - 4);
    assert!(body.windows(2).all(|w| w[0] >= w[1]), "{sizes_noisy:?}");
    assert_eq!(last, &[3, 3, 3, 3], "{sizes_noisy:?}");
}

#[test]
fn every_policy_hands_out_every_task_exactly() {
    let mut measured = TaskStats::new(8);
    measured.record(3, &Moments::from_sums(10, 20.0, 50.0));
    for policy in PolicyName::ALL {
        for tasks in [1, 2, 7, 64, 999] {
            for workers in [1, 3, 8] {
                for factor in [0.1, 0.5, 1.0] {
                    for stats in [&TaskStats::new(8), &measured] {
                        let s = sizes(policy, tasks, workers, factor, stats);
                        assert_eq!(
                            s.iter().sum::<usize>(),
                            tasks,
                            "{policy} {tasks} {workers} {factor}"
                        );
                        assert!(s.iter().all(|&c| c > 0));
                    }
                }
            }
        }
    }
}

#[test]
fn policy_names_parse_and_refuse_unknown() {
    assert_eq!("DAF".parse::<PolicyName>().unwrap(), PolicyName::Daf);
    let err = "gss".parse::<PolicyName>().unwrap_err().to_string();
    assert!(
        err.contains("unknown policy `gss`") && err.contains("`factoring`"),
        "{err}"
    );
}

#[test]
fn split_even_spreads_the_remainder() {
    assert_eq!(split_even(10, 4).collect::<Vec<_>>(), vec![3, 3, 2, 2]);
    assert_eq!(split_even(0, 4).count(), 0);
}
