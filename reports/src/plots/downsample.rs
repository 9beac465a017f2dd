//! Thinning long runs for drawing: an hour at 1 s buckets is 3,600 points, more than a plot
//! is wide, and a line through all of them is a solid smear. Keeping, per group of buckets,
//! the bucket with the lowest and the one with the highest value (in time order) draws the
//! same envelope with a fraction of the points: spikes and dips never vanish, as they would
//! under averaging or plain decimation.

/// Most points one line of a run plot keeps (about one per 1.5 px of a 960 px plot).
pub(crate) const MAX_POINTS: usize = 600;

/// Indices of `values` to draw, in increasing order: all of them when there are at most
/// `max_points`, otherwise the minimum and the maximum of each of `max_points / 2` equal
/// groups (the first index on ties, so the choice is stable).
pub(crate) fn envelope_indices(values: &[f64], max_points: usize) -> Vec<usize> {
    let n = values.len();
    if n <= max_points.max(2) {
        return (0..n).collect();
    }
    let groups = (max_points / 2).max(1);
    let size = n.div_ceil(groups);
    let mut keep = Vec::with_capacity(2 * groups);
    for start in (0..n).step_by(size) {
        let end = (start + size).min(n);
        let (mut lo, mut hi) = (start, start);
        for i in start..end {
            if values[i] < values[lo] {
                lo = i;
            }
            if values[i] > values[hi] {
                hi = i;
            }
        }
        keep.push(lo.min(hi));
        if lo != hi {
            keep.push(lo.max(hi));
        }
    }
    keep
}

/// `points` thinned to their envelope (see `envelope_indices`).
pub(crate) fn envelope(points: &[(f64, f64)], max_points: usize) -> Vec<(f64, f64)> {
    let ys: Vec<f64> = points.iter().map(|p| p.1).collect();
    envelope_indices(&ys, max_points)
        .into_iter()
        .map(|i| points[i])
        .collect()
}

/// Merges two sorted index lists into one sorted list without repeats.
pub(crate) fn merge_indices(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut all: Vec<usize> = a.iter().chain(b).copied().collect();
    all.sort_unstable();
    all.dedup();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_series_are_kept_whole() {
        let v: Vec<f64> = (0..50).map(f64::from).collect();
        assert_eq!(envelope_indices(&v, 600), (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn long_series_keep_every_spike_and_dip_within_the_budget() {
        // 3,600 one-second buckets of a flat 10 with one spike and one dip.
        let mut v = vec![10.0; 3600];
        v[1234] = 500.0;
        v[2345] = 0.0;
        let keep = envelope_indices(&v, 600);
        assert!(keep.len() <= 600, "{} points", keep.len());
        assert!(keep.contains(&1234) && keep.contains(&2345));
        assert!(keep.windows(2).all(|w| w[0] < w[1]), "in time order");
        let pts: Vec<(f64, f64)> = v.iter().enumerate().map(|(i, y)| (i as f64, *y)).collect();
        let thin = envelope(&pts, 600);
        assert_eq!(thin.iter().map(|p| p.1).fold(0.0, f64::max), 500.0);
        assert_eq!(thin.iter().map(|p| p.1).fold(f64::MAX, f64::min), 0.0);
    }

    #[test]
    fn merged_indices_are_sorted_and_unique() {
        assert_eq!(merge_indices(&[1, 5, 9], &[0, 5, 7]), vec![0, 1, 5, 7, 9]);
    }
}
