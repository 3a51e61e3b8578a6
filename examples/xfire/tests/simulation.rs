//! The fire-line simulation: shapes against the spread ellipse, obstacles, and the Master/Worker
//! run against the sequential one.

// Test helpers unwrap like the tests they serve.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, mpsc};

use mw::{BackendChoice, PolicyName, Protocol, RunConfig};

use xfire::app::{FireMaster, FireWorker, Outcome, SimParams, simulate};
use xfire::rothermel::{FT_MIN_PER_MPH, FuelBed, M_PER_FT, Moisture};
use xfire::terrain::{Landscape, NON_BURNABLE, Scenario};
use xfire::{front::Front, fuels};

fn distance(a: [f64; 2], b: [f64; 2]) -> f64 {
    (a[0] - b[0]).hypot(a[1] - b[1])
}

#[test]
fn without_wind_or_slope_the_fire_stays_a_circle_growing_at_r0() {
    let moisture = Moisture::default();
    let land = Landscape::uniform(120, 10.0, 1, [0.0, 0.0], &moisture);
    let params = SimParams {
        steps: 40,
        dt_min: 1.0,
        segment_points: 32,
        spacing_m: 3.0,
        ignition_radius_m: 20.0,
    };
    let outcome = simulate(&land, &params);
    let r0 = FuelBed::new(fuels::standard(1).unwrap(), &moisture).r0 * M_PER_FT;
    let expected = params.ignition_radius_m + r0 * outcome.minutes;

    let radii: Vec<f64> = outcome
        .front
        .points
        .iter()
        .map(|&p| distance(p, land.ignition()))
        .collect();
    let mean = radii.iter().sum::<f64>() / radii.len() as f64;
    let (min, max) = radii.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &r| {
        (lo.min(r), hi.max(r))
    });
    println!("radius: mean {mean:.3} m, min {min:.3}, max {max:.3}, expected {expected:.3}");
    // 0.5 % on the mean radius (≈ 76 m here) and between the nearest and farthest point.
    assert!(
        (mean - expected).abs() < 0.005 * expected,
        "mean radius {mean}, expected {expected}"
    );
    assert!((max - min) < 0.005 * expected, "radii from {min} to {max}");
    let area = std::f64::consts::PI * expected * expected;
    assert!((outcome.front.area() - area).abs() < 0.02 * area);
}

#[test]
fn wind_elongates_the_fire_downwind_with_the_expected_length_to_width() {
    let moisture = Moisture::default();
    let wind_mph = 5.0;
    let mut land = Landscape::uniform(200, 10.0, 1, [wind_mph, 0.0], &moisture);
    land.set_ignition([400.0, 1000.0]);
    let params = SimParams {
        steps: 20,
        dt_min: 1.0,
        segment_points: 32,
        spacing_m: 4.0,
        ignition_radius_m: 5.0,
    };
    let outcome = simulate(&land, &params);
    let spread = FuelBed::new(fuels::standard(1).unwrap(), &moisture).spread(
        [wind_mph * FT_MIN_PER_MPH, 0.0],
        [0.0, 0.0],
        false,
    );
    let t = outcome.minutes;
    let r = params.ignition_radius_m;
    let head = r + spread.ros_m_min() * t;
    let back = r + spread.backing_ft_min() * M_PER_FT * t;
    let flank = r + spread.flanking_ft_min() * M_PER_FT * t;

    let ig = land.ignition();
    let xs = outcome.front.points.iter().map(|p| p[0] - ig[0]);
    let ys = outcome.front.points.iter().map(|p| p[1] - ig[1]);
    let east = xs.clone().fold(f64::NEG_INFINITY, f64::max);
    let west = -xs.fold(f64::INFINITY, f64::min);
    let north = ys.clone().fold(f64::NEG_INFINITY, f64::max);
    let south = -ys.fold(f64::INFINITY, f64::min);

    // Head ≈ 635 m, back ≈ 84 m, flanks ≈ 228 m from the ignition point: 0.5 % on each.
    for (what, got, want) in [
        ("head", east, head),
        ("back", west, back),
        ("north flank", north, flank),
        ("south flank", south, flank),
    ] {
        println!("{what}: {got:.3} m, expected {want:.3} m");
        assert!(
            (got - want).abs() < 0.005 * want,
            "{what}: {got} m, expected {want} m"
        );
    }
    // The ellipse grown from the small ignition circle: length over width, circle removed.
    let measured = (east + west - 2.0 * r) / (north + south - 2.0 * r);
    println!(
        "length-to-width {measured:.4}, expected {:.4}",
        spread.length_to_width
    );
    assert!(
        (measured - spread.length_to_width).abs() < 0.01 * spread.length_to_width,
        "length-to-width {measured}, expected {}",
        spread.length_to_width
    );
}

#[test]
fn the_fire_does_not_spread_into_non_burnable_cells() {
    let moisture = Moisture::default();
    let mut land = Landscape::uniform(120, 10.0, 1, [8.0, 2.0], &moisture);
    // A wall three cells thick from x = 700 m to 730 m, the whole height of the grid.
    for j in 0..120 {
        for i in 70..73 {
            land.set_fuel(i, j, NON_BURNABLE);
        }
    }
    land.set_ignition([450.0, 600.0]);
    let params = SimParams {
        steps: 30,
        dt_min: 1.0,
        segment_points: 32,
        spacing_m: 4.0,
        ignition_radius_m: 10.0,
    };
    let outcome = simulate(&land, &params);
    let points = &outcome.front.points;
    assert!(points.iter().all(|&p| land.is_burnable(p)));
    let reach = points
        .iter()
        .map(|p| p[0])
        .fold(f64::NEG_INFINITY, f64::max);
    assert!(reach < 700.0, "the fire crossed the wall: x = {reach}");
    assert!(
        reach > 699.0,
        "the fire never reached the wall: x = {reach}"
    );
    assert!(outcome.steps.last().unwrap().blocked > 0);
}

fn run_parallel(land: &Arc<Landscape>, params: &SimParams, config: &RunConfig) -> Outcome {
    let (report, outcome) = mpsc::channel();
    mw::run_config(
        config,
        || FireMaster::new(Arc::clone(land), params.clone()).report_to(report),
        {
            let land = Arc::clone(land);
            move || FireWorker::new(Arc::clone(&land))
        },
    )
    .unwrap();
    outcome.recv().unwrap()
}

#[test]
fn the_master_worker_run_equals_the_sequential_run() {
    let land = Arc::new(Landscape::synthetic(&Scenario {
        grid: 60,
        ..Scenario::default()
    }));
    let params = SimParams {
        steps: 25,
        dt_min: 2.0,
        segment_points: 8,
        spacing_m: 10.0,
        ignition_radius_m: 30.0,
    };
    let reference = simulate(&land, &params);
    // Work per iteration grows with the perimeter.
    let (first, last) = (reference.steps[0].points, reference.steps[24].points);
    assert!(
        last > 4 * first,
        "points per step went from {first} to {last}"
    );

    let cases = [
        (1, PolicyName::Static, Protocol::Async),
        (2, PolicyName::Factoring, Protocol::Sync),
        (3, PolicyName::Daf, Protocol::Async),
        (4, PolicyName::Fsc, Protocol::Async),
    ];
    for (workers, policy, protocol) in cases {
        let config = RunConfig {
            workers: Some(workers),
            max_workers: Some(workers),
            policy: policy.into(),
            factor: 0.5,
            min_chunk: 1,
            protocol,
            backend: BackendChoice::Local,
            ..RunConfig::default()
        };
        let parallel = run_parallel(&land, &params, &config);
        let what = format!("{workers} workers, {policy:?}, {protocol:?}");
        assert_eq!(parallel.front, reference.front, "{what}: fire line differs");
        assert_eq!(parallel.steps.len(), reference.steps.len(), "{what}");
        for (p, s) in parallel.steps.iter().zip(&reference.steps) {
            assert_eq!(
                (p.points, p.blocked, p.area_m2),
                (s.points, s.blocked, s.area_m2),
                "{what}"
            );
            assert_eq!(p.tasks, s.points.div_ceil(params.segment_points), "{what}");
        }
    }
}

#[test]
fn no_steps_leaves_the_ignition_circle() {
    let land = Arc::new(Landscape::uniform(
        40,
        10.0,
        2,
        [0.0, 0.0],
        &Moisture::default(),
    ));
    let params = SimParams {
        steps: 0,
        ..SimParams::default()
    };
    let config = RunConfig {
        workers: Some(1),
        max_workers: Some(1),
        backend: BackendChoice::Local,
        ..RunConfig::default()
    };
    let outcome = run_parallel(&land, &params, &config);
    assert!(outcome.steps.is_empty());
    let circle = Front::circle(land.ignition(), params.ignition_radius_m, params.spacing_m);
    assert_eq!(outcome.front, circle);
}
