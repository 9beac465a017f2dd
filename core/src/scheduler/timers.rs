//! The core's timers: when each delayed action wakes, earliest first, ties in the order
//! they were set.
//!
//! Most timers are set in the order they fire: a fixed backoff, a Retry-After or a rate
//! wait added to a clock that only goes forward. Those go to the back of a queue, kept in
//! order for free; only a timer due before the last one queued goes to a heap. Taking the
//! earliest compares the two heads. A binary heap's sift costs a mispredicted branch a
//! level, and with every timer in it its `pop` was about 3% of a naive client's loop.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::{JobId, Millis};

/// One timer. Ordered by due time, then by `ticket`, which rises with each timer set, so
/// ties fire in the order they were set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Timer {
    /// When it fires (ms).
    pub due: Millis,
    /// The action's ticket when it was set: a timer whose ticket is no longer the
    /// action's is stale.
    pub ticket: u64,
    /// The action it wakes.
    pub id: JobId,
}

/// Timers, earliest first. Stale ones stay until they reach the front (see
/// `Scheduler::prune_timers`).
#[derive(Debug, Default)]
pub(super) struct Timers {
    /// Timers set in firing order, each due at or after the one before it.
    in_order: VecDeque<Timer>,
    /// Timers due before the last of `in_order` when they were set.
    out_of_order: BinaryHeap<Reverse<Timer>>,
}

impl Timers {
    /// Sets `timer`.
    #[inline]
    pub fn push(&mut self, timer: Timer) {
        if self.in_order.back().map_or(true, |last| *last <= timer) {
            self.in_order.push_back(timer);
        } else {
            self.out_of_order.push(Reverse(timer));
        }
    }

    /// Whether the earliest timer is the heap's (`None`: no timer).
    #[inline]
    fn earliest_out_of_order(&self) -> Option<bool> {
        match (self.in_order.front(), self.out_of_order.peek()) {
            (Some(a), Some(Reverse(b))) => Some(b < a),
            (a, b) => a.map(|_| false).or(b.map(|_| true)),
        }
    }

    /// The earliest timer.
    #[inline]
    pub fn peek(&self) -> Option<Timer> {
        if self.earliest_out_of_order()? {
            self.out_of_order.peek().map(|r| r.0)
        } else {
            self.in_order.front().copied()
        }
    }

    /// When the earliest timer fires (ms): [`Timers::peek`]'s due time, without telling
    /// ties apart.
    #[inline]
    pub fn next_due(&self) -> Option<Millis> {
        match (self.in_order.front(), self.out_of_order.peek()) {
            (Some(a), Some(Reverse(b))) => Some(a.due.min(b.due)),
            (a, b) => a.map(|t| t.due).or(b.map(|r| r.0.due)),
        }
    }

    /// Removes the earliest timer.
    #[inline]
    pub fn pop(&mut self) -> Option<Timer> {
        if self.earliest_out_of_order()? {
            self.out_of_order.pop().map(|r| r.0)
        } else {
            self.in_order.pop_front()
        }
    }

    /// Removes the earliest timer if it is due at `now` (ms): [`Timers::peek`] then
    /// [`Timers::pop`], with the two heads compared once.
    #[inline]
    pub fn pop_due(&mut self, now: Millis) -> Option<Timer> {
        if self.earliest_out_of_order()? {
            let Reverse(timer) = *self.out_of_order.peek()?;
            if timer.due > now {
                return None;
            }
            self.out_of_order.pop();
            Some(timer)
        } else {
            let timer = *self.in_order.front()?;
            if timer.due > now {
                return None;
            }
            self.in_order.pop_front()
        }
    }

    /// Timers set and not yet taken, stale ones included.
    pub fn len(&self) -> usize {
        self.in_order.len() + self.out_of_order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any mix of timers set and taken comes out in the order a sorted list gives.
        #[test]
        fn timers_fire_in_due_then_setting_order(
            steps in proptest::collection::vec((any::<bool>(), 0u64..50), 1..400)
        ) {
            let mut timers = Timers::default();
            let mut reference: Vec<Timer> = Vec::new();
            let mut ticket = 0;
            let mut now = 0;
            for (set, delta) in steps {
                if set {
                    ticket += 1;
                    // Mostly in firing order, now and then earlier than the last one.
                    let due = if delta % 5 == 0 { now + delta / 5 } else { now + 40 + delta };
                    let timer = Timer { due, ticket, id: delta };
                    timers.push(timer);
                    reference.push(timer);
                    reference.sort_unstable();
                } else {
                    prop_assert_eq!(timers.peek(), reference.first().copied());
                    prop_assert_eq!(timers.next_due(), reference.first().map(|t| t.due));
                    // Now and then only a timer due by a time that may come before it.
                    let by = (delta % 3 == 0).then_some(now + delta);
                    let due = |t: &Timer| by.map_or(true, |by| t.due <= by);
                    let want = reference
                        .first()
                        .filter(|t| due(t))
                        .is_some()
                        .then(|| reference.remove(0));
                    let got = match by {
                        Some(by) => timers.pop_due(by),
                        None => timers.pop(),
                    };
                    prop_assert_eq!(got, want);
                    if let Some(t) = want {
                        now = now.max(t.due);
                    }
                }
                prop_assert_eq!(timers.len(), reference.len());
            }
        }
    }
}
