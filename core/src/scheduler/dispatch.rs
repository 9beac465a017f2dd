//! Dispatch: which ready action goes next and under what conditions.
//!
//! Order: priority (critical, normal, bulk), then round robin across tenants. An action
//! first needs rate capacity on its scope (the shared record's `next_allowed_at`, then the
//! request and token buckets), and only then takes a concurrency slot, just before the send
//! is handed to the driver: a slot is never held while waiting for rate. Bulk work must
//! also leave its scope's `reserve` in both buckets; held back by it, it waits for refill
//! like any rate wait (its wake-up is the time the buckets are high enough again, and its
//! deadline still applies).

use super::degrade::Ladder;
use super::lanes::{rank as rank_of, PRIORITIES};
use super::scope::Blocked;
use super::state::{self, Flight, NextSend, Phase};
use super::Scheduler;
use crate::audit::{AuditDetail, AuditKind};
use crate::command::{Reason, SendAttempt, SendKind, TerminalStatus};
use crate::degradation::RungKind;
use crate::job::{JobId, Priority, Route};
use crate::ledger::{ActionState, Ledger};
use crate::time::Millis;

/// What one lane's head came to.
enum LaneTurn {
    /// A send (or a terminal, then its followers' terminals) went to the outbox.
    Queued,
    /// The head cannot go now (rate or scope concurrency); try other lanes.
    Blocked,
    /// The lane has nothing valid left.
    Empty,
}

impl<L: Ledger> Scheduler<L> {
    /// Puts the next command due at `now` in the outbox, if the outbox is empty: the
    /// execution budget is enforced and the timers due wake (either can end actions), then
    /// one dispatch round serves the lanes. A dispatched command waits in the outbox (built
    /// there once) rather than riding back through each frame: a send is 160 bytes, and
    /// each frame it crossed was a copy.
    ///
    /// Kept out of line: `peek` is called again for a command already due (a terminal an
    /// outcome queued), and with the whole dispatch inlined into it that call saved and
    /// restored every register the dispatch uses.
    ///
    /// Most calls find nothing to do (a naive client's loop asks about 1.7 times a send):
    /// those return from a short frame, having done what the whole call does then (the
    /// rate wake-up cleared, stale timers pruned), and only the rest enter
    /// [`Scheduler::fill_outbox_turn`], whose frame saves and restores every register the
    /// dispatch uses.
    #[inline(never)]
    pub(super) fn fill_outbox(&mut self, now: Millis) {
        if !self.outbox.is_empty() {
            return;
        }
        // Exactly the case in which the whole turn does nothing but this: `dispatch` finds
        // no lane to serve or returns at its first test (every slot taken), no timer wakes,
        // and the budget does not end. Tested in that order: a busy scheduler (lanes
        // waiting, a slot free) takes the whole turn after the first.
        if !self.full_turns_only()
            && (self.lanes.is_idle()
                || (self.slots_used >= self.policy.workers && !self.cached_active()))
            && !self.timer_due(now)
            && !self.execution_due(now)
        {
            self.rate_wakeup = None;
            self.prune_timers();
            return;
        }
        self.fill_outbox_turn(now);
    }

    /// Whether `fill_outbox` must take the whole turn (tests that hold its short way out
    /// to the whole turn); never in other builds.
    #[inline(always)]
    fn full_turns_only(&self) -> bool {
        #[cfg(test)]
        return self.full_turns;
        #[cfg(not(test))]
        false
    }

    /// [`Scheduler::fill_outbox`] with the outbox empty: the execution budget is enforced,
    /// the timers due wake, then one dispatch round serves the lanes.
    #[inline(never)]
    fn fill_outbox_turn(&mut self, now: Millis) {
        self.enforce_execution_budget(now);
        self.wake_due(now);
        if !self.outbox.is_empty() {
            return;
        }
        self.rate_wakeup = None;
        let queued = self.dispatch(now);
        debug_assert_eq!(queued, !self.outbox.is_empty());
        self.prune_timers();
    }

    /// Serves the lanes at `now` until one head goes out; `true` when its command (a send,
    /// or a terminal and its followers') is in the outbox, which was empty.
    fn dispatch(&mut self, now: Millis) -> bool {
        debug_assert!(
            self.outbox.is_empty(),
            "dispatch only once the outbox is drained"
        );
        if self.slots_used >= self.policy.workers && !self.cached_active() {
            // Nothing can be sent before an outcome frees a slot (and no cached answer
            // is due, which would take none).
            return false;
        }
        for rank in 0..PRIORITIES {
            let Some(start) = self.lanes.first(rank) else {
                continue;
            };
            // Held by a `pause_bulk` rung: heads are only checked against their deadlines.
            let paused = rank == rank_of(Priority::Bulk) && self.bulk_paused();
            let mut lane = start;
            // Bounds the round: lanes can empty (and leave the ring) while it runs.
            let mut left = self.lanes.ready_lanes(rank);
            loop {
                match self.lane_turn(lane, rank, paused, now) {
                    LaneTurn::Queued => {
                        self.lanes.served(rank, lane);
                        return true;
                    }
                    LaneTurn::Blocked | LaneTurn::Empty => {}
                }
                left = left.saturating_sub(1);
                match self.lanes.after(rank, lane, start) {
                    Some(next) if left > 0 => lane = next,
                    _ => break,
                }
            }
        }
        false
    }

    /// Serves the head of one lane: skips stale entries, fails heads past their deadline or
    /// on an open breaker path, parks coalescable reads behind an identical read in flight,
    /// and sends the first head that gets rate capacity and a slot.
    fn lane_turn(&mut self, lane: u32, rank: usize, paused: bool, now: Millis) -> LaneTurn {
        loop {
            let Some((id, ticket)) = self.lanes.head(lane, rank) else {
                return LaneTurn::Empty;
            };
            let Some(job) = self
                .jobs
                .get(&id)
                .filter(|j| j.ticket == ticket && j.phase == Phase::Ready)
            else {
                self.lanes.pop(lane, rank);
                continue;
            };
            if job
                .entry
                .job
                .deadline
                .is_some_and(|deadline| now >= deadline)
            {
                self.lanes.pop(lane, rank);
                let status = self.give_up_status(id);
                let reason = Reason::DeadlineExceeded;
                return self.finish_queued(id, status, reason, now);
            }
            if paused {
                if let Some(deadline) = job.entry.job.deadline {
                    // Wake at its deadline: a paused action still fails on time.
                    self.rate_wakeup = Some(self.rate_wakeup.map_or(deadline, |w| w.min(deadline)));
                }
                return LaneTurn::Blocked;
            }
            let is_action = job.next_send == NextSend::Action;
            let mut shape = None;
            if is_action && job.action_attempts == 0 && !self.policy.degradation.is_empty() {
                match self.ladder(id) {
                    Ladder::Cached => {
                        self.lanes.pop(lane, rank);
                        let reason = Reason::Degraded {
                            rung: RungKind::Cached,
                        };
                        let status = TerminalStatus::Completed;
                        return self.finish_queued(id, status, reason, now);
                    }
                    Ladder::Send(shaped) => shape = shaped,
                }
            }
            // The record found above serves every read below, until something that changes
            // the scheduler runs (each look-up again was a search of the live table).
            if is_action && self.policy.coalesce_reads && job.entry.job.coalescable {
                if let Some(leader) = self.coalescing.leader_for(&job.entry.job, job.scope) {
                    if leader != id {
                        self.lanes.pop(lane, rank);
                        self.join_leader(id, leader);
                        continue;
                    }
                }
            }
            // No breaker path open (the common case): nothing to check, and the record
            // stays at hand.
            let job = if self.open_wide.is_empty() && self.open_paths.is_empty() {
                job
            } else {
                if let Some(fingerprint) = self.open_breaker_path(id, now) {
                    self.lanes.pop(lane, rank);
                    let reason = Reason::CircuitOpen { fingerprint };
                    return self.finish_queued(id, TerminalStatus::Escalated, reason, now);
                }
                &self.jobs[&id]
            };
            if self.slots_used >= self.policy.workers {
                return LaneTurn::Blocked;
            }
            let (prompt, max_output) = match shape.as_deref().or(job.shape.as_deref()) {
                Some(shape) => (shape.prompt_tokens, shape.max_output_tokens),
                None => (job.entry.job.prompt_tokens, job.entry.job.max_output_tokens),
            };
            let tokens = reservation(job.entry.job.route, is_action, prompt, max_output);
            let shared = self.policy.share_scope_state;
            // Bulk work leaves the scope's reservation (if any) to critical and normal work.
            let bulk = job.entry.job.priority == Priority::Bulk;
            match self
                .scopes
                .get_mut(job.scope)
                .try_admit(tokens, now, shared, bulk)
            {
                Err(Blocked::Until(at)) => {
                    if job.entry.job.deadline.is_some_and(|deadline| at > deadline) {
                        // It cannot be sent before its deadline: fail now, not at the deadline.
                        self.lanes.pop(lane, rank);
                        let status = self.give_up_status(id);
                        let reason = Reason::DeadlineExceeded;
                        return self.finish_queued(id, status, reason, now);
                    }
                    self.rate_wakeup = Some(self.rate_wakeup.map_or(at, |w| w.min(at)));
                    return LaneTurn::Blocked;
                }
                Err(Blocked::Concurrency) => return LaneTurn::Blocked,
                Err(Blocked::NeverFits { capacity }) => {
                    self.lanes.pop(lane, rank);
                    let reason = Reason::LimitBelowRequest {
                        limit: "tpm".into(),
                        capacity,
                        needed: tokens,
                    };
                    let status = TerminalStatus::Escalated;
                    return self.finish_queued(id, status, reason, now);
                }
                Ok(()) => {
                    self.lanes.pop(lane, rank);
                    // The lane's next head is read when this lane's turn comes again; in a
                    // deep queue its record was last touched when it was admitted, long
                    // gone from cache. Ask for it now, while this send goes out.
                    self.next_head = self.lanes.head(lane, rank).map(|(next, _)| next);
                    if let Some(next) = self.next_head {
                        self.jobs.prefetch(&next);
                        self.ledger.prefetch(next);
                    }
                    // Rate capacity is held: only now take the concurrency slot.
                    if self.launch(id, tokens, shape, now) {
                        return LaneTurn::Queued;
                    }
                    continue;
                }
            }
        }
    }

    /// Ends a lane's head at once: its terminal (then its followers') goes to the outbox.
    fn finish_queued(
        &mut self,
        id: JobId,
        status: TerminalStatus,
        reason: Reason,
        now: Millis,
    ) -> LaneTurn {
        self.finish(id, status, reason, now);
        debug_assert!(!self.outbox.is_empty(), "finish queued a command");
        LaneTurn::Queued
    }

    /// Persists the attempt, takes a slot, puts the send in the outbox for the driver and
    /// records `action_sent` (the driver sees none of it before `launch` returns; nothing
    /// goes to the outbox unless the write succeeded). `false` when the ledger refused the
    /// write: the reservation is given back and the action retries the write after one
    /// backoff base.
    fn launch(
        &mut self,
        id: JobId,
        tokens: u64,
        shape: Option<Box<state::Shape>>,
        now: Millis,
    ) -> bool {
        let attempt = self.next_attempt;
        let job = self.jobs.get_mut(&id).expect("launch of a live action");
        let lookup = match &job.next_send {
            NextSend::Action => None,
            NextSend::Lookup(by) => Some(by.clone()),
        };
        let previous = (job.entry.state, job.entry.attempts, job.entry.updated_at);
        // Read now, while the record is at hand: only an action on a fallback route
        // (`fallback_route`) sends with another credential than its job's.
        let (own_credential, on_fallback) = (job.entry.job.credential, job.route > 0);
        // Counts look-ups and attempts before restarts: saturates rather than wraps (a
        // ledger can hand back any number).
        job.entry.attempts = job.entry.attempts.saturating_add(1);
        job.entry.updated_at = now;
        if lookup.is_none() {
            job.entry.state = ActionState::InFlight;
        }
        if let Err(e) = self.ledger.put_progress(&job.entry) {
            (job.entry.state, job.entry.attempts, job.entry.updated_at) = previous;
            let scope = job.scope;
            self.counts.ledger_errors += 1;
            self.scopes.get_mut(scope).unreserve(tokens, now);
            let base = super::state::millis(self.policy.backoff.base).max(1);
            self.record(now, AuditKind::RetryScheduled, id, None, || {
                AuditDetail::Text(format!("ledger write failed ({e}); held back {base}ms"))
            });
            self.delay_until(id, now.saturating_add(base));
            return false;
        }
        // Attempt ids are unique within a scheduler's life: one per send, never reused.
        debug_assert!(!self.in_flight.contains_key(&attempt));
        self.next_attempt += 1;
        self.slots_used += 1;
        debug_assert!(
            self.slots_used <= self.policy.workers,
            "in flight {} > workers {}: dispatch takes a slot only when one is free",
            self.slots_used,
            self.policy.workers
        );
        // The record stays at hand unless the fallback route is read (then found again).
        let (job, credential, route_model) = if on_fallback {
            let (credential, route_model) = match self.fallback_route(id) {
                Some(route) => (route.credential, route.model),
                None => (own_credential, None),
            };
            let job = self.jobs.get_mut(&id).expect("launch of a live action");
            (job, credential, route_model)
        } else {
            (job, own_credential, None)
        };
        job.phase = Phase::InFlight(attempt);
        job.sent = true;
        if shape.is_some() {
            job.shape = shape;
        }
        let is_action = lookup.is_none();
        let kind = match lookup {
            None => {
                job.action_attempts = job.action_attempts.saturating_add(1);
                SendKind::Action
            }
            Some(by) => {
                job.lookups = job.lookups.saturating_add(1);
                SendKind::Lookup(by)
            }
        };
        // The first attempt of the action, or its first on a fallback route: either is new
        // load on its scope, not a retry there (see `fall_back`).
        let first = kind == SendKind::Action
            && ((job.action_attempts == 1 && job.retries == 0)
                || (job.route > 0 && job.action_attempts == job.route_start.saturating_add(1)));
        let attempt_no = job.entry.attempts;
        let reserved_tokens = u32::try_from(tokens).unwrap_or(u32::MAX);
        let scope_index = job.scope;
        let lead = is_action && self.policy.coalesce_reads && job.entry.job.coalescable;
        // Written where the driver will read it, over the last send (`Outbox::send_slot`),
        // field by field: a send built and then pushed was built on the stack and copied
        // in, and assigned whole it was still built aside (its old value is dropped first),
        // its key's three words read back as wider loads while their stores were in flight.
        // The pattern names every field, so a field added to `SendAttempt` cannot be missed.
        let SendAttempt {
            attempt: slot_attempt,
            job: slot_job,
            attempt_no: slot_attempt_no,
            kind: slot_kind,
            credential: slot_credential,
            scope: slot_scope,
            route: slot_route,
            idempotency_key: slot_key,
            reserved_tokens: slot_reserved,
            timeout_ms: slot_timeout,
            model: slot_model,
            fallback: slot_fallback,
            degraded: slot_degraded,
            trimmed: slot_trimmed,
        } = self.outbox.send_slot();
        *slot_attempt = attempt;
        *slot_job = id;
        *slot_attempt_no = attempt_no;
        *slot_kind = kind;
        *slot_credential = credential;
        *slot_scope = self.scopes.get(job.scope).id;
        *slot_route = job.entry.job.route;
        if self.policy.send_idempotency_keys {
            slot_key.clone_from(&job.entry.job.idempotency_key);
        } else {
            *slot_key = None;
        }
        *slot_reserved = reserved_tokens;
        *slot_timeout = self.classes[job.class].timeout_ms;
        // The route's own model wins (a bigger context), then a smaller_model rung's.
        *slot_model = if is_action {
            route_model
                .or_else(|| job.shape.as_ref().and_then(|s| s.model))
                .or(job.entry.job.model)
        } else {
            None
        };
        *slot_fallback = if is_action {
            job.pending_fallback.take()
        } else {
            None
        };
        *slot_degraded = if is_action {
            job.shape.as_ref().map(|s| s.kind)
        } else {
            None
        };
        *slot_trimmed = match job.shape.as_deref() {
            Some(s) if is_action => {
                let own = (job.entry.job.prompt_tokens, job.entry.job.max_output_tokens);
                let cut = (s.prompt_tokens, s.max_output_tokens);
                (cut != own).then_some(cut)
            }
            _ => None,
        };
        // The action left its ready lane (`lane_turn` popped it) for the wire.
        let priority = job.entry.job.priority;
        self.leave_ready(priority);
        self.counts.tokens_reserved = self.counts.tokens_reserved.saturating_add(tokens);
        // A new attempt id (checked above): stored without first searching for it.
        self.in_flight.insert_new(attempt, || Flight {
            job: id,
            scope: scope_index,
            reserved_tokens: tokens,
            lookup: !is_action,
        });
        debug_assert_eq!(
            self.slots_used as usize,
            self.in_flight.len(),
            "every slot in use is one attempt on the wire"
        );
        let scope = self.scopes.get_mut(scope_index);
        scope.in_flight += 1;
        debug_assert!(
            !matches!(scope.concurrency, Some(limit) if scope.in_flight > limit),
            "scope {} has {} on the wire, over its concurrency budget {:?}",
            scope.id,
            scope.in_flight,
            scope.concurrency
        );
        if first {
            scope.retries.record_first(now);
        }
        if lead
            && self
                .coalescing
                .leader_for(&self.jobs[&id].entry.job, scope_index)
                .is_none()
        {
            self.coalescing.lead(&self.jobs[&id].entry.job, scope_index);
        }
        self.record(now, AuditKind::ActionSent, id, Some(attempt), || {
            AuditDetail::Sent {
                attempt_no,
                lookup: !is_action,
                reserved_tokens,
            }
        });
        true
    }
}

/// Tokens one send reserves: prompt plus maximum output for LLM calls, nothing otherwise.
fn reservation(route: Route, is_action: bool, prompt: u32, max_output: u32) -> u64 {
    if is_action && route == Route::ChatCompletion {
        u64::from(prompt) + u64::from(max_output)
    } else {
        0
    }
}
