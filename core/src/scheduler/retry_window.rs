//! The per-scope retry budget: in a sliding window, retries may be at most `ratio` of the
//! first attempts plus a small `floor`, so ten tasks with three retries each do not become
//! thirty extra requests to one account during an incident.

use std::collections::VecDeque;

use super::state::millis;
use crate::policy::ScopeRetryBudget;
use crate::time::Millis;

/// Sub-buckets per window: the window slides in steps of `window / SLICES`.
const SLICES: u64 = 10;

#[derive(Debug, Clone)]
pub(super) struct RetryWindow {
    enabled: bool,
    ratio: f64,
    floor: u32,
    slice_ms: Millis,
    /// (slice index, first attempts, retries), oldest first, at most `SLICES` entries.
    slices: VecDeque<(u64, u32, u32)>,
    /// The ms the newest slice spans, `[from, to)`: a time inside it needs neither the
    /// division that finds its slice nor a look for slices to drop (those went when the
    /// newest slice was made). Empty before the first slice.
    newest: (Millis, Millis),
}

impl RetryWindow {
    pub fn new(budget: &ScopeRetryBudget) -> Self {
        Self {
            enabled: budget.enabled,
            ratio: budget.ratio,
            floor: budget.floor,
            slice_ms: (millis(budget.window) / SLICES).max(1),
            slices: VecDeque::new(),
            newest: (0, 0),
        }
    }

    /// The slice `now` falls in (the newest, as nearly always: inlined), made when new.
    #[inline]
    fn current(&mut self, now: Millis) -> &mut (u64, u32, u32) {
        let (from, to) = self.newest;
        if (from..to).contains(&now) {
            return self.slices.back_mut().expect("a slice spans `newest`");
        }
        self.advance(now)
    }

    /// [`RetryWindow::current`] when `now` is past the newest slice: slices too old leave,
    /// and the slice of `now` is added.
    #[cold]
    #[inline(never)]
    fn advance(&mut self, now: Millis) -> &mut (u64, u32, u32) {
        let slice = now / self.slice_ms;
        while self
            .slices
            .front()
            .is_some_and(|&(s, ..)| s + SLICES <= slice)
        {
            self.slices.pop_front();
        }
        if !matches!(self.slices.back(), Some(&(s, ..)) if s >= slice) {
            self.slices.push_back((slice, 0, 0));
            let from = slice.saturating_mul(self.slice_ms);
            self.newest = (from, from.saturating_add(self.slice_ms));
        }
        self.slices.back_mut().expect("a slice was just ensured")
    }

    /// A first attempt of some action went to the scope.
    #[inline]
    pub fn record_first(&mut self, now: Millis) {
        if self.enabled {
            let slice = self.current(now);
            slice.1 = slice.1.saturating_add(1);
        }
    }

    /// Whether one more retry fits the budget now; counts it when it does.
    #[inline]
    pub fn try_retry(&mut self, now: Millis) -> bool {
        // Inline for the budget turned off (every retry of a client without it).
        !self.enabled || self.try_counted_retry(now)
    }

    /// [`RetryWindow::try_retry`] with the budget on.
    #[inline(never)]
    fn try_counted_retry(&mut self, now: Millis) -> bool {
        self.current(now);
        let (firsts, retries) = self
            .slices
            .iter()
            .fold((0u64, 0u64), |(f, r), &(_, sf, sr)| {
                (f + u64::from(sf), r + u64::from(sr))
            });
        let allowed = (firsts as f64 * self.ratio).floor() as u64 + u64::from(self.floor);
        if retries >= allowed {
            return false;
        }
        // The newest slice is `now`'s: `current` above made it so, and nothing since moved it.
        let slice = self.slices.back_mut().expect("`current` ensured a slice");
        slice.2 = slice.2.saturating_add(1);
        debug_assert!(self.slices.len() as u64 <= SLICES);
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;

    /// Every event kept with its slice, the window summed anew at each question: what the
    /// window's slices and its cached newest span must always agree with.
    #[derive(Default)]
    struct Reference {
        /// (slice index, is a retry).
        events: Vec<(u64, bool)>,
    }

    impl Reference {
        fn try_retry(&mut self, slice: u64, ratio: f64, floor: u32) -> bool {
            let live = self.events.iter().filter(|(s, _)| s + SLICES > slice);
            let (firsts, retries) = live.fold((0u64, 0u64), |(f, r), &(_, retry)| {
                (f + u64::from(!retry), r + u64::from(retry))
            });
            let allowed = (firsts as f64 * ratio).floor() as u64 + u64::from(floor);
            let fits = retries < allowed;
            if fits {
                self.events.push((slice, true));
            }
            fits
        }
    }

    proptest! {
        /// Steps within a slice, across one, and past the whole window: the window grants
        /// exactly the retries a sum over every event still in it allows.
        #[test]
        fn grants_what_a_sum_over_the_window_allows(
            steps in proptest::collection::vec((0u64..450, any::<bool>()), 1..200),
            floor in 0u32..3,
        ) {
            let budget = ScopeRetryBudget {
                enabled: true,
                ratio: 0.5,
                floor,
                window: Duration::from_millis(1_000),
            };
            let mut window = RetryWindow::new(&budget);
            let mut reference = Reference::default();
            let mut now = 0;
            for (step, retry) in steps {
                now += step;
                let slice = now / window.slice_ms;
                if retry {
                    let granted = window.try_retry(now);
                    prop_assert_eq!(granted, reference.try_retry(slice, 0.5, floor), "at {} ms", now);
                } else {
                    window.record_first(now);
                    reference.events.push((slice, false));
                }
                prop_assert!(window.slices.len() as u64 <= SLICES);
            }
        }
    }
}
