//! The AWS SDKs' client-side rate limiter: what "adaptive" retry mode adds to "standard".
//! A token bucket every attempt (first and retries) must take a token from before it
//! leaves, whose fill rate CUBIC sets from the answers: cut to `beta` times the measured
//! send rate on a throttling answer, grown back along `C * (t - K)^3 + Wmax` after it.
//!
//! Read from botocore 1.43.67: `botocore/retries/adaptive.py` (`ClientRateLimiter`:
//! enabled on the first throttling answer; on every answer the new rate is capped at
//! `2 x` the measured rate; a throttle uses `min(measured, fill rate)` once enabled, the
//! measured rate before), `botocore/retries/throttling.py` (`CubicCalculator`: beta 0.7,
//! scale constant 0.4, `K = cbrt(Wmax * (1 - beta) / C)`, starting Wmax 0),
//! `botocore/retries/bucket.py` (`TokenBucket`: min fill rate 0.5/s, capacity
//! `max(rate, 1)`, starting with 0 tokens at rate 1, a waiter sleeps
//! `(1 - tokens) / rate`) and `RateClocker` in adaptive.py (smoothing 0.8 over the count
//! in 0.5 s buckets, the first bucket starting at the whole second the client was made).
//! smithy-rs `aws-smithy-runtime` `client_rate_limiter.rs` has the same constants
//! (MIN_FILL_RATE 0.5, MIN_CAPACITY 1, SMOOTH 0.8, BETA 0.7, SCALE_CONSTANT 0.4).
//!
//! Pure: times (ms, the client's own clock) are passed in; it keeps no clock.

use serde::{Deserialize, Serialize};

/// The limiter's constants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CubicParams {
    /// Multiplicative decrease on a throttling answer (`_BETA`).
    pub beta: f64,
    /// CUBIC's `C` (`_SCALE_CONSTANT`).
    pub scale_constant: f64,
    /// Weight of the newest bucket in the measured send rate (`_DEFAULT_SMOOTHING`).
    pub smooth: f64,
    /// Width of the send-rate buckets (`_TIME_BUCKET_RANGE`, 0.5 s).
    pub bucket_ms: u64,
    /// Lowest fill rate, tokens per second (`_MIN_RATE`).
    pub min_fill_rate: f64,
    /// Lowest bucket capacity, tokens.
    pub min_capacity: f64,
    /// A new rate is at most this times the measured rate (`_MAX_RATE_ADJUST_SCALE`).
    pub max_rate_adjust_scale: f64,
}

/// The AWS SDKs' constants.
pub fn aws_adaptive() -> CubicParams {
    CubicParams {
        beta: 0.7,
        scale_constant: 0.4,
        smooth: 0.8,
        bucket_ms: 500,
        min_fill_rate: 0.5,
        min_capacity: 1.0,
        max_rate_adjust_scale: 2.0,
    }
}

/// Tokens a waiter may be short by and still take one (float refills).
const EPSILON: f64 = 1e-9;

/// One client's limiter: the bucket, the send-rate clock and the CUBIC state.
#[derive(Debug, Clone)]
pub struct CubicLimiter {
    p: CubicParams,
    /// Off until the first throttling answer: attempts leave without a token.
    enabled: bool,
    /// Tokens per second.
    fill_rate: f64,
    max_capacity: f64,
    tokens: f64,
    last_refill_ms: u64,
    /// Smoothed answers per second, and the count of the bucket in progress.
    measured_rate: f64,
    last_bucket_ms: u64,
    count: f64,
    /// CUBIC: the rate at the last throttle, its zero point (s) and when it came.
    w_max: f64,
    k: f64,
    last_fail_ms: u64,
}

impl CubicLimiter {
    /// A limiter made at `now` (the client's creation).
    pub fn new(p: CubicParams, now: u64) -> Self {
        let mut l = CubicLimiter {
            p,
            enabled: false,
            fill_rate: 0.0,
            max_capacity: 0.0,
            tokens: 0.0,
            last_refill_ms: now,
            measured_rate: 0.0,
            last_bucket_ms: now / 1_000 * 1_000,
            count: 0.0,
            w_max: 0.0,
            k: 0.0,
            last_fail_ms: now,
        };
        l.set_rate(1.0, now);
        l
    }

    /// Whether attempts need a token (a throttling answer has been seen).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The bucket's fill rate, tokens per second.
    pub fn fill_rate(&self) -> f64 {
        self.fill_rate
    }

    /// The smoothed send rate, answers per second.
    pub fn measured_rate(&self) -> f64 {
        self.measured_rate
    }

    /// Tokens in the bucket at `now`.
    pub fn tokens(&mut self, now: u64) -> f64 {
        self.refill(now);
        self.tokens
    }

    /// An attempt about to leave at `now`: 0 when it may go (it took its token, or the
    /// limiter is not enabled yet), else how long (ms) until a token will be there; the
    /// caller asks again then.
    pub fn acquire(&mut self, now: u64) -> u64 {
        if !self.enabled {
            return 0;
        }
        self.refill(now);
        if self.tokens + EPSILON >= 1.0 {
            self.tokens = (self.tokens - 1.0).max(0.0);
            return 0;
        }
        let secs = (1.0 - self.tokens) / self.fill_rate;
        ((secs * 1_000.0).ceil() as u64).max(1)
    }

    /// An answer at `now`; `throttled` when the provider throttled the attempt. Returns
    /// the new fill rate.
    pub fn on_answer(&mut self, now: u64, throttled: bool) -> f64 {
        let measured = self.record(now);
        let new_rate = if throttled {
            let rate = if self.enabled {
                measured.min(self.fill_rate)
            } else {
                measured
            };
            self.enabled = true;
            self.w_max = rate;
            self.k = self.zero_point();
            self.last_fail_ms = now;
            rate * self.p.beta
        } else {
            self.cubic_rate(now)
        };
        self.set_rate(new_rate.min(self.p.max_rate_adjust_scale * measured), now);
        self.fill_rate
    }

    /// CUBIC's rate at `now` since the last throttle: `C * (t - K)^3 + Wmax`.
    pub fn cubic_rate(&self, now: u64) -> f64 {
        let dt = now.saturating_sub(self.last_fail_ms) as f64 / 1_000.0;
        self.p.scale_constant * (dt - self.k).powi(3) + self.w_max
    }

    /// `K = cbrt(Wmax * (1 - beta) / C)`, seconds.
    pub fn zero_point(&self) -> f64 {
        (self.w_max * (1.0 - self.p.beta) / self.p.scale_constant).cbrt()
    }

    /// Counts an answer in the send-rate clock and returns the smoothed rate.
    fn record(&mut self, now: u64) -> f64 {
        let bucket = now / self.p.bucket_ms * self.p.bucket_ms;
        self.count += 1.0;
        if bucket > self.last_bucket_ms {
            let secs = (bucket - self.last_bucket_ms) as f64 / 1_000.0;
            let current = self.count / secs;
            self.measured_rate =
                current * self.p.smooth + self.measured_rate * (1.0 - self.p.smooth);
            self.count = 0.0;
            self.last_bucket_ms = bucket;
        }
        self.measured_rate
    }

    /// The bucket's `max_rate` setter: refill at the old rate, then the new rate (at least
    /// the minimum), capacity `max(rate, 1)`, tokens cut to it.
    fn set_rate(&mut self, rate: f64, now: u64) {
        self.refill(now);
        self.fill_rate = rate.max(self.p.min_fill_rate);
        self.max_capacity = rate.max(self.p.min_capacity);
        self.tokens = self.tokens.min(self.max_capacity);
    }

    fn refill(&mut self, now: u64) {
        let secs = now.saturating_sub(self.last_refill_ms) as f64 / 1_000.0;
        self.tokens = (self.tokens + secs * self.fill_rate).min(self.max_capacity);
        self.last_refill_ms = self.last_refill_ms.max(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers every `gap` ms from `from` to `to` (exclusive), all successes.
    fn steady(l: &mut CubicLimiter, from: u64, to: u64, gap: u64) {
        let mut t = from;
        while t < to {
            l.on_answer(t, false);
            t += gap;
        }
    }

    #[test]
    fn it_is_off_until_the_first_throttle_and_then_cuts_the_rate_to_beta_times_measured() {
        let mut l = CubicLimiter::new(aws_adaptive(), 0);
        assert!(!l.enabled());
        assert_eq!(l.acquire(0), 0, "no token needed before a throttle");
        assert_eq!(l.acquire(0), 0);
        // Ten answers a second for ten seconds: the measured rate settles at 10/s.
        steady(&mut l, 100, 10_000, 100);
        assert!(
            (l.measured_rate() - 10.0).abs() < 0.01,
            "{}",
            l.measured_rate()
        );
        let rate = l.on_answer(10_000, true);
        let measured = l.measured_rate();
        assert!(l.enabled());
        assert!((rate - 0.7 * measured).abs() < 1e-9, "{rate} vs {measured}");
        // K for Wmax = measured: cbrt(W * 0.3 / 0.4).
        let k = (measured * 0.3 / 0.4).cbrt();
        assert!((l.zero_point() - k).abs() < 1e-12);
    }

    #[test]
    fn the_first_bucket_is_counted_from_the_whole_second_and_smoothed_by_0_8() {
        let mut l = CubicLimiter::new(aws_adaptive(), 1_700);
        // The clock's first bucket starts at 1.0 s: the answer at 1.8 s closes [1.0, 1.5)
        // with 1 answer in 0.5 s: 2/s, smoothed 2 * 0.8.
        l.on_answer(1_800, false);
        assert!(
            (l.measured_rate() - 1.6).abs() < 1e-9,
            "{}",
            l.measured_rate()
        );
        // Two more by 2.0 s close [1.5, 2.0): 4/s * 0.8 + 1.6 * 0.2.
        l.on_answer(1_900, false);
        l.on_answer(2_000, false);
        assert!(
            (l.measured_rate() - 3.52).abs() < 1e-9,
            "{}",
            l.measured_rate()
        );
    }

    #[test]
    fn after_a_throttle_the_rate_recovers_along_the_cubic_curve() {
        let mut l = CubicLimiter::new(aws_adaptive(), 0);
        steady(&mut l, 50, 10_000, 50);
        l.on_answer(10_000, true);
        let w = l.w_max;
        let k = l.zero_point();
        assert!(k > 0.0);
        // The curve: C (t - K)^3 + Wmax, at Wmax when t = K, below before, above after.
        for dt_ms in [0u64, 500, 1_000, 2_000, 3_000, 5_000] {
            let dt = dt_ms as f64 / 1_000.0;
            let want = 0.4 * (dt - k).powi(3) + w;
            assert!(
                (l.cubic_rate(10_000 + dt_ms) - want).abs() < 1e-9,
                "{dt_ms}"
            );
        }
        let at_k = 10_000 + (k * 1_000.0).round() as u64;
        assert!((l.cubic_rate(at_k) - w).abs() < 0.05 * w);
        // Right after the throttle the curve starts at beta * Wmax.
        assert!((l.cubic_rate(10_000) - 0.7 * w).abs() < 1e-9);
        // A success sets the fill rate to the curve while 2 x measured does not bind.
        let rate = l.on_answer(10_050, false);
        assert!((rate - l.cubic_rate(10_050)).abs() < 1e-9, "{rate}");
    }

    #[test]
    fn a_new_rate_is_capped_at_twice_the_measured_rate_and_floored_at_half_a_token() {
        let mut l = CubicLimiter::new(aws_adaptive(), 0);
        // One answer a second: measured about 1/s; two seconds after the throttle the
        // measured rate has fallen and the curve is above twice it, so 2 x measured binds.
        steady(&mut l, 1_000, 20_000, 1_000);
        l.on_answer(20_000, true);
        let rate = l.on_answer(22_000, false);
        assert!(l.cubic_rate(22_000) > rate);
        assert!((rate - 2.0 * l.measured_rate()).abs() < 1e-9, "{rate}");
        // Throttles with nothing measured: the rate floors at 0.5/s, capacity at 1.
        let mut l = CubicLimiter::new(aws_adaptive(), 0);
        let rate = l.on_answer(100, true);
        assert_eq!(rate, 0.5);
        assert_eq!(l.max_capacity, 1.0);
    }

    #[test]
    fn an_attempt_waits_for_its_token_at_the_fill_rate() {
        let mut l = CubicLimiter::new(aws_adaptive(), 0);
        // Enabled with nothing measured: 0.5 tokens a second, an empty bucket of 1.
        l.on_answer(0, true);
        assert_eq!(l.fill_rate(), 0.5);
        assert_eq!(l.acquire(0), 2_000, "(1 - 0) / 0.5 s");
        assert_eq!(
            l.acquire(1_000),
            1_000,
            "half a token in: (1 - 0.5) / 0.5 s"
        );
        assert_eq!(l.acquire(2_000), 0, "a whole token: it goes");
        assert_eq!(l.acquire(2_000), 2_000, "and took it");
        // The bucket holds at most max(rate, 1) tokens: a long idle spell buys one.
        assert_eq!(l.acquire(60_000), 0);
        assert_eq!(l.acquire(60_000), 2_000);
        assert!(l.tokens(60_000) < 1e-9);
    }
}
