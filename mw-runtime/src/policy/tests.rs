use super::*;
use std::time::Duration;

use crate::stats::{Moments, TaskStats};

/// Chunk sizes a policy hands out for one iteration, asking round-robin.
fn sizes(
    policy: PolicyName,
    tasks: usize,
    workers: usize,
    factor: f64,
    stats: &TaskStats,
) -> Vec<usize> {
    cut(&mut *policy.build(), tasks, workers, factor, stats)
}

/// The same for a policy already built (it may have learned before), refusing what the
/// engine refuses.
fn cut(
    p: &mut dyn Policy,
    tasks: usize,
    workers: usize,
    factor: f64,
    stats: &TaskStats,
) -> Vec<usize> {
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
        let size = p.next_chunk(&ask);
        let size = checked(&*p, size, remaining).unwrap();
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
    assert_eq!("awf-b".parse::<PolicyName>().unwrap(), PolicyName::AwfB);
    let err = "guided".parse::<PolicyName>().unwrap_err().to_string();
    assert!(err.contains("unknown policy `guided`"), "{err}");
    for name in PolicyName::ALL {
        assert!(
            err.contains(&format!("`{name}`")),
            "{name} missing from {err}"
        );
        assert_eq!(name.as_str().parse::<PolicyName>().unwrap(), name);
        // The flag, the file and the built policy say the same name.
        let flag = <PolicyName as clap::ValueEnum>::from_str(name.as_str(), false).unwrap();
        assert_eq!(flag, name);
        let file: PolicyName = serde_json::from_str(&format!("\"{name}\"")).unwrap();
        assert_eq!(file, name);
        assert_eq!(name.build().name(), name.starting().as_str());
    }
}

#[test]
fn split_even_spreads_the_remainder() {
    assert_eq!(split_even(10, 4).collect::<Vec<_>>(), vec![3, 3, 2, 2]);
    assert_eq!(split_even(0, 4).count(), 0);
}

/// `M = 1000`, `N = 4`: the stats of workers 0 and 1 at 1 ms a task and 2 and 3 at 2 ms.
fn two_speeds() -> TaskStats {
    let mut stats = TaskStats::new(4);
    for (w, ms) in [(0, 1.0), (1, 1.0), (2, 2.0), (3, 2.0)] {
        stats.record(w, &Moments::from_sums(10, 10.0 * ms, 10.0 * ms * ms));
    }
    stats
}

#[test]
fn ss_and_gss_follow_their_formulas() {
    let stats = TaskStats::new(4);
    assert_eq!(sizes(PolicyName::Ss, 5, 4, 0.5, &stats), vec![1; 5]);
    // ⌈R/N⌉: 100 → 25, 75 → 19, 56 → 14, 42 → 11, 31 → 8, 23 → 6, 17 → 5, 12 → 3, 9 → 3, ...
    let gss = sizes(PolicyName::Gss, 100, 4, 0.5, &stats);
    assert_eq!(&gss[..9], &[25, 19, 14, 11, 8, 6, 5, 3, 3], "{gss:?}");
    assert_eq!(&gss[9..], &[2, 1, 1, 1, 1], "{gss:?}");
}

#[test]
fn tss_shrinks_linearly() {
    // F = ⌈1000/8⌉ = 125, L = 1, C = ⌈2000/126⌉ = 16, δ = ⌊124/15⌋ = 8; the 13th chunk (29)
    // would pass the 1000 tasks and is cut to the 28 left.
    let expected: Vec<usize> = (0..12).map(|i| 125 - 8 * i).chain([28]).collect();
    assert_eq!(
        sizes(PolicyName::Tss, 1000, 4, 0.5, &TaskStats::new(4)),
        expected
    );
}

#[test]
fn fac2_halves_the_rest_each_batch_and_mfsc_cuts_as_many_chunks() {
    // ⌈R/8⌉ from R = 1000, 500, 248, 124, 60, 28, 12, 4.
    let expected: Vec<usize> = [125, 63, 31, 16, 8, 4, 2, 1]
        .iter()
        .flat_map(|&g| [g; 4])
        .collect();
    let stats = TaskStats::new(4);
    assert_eq!(sizes(PolicyName::Fac2, 1000, 4, 0.9, &stats), expected);
    // FAC2 cuts 32 chunks: ⌈1000/32⌉ = 32 a chunk, 31 of them and the 8 left.
    let mut mfsc = vec![32; 31];
    mfsc.push(8);
    assert_eq!(sizes(PolicyName::Mfsc, 1000, 4, 0.9, &stats), mfsc);
}

#[test]
fn wf_scales_fac2_by_measured_speed() {
    // Weights 4/3, 4/3, 2/3, 2/3 on FAC2 units 125, 63, 31, 16, 8, 4, 2, 1 (R = 1000, 500,
    // 248, 124, 60, 28, 12, 4), rounded half to even.
    let expected = [
        167, 167, 83, 83, 84, 84, 42, 42, 41, 41, 21, 21, 21, 21, 11, 11, 11, 11, 5, 5, 5, 5, 3, 3,
        3, 3, 1, 1, 1, 1, 1, 1,
    ];
    assert_eq!(sizes(PolicyName::Wf, 1000, 4, 0.5, &two_speeds()), expected);
    // Nothing measured: plain FAC2.
    let stats = TaskStats::new(4);
    assert_eq!(
        sizes(PolicyName::Wf, 1000, 4, 0.5, &stats),
        sizes(PolicyName::Fac2, 1000, 4, 0.5, &stats)
    );
}

fn done(worker: usize, tasks: usize, busy_ms: u64, trip_ms: u64) -> ChunkDone {
    ChunkDone {
        worker,
        tasks,
        busy: Duration::from_millis(busy_ms),
        round_trip: Duration::from_millis(trip_ms),
    }
}

/// An adaptive policy's first two chunks of 1000 tasks on 4 workers, after each worker
/// answered one chunk of 100 tasks at 1, 1, 2, 2 ms a task, and worker 2 a second at 1 ms a
/// task between the two asks.
fn awf_first_two(variant: PolicyName, by_trip: bool) -> (usize, usize) {
    let mut p = variant.build();
    let stats = TaskStats::new(4);
    for (w, ms) in [(0, 100), (1, 100), (2, 200), (3, 200)] {
        let (busy, trip) = if by_trip { (100, ms) } else { (ms, ms) };
        p.chunk_done(&done(w, 100, busy, trip));
    }
    p.begin(&Plan {
        tasks: 1000,
        workers: 4,
        factor: 0.5,
        min_chunk: 1,
        stats: &stats,
    });
    let ask = |worker, remaining| Ask {
        worker,
        remaining,
        stats: &stats,
    };
    let first = p.next_chunk(&ask(0, 1000));
    p.chunk_done(&done(2, 100, 100, 100));
    (first, p.next_chunk(&ask(1, 1000 - first)))
}

#[test]
fn awf_variants_reweigh_at_batches_or_chunks() {
    // π = 1, 1, 2, 2 ms: weights 4/3, 4/3, 2/3, 2/3 on FAC2's 125 → 167.
    // Worker 2's second chunk (k = 2) makes π_2 = (200 + 2·100)/(100 + 2·100) = 4/3 ms: speeds
    // 1, 1, 3/4, 1/2, mean 13/16, worker 1's weight 16/13 · 125 = 153.8 → 154 for the
    // per-chunk variants; the per-batch ones keep 167 until the batch ends.
    assert_eq!(awf_first_two(PolicyName::AwfB, false), (167, 167));
    assert_eq!(awf_first_two(PolicyName::AwfC, false), (167, 154));
    // D and E weigh by the whole trip: equal processing times, trips of 1 and 2 ms a task.
    assert_eq!(awf_first_two(PolicyName::AwfD, true), (167, 167));
    assert_eq!(awf_first_two(PolicyName::AwfE, true), (167, 154));
    // B and C by processing times, which were equal: FAC2's 125.
    assert_eq!(awf_first_two(PolicyName::AwfB, true), (125, 125));
}

#[test]
fn af_follows_banicescu_and_liu() {
    // Four workers at μ = 1 ms, σ = 1 ms: D = 4, E = 1/4, x = (D + 2ER − √(D² + 4DER))/2:
    // R = 1000 → (504 − √4016)/2 = 220.3; R = 780 → (394 − 56)/2 = 169;
    // R = 611 → (309.5 − √2460)/2 = 129.95.
    let mut stats = TaskStats::new(4);
    for w in 0..4 {
        stats.record(w, &Moments::from_sums(2, 2.0, 4.0));
    }
    let af = sizes(PolicyName::Af, 1000, 4, 0.5, &stats);
    assert_eq!(&af[..3], &[220, 169, 130], "{af:?}");
    // Nothing measured: ⌈R/(2N)⌉ from R = 1000, 875, 765, 669.
    let cold = sizes(PolicyName::Af, 1000, 4, 0.5, &TaskStats::new(4));
    assert_eq!(&cold[..4], &[125, 110, 96, 84], "{cold:?}");
}

#[test]
fn a_policy_out_of_bounds_is_named() {
    #[derive(Debug)]
    struct Greedy;
    impl Policy for Greedy {
        fn name(&self) -> &str {
            "greedy"
        }
        fn begin(&mut self, _plan: &Plan<'_>) {}
        fn next_chunk(&mut self, ask: &Ask<'_>) -> usize {
            ask.remaining + 1
        }
    }
    let e = checked(&Greedy, 11, 10).unwrap_err().to_string();
    assert!(
        e.contains("policy `greedy` returned a chunk of 11 tasks with only 10 left"),
        "{e}"
    );
    assert!(e.contains("help:"), "{e}");
    let e = checked(&Greedy, 0, 10).unwrap_err().to_string();
    assert!(e.contains("`greedy` returned an empty chunk"), "{e}");
}

#[test]
fn the_names_list_every_policy_once_in_order() {
    let names = PolicyName::all_names();
    assert!(
        names.starts_with("`static`, `fsc`, `factoring`, `dpf`"),
        "{names}"
    );
    assert!(names.ends_with("`af`, `mfsc`, `auto`"), "{names}");
    assert_eq!(names.matches('`').count(), 2 * PolicyName::ALL.len());
}
