//! HdrHistogram-backed percentiles (ms).

use hdrhistogram::Histogram;
use stampede_reports::Percentiles;

/// The precision every distribution is kept at: three significant digits.
pub(crate) const SIGNIFICANT_DIGITS: u8 = 3;

/// A latency-like distribution in ms, three significant digits.
#[derive(Debug, Clone)]
pub struct Distribution {
    hist: Histogram<u64>,
    /// The largest value recorded, exactly. The histogram answers a value by the highest
    /// one equivalent to it at three significant digits, which can pass a hard bound (a
    /// latency longer than the run, a max above the total); every figure is held to this.
    max: u64,
}

impl Default for Distribution {
    fn default() -> Self {
        // Auto-resizing, so no value is ever refused; 3 significant digits.
        let mut hist = Histogram::new(SIGNIFICANT_DIGITS)
            .unwrap_or_else(|_| unreachable!("3 significant digits is valid"));
        hist.auto(true);
        Self { hist, max: 0 }
    }
}

impl Distribution {
    /// Adds one value (ms).
    pub fn record(&mut self, ms: u64) {
        // Auto-resize makes recording infallible for every u64 the run can produce.
        let _ = self.hist.record(ms);
        self.max = self.max.max(ms);
    }

    /// Adds every value `other` holds: the counts are those of recording each of its values
    /// here (hdrhistogram adds counts bucket by bucket; both keep the same precision).
    pub fn add(&mut self, other: &Distribution) {
        // Auto-resize makes adding infallible, as it makes recording.
        let _ = self.hist.add(&other.hist);
        self.max = self.max.max(other.max);
    }

    /// How many values were recorded.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// One quantile (0..=1) in ms, never above the largest value recorded; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.hist.is_empty() {
            0
        } else {
            self.hist.value_at_quantile(q).min(self.max)
        }
    }

    /// p50, p95, p99 and the exact max (ms).
    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            p50: self.quantile(0.50),
            p95: self.quantile(0.95),
            p99: self.quantile(0.99),
            max: self.max,
        }
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        self.hist.reset();
        self.max = 0;
    }
}

/// HdrHistogram's quantiles over a few values kept as they are: for the figures of one
/// 100 ms bucket, where a histogram of a few thousand counters to allocate, zero and scan
/// per bucket costs more than selecting among the values. The answer is the one
/// [`Distribution::quantile`] gives for the same values (a test compares them).
#[derive(Debug)]
pub(crate) struct Precision {
    /// An empty histogram of the precision figures are quoted at: only its
    /// `highest_equivalent`, a pure function of a value, is used.
    empty: Histogram<u64>,
}

impl Default for Precision {
    fn default() -> Self {
        Self {
            empty: Histogram::new(SIGNIFICANT_DIGITS)
                .unwrap_or_else(|_| unreachable!("3 significant digits is valid")),
        }
    }
}

impl Precision {
    /// HdrHistogram's `value_at_quantile` over `values` (reordered), for `q` in (0, 1]:
    /// the value of rank `ceil(q * n)` (at least the first), as the highest value
    /// equivalent to it at three significant digits, never above `largest`, the largest of
    /// `values` (as [`Distribution::quantile`]); 0 when empty.
    fn quantile(&self, values: &mut [u64], q: f64, largest: u64) -> u64 {
        let n = values.len();
        if n == 0 {
            return 0;
        }
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
        let (_, value, _) = values.select_nth_unstable(rank - 1);
        self.empty.highest_equivalent(*value).min(largest)
    }

    /// The p50 and p99 (ms) of `values` (reordered), as a timeseries row quotes a bucket.
    pub(crate) fn p50_p99(&self, values: &mut [u64]) -> (u64, u64) {
        let largest = values.iter().copied().max().unwrap_or(0);
        (
            self.quantile(values, 0.5, largest),
            self.quantile(values, 0.99, largest),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Distribution;

    proptest::proptest! {
        /// No figure passes the largest value recorded, and the max is that value exactly:
        /// the histogram alone answered 4,501,503 ms for a wait of at most 4,499,999 in a
        /// run of 4,500,004 (a wait longer than the run), and a backoff max above the
        /// backoff total.
        #[test]
        fn no_percentile_passes_the_largest_value(
            values in proptest::collection::vec(0u64..20_000_000, 1..300),
        ) {
            let mut d = Distribution::default();
            for &ms in &values {
                d.record(ms);
            }
            let p = d.percentiles();
            let largest = values.iter().copied().max().unwrap_or(0);
            proptest::prop_assert_eq!(p.max, largest);
            proptest::prop_assert!(p.p50 <= p.p95 && p.p95 <= p.p99 && p.p99 <= p.max);
        }
    }

    proptest::proptest! {
        /// A distribution added to another answers what one that recorded every value of
        /// both answers (the run's latency is its completions' added to the rest's at the
        /// end), whichever holds the wider values.
        #[test]
        fn an_added_distribution_is_every_value_recorded(
            values in proptest::collection::vec((0u64..20_000_000, proptest::bool::ANY), 0..300),
        ) {
            let (mut a, mut b, mut all) =
                (Distribution::default(), Distribution::default(), Distribution::default());
            for &(ms, first) in &values {
                if first { a.record(ms) } else { b.record(ms) }
                all.record(ms);
            }
            a.add(&b);
            proptest::prop_assert_eq!(a.len(), all.len());
            proptest::prop_assert_eq!(a.percentiles(), all.percentiles());
            for q in [0.0, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0] {
                proptest::prop_assert_eq!(a.quantile(q), all.quantile(q));
            }
        }
    }

    #[test]
    fn an_added_distribution_keeps_the_larger_max_and_clear_forgets_it() {
        let (mut a, mut b) = (Distribution::default(), Distribution::default());
        a.record(4_500_004);
        b.record(7);
        b.add(&a);
        assert_eq!(b.percentiles().max, 4_500_004);
        assert_eq!(b.quantile(1.0), 4_500_004, "not 4,501,503");
        b.clear();
        assert_eq!(b.percentiles().max, 0);
    }
}
