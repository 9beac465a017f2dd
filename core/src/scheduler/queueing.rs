//! Moving actions between ready lanes and timers. Every move takes a fresh ticket, so a
//! queue or timer entry left behind by an earlier move (or a cancellation) is recognised as
//! stale and skipped: delayed work of a cancelled task never wakes.

use super::lanes::rank;
use super::state::{held_less, Phase, Tracked};
use super::timers::Timer;
use super::Scheduler;
use crate::job::{JobId, Priority};
use crate::ledger::Ledger;
use crate::time::Millis;

/// Moves a live action's record to a timer until `due` (ms) with a fresh `ticket`: the
/// first half of parking it, for a caller that holds the record (then
/// `Scheduler::parked`). Returns the phase it left and its priority.
#[inline]
pub(super) fn park(job: &mut Tracked, due: Millis, ticket: u64) -> (Phase, Priority) {
    let old = std::mem::replace(&mut job.phase, Phase::Delayed(due));
    job.ticket = ticket;
    (old, job.entry.job.priority)
}

impl<L: Ledger> Scheduler<L> {
    pub(super) fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Keeps the phase counters in step when action `id`, of `priority`, leaves `phase`.
    #[inline]
    pub(super) fn leave_phase(&mut self, id: JobId, phase: Phase, priority: Priority) {
        match phase {
            Phase::Ready => self.leave_ready(priority),
            Phase::Delayed(_) => {
                self.counts.delayed = held_less(self.counts.delayed, 1, "delayed actions");
                if self.caps_waiting_retries {
                    self.end_retry_wait(id);
                }
            }
            Phase::New | Phase::InFlight(_) | Phase::Answered | Phase::Following(_) => {}
        }
    }

    /// Counts action `id` out of its scope's waiting retries, when its timer was a retry's.
    fn end_retry_wait(&mut self, id: JobId) {
        let Some(job) = self.jobs.get_mut(&id).filter(|j| j.retry_waiting) else {
            return;
        };
        job.retry_waiting = false;
        let scope = self.scopes.get_mut(job.scope);
        scope.delayed_retries = held_less(scope.delayed_retries, 1, "retries waiting on a scope");
    }

    /// Counts action `id`, whose retry timer was just set, into its scope's waiting retries.
    pub(super) fn begin_retry_wait(&mut self, id: JobId) {
        if !self.caps_waiting_retries {
            return;
        }
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        debug_assert!(
            matches!(job.phase, Phase::Delayed(_)) && !job.retry_waiting,
            "a retry wait begins once, on a delayed action"
        );
        job.retry_waiting = true;
        let scope = self.scopes.get_mut(job.scope);
        scope.delayed_retries += 1;
    }

    /// Whether one more retry of an action on `scope` (its index) would break the scope's
    /// cap on waiting retries.
    pub(super) fn retry_waits_full(&self, scope: usize) -> bool {
        if !self.caps_waiting_retries {
            return false;
        }
        let scope = self.scopes.get(scope);
        scope
            .max_delayed
            .is_some_and(|max| scope.delayed_retries >= max)
    }

    /// Counts an action of `priority` out of the ready queues.
    pub(super) fn leave_ready(&mut self, priority: Priority) {
        self.counts.ready = held_less(self.counts.ready, 1, "ready actions");
        if priority == Priority::Bulk {
            self.counts.ready_bulk = held_less(self.counts.ready_bulk, 1, "ready bulk actions");
        }
    }

    /// Puts an action in its ready lane (at the front when it had already reached the head).
    pub(super) fn make_ready(&mut self, id: JobId, front: bool) {
        let ticket = self.next_seq();
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let old = std::mem::replace(&mut job.phase, Phase::Ready);
        job.ticket = ticket;
        let priority = job.entry.job.priority;
        let (lane, rank) = (job.lane, rank(priority));
        if old != Phase::Ready {
            self.leave_phase(id, old, priority);
            self.counts.ready += 1;
            if priority == Priority::Bulk {
                self.counts.ready_bulk += 1;
            }
        }
        self.lanes.push(lane, rank, id, ticket, front);
        self.debug_assert_phase_counts();
    }

    /// Parks an action on a timer until `due` (ms).
    pub(super) fn delay_until(&mut self, id: JobId, due: Millis) {
        let ticket = self.next_seq();
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let (old, priority) = park(job, due, ticket);
        self.parked(id, old, priority, due, ticket);
    }

    /// The rest of parking action `id` (of `priority`) on a timer until `due` (ms) with
    /// `ticket`, once [`park`] has moved its record from phase `old`: the counts and the
    /// timer.
    #[inline]
    pub(super) fn parked(
        &mut self,
        id: JobId,
        old: Phase,
        priority: Priority,
        due: Millis,
        ticket: u64,
    ) {
        self.leave_phase(id, old, priority);
        self.counts.delayed += 1;
        self.delayed.push(Timer { due, ticket, id });
        self.debug_assert_phase_counts();
    }

    /// Each live action is in at most one phase, so the phase counts never exceed the
    /// live actions; and every timer still counted has an entry in the heap.
    fn debug_assert_phase_counts(&self) {
        let live = self.jobs.len() as u64;
        debug_assert!(
            self.counts.ready + self.counts.delayed + self.in_flight.len() as u64 <= live,
            "ready {} + delayed {} + in flight {} > live {live}",
            self.counts.ready,
            self.counts.delayed,
            self.in_flight.len()
        );
        debug_assert!(self.counts.delayed <= self.delayed.len() as u64);
        // Every retry counted on a scope is an action on a timer: a count that missed a
        // release would outgrow them, and shed retries for good. Summed in debug builds only:
        // this runs on every timer set.
        #[cfg(debug_assertions)]
        {
            let retry_waits: u64 = self
                .scopes
                .all()
                .map(|s| u64::from(s.delayed_retries))
                .sum();
            assert!(
                retry_waits <= self.counts.delayed,
                "{retry_waits} retries waiting > {} delayed actions",
                self.counts.delayed
            );
        }
    }

    /// Whether every timer set is current. Each delayed action has exactly one current
    /// timer (`delay_until` sets it; leaving the phase any other way makes it stale), and a
    /// timer is taken off only when it fires or is found stale: the timers outnumber the
    /// delayed actions by exactly the stale ones.
    #[inline]
    fn timers_all_current(&self) -> bool {
        self.delayed.len() as u64 == self.counts.delayed
    }

    /// Whether a timer is due at `now` (stale or not): the only case in which
    /// [`Scheduler::wake_due`] does anything.
    #[inline]
    pub(super) fn timer_due(&self, now: Millis) -> bool {
        self.delayed.next_due().is_some_and(|due| due <= now)
    }

    /// Moves every action whose timer is due at `now` to its ready lane, in timer order.
    pub(super) fn wake_due(&mut self, now: Millis) {
        let mut woke = false;
        loop {
            // No timer is stale before this one comes off (the timers, it included, number
            // the delayed actions): it is current, and its record is read once, by
            // `make_ready`, not first to check it.
            let by_count = self.timers_all_current();
            let Some(Timer { due, ticket, id }) = self.delayed.pop_due(now) else {
                break;
            };
            woke = true;
            let is_current = |s: &Self| {
                s.jobs
                    .get(&id)
                    .is_some_and(|j| j.ticket == ticket && j.phase == Phase::Delayed(due))
            };
            // The count stands for the record only while every delayed action has exactly
            // one current timer; debug builds (every test) check the record too.
            debug_assert!(
                !by_count || is_current(self),
                "timer of action {id} judged current by the count of delayed actions, but its record says stale"
            );
            let current = by_count || is_current(self);
            if current {
                self.make_ready(id, false);
            }
        }
        if woke {
            // The next timer to fire: its action's record was last touched when the timer was
            // set, long gone from cache. Ask for it now, so its wake does not wait on it.
            if let Some(next) = self.delayed.peek() {
                self.jobs.prefetch(&next.id);
            }
        }
    }

    /// Drops stale timers from the top of the heap so `next_wakeup` does not report them.
    #[inline]
    pub(super) fn prune_timers(&mut self) {
        // No stale timer (the common case): the earliest is current, and its action's
        // record, cold since its timer was set, is not read (perf: a tenth of a naive
        // client's dispatch samples waited on that load).
        if self.timers_all_current() {
            return;
        }
        self.prune_stale_timers();
    }

    /// [`Scheduler::prune_timers`] once some timer is stale. Out of line: it is rare, and
    /// the short turn of `fill_outbox` calls its caller.
    #[inline(never)]
    fn prune_stale_timers(&mut self) {
        while let Some(Timer { due, ticket, id }) = self.delayed.peek() {
            let current = self
                .jobs
                .get(&id)
                .is_some_and(|j| j.ticket == ticket && j.phase == Phase::Delayed(due));
            if current {
                break;
            }
            self.delayed.pop();
        }
    }
}
