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
}

impl RetryWindow {
    pub fn new(budget: &ScopeRetryBudget) -> Self {
        Self {
            enabled: budget.enabled,
            ratio: budget.ratio,
            floor: budget.floor,
            slice_ms: (millis(budget.window) / SLICES).max(1),
            slices: VecDeque::new(),
        }
    }

    fn current(&mut self, now: Millis) -> &mut (u64, u32, u32) {
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
        }
        self.slices.back_mut().expect("a slice was just ensured")
    }

    /// A first attempt of some action went to the scope.
    pub fn record_first(&mut self, now: Millis) {
        if self.enabled {
            let slice = self.current(now);
            slice.1 = slice.1.saturating_add(1);
        }
    }

    /// Whether one more retry fits the budget now; counts it when it does.
    pub fn try_retry(&mut self, now: Millis) -> bool {
        if !self.enabled {
            return true;
        }
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
        let slice = self.current(now);
        slice.2 = slice.2.saturating_add(1);
        debug_assert!(self.slices.len() as u64 <= SLICES);
        true
    }
}
