//! Audit events: recorded before dispatch, free of secrets and bodies.

use serde::{Deserialize, Serialize};

use crate::command::AttemptId;
use crate::job::JobId;
use crate::time::Millis;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditKind {
    ActionRequested,
    ActionSent,
    ActionResult,
    RetryScheduled,
    ReconciliationRequired,
    Escalated,
    Cancelled,
    Completed,
    /// The action ended failed (deadline, budgets, won't improve, quota...).
    Failed,
}

/// One audit event. `detail` is a short sanitized description (status, reason, delay).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// When (ms since run start).
    pub at: Millis,
    pub kind: AuditKind,
    pub job: JobId,
    pub attempt: Option<AttemptId>,
    pub detail: String,
}
