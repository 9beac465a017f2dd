//! The fault schedule as data: `[[provider.faults]]` rules.

use super::duration::DurationMs;
use serde::{Deserialize, Serialize};

/// One `[[provider.faults]]` rule: *what* happens (`status`, `fault` or a scripted
/// `sequence`) to *which* attempts (filters, window, `nth`, `every`, `probability`).
///
/// Rules are tried in file order; the first rule whose filters all match decides the attempt.
/// Counters for `nth`/`every` count the attempts that passed the rule's filters and window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct FaultRule {
    /// Answer with this HTTP status (429, 500, 502, 503, 504, 400, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// A connection-level fault instead of a status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<ConnectionFault>,
    /// Error code in the body (defaults by status: 400 gives `content_policy_violation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Active from this time since run start (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<DurationMs>,
    /// Active until this time since run start (exclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DurationMs>,
    /// Only the Nth matching attempt (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u64>,
    /// Every Nth matching attempt (the Nth, 2Nth, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<u64>,
    /// Seeded probability in [0, 1] that a matching attempt gets the fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    /// Only attempts on this route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteName>,
    /// Only attempts with this bearer key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
    /// Only attempts on this scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Only attempts whose `x-stampede-class` is this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Only attempts whose `x-stampede-tenant` is this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Retry-After given with a 429 or 503 (default: 429 until the scope's window resets,
    /// 503 one second when `retry_after_on_503`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<DurationMs>,
    /// For `stream_cut` / `stream_error`: chunks delivered before the cut (default: half).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_chunks: Option<u32>,
    /// `x-should-retry: true|false` on the answer, which the official SDKs obey over their
    /// own rules (absent: no such header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub should_retry: Option<bool>,
    /// A scripted sequence: the k-th attempt of the same logical action (see `per`) gets step k;
    /// attempts past the end pass through normally. `{}` or `{ status = 200 }` is a pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sequence: Vec<SequenceStep>,
    /// What a `sequence` counts attempts of (default `action`).
    #[serde(default)]
    pub per: SequenceKey,
}

/// One step of a scripted sequence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SequenceStep {
    /// Answer with this status (200 or absent with no `fault`: pass through).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// A connection-level fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<ConnectionFault>,
    /// Error code override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Retry-After for a 429/503 step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<DurationMs>,
    /// Chunks before a stream cut or error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_chunks: Option<u32>,
    /// `x-should-retry` on this step's answer (see [`FaultRule::should_retry`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub should_retry: Option<bool>,
}

/// What a scripted sequence counts attempts of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SequenceKey {
    /// The logical request as the provider identifies it (Idempotency-Key, else the
    /// fingerprint within the identity window; record writes also by external reference;
    /// a look-up counts with the write it asks about). See `model::identity`.
    #[default]
    Action,
    /// The idempotency key (else the body hash).
    Key,
    /// One sequence for the whole rule: the k-th matching attempt overall gets step k.
    Rule,
}

/// Faults at the connection level, not an HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnectionFault {
    /// The connection closes before the request is read: it never arrived, nothing committed.
    DropBeforeCommit,
    /// The side effect is committed, then the connection closes with no response.
    DropAfterCommit,
    /// No answer, nothing committed; the client times out.
    Hang,
    /// The side effect is committed, then no answer; the client times out.
    HangAfterCommit,
    /// A 200 SSE stream that is cut (connection reset) after some chunks; committed.
    StreamCut,
    /// A 200 SSE stream that sends an error event after some chunks; committed.
    StreamError,
}

impl ConnectionFault {
    /// Whether the side effect is committed before the fault shows.
    pub fn commits(self) -> bool {
        !matches!(
            self,
            ConnectionFault::DropBeforeCommit | ConnectionFault::Hang
        )
    }

    /// The label used in the journal and in `status_counts`.
    pub fn label(self) -> &'static str {
        match self {
            ConnectionFault::DropBeforeCommit | ConnectionFault::DropAfterCommit => "dropped",
            ConnectionFault::Hang | ConnectionFault::HangAfterCommit => "hang",
            ConnectionFault::StreamCut => "stream_cut",
            ConnectionFault::StreamError => "stream_error",
        }
    }
}

/// Route names usable as fault filters (`route = "chat_completions"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteName {
    /// `POST /v1/chat/completions`
    ChatCompletions,
    /// `POST /v1/messages` (Anthropic Messages)
    Messages,
    /// `POST /v1/messages/count_tokens` (Anthropic's token count)
    CountTokens,
    /// `POST /v1/responses` (OpenAI Responses)
    Responses,
    /// `POST /v1/embeddings`
    Embeddings,
    /// `POST /v1/records`
    CreateRecord,
    /// `GET /v1/records/{id}`
    GetRecord,
    /// `GET /v1/records?external_ref=..|idempotency_key=..`
    FindRecords,
    /// `GET /v1/items/{id}`
    GetItem,
}
