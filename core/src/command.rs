//! What the core asks its driver to do.

use serde::{Deserialize, Serialize};
use smallvec::{smallvec, SmallVec};

use crate::degradation::RungKind;
use crate::job::{JobId, Route};
use crate::operation_id::OperationId;
use crate::routing::FallbackWhen;
use crate::time::Millis;
use stampede_key::IdempotencyKey;
use stampede_name::Name;

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
    /// A reconciliation look-up (a `GET` against the records API). Boxed: look-ups are
    /// rare, and inline the look-up key made every send 24 bytes larger and its kind a
    /// 32-byte copy where an action's is one word.
    Lookup(Box<LookupBy>),
}

/// How a reconciliation look-up finds an action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LookupBy {
    /// The idempotency key the action was sent with (`GET /v1/records?idempotency_key=`):
    /// used when the policy sends keys.
    IdempotencyKey(IdempotencyKey),
    /// The action's external reference (`GET /v1/records?external_ref=`): used when no key
    /// was sent and the job carries one.
    ExternalRef(String),
    /// The provider's operation or record id from an earlier answer
    /// (`GET /v1/records/{id}`): the last resort.
    OperationId(OperationId),
}

/// One outbound attempt, as [`Command::Send`] hands it to the driver. Its concurrency slot
/// and rate reservation are held until the driver reports its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendAttempt {
    /// The id to report the outcome under (`Scheduler::on_outcome(attempt, ..)`).
    pub attempt: AttemptId,
    /// The logical action this attempt is for.
    pub job: JobId,
    /// 1-based attempt number of this logical action, counting look-ups and attempts made
    /// before a restart.
    pub attempt_no: u32,
    /// The action itself, or a reconciliation look-up.
    pub kind: SendKind,
    /// Credential (bearer key) to send it with: the credential of the action's current
    /// route (the job's own, or a fallback route's). An interned name: an attempt carries it
    /// by value, with no copy of the text and no reference count.
    pub credential: Name,
    /// The provider scope the attempt's rate was reserved on: the current route's scope
    /// (the job's scope, or a fallback route's), `"account"` when the route names none.
    /// The core's scope record's interned name.
    pub scope: Name,
    /// Endpoint family of the action (for a look-up: of the action looked up).
    pub route: Route,
    /// `Idempotency-Key` header to send, if the policy sends keys.
    pub idempotency_key: Option<IdempotencyKey>,
    /// Tokens reserved for this attempt (tokens: prompt + max output, capped at `u32::MAX`);
    /// 0 for look-ups and non-LLM routes.
    pub reserved_tokens: u32,
    /// Client timeout for this attempt (ms).
    pub timeout_ms: Millis,
    /// Model to ask for: the current route's (a fallback route's own model, else a
    /// `smaller_model` rung's, else the job's). `None` for look-ups and when none is named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Name>,
    /// Set on the first attempt sent on a new route: the condition that moved the action
    /// there. `None` on every other attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<FallbackWhen>,
    /// Set on attempts of an action shaped by the degradation ladder when its first
    /// attempt was dispatched: the most severe rung applied (the active one with the
    /// highest `at_queued`; `reserved_tokens` and `model` carry the shape itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<RungKind>,
    /// The prompt and maximum output a degradation rung cut this attempt to (tokens), to
    /// send in place of the job's own; `None` when no rung trimmed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trimmed: Option<(u32, u32)>,
}

/// Terminal status of a logical action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalStatus {
    /// The action is done: answered successfully, or found by a reconciliation look-up.
    Completed,
    /// The action did not happen and will not be tried again by the core; see the reason
    /// and the next actions.
    Failed,
    /// Its task was cancelled before it completed.
    Cancelled,
    /// The core stopped on purpose and hands the action to a person or another system: an
    /// open circuit, or a look-up that could not settle an uncertain write.
    Escalated,
    /// An uncertain write whose fate could not be established; it stays in the ledger.
    ReconciliationRequired,
}

/// Why an action ended the way it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The provider answered the action successfully.
    Succeeded,
    /// The provider confirmed the action exists after an uncertain attempt.
    Reconciled,
    /// The job's deadline passed, or the next attempt could not go before it.
    DeadlineExceeded,
    /// The class's `max_attempts` (plus re-sends granted by look-ups) were used, or the
    /// class does not retry this failure's group.
    AttemptsExhausted,
    /// The next wait would take the action past its class's `max_wait` (ms waited so far
    /// plus the next delay).
    WaitBudgetExhausted,
    /// The task used up its retry budget (`retry_budgets.per_task.max_retries`).
    TaskBudgetExhausted,
    /// The scope's sliding-window retry budget (`retry_budgets.per_scope`) had no room:
    /// too many retries against the scope relative to first attempts.
    ScopeBudgetExhausted,
    /// The scope already had `max_delayed_requests` retries waiting on it: this one would
    /// have been one more (`ScopeBudget::max_delayed_requests`).
    ScopeDelayedFull,
    /// A failure that retrying will not fix (status code and provider error code).
    WontImprove {
        /// HTTP status of the last answer (0 when none was heard).
        status: u16,
        /// The provider's error code from the body, if any.
        code: Option<String>,
    },
    /// Daily or billing quota exhausted.
    QuotaExhausted,
    /// 409 that is not retryable (duplicate, version conflict).
    Conflict {
        /// The provider's error code from the body, if any.
        code: Option<String>,
    },
    /// The circuit breaker is open on this action's path (route, class, payload): the same
    /// failure repeated `breaker.threshold` times in a row.
    CircuitOpen {
        /// The breaker path's fingerprint (route template, class, payload hash, failure).
        fingerprint: String,
    },
    /// Its task was cancelled (`Scheduler::cancel_task`).
    Cancelled,
    /// A stream that had delivered tokens was cut; it is not retried.
    StreamInterrupted,
    /// The uncertain write could not be looked up.
    ReconciliationUnavailable,
    /// The whole run's execution budget ran out.
    ExecutionBudgetExhausted,
    /// The degradation ladder answered the action without sending it (status
    /// `completed`, `sent = false`).
    Degraded {
        /// The rung that answered it (`cached`).
        rung: RungKind,
    },
    /// The action's deadline had already passed when it was submitted: admission refused
    /// it for good ([`crate::RejectionCause::DeadlinePassed`], seed 001) and it was never
    /// queued or sent. The core never ends an admitted action with it; a driver reports
    /// the refusal with it (see [`Terminal::refused`]).
    DeadlinePassed,
    /// The action needs more of a limit than its scope grants in a whole window, so no
    /// wait can make it fit: an account configuration problem (the limit is set too low
    /// for this work), escalated instead of retried against the same refusal.
    LimitBelowRequest {
        /// The limit (`tpm`: tokens per minute).
        limit: String,
        /// What the scope grants per window (tokens), as published by the provider or set
        /// in the policy.
        capacity: u64,
        /// What this one request needs (tokens: prompt plus maximum output).
        needed: u64,
    },
}

impl Reason {
    /// The variant's name in snake case, as serde writes its tag (`wont_improve`,
    /// `limit_below_request`): the short stable label audit details, case files and the
    /// summary's failure counts name a reason by, without its fields. A `&'static str`, so
    /// naming a reason at every failed action's end neither formats nor allocates.
    pub fn name(&self) -> &'static str {
        match self {
            Reason::Succeeded => "succeeded",
            Reason::Reconciled => "reconciled",
            Reason::DeadlineExceeded => "deadline_exceeded",
            Reason::AttemptsExhausted => "attempts_exhausted",
            Reason::WaitBudgetExhausted => "wait_budget_exhausted",
            Reason::TaskBudgetExhausted => "task_budget_exhausted",
            Reason::ScopeBudgetExhausted => "scope_budget_exhausted",
            Reason::ScopeDelayedFull => "scope_delayed_full",
            Reason::WontImprove { .. } => "wont_improve",
            Reason::QuotaExhausted => "quota_exhausted",
            Reason::Conflict { .. } => "conflict",
            Reason::CircuitOpen { .. } => "circuit_open",
            Reason::Cancelled => "cancelled",
            Reason::StreamInterrupted => "stream_interrupted",
            Reason::ReconciliationUnavailable => "reconciliation_unavailable",
            Reason::ExecutionBudgetExhausted => "execution_budget_exhausted",
            Reason::Degraded { .. } => "degraded",
            Reason::DeadlinePassed => "deadline_passed",
            Reason::LimitBelowRequest { .. } => "limit_below_request",
        }
    }
}

impl Terminal {
    /// The terminal a driver reports for an action admission refused for good (a
    /// deadline already past): failed, never sent, nothing to do but drop it.
    pub fn refused(job: JobId) -> Terminal {
        Terminal {
            job,
            status: TerminalStatus::Failed,
            reason: Reason::DeadlinePassed,
            sent: false,
            last_status: None,
            attempts: 0,
            waited_ms: 0,
            operation_id: None,
            next_actions: smallvec![NextAction::Cancel],
        }
    }
}

/// The next safe actions of a terminal, most useful first: a list held in place for up to
/// three (every terminal but a rare few), so a failure costs no heap allocation. It derefs to
/// a slice, and serializes as a sequence.
pub type NextActions = SmallVec<[NextAction; 3]>;

/// A next safe action offered with a terminal outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NextAction {
    /// Wait this long (ms), then try again.
    Wait {
        /// How long (ms from the terminal): the scope's published wait, or the breaker's
        /// open period; 0 when nothing is published.
        ms: Millis,
    },
    /// Ask the provider whether the action happened before doing anything else.
    QueryStatus,
    /// Submit the action again with the same idempotency key: the provider deduplicates it,
    /// so this is safe even if an attempt executed.
    RetryWithSameKey,
    /// The quota is the limit: raise it (or wait for its reset).
    RaiseQuota,
    /// Give the action up.
    Cancel,
    /// Send a new operation; it can duplicate the side effect.
    SendNewOperation {
        /// Whether an earlier attempt may have executed, so a new operation can do it twice.
        may_duplicate: bool,
    },
}

/// A terminal outcome with its context. Sanitized: no bodies, no credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Terminal {
    /// The logical action that ended.
    pub job: JobId,
    /// How it ended.
    pub status: TerminalStatus,
    /// Why it ended that way.
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
    pub operation_id: Option<OperationId>,
    /// What the caller can safely do next, most useful first; empty when completed.
    pub next_actions: NextActions,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An action's kind is one word (a look-up's key is boxed), so a send carries no
    /// look-up key inline: 24 bytes less for every attempt, and no 32-byte kind to copy.
    #[test]
    fn an_action_kind_is_one_word_and_a_send_128_bytes() {
        assert_eq!(std::mem::size_of::<SendKind>(), 8);
        assert_eq!(std::mem::size_of::<SendAttempt>(), 128);
    }

    /// A reason's name is the tag serde writes for it: one name in the audit trail, the
    /// case files and a run's JSON.
    #[test]
    fn a_reasons_name_is_its_serde_tag() {
        let every = [
            Reason::Succeeded,
            Reason::Reconciled,
            Reason::DeadlineExceeded,
            Reason::AttemptsExhausted,
            Reason::WaitBudgetExhausted,
            Reason::TaskBudgetExhausted,
            Reason::ScopeBudgetExhausted,
            Reason::ScopeDelayedFull,
            Reason::WontImprove {
                status: 422,
                code: None,
            },
            Reason::QuotaExhausted,
            Reason::Conflict { code: None },
            Reason::CircuitOpen {
                fingerprint: "f".into(),
            },
            Reason::Cancelled,
            Reason::StreamInterrupted,
            Reason::ReconciliationUnavailable,
            Reason::ExecutionBudgetExhausted,
            Reason::Degraded {
                rung: RungKind::Cached,
            },
            Reason::DeadlinePassed,
            Reason::LimitBelowRequest {
                limit: "tpm".into(),
                capacity: 1,
                needed: 2,
            },
        ];
        // No wildcard: a new variant does not compile here, which sends its author to add
        // it to `every` above too.
        let _listed = |reason: &Reason| match reason {
            Reason::Succeeded
            | Reason::Reconciled
            | Reason::DeadlineExceeded
            | Reason::AttemptsExhausted
            | Reason::WaitBudgetExhausted
            | Reason::TaskBudgetExhausted
            | Reason::ScopeBudgetExhausted
            | Reason::ScopeDelayedFull
            | Reason::WontImprove { .. }
            | Reason::QuotaExhausted
            | Reason::Conflict { .. }
            | Reason::CircuitOpen { .. }
            | Reason::Cancelled
            | Reason::StreamInterrupted
            | Reason::ReconciliationUnavailable
            | Reason::ExecutionBudgetExhausted
            | Reason::Degraded { .. }
            | Reason::DeadlinePassed
            | Reason::LimitBelowRequest { .. } => (),
        };
        for reason in &every {
            let json = serde_json::to_value(reason).unwrap();
            let tag = match &json {
                serde_json::Value::String(unit) => unit.clone(),
                serde_json::Value::Object(fields) => fields.keys().next().unwrap().clone(),
                other => panic!("{reason:?} serialised as {other}"),
            };
            assert_eq!(reason.name(), tag, "{reason:?}");
        }
    }
}
