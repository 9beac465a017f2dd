//! Recording audit events. Details are short sanitized texts built only when auditing is on:
//! statuses, reasons, delays and failure labels, never bodies, credentials or keys.

use super::Scheduler;
use crate::audit::{AuditEvent, AuditKind};
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
        detail: impl FnOnce() -> String,
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
