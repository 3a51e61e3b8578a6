use super::*;
use crate::rothermel::{FT_MIN_PER_MPH, FuelBed, Moisture};
use crate::{fuels, terrain::NON_BURNABLE};

fn spread(wind_mph: f64) -> Spread {
    let bed = FuelBed::new(fuels::standard(1).unwrap(), &Moisture::default());
    bed.spread([wind_mph * FT_MIN_PER_MPH, 0.0], [0.0, 0.0], false)
}

fn close(got: f64, want: f64, tolerance: f64) {
    assert!(
        (got - want).abs() <= tolerance,
        "got {got}, want {want} ± {tolerance}"
    );
}

#[test]
fn ellipse_gives_head_back_and_flank_rates() {
    let s = spread(8.0);
    assert_eq!(s.heading, [1.0, 0.0]);
    close(normal_rate(&s, [1.0, 0.0]), s.ros_ft_min, 1e-9);
    close(normal_rate(&s, [-1.0, 0.0]), s.backing_ft_min(), 1e-9);
    close(normal_rate(&s, [0.0, 1.0]), s.flanking_ft_min(), 1e-9);
    close(normal_rate(&s, [0.0, -1.0]), s.flanking_ft_min(), 1e-9);
}

#[test]
fn without_wind_every_direction_spreads_at_r0() {
    let s = spread(0.0);
    for k in 0..12 {
        let a = k as f64 * 0.5;
        close(normal_rate(&s, [a.cos(), a.sin()]), s.r0_ft_min, 1e-12);
    }
}

#[test]
fn normal_points_out_of_a_counter_clockwise_polygon() {
    // Point (1, 0) of the unit circle, neighbours below and above.
    let n = normal([1.0, -0.1], [1.0, 0.1]).unwrap();
    assert_eq!(n, [1.0, 0.0]);
    assert!(normal([1.0, 1.0], [1.0, 1.0]).is_none());
}

#[test]
fn circle_area_and_perimeter() {
    let c = Front::circle([0.0, 0.0], 100.0, 1.0);
    close(c.area(), std::f64::consts::PI * 1e4, 10.0);
    close(c.perimeter(), std::f64::consts::TAU * 100.0, 0.1);
}

#[test]
fn resampling_keeps_spacing_within_bounds() {
    let land = Landscape::uniform(40, 30.0, 1, [0.0, 0.0], &Moisture::default());
    let mut front = Front::circle([600.0, 600.0], 200.0, 40.0);
    // Crowd one stretch and stretch another.
    front.points.insert(1, front.points[0]);
    front.resample(&land, 10.0);
    let n = front.points.len();
    for k in 0..n {
        let (a, b) = (front.points[k], front.points[(k + 1) % n]);
        let d = (b[0] - a[0]).hypot(b[1] - a[1]);
        assert!(
            (10.0 / 3.0 - 1e-9..=10.0 + 1e-9).contains(&d),
            "edge {k}: {d}"
        );
    }
}

#[test]
fn a_point_stops_at_the_edge_of_a_non_burnable_cell() {
    let mut land = Landscape::uniform(10, 30.0, 1, [20.0, 0.0], &Moisture::default());
    for j in 0..10 {
        land.set_fuel(6, j, NON_BURNABLE);
    }
    // Heading east at x = 150 m; the wall starts at x = 180 m.
    let (q, blocked) = advance_point(&land, [150.0, 140.0], [150.0, 150.0], [150.0, 160.0], 60.0);
    assert!(blocked);
    assert!(q[0] < 180.0 && q[0] > 180.0 - 1e-6, "stopped at {q:?}");
    assert_eq!(q[1], 150.0);
}

#[test]
fn the_cut_does_not_change_the_result() {
    let land = Landscape::synthetic(&crate::terrain::Scenario {
        grid: 40,
        ..Default::default()
    });
    let front = Front::circle(land.ignition(), 60.0, 5.0);
    let (whole, _) = front.advanced(&land, 3.0);
    let pts = &front.points;
    let n = pts.len();
    let (a, _) = advance_run(&land, pts[n - 1], &pts[..10], pts[10], 3.0);
    let (b, _) = advance_run(&land, pts[9], &pts[10..], pts[0], 3.0);
    assert_eq!([a, b].concat(), whole.points);
}

#[test]
fn a_swallowtail_is_cut_off() {
    let land = Landscape::uniform(10, 30.0, 1, [0.0, 0.0], &Moisture::default());
    // The top edge runs back from (10, 10) to (4, 10), then loops over itself through (6, 11).
    let mut points = vec![
        [0.0, 0.0],
        [10.0, 0.0],
        [10.0, 10.0],
        [4.0, 10.0],
        [6.0, 11.0],
        [6.0, 9.0],
        [0.0, 10.0],
    ];
    assert_eq!(untangle(&mut points, &land, 5.0), 1);
    assert_eq!(
        points,
        [
            [0.0, 0.0],
            [10.0, 0.0],
            [10.0, 10.0],
            [6.0, 10.0],
            [6.0, 9.0],
            [0.0, 10.0]
        ]
    );
}

#[test]
fn the_larger_part_is_kept() {
    let land = Landscape::uniform(10, 30.0, 1, [0.0, 0.0], &Moisture::default());
    // A square whose right side folds in: the fold crosses the line at (14, 12) and closes a
    // 6 m × 6 m loop, far smaller than the rest.
    let mut points = vec![
        [0.0, 0.0],
        [20.0, 0.0],
        [20.0, 12.0],
        [8.0, 12.0],
        [8.0, 6.0],
        [14.0, 6.0],
        [14.0, 16.0],
        [20.0, 16.0],
        [20.0, 20.0],
        [0.0, 20.0],
    ];
    assert_eq!(untangle(&mut points, &land, 5.0), 1);
    let outer = [
        [0.0, 0.0],
        [20.0, 0.0],
        [20.0, 12.0],
        [14.0, 12.0],
        [14.0, 16.0],
        [20.0, 16.0],
        [20.0, 20.0],
        [0.0, 20.0],
    ];
    assert_eq!(points, outer);
    assert_eq!(signed_area(&points), 400.0 - 6.0 * 4.0);
}
