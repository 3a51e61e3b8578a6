//! Loop clipping: where the moving fire line crosses itself, cut the loop off.
//!
//! Two kinds of loops appear. Where the front is concave, neighbouring points converge and their
//! normals cross, leaving a small clockwise "swallowtail"; where two arms of the front meet
//! behind an obstacle, the line closes around an unburned island. In both cases the crossing
//! splits the line into two closed polygons: we keep the one of larger signed area (the outer,
//! counter-clockwise one) and drop the other. Islands are therefore not tracked: the fire line is
//! always the outer boundary of the burned area. Crossings are found through a grid of buckets,
//! and always the lexicographically first pair of crossing edges is cut, so the result does not
//! depend on the order buckets are visited in.

use super::Point;
use crate::terrain::Landscape;

/// Removes every self-crossing of the closed line `points`, keeping the outer part. `reach` is a
/// typical edge length (buckets are twice that). Returns how many loops were cut.
pub fn untangle(points: &mut Vec<Point>, land: &Landscape, reach: f64) -> usize {
    let mut cut = 0;
    // Every cut shortens the line, so this ends.
    while points.len() >= 4 {
        let Some((i, j, x)) = first_crossing(points, reach) else {
            break;
        };
        // The crossing point is on both edges; keep it only if it is on burnable ground.
        let x = land.is_burnable(x).then_some(x);
        let inner: Vec<Point> = x
            .into_iter()
            .chain(points[i + 1..=j].iter().copied())
            .collect();
        let outer: Vec<Point> = points[..=i]
            .iter()
            .copied()
            .chain(x)
            .chain(points[j + 1..].iter().copied())
            .collect();
        *points = if signed_area(&inner) > signed_area(&outer) {
            inner
        } else {
            outer
        };
        cut += 1;
    }
    cut
}

/// Shoelace area, positive for a counter-clockwise polygon.
pub fn signed_area(points: &[Point]) -> f64 {
    let n = points.len();
    (0..n)
        .map(|k| {
            let (a, b) = (points[k], points[(k + 1) % n]);
            a[0] * b[1] - b[0] * a[1]
        })
        .sum::<f64>()
        / 2.0
}

/// The crossing of edges `i < j` (edge `k` runs from point `k` to `k + 1`) with the smallest
/// `(i, j)`, and where they cross; adjacent edges do not count.
fn first_crossing(points: &[Point], reach: f64) -> Option<(usize, usize, Point)> {
    let n = points.len();
    let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
    for p in points {
        for d in 0..2 {
            lo[d] = lo[d].min(p[d]);
            hi[d] = hi[d].max(p[d]);
        }
    }
    // Buckets of twice the reach, but never more buckets than a few per edge.
    let mut size = (2.0 * reach).max(1e-9);
    let count = |size: f64, d: usize| ((hi[d] - lo[d]) / size) as usize + 1;
    while count(size, 0) * count(size, 1) > 4 * n + 16 {
        size *= 2.0;
    }
    let (bx, by) = (count(size, 0), count(size, 1));
    let bucket = |p: Point| {
        let i = (((p[0] - lo[0]) / size) as usize).min(bx - 1);
        let j = (((p[1] - lo[1]) / size) as usize).min(by - 1);
        (i, j)
    };
    let mut buckets: Vec<Vec<usize>> = vec![Vec::new(); bx * by];
    for e in 0..n {
        let (a, b) = (points[e], points[(e + 1) % n]);
        let (ia, ja) = bucket(a);
        let (ib, jb) = bucket(b);
        for j in ja.min(jb)..=ja.max(jb) {
            for i in ia.min(ib)..=ia.max(ib) {
                buckets[j * bx + i].push(e);
            }
        }
    }
    let mut best: Option<(usize, usize, Point)> = None;
    for edges in &buckets {
        for (k, &e) in edges.iter().enumerate() {
            for &f in &edges[k + 1..] {
                let (i, j) = (e.min(f), e.max(f));
                if j == i + 1 || (i == 0 && j == n - 1) {
                    continue;
                }
                if best.is_some_and(|(bi, bj, _)| (bi, bj) <= (i, j)) {
                    continue;
                }
                let p = (points[i], points[(i + 1) % n]);
                let q = (points[j], points[(j + 1) % n]);
                if let Some(x) = crossing(p, q) {
                    best = Some((i, j, x));
                }
            }
        }
    }
    best
}

/// Where segments `p` and `q` cross strictly inside both, if they do.
fn crossing(p: (Point, Point), q: (Point, Point)) -> Option<Point> {
    let r = [p.1[0] - p.0[0], p.1[1] - p.0[1]];
    let s = [q.1[0] - q.0[0], q.1[1] - q.0[1]];
    let denom = r[0] * s[1] - r[1] * s[0];
    if denom.abs() < 1e-18 {
        return None;
    }
    let w = [q.0[0] - p.0[0], q.0[1] - p.0[1]];
    let t = (w[0] * s[1] - w[1] * s[0]) / denom;
    let u = (w[0] * r[1] - w[1] * r[0]) / denom;
    (t > 0.0 && t < 1.0 && u > 0.0 && u < 1.0).then(|| [p.0[0] + r[0] * t, p.0[1] + r[1] * t])
}
