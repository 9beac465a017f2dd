//! What the client sees: the model's answer to one attempt.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The model's verdict on one attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The attempt's sequence number at the edge (1-based, also the journal's `seq`).
    pub seq: u64,
    /// How long after arrival the answer (or the drop, or the stream's end) happens, in model
    /// ms. For `Hang` it is when the commit happens; the client's timeout decides the rest.
    pub latency_ms: u64,
    /// What the client sees.
    pub answer: Answer,
}

/// What the client sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Answer {
    /// An HTTP response.
    Respond {
        /// HTTP status.
        status: u16,
        /// Headers, lower-case names, in a stable order.
        headers: Vec<(String, String)>,
        /// JSON body (for a stream: the final completion object the chunks add up to).
        body: serde_json::Value,
        /// `(prompt_tokens, completion_tokens)` for a completion.
        usage: Option<(u32, u32)>,
        /// For `stream: true` completions: the number of SSE content chunks.
        stream_chunks: Option<u32>,
    },
    /// The connection closes with no response. `committed = false`: before the request was
    /// read (never arrived); `true`: after the side effect was committed.
    Drop {
        /// Whether the side effect happened.
        committed: bool,
    },
    /// No answer ever; the client times out.
    Hang {
        /// Whether the side effect happened.
        committed: bool,
    },
    /// A 200 SSE stream cut (connection reset) after `after_chunks` chunks; always committed.
    StreamCut {
        /// Content chunks delivered before the cut.
        after_chunks: u32,
        /// Whether the side effect happened (true for completions).
        committed: bool,
    },
    /// A 200 SSE stream that delivers `after_chunks` chunks then an `error` event.
    StreamError {
        /// Content chunks delivered before the error event.
        after_chunks: u32,
    },
}

impl Answer {
    /// The HTTP status when the client gets one (200 for streams, which start with 200).
    pub fn status(&self) -> Option<u16> {
        match self {
            Answer::Respond { status, .. } => Some(*status),
            Answer::StreamCut { .. } | Answer::StreamError { .. } => Some(200),
            Answer::Drop { .. } | Answer::Hang { .. } => None,
        }
    }

    /// The `error.code` of an error body, if any.
    pub fn error_code(&self) -> Option<&str> {
        match self {
            Answer::Respond { body, .. } => body.get("error")?.get("code")?.as_str(),
            _ => None,
        }
    }

    /// A header's value (name in lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        match self {
            Answer::Respond { headers, .. } => headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str()),
            _ => None,
        }
    }

    /// `retry-after-ms` if the answer carries one (model ms).
    pub fn retry_after_ms(&self) -> Option<u64> {
        self.header("retry-after-ms")?.parse().ok()
    }

    /// Whether the side effect was committed, as far as this answer says.
    pub fn committed(&self) -> Option<bool> {
        match self {
            Answer::Drop { committed } | Answer::Hang { committed } => Some(*committed),
            Answer::StreamCut { committed, .. } => Some(*committed),
            Answer::StreamError { .. } => Some(true),
            Answer::Respond { .. } => None,
        }
    }

    /// The outcome label used in the journal and `status_counts`: the status as digits, or
    /// `dropped`, `hang`, `stream_cut`, `stream_error` (borrowed, not formatted, for the
    /// statuses the model writes).
    pub fn label(&self) -> Cow<'static, str> {
        match self {
            Answer::Respond { status, .. } => status_label(*status),
            Answer::Drop { .. } => Cow::Borrowed("dropped"),
            Answer::Hang { .. } => Cow::Borrowed("hang"),
            Answer::StreamCut { .. } => Cow::Borrowed("stream_cut"),
            Answer::StreamError { .. } => Cow::Borrowed("stream_error"),
        }
    }
}

/// `status` as digits: borrowed for the statuses the model answers with, formatted otherwise.
pub(crate) fn status_label(status: u16) -> Cow<'static, str> {
    Cow::Borrowed(match status {
        200 => "200",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        408 => "408",
        409 => "409",
        422 => "422",
        429 => "429",
        500 => "500",
        502 => "502",
        503 => "503",
        504 => "504",
        529 => "529",
        other => return Cow::Owned(other.to_string()),
    })
}

/// An `error.code` for the journal: borrowed for the codes the model writes itself, copied
/// otherwise (codes a fault rule names).
pub(crate) fn error_code_label(code: &str) -> Cow<'static, str> {
    const KNOWN: [&str; 19] = [
        "rate_limit_exceeded",
        "insufficient_quota",
        "invalid_api_key",
        "context_length_exceeded",
        "content_policy_violation",
        "idempotency_key_in_use",
        "idempotency_error",
        "internal_error",
        "not_found",
        "forbidden",
        "conflict",
        "invalid_arguments",
        "bad_gateway",
        "service_unavailable",
        "gateway_timeout",
        "overloaded",
        "injected_error",
        "unknown_route",
        "overloaded_error",
    ];
    match KNOWN.iter().find(|k| **k == code) {
        Some(k) => Cow::Borrowed(k),
        None => Cow::Owned(code.to_string()),
    }
}
