//! Percentiles (ms) as HdrHistogram gives them, at three significant digits.

use hdrhistogram::Histogram;
use stampede_reports::Percentiles;

/// The precision every distribution is kept at: three significant digits.
pub(crate) const SIGNIFICANT_DIGITS: u8 = 3;

/// A latency-like distribution in ms, three significant digits.
///
/// Kept as HdrHistogram keeps one (3 significant digits, auto-resizing): a count for each
/// class of values it tells apart, at the index it gives that class (see [`class_of`]),
/// with the same quantiles (a test holds them to the crate's). Recording here is a few
/// instructions inline, where the crate's `record` was a call of about 70 (its range checks,
/// its resize path, its min and max), five or six times at every action's end.
#[derive(Debug, Clone, Default)]
pub struct Distribution {
    /// Values recorded by class: `counts[class_of(v)]` counts `v`. Grown to the largest
    /// class met, as the histogram's auto-resize grew it.
    counts: Vec<u64>,
    /// How many values were recorded.
    len: u64,
    /// The largest value recorded, exactly. The histogram answers a value by the highest
    /// one equivalent to it at three significant digits, which can pass a hard bound (a
    /// latency longer than the run, a max above the total); every figure is held to this.
    max: u64,
}

/// Classes per half bucket: values under `2 * HALF` (2,048) have a class each, and each
/// doubling above that `HALF` classes, the values of one class `1 << shift` apart (3
/// significant digits: 2,000 values with a unit's resolution need 11 bits).
const HALF_BITS: u32 = 10;

/// HdrHistogram's counts index of `value` at three significant digits with a lowest
/// discernible value of 1: `((bucket + 1) << 10) + (value >> bucket) - 1024`, where
/// `bucket` is how far `value` shifts right to fit in 11 bits.
#[inline]
fn class_of(value: u64) -> usize {
    let shift = 53 - (value | 2047).leading_zeros();
    ((shift as usize) << HALF_BITS) + (value >> shift) as usize
}

/// The highest value of class `class`, as HdrHistogram's quantiles answer it (the
/// `highest_equivalent` of the class's lowest value, whose end saturates: `u64::MAX - 1`
/// for the top class).
fn highest_of(class: usize) -> u64 {
    let shift = (class >> HALF_BITS).saturating_sub(1);
    lowest_of(class).saturating_add(1 << shift) - 1
}

/// The lowest value of class `class` (HdrHistogram's `lowest_equivalent`).
fn lowest_of(class: usize) -> u64 {
    let shift = (class >> HALF_BITS).saturating_sub(1);
    let sub = (class - (shift << HALF_BITS)) as u64;
    sub << shift
}

impl Distribution {
    /// Adds one value (ms).
    #[inline]
    pub fn record(&mut self, ms: u64) {
        let class = class_of(ms);
        match self.counts.get_mut(class) {
            Some(n) => *n += 1,
            None => self.grow_to(class),
        }
        self.len += 1;
        self.max = self.max.max(ms);
    }

    /// Makes room for class `class` and counts one value there.
    #[cold]
    #[inline(never)]
    fn grow_to(&mut self, class: usize) {
        // `resize` reserves by doubling: a run whose values keep growing grows in steps.
        self.counts.resize(class + 1, 0);
        self.counts[class] += 1;
    }

    /// Adds every value `other` holds: the counts are those of recording each of its values
    /// here.
    pub fn add(&mut self, other: &Distribution) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (n, m) in self.counts.iter_mut().zip(&other.counts) {
            *n += m;
        }
        self.len += other.len;
        self.max = self.max.max(other.max);
    }

    /// How many values were recorded.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// One quantile (0..=1) in ms, never above the largest value recorded; 0 when empty.
    /// HdrHistogram's `value_at_quantile`: the class of the value of rank `ceil(q * n)` (at
    /// least the first), answered by its highest value (its lowest for `q` = 0).
    pub fn quantile(&self, q: f64) -> u64 {
        let [value] = self.quantiles([q]);
        value
    }

    /// [`Distribution::quantile`] of each of `qs` (ascending), in one pass over the
    /// counts (summed eight at a time until the class is near, as HdrHistogram scans).
    fn quantiles<const N: usize>(&self, qs: [f64; N]) -> [u64; N] {
        let mut values = [0; N];
        if self.len == 0 {
            return values;
        }
        let (mut seen, mut class) = (0u64, 0usize);
        for (value, &q) in values.iter_mut().zip(&qs) {
            let q = q.min(1.0);
            let rank = ((q * self.len as f64).ceil() as u64).max(1);
            // `seen` counts the values of the classes before `class`.
            while class < self.counts.len() {
                let chunk = &self.counts[class..(class + 8).min(self.counts.len())];
                let sum: u64 = chunk.iter().sum();
                if seen + sum >= rank {
                    break;
                }
                seen += sum;
                class += chunk.len();
            }
            while class < self.counts.len() && seen + self.counts[class] < rank {
                seen += self.counts[class];
                class += 1;
            }
            *value = if class >= self.counts.len() {
                self.max
            } else if q == 0.0 {
                lowest_of(class).min(self.max)
            } else {
                highest_of(class).min(self.max)
            };
        }
        values
    }

    /// p50, p95, p99 and the exact max (ms).
    pub fn percentiles(&self) -> Percentiles {
        let [p50, p95, p99] = self.quantiles([0.50, 0.95, 0.99]);
        Percentiles {
            p50,
            p95,
            p99,
            max: self.max,
        }
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        self.counts.clear();
        self.len = 0;
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
    use hdrhistogram::Histogram;

    use super::{class_of, highest_of, lowest_of, Distribution, SIGNIFICANT_DIGITS};

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

    /// HdrHistogram itself, as every distribution was kept before: 3 significant digits,
    /// auto-resizing.
    fn hdr(values: &[u64]) -> Histogram<u64> {
        let mut hist = Histogram::new(SIGNIFICANT_DIGITS).unwrap();
        hist.auto(true);
        for &v in values {
            hist.record(v).unwrap();
        }
        hist
    }

    /// Values as a run's latencies spread (ms, up to hours), some past any run (up to
    /// `u64::MAX`), and some on the classes' edges.
    fn values() -> impl proptest::strategy::Strategy<Value = Vec<u64>> {
        use proptest::prelude::*;
        proptest::collection::vec(
            prop_oneof![
                4 => 0u64..20_000_000,
                1 => 0u64..4_096,
                1 => any::<u64>(),
                1 => (0u32..64, 0u64..3).prop_map(|(s, d)| (1u64 << s).wrapping_sub(d)),
            ],
            1..300,
        )
    }

    proptest::proptest! {
        /// Each quantile is HdrHistogram's (held to the exact max, as always), for values
        /// recorded one by one or added from two distributions; the count is theirs.
        #[test]
        fn quantiles_are_hdrhistograms(values in values(), split in 0usize..300) {
            let hist = hdr(&values);
            let largest = values.iter().copied().max().unwrap_or(0);
            let mut d = Distribution::default();
            for &v in &values {
                d.record(v);
            }
            let (a, b) = values.split_at(split.min(values.len()));
            let mut added = Distribution::default();
            let mut other = Distribution::default();
            a.iter().for_each(|&v| added.record(v));
            b.iter().for_each(|&v| other.record(v));
            added.add(&other);
            for q in [0.0, 0.001, 0.25, 0.5, 0.95, 0.99, 0.999, 1.0] {
                let want = hist.value_at_quantile(q).min(largest);
                proptest::prop_assert_eq!(d.quantile(q), want, "q {}", q);
                proptest::prop_assert_eq!(added.quantile(q), want, "q {} added", q);
            }
            let p = d.percentiles();
            let want = |q| hist.value_at_quantile(q).min(largest);
            proptest::prop_assert_eq!((p.p50, p.p95, p.p99), (want(0.5), want(0.95), want(0.99)));
            proptest::prop_assert_eq!(p.max, largest);
            proptest::prop_assert_eq!(d.len(), hist.len());
            proptest::prop_assert_eq!(added.len(), hist.len());
            proptest::prop_assert_eq!(d.percentiles(), added.percentiles());
        }
    }

    /// A value's class is the histogram's: the same class for values it counts together,
    /// and a class's highest and lowest values are its equivalents.
    #[test]
    fn classes_are_the_histograms() {
        let hist = hdr(&[]);
        let mut v = 0u64;
        while v < u64::MAX / 3 {
            for x in [v, v + 1, v.saturating_sub(1), v * 3 / 2] {
                let class = class_of(x);
                let lowest = hist.lowest_equivalent(x);
                assert_eq!(lowest_of(class), lowest, "{x}");
                assert_eq!(highest_of(class), hist.highest_equivalent(lowest), "{x}");
                assert_eq!(class_of(hist.highest_equivalent(x)), class, "{x}");
            }
            v = v * 2 + 1;
        }
        let top = class_of(u64::MAX);
        assert_eq!(
            highest_of(top),
            u64::MAX - 1,
            "as the histogram's quantiles answer"
        );
        assert_eq!(lowest_of(top), hist.lowest_equivalent(u64::MAX));
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
