//! Drawing token counts from a scenario's distributions.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::scenario::TokenCount;

/// z-score of the 99th percentile of a standard normal distribution.
const Z99: f64 = 2.326_347_874;

/// One draw (tokens), working out the distribution at every draw: the reference
/// [`Prepared::draw`] is held to, which the workload draws with.
#[cfg(test)]
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

/// A token count's distribution with what each draw of it needs worked out once: a
/// log-normal's `mu` and `sigma` took two logarithms a draw (about 370 instructions of each
/// arrival). The same draws as `draw` (the tests' reference), bit for bit: the same operations on the same
/// values, done once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Prepared {
    /// Always this many tokens.
    Fixed(u32),
    /// Uniform over `lo..=hi` tokens.
    Uniform {
        /// Fewest tokens.
        lo: u32,
        /// Most tokens.
        hi: u32,
    },
    /// `exp(mu + sigma * z)` for a standard normal `z`, rounded and clamped to
    /// `1..=upper` tokens.
    LogNormal {
        /// `ln(median)`.
        mu: f64,
        /// `(ln(p99) - mu) / z99`.
        sigma: f64,
        /// Four times the p99 (tokens).
        upper: f64,
    },
}

impl Prepared {
    /// `count`, prepared for drawing.
    pub fn of(count: TokenCount) -> Self {
        match count {
            TokenCount::Fixed(n) => Prepared::Fixed(n),
            TokenCount::Uniform { lo, hi } => Prepared::Uniform { lo, hi },
            TokenCount::LogNormal { median, p99 } => {
                let mu = f64::from(median).ln();
                Prepared::LogNormal {
                    mu,
                    sigma: (f64::from(p99).ln() - mu) / Z99,
                    upper: f64::from(p99) * 4.0,
                }
            }
        }
    }

    /// One draw (tokens): what `draw` (the tests' reference) draws from the same stream.
    pub fn draw(self, rng: &mut ChaCha8Rng) -> u32 {
        match self {
            Prepared::Fixed(n) => n,
            Prepared::Uniform { lo, hi } => rng.gen_range(lo..=hi),
            Prepared::LogNormal { mu, sigma, upper } => {
                let value = (mu + sigma * standard_normal(rng)).exp();
                value.round().clamp(1.0, upper) as u32
            }
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

    proptest::proptest! {
        /// A prepared distribution draws what the unprepared one draws, draw for draw from
        /// the same stream, and leaves the stream where it leaves it.
        #[test]
        fn prepared_draws_are_the_draws(
            seed in 0u64..10_000,
            median in 1u32..5_000,
            spread in 0u32..50_000,
            lo in 0u32..1_000,
            width in 0u32..1_000,
            fixed in 0u32..100_000,
        ) {
            let counts = [
                TokenCount::LogNormal { median, p99: median + spread },
                TokenCount::Uniform { lo, hi: lo + width },
                TokenCount::Fixed(fixed),
            ];
            let (mut a, mut b) = (ChaCha8Rng::seed_from_u64(seed), ChaCha8Rng::seed_from_u64(seed));
            for count in counts {
                let prepared = Prepared::of(count);
                for _ in 0..20 {
                    proptest::prop_assert_eq!(prepared.draw(&mut a), draw(count, &mut b));
                }
            }
            proptest::prop_assert_eq!(a.gen::<u64>(), b.gen::<u64>());
        }
    }
}
