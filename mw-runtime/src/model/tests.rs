use proptest::prelude::*;

use super::broadcast::{self, BroadcastParams};
use super::*;

/// The paper's worked example (Fig. 6).
fn paper() -> Params {
    Params {
        tc_ms: 1600.0,
        volume_bytes: 4096.0,
        alpha: 0.5,
        mo_ms: 1.0,
        k_ms_per_byte: 0.001,
        lm_ms: 0.0,
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn worked_example_lowest_time_at_40_workers() {
    let curve = sweep(&paper(), Protocol::Async, 1..=60).unwrap();
    let best = curve.best_time();
    assert_eq!(best.workers, 40);
    assert!((best.time_ms - 81.10).abs() < 0.005, "{}", best.time_ms);
    assert!((best.time_ms - 81.1024).abs() < 1e-9);
    assert_eq!(best.regime, Regime::LatencyBound);
}

#[test]
fn worked_example_lowest_index_at_23_workers() {
    let curve = sweep(&paper(), Protocol::Async, 1..=60).unwrap();
    let best = curve.best_index();
    assert_eq!(best.workers, 23);
    assert!((best.time_ms - 93.74).abs() < 0.005, "{}", best.time_ms);
    assert!((best.time_ms - 93.7433).abs() < 1e-4);
    // Pi = 23 · 93.7433² / 1600
    assert!((best.pi - 23.0 * best.time_ms.powi(2) / 1600.0).abs() < 1e-12);
}

#[test]
fn worked_example_paper_gains() {
    // "going from 15 to 20 workers means a gain of 17.68% ... from 30 to 40 ... 3.99%"
    let p = paper();
    let t = |n| iteration_time(&p, n, Protocol::Async).unwrap();
    assert!((100.0 * (1.0 - t(20) / t(15)) - 17.68).abs() < 0.01);
    assert!((100.0 * (1.0 - t(40) / t(30)) - 3.99).abs() < 0.01);
    // "only a 13.5% performance gain from 23 workers to 40"
    assert!((100.0 * (1.0 - t(40) / t(23)) - 13.5).abs() < 0.05);
}

#[test]
fn worked_example_regime_changes_with_n() {
    // k·αV = 2.048 ms: one message of it split n ways outweighs mo = 1 ms for n ≤ 2.
    let p = paper();
    assert_eq!(
        regime(&p, 1, Protocol::Async).unwrap(),
        Regime::BandwidthBound
    );
    assert_eq!(
        regime(&p, 2, Protocol::Async).unwrap(),
        Regime::BandwidthBound
    );
    assert_eq!(
        regime(&p, 3, Protocol::Async).unwrap(),
        Regime::LatencyBound
    );
    // (8) at n = 1: 2 + (4.096 + 1600)/1
    assert!((iteration_time(&p, 1, Protocol::Async).unwrap() - 1606.096).abs() < 1e-9);
}

#[test]
fn worked_example_mcmc() {
    let p = paper();
    // (10): ⌊√(1 + 1·(0.5·4.096 + 1600))⌋ + 1 = ⌊40.04⌋ + 1
    assert_eq!(mcmc(&p, Protocol::Async).unwrap(), Some(41));
    assert_eq!(mcmc_closed_form(&p, Protocol::Async).unwrap(), Some(41));
    assert!(!master_falls_behind(&p, 41, Protocol::Async).unwrap());
    assert!(master_falls_behind(&p, 42, Protocol::Async).unwrap());
    // (12): ⌊(−0.048 + √(0.048² + 4·1604.096))/2⌋
    assert_eq!(mcmc(&p, Protocol::Sync).unwrap(), Some(40));
    assert_eq!(mcmc_closed_form(&p, Protocol::Sync).unwrap(), Some(40));
    // Capping at the MCMC leaves both optima in place.
    let curve = sweep(&p, Protocol::Async, 1..=60).unwrap().capped(Some(41));
    assert_eq!(curve.best_time().workers, 40);
    assert_eq!(curve.best_index().workers, 23);
}

#[test]
fn sync_adds_every_transfer() {
    let p = paper();
    // (9) at n = 23: 24 + ((22·0.5 + 1)·4.096 + 1600)/23
    let expected = 24.0 + (12.0 * 4.096 + 1600.0) / 23.0;
    let tt = iteration_time(&p, 23, Protocol::Sync).unwrap();
    assert!((tt - expected).abs() < 1e-9);
    assert_eq!(regime(&p, 23, Protocol::Sync).unwrap(), Regime::Synchronous);
}

#[test]
fn master_time_adds_a_constant() {
    let mut p = paper();
    let before = iteration_time(&p, 10, Protocol::Async).unwrap();
    p.lm_ms = 5.0;
    assert!((iteration_time(&p, 10, Protocol::Async).unwrap() - before - 5.0).abs() < 1e-12);
}

#[test]
fn bandwidth_bound_mcmc_uses_expression_11() {
    // k·αV = 90 ms against mo = 0.5 ms: bandwidth-bound up to n = 180.
    let p = Params {
        tc_ms: 100.0,
        volume_bytes: 1e6,
        alpha: 0.9,
        mo_ms: 0.5,
        k_ms_per_byte: 1e-4,
        lm_ms: 0.0,
    };
    // (11): (100 + 100)/(90 − 0.5) = 2.23
    assert_eq!(mcmc_closed_form(&p, Protocol::Async).unwrap(), Some(2));
    assert_eq!(mcmc(&p, Protocol::Async).unwrap(), Some(2));
}

#[test]
fn zero_latency_and_no_outbound_data_has_no_mcmc() {
    let p = Params {
        mo_ms: 0.0,
        alpha: 0.0,
        ..paper()
    };
    assert_eq!(mcmc(&p, Protocol::Async).unwrap(), None);
    assert_eq!(mcmc_closed_form(&p, Protocol::Async).unwrap(), None);
    assert_eq!(mcmc(&p, Protocol::Sync).unwrap(), None);
    // With outbound bytes, the bandwidth alone bounds it: (4.096 + 1600)/2.048
    let p = Params {
        mo_ms: 0.0,
        ..paper()
    };
    assert_eq!(mcmc(&p, Protocol::Async).unwrap(), Some(783));
    assert_eq!(mcmc_closed_form(&p, Protocol::Sync).unwrap(), Some(783));
}

#[test]
fn invalid_parameters_are_errors_not_panics() {
    let bad = [
        Params {
            tc_ms: -1.0,
            ..paper()
        },
        Params {
            volume_bytes: f64::NAN,
            ..paper()
        },
        Params {
            alpha: 1.5,
            ..paper()
        },
        Params {
            alpha: -0.1,
            ..paper()
        },
        Params {
            mo_ms: f64::INFINITY,
            ..paper()
        },
        Params {
            k_ms_per_byte: -0.001,
            ..paper()
        },
        Params {
            lm_ms: f64::NEG_INFINITY,
            ..paper()
        },
    ];
    for p in bad {
        for protocol in [Protocol::Async, Protocol::Sync] {
            assert!(matches!(
                iteration_time(&p, 4, protocol),
                Err(ModelError::InvalidParameter { .. })
            ));
            assert!(mcmc(&p, protocol).is_err());
            assert!(mcmc_closed_form(&p, protocol).is_err());
            assert!(sweep(&p, protocol, 1..=4).is_err());
            assert!(performance_index(&p, 4, protocol).is_err());
        }
    }
    let err = iteration_time(
        &Params {
            k_ms_per_byte: -0.001,
            ..paper()
        },
        4,
        Protocol::Async,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`k_ms_per_byte` must be a finite number >= 0, got -0.001"
    );
}

#[test]
fn zero_workers_is_an_error() {
    let p = paper();
    assert_eq!(
        iteration_time(&p, 0, Protocol::Async),
        Err(ModelError::NoWorkers)
    );
    assert_eq!(
        efficiency(&p, 0, Protocol::Sync),
        Err(ModelError::NoWorkers)
    );
    assert_eq!(round_trip(&p, 0), Err(ModelError::NoWorkers));
    assert!(matches!(
        sweep(&p, Protocol::Async, 0..=10),
        Err(ModelError::InvalidRange { min: 0, max: 10 })
    ));
}

#[test]
fn no_work_has_time_but_no_index() {
    let p = Params {
        tc_ms: 0.0,
        ..paper()
    };
    assert!(iteration_time(&p, 4, Protocol::Async).unwrap() > 0.0);
    assert_eq!(
        performance_index(&p, 4, Protocol::Async),
        Err(ModelError::NoWork)
    );
    assert_eq!(efficiency(&p, 4, Protocol::Async), Err(ModelError::NoWork));
    assert_eq!(
        sweep(&p, Protocol::Async, 1..=4).unwrap_err(),
        ModelError::NoWork
    );
}

#[test]
fn bad_ranges_are_errors() {
    let p = paper();
    #[allow(clippy::reversed_empty_ranges)]
    let empty = 5..=4;
    assert!(matches!(
        sweep(&p, Protocol::Async, empty),
        Err(ModelError::InvalidRange { .. })
    ));
    assert!(matches!(
        sweep(&p, Protocol::Async, 1..=usize::MAX),
        Err(ModelError::InvalidRange { .. })
    ));
}

#[test]
fn curve_lookup_and_cap() {
    let curve = sweep(&paper(), Protocol::Async, 10..=60).unwrap();
    assert_eq!(curve.get(10).unwrap().workers, 10);
    assert_eq!(curve.get(60).unwrap().workers, 60);
    assert!(curve.get(9).is_none());
    assert!(curve.get(61).is_none());
    // A cap below the range keeps the first point only.
    let capped = curve.capped(Some(3));
    assert_eq!(capped.points().len(), 1);
    assert_eq!(capped.best_time().workers, 10);
    assert_eq!(curve.capped(None), curve);
    assert_eq!(curve.capped(Some(30)).best_time().workers, 30);
}

#[test]
fn regime_serializes_as_lowercase_name() {
    let json = serde_json::to_string(&Regime::LatencyBound).unwrap();
    assert_eq!(json, "\"latency\"");
    let p: Params = serde_json::from_str(&serde_json::to_string(&paper()).unwrap()).unwrap();
    assert_eq!(p, paper());
}

// ----- broadcast -----

fn nbody() -> BroadcastParams {
    BroadcastParams {
        tc_ms: 1000.0,
        shared_bytes: 1e6,
        result_bytes: 1e6,
        mo_ms: 0.05,
        k_ms_per_byte: 1e-5,
        lm_ms: 0.0,
    }
}

#[test]
fn broadcast_bandwidth_bound_optimum_uses_k_vi() {
    let p = nbody();
    assert_eq!(broadcast::regime(&p).unwrap(), Regime::BandwidthBound);
    // √((Tc + k·Vm)/(k·Vi)) = √(1010/10)
    let opt = broadcast::optimum_workers(&p).unwrap().unwrap();
    assert!((opt - 101.0_f64.sqrt()).abs() < 1e-12);
    let curve = broadcast::sweep(&p, 1..=50).unwrap();
    assert_eq!(
        broadcast::best_workers(&p).unwrap(),
        Some(curve.best_time().workers)
    );
    assert_eq!(curve.best_time().workers, 10);
}

#[test]
fn broadcast_latency_bound_optimum_uses_mo() {
    let p = BroadcastParams {
        mo_ms: 1.0,
        shared_bytes: 1e3,
        ..nbody()
    };
    assert_eq!(broadcast::regime(&p).unwrap(), Regime::LatencyBound);
    let opt = broadcast::optimum_workers(&p).unwrap().unwrap();
    assert!((opt - 1010.0_f64.sqrt()).abs() < 1e-12);
    // (n+1)·mo + k·Vi + (Tc + k·Vm)/n at n = 32
    let tt = broadcast::iteration_time(&p, 32).unwrap();
    assert!((tt - (33.0 + 0.01 + 1010.0 / 32.0)).abs() < 1e-9);
    let curve = broadcast::sweep(&p, 1..=100).unwrap();
    assert_eq!(
        broadcast::best_workers(&p).unwrap(),
        Some(curve.best_time().workers)
    );
}

#[test]
fn broadcast_mcmc_by_definition() {
    let p = nbody();
    // bandwidth-bound: mo + k·n·Vi ≤ 2·mo + k·Vi + (Tc + k·Vm)/n ⇔ 10(n−1) − 0.05 ≤ 1010/n
    let m = broadcast::mcmc(&p).unwrap().unwrap();
    let g = |n: f64| 10.0 * (n - 1.0) - 0.05 - 1010.0 / n;
    assert!(g(m as f64) <= 0.0 && g(m as f64 + 1.0) > 0.0, "{m}");
    assert_eq!(m, 10);
    let free = BroadcastParams {
        mo_ms: 0.0,
        k_ms_per_byte: 0.0,
        ..nbody()
    };
    assert_eq!(broadcast::mcmc(&free).unwrap(), None);
    assert_eq!(broadcast::optimum_workers(&free).unwrap(), None);
    assert_eq!(broadcast::best_workers(&free).unwrap(), None);
}

#[test]
fn broadcast_invalid_input() {
    let p = BroadcastParams {
        shared_bytes: -1.0,
        ..nbody()
    };
    assert!(broadcast::iteration_time(&p, 1).is_err());
    assert!(broadcast::mcmc(&p).is_err());
    assert_eq!(
        broadcast::iteration_time(&nbody(), 0),
        Err(ModelError::NoWorkers)
    );
    let idle = BroadcastParams {
        tc_ms: 0.0,
        ..nbody()
    };
    assert_eq!(
        broadcast::performance_index(&idle, 3),
        Err(ModelError::NoWork)
    );
    assert!(broadcast::efficiency(&nbody(), 3).unwrap() > 0.0);
}

// ----- balance -----

#[test]
fn balance_quality() {
    use super::balance::{imbalance, quality_bound};
    assert_eq!(imbalance(&[30.0, 30.0, 30.0], 30.0).unwrap(), 0.0);
    assert!((imbalance(&[30.0, 0.0, 0.0], 30.0).unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(imbalance(&[], 30.0), Err(ModelError::NoWorkers));
    assert!(imbalance(&[1.0], 0.0).is_err());
    assert!(imbalance(&[-1.0], 1.0).is_err());
    // σ/μ = 0.5, n = 8: 1 − 1/(1 + 0.5·2)
    assert!((quality_bound(2.0, 1.0, 8).unwrap() - 0.5).abs() < 1e-12);
    assert!(quality_bound(0.0, 1.0, 8).is_err());
    assert!(quality_bound(1.0, f64::NAN, 8).is_err());
    assert_eq!(quality_bound(1.0, 1.0, 0), Err(ModelError::NoWorkers));
    assert!(quality_bound(1.0, 0.3, 16).unwrap() > quality_bound(1.0, 0.3, 4).unwrap());
}

// ----- fit -----

#[test]
fn fit_degenerate_inputs() {
    assert!(fit_latency_bandwidth(&[]).is_none());
    assert!(fit_latency_bandwidth(&[(100.0, 1.0)]).is_none());
    assert!(fit_latency_bandwidth(&[(100.0, 1.0), (100.0, 2.0), (100.0, 3.0)]).is_none());
    // Unusable samples are skipped, leaving one.
    assert!(fit_latency_bandwidth(&[(100.0, 1.0), (f64::NAN, 2.0), (-5.0, 3.0)]).is_none());
    let fit = fit_latency_bandwidth(&[(0.0, 1.0), (f64::NAN, 1.0), (100.0, 2.0)]).unwrap();
    assert_eq!(fit.samples, 2);
}

#[test]
fn fit_clamps_negative_intercept() {
    // Line t = −1 + 0.01·b: the best line with mo ≥ 0 goes through the origin.
    let samples: Vec<(f64, f64)> = [100.0, 200.0, 300.0, 400.0]
        .iter()
        .map(|&b| (b, -1.0 + 0.01 * b))
        .collect();
    let fit = fit_latency_bandwidth(&samples).unwrap();
    assert_eq!(fit.mo_ms, 0.0);
    let sbt: f64 = samples.iter().map(|&(b, t)| b * t).sum();
    let sbb: f64 = samples.iter().map(|&(b, _)| b * b).sum();
    assert!((fit.k_ms_per_byte - sbt / sbb).abs() < 1e-15);
    assert!(fit.r2 < 1.0);
}

#[test]
fn fit_clamps_negative_slope() {
    // Bigger messages measured faster (noise): the best line with k ≥ 0 is flat.
    let fit = fit_latency_bandwidth(&[(100.0, 2.0), (200.0, 1.5), (300.0, 1.0)]).unwrap();
    assert_eq!(fit.k_ms_per_byte, 0.0);
    assert!((fit.mo_ms - 1.5).abs() < 1e-12);
    assert!(fit.r2.abs() < 1e-12);
}

#[test]
fn fit_constant_times() {
    let fit = fit_latency_bandwidth(&[(100.0, 2.0), (200.0, 2.0)]).unwrap();
    assert_eq!((fit.mo_ms, fit.k_ms_per_byte, fit.r2), (2.0, 0.0, 1.0));
}

// ----- properties -----

fn params() -> impl Strategy<Value = Params> {
    (
        1.0..1e6_f64,
        0.0..1e8_f64,
        0.0..=1.0_f64,
        1e-4..10.0_f64,
        1e-9..1e-2_f64,
        0.0..100.0_f64,
    )
        .prop_map(
            |(tc_ms, volume_bytes, alpha, mo_ms, k_ms_per_byte, lm_ms)| Params {
                tc_ms,
                volume_bytes,
                alpha,
                mo_ms,
                k_ms_per_byte,
                lm_ms,
            },
        )
}

fn protocol() -> impl Strategy<Value = Protocol> {
    prop_oneof![Just(Protocol::Async), Just(Protocol::Sync)]
}

proptest! {
    #[test]
    fn sweep_optima_are_minima(p in params(), proto in protocol(), min in 1usize..20, len in 0usize..200) {
        let curve = sweep(&p, proto, min..=min + len).unwrap();
        let bt = curve.best_time();
        let bi = curve.best_index();
        for point in curve.points() {
            prop_assert!(bt.time_ms <= point.time_ms);
            prop_assert!(bi.pi <= point.pi);
            prop_assert!(point.time_ms.is_finite() && point.pi.is_finite());
            prop_assert!(point.efficiency > 0.0 && point.efficiency <= 1.0 + 1e-12);
            // Pi = Tt / E
            prop_assert!(close(point.pi, point.time_ms / point.efficiency, 1e-9));
        }
        // The index never asks for more workers than the time does.
        prop_assert!(bi.workers <= bt.workers);
    }

    #[test]
    fn time_is_send_plus_work_plus_answer(p in params(), proto in protocol(), n in 1usize..10_000) {
        // Tt(n) = S(n) + Tc/n + mo + k·(1−α)V/n + λm in every regime.
        let nf = n as f64;
        let tt = iteration_time(&p, n, proto).unwrap();
        let parts = send_phase(&p, n, proto).unwrap()
            + p.tc_ms / nf
            + p.mo_ms
            + p.k_ms_per_byte * (1.0 - p.alpha) * p.volume_bytes / nf
            + p.lm_ms;
        prop_assert!(close(tt, parts, 1e-9), "{tt} vs {parts}");
    }

    #[test]
    fn async_regimes_meet_where_they_switch(p in params()) {
        // (7) and (8) agree at n = k·αV/mo, so Tt is continuous across the switch.
        let n = p.k_alpha_v() / p.mo_ms;
        prop_assume!(n >= 1.0);
        let (lat, _) = time::iteration_time_unchecked(&p, n, Protocol::Async);
        let bw = 2.0 * p.mo_ms
            + (((n - 1.0) * p.alpha + 1.0) * p.kv() + p.tc_ms) / n
            + p.lm_ms;
        prop_assert!(close(lat, bw, 1e-9));
    }

    #[test]
    fn async_never_slower_than_sync(p in params(), n in 1usize..10_000) {
        let a = iteration_time(&p, n, Protocol::Async).unwrap();
        let s = iteration_time(&p, n, Protocol::Sync).unwrap();
        prop_assert!(a <= s * (1.0 + 1e-12));
    }

    #[test]
    fn mcmc_closed_forms_agree_with_definition(p in params(), proto in protocol()) {
        let by_definition = mcmc(&p, proto).unwrap();
        let closed = mcmc_closed_form(&p, proto).unwrap();
        match (by_definition, closed) {
            (Some(a), Some(b)) if a != b => {
                // Only a crossing that lands on an integer, within rounding, may differ.
                let m = a.min(b) + 1;
                let s = send_phase(&p, m, proto).unwrap();
                let rt = round_trip(&p, m).unwrap();
                prop_assert!(a.abs_diff(b) == 1 && close(s, rt, 1e-9), "{a} vs {b}");
            }
            (a, b) => prop_assert_eq!(a, b),
        }
        if let Some(m) = by_definition {
            prop_assert!(m >= 1);
            prop_assert!(!master_falls_behind(&p, m, proto).unwrap());
            prop_assert!(master_falls_behind(&p, m + 1, proto).unwrap());
            // The definition's "smallest n at which the master falls behind" is MCMC + 1.
            for n in m.saturating_sub(3).max(1)..=m {
                prop_assert!(!master_falls_behind(&p, n, proto).unwrap());
            }
        }
    }

    #[test]
    fn fit_recovers_generated_parameters(
        mo in 0.0..5.0_f64,
        k in 1e-8..1e-3_f64,
        sizes in proptest::collection::vec(1.0..1e6_f64, 2..40),
    ) {
        let first = sizes[0];
        prop_assume!(sizes.iter().any(|&b| (b - first).abs() > 1.0));
        let samples: Vec<(f64, f64)> = sizes.iter().map(|&b| (b, mo + k * b)).collect();
        let fit = fit_latency_bandwidth(&samples).unwrap();
        prop_assert!((fit.mo_ms - mo).abs() < 1e-6 * (1.0 + mo), "{} vs {mo}", fit.mo_ms);
        prop_assert!((fit.k_ms_per_byte - k).abs() < 1e-6 * k, "{} vs {k}", fit.k_ms_per_byte);
        prop_assert!(fit.r2 > 1.0 - 1e-9);
    }

    #[test]
    fn fit_never_negative(samples in proptest::collection::vec((0.0..1e6_f64, -1.0..10.0_f64), 0..30)) {
        if let Some(fit) = fit_latency_bandwidth(&samples) {
            prop_assert!(fit.mo_ms >= 0.0 && fit.k_ms_per_byte >= 0.0);
            prop_assert!(fit.mo_ms.is_finite() && fit.k_ms_per_byte.is_finite() && fit.r2.is_finite());
        }
    }

    #[test]
    fn broadcast_best_workers_is_the_sweep_minimum(
        tc in 1.0..1e5_f64, vi in 0.0..1e7_f64, vm in 0.0..1e7_f64,
        mo in 1e-3..5.0_f64, k in 1e-8..1e-4_f64,
    ) {
        let p = BroadcastParams { tc_ms: tc, shared_bytes: vi, result_bytes: vm, mo_ms: mo,
                                  k_ms_per_byte: k, lm_ms: 0.0 };
        let best = broadcast::best_workers(&p).unwrap().unwrap();
        prop_assume!(best < 5_000);
        let curve = broadcast::sweep(&p, 1..=10_000).unwrap();
        let t = curve.best_time();
        prop_assert!(close(curve.get(best).unwrap().time_ms, t.time_ms, 1e-12));
    }

    #[test]
    fn params_that_fail_validation_never_panic(
        values in proptest::collection::vec(prop_oneof![
            Just(f64::NAN), Just(f64::INFINITY), Just(-1.0), Just(0.0), Just(2.0), 0.0..1.0_f64
        ], 6),
        n in 0usize..5,
        proto in protocol(),
    ) {
        let p = Params { tc_ms: values[0], volume_bytes: values[1], alpha: values[2],
                         mo_ms: values[3], k_ms_per_byte: values[4], lm_ms: values[5] };
        let _ = iteration_time(&p, n, proto);
        let _ = performance_index(&p, n, proto);
        let _ = mcmc(&p, proto);
        let _ = mcmc_closed_form(&p, proto);
        let _ = sweep(&p, proto, 1..=n.max(1));
        if let Ok(tt) = iteration_time(&p, n, proto) {
            prop_assert!(tt.is_finite() && tt >= 0.0);
        }
    }
}
