//! Drawing token counts from a scenario's distributions.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::scenario::TokenCount;

/// z-score of the 99th percentile of a standard normal distribution.
const Z99: f64 = 2.326_347_874;

/// One draw (tokens).
pub fn draw(count: TokenCount, rng: &mut ChaCha8Rng) -> u32 {
    match count {
        TokenCount::Fixed(n) => n,
        TokenCount::Uniform { lo, hi } => rng.gen_range(lo..=hi),
        TokenCount::LogNormal { median, p99 } => {
            let mu = f64::from(median).ln();
            let sigma = (f64::from(p99).ln() - mu) / Z99;
            let value = (mu + sigma * standard_normal(rng)).exp();
            let upper = f64::from(p99) * 4.0;
            value.round().clamp(1.0, upper) as u32
        }
    }
}

/// Box-Muller: one standard normal draw from two uniforms.
fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]: ln is finite
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn lognormal_draws_center_on_the_median() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut draws: Vec<u32> = (0..4001)
            .map(|_| {
                draw(
                    TokenCount::LogNormal {
                        median: 500,
                        p99: 4000,
                    },
                    &mut rng,
                )
            })
            .collect();
        draws.sort_unstable();
        let median = draws[2000];
        assert!((430..=570).contains(&median), "median {median}");
        let p99 = draws[3960];
        assert!((3000..=5200).contains(&p99), "p99 {p99}");
    }

    #[test]
    fn uniform_stays_in_bounds() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        assert!((0..1000)
            .all(|_| (10..=20).contains(&draw(TokenCount::Uniform { lo: 10, hi: 20 }, &mut rng))));
    }
}
