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
        if self.policy.audit {
            self.audit.push(AuditEvent {
                at,
                kind,
                job,
                attempt,
                detail: detail(),
            });
        }
    }
}
