//! What the core asks its driver to do.

use serde::{Deserialize, Serialize};

use crate::job::{JobId, Route};
use crate::time::Millis;

/// Identifies one outbound attempt; unique and increasing within a scheduler's life.
pub type AttemptId = u64;

/// A command the driver carries out, in the order `poll` returns them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[must_use = "a dropped Send leaves its slot and reservation held forever; a dropped Finish loses a terminal outcome"]
pub enum Command {
    /// Put this attempt on the wire now. Its concurrency slot and rate reservation are
    /// already held; report the result with `on_outcome(send.attempt, ..)`.
    Send(SendAttempt),
    /// The logical action reached a terminal outcome (or `reconciliation_required` with no
    /// way to reconcile). Nothing more will be emitted for it.
    Finish(Terminal),
}

/// What an attempt asks the provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SendKind {
    /// The action itself (its route).
    Action,
    /// A reconciliation look-up (a `GET` against the records API).
    Lookup(LookupBy),
}

/// How a reconciliation look-up finds an action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LookupBy {
    IdempotencyKey(String),
    ExternalRef(String),
    OperationId(String),
}

/// One outbound attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendAttempt {
    pub attempt: AttemptId,
    pub job: JobId,
    /// 1-based attempt number of this logical action, counting look-ups and attempts made
    /// before a restart.
    pub attempt_no: u32,
    pub kind: SendKind,
    pub credential: String,
    pub scope: String,
    pub route: Route,
    /// `Idempotency-Key` header to send, if the policy sends keys.
    pub idempotency_key: Option<String>,
    /// Tokens reserved for this attempt (prompt + max output), 0 for non-LLM routes.
    pub reserved_tokens: u32,
    /// Client timeout for this attempt (ms).
    pub timeout_ms: Millis,
}

/// Terminal status of a logical action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalStatus {
    Completed,
    Failed,
    Cancelled,
    Escalated,
    /// An uncertain write whose fate could not be established; it stays in the ledger.
    ReconciliationRequired,
}

/// Why an action ended the way it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Succeeded,
    /// The provider confirmed the action exists after an uncertain attempt.
    Reconciled,
    DeadlineExceeded,
    AttemptsExhausted,
    WaitBudgetExhausted,
    TaskBudgetExhausted,
    ScopeBudgetExhausted,
    /// A failure that retrying will not fix (status code and provider error code).
    WontImprove {
        status: u16,
        code: Option<String>,
    },
    /// Daily or billing quota exhausted.
    QuotaExhausted,
    /// 409 that is not retryable (duplicate, version conflict).
    Conflict {
        code: Option<String>,
    },
    CircuitOpen {
        fingerprint: String,
    },
    Cancelled,
    /// A stream that had delivered tokens was cut; it is not retried.
    StreamInterrupted,
    /// The uncertain write could not be looked up.
    ReconciliationUnavailable,
    /// The whole run's execution budget ran out.
    ExecutionBudgetExhausted,
}

/// A next safe action offered with a terminal outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NextAction {
    /// Wait this long (ms), then try again.
    Wait {
        ms: Millis,
    },
    QueryStatus,
    RetryWithSameKey,
    RaiseQuota,
    Cancel,
    /// Send a new operation; it can duplicate the side effect.
    SendNewOperation {
        may_duplicate: bool,
    },
}

/// A terminal outcome with its context. Sanitized: no bodies, no credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Terminal {
    pub job: JobId,
    pub status: TerminalStatus,
    pub reason: Reason,
    /// Whether any attempt was put on the wire.
    pub sent: bool,
    /// Last HTTP status received, if any.
    pub last_status: Option<u16>,
    /// Attempts made (including look-ups).
    pub attempts: u32,
    /// Total time spent waiting between attempts (ms), Retry-After included.
    pub waited_ms: Millis,
    /// Provider operation id, when known.
    pub operation_id: Option<String>,
    pub next_actions: Vec<NextAction>,
}
