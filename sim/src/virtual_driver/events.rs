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
        /// Which attempt, of which action, from which provider (whose journal slot departs
        /// now).
        head: AnswerHead,
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
    #[inline(always)]
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Timed {
    /// `(at, seq)` as one number, in the same order: compared in two instructions with no
    /// branch, where the pair compared its times, branched, then its sequence numbers (the
    /// heap compares at every level of every push and pop).
    #[inline(always)]
    fn key(&self) -> u128 {
        (u128::from(self.at) << 64) | u128::from(self.seq)
    }
}

impl Ord for Timed {
    /// Reversed, so the max-heap pops the earliest (then first-scheduled) event.
    #[inline(always)]
    fn cmp(&self, other: &Self) -> Ordering {
        other.key().cmp(&self.key())
    }
}

/// Which attempt an answer is for, and where its provider's side departs: an answer event
/// but its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerHead {
    /// The attempt's driver-wide id, unique across the runner's lives (`Crashes::global`).
    pub attempt: AttemptId,
    /// The logical action it was for.
    pub job: JobId,
    /// The attempt's 1-based number within its action.
    pub attempt_no: u32,
    /// The provider that answered (its index in the run's `ProviderSet`).
    pub provider: u8,
    /// The provider journal's sequence number of the attempt, whose slot departs with the
    /// answer.
    pub seq: u64,
    /// Whether the provider may hold something for the attempt until its answer departs (a
    /// concurrency slot, an idempotency key): not when one of its scope's limits refused it,
    /// which the model answers before taking anything, so its departure is not called (it
    /// was a hash look-up that found nothing, at every refusal of a storm).
    pub holds: bool,
}

/// What a slot holds once its event is taken out whole (see [`EventQueue::pop_due`]): a
/// small answer, written in a few stores.
fn vacated() -> Event {
    Event::Answer {
        head: AnswerHead {
            attempt: 0,
            job: 0,
            attempt_no: 0,
            provider: 0,
            seq: 0,
            holds: true,
        },
        outcome: Outcome::Transport(stampede_core::TransportFailure::ReadTimeout),
    }
}

/// Pending events in time order.
///
/// A slot keeps the event it last held after that event is handled, and a free slot's next
/// answer is written over it field by field ([`EventQueue::push_answer`]): the answers of a
/// storm are alike, and building each whole and moving it into its slot copied its 200-byte
/// outcome twice, and dropping it at its discard cost a call. A kept event is never read
/// again; the slots number the most events ever pending at once.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Timed>,
    /// Payloads by slot; those listed in `free` hold a handled event, never read again.
    slots: Vec<Event>,
    free: Vec<u32>,
    next_seq: u64,
}

impl EventQueue {
    /// Schedules `event` at `at` (ms).
    pub fn push(&mut self, at: Millis, event: Event) {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = event;
                slot
            }
            None => self.new_slot(event),
        };
        self.schedule(at, slot);
    }

    /// Schedules at `at` (ms) the answer to `head`'s attempt, its outcome written by `hear`
    /// over the outcome its slot last held (a new slot holds a small one): see
    /// `driver_common::translate::hear_into`.
    #[inline]
    pub fn push_answer(&mut self, at: Millis, head: AnswerHead, hear: impl FnOnce(&mut Outcome)) {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => self.new_slot(vacated()),
        };
        let place = &mut self.slots[slot as usize];
        if !matches!(place, Event::Answer { .. }) {
            *place = vacated();
        }
        let Event::Answer {
            head: held,
            outcome,
        } = place
        else {
            unreachable!("the slot holds an answer")
        };
        *held = head;
        hear(outcome);
        self.schedule(at, slot);
    }

    /// A new slot holding `event`.
    fn new_slot(&mut self, event: Event) -> u32 {
        let slot = u32::try_from(self.slots.len()).expect("fewer than 2^32 events pending at once");
        self.slots.push(event);
        slot
    }

    /// Orders the event in `slot` at `at` (ms), after those scheduled before at that time.
    #[inline]
    fn schedule(&mut self, at: Millis, slot: u32) {
        self.next_seq += 1;
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
        self.free.push(timed.slot);
        Some(std::mem::replace(
            &mut self.slots[timed.slot as usize],
            vacated(),
        ))
    }

    /// The earliest event if it is due at or before `now`, lent where it lies: an answer
    /// is read in its slot rather than moved out (it carries about 200 bytes). Then
    /// [`EventQueue::discard`] it, or [`EventQueue::pop_due`] it to own it.
    pub fn peek_due(&self, now: Millis) -> Option<&Event> {
        let timed = self.heap.peek().filter(|t| t.at <= now)?;
        Some(&self.slots[timed.slot as usize])
    }

    /// Takes the earliest event (the one `peek_due` lent) out of the order; it stays in its
    /// slot, which is free, until an event is written over it.
    ///
    /// # Panics
    ///
    /// When no event is pending.
    pub fn discard(&mut self) {
        let timed = self.heap.pop().expect("discard of a pending event");
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
            head: AnswerHead {
                attempt,
                job: attempt,
                attempt_no: 1,
                provider: 0,
                seq: attempt,
                holds: true,
            },
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

    /// An answer written over a slot's last event is the answer pushed whole: over a
    /// handled answer, over a re-send taken out, and in a new slot; ties still go in the
    /// order they were scheduled, whichever way each was pushed.
    #[test]
    fn an_answer_written_over_a_used_slot_is_the_answer() {
        let head = |attempt: AttemptId| AnswerHead {
            attempt,
            job: attempt,
            attempt_no: 1,
            provider: 0,
            seq: attempt,
            holds: true,
        };
        let timeout = |o: &mut Outcome| *o = Outcome::Transport(TransportFailure::ReadTimeout);
        let resend = Event::HiddenResend {
            attempt: 9,
            provider: 0,
            seq: 9,
            send: Box::new(SendAttempt {
                attempt: 9,
                job: 9,
                attempt_no: 1,
                kind: stampede_core::SendKind::Action,
                credential: "sk-key".into(),
                scope: "scope".into(),
                route: stampede_core::Route::ChatCompletion,
                idempotency_key: None,
                reserved_tokens: 0,
                timeout_ms: 1_000,
                model: None,
                fallback: None,
                degraded: None,
                trimmed: None,
            }),
            request: Box::default(),
            left: 1,
        };
        let mut q = EventQueue::default();
        q.push(5, resend.clone());
        q.push(6, answer(7));
        assert_eq!(q.pop_due(5), Some(resend), "taken out whole");
        assert_eq!(q.peek_due(6), Some(&answer(7)));
        q.discard();
        q.push_answer(10, head(1), timeout);
        q.push_answer(10, head(2), timeout);
        q.push(10, answer(3));
        q.push_answer(10, head(4), timeout);
        for attempt in 1..=4 {
            assert_eq!(q.peek_due(10), Some(&answer(attempt)), "#{attempt}");
            q.discard();
        }
        assert!(q.is_empty());
    }
}
