//! The N-Body model (a contract, `docs/ARCHITECTURE.md`): initial state from SplitMix64 and one
//! semi-implicit Euler step of 2-D gravity with softening (the position moves by the updated
//! velocity). Every backend, worker count and policy calls the
//! same `advance`, in the same order of operations, so results are bit-identical.

use rayon::prelude::*;

/// The seed generator of the contract.
pub use mw::random::SplitMix64;

use crate::messages::{Body, Range};

/// Gravitational constant.
pub const G: f64 = 1.0;
/// Softening length squared, so close encounters stay finite.
pub const EPS2: f64 = 1e-4;
/// Time step.
pub const DT: f64 = 1e-3;

/// `n` bodies: for each, in order, `x = 2u−1, y = 2u−1, vx = 0.1·(2u−1), vy = 0.1·(2u−1),
/// m = (0.5+u)/n`.
pub fn initial_bodies(n: usize, seed: u64) -> Vec<Body> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| {
            let x = 2.0 * rng.next_unit() - 1.0;
            let y = 2.0 * rng.next_unit() - 1.0;
            let vx = 0.1 * (2.0 * rng.next_unit() - 1.0);
            let vy = 0.1 * (2.0 * rng.next_unit() - 1.0);
            let m = (0.5 + rng.next_unit()) / n as f64;
            Body { x, y, vx, vy, m }
        })
        .collect()
}

/// Body `i` after one step under the pull of all the others.
pub fn advance(bodies: &[Body], i: usize) -> Body {
    let me = bodies[i];
    let (mut ax, mut ay) = (0.0, 0.0);
    for (j, other) in bodies.iter().enumerate() {
        if j == i {
            continue;
        }
        let dx = other.x - me.x;
        let dy = other.y - me.y;
        let d2 = dx * dx + dy * dy + EPS2;
        let s = G * other.m / (d2 * d2.sqrt());
        ax += s * dx;
        ay += s * dy;
    }
    let vx = me.vx + ax * DT;
    let vy = me.vy + ay * DT;
    Body {
        x: me.x + vx * DT,
        y: me.y + vy * DT,
        vx,
        vy,
        m: me.m,
    }
}

/// The bodies of `range` after one step: a worker's task.
pub fn advance_range(bodies: &[Body], range: &Range) -> Vec<Body> {
    let first = range.first as usize;
    (first..first + range.count as usize)
        .map(|i| advance(bodies, i))
        .collect()
}

/// The plain sequential loop: `steps` steps of every body.
pub fn simulate(mut bodies: Vec<Body>, steps: usize) -> Vec<Body> {
    for _ in 0..steps {
        bodies = (0..bodies.len()).map(|i| advance(&bodies, i)).collect();
    }
    bodies
}

/// The same steps with rayon: each step's bodies advanced by `par_iter` on the current rayon
/// pool (run it inside `ThreadPool::install` to choose the threads).
pub fn simulate_rayon(mut bodies: Vec<Body>, steps: usize) -> Vec<Body> {
    for _ in 0..steps {
        bodies = (0..bodies.len())
            .into_par_iter()
            .map(|i| advance(&bodies, i))
            .collect();
    }
    bodies
}

/// The output format of the contract: `i,x,y,vx,vy`, each with Rust's `{:e}`.
pub fn to_csv(bodies: &[Body]) -> String {
    bodies
        .iter()
        .enumerate()
        .map(|(i, b)| format!("{i},{:e},{:e},{:e},{:e}\n", b.x, b.y, b.vx, b.vy))
        .collect()
}

/// Writes the state as [`to_csv`] gives it, whole or not at all (a run killed while writing
/// leaves the previous file).
pub fn write_csv(path: &std::path::Path, bodies: &[Body]) -> mw::Result<()> {
    mw::write_output(path, |out| out.write_all(to_csv(bodies).as_bytes()))
}

/// Whether two states are the same bit for bit: `==` on `f64` holds `-0.0` equal to `0.0` and
/// a NaN equal to nothing, so it can neither promise nor refuse "bit-identical".
pub fn bit_identical(a: &[Body], b: &[Body]) -> bool {
    let bits = |b: &Body| [b.x, b.y, b.vx, b.vy, b.m].map(f64::to_bits);
    a.len() == b.len() && a.iter().zip(b).all(|(p, q)| bits(p) == bits(q))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_identical_compares_bits_not_values() {
        let body = |x: f64| Body {
            x,
            y: 0.5,
            vx: 0.0,
            vy: 0.0,
            m: 1.0,
        };
        assert!(bit_identical(&[body(1.0)], &[body(1.0)]));
        assert!(bit_identical(&[body(f64::NAN)], &[body(f64::NAN)]));
        assert!(!bit_identical(&[body(0.0)], &[body(-0.0)]));
        assert!(!bit_identical(&[body(1.0)], &[body(1.0), body(1.0)]));
    }

    #[test]
    fn initial_state_draws_five_numbers_per_body_in_order() {
        let bodies = initial_bodies(3, 42);
        let mut rng = SplitMix64::new(42);
        let u: Vec<f64> = (0..15).map(|_| rng.next_unit()).collect();
        assert_eq!(bodies[1].x, 2.0 * u[5] - 1.0);
        assert_eq!(bodies[1].vy, 0.1 * (2.0 * u[8] - 1.0));
        assert_eq!(bodies[2].m, (0.5 + u[14]) / 3.0);
        assert!(
            bodies
                .iter()
                .all(|b| (-1.0..1.0).contains(&b.x) && b.m > 0.0)
        );
    }

    #[test]
    fn rayon_and_ranges_give_the_sequential_bits() {
        let bodies = initial_bodies(97, 3);
        let reference = simulate(bodies.clone(), 3);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .expect("a pool of 3 threads");
        assert_eq!(
            pool.install(|| simulate_rayon(bodies.clone(), 3)),
            reference
        );
        let one_step = simulate(bodies.clone(), 1);
        let range = Range {
            first: 10,
            count: 7,
        };
        assert_eq!(advance_range(&bodies, &range), one_step[10..17]);
    }

    #[test]
    fn two_bodies_attract_each_other_symmetrically() {
        let pair = vec![
            Body {
                x: -0.5,
                y: 0.0,
                vx: 0.0,
                vy: 0.0,
                m: 1.0,
            },
            Body {
                x: 0.5,
                y: 0.0,
                vx: 0.0,
                vy: 0.0,
                m: 1.0,
            },
        ];
        let next = simulate(pair, 1);
        assert!(next[0].vx > 0.0 && next[1].vx < 0.0);
        assert_eq!(next[0].vx, -next[1].vx);
        assert_eq!(next[0].y, 0.0);
    }
}
