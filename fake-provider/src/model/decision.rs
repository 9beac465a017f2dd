//! What the client sees: the model's answer to one attempt.

use serde::{Deserialize, Serialize};

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
    /// `dropped`, `hang`, `stream_cut`, `stream_error`.
    pub fn label(&self) -> String {
        match self {
            Answer::Respond { status, .. } => status.to_string(),
            Answer::Drop { .. } => "dropped".to_string(),
            Answer::Hang { .. } => "hang".to_string(),
            Answer::StreamCut { .. } => "stream_cut".to_string(),
            Answer::StreamError { .. } => "stream_error".to_string(),
        }
    }
}
