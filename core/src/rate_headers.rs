//! Rate-limit headers: what the provider says is left in the current window, so future
//! requests can be paced before they fail.
//!
//! Two families are read:
//! - OpenAI style `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, where the reset is
//!   a Go-style duration (`"1s"`, `"6m0s"`, `"20ms"`, `"1.5s"`);
//! - the IETF draft: `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds),
//!   the combined `RateLimit: limit=100, remaining=50, reset=30`, and the newer structured
//!   `RateLimit: "default";r=50;t=30` with `RateLimit-Policy: "default";q=100;w=60`.
//!   These count requests only.
//!
//! When both families are present the OpenAI figures win field by field.

use serde::{Deserialize, Serialize};

use crate::time::Millis;

/// What the provider reported about its limits. Every field is optional: providers send
/// subsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RateHint {
    /// Requests left in the current window.
    pub remaining_requests: Option<u64>,
    /// Time until the request limit is fully replenished (ms from now).
    pub reset_requests_ms: Option<Millis>,
    /// Tokens left in the current window.
    pub remaining_tokens: Option<u64>,
    /// Time until the token limit is fully replenished (ms from now).
    pub reset_tokens_ms: Option<Millis>,
    /// Requests allowed per window.
    pub limit_requests: Option<u64>,
    /// Tokens allowed per window.
    pub limit_tokens: Option<u64>,
}

impl RateHint {
    fn is_empty(&self) -> bool {
        *self == RateHint::default()
    }
}

/// Reads rate-limit headers; `None` when no recognised header carried a usable value.
/// Header names match ASCII case-insensitively; a malformed value is skipped, not fatal.
#[must_use]
pub fn rate_hint(headers: &[(String, String)]) -> Option<RateHint> {
    // An answer with typed figures and no headers (every answer of a virtual run): nothing
    // to read, and the empty hints below would be built and merged for nothing.
    if headers.is_empty() {
        return None;
    }
    let mut openai = RateHint::default();
    let mut ietf = RateHint::default();
    for (name, value) in headers {
        // Most headers are not rate-limit headers: reject them with one prefix check, then
        // match the lower-cased name once (on the stack) instead of comparing it with each
        // known name in turn: this runs for every header of every answer.
        let Some(lower) = rate_header_name(name) else {
            continue;
        };
        let value = trimmed(value);
        // A field keeps its first usable value, so a header whose fields are all known
        // already is not parsed; the IETF family only fills request fields OpenAI's left open.
        let requests_known = openai.limit_requests.is_some()
            && openai.remaining_requests.is_some()
            && openai.reset_requests_ms.is_some();
        match lower.as_bytes() {
            b"x-ratelimit-limit-requests" => {
                first(&mut openai.limit_requests, || parse_count(value))
            }
            b"x-ratelimit-remaining-requests" => {
                first(&mut openai.remaining_requests, || parse_count(value))
            }
            b"x-ratelimit-reset-requests" => {
                first(&mut openai.reset_requests_ms, || parse_duration_ms(value))
            }
            b"x-ratelimit-limit-tokens" => first(&mut openai.limit_tokens, || parse_count(value)),
            b"x-ratelimit-remaining-tokens" => {
                first(&mut openai.remaining_tokens, || parse_count(value))
            }
            b"x-ratelimit-reset-tokens" => {
                first(&mut openai.reset_tokens_ms, || parse_duration_ms(value))
            }
            _ if requests_known => {}
            b"ratelimit-limit" => first(&mut ietf.limit_requests, || {
                parse_count(leading_item(value))
            }),
            b"ratelimit-remaining" => first(&mut ietf.remaining_requests, || {
                parse_count(leading_item(value))
            }),
            b"ratelimit-reset" => first(&mut ietf.reset_requests_ms, || {
                parse_seconds_ms(leading_item(value))
            }),
            b"ratelimit" => parse_combined(value, &mut ietf),
            b"ratelimit-policy" => parse_policy(value, &mut ietf),
            _ => {}
        }
    }
    let hint = RateHint {
        remaining_requests: openai.remaining_requests.or(ietf.remaining_requests),
        reset_requests_ms: openai.reset_requests_ms.or(ietf.reset_requests_ms),
        limit_requests: openai.limit_requests.or(ietf.limit_requests),
        ..openai
    };
    (!hint.is_empty()).then_some(hint)
}

/// The longest rate-limit header name read (`x-ratelimit-remaining-requests`).
const LONGEST_NAME: usize = 30;

/// A header name lower-cased into a stack buffer, when it can be a rate-limit header (starts
/// with `x-ratelimit-` or `ratelimit`, any ASCII case, and is no longer than the longest one).
fn rate_header_name(name: &str) -> Option<LowerName> {
    let bytes = name.as_bytes();
    let prefix = |p: &[u8]| {
        bytes
            .get(..p.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(p))
    };
    if bytes.len() > LONGEST_NAME || !(prefix(b"x-ratelimit-") || prefix(b"ratelimit")) {
        return None;
    }
    let mut lower = LowerName {
        bytes: [0; LONGEST_NAME],
        len: bytes.len(),
    };
    lower.bytes[..bytes.len()].copy_from_slice(bytes);
    lower.bytes[..bytes.len()].make_ascii_lowercase();
    Some(lower)
}

/// Whether [`rate_hint`] may read header `name`: it begins `x-ratelimit-` or `ratelimit`
/// (ignoring ASCII case) and is short enough to be a name it knows.
pub(crate) fn is_rate_header(name: &str) -> bool {
    rate_header_name(name).is_some()
}

/// A short ASCII-lower-cased header name (non-ASCII bytes are kept as they are, so they
/// match no known name, as with `eq_ignore_ascii_case`).
struct LowerName {
    bytes: [u8; LONGEST_NAME],
    len: usize,
}

impl LowerName {
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Keeps the first usable value of a field.
fn set<T>(slot: &mut Option<T>, value: Option<T>) {
    if slot.is_none() {
        *slot = value;
    }
}

/// Like `set`, parsing only when the field has no value yet.
fn first<T>(slot: &mut Option<T>, parse: impl FnOnce() -> Option<T>) {
    if slot.is_none() {
        *slot = parse();
    }
}

/// `text.trim()`, skipping the Unicode scan when both ends are visible ASCII (which is never
/// whitespace), as header values nearly always are.
fn trimmed(text: &str) -> &str {
    match (text.as_bytes().first(), text.as_bytes().last()) {
        (Some(head), Some(tail)) if head.is_ascii_graphic() && tail.is_ascii_graphic() => text,
        _ => text.trim(),
    }
}

fn parse_count(text: &str) -> Option<u64> {
    let text = trimmed(text);
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.parse().unwrap_or(u64::MAX))
}

/// Delta-seconds (integer) to ms, saturating.
fn parse_seconds_ms(text: &str) -> Option<Millis> {
    parse_count(text).map(|seconds| seconds.saturating_mul(1_000))
}

/// `"100, 100;w=60"` (a limit followed by its policies) reads as `"100"`.
fn leading_item(text: &str) -> &str {
    trimmed(text.split([',', ';']).next().unwrap_or(""))
}

/// `limit=100, remaining=50, reset=30` (older draft) or `"default";r=50;t=30` (newer draft).
/// The first list member that carries a figure counts.
fn parse_combined(value: &str, hint: &mut RateHint) {
    for member in value.split(',') {
        for parameter in member.split(';') {
            let Some((key, figure)) = parameter.split_once('=') else {
                continue;
            };
            let key = trimmed(key);
            let is = |name: &str| key.eq_ignore_ascii_case(name);
            if is("limit") {
                set(&mut hint.limit_requests, parse_count(figure));
            } else if is("remaining") || is("r") {
                set(&mut hint.remaining_requests, parse_count(figure));
            } else if is("reset") || is("t") {
                set(&mut hint.reset_requests_ms, parse_seconds_ms(figure));
            }
        }
    }
}

/// `"default";q=100;w=60`: the quota `q` is the request limit per window.
fn parse_policy(value: &str, hint: &mut RateHint) {
    for parameter in value.split([',', ';']) {
        if let Some((key, figure)) = parameter.split_once('=') {
            if trimmed(key).eq_ignore_ascii_case("q") {
                set(&mut hint.limit_requests, parse_count(figure));
            }
        }
    }
}

/// Parses a Go-style duration as OpenAI sends it: one or more `<decimal><unit>` parts with
/// units `h`, `m`, `s`, `ms`, `us`/`µs`, `ns` (`"6m0s"`, `"1.5s"`, `"20ms"`). A bare number
/// is taken as seconds. Rounded up to a whole ms, saturating; integer arithmetic only.
#[must_use]
pub fn parse_duration_ms(text: &str) -> Option<Millis> {
    let text = trimmed(text);
    if text.is_empty() {
        return None;
    }
    if let Some(seconds) = parse_count(text) {
        return Some(seconds.saturating_mul(1_000));
    }
    let mut total_ns: u128 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let number_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        let (number, after) = rest.split_at(number_len);
        let unit_len = after
            .bytes()
            .take_while(|b| !b.is_ascii_digit() && *b != b'.')
            .count();
        let (unit, after) = after.split_at(unit_len);
        let unit_ns: u128 = match unit {
            "h" => 3_600_000_000_000,
            "m" => 60_000_000_000,
            "s" => 1_000_000_000,
            "ms" => 1_000_000,
            "us" | "µs" => 1_000,
            "ns" => 1,
            _ => return None,
        };
        total_ns = total_ns.saturating_add(scaled_decimal(number, unit_ns)?);
        rest = after;
    }
    let ms = total_ns.div_ceil(1_000_000);
    Some(Millis::try_from(ms).unwrap_or(Millis::MAX))
}

/// `number * unit` for a non-negative decimal, rounded up, saturating.
fn scaled_decimal(number: &str, unit: u128) -> Option<u128> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) {
        return None;
    }
    let whole_value: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().unwrap_or(u128::MAX)
    };
    let mut total = whole_value.saturating_mul(unit);
    // Nanosecond units need at most 16 fractional digits to decide a rounded-up ms.
    let kept = &fraction[..fraction.len().min(20)];
    if !kept.is_empty() {
        let numerator: u128 = kept.parse().ok()?;
        let denominator = 10u128.pow(kept.len() as u32);
        total = total.saturating_add((numerator * unit).div_ceil(denominator));
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn openai_headers_give_requests_and_tokens() {
        let hint = rate_hint(&headers(&[
            ("x-ratelimit-limit-requests", "600"),
            ("x-ratelimit-remaining-requests", "599"),
            ("x-ratelimit-reset-requests", "100ms"),
            ("x-ratelimit-limit-tokens", "300000"),
            ("x-ratelimit-remaining-tokens", "299000"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]))
        .unwrap();
        assert_eq!(
            hint,
            RateHint {
                remaining_requests: Some(599),
                reset_requests_ms: Some(100),
                remaining_tokens: Some(299_000),
                reset_tokens_ms: Some(360_000),
                limit_requests: Some(600),
                limit_tokens: Some(300_000),
            }
        );
    }

    #[test]
    fn go_durations_parse_to_ms_rounded_up() {
        for (text, ms) in [
            ("1s", 1_000),
            ("6m0s", 360_000),
            ("20ms", 20),
            ("1.5s", 1_500),
            ("0s", 0),
            ("1h2m3s", 3_723_000),
            ("1.0001s", 1_001),
            ("999us", 1),
            ("30", 30_000),
        ] {
            assert_eq!(parse_duration_ms(text), Some(ms), "{text}");
        }
        for bad in ["", "s", "1x", "-1s", "1..5s", "abc"] {
            assert_eq!(parse_duration_ms(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn ietf_separate_headers_give_request_figures_only() {
        let hint = rate_hint(&headers(&[
            ("RateLimit-Limit", "100, 100;w=60"),
            ("RateLimit-Remaining", "50"),
            ("RateLimit-Reset", "30"),
        ]))
        .unwrap();
        assert_eq!(
            hint,
            RateHint {
                limit_requests: Some(100),
                remaining_requests: Some(50),
                reset_requests_ms: Some(30_000),
                ..RateHint::default()
            }
        );
    }

    #[test]
    fn ietf_combined_header_is_read() {
        let hint = rate_hint(&headers(&[(
            "ratelimit",
            "limit=100, remaining=50, reset=30",
        )]))
        .unwrap();
        assert_eq!(
            (
                hint.limit_requests,
                hint.remaining_requests,
                hint.reset_requests_ms
            ),
            (Some(100), Some(50), Some(30_000))
        );
        assert_eq!((hint.remaining_tokens, hint.limit_tokens), (None, None));
    }

    #[test]
    fn ietf_structured_header_and_policy_are_read() {
        let hint = rate_hint(&headers(&[
            ("RateLimit", "\"default\";r=50;t=30"),
            ("RateLimit-Policy", "\"default\";q=100;w=60"),
        ]))
        .unwrap();
        assert_eq!(
            (
                hint.limit_requests,
                hint.remaining_requests,
                hint.reset_requests_ms
            ),
            (Some(100), Some(50), Some(30_000))
        );
    }

    #[test]
    fn openai_figures_win_over_ietf_ones() {
        let hint = rate_hint(&headers(&[
            ("ratelimit-remaining", "7"),
            ("x-ratelimit-remaining-requests", "3"),
            ("ratelimit-reset", "9"),
        ]))
        .unwrap();
        assert_eq!(hint.remaining_requests, Some(3));
        assert_eq!(
            hint.reset_requests_ms,
            Some(9_000),
            "IETF fills what OpenAI left out"
        );
    }

    #[test]
    fn malformed_or_absent_rate_headers_give_none() {
        assert_eq!(rate_hint(&[]), None);
        assert_eq!(
            rate_hint(&headers(&[
                ("x-ratelimit-remaining-requests", "many"),
                ("x-ratelimit-reset-tokens", "soon"),
                ("ratelimit-remaining", "-1"),
                ("content-type", "application/json"),
            ])),
            None
        );
        let partial = rate_hint(&headers(&[
            ("x-ratelimit-remaining-tokens", "12"),
            ("x-ratelimit-limit-tokens", "x"),
        ]));
        assert_eq!(
            partial,
            Some(RateHint {
                remaining_tokens: Some(12),
                ..RateHint::default()
            })
        );
    }

    #[test]
    fn header_names_match_in_any_ascii_case_and_only_whole() {
        let hint = rate_hint(&headers(&[
            ("X-RateLimit-Remaining-Requests", " 7 "),
            ("x-ratelimit-remaining-requests-extra", "9"),
            ("x-ratelimit-reset-tokenS", "1.5s"),
            ("RATELIMIT", "Limit=100, REMAINING=1"),
        ]))
        .expect("recognised headers");
        assert_eq!(hint.remaining_requests, Some(7));
        assert_eq!(hint.reset_tokens_ms, Some(1_500));
        assert_eq!(hint.limit_requests, Some(100));
    }
}
