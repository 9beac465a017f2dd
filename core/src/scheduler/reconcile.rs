//! Uncertain writes: a non-idempotent write that may have executed is never re-sent
//! blindly. It becomes `reconciliation_required` and is looked up (by idempotency key when
//! keys are sent, else by external reference or operation id); it is re-sent with the same
//! key only when the look-up says the action is absent, completed when found, and escalated
//! when the look-up is unsupported or its budget runs out.

use super::state::{held_less, NextSend};
use super::Scheduler;
use crate::audit::{AuditDetail, AuditKind};
use crate::backoff::backoff_delay;
use crate::command::{LookupBy, Reason, TerminalStatus};
use crate::job::JobId;
use crate::ledger::{ActionState, Ledger};
use crate::outcome::{LookupResult, Outcome};
use crate::time::Millis;

impl<L: Ledger> Scheduler<L> {
    /// Moves an action that may have executed to reconciliation.
    pub(super) fn start_reconciliation(&mut self, id: JobId, now: Millis) {
        let keyed = self.policy.send_idempotency_keys;
        let job = self.jobs.get_mut(&id).expect("reconciled action is live");
        job.uncertain = true;
        let fields = &job.entry.job;
        let by = match (
            &fields.idempotency_key,
            &fields.external_ref,
            &job.entry.operation_id,
        ) {
            (Some(key), _, _) if keyed => Some(LookupBy::IdempotencyKey(key.clone())),
            (_, Some(reference), _) => Some(LookupBy::ExternalRef(reference.clone())),
            (_, _, Some(operation)) => Some(LookupBy::OperationId(operation.clone())),
            _ => None,
        };
        job.entry.state = ActionState::ReconciliationRequired;
        job.entry.updated_at = now;
        if self.ledger.put_progress(&job.entry).is_err() {
            self.counts.ledger_errors += 1;
        }
        let Some(by) = by else {
            // No way to learn the action's fate: it stays reconciliation_required.
            return self.finish(
                id,
                TerminalStatus::ReconciliationRequired,
                Reason::ReconciliationUnavailable,
                now,
            );
        };
        if !matches!(job.next_send, NextSend::Lookup(_)) {
            self.counts.reconciling += 1;
        }
        job.next_send = NextSend::Lookup(Box::new(by));
        // Only live actions reconcile, each counted once (on entering `Lookup`).
        debug_assert!(self.counts.reconciling <= self.jobs.len() as u64);
        self.record(now, AuditKind::ReconciliationRequired, id, None, || {
            AuditDetail::Static("may have executed: look-up first")
        });
        self.schedule_lookup(id, None, now);
    }

    /// Plans the next look-up after a backoff (raised to the scope wait and the provider's
    /// wait), or escalates when the look-up budget is spent.
    fn schedule_lookup(&mut self, id: JobId, told: Option<Millis>, now: Millis) {
        let job = &self.jobs[&id];
        if job.lookups >= self.policy.reconciliation.max_lookups {
            return self.finish(
                id,
                TerminalStatus::Escalated,
                Reason::ReconciliationUnavailable,
                now,
            );
        }
        let mut delay = backoff_delay(&self.policy.backoff, job.lookups, 0, &mut self.rng);
        if self.policy.share_scope_state {
            delay = delay.max(
                self.scopes
                    .get(job.scope)
                    .record
                    .next_allowed_at
                    .saturating_sub(now),
            );
        }
        delay = delay.max(told.unwrap_or(0));
        if job
            .entry
            .job
            .deadline
            .is_some_and(|deadline| now.saturating_add(delay) > deadline)
        {
            return self.finish(
                id,
                TerminalStatus::ReconciliationRequired,
                Reason::DeadlineExceeded,
                now,
            );
        }
        self.record(now, AuditKind::RetryScheduled, id, None, || {
            AuditDetail::Lookup { delay_ms: delay }
        });
        self.delay_until(id, now.saturating_add(delay));
    }

    /// Acts on a look-up's answer.
    pub(super) fn after_lookup(
        &mut self,
        id: JobId,
        outcome: &Outcome,
        told: Option<Millis>,
        now: Millis,
    ) {
        match outcome {
            Outcome::Lookup(LookupResult::Found { operation_id }) => {
                let job = self.jobs.get_mut(&id).expect("looked-up action is live");
                if operation_id.is_some() {
                    job.entry.operation_id.clone_from(operation_id);
                }
                self.finish(id, TerminalStatus::Completed, Reason::Reconciled, now);
            }
            Outcome::Lookup(LookupResult::Absent) => self.resend_absent(id, now),
            Outcome::Lookup(LookupResult::Unsupported) => self.finish(
                id,
                TerminalStatus::Escalated,
                Reason::ReconciliationUnavailable,
                now,
            ),
            // The look-up itself failed (429, 5xx, transport): look again later.
            Outcome::Response(_) | Outcome::Transport(_) => self.schedule_lookup(id, told, now),
        }
    }

    /// The provider has no such action: sending it again with the same key is safe.
    fn resend_absent(&mut self, id: JobId, now: Millis) {
        let max_resends = self.policy.reconciliation.max_resends;
        let job = self.jobs.get_mut(&id).expect("looked-up action is live");
        job.uncertain = false;
        // The look-up settled the route too: nothing executed there.
        job.route_uncertain = false;
        job.next_send = NextSend::Action;
        self.counts.reconciling = held_less(self.counts.reconciling, 1, "actions reconciling");
        if job.resends >= max_resends {
            return self.finish(id, TerminalStatus::Failed, Reason::AttemptsExhausted, now);
        }
        job.resends += 1;
        debug_assert!(job.resends <= max_resends);
        job.entry.state = ActionState::Planned;
        job.entry.updated_at = now;
        if self.ledger.put_progress(&job.entry).is_err() {
            self.counts.ledger_errors += 1;
        }
        self.record(now, AuditKind::RetryScheduled, id, None, || {
            AuditDetail::Static("lookup absent: re-send with the same key")
        });
        self.make_ready(id, true);
    }
}
