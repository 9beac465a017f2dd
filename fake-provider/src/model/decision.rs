//! What the client sees: the model's answer to one attempt.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::num::NonZeroU64;

use super::headers::{number_str, HeaderOut, RateFigures, RetryAfterSignal};

/// The id of a completion the model committed, `chatcmpl-<n>` when displayed: the
/// body's `id`, and what a client keeps as the operation's id. `n` is the seq of the attempt
/// that committed it, never 0 (so an `Option` of it takes 8 bytes: the answer is moved
/// whole several times per attempt, and every byte of it is copied each time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CompletionId(NonZeroU64);

impl CompletionId {
    /// What the displayed id starts with, before the seq's digits.
    pub const PREFIX: &'static str = "chatcmpl-";

    /// The id of the completion attempt `seq` committed (`None` for 0, which is no seq).
    pub fn new(seq: u64) -> Option<Self> {
        NonZeroU64::new(seq).map(Self)
    }

    /// The seq of the attempt that committed the completion.
    pub fn seq(self) -> u64 {
        self.0.get()
    }
}

impl std::fmt::Display for CompletionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", Self::PREFIX, self.0)
    }
}

/// The id of a record the model keeps, `rec_000001` when displayed: its number in commit
/// order, never 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RecordId(NonZeroU64);

impl RecordId {
    /// The id of the record with global index `idx` (0-based, in commit order).
    pub fn of_index(idx: usize) -> Self {
        Self(NonZeroU64::MIN.saturating_add(u64::try_from(idx).unwrap_or(u64::MAX)))
    }

    /// The record's global index (0-based, in commit order).
    pub fn index(self) -> Option<usize> {
        usize::try_from(self.0.get() - 1).ok()
    }

    /// The id a record's `id` text says (`rec_000001`); `None` for text the model does not
    /// write.
    pub fn of(text: &str) -> Option<Self> {
        let digits = text.strip_prefix("rec_")?;
        // Only the text an id displays as: `rec_1` or `rec_+00001` is not the model's.
        let displayed = digits.bytes().all(|b| b.is_ascii_digit())
            && (digits.len() == 6 || (digits.len() > 6 && !digits.starts_with('0')));
        if !displayed {
            return None;
        }
        NonZeroU64::new(digits.parse().ok()?).map(Self)
    }
}

impl std::fmt::Display for RecordId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rec_{:06}", self.0)
    }
}

/// The records a record answer's body gives, as its `id`s say them: what an in-process
/// driver reads instead of the body, which is `Null` when bodies are lean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordsGiven {
    /// The body is one record: a write's, its replay's or a look-up by id's.
    One(RecordId),
    /// The body is a list (a look-up by key or reference): its first record, `None` when
    /// the list is empty.
    List(Option<RecordId>),
}

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
// `Respond` carries its signals inline (a few hundred bytes, no heap): moving them is cheaper
// than the allocation boxing them would add to every answer.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Answer {
    /// Answer over HTTP with this status, body and signals (headers in the server).
    Respond {
        /// HTTP status.
        status: u16,
        /// What the headers say, as numbers: the HTTP edge renders them
        /// ([`Signals::headers`]).
        signals: Signals,
        /// JSON body (for a stream: the final completion object the chunks add up to).
        /// `Null` for a completion, an error or a record answer when bodies are lean (see
        /// `ProviderModel::set_lean_bodies`).
        body: serde_json::Value,
        /// An error answer's `error.type` and `error.code`, as its body says them.
        error: Option<ErrorSignal>,
        /// `(prompt_tokens, completion_tokens)` for a completion.
        usage: Option<(u32, u32)>,
        /// For `stream: true` completions: the number of SSE content chunks.
        stream_chunks: Option<u32>,
        /// The completion this answer gives, as its body's `id` says it: also when bodies
        /// are lean and the body carries nothing, so an in-process driver reads the id with
        /// no JSON built or read.
        completion_id: Option<CompletionId>,
        /// The records a record answer gives, as its body's `id`s say them: also when
        /// bodies are lean. `None` for every other answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        records: Option<RecordsGiven>,
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

    /// The `error.code` of an error answer, if any.
    pub fn error_code(&self) -> Option<&str> {
        match self {
            Answer::Respond {
                error: Some(error), ..
            } => Some(&error.code),
            _ => None,
        }
    }

    /// What a response's headers say, as numbers (`None` for an answer that is no response).
    pub fn signals(&self) -> Option<&Signals> {
        match self {
            Answer::Respond { signals, .. } => Some(signals),
            _ => None,
        }
    }

    /// The response's headers as the HTTP edge writes them (empty for no response).
    pub fn headers(&self) -> Vec<(String, String)> {
        self.signals().map(Signals::headers).unwrap_or_default()
    }

    /// A header's value as the HTTP edge writes it (name in lower case). Renders every
    /// header: for tests and tools, not the hot path, which reads [`Answer::signals`].
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// The Retry-After the answer carries (`retry-after-ms`), client ms (model ms in the
    /// simulator, whose emit scale is 1).
    pub fn retry_after_ms(&self) -> Option<u64> {
        Some(self.signals()?.retry_after?.delay_ms)
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
        match self.usual_outcome() {
            Some(i) => Cow::Borrowed(USUAL_OUTCOMES[i]),
            None => status_label(self.status().unwrap_or_default()),
        }
    }

    /// Where [`Answer::label`] is in [`USUAL_OUTCOMES`], if it is one of them: what the
    /// model counts outcomes by, with no label compared.
    pub(crate) fn usual_outcome(&self) -> Option<usize> {
        match self {
            Answer::Respond { status, .. } => usual_status(*status),
            Answer::Drop { .. } => Some(USUAL_STATUSES),
            Answer::Hang { .. } => Some(USUAL_STATUSES + 1),
            Answer::StreamCut { .. } => Some(USUAL_STATUSES + 2),
            Answer::StreamError { .. } => Some(USUAL_STATUSES + 3),
        }
    }
}

/// How many of [`USUAL_OUTCOMES`] are statuses (they come first).
const USUAL_STATUSES: usize = 14;

/// The outcome labels the model writes borrowed: the statuses it answers with, then the
/// answers that are not a status.
pub(crate) const USUAL_OUTCOMES: [&str; USUAL_STATUSES + 4] = [
    "200",
    "400",
    "401",
    "403",
    "404",
    "408",
    "409",
    "422",
    "429",
    "500",
    "502",
    "503",
    "504",
    "529",
    "dropped",
    "hang",
    "stream_cut",
    "stream_error",
];

/// Where `status`'s label is in [`USUAL_OUTCOMES`], if it is a usual status.
pub(crate) fn usual_status(status: u16) -> Option<usize> {
    Some(match status {
        200 => 0,
        400 => 1,
        401 => 2,
        403 => 3,
        404 => 4,
        408 => 5,
        409 => 6,
        422 => 7,
        429 => 8,
        500 => 9,
        502 => 10,
        503 => 11,
        504 => 12,
        529 => 13,
        _ => return None,
    })
}

/// An error answer's `error.type` and `error.code` (its body's), borrowed for the ones the
/// model writes itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorSignal {
    /// `error.type`: `requests`, `tokens`, `insufficient_quota`, `invalid_request_error`, ...
    pub kind: Cow<'static, str>,
    /// `error.code`: `rate_limit_exceeded`, `invalid_api_key`, ...
    pub code: Cow<'static, str>,
}

/// What a response's headers say, as numbers; [`Signals::headers`] writes them as the HTTP
/// edge sends them. No heap: an in-process driver reads the figures directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signals {
    /// The attempt's seq: `x-stampede-seq`, and `x-request-id` (`req_` and 12 digits).
    pub seq: u64,
    /// The scope's rate-limit figures (`None` before a scope is known: a 401).
    pub rate: Option<RateFigures>,
    /// `retry-after` and `retry-after-ms`.
    pub retry_after: Option<RetryAfterSignal>,
    /// `x-should-retry`, when a fault rule sets it.
    pub should_retry: Option<bool>,
    /// `idempotent-replayed: true`: an idempotent replay answered it.
    pub idempotent_replayed: bool,
}

impl Signals {
    /// Signals carrying only the seq.
    pub fn bare(seq: u64) -> Self {
        Signals {
            seq,
            rate: None,
            retry_after: None,
            should_retry: None,
            idempotent_replayed: false,
        }
    }

    /// The headers, lower-case names, in the order the edge has always written them:
    /// `x-stampede-seq`, `x-request-id`, the rate-limit headers, `retry-after`,
    /// `retry-after-ms`, `x-should-retry`, `idempotent-replayed`.
    pub fn headers(&self) -> Vec<(String, String)> {
        let mut out = Vec::with_capacity(16);
        self.write_headers(&mut out);
        out
    }

    /// [`Signals::headers`] written into `out`, a header at a time (the HTTP edge writes the
    /// values straight into its response, with no string of their own).
    pub fn write_headers(&self, out: &mut impl HeaderOut) {
        let mut digits = [0u8; 20];
        let seq = number_str(&mut digits, self.seq);
        out.start("x-stampede-seq");
        out.push(seq);
        // `req_` and the seq padded with zeros to 12 digits (`format!("req_{:012}")`).
        out.start("x-request-id");
        out.push("req_");
        out.push(&"000000000000"[seq.len().min(12)..]);
        out.push(seq);
        if let Some(rate) = &self.rate {
            rate.write(out);
        }
        if let Some(retry_after) = &self.retry_after {
            retry_after.write(out);
        }
        if let Some(retry) = self.should_retry {
            out.start("x-should-retry");
            out.push(if retry { "true" } else { "false" });
        }
        if self.idempotent_replayed {
            out.start("idempotent-replayed");
            out.push("true");
        }
    }
}

/// `status` as digits: borrowed for the statuses the model answers with, formatted otherwise.
pub(crate) fn status_label(status: u16) -> Cow<'static, str> {
    match usual_status(status) {
        Some(i) => Cow::Borrowed(USUAL_OUTCOMES[i]),
        None => Cow::Owned(status.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The headers written a piece at a time are what `format!` and `to_string` wrote.
    #[test]
    fn signals_headers_match_their_format_definitions() {
        for seq in [0, 1, 9, 10, 999_999_999_999, 1_000_000_000_000, u64::MAX] {
            for should_retry in [None, Some(true), Some(false)] {
                for idempotent_replayed in [false, true] {
                    let signals = Signals {
                        should_retry,
                        idempotent_replayed,
                        ..Signals::bare(seq)
                    };
                    let mut expected = vec![
                        ("x-stampede-seq".to_string(), seq.to_string()),
                        ("x-request-id".to_string(), format!("req_{seq:012}")),
                    ];
                    if let Some(retry) = should_retry {
                        expected.push(("x-should-retry".into(), retry.to_string()));
                    }
                    if idempotent_replayed {
                        expected.push(("idempotent-replayed".into(), "true".into()));
                    }
                    assert_eq!(signals.headers(), expected);
                }
            }
        }
    }

    /// A usual outcome's slot names the label `label` writes; every other label is formatted.
    #[test]
    fn usual_outcomes_are_the_borrowed_labels() {
        let respond = |status| Answer::Respond {
            status,
            signals: Signals::bare(1),
            body: serde_json::Value::Null,
            error: None,
            usage: None,
            stream_chunks: None,
            completion_id: None,
            records: None,
        };
        let mut answers: Vec<Answer> = (100..=999).map(respond).collect();
        answers.extend([
            Answer::Drop { committed: true },
            Answer::Hang { committed: false },
            Answer::StreamCut {
                after_chunks: 1,
                committed: true,
            },
            Answer::StreamError { after_chunks: 1 },
        ]);
        let mut usual = 0;
        for answer in &answers {
            let label = answer.label();
            match answer.usual_outcome() {
                Some(i) => {
                    usual += 1;
                    assert_eq!(label, USUAL_OUTCOMES[i]);
                    assert!(matches!(label, Cow::Borrowed(_)));
                }
                None => assert_eq!(label, answer.status().unwrap_or_default().to_string()),
            }
        }
        assert_eq!(usual, USUAL_OUTCOMES.len());
    }
}
