//! The fire line: a closed polygon that moves outward.
//!
//! # Spread method
//! Each point of the line launches an elliptical wavelet (Huygens' principle) and moves to the
//! point of the wavelet where the new line touches it — Richards' (1990) equations, as FARSITE
//! uses them. For a head rate `R`, backing rate `R_b = R(1-e)/(1+e)` and length-to-width ratio
//! `L/W` (eccentricity `e`), the wavelet after a unit time has semi-axes `b = (R + R_b)/2` along
//! the heading `h` and `a = b/(L/W)` across it, and the ignition point sits `c = (R - R_b)/2`
//! behind its centre. For a point whose outward normal is `n`, the touching point is the
//! wavelet's support point
//!
//! ```text
//! v(n) = c h + (b² (n·h) h + a² (n·h⊥) h⊥) / √(b² (n·h)² + a² (n·h⊥)²),
//! ```
//!
//! whose component along the normal is the spread rate in the normal direction,
//! `R_n = c (n·h) + √(b² (n·h)² + a² (n·h⊥)²)`: `R` at the head, `R_b` at the back and `a` on
//! the flanks. The tangential part of `v` slides points toward the head; without it (moving by
//! `R_n` along the normal only) the flanks come out too wide whenever a step moves a point more
//! than a small fraction of the local radius of curvature.
//!
//! The normal at a point comes from its two neighbours (the polygon is counter-clockwise), so a
//! point's move depends on itself and its neighbours only: any cut of the line into segments
//! gives the same result, bit for bit. A point moving farther than half a cell in a step takes
//! sub-steps of at most half a cell, re-evaluating Rothermel in every cell it crosses; a move that
//! would enter a non-burnable cell (or leave the grid) is clipped at the cell boundary by
//! bisection, and the point stops there.
//!
//! After each step the master re-samples the line: it drops crowded points, cuts off the loops
//! where the line crosses itself ([`untangle`]), and splits long edges.
//!
//! # Limits
//! Explicit steps with the normal fixed over a step: large steps make concave parts cross over
//! (the loops are then cut, but the shape is coarser); choose `dt` so that the fastest head moves
//! a few cells at most. Unburned islands left behind where the front closes around an obstacle
//! are not tracked, and points may move into ground that has already burned when the line folds.
//! Fuel and wind are constant within a cell.

use crate::rothermel::{M_PER_FT, Spread};
use crate::terrain::Landscape;

mod untangle;
pub use untangle::{signed_area, untangle};

/// A point of the fire line, m.
pub type Point = [f64; 2];

/// Outward unit normal at a point of a counter-clockwise polygon, from its neighbours; `None`
/// when they coincide.
pub fn normal(prev: Point, next: Point) -> Option<[f64; 2]> {
    let t = [next[0] - prev[0], next[1] - prev[1]];
    let len = t[0].hypot(t[1]);
    (len > 1e-12).then(|| [t[1] / len, -t[0] / len])
}

/// Rate of spread (ft/min) along the outward normal `n` of the front, from the spread ellipse.
pub fn normal_rate(spread: &Spread, n: [f64; 2]) -> f64 {
    let v = velocity(spread, n);
    v[0] * n[0] + v[1] * n[1]
}

/// Velocity (ft/min) of a point of the front whose outward normal is `n`: the support point of
/// the spread ellipse's wavelet (Richards 1990).
pub fn velocity(spread: &Spread, n: [f64; 2]) -> [f64; 2] {
    let head = spread.ros_ft_min;
    if head <= 0.0 {
        return [0.0, 0.0];
    }
    let back = spread.backing_ft_min();
    let b = (head + back) / 2.0;
    let c = (head - back) / 2.0;
    let a = b / spread.length_to_width;
    let h = spread.heading;
    let h_perp = [-h[1], h[0]];
    let along = n[0] * h[0] + n[1] * h[1];
    let across = n[0] * h_perp[0] + n[1] * h_perp[1];
    let norm = (b * b * along * along + a * a * across * across).sqrt();
    if norm <= 0.0 {
        return [0.0, 0.0];
    }
    let (ka, kc) = (b * b * along / norm, a * a * across / norm);
    [
        c * h[0] + ka * h[0] + kc * h_perp[0],
        c * h[1] + ka * h[1] + kc * h_perp[1],
    ]
}

/// Where one point of the front is after `dt_min` minutes, and whether a non-burnable cell
/// stopped it.
pub fn advance_point(
    land: &Landscape,
    prev: Point,
    p: Point,
    next: Point,
    dt_min: f64,
) -> (Point, bool) {
    let Some(n) = normal(prev, next) else {
        return (p, false);
    };
    let max_hop = land.cell_m() / 2.0;
    let mut pos = p;
    let mut left = dt_min;
    // Bounded: each hop covers half a cell or the rest of the step.
    for _ in 0..10_000 {
        if left <= 0.0 {
            break;
        }
        let Some(spread) = land.spread_at(pos) else {
            return (pos, true);
        };
        let v = velocity(&spread, n);
        let v = [v[0] * M_PER_FT, v[1] * M_PER_FT]; // m/min
        let speed = v[0].hypot(v[1]);
        if speed <= 0.0 {
            break;
        }
        let dt = left.min(max_hop / speed);
        let target = [pos[0] + v[0] * dt, pos[1] + v[1] * dt];
        if !land.is_burnable(target) {
            return (clip(land, pos, target), true);
        }
        pos = target;
        left -= dt;
    }
    (pos, false)
}

/// The last burnable point on the way from burnable `from` to non-burnable `to`.
fn clip(land: &Landscape, from: Point, to: Point) -> Point {
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..40 {
        let mid = (lo + hi) / 2.0;
        if land.is_burnable(lerp(from, to, mid)) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lerp(from, to, lo)
}

fn lerp(a: Point, b: Point, t: f64) -> Point {
    [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t]
}

/// Advances a contiguous run of points whose outer neighbours are `before` and `after`; returns
/// the new points and how many of them a non-burnable cell stopped.
pub fn advance_run(
    land: &Landscape,
    before: Point,
    points: &[Point],
    after: Point,
    dt_min: f64,
) -> (Vec<Point>, u32) {
    let mut blocked = 0;
    let moved = (0..points.len())
        .map(|k| {
            let prev = if k == 0 { before } else { points[k - 1] };
            let next = points.get(k + 1).copied().unwrap_or(after);
            let (q, stopped) = advance_point(land, prev, points[k], next, dt_min);
            blocked += u32::from(stopped);
            q
        })
        .collect();
    (moved, blocked)
}

/// A closed fire line, counter-clockwise.
#[derive(Debug, Clone, PartialEq)]
pub struct Front {
    pub points: Vec<Point>,
}

impl Front {
    /// A circle of `radius` around `centre` with points at most `spacing` apart (at least 16).
    pub fn circle(centre: Point, radius: f64, spacing: f64) -> Front {
        let n = ((std::f64::consts::TAU * radius / spacing).ceil() as usize).max(16);
        let points = (0..n)
            .map(|k| {
                let a = std::f64::consts::TAU * k as f64 / n as f64;
                [centre[0] + radius * a.cos(), centre[1] + radius * a.sin()]
            })
            .collect();
        Front { points }
    }

    /// Every point advanced by `dt_min` (the sequential step); also how many were stopped.
    pub fn advanced(&self, land: &Landscape, dt_min: f64) -> (Front, u32) {
        let pts = &self.points;
        let (Some(&last), Some(&first)) = (pts.last(), pts.first()) else {
            return (self.clone(), 0);
        };
        let (points, blocked) = advance_run(land, last, pts, first, dt_min);
        (Front { points }, blocked)
    }

    /// Enclosed area (shoelace), m².
    pub fn area(&self) -> f64 {
        self.edges()
            .map(|(a, b)| a[0] * b[1] - b[0] * a[1])
            .sum::<f64>()
            / 2.0
    }

    /// Length of the closed line, m.
    pub fn perimeter(&self) -> f64 {
        self.edges()
            .map(|(a, b)| (b[0] - a[0]).hypot(b[1] - a[1]))
            .sum()
    }

    fn edges(&self) -> impl Iterator<Item = (Point, Point)> + '_ {
        let n = self.points.len();
        (0..n).map(move |k| (self.points[k], self.points[(k + 1) % n]))
    }

    /// Keeps neighbours between `max_spacing / 3` and `max_spacing` apart: drops points crowding
    /// the previous kept one, cuts off loops where the line crosses itself, then splits long edges
    /// evenly (skipping new points that would fall on non-burnable ground). Keeps at least three
    /// points.
    pub fn resample(&mut self, land: &Landscape, max_spacing: f64) {
        let min_spacing = max_spacing / 3.0;
        let dist = |a: Point, b: Point| (b[0] - a[0]).hypot(b[1] - a[1]);
        let mut kept: Vec<Point> = Vec::with_capacity(self.points.len());
        for &p in &self.points {
            match kept.last() {
                Some(&q) if dist(p, q) < min_spacing => {}
                _ => kept.push(p),
            }
        }
        while kept.len() > 3 && dist(kept[kept.len() - 1], kept[0]) < min_spacing {
            kept.pop();
        }
        if kept.len() < 3 {
            return;
        }
        untangle(&mut kept, land, max_spacing);
        if kept.len() < 3 {
            return;
        }
        let mut out = Vec::with_capacity(kept.len() * 2);
        for k in 0..kept.len() {
            let (a, b) = (kept[k], kept[(k + 1) % kept.len()]);
            out.push(a);
            let pieces = (dist(a, b) / max_spacing).ceil() as usize;
            for m in 1..pieces {
                let q = lerp(a, b, m as f64 / pieces as f64);
                if land.is_burnable(q) {
                    out.push(q);
                }
            }
        }
        self.points = out;
    }
}

#[cfg(test)]
mod tests;
