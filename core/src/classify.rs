//! Failure classification: what an attempt's outcome means for retrying it.
//!
//! The scheduler classifies before it chooses a delay. Each failure falls into one
//! [`FailureGroup`] (never arrived, may have executed, won't improve, conflict, quota
//! exhausted), and keeps a precise [`FailureKind`] so that 429 and 503 stay apart in
//! messages and metrics: 429 slows the scope down, 503 is the provider's trouble.
//!
//! Classification is on the hot path of every outcome, so it never allocates: error codes
//! are matched against the known provider codes and kept as a small [`ErrorCode`] enum.

use crate::outcome::{Outcome, Response, TransportFailure};
use crate::policy::FailureGroup;

/// What one attempt's outcome amounts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Classification {
    /// A 2xx answer, or a reconciliation look-up that was answered (the scheduler reads the
    /// [`crate::LookupResult`] itself).
    Success,
    /// Anything else.
    Failure(Failure),
}

/// A classified failure: the group decides whether the request class may retry it, the
/// kind keeps the precise cause for messages, metrics and breaker fingerprints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// What the failure means for retrying: the class's `retry_on` lists the groups it
    /// may retry.
    pub group: FailureGroup,
    /// The precise cause.
    pub kind: FailureKind,
}

/// Provider error codes (from the response body) that change a failure's meaning.
/// Unknown codes are kept as [`ErrorCode::Other`]; the raw text stays in the
/// [`Response`] for whoever needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorCode {
    /// `rate_limit_exceeded`: a per-minute limit (429).
    RateLimitExceeded,
    /// `insufficient_quota`: a daily or billing quota is used up.
    InsufficientQuota,
    /// `content_policy_violation`: the provider refused the content.
    ContentPolicyViolation,
    /// `content_filter`: the provider's filter refused the content.
    ContentFilter,
    /// `context_length_exceeded`: the prompt does not fit the model.
    ContextLengthExceeded,
    /// `idempotency_key_in_use`: a request with the same key is still in flight.
    IdempotencyKeyInUse,
    /// Any other code.
    Other,
}

impl ErrorCode {
    /// Recognises a provider error code (exact, ASCII case-insensitive). Never allocates.
    pub fn parse(code: &str) -> ErrorCode {
        const KNOWN: [(&str, ErrorCode); 6] = [
            ("rate_limit_exceeded", ErrorCode::RateLimitExceeded),
            ("insufficient_quota", ErrorCode::InsufficientQuota),
            (
                "content_policy_violation",
                ErrorCode::ContentPolicyViolation,
            ),
            ("content_filter", ErrorCode::ContentFilter),
            ("context_length_exceeded", ErrorCode::ContextLengthExceeded),
            ("idempotency_key_in_use", ErrorCode::IdempotencyKeyInUse),
        ];
        // A storm's 429s all carry this one, spelled exactly: compared with a constant, a few
        // wide loads and no call, where the case-blind compare below lowers every byte of
        // both (the table's entry is the same one, found first).
        if code == "rate_limit_exceeded" {
            return ErrorCode::RateLimitExceeded;
        }
        KNOWN
            .iter()
            .find(|(text, _)| text.eq_ignore_ascii_case(code))
            .map_or(ErrorCode::Other, |(_, known)| *known)
    }
}

/// The precise cause of a failure. Key metrics by [`FailureKind::label`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// 429 without a quota code: the scope is over its rate; slow the scope down.
    RateLimited,
    /// 503: the provider is in trouble; it did not execute the request.
    Unavailable,
    /// Any other 5xx (500, 502, 504, ...): the request may have executed.
    ServerError(u16),
    /// A failure below HTTP (never [`TransportFailure::StreamCut`]: see [`FailureKind::StreamCut`]).
    Transport(TransportFailure),
    /// A 4xx that retrying will not fix.
    ClientError {
        /// The HTTP status (400, 401, 403, 404, 422, ...).
        status: u16,
        /// The provider's error code, when the body carried one.
        code: Option<ErrorCode>,
    },
    /// The provider refused the content (`content_policy_violation`, `content_filter`).
    ContentPolicy,
    /// The prompt is longer than the model's context (`context_length_exceeded`).
    ContextLength,
    /// 409: duplicate, version conflict or lock; resource-specific.
    Conflict {
        /// The provider's error code, when the body carried one.
        code: Option<ErrorCode>,
    },
    /// A daily or billing quota is used up (`insufficient_quota`): wait for its reset.
    QuotaExhausted,
    /// An SSE stream ended early.
    StreamCut {
        /// Chunks (tokens) delivered before the cut (tokens).
        tokens_delivered: u32,
    },
    /// 409 `idempotency_key_in_use`: the same key is still in flight; retry later.
    IdempotencyKeyInUse,
    /// A status outside 2xx, 4xx and 5xx: a 1xx or 3xx the client does not follow (a 303
    /// after a POST says it was created), or one HTTP does not define (600, 999). Nothing
    /// says the request did not execute, so it may have.
    UnexpectedStatus(u16),
}

impl FailureKind {
    /// The HTTP status the failure was answered with; `None` for a failure below HTTP (a
    /// timeout, a drop, a cut stream), which no answer carried.
    pub fn status(&self) -> Option<u16> {
        match *self {
            FailureKind::RateLimited | FailureKind::QuotaExhausted => Some(429),
            FailureKind::Unavailable => Some(503),
            FailureKind::ServerError(status)
            | FailureKind::ClientError { status, .. }
            | FailureKind::UnexpectedStatus(status) => Some(status),
            FailureKind::ContentPolicy | FailureKind::ContextLength => Some(400),
            FailureKind::Conflict { .. } | FailureKind::IdempotencyKeyInUse => Some(409),
            FailureKind::Transport(_) | FailureKind::StreamCut { .. } => None,
        }
    }

    /// A short stable label for messages, metrics and breaker fingerprints: the status for
    /// HTTP failures (`"429"`, `"503"`, `"500"`, `"404"`), a snake_case name otherwise
    /// (`"reset_after_write"`, `"content_policy"`, `"quota_exhausted"`).
    pub fn label(&self) -> &'static str {
        match *self {
            FailureKind::RateLimited => "429",
            FailureKind::Unavailable => "503",
            FailureKind::ServerError(status)
            | FailureKind::ClientError { status, .. }
            | FailureKind::UnexpectedStatus(status) => status_label(status),
            FailureKind::Transport(transport) => transport_label(transport),
            FailureKind::ContentPolicy => "content_policy",
            FailureKind::ContextLength => "context_length",
            FailureKind::Conflict { .. } => "409",
            FailureKind::QuotaExhausted => "quota_exhausted",
            FailureKind::StreamCut {
                tokens_delivered: 0,
            } => "stream_cut_before_first_token",
            FailureKind::StreamCut { .. } => "stream_cut",
            FailureKind::IdempotencyKeyInUse => "idempotency_key_in_use",
        }
    }
}

fn transport_label(transport: TransportFailure) -> &'static str {
    match transport {
        TransportFailure::ConnectRefused => "connect_refused",
        TransportFailure::Dns => "dns",
        TransportFailure::ConnectTimeout => "connect_timeout",
        TransportFailure::PoolTimeout => "pool_timeout",
        TransportFailure::ResetBeforeWrite => "reset_before_write",
        TransportFailure::ResetAfterWrite => "reset_after_write",
        TransportFailure::ReadTimeout => "read_timeout",
        TransportFailure::StreamCut {
            tokens_delivered: 0,
        } => "stream_cut_before_first_token",
        TransportFailure::StreamCut { .. } => "stream_cut",
    }
}

/// Three ASCII digits for every status 0..=999, so a label is a `&'static str` without
/// allocating.
static STATUS_DIGITS: [[u8; 3]; 1000] = {
    let mut table = [[0u8; 3]; 1000];
    let mut i = 0;
    while i < 1000 {
        table[i] = [
            b'0' + (i / 100) as u8,
            b'0' + (i / 10 % 10) as u8,
            b'0' + (i % 10) as u8,
        ];
        i += 1;
    }
    table
};

fn status_label(status: u16) -> &'static str {
    STATUS_DIGITS
        .get(usize::from(status))
        .and_then(|digits| std::str::from_utf8(digits).ok())
        .unwrap_or("invalid_status")
}

/// Classifies one attempt's outcome. Never allocates.
///
/// Rules (DESIGN.md, "Classify before choosing a delay"):
/// - never arrived: connection refused, DNS, connect timeout, pool timeout, reset before
///   write, 429, 503, and 409 `idempotency_key_in_use` (the same key is still in flight);
/// - may have executed: read timeout, reset after write, 500, 502, 504 and any other 5xx,
///   a stream cut before its first token, and any status outside 2xx, 4xx and 5xx (a 1xx
///   or 3xx not followed, a 600 or 999);
/// - won't improve: 400, 401, 403, 404, 422 and any other 4xx, content-policy refusals,
///   context length exceeded, a stream cut after at least one token (never retried);
/// - conflict: any other 409;
/// - quota exhausted: `insufficient_quota` on a 4xx (429 in practice).
///
/// Any 2xx and every answered look-up is [`Classification::Success`]. The provider's error
/// code wins over the status where it is more precise (a 400 `context_length_exceeded` is
/// [`FailureKind::ContextLength`]); on a 2xx the code is ignored.
#[must_use]
pub fn classify(outcome: &Outcome) -> Classification {
    let failure = match outcome {
        Outcome::Lookup(_) => return Classification::Success,
        Outcome::Transport(transport) => classify_transport(*transport),
        Outcome::Response(response) => match classify_response(response) {
            Some(failure) => failure,
            None => return Classification::Success,
        },
    };
    Classification::Failure(failure)
}

fn classify_transport(transport: TransportFailure) -> Failure {
    use FailureGroup::*;
    let group = match transport {
        TransportFailure::ConnectRefused
        | TransportFailure::Dns
        | TransportFailure::ConnectTimeout
        | TransportFailure::PoolTimeout
        | TransportFailure::ResetBeforeWrite => NeverArrived,
        TransportFailure::ResetAfterWrite | TransportFailure::ReadTimeout => MayHaveExecuted,
        TransportFailure::StreamCut { tokens_delivered } => {
            // Once a token has been delivered, a retry would show the user a second,
            // different answer: never retried.
            let group = if tokens_delivered == 0 {
                MayHaveExecuted
            } else {
                WontImprove
            };
            return Failure {
                group,
                kind: FailureKind::StreamCut { tokens_delivered },
            };
        }
    };
    Failure {
        group,
        kind: FailureKind::Transport(transport),
    }
}

fn classify_response(response: &Response) -> Option<Failure> {
    use FailureGroup::*;
    let status = response.status;
    if (200..300).contains(&status) {
        return None;
    }
    let code = response.error_code.as_deref().map(ErrorCode::parse);
    let failure = |group, kind| Some(Failure { group, kind });
    match code {
        Some(ErrorCode::ContentPolicyViolation | ErrorCode::ContentFilter) => {
            return failure(WontImprove, FailureKind::ContentPolicy)
        }
        Some(ErrorCode::ContextLengthExceeded) => {
            return failure(WontImprove, FailureKind::ContextLength)
        }
        Some(ErrorCode::InsufficientQuota) if (400..500).contains(&status) => {
            return failure(QuotaExhausted, FailureKind::QuotaExhausted)
        }
        _ => {}
    }
    match status {
        429 => failure(NeverArrived, FailureKind::RateLimited),
        503 => failure(NeverArrived, FailureKind::Unavailable),
        409 if code == Some(ErrorCode::IdempotencyKeyInUse) => {
            failure(NeverArrived, FailureKind::IdempotencyKeyInUse)
        }
        409 => failure(Conflict, FailureKind::Conflict { code }),
        500..=599 => failure(MayHaveExecuted, FailureKind::ServerError(status)),
        // Other 4xx: the same request will get the same answer.
        400..=499 => failure(WontImprove, FailureKind::ClientError { status, code }),
        // 1xx and 3xx the client does not follow, and statuses HTTP does not define: no
        // rule says the request was refused, so it is never reported as not executed.
        _ => failure(MayHaveExecuted, FailureKind::UnexpectedStatus(status)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::LookupResult;
    use FailureGroup::*;

    fn http(status: u16, code: Option<&str>) -> Outcome {
        Outcome::Response(Response {
            error_code: code.map(|c| c.to_owned().into()),
            ..Response::new(status)
        })
    }

    fn failure(outcome: &Outcome) -> Failure {
        match classify(outcome) {
            Classification::Failure(failure) => failure,
            Classification::Success => panic!("{outcome:?} classified as success"),
        }
    }

    #[test]
    fn classify_429_is_never_arrived_and_distinct_from_503() {
        let rate_limited = failure(&http(429, Some("rate_limit_exceeded")));
        let unavailable = failure(&http(503, None));
        assert_eq!(
            rate_limited,
            Failure {
                group: NeverArrived,
                kind: FailureKind::RateLimited
            }
        );
        assert_eq!(
            unavailable,
            Failure {
                group: NeverArrived,
                kind: FailureKind::Unavailable
            }
        );
        assert_ne!(rate_limited.kind, unavailable.kind);
        assert_eq!(rate_limited.kind.label(), "429");
        assert_eq!(unavailable.kind.label(), "503");
    }

    /// A status no rule reads as a refusal may have executed: a write answered 303, or 999
    /// by a misbehaving gateway, is reconciled, never reported failed with advice to send
    /// it again (it was classified won't-improve).
    #[test]
    fn statuses_outside_2xx_4xx_and_5xx_may_have_executed() {
        for status in [101, 199, 301, 303, 307, 600, 999, 0, 65_535] {
            let got = failure(&http(status, None));
            assert_eq!(
                got,
                Failure {
                    group: MayHaveExecuted,
                    kind: FailureKind::UnexpectedStatus(status)
                },
                "{status}"
            );
            assert_eq!(got.kind.status(), Some(status));
        }
        assert_eq!(failure(&http(303, None)).kind.label(), "303");
        assert_eq!(failure(&http(404, None)).group, WontImprove);
    }

    #[test]
    fn transport_failures_before_the_write_never_arrived() {
        for transport in [
            TransportFailure::ConnectRefused,
            TransportFailure::Dns,
            TransportFailure::ConnectTimeout,
            TransportFailure::PoolTimeout,
            TransportFailure::ResetBeforeWrite,
        ] {
            let got = failure(&Outcome::Transport(transport));
            assert_eq!(
                got,
                Failure {
                    group: NeverArrived,
                    kind: FailureKind::Transport(transport)
                }
            );
        }
    }

    #[test]
    fn read_timeout_and_reset_after_write_may_have_executed() {
        for transport in [
            TransportFailure::ReadTimeout,
            TransportFailure::ResetAfterWrite,
        ] {
            assert_eq!(
                failure(&Outcome::Transport(transport)).group,
                MayHaveExecuted
            );
        }
        assert_eq!(
            failure(&Outcome::Transport(TransportFailure::ResetAfterWrite))
                .kind
                .label(),
            "reset_after_write"
        );
    }

    #[test]
    fn server_errors_other_than_503_may_have_executed() {
        for status in [500, 502, 504, 507, 599] {
            assert_eq!(
                failure(&http(status, None)),
                Failure {
                    group: MayHaveExecuted,
                    kind: FailureKind::ServerError(status)
                }
            );
        }
        assert_eq!(FailureKind::ServerError(502).label(), "502");
    }

    #[test]
    fn client_errors_wont_improve() {
        for status in [400, 401, 403, 404, 422, 418] {
            assert_eq!(
                failure(&http(status, None)),
                Failure {
                    group: WontImprove,
                    kind: FailureKind::ClientError { status, code: None }
                }
            );
        }
        assert_eq!(
            FailureKind::ClientError {
                status: 404,
                code: None
            }
            .label(),
            "404"
        );
    }

    #[test]
    fn content_policy_refusal_wont_improve_whatever_the_status() {
        for code in ["content_policy_violation", "content_filter"] {
            for status in [400, 403, 500] {
                assert_eq!(
                    failure(&http(status, Some(code))),
                    Failure {
                        group: WontImprove,
                        kind: FailureKind::ContentPolicy
                    }
                );
            }
        }
    }

    #[test]
    fn context_length_exceeded_wont_improve() {
        assert_eq!(
            failure(&http(400, Some("context_length_exceeded"))),
            Failure {
                group: WontImprove,
                kind: FailureKind::ContextLength
            }
        );
    }

    #[test]
    fn stream_cut_after_first_token_is_never_retried_but_before_may_have_executed() {
        let after = failure(&Outcome::Transport(TransportFailure::StreamCut {
            tokens_delivered: 1,
        }));
        assert_eq!(
            after,
            Failure {
                group: WontImprove,
                kind: FailureKind::StreamCut {
                    tokens_delivered: 1
                }
            }
        );
        let before = failure(&Outcome::Transport(TransportFailure::StreamCut {
            tokens_delivered: 0,
        }));
        assert_eq!(before.group, MayHaveExecuted);
        assert_ne!(after.kind.label(), before.kind.label());
    }

    #[test]
    fn conflict_409_is_its_own_group_and_keeps_its_code() {
        assert_eq!(
            failure(&http(409, Some("version_conflict"))),
            Failure {
                group: Conflict,
                kind: FailureKind::Conflict {
                    code: Some(ErrorCode::Other)
                }
            }
        );
        assert_eq!(
            failure(&http(409, None)).kind,
            FailureKind::Conflict { code: None }
        );
    }

    #[test]
    fn idempotency_key_in_use_409_never_arrived_so_retry_later() {
        assert_eq!(
            failure(&http(409, Some("idempotency_key_in_use"))),
            Failure {
                group: NeverArrived,
                kind: FailureKind::IdempotencyKeyInUse
            }
        );
    }

    #[test]
    fn insufficient_quota_429_is_quota_exhausted_not_rate_limited() {
        assert_eq!(
            failure(&http(429, Some("insufficient_quota"))),
            Failure {
                group: QuotaExhausted,
                kind: FailureKind::QuotaExhausted
            }
        );
    }

    #[test]
    fn any_2xx_and_answered_lookups_are_success() {
        for status in [200, 201, 202, 204, 299] {
            assert_eq!(classify(&http(status, None)), Classification::Success);
        }
        // An error code on a 2xx is not a failure: the status says the request succeeded.
        assert_eq!(
            classify(&http(200, Some("content_filter"))),
            Classification::Success
        );
        for lookup in [
            LookupResult::Absent,
            LookupResult::Unsupported,
            LookupResult::Found { operation_id: None },
        ] {
            assert_eq!(classify(&Outcome::Lookup(lookup)), Classification::Success);
        }
    }

    #[test]
    fn labels_are_stable_and_distinct_per_kind() {
        let kinds = [
            FailureKind::RateLimited,
            FailureKind::Unavailable,
            FailureKind::ServerError(500),
            FailureKind::Transport(TransportFailure::ReadTimeout),
            FailureKind::Transport(TransportFailure::ConnectRefused),
            FailureKind::ClientError {
                status: 400,
                code: None,
            },
            FailureKind::UnexpectedStatus(303),
            FailureKind::ContentPolicy,
            FailureKind::ContextLength,
            FailureKind::Conflict { code: None },
            FailureKind::QuotaExhausted,
            FailureKind::StreamCut {
                tokens_delivered: 3,
            },
            FailureKind::IdempotencyKeyInUse,
        ];
        let labels: std::collections::BTreeSet<&str> =
            kinds.iter().map(FailureKind::label).collect();
        assert_eq!(labels.len(), kinds.len(), "labels collide: {labels:?}");
        assert_eq!(FailureKind::ServerError(1000).label(), "invalid_status");
        assert_eq!(
            FailureKind::ClientError {
                status: 7,
                code: None
            }
            .label(),
            "007"
        );
    }
}
