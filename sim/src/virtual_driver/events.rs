//! The virtual driver's event queue: a binary heap ordered by time, ties broken by the order
//! events were scheduled, so the same run always plays events in the same order.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use stampede_core::{AttemptId, JobId, Millis, Outcome, SendAttempt};
use stampede_provider::model::Request;

/// Something that happens at a virtual time.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The client hears how attempt `attempt_no` of action `job` ended; the provider's side
    /// of it (`seq`) departs.
    Answer {
        /// The attempt's driver-wide id, unique across the runner's lives (`Crashes::global`).
        attempt: AttemptId,
        /// The logical action it was for.
        job: JobId,
        /// The attempt's 1-based number within its action.
        attempt_no: u32,
        /// The provider that answered (its index in the run's `ProviderSet`).
        provider: u8,
        /// The provider journal's sequence number of the attempt, whose slot departs now.
        seq: u64,
        /// What the core hears.
        outcome: Outcome,
    },
    /// A retry layer under the client (`client.transport_retries`) sends `request` again
    /// after the connection of `seq` failed; `left` re-sends remain after this one. The
    /// client is not told.
    HiddenResend {
        /// The driver-wide id of the core's attempt the layer re-sends (`Crashes::global`).
        attempt: AttemptId,
        /// The provider the failed connection went to (its index in the run's `ProviderSet`).
        provider: u8,
        /// The provider journal's sequence number of the failed connection, whose slot departs
        /// now.
        seq: u64,
        /// The core's attempt, as it was sent.
        send: Box<SendAttempt>,
        /// The provider request to send again.
        request: Box<Request>,
        /// Re-sends the layer may still make after this one.
        left: u32,
    },
}

/// A heap entry: the event's time and scheduling order, and where its payload waits. The
/// payload stays put while the heap sifts: an answer carries a whole response (about 200
/// bytes), and moving it at every level of every push and pop cost more than the sort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Timed {
    at: Millis,
    seq: u64,
    slot: u32,
}

impl PartialOrd for Timed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timed {
    /// Reversed, so the max-heap pops the earliest (then first-scheduled) event.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// Pending events in time order.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Timed>,
    /// Payloads by slot; `None` is a free slot, listed in `free`.
    slots: Vec<Option<Event>>,
    free: Vec<u32>,
    next_seq: u64,
}

impl EventQueue {
    /// Schedules `event` at `at` (ms).
    pub fn push(&mut self, at: Millis, event: Event) {
        self.next_seq += 1;
        let slot = match self.free.pop() {
            Some(slot) => {
                debug_assert!(self.slots[slot as usize].is_none(), "a free slot is empty");
                self.slots[slot as usize] = Some(event);
                slot
            }
            None => {
                let slot = u32::try_from(self.slots.len())
                    .expect("fewer than 2^32 events pending at once");
                self.slots.push(Some(event));
                slot
            }
        };
        self.heap.push(Timed {
            at,
            seq: self.next_seq,
            slot,
        });
    }

    /// Time of the earliest event.
    pub fn peek_time(&self) -> Option<Millis> {
        self.heap.peek().map(|t| t.at)
    }

    /// Removes the earliest event if it is due at or before `now`.
    pub fn pop_due(&mut self, now: Millis) -> Option<Event> {
        if self.peek_time()? > now {
            return None;
        }
        let timed = self.heap.pop()?;
        let event = self.slots[timed.slot as usize].take();
        debug_assert!(event.is_some(), "a scheduled slot holds its event");
        self.free.push(timed.slot);
        event
    }

    /// The earliest event if it is due at or before `now`, lent where it lies: an answer
    /// is read in its slot rather than moved out (it carries about 200 bytes). Then
    /// [`EventQueue::discard`] it, or [`EventQueue::pop_due`] it to own it.
    pub fn peek_due(&self, now: Millis) -> Option<&Event> {
        let timed = self.heap.peek().filter(|t| t.at <= now)?;
        let event = self.slots[timed.slot as usize].as_ref();
        debug_assert!(event.is_some(), "a scheduled slot holds its event");
        event
    }

    /// Drops the earliest event where it lies (the one `peek_due` lent).
    ///
    /// # Panics
    ///
    /// When no event is pending.
    pub fn discard(&mut self) {
        let timed = self.heap.pop().expect("discard of a pending event");
        self.slots[timed.slot as usize] = None;
        self.free.push(timed.slot);
    }

    /// Events pending.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stampede_core::TransportFailure;

    fn answer(attempt: AttemptId) -> Event {
        Event::Answer {
            attempt,
            job: attempt,
            attempt_no: 1,
            provider: 0,
            seq: attempt,
            outcome: Outcome::Transport(TransportFailure::ReadTimeout),
        }
    }

    #[test]
    fn earliest_first_and_ties_in_scheduling_order() {
        let mut q = EventQueue::default();
        q.push(20, answer(1));
        q.push(10, answer(2));
        q.push(10, answer(3));
        assert_eq!(q.pop_due(5), None);
        assert_eq!(q.pop_due(10), Some(answer(2)));
        assert_eq!(q.pop_due(10), Some(answer(3)));
        assert_eq!(q.pop_due(10), None);
        assert_eq!(q.pop_due(25), Some(answer(1)));
        assert!(q.is_empty());
    }

    #[test]
    fn a_due_event_is_lent_until_discarded() {
        let mut q = EventQueue::default();
        q.push(20, answer(1));
        q.push(10, answer(2));
        assert_eq!(q.peek_due(5), None, "nothing due yet");
        assert_eq!(q.peek_due(10), Some(&answer(2)));
        assert_eq!(
            q.peek_due(10),
            Some(&answer(2)),
            "lent again until discarded"
        );
        q.discard();
        assert_eq!(q.peek_due(10), None);
        // Its slot is reused, and the remaining event is untouched.
        q.push(15, answer(3));
        assert_eq!(q.pop_due(30), Some(answer(3)));
        assert_eq!(q.peek_due(30), Some(&answer(1)));
        q.discard();
        assert!(q.is_empty());
    }
}
