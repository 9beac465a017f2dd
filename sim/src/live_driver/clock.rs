//! The live run's clock: real time since the run started, dilated into scenario time.
//!
//! A scenario is written in scenario time (minutes of rate windows, seconds of backoff). A
//! live run plays it `scale` times faster: one real ms is `scale` scenario ms. The core is
//! handed scenario time, so its policy (backoff base and cap, max_wait, budgets, buckets
//! refilling per minute) runs unchanged; only the driver converts, at its edges: sleeps
//! and per-attempt timeouts go out in real time, and the provider's time-bearing headers
//! come back into scenario time (see `dilate`).

use std::time::{Duration, Instant};

use stampede_core::Millis;

/// Real time since the run started, as scenario ms.
#[derive(Debug, Clone, Copy)]
pub struct LiveClock {
    start: Instant,
    /// Scenario ms per real ms (above 0).
    scale: f64,
}

impl LiveClock {
    /// A clock that reads 0 now and runs `scale` scenario ms per real ms.
    pub fn start(scale: f64) -> Self {
        Self {
            start: Instant::now(),
            scale,
        }
    }

    /// A clock that reads `at` scenario ms now and runs `scale` scenario ms per real ms: a
    /// restarted runner resumes the scenario's time where the provider's clock stands.
    pub fn starting_at(scale: f64, at: Millis) -> Self {
        let now = Instant::now();
        let back = Duration::from_secs_f64((at as f64 / 1_000.0 / scale).max(0.0));
        Self {
            // An origin before the host's boot cannot be represented; start there instead
            // (the clock then reads less than `at`, which only delays the runner).
            start: now.checked_sub(back).unwrap_or(now),
            scale,
        }
    }

    /// Scenario ms per real ms.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Scenario ms since the start (rounded down: the core never sees the future).
    pub fn now(&self) -> Millis {
        (self.start.elapsed().as_secs_f64() * 1_000.0 * self.scale) as Millis
    }

    /// Real ms since the start.
    pub fn real_elapsed_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Real µs since the start.
    pub fn real_elapsed_us(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// The real instant at which the clock reads `t` scenario ms.
    pub fn instant_at(&self, t: Millis) -> Instant {
        self.start + self.real(t)
    }

    /// A scenario duration (ms) as a real duration, rounded up to the microsecond so a
    /// timer never fires before the scenario time it stands for.
    pub fn real(&self, scenario_ms: Millis) -> Duration {
        let micros = (scenario_ms as f64 * 1_000.0 / self.scale).ceil();
        Duration::from_micros(micros.min(u64::MAX as f64) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_durations_shrink_by_the_scale_and_round_up() {
        let c = LiveClock::start(60.0);
        assert_eq!(c.real(60_000), Duration::from_secs(1));
        assert_eq!(c.real(1), Duration::from_micros(17));
        assert_eq!(c.scale(), 60.0);
        assert!(c.instant_at(120_000) >= c.instant_at(60_000) + Duration::from_secs(1));
    }

    #[test]
    fn a_resumed_clock_reads_where_it_was_started() {
        let c = LiveClock::starting_at(10.0, 5_000);
        let now = c.now();
        // 5 s of scenario time at scale 10 puts the origin half a real second back; the
        // upper bound only rules out an origin moved far too far back.
        assert!(now >= 5_000, "{now}");
        assert!(now < 5_000 + 600_000, "{now}");
        assert!(c.real_elapsed_ms() >= 500);
    }
}
