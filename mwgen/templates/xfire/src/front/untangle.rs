//! Loop clipping: where the moving fire line crosses itself, cut the loop off.
//!
//! Two kinds of loops appear. Where the front is concave, neighbouring points converge and their
//! normals cross, leaving a small clockwise "swallowtail"; where two arms of the front meet
//! behind an obstacle, the line closes around an unburned island. In both cases the crossing
//! splits the line into two closed polygons: we keep the one of larger signed area (the outer,
//! counter-clockwise one) and drop the other. Islands are therefore not tracked: the fire line is
//! always the outer boundary of the burned area.
//!
//! Crossings are found through a grid of buckets and sorted, so the result does not depend on
//! the order buckets are visited in. Each pass cuts every loop that does not overlap an earlier
//! one (in index order) using prefix sums of the shoelace terms for the loop areas, so a step
//! costs a few linear passes however many swallowtails it made.

use super::Point;
use crate::terrain::Landscape;

/// Removes every self-crossing of the closed line `points`, keeping the outer part. `reach` is a
/// typical edge length (buckets are twice that). Returns how many loops were cut.
pub fn untangle(points: &mut Vec<Point>, land: &Landscape, reach: f64) -> usize {
    let mut cut = 0;
    // Every round cuts at least one loop and so shortens the line: this ends.
    while points.len() >= 4 {
        let crossings = crossings(points, reach);
        if crossings.is_empty() {
            break;
        }
        cut += cut_loops(points, &crossings, land);
    }
    cut
}

/// Cuts, in one pass, the loops of non-overlapping crossings in index order. A loop is the part
/// between the two crossing edges (`i + 1 ..= j`) when it is the smaller part; when the smaller
/// part is the rest of the line, only that crossing is cut in this pass. Returns the loops cut.
fn cut_loops(
    points: &mut Vec<Point>,
    crossings: &[(usize, usize, Point)],
    land: &Landscape,
) -> usize {
    let n = points.len();
    // prefix[k] = Σ_{m<k} cross(p_m, p_{m+1}): the shoelace terms of the open chain.
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(0.0);
    for k in 0..n {
        let (a, b) = (points[k], points[(k + 1) % n]);
        prefix.push(prefix[k] + a[0] * b[1] - b[0] * a[1]);
    }
    let total = prefix[n] / 2.0;
    let cross = |a: Point, b: Point| a[0] * b[1] - b[0] * a[1];
    // The crossing point is on both edges; keep it only if it is on burnable ground.
    let keep = |x: Point| land.is_burnable(x).then_some(x);

    let mut out = Vec::with_capacity(n);
    let mut next = 0; // first point not yet copied
    let mut cut = 0;
    for &(i, j, x) in crossings {
        if i < next {
            continue; // overlaps a loop cut in this pass: next round
        }
        let inner =
            (cross(x, points[i + 1]) + prefix[j] - prefix[i + 1] + cross(points[j], x)) / 2.0;
        if inner > total - inner {
            // The loop is the rest of the line: cut this crossing alone, keep the inner part.
            if cut == 0 {
                *points = keep(x)
                    .into_iter()
                    .chain(points[i + 1..=j].iter().copied())
                    .collect();
                return 1;
            }
            continue;
        }
        out.extend_from_slice(&points[next..=i]);
        out.extend(keep(x));
        next = j + 1;
        cut += 1;
    }
    out.extend_from_slice(&points[next.min(n)..]);
    *points = out;
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

/// Every crossing of edges `i < j` (edge `k` runs from point `k` to `k + 1`), sorted, with
/// where they cross; adjacent edges do not count.
fn crossings(points: &[Point], reach: f64) -> Vec<(usize, usize, Point)> {
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
    let bx = count(size, 0);
    let by = count(size, 1);
    let bucket = |p: Point| {
        let i = (((p[0] - lo[0]) / size) as usize).min(bx - 1);
        let j = (((p[1] - lo[1]) / size) as usize).min(by - 1);
        (i, j)
    };
    // (bucket, edge) for every bucket an edge's bounding box touches, grouped by bucket.
    let mut entries: Vec<(usize, usize)> = Vec::with_capacity(2 * n);
    for e in 0..n {
        let (ia, ja) = bucket(points[e]);
        let (ib, jb) = bucket(points[(e + 1) % n]);
        for j in ja.min(jb)..=ja.max(jb) {
            for i in ia.min(ib)..=ia.max(ib) {
                entries.push((j * bx + i, e));
            }
        }
    }
    entries.sort_unstable();
    let mut found = Vec::new();
    for group in entries.chunk_by(|a, b| a.0 == b.0) {
        for (k, &(_, e)) in group.iter().enumerate() {
            for &(_, f) in &group[k + 1..] {
                let (i, j) = (e.min(f), e.max(f));
                if j == i + 1 || (i == 0 && j == n - 1) {
                    continue;
                }
                let p = (points[i], points[(i + 1) % n]);
                let q = (points[j], points[(j + 1) % n]);
                if let Some(x) = crossing(p, q) {
                    found.push((i, j, x));
                }
            }
        }
    }
    // A pair sharing several buckets is found once per bucket.
    found.sort_unstable_by_key(|&(i, j, _)| (i, j));
    found.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
    found
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
