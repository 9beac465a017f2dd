//! The top of a y axis, scaled to the bulk of the data when a few points are far above it.
//!
//! One bucket can flatten a whole run: when a backlog's shared deadline passes, a naive client
//! tries every remaining request in the last second (10,611 attempts against ~100/s for the
//! 75 minutes before), and an axis that fits that second draws the storm as a line on the
//! floor. So each series on an axis is checked on its own:
//!
//! - its *outliers* are its values above `OUTLIER_FACTOR` x the 99th percentile (nearest
//!   rank) of its non-zero values, and they count as outliers only while there are at most
//!   `MAX_OUTLIERS` of them; more than that is a pattern (a wave every minute), and the axis
//!   keeps it. Below 100 non-zero values the 99th percentile is the maximum itself, so short
//!   series (sweeps, short runs) are never clipped;
//! - its *bulk maximum* is its largest value that is not an outlier.
//!
//! The axis top is the largest bulk maximum times the usual headroom. When some point lies
//! above that top it is *clipped*: drawn at the top edge with a marker, and the chart names the
//! highest one. When no point lies above it, the axis is exactly what it was without the rule
//! (the largest value times the headroom), so plots without outliers are unchanged.

/// Values above this many times a series' 99th percentile of non-zero values are outliers.
/// Below it the bulk still fills an eighth of the axis or more, readable as it is (a calm
/// run's start-up burst at 5x its steady rate stays whole); above it the bulk is a line on
/// the floor (the naive backlog's last second is 100x the rest).
pub(crate) const OUTLIER_FACTOR: f64 = 8.0;

/// Most points of one series above the outlier line that are still clipped as outliers;
/// beyond this they are part of the picture.
pub(crate) const MAX_OUTLIERS: usize = 3;

/// One side's y axis: its top (axis units) and the points drawn above it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct YScale {
    /// Top of the axis (axis units), at least 1.
    pub top: f64,
    /// Points above `top`, one per x (the highest there), in increasing x: (x, value).
    pub clipped: Vec<(f64, f64)>,
}

impl YScale {
    /// The highest clipped point (the earliest on ties).
    pub(crate) fn peak(&self) -> Option<(f64, f64)> {
        self.clipped
            .iter()
            .copied()
            .fold(None, |best: Option<(f64, f64)>, p| match best {
                Some(b) if b.1 >= p.1 => Some(b),
                _ => Some(p),
            })
    }
}

/// 99th percentile (nearest rank) of the finite values above zero; `None` when there are none.
fn p99_non_zero(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = (v.len() * 99).div_ceil(100).max(1);
    Some(v[rank - 1])
}

/// A series' largest value that is not an outlier (see the module note); 0 when it has none.
pub(crate) fn bulk_max(values: &[f64]) -> f64 {
    let finite = || values.iter().copied().filter(|v| v.is_finite());
    let max = finite().fold(0.0f64, f64::max);
    let Some(p99) = p99_non_zero(values) else {
        return max;
    };
    let line = p99 * OUTLIER_FACTOR;
    let outliers = finite().filter(|v| *v > line).count();
    if outliers == 0 || outliers > MAX_OUTLIERS {
        return max;
    }
    finite().filter(|v| *v <= line).fold(0.0f64, f64::max)
}

/// The axis for `series` (each the (x, y) points as drawn: stack tops, band highs), with
/// `headroom` x the top value of room above (so the legend does not sit on a peak).
pub(crate) fn y_scale(series: &[Vec<(f64, f64)>], headroom: f64) -> YScale {
    let ys = |s: &Vec<(f64, f64)>| s.iter().map(|p| p.1).collect::<Vec<f64>>();
    let max = series
        .iter()
        .flat_map(|s| s.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let bulk = series
        .iter()
        .map(|s| bulk_max(&ys(s)))
        .fold(0.0f64, f64::max);
    let bulk_top = (bulk * headroom).max(1.0);
    let mut clipped: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.iter().copied())
        .filter(|p| p.1.is_finite() && p.1 > bulk_top)
        .collect();
    if clipped.is_empty() {
        return YScale {
            top: (max * headroom).max(1.0),
            clipped,
        };
    }
    // One point per x, the highest: stacked bands and the line over them share their x.
    clipped.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
    clipped.dedup_by(|later, first| later.0 == first.0);
    YScale {
        top: bulk_top,
        clipped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat_with(n: usize, level: f64, spikes: &[(usize, f64)]) -> Vec<(f64, f64)> {
        let mut pts: Vec<(f64, f64)> = (0..n).map(|i| (i as f64, level + (i % 7) as f64)).collect();
        for (i, y) in spikes {
            pts[*i].1 = *y;
        }
        pts
    }

    #[test]
    fn one_huge_bucket_is_clipped_and_the_axis_fits_the_rest() {
        let s = flat_with(4500, 100.0, &[(4499, 10_611.0)]);
        let scale = y_scale(&[s], 1.2);
        // The rest peaks at 106: the axis is 106 x 1.2, not 10,611 x 1.2.
        assert!((scale.top - 106.0 * 1.2).abs() < 1e-9, "top {}", scale.top);
        assert_eq!(scale.clipped, vec![(4499.0, 10_611.0)]);
        assert_eq!(scale.peak(), Some((4499.0, 10_611.0)));
    }

    #[test]
    fn a_series_without_outliers_keeps_its_axis() {
        let s = flat_with(4500, 100.0, &[(1000, 300.0)]);
        let scale = y_scale(&[s], 1.2);
        assert_eq!(scale.top, 300.0 * 1.2);
        assert!(scale.clipped.is_empty());
        assert_eq!(scale.peak(), None);
    }

    #[test]
    fn regular_waves_are_a_pattern_not_outliers() {
        // A wave every 100 buckets: 45 points far above the rest, more than MAX_OUTLIERS.
        let spikes: Vec<(usize, f64)> = (0..45).map(|k| (k * 100, 5_000.0)).collect();
        let s = flat_with(4500, 100.0, &spikes);
        let scale = y_scale(&[s], 1.2);
        assert_eq!(scale.top, 5_000.0 * 1.2);
        assert!(scale.clipped.is_empty());
    }

    #[test]
    fn short_series_are_never_clipped() {
        // 99 non-zero values: the 99th percentile is the maximum itself.
        let s = flat_with(99, 10.0, &[(50, 1e6)]);
        assert_eq!(bulk_max(&s.iter().map(|p| p.1).collect::<Vec<_>>()), 1e6);
        assert!(y_scale(&[s], 1.1).clipped.is_empty());
    }

    #[test]
    fn each_series_is_judged_on_its_own_and_a_point_under_the_axis_stays() {
        // A's spike is an outlier for A, but B's bulk is higher still: nothing is clipped,
        // and the axis is what it was.
        let a = flat_with(500, 10.0, &[(10, 900.0)]);
        let b = flat_with(500, 1_000.0, &[]);
        let scale = y_scale(&[a.clone(), b], 1.1);
        assert!(scale.clipped.is_empty());
        assert_eq!(scale.top, 1_006.0 * 1.1);
        // Two series clipped at the same x give one point, the higher.
        let c: Vec<(f64, f64)> = a.iter().map(|p| (p.0, p.1 * 2.0)).collect();
        let scale = y_scale(&[a, c], 1.1);
        assert_eq!(scale.clipped, vec![(10.0, 1_800.0)]);
    }

    #[test]
    fn zeros_and_non_finite_values_are_left_out() {
        assert_eq!(bulk_max(&[]), 0.0);
        assert_eq!(bulk_max(&[0.0, 0.0]), 0.0);
        assert_eq!(y_scale(&[vec![(0.0, 0.0)]], 1.2).top, 1.0);
        let mut v = vec![0.0; 1000];
        v.extend([5.0; 200]);
        v.push(f64::NAN);
        v.push(500.0);
        assert_eq!(bulk_max(&v), 5.0);
    }
}
