//! Backoff delays between attempts: full jitter with a cap by default.
//!
//! All arithmetic is on integer milliseconds and every random draw is an integer
//! `gen_range`, so a seeded RNG gives the same delays on every platform.

use rand::{Rng, RngCore};

use crate::policy::{Backoff, Jitter};
use crate::time::Millis;

/// Converts a policy duration to whole milliseconds, saturating.
fn millis(duration: std::time::Duration) -> Millis {
    Millis::try_from(duration.as_millis()).unwrap_or(Millis::MAX)
}

/// `min(cap, base * 2^retry)` in ms, saturating instead of overflowing for any `retry`.
pub fn capped_exponential(base_ms: Millis, cap_ms: Millis, retry: u32) -> Millis {
    let grown = match 1u64.checked_shl(retry) {
        Some(factor) => base_ms.saturating_mul(factor),
        // 2^retry does not fit: only a zero base stays small.
        None if base_ms == 0 => 0,
        None => Millis::MAX,
    };
    grown.min(cap_ms)
}

/// The delay (ms) before retry number `retry` (0 for the first retry).
///
/// - [`Jitter::Full`]: `uniform(0, min(cap, base * 2^retry))`, both ends included;
/// - [`Jitter::None`]: `min(cap, base * 2^retry)`;
/// - [`Jitter::Equal`]: `d - d/2 + uniform(0, d/2)` with `d = min(cap, base * 2^retry)`
///   (the upper half of `d`, rounded so the maximum is exactly `d`);
/// - [`Jitter::Decorrelated`]: `min(cap, uniform(base, max(base, prev_delay_ms * 3)))`;
/// - [`Jitter::Fixed`]: `base`, whatever the retry.
///
/// `prev_delay_ms` is the previous delay this action waited (0 before the first retry);
/// only the decorrelated jitter reads it. Draws only from `rng`, and only integers.
pub fn backoff_delay(
    backoff: &Backoff,
    retry: u32,
    prev_delay_ms: Millis,
    rng: &mut impl RngCore,
) -> Millis {
    BackoffMs::of(backoff).delay(retry, prev_delay_ms, rng)
}

/// A [`Backoff`] with its durations in whole ms, converted once (a scheduler draws a delay
/// at every retry).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BackoffMs {
    jitter: Jitter,
    /// The base delay (ms).
    base: Millis,
    /// The cap (ms).
    cap: Millis,
}

impl BackoffMs {
    /// `backoff` in whole ms, saturating.
    pub(crate) fn of(backoff: &Backoff) -> Self {
        Self {
            jitter: backoff.jitter,
            base: millis(backoff.base),
            cap: millis(backoff.cap),
        }
    }

    /// [`backoff_delay`] of the backoff this was made of.
    #[inline]
    pub(crate) fn delay(self, retry: u32, prev_delay_ms: Millis, rng: &mut impl RngCore) -> Millis {
        let Self { jitter, base, cap } = self;
        match jitter {
            Jitter::Full => rng.gen_range(0..=capped_exponential(base, cap, retry)),
            Jitter::None => capped_exponential(base, cap, retry),
            Jitter::Equal => {
                let ceiling = capped_exponential(base, cap, retry);
                let half = ceiling / 2;
                (ceiling - half) + rng.gen_range(0..=half)
            }
            Jitter::Decorrelated => {
                let upper = base.max(prev_delay_ms.saturating_mul(3));
                rng.gen_range(base..=upper).min(cap)
            }
            Jitter::Fixed => base,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    fn policy(base_ms: u64, cap_ms: u64, jitter: Jitter) -> Backoff {
        Backoff {
            base: Duration::from_millis(base_ms),
            cap: Duration::from_millis(cap_ms),
            jitter,
        }
    }

    fn draws(backoff: &Backoff, retry: u32, prev: Millis, seed: u64, n: usize) -> Vec<Millis> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| backoff_delay(backoff, retry, prev, &mut rng))
            .collect()
    }

    #[test]
    fn full_jitter_delay_never_exceeds_capped_exponential() {
        let backoff = policy(500, 8_000, Jitter::Full);
        for retry in 0..40 {
            let ceiling = (500u64 << retry.min(20)).min(8_000);
            for delay in draws(&backoff, retry, 0, u64::from(retry), 500) {
                assert!(delay <= ceiling, "retry {retry}: {delay} > {ceiling}");
            }
        }
    }

    #[test]
    fn full_jitter_spreads_over_the_whole_range_including_zero() {
        // The point of full jitter: many workers retrying together spread out instead of
        // waking at once.
        let delays = draws(&policy(1, 1_000, Jitter::Full), 0, 0, 7, 2_000);
        assert!(delays.contains(&0), "0 must be drawable");
        assert!(delays.contains(&1), "the ceiling must be drawable");
        let spread = draws(&policy(500, 8_000, Jitter::Full), 4, 0, 7, 2_000);
        let distinct: std::collections::BTreeSet<_> = spread.iter().collect();
        assert!(
            distinct.len() > 1_000,
            "only {} distinct delays",
            distinct.len()
        );
    }

    #[test]
    fn no_jitter_doubles_per_retry_up_to_the_cap() {
        let backoff = policy(500, 8_000, Jitter::None);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let got: Vec<_> = (0..7)
            .map(|retry| backoff_delay(&backoff, retry, 0, &mut rng))
            .collect();
        assert_eq!(got, [500, 1_000, 2_000, 4_000, 8_000, 8_000, 8_000]);
    }

    #[test]
    fn exponential_saturates_instead_of_overflowing() {
        assert_eq!(capped_exponential(500, Millis::MAX, 63), Millis::MAX);
        assert_eq!(capped_exponential(500, Millis::MAX, u32::MAX), Millis::MAX);
        assert_eq!(capped_exponential(500, 8_000, u32::MAX), 8_000);
        assert_eq!(capped_exponential(0, 8_000, u32::MAX), 0);
        let huge = Backoff {
            base: Duration::MAX,
            cap: Duration::MAX,
            jitter: Jitter::Full,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let _ = backoff_delay(&huge, u32::MAX, Millis::MAX, &mut rng);
    }

    #[test]
    fn equal_jitter_stays_in_the_upper_half() {
        let backoff = policy(500, 8_000, Jitter::Equal);
        for retry in 0..8 {
            let ceiling = capped_exponential(500, 8_000, retry);
            for delay in draws(&backoff, retry, 0, 11, 300) {
                assert!(
                    delay >= ceiling - ceiling / 2 && delay <= ceiling,
                    "{delay} outside upper half of {ceiling}"
                );
            }
        }
    }

    #[test]
    fn decorrelated_jitter_draws_between_base_and_three_times_previous_capped() {
        let backoff = policy(500, 8_000, Jitter::Decorrelated);
        assert!(
            draws(&backoff, 0, 0, 5, 50).iter().all(|&d| d == 500),
            "first retry is exactly base"
        );
        for delay in draws(&backoff, 3, 2_000, 5, 500) {
            assert!((500..=6_000).contains(&delay), "{delay}");
        }
        for delay in draws(&backoff, 3, 7_000, 5, 500) {
            assert!(delay <= 8_000, "{delay} above cap");
        }
    }

    #[test]
    fn fixed_delay_is_always_base() {
        let backoff = policy(1_000, 8_000, Jitter::Fixed);
        for retry in [0, 1, 5, 100] {
            assert!(draws(&backoff, retry, 4_000, 9, 20)
                .iter()
                .all(|&d| d == 1_000));
        }
    }

    #[test]
    fn same_seed_gives_same_delays() {
        let backoff = Backoff::default();
        assert_eq!(
            draws(&backoff, 3, 0, 42, 100),
            draws(&backoff, 3, 0, 42, 100)
        );
        assert_ne!(
            draws(&backoff, 3, 0, 42, 100),
            draws(&backoff, 3, 0, 43, 100)
        );
    }

    proptest! {
        #[test]
        fn backoff_bounds_hold_for_every_jitter(
            base in 0u64..100_000,
            cap in 0u64..1_000_000,
            retry in any::<u32>(),
            prev in any::<u64>(),
            seed in any::<u64>(),
            jitter_index in 0usize..5,
        ) {
            let jitter = [Jitter::Full, Jitter::None, Jitter::Equal, Jitter::Decorrelated, Jitter::Fixed][jitter_index];
            let backoff = policy(base, cap, jitter);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let delay = backoff_delay(&backoff, retry, prev, &mut rng);
            let ceiling = capped_exponential(base, cap, retry);
            match jitter {
                Jitter::Full | Jitter::None => prop_assert!(delay <= ceiling),
                Jitter::Equal => prop_assert!(delay >= ceiling - ceiling / 2 && delay <= ceiling),
                Jitter::Decorrelated => prop_assert!(delay <= cap && (delay >= base || delay == cap)),
                Jitter::Fixed => prop_assert_eq!(delay, base),
            }
        }
    }
}
