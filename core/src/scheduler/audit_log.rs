//! Recording audit events. Each event's detail is an [`AuditDetail`]: typed data (numbers,
//! static labels, enums, shared names) made only when auditing is on, without allocating,
//! and rendered as `key=value` text only when the event is written or read. Details carry
//! statuses, reasons, delays and failure labels, never bodies, credentials or keys.

use super::Scheduler;
use crate::audit::{AuditDetail, AuditEvent, AuditKind};
use crate::command::AttemptId;
use crate::job::JobId;
use crate::ledger::Ledger;
use crate::time::Millis;

impl<L: Ledger> Scheduler<L> {
    /// Records one event; `detail` runs only when the policy audits.
    pub(super) fn record(
        &mut self,
        at: Millis,
        kind: AuditKind,
        job: JobId,
        attempt: Option<AttemptId>,
        detail: impl FnOnce() -> AuditDetail,
    ) {
        record_to(
            &mut self.audit,
            &self.policy,
            (at, kind, job, attempt),
            detail,
        );
    }
}

/// [`Scheduler::record`] on the audit buffer and the policy alone, for a caller that holds
/// a live record (a borrow of the live table) across it: the event's time, kind, action
/// and attempt, and its detail, made only when the policy audits.
#[inline]
pub(super) fn record_to(
    audit: &mut Vec<AuditEvent>,
    policy: &crate::policy::Policy,
    (at, kind, job, attempt): (Millis, AuditKind, JobId, Option<AttemptId>),
    detail: impl FnOnce() -> AuditDetail,
) {
    if policy.audit {
        audit.push(AuditEvent {
            at,
            kind,
            job,
            attempt,
            detail: detail(),
        });
    }
}
