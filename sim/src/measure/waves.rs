//! Retry waves: synchronized bursts of retries (definition in sim/RETRY_WAVES.md).

/// Width of one retry bin (ms).
pub const BIN_MS: u64 = 100;
/// Bins on each side of a bin that make up its 10-second neighbourhood.
const HALF_WINDOW_BINS: usize = 50;
/// A hot bin holds at least this many retries whatever the neighbourhood.
const FLOOR: f64 = 10.0;
/// A hot bin holds at least this multiple of its neighbourhood's mean.
const FACTOR: f64 = 4.0;

/// Retry arrivals per 100 ms bin, from the run's start.
#[derive(Debug, Default, Clone)]
pub struct RetryBins {
    bins: Vec<u32>,
}

impl RetryBins {
    /// Counts one retry arriving at `at_ms`.
    pub fn record(&mut self, at_ms: u64) {
        let i = usize::try_from(at_ms / BIN_MS).unwrap_or(usize::MAX);
        if i >= self.bins.len() {
            self.bins.resize(i + 1, 0);
        }
        self.bins[i] = self.bins[i].saturating_add(1);
    }

    /// Retries in each bin, from the run's start.
    pub fn bins(&self) -> Vec<u64> {
        self.bins.iter().copied().map(u64::from).collect()
    }

    /// The fullest bin (retries).
    pub fn peak(&self) -> u64 {
        self.bins.iter().copied().max().map_or(0, u64::from)
    }

    /// Number of waves in a run that ended at `end_ms` (`virtual_duration_ms`): maximal runs
    /// of hot bins. A neighbourhood is clipped at the run's end, not at the last retry: the
    /// quiet after the run's last retries counts in their mean like any quiet stretch (it
    /// was left out, and a lone burst of 129 retries in one bin, the run's last, was no
    /// wave; `tests/audit_figures.rs`).
    pub fn waves(&self, end_ms: u64) -> u64 {
        let len = self.bins.len();
        // Every bin the run spans, [0, end_ms): those past the last retry hold none.
        let n = len.max(usize::try_from(end_ms.div_ceil(BIN_MS)).unwrap_or(usize::MAX));
        // Prefix sums make every neighbourhood mean O(1).
        let mut prefix = Vec::with_capacity(len + 1);
        prefix.push(0u64);
        for &b in &self.bins {
            prefix.push(prefix.last().copied().unwrap_or(0) + u64::from(b));
        }
        let mut waves = 0;
        let mut in_wave = false;
        for (i, &count) in self.bins.iter().enumerate() {
            let lo = i.saturating_sub(HALF_WINDOW_BINS);
            let hi = i.saturating_add(HALF_WINDOW_BINS + 1).min(n);
            let mean = (prefix[hi.min(len)] - prefix[lo]) as f64 / (hi - lo) as f64;
            let hot = f64::from(count) >= FLOOR.max(FACTOR * mean);
            if hot && !in_wave {
                waves += 1;
            }
            in_wave = hot;
        }
        waves
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;
    use rand_core::SeedableRng;

    #[test]
    fn fixed_sleep_of_96_workers_shows_a_wave_per_second() {
        let mut bins = RetryBins::default();
        // 96 workers retry together once a second for 30 s, within 30 ms of each other.
        for second in 0..30u64 {
            for worker in 0..96u64 {
                bins.record(second * 1_000 + 500 + worker % 30);
            }
        }
        assert_eq!(bins.waves(30_000), 30);
        assert_eq!(bins.peak(), 96);
    }

    #[test]
    fn full_jitter_retries_of_the_same_volume_show_no_wave() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut bins = RetryBins::default();
        for _ in 0..(96 * 30) {
            bins.record(rng.gen_range(0..30_000));
        }
        assert_eq!(bins.waves(30_000), 0);
    }

    #[test]
    fn a_few_retries_in_a_quiet_stretch_are_not_a_wave() {
        let mut bins = RetryBins::default();
        for t in [1_000, 1_010, 1_020, 20_000] {
            bins.record(t);
        }
        assert_eq!(bins.waves(20_100), 0);
    }

    /// The run's last retries are judged against the quiet after them, up to the run's end,
    /// as a burst in the middle of the run is: one bin of 129 retries after 14 bins of 30
    /// is a wave in a run that goes on for 5 s more, whether or not any retry follows it.
    #[test]
    fn the_last_burst_is_judged_up_to_the_runs_end() {
        let mut bins = RetryBins::default();
        for i in 0..14u64 {
            for k in 0..30 {
                bins.record(i * 100 + k);
            }
        }
        for k in 0..129 {
            bins.record(1_400 + k % 100);
        }
        // Clipped at the last retry, its neighbourhood (bins 0 to 14) means 36.6 a bin,
        // and 129 is under 4 times that: the count said no wave. Up to the run's end
        // (bins 0 to 64), 8.4 a bin.
        assert_eq!(bins.waves(1_500), 0);
        assert_eq!(bins.waves(6_578), 1);
        // The same burst with one late retry after it: the count moved with that retry alone.
        let mut later = bins.clone();
        later.record(6_500);
        assert_eq!(later.waves(6_578), 1);
    }
}
