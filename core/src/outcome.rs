//! What a driver observed for one attempt, fed back through `Scheduler::on_outcome`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::operation_id::OperationId;
use crate::rate_headers::{rate_hint, RateHint};
use crate::retry_after::{retry_after_delay, RetryAfter, RetryAfterSource};
use crate::time::Millis;

/// Token usage the provider reported (tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens the prompt really used (tokens).
    pub prompt_tokens: u32,
    /// Tokens the completion really produced (tokens).
    pub completion_tokens: u32,
}

/// An HTTP answer to an attempt, as the driver heard it: the status, and the headers or
/// the typed figures read from them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// Response headers, names lower-cased, in the order received. Read only for what the
    /// typed fields below leave open: an in-process driver fills those and sends no headers.
    pub headers: Vec<(String, String)>,
    /// The provider's requested wait (`retry-after-ms`), ms from when the answer is heard,
    /// when the driver has it as a number already. `None`: read `retry-after-ms` /
    /// `retry-after` from `headers` (as a live driver does, so HTTP-dates are read against
    /// the core's clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<Millis>,
    /// The rate-limit figures, when the driver has them as numbers already (the same
    /// figures the rate-limit headers would give). `None`: read them from `headers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateHint>,
    /// Provider error code from the body (`rate_limit_exceeded`, `insufficient_quota`,
    /// `content_policy_violation`, `context_length_exceeded`, `idempotency_key_in_use`, ...).
    /// Borrowed when the driver knows the code as a constant (the provider model's own), so
    /// an answer carries it without a copy.
    pub error_code: Option<Cow<'static, str>>,
    /// Usage reported with a successful completion.
    pub usage: Option<Usage>,
    /// Provider operation / record id, once known.
    pub operation_id: Option<OperationId>,
}

/// A failure below HTTP. The variant says whether the request could have reached the
/// provider: the core's classification depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportFailure {
    /// Connection refused: never arrived.
    ConnectRefused,
    /// Name resolution failed: never arrived.
    Dns,
    /// Connect timed out: never arrived.
    ConnectTimeout,
    /// No pooled connection became free in time: never arrived.
    PoolTimeout,
    /// Connection reset before the request was fully written: never arrived.
    ResetBeforeWrite,
    /// Connection reset after the request was written: may have executed.
    ResetAfterWrite,
    /// No response before the client's timeout: may have executed.
    ReadTimeout,
    /// An SSE stream ended early after delivering this many chunks (tokens).
    StreamCut {
        /// Chunks (tokens) that reached the client before the cut; above 0, the action is
        /// not retried (the caller already saw part of an answer).
        tokens_delivered: u32,
    },
}

/// The answer to a reconciliation look-up that reached the provider and was answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LookupResult {
    /// The action exists (was committed); its id when the provider gave one.
    Found {
        /// The provider's id of the action, which the terminal reports.
        operation_id: Option<OperationId>,
    },
    /// The provider has no such action: it is safe to send again with the same key.
    Absent,
    /// The provider offers no look-up for this action.
    Unsupported,
}

/// Everything an attempt can end in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The provider answered over HTTP (any status). For a look-up, an answer that is not
    /// a verdict (429, 5xx): the look-up is tried again later.
    Response(Response),
    /// The attempt failed below HTTP (connection, timeout, cut stream).
    Transport(TransportFailure),
    /// A reconciliation look-up was answered with a verdict about the action.
    Lookup(LookupResult),
}

impl Response {
    /// What the provider said about its limits: the typed figures, else the headers.
    #[must_use]
    pub fn rate_hint(&self) -> Option<RateHint> {
        self.rate.or_else(|| rate_hint(&self.headers))
    }

    /// The provider's requested wait: the typed one, else the headers' (an HTTP-date is
    /// compared with `now_unix_ms`; one at or before it gives `past_date_floor_ms`).
    #[must_use]
    pub fn retry_after(&self, now_unix_ms: u64, past_date_floor_ms: Millis) -> Option<RetryAfter> {
        match self.retry_after_ms {
            Some(delay_ms) => Some(RetryAfter {
                delay_ms,
                source: RetryAfterSource::RetryAfterMs,
            }),
            None => retry_after_delay(&self.headers, now_unix_ms, past_date_floor_ms),
        }
    }
}
