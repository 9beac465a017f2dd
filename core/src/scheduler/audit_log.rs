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
#[inline(always)]
pub(super) fn record_to(
    audit: &mut Vec<AuditEvent>,
    policy: &crate::policy::Policy,
    (at, kind, job, attempt): (Millis, AuditKind, JobId, Option<AttemptId>),
    detail: impl FnOnce() -> AuditDetail,
) {
    if policy.audit {
        if audit.len() == audit.capacity() {
            make_room(audit);
        }
        // Written straight into the buffer's next slot. `audit.push(..)`, which the
        // compiler did not inline at admission, took the event built on the stack (its
        // fields written a word or a byte at a time) and copied it in 16-byte pieces: those
        // reads could not be forwarded from the narrower writes, and perf put that stall at
        // 5% of the core's cycle.
        let len = audit.len();
        audit.spare_capacity_mut()[0].write(AuditEvent {
            at,
            kind,
            job,
            attempt,
            detail: detail(),
        });
        // SAFETY: `spare_capacity_mut()[0]` is the slot at `len`, within the capacity (made
        // above), and it was written just above: the first `len + 1` slots are initialized.
        unsafe { audit.set_len(len + 1) };
    }
}

/// Room for at least one more event (out of line: the buffer keeps its capacity across
/// drains, so this is rare).
#[cold]
#[inline(never)]
fn make_room(audit: &mut Vec<AuditEvent>) {
    audit.reserve(1);
}
