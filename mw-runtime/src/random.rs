//! SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA
//! 2014): the one generator of the runtime and its programs. Small, fast and the same on every
//! platform, so a seed gives the same draws on every backend and worker count — what the N-Body
//! contract's initial state, the synthetic program's task times and the tuner's simulations rely
//! on. Not for anything that must be unpredictable (the lifeline's secret comes from the
//! operating system).

use std::f64::consts::TAU;

/// A SplitMix64 stream.
///
/// ```
/// use mw_runtime::random::SplitMix64;
/// let mut rng = SplitMix64::new(1_234_567);
/// assert_eq!(rng.next_u64(), 6_457_827_717_110_365_317);
/// assert!((0.0..1.0).contains(&rng.next_unit()));
/// ```
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The stream seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box–Muller, cosine branch; two uniforms per draw).
    pub fn next_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.next_unit(); // in (0, 1]: ln is finite
        let u2 = self.next_unit();
        (-2.0 * u1.ln()).sqrt() * (TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // SplitMix64 seeded with 1234567, from the reference implementation (Vigna's
        // splitmix64.c).
        let mut rng = SplitMix64::new(1_234_567);
        let expected = [
            6_457_827_717_110_365_317,
            3_203_168_211_198_807_973,
            9_817_491_932_198_370_423,
            4_593_380_528_125_082_431,
            16_408_922_859_458_223_821,
        ];
        for e in expected {
            assert_eq!(rng.next_u64(), e);
        }
    }

    #[test]
    fn normal_draws_have_mean_zero_and_deviation_one() {
        let mut rng = SplitMix64::new(7);
        let draws: Vec<f64> = (0..100_000).map(|_| rng.next_normal()).collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / draws.len() as f64;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var.sqrt() - 1.0).abs() < 0.01, "deviation {}", var.sqrt());
        assert!(draws.iter().all(|x| x.is_finite()));
    }
}
