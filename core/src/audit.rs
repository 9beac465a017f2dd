//! Audit events: recorded before dispatch, free of secrets and bodies.

use serde::{Deserialize, Serialize};

use crate::command::AttemptId;
use crate::job::JobId;
use crate::time::Millis;

/// What happened to an action, in the order an action's events are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditKind {
    /// The action was admitted and persisted (detail: class, route, priority).
    ActionRequested,
    /// An attempt was handed to the driver, recorded before it leaves (detail: attempt
    /// number, `action` or `lookup`, reserved tokens).
    ActionSent,
    /// The driver reported how an attempt ended (detail: success, or the failure kind and
    /// its group).
    ActionResult,
    /// Another attempt or look-up was planned, or a send was held back after a ledger
    /// write failed (detail: what it follows, attempts so far, the delay in ms).
    RetryScheduled,
    /// An attempt may have executed: the action is looked up before anything is re-sent.
    ReconciliationRequired,
    /// The action ended `escalated` or `reconciliation_required`: a person (or another
    /// system) has to decide what happens next (detail: status, reason, attempts).
    Escalated,
    /// The action ended because its task was cancelled.
    Cancelled,
    /// The action completed (answered successfully, or found by a look-up).
    Completed,
    /// The action ended failed (deadline, budgets, won't improve, quota...).
    Failed,
    /// The action moved to a fallback route (detail: the condition, the route number, the
    /// scopes it left and joined, the model asked for; never a credential).
    Fallback,
    /// A fallback was withheld: an attempt on the current route may have executed and no
    /// answer settled it, so the action stays on that route with the same idempotency key
    /// instead of risking a second execution elsewhere (detail: the condition, the scope).
    FallbackWithheld,
}

/// One audit event. `detail` is a short sanitized description (status, reason, delay).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// When it happened (ms since run start: the `now` of the call that caused it).
    pub at: Millis,
    /// What happened.
    pub kind: AuditKind,
    /// The logical action it happened to.
    pub job: JobId,
    /// The attempt it concerns, for `action_sent` and `action_result`; `None` otherwise.
    pub attempt: Option<AttemptId>,
    /// `key=value` pairs separated by spaces (or a short sentence), free of bodies and
    /// credentials; a durable trail redacts it once more before writing.
    pub detail: String,
}
