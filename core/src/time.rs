//! Time as the core sees it: a number the driver hands in.

/// Milliseconds since the driver's run start (virtual or real; the core cannot tell).
pub type Millis = u64;

/// Milliseconds in one second.
pub const SECOND: Millis = 1_000;
/// Milliseconds in one minute.
pub const MINUTE: Millis = 60 * SECOND;

/// The earliest of `times` that are set (ms), if any: what a driver waits for when several
/// clocks may each have something due.
///
/// Written as a loop over the array: the loops ask for it every turn, and
/// `times.into_iter().flatten().min()` compiled to a fold a few times dearer than the
/// compares (about 3% of a naive backlog run's samples, over three of its call sites).
#[inline]
#[must_use]
pub fn earliest<const N: usize>(times: [Option<Millis>; N]) -> Option<Millis> {
    let mut first: Option<Millis> = None;
    for t in times {
        first = match (first, t) {
            (Some(f), Some(t)) => Some(f.min(t)),
            (None, t) => t,
            (f, None) => f,
        };
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_set_time_or_none() {
        assert_eq!(earliest([None, None]), None);
        assert_eq!(earliest::<0>([]), None);
        assert_eq!(earliest([Some(7), None, Some(3), Some(3)]), Some(3));
        assert_eq!(earliest([None, Some(0), Some(Millis::MAX)]), Some(0));
        assert_eq!(earliest([Some(5)]), Some(5));
    }
}
