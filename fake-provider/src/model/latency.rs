//! Sampling answer latency from the configured distribution.

use crate::config::{LatencyConfig, LatencyShape};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// z-score of the 99th percentile of the standard normal distribution.
const Z99: f64 = 2.326_347_874_040_841;

/// Draws latencies (model ms) from one distribution plus a per-token term.
#[derive(Debug, Clone)]
pub(crate) struct LatencySampler {
    shape: LatencyShape,
    per_token_ms: u64,
}

impl LatencySampler {
    /// A sampler for a validated config (an invalid shape falls back to zero latency, but
    /// `ProviderConfig::validate` refuses those first).
    pub(crate) fn new(config: &LatencyConfig) -> Self {
        LatencySampler {
            shape: config.shape().unwrap_or(LatencyShape::Fixed(0)),
            per_token_ms: config.per_token_ms(),
        }
    }

    /// One latency in ms for an answer with `output_tokens` tokens.
    pub(crate) fn sample(&self, rng: &mut ChaCha8Rng, output_tokens: u32) -> u64 {
        let base = match self.shape {
            LatencyShape::Fixed(ms) => ms,
            LatencyShape::Uniform { min, max } => rng.gen_range(min..=max),
            LatencyShape::LogNormal { median, p99 } => {
                let mu = (median as f64).ln();
                let sigma = ((p99 as f64).ln() - mu) / Z99;
                // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
                let u1: f64 = 1.0 - rng.gen::<f64>();
                let u2: f64 = rng.gen::<f64>();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let v = (mu + sigma * z).exp();
                // Cap absurd tails (a 1e-12 draw) at 100x p99 so one sample cannot stall a run.
                v.min(p99 as f64 * 100.0).round() as u64
            }
        };
        base.saturating_add(self.per_token_ms.saturating_mul(u64::from(output_tokens)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DurationMs;
    use crate::model::streams;

    fn cfg(f: impl FnOnce(&mut LatencyConfig)) -> LatencySampler {
        let mut c = LatencyConfig::default();
        f(&mut c);
        LatencySampler::new(&c)
    }

    #[test]
    fn fixed_plus_per_token() {
        let s = cfg(|c| {
            c.fixed = Some(DurationMs(100));
            c.per_token = Some(DurationMs(2));
        });
        let mut rng = streams::derive(1, streams::LATENCY);
        assert_eq!(s.sample(&mut rng, 10), 120);
    }

    #[test]
    fn uniform_stays_in_bounds() {
        let s = cfg(|c| {
            c.min = Some(DurationMs(50));
            c.max = Some(DurationMs(60));
        });
        let mut rng = streams::derive(1, streams::LATENCY);
        for _ in 0..1000 {
            let v = s.sample(&mut rng, 0);
            assert!((50..=60).contains(&v), "{v}");
        }
    }

    #[test]
    fn lognormal_hits_median_and_p99() {
        let s = cfg(|c| {
            c.median = Some(DurationMs(2_800));
            c.p99 = Some(DurationMs(9_000));
        });
        let mut rng = streams::derive(7, streams::LATENCY);
        let mut v: Vec<u64> = (0..20_000).map(|_| s.sample(&mut rng, 0)).collect();
        v.sort_unstable();
        let median = v[v.len() / 2] as f64;
        let p99 = v[v.len() * 99 / 100] as f64;
        assert!((median - 2_800.0).abs() < 150.0, "median {median}");
        assert!((p99 - 9_000.0).abs() < 900.0, "p99 {p99}");
    }
}
