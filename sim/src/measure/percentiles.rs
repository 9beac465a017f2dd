//! HdrHistogram-backed percentiles (ms).

use hdrhistogram::Histogram;
use stampede_reports::Percentiles;

/// The precision every distribution is kept at: three significant digits.
pub(crate) const SIGNIFICANT_DIGITS: u8 = 3;

/// A latency-like distribution in ms, three significant digits.
#[derive(Debug, Clone)]
pub struct Distribution {
    hist: Histogram<u64>,
}

impl Default for Distribution {
    fn default() -> Self {
        // Auto-resizing, so no value is ever refused; 3 significant digits.
        let mut hist = Histogram::new(SIGNIFICANT_DIGITS)
            .unwrap_or_else(|_| unreachable!("3 significant digits is valid"));
        hist.auto(true);
        Self { hist }
    }
}

impl Distribution {
    /// Adds one value (ms).
    pub fn record(&mut self, ms: u64) {
        // Auto-resize makes recording infallible for every u64 the run can produce.
        let _ = self.hist.record(ms);
    }

    /// Adds every value `other` holds: the counts are those of recording each of its values
    /// here (hdrhistogram adds counts bucket by bucket; both keep the same precision).
    pub fn add(&mut self, other: &Distribution) {
        // Auto-resize makes adding infallible, as it makes recording.
        let _ = self.hist.add(&other.hist);
    }

    /// How many values were recorded.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// One quantile (0..=1) in ms; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.hist.is_empty() {
            0
        } else {
            self.hist.value_at_quantile(q)
        }
    }

    /// p50, p95, p99 and max (ms).
    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            p50: self.quantile(0.50),
            p95: self.quantile(0.95),
            p99: self.quantile(0.99),
            max: if self.hist.is_empty() {
                0
            } else {
                self.hist.max()
            },
        }
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        self.hist.reset();
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
    /// equivalent to it at three significant digits; 0 when empty.
    pub(crate) fn quantile(&self, values: &mut [u64], q: f64) -> u64 {
        let n = values.len();
        if n == 0 {
            return 0;
        }
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
        let (_, value, _) = values.select_nth_unstable(rank - 1);
        self.empty.highest_equivalent(*value)
    }

    /// The p50 and p99 (ms) of `values` (reordered), as a timeseries row quotes a bucket.
    pub(crate) fn p50_p99(&self, values: &mut [u64]) -> (u64, u64) {
        (self.quantile(values, 0.5), self.quantile(values, 0.99))
    }
}
