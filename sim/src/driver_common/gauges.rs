//! The core's gauges (queued, in flight, tokens reserved), sampled once per report bucket.

use stampede_core::Millis;

use super::client_core::ClientCore;
use crate::measure::Measurement;

/// When the next bucket's gauges are due.
pub struct GaugeSampler {
    /// Report bucket width (ms, at least 1).
    bucket: Millis,
    /// End of the next bucket to sample (ms).
    next: Millis,
}

impl GaugeSampler {
    /// A sampler for buckets of `bucket_ms` (0 is taken as 1), the first ending at one bucket.
    pub fn new(bucket_ms: Millis) -> Self {
        let bucket = bucket_ms.max(1);
        Self {
            bucket,
            next: bucket,
        }
    }

    /// Skips the buckets a dead process already lived through: the next one ends after `at`.
    pub fn resume_at(&mut self, at: Millis) {
        self.next = (at / self.bucket + 1) * self.bucket;
    }

    /// End of the next bucket to sample (ms): a time the loop must wake up at.
    pub fn next_time(&self) -> Millis {
        self.next
    }

    /// Samples every bucket that ends by `until` (ms) with the gauges as they stand.
    pub fn sample_until(
        &mut self,
        until: Millis,
        core: &impl ClientCore,
        measure: &mut Measurement,
    ) {
        while self.next <= until {
            let g = core.gauges();
            measure.on_gauges(
                self.next - 1,
                g.queued + g.delayed,
                g.in_flight,
                g.tokens_reserved,
            );
            self.next += self.bucket;
        }
    }

    /// Samples the last, partial bucket of a run that stopped at `now` (ms), and takes the
    /// client's count of uncertain usage.
    pub fn finish(&self, now: Millis, core: &impl ClientCore, measure: &mut Measurement) {
        if let Some(n) = core.uncertain_usage() {
            measure.on_uncertain_usage(n);
        }
        if self.next.saturating_sub(self.bucket) <= now {
            let g = core.gauges();
            measure.on_gauges(now, g.queued + g.delayed, g.in_flight, g.tokens_reserved);
        }
    }
}
