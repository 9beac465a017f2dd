//! Terminal outcomes: an action is persisted in its final state, leaves every queue, gives
//! back what it held and is reported with its context (sent or not, last status, attempts,
//! time waited, operation id) and the next safe actions. Nothing more is emitted for it.
//! All of it happens in one call, with no command emitted between the ledger's write and
//! the report: the write comes first because the record is then at hand.

use super::audit_log::record_to;
use super::lanes::rank;
use super::state::{held_less, NextSend, Phase, Tracked};
use super::Scheduler;
use crate::audit::{AuditDetail, AuditEvent, AuditKind};
use smallvec::smallvec;

use crate::command::{NextAction, NextActions, Reason, Terminal, TerminalStatus};
use crate::job::JobId;
use crate::ledger::{ActionState, Ledger};
use crate::policy::Policy;
use crate::time::Millis;

impl<L: Ledger> Scheduler<L> {
    /// The status an action gives up with: an uncertain write whose look-up has not
    /// answered stays `reconciliation_required` (its fate is unknown), anything else fails.
    pub(super) fn give_up_status(&self, id: JobId) -> TerminalStatus {
        match self.jobs.get(&id) {
            Some(job) if matches!(job.next_send, NextSend::Lookup(_)) => {
                TerminalStatus::ReconciliationRequired
            }
            _ => TerminalStatus::Failed,
        }
    }

    /// Ends an action: its `Finish` (then its coalesced followers') goes to the outbox.
    /// The action's record is read and changed where it lies in the live table and dropped
    /// there at the end: moving it out first copied its 400 bytes once per terminal. The
    /// terminal is written where the driver reads it (`Outbox::finish_slot`), not built and
    /// then copied in.
    pub(super) fn finish(
        &mut self,
        id: JobId,
        status: TerminalStatus,
        reason: Reason,
        now: Millis,
    ) {
        if !self.let_go(id, status, now) {
            return;
        }
        let job = &self.jobs[&id];
        // None after a success (every terminal of a storm of successes): nothing to work
        // out, and nothing built aside to copy into the slot.
        let next_actions = (status != TerminalStatus::Completed)
            .then(|| self.next_actions(job, status, &reason, now));
        // Written field by field where the driver reads it (see `launch`: a whole terminal
        // assigned was built aside and copied in, and the copy's wide loads stalled on the
        // narrow stores of its operation id and next actions). The pattern names every
        // field, so a field added to `Terminal` cannot be missed.
        let terminal = self.outbox.finish_slot();
        let Terminal {
            job: slot_job,
            status: slot_status,
            reason: slot_reason,
            sent: slot_sent,
            last_status: slot_last_status,
            attempts: slot_attempts,
            waited_ms: slot_waited,
            operation_id: slot_operation_id,
            next_actions: slot_next_actions,
        } = &mut *terminal;
        let reason_name = reason.name();
        *slot_job = id;
        *slot_status = status;
        *slot_reason = reason;
        *slot_sent = job.sent;
        let (last_status, attempts, waited_ms) =
            (job.last_status, job.entry.attempts, job.entry.waited_ms);
        *slot_last_status = last_status;
        *slot_attempts = attempts;
        *slot_waited = waited_ms;
        slot_operation_id.clone_from(&job.entry.operation_id);
        *slot_next_actions = next_actions.unwrap_or_default();
        let job = &job.entry.job;
        let followers = match job.resource.as_deref() {
            Some(resource) if job.coalescable => self.coalescing.disband(resource, id),
            _ => Vec::new(),
        };
        // Audited from the values written, not read back from the slot: a wide load of
        // fields just stored one by one waited for the stores to land.
        let ended = Ended {
            job: id,
            status,
            reason: reason_name,
            attempts,
            waited_ms,
            last_status,
        };
        record_terminal(&mut self.audit, &self.policy, ended, now);
        if followers.is_empty() {
            // The common case: the terminal is in the outbox as it is, without a copy.
            self.jobs.delete(&id);
            return;
        }
        let terminal = terminal.clone();
        self.jobs.delete(&id);
        for follower in followers {
            if status == TerminalStatus::Cancelled {
                // The leader's cancellation is not the readers': one of them sends instead.
                self.make_ready(follower, true);
            } else {
                self.finish_follower(follower, &terminal, now);
            }
        }
    }

    /// A coalesced read ends with its leader's result; it made no attempt of its own.
    fn finish_follower(&mut self, id: JobId, leader: &Terminal, now: Millis) {
        if !self.let_go(id, leader.status, now) {
            return;
        }
        let job = &self.jobs[&id];
        let terminal = self.outbox.finish_slot();
        *terminal = Terminal {
            job: id,
            sent: false,
            attempts: job.entry.attempts,
            waited_ms: job.entry.waited_ms,
            ..leader.clone()
        };
        let ended = Ended {
            job: id,
            status: terminal.status,
            reason: terminal.reason.name(),
            attempts: terminal.attempts,
            waited_ms: terminal.waited_ms,
            last_status: terminal.last_status,
        };
        record_terminal(&mut self.audit, &self.policy, ended, now);
        self.jobs.delete(&id);
    }

    /// Releases what leaving action `id` holds: its queue or timer place, its slot and
    /// token reservation if an attempt is on the wire (a late outcome is then ignored), its
    /// single-flight place, its lane and task membership; and writes its final state, that
    /// of `status`, to the ledger. Its record stays in the live table for the caller to read
    /// and drop; `false` when `id` is not live.
    fn let_go(&mut self, id: JobId, status: TerminalStatus, now: Millis) -> bool {
        let Some(job) = self.jobs.get_mut(&id) else {
            return false;
        };
        // Written while the record is at hand (a look-up again was a search of the live
        // table): nothing read of the action before its record is dropped (its terminal,
        // its next actions, its followers) is its state or its time of change.
        job.entry.state = match status {
            TerminalStatus::Completed => ActionState::Completed,
            TerminalStatus::Failed => ActionState::Failed,
            TerminalStatus::Cancelled => ActionState::Cancelled,
            TerminalStatus::Escalated => ActionState::Escalated,
            TerminalStatus::ReconciliationRequired => ActionState::ReconciliationRequired,
        };
        job.entry.updated_at = now;
        if self.ledger.put_progress(&job.entry).is_err() {
            self.counts.ledger_errors += 1;
        }
        let reconciling = matches!(job.next_send, NextSend::Lookup(_));
        job.next_send = NextSend::Action;
        let (phase, priority, tenant, task) =
            (job.phase, job.entry.job.priority, job.tenant, job.task);
        match phase {
            // Nothing counts an answered (or new) action: no call to `leave_phase` for it
            // (an answered action's end is every success's).
            Phase::New | Phase::Answered => {}
            Phase::Ready | Phase::Delayed(_) => self.leave_phase(id, phase, priority),
            Phase::InFlight(attempt) => {
                // Read where it lies (see `settle`).
                let flight = self
                    .in_flight
                    .remove_with(&attempt, |flight| (flight.scope, flight.reserved_tokens));
                if let Some((scope, reserved_tokens)) = flight {
                    self.slots_used = held_less(self.slots_used, 1, "slots in use");
                    self.counts.tokens_reserved = held_less(
                        self.counts.tokens_reserved,
                        reserved_tokens,
                        "tokens reserved",
                    );
                    let scope = self.scopes.get_mut(scope);
                    scope.in_flight =
                        held_less(scope.in_flight, 1, "attempts on the wire to a scope");
                    scope.release_tokens(reserved_tokens, now);
                }
            }
            Phase::Following(leader) => {
                if let Some(resource) = self.jobs[&id].entry.job.resource.as_deref() {
                    self.coalescing.unfollow(resource, leader, id);
                }
            }
        }
        if reconciling {
            self.counts.reconciling = held_less(self.counts.reconciling, 1, "actions reconciling");
        }
        self.lanes.release(tenant, rank(priority));
        self.tasks.leave(task);
        true
    }

    /// The next safe actions a caller may take after this terminal outcome.
    fn next_actions(
        &self,
        job: &Tracked,
        status: TerminalStatus,
        reason: &Reason,
        now: Millis,
    ) -> NextActions {
        use NextAction::*;
        if status == TerminalStatus::Completed {
            return NextActions::new();
        }
        let keyed = self.policy.send_idempotency_keys;
        let scope_wait = self
            .scopes
            .get(job.scope)
            .record
            .next_allowed_at
            .saturating_sub(now);
        // After an attempt that may have executed, only a keyed retry or a status query is
        // safe; anything else can duplicate the side effect.
        // So does an action that stayed on its route, instead of falling back, because an
        // attempt there may have executed: it must never be reported as not executed.
        let uncertain = job.uncertain && (self.classes[job.class].reconcile || job.withheld);
        let mut actions = match reason {
            Reason::Succeeded | Reason::Reconciled | Reason::Degraded { .. } => NextActions::new(),
            Reason::Cancelled if job.sent => smallvec![QueryStatus],
            Reason::Cancelled => smallvec![SendNewOperation {
                may_duplicate: false,
            }],
            Reason::WontImprove { .. } => smallvec![
                Cancel,
                SendNewOperation {
                    may_duplicate: uncertain,
                },
            ],
            Reason::Conflict { .. } => smallvec![QueryStatus, Cancel],
            Reason::DeadlinePassed => smallvec![Cancel],
            // Change the plan: raise the limit, or split the request.
            Reason::LimitBelowRequest { .. } => smallvec![RaiseQuota, Cancel],
            Reason::QuotaExhausted => smallvec![Wait { ms: scope_wait }, RaiseQuota, Cancel],
            Reason::CircuitOpen { fingerprint } => {
                let ms = self
                    .breaker
                    .open_until(fingerprint, now)
                    .map_or(0, |until| until.saturating_sub(now));
                smallvec![Wait { ms }, Cancel]
            }
            Reason::StreamInterrupted => smallvec![
                SendNewOperation {
                    may_duplicate: true,
                },
                Cancel,
            ],
            Reason::ReconciliationUnavailable => smallvec![
                QueryStatus,
                SendNewOperation {
                    may_duplicate: true,
                },
            ],
            Reason::DeadlineExceeded
            | Reason::AttemptsExhausted
            | Reason::WaitBudgetExhausted
            | Reason::TaskBudgetExhausted
            | Reason::ScopeBudgetExhausted
            | Reason::ScopeDelayedFull
            | Reason::ExecutionBudgetExhausted => {
                let mut actions = smallvec![Wait { ms: scope_wait }];
                if uncertain {
                    actions.push(QueryStatus);
                }
                actions.push(Cancel);
                actions
            }
        };
        if job.withheld && job.uncertain && !actions.contains(&QueryStatus) {
            // Ask before anything else is sent: the last route may have executed it.
            actions.insert(0, QueryStatus);
        }
        if keyed
            && !matches!(
                reason,
                Reason::Succeeded
                    | Reason::Reconciled
                    | Reason::WontImprove { .. }
                    | Reason::Degraded { .. }
            )
        {
            // The same key makes a later retry safe even when the action may have executed.
            actions.insert(0, RetryWithSameKey);
        } else if !keyed
            && uncertain
            && !actions.iter().any(|a| matches!(a, SendNewOperation { .. }))
        {
            actions.push(SendNewOperation {
                may_duplicate: true,
            });
        }
        actions
    }
}

/// What a terminal's audit event tells of it.
struct Ended {
    job: JobId,
    status: TerminalStatus,
    reason: &'static str,
    attempts: u32,
    waited_ms: Millis,
    last_status: Option<u16>,
}

/// Audits a leaving action's terminal (after `let_go`, which wrote its final state to the
/// ledger), on the audit buffer and the policy alone: the terminal lies in the outbox.
#[inline]
fn record_terminal(audit: &mut Vec<AuditEvent>, policy: &Policy, ended: Ended, now: Millis) {
    let kind = match ended.status {
        TerminalStatus::Completed => AuditKind::Completed,
        TerminalStatus::Cancelled => AuditKind::Cancelled,
        TerminalStatus::Failed => AuditKind::Failed,
        TerminalStatus::Escalated | TerminalStatus::ReconciliationRequired => AuditKind::Escalated,
    };
    record_to(audit, policy, (now, kind, ended.job, None), || {
        AuditDetail::Terminal {
            status: ended.status,
            reason: ended.reason,
            attempts: ended.attempts,
            waited_ms: ended.waited_ms,
            last_status: ended.last_status,
        }
    });
}
