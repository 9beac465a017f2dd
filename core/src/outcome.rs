//! What a driver observed for one attempt, fed back through `Scheduler::on_outcome`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::operation_id::OperationId;
use crate::rate_headers::{is_rate_header, rate_hint, RateHint};
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
    /// An answer with `status` and nothing else: no headers, no typed figures, no error
    /// code, usage or operation id. Add what the provider said with struct update syntax:
    ///
    /// ```
    /// use stampede_core::{Response, Usage};
    ///
    /// let refused = Response {
    ///     retry_after_ms: Some(2_000),
    ///     error_code: Some("rate_limit_exceeded".into()),
    ///     ..Response::new(429)
    /// };
    /// let completed = Response {
    ///     usage: Some(Usage { prompt_tokens: 300, completion_tokens: 120 }),
    ///     ..Response::new(200)
    /// };
    /// assert_eq!(refused.headers.len() + completed.headers.len(), 0);
    /// ```
    #[must_use]
    pub fn new(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            retry_after_ms: None,
            rate: None,
            error_code: None,
            usage: None,
            operation_id: None,
        }
    }

    /// Whether the core reads response header `name` (compared ignoring ASCII case):
    /// `Retry-After`, `retry-after-ms` and the rate-limit families (`x-ratelimit-*`,
    /// `RateLimit*`). A driver may leave every other header out of [`Response::headers`]:
    /// nothing in the core looks at it, and a live answer's other headers (date, length,
    /// request id, ...) then cost no copies.
    #[must_use]
    pub fn reads_header(name: &str) -> bool {
        name.eq_ignore_ascii_case("retry-after")
            || name.eq_ignore_ascii_case("retry-after-ms")
            || is_rate_header(name)
    }

    /// What the provider said about its limits: the typed figures, else the headers.
    #[must_use]
    pub fn rate_hint(&self) -> Option<RateHint> {
        self.rate.or_else(|| rate_hint(&self.headers))
    }

    /// [`Response::rate_hint`], lent to `read` where it lies: the typed figures are not
    /// copied out (a 100-byte copy per answer, most often of `None`), and an answer with
    /// neither figures nor headers (every answer of a virtual run) costs one check. `read`
    /// is not called when there is no hint.
    #[inline]
    pub fn read_rate_hint(&self, read: impl FnOnce(&RateHint)) {
        match &self.rate {
            Some(hint) => read(hint),
            None if self.headers.is_empty() => {}
            None => {
                if let Some(hint) = rate_hint(&self.headers) {
                    read(&hint);
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Names a provider sends, the ones the core reads in several cases and spellings, and
    /// decoys that share a prefix with them.
    const NAMES: [&str; 22] = [
        "retry-after",
        "Retry-After",
        "retry-after-ms",
        "RETRY-AFTER-MS",
        "x-ratelimit-limit-requests",
        "x-ratelimit-remaining-requests",
        "X-RateLimit-Reset-Requests",
        "x-ratelimit-limit-tokens",
        "x-ratelimit-remaining-tokens",
        "x-ratelimit-reset-tokens",
        "ratelimit",
        "RateLimit-Policy",
        "ratelimit-limit",
        "ratelimit-remaining",
        "ratelimit-reset",
        "retry-after-seconds",
        "x-retry-after",
        "content-type",
        "date",
        "x-request-id",
        "x-should-retry",
        "openai-processing-ms",
    ];

    /// Values each of those names can carry: counts, durations, dates, structured fields.
    const VALUES: [&str; 9] = [
        "30",
        "1.5",
        "1500",
        "6m0s",
        "250ms",
        "Wed, 21 Oct 2015 07:28:00 GMT",
        "\"default\";r=50;t=30",
        "\"default\";q=600;w=60",
        "soon",
    ];

    fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
        prop::collection::vec((0..NAMES.len(), 0..VALUES.len()), 0..12).prop_map(|pairs| {
            pairs
                .into_iter()
                .map(|(n, v)| (NAMES[n].to_string(), VALUES[v].to_string()))
                .collect()
        })
    }

    fn answer(headers: Vec<(String, String)>) -> Response {
        Response {
            headers,
            ..Response::new(429)
        }
    }

    proptest! {
        /// Dropping every header `reads_header` refuses changes nothing the core reads
        /// from an answer: its rate figures and its requested wait.
        #[test]
        fn the_headers_the_core_does_not_read_change_nothing(all in headers()) {
            let kept: Vec<_> = all
                .iter()
                .filter(|(name, _)| Response::reads_header(name))
                .cloned()
                .collect();
            let (all, kept) = (answer(all), answer(kept));
            prop_assert_eq!(all.rate_hint(), kept.rate_hint());
            // The hint lent where it lies is the hint returned, with or without typed
            // figures beside the headers.
            for response in [&all, &kept] {
                let mut lent = None;
                response.read_rate_hint(|hint| lent = Some(*hint));
                prop_assert_eq!(lent, response.rate_hint());
                // Typed figures no header can give (no window is u64::MAX requests): the
                // typed figures are the ones lent, whatever the headers say.
                let figures = RateHint {
                    limit_requests: Some(u64::MAX),
                    ..response.rate_hint().unwrap_or_default()
                };
                let typed = Response {
                    rate: Some(figures),
                    ..response.clone()
                };
                let mut lent = None;
                typed.read_rate_hint(|hint| lent = Some(*hint));
                prop_assert_eq!(lent, Some(figures));
                prop_assert_eq!(lent, typed.rate_hint());
            }
            let now = 1_445_412_000_000;
            prop_assert_eq!(all.retry_after(now, 1_000), kept.retry_after(now, 1_000));
        }
    }

    #[test]
    fn other_headers_are_not_read() {
        for name in [
            "date",
            "content-type",
            "x-request-id",
            "x-retry-after",
            "retry-after-seconds",
        ] {
            assert!(!Response::reads_header(name), "{name}");
        }
        for name in [
            "Retry-After",
            "retry-after-ms",
            "X-RateLimit-Remaining-Tokens",
            "RateLimit",
        ] {
            assert!(Response::reads_header(name), "{name}");
        }
    }
}
