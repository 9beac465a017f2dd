//! Per-bucket figures that need more than a counter: percentiles of values recorded in a
//! bucket (service time, queue wait), and the backlog, counted as arrivals minus first sends
//! over time.

use rustc_hash::FxHashSet;
use stampede_core::JobId;

use super::percentiles::Precision;

/// Buckets kept open for late values before the oldest is closed. Values come in nearly
/// in time order (the live driver's journal in batches), so a few suffice; a value for a
/// bucket already closed opens it again and its percentiles are those of the late values.
const OPEN_BUCKETS: usize = 4;

/// Percentiles (p50, p99) of the values recorded in each bucket, closed a few buckets
/// behind the newest so memory stays a few buckets' values whatever the run's length.
///
/// A bucket holds few values (those of 100 ms), so each keeps its values in a vector reused
/// from bucket to bucket, selected at close, rather than a histogram of a few thousand
/// counters to allocate, zero and scan per bucket. The answer is HdrHistogram's (3
/// significant digits): the value of rank `ceil(q * n)`, as the highest value equivalent to
/// it at that precision (see [`Precision`]).
///
/// The open buckets are a short vector in bucket order, not a map: a value nearly always
/// goes to the newest, found by one comparison with the last (a map's entry cost about 150
/// instructions a value).
#[derive(Debug, Default)]
pub(crate) struct BucketQuantiles {
    /// At most [`OPEN_BUCKETS`] `(bucket, values)` between values, ascending by bucket.
    open: Vec<(usize, Vec<u64>)>,
    /// Vectors of closed buckets, cleared, for the next buckets to open.
    spare: Vec<Vec<u64>>,
    precision: Precision,
}

impl BucketQuantiles {
    /// Records `ms` in bucket `bucket`; returns the buckets it closed, as `(bucket, p50,
    /// p99)`, oldest first.
    pub(crate) fn record(&mut self, bucket: usize, ms: u64) -> Vec<(usize, u64, u64)> {
        if let Some((newest, values)) = self.open.last_mut() {
            if *newest == bucket {
                values.push(ms);
                return Vec::new();
            }
        }
        self.record_opening(bucket, ms)
    }

    /// [`BucketQuantiles::record`] of a value for a bucket other than the newest open:
    /// one open before it, or one to open (then the oldest close while too many are
    /// open).
    #[cold]
    #[inline(never)]
    fn record_opening(&mut self, bucket: usize, ms: u64) -> Vec<(usize, u64, u64)> {
        match self.open.binary_search_by_key(&bucket, |(b, _)| *b) {
            Ok(at) => self.open[at].1.push(ms),
            Err(at) => {
                let mut values = self.spare.pop().unwrap_or_default();
                values.push(ms);
                self.open.insert(at, (bucket, values));
            }
        }
        let mut closed = Vec::new();
        while self.open.len() > OPEN_BUCKETS {
            let (b, values) = self.open.remove(0);
            closed.push(self.close(b, values));
        }
        closed
    }

    /// Closes every open bucket, as [`BucketQuantiles::record`] returns them.
    pub(crate) fn finish(&mut self) -> Vec<(usize, u64, u64)> {
        let open = std::mem::take(&mut self.open);
        open.into_iter().map(|(b, v)| self.close(b, v)).collect()
    }

    fn close(&mut self, bucket: usize, mut values: Vec<u64>) -> (usize, u64, u64) {
        debug_assert!(!values.is_empty(), "a bucket opens with its first value");
        let (p50, p99) = self.precision.p50_p99(&mut values);
        values.clear();
        self.spare.push(values);
        (bucket, p50, p99)
    }
}

/// A count over report buckets, kept as its change in each bucket: its level at a bucket's
/// end is the sum of the changes up to it. The backlog and each queue's depth.
#[derive(Debug, Default)]
pub(crate) struct LevelChanges {
    delta: Vec<i64>,
}

impl LevelChanges {
    /// The level moves by `by` in bucket `bucket`.
    pub(crate) fn add(&mut self, bucket: usize, by: i64) {
        if bucket >= self.delta.len() {
            self.delta.resize(bucket + 1, 0);
        }
        self.delta[bucket] += by;
    }

    /// The level at the end of each of the first `buckets` buckets.
    pub(crate) fn levels(&self, buckets: usize) -> Vec<u64> {
        let mut level = 0i64;
        (0..buckets)
            .map(|b| {
                level += self.delta.get(b).copied().unwrap_or(0);
                u64::try_from(level).unwrap_or(0)
            })
            .collect()
    }

    /// The highest level at a bucket's end.
    pub(crate) fn peak(&self) -> u64 {
        let mut level = 0i64;
        let peak = self.delta.iter().fold(0i64, |peak, d| {
            level += d;
            peak.max(level)
        });
        u64::try_from(peak).unwrap_or(0)
    }
}

/// Logical requests waiting in the client over time: each counts from the bucket it arrived
/// in until the bucket its first attempt left in (or it ended unsent); one still unsent at
/// the cap counts to the end. Memory: a counter per bucket, and the ids of requests sent and
/// not yet ended.
#[derive(Debug, Default)]
pub(crate) struct Backlog {
    /// Change of the backlog in each bucket: arrivals minus departures.
    delta: LevelChanges,
    /// Requests sent at least once and not ended: their end does not leave the backlog
    /// again. Membership only, never iterated.
    sent: FxHashSet<u64>,
}

impl Backlog {
    fn add(&mut self, bucket: usize, by: i64) {
        self.delta.add(bucket, by);
    }

    /// Request `job`, arrived in bucket `arrived`, was first sent in bucket `sent`.
    pub(crate) fn sent(&mut self, job: JobId, arrived: usize, sent: usize) {
        if self.sent.insert(job) {
            self.add(arrived, 1);
            self.add(sent, -1);
        }
    }

    /// Request `job`, arrived in bucket `arrived`, ended in bucket `ended` (`None`: open
    /// at the cap). One never sent leaves the backlog when it ends.
    pub(crate) fn ended(&mut self, job: JobId, arrived: usize, ended: Option<usize>) {
        if self.sent.remove(&job) {
            return;
        }
        self.add(arrived, 1);
        if let Some(b) = ended {
            self.add(b, -1);
        }
    }

    /// The backlog at the end of each of the first `buckets` buckets.
    pub(crate) fn levels(&self, buckets: usize) -> Vec<u64> {
        self.delta.levels(buckets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::percentiles::Distribution;

    #[test]
    fn a_backlog_drains_as_requests_are_sent() {
        let mut b = Backlog::default();
        // Three arrive in bucket 0; one is sent at once, one in bucket 2, one never (it
        // times out unsent in bucket 3); a fourth arrives in bucket 1 and is open at the cap.
        b.sent(1, 0, 0);
        b.sent(2, 0, 2);
        b.ended(2, 0, Some(4)); // ends after being sent: already left
        b.ended(3, 0, Some(3));
        b.ended(4, 1, None);
        assert_eq!(b.levels(5), vec![2, 3, 2, 1, 1]);
    }

    #[test]
    fn bucket_percentiles_close_behind_the_newest_bucket() {
        let mut q = BucketQuantiles::default();
        let mut closed = Vec::new();
        for (bucket, ms) in [(0, 10), (0, 30), (1, 5), (2, 7), (3, 9), (0, 20), (4, 1)] {
            closed.extend(q.record(bucket, ms));
        }
        assert_eq!(closed, vec![(0, 20, 30)]);
        closed.extend(q.finish());
        assert_eq!(
            closed,
            vec![(0, 20, 30), (1, 5, 5), (2, 7, 7), (3, 9, 9), (4, 1, 1)]
        );
    }

    /// The open buckets as a map, as they were kept before the short vector: the order a
    /// bucket closes in and what it holds, for the vector to be held to.
    #[derive(Default)]
    struct MapQuantiles {
        open: std::collections::BTreeMap<usize, Vec<u64>>,
        precision: Precision,
    }

    impl MapQuantiles {
        fn record(&mut self, bucket: usize, ms: u64) -> Vec<(usize, u64, u64)> {
            self.open.entry(bucket).or_default().push(ms);
            let mut closed = Vec::new();
            while self.open.len() > OPEN_BUCKETS {
                if let Some((b, mut values)) = self.open.pop_first() {
                    let (p50, p99) = self.precision.p50_p99(&mut values);
                    closed.push((b, p50, p99));
                }
            }
            closed
        }

        fn finish(&mut self) -> Vec<(usize, u64, u64)> {
            let open = std::mem::take(&mut self.open);
            let precision = &self.precision;
            open.into_iter()
                .map(|(b, mut v)| {
                    let (p50, p99) = precision.p50_p99(&mut v);
                    (b, p50, p99)
                })
                .collect()
        }
    }

    proptest::proptest! {
        /// Buckets kept in a short vector close as a map of them closes them, with the
        /// same percentiles: values in order, late, for buckets closed already, and runs
        /// of one bucket, vectors reused from closed buckets.
        #[test]
        fn open_buckets_close_as_a_map_closes_them(
            values in proptest::collection::vec((0usize..12, 0u64..5_000), 1..400),
        ) {
            let mut q = BucketQuantiles::default();
            let mut map = MapQuantiles::default();
            for (bucket, ms) in values {
                proptest::prop_assert_eq!(q.record(bucket, ms), map.record(bucket, ms));
                proptest::prop_assert!(q.open.len() <= OPEN_BUCKETS);
            }
            proptest::prop_assert_eq!(q.finish(), map.finish());
        }

        /// The selected percentiles are HdrHistogram's, value for value, over values as
        /// wide as a run's latencies (up to hours in ms, where the precision rounds).
        #[test]
        fn bucket_percentiles_are_hdrhistograms(
            values in proptest::collection::vec(0u64..20_000_000, 1..300),
        ) {
            let mut q = BucketQuantiles::default();
            let mut hist = Distribution::default();
            for &ms in &values {
                hist.record(ms);
                proptest::prop_assert!(q.record(7, ms).is_empty());
            }
            let expected = (7, hist.quantile(0.5), hist.quantile(0.99));
            proptest::prop_assert_eq!(q.finish(), vec![expected]);
        }
    }
}
