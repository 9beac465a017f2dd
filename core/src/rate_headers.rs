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

use crate::time::Millis;

/// What the provider reported about its limits. Every field is optional: providers send
/// subsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
pub fn rate_hint(headers: &[(String, String)]) -> Option<RateHint> {
    let mut openai = RateHint::default();
    let mut ietf = RateHint::default();
    for (name, value) in headers {
        let name = name.as_str();
        // Most headers are not rate-limit headers: reject them with one prefix check.
        let prefix = |p: &str| {
            name.get(..p.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(p))
        };
        if !prefix("x-ratelimit-") && !prefix("ratelimit") {
            continue;
        }
        let value = value.trim();
        let is = |expected: &str| name.eq_ignore_ascii_case(expected);
        if is("x-ratelimit-limit-requests") {
            set(&mut openai.limit_requests, parse_count(value));
        } else if is("x-ratelimit-remaining-requests") {
            set(&mut openai.remaining_requests, parse_count(value));
        } else if is("x-ratelimit-reset-requests") {
            set(&mut openai.reset_requests_ms, parse_duration_ms(value));
        } else if is("x-ratelimit-limit-tokens") {
            set(&mut openai.limit_tokens, parse_count(value));
        } else if is("x-ratelimit-remaining-tokens") {
            set(&mut openai.remaining_tokens, parse_count(value));
        } else if is("x-ratelimit-reset-tokens") {
            set(&mut openai.reset_tokens_ms, parse_duration_ms(value));
        } else if is("ratelimit-limit") {
            set(&mut ietf.limit_requests, parse_count(leading_item(value)));
        } else if is("ratelimit-remaining") {
            set(
                &mut ietf.remaining_requests,
                parse_count(leading_item(value)),
            );
        } else if is("ratelimit-reset") {
            set(
                &mut ietf.reset_requests_ms,
                parse_seconds_ms(leading_item(value)),
            );
        } else if is("ratelimit") {
            parse_combined(value, &mut ietf);
        } else if is("ratelimit-policy") {
            parse_policy(value, &mut ietf);
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

/// Keeps the first usable value of a field.
fn set<T>(slot: &mut Option<T>, value: Option<T>) {
    if slot.is_none() {
        *slot = value;
    }
}

fn parse_count(text: &str) -> Option<u64> {
    let text = text.trim();
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
    text.split([',', ';']).next().unwrap_or("").trim()
}

/// `limit=100, remaining=50, reset=30` (older draft) or `"default";r=50;t=30` (newer draft).
/// The first list member that carries a figure counts.
fn parse_combined(value: &str, hint: &mut RateHint) {
    for member in value.split(',') {
        for parameter in member.split(';') {
            let Some((key, figure)) = parameter.split_once('=') else {
                continue;
            };
            match key.trim().to_ascii_lowercase().as_str() {
                "limit" => set(&mut hint.limit_requests, parse_count(figure)),
                "remaining" | "r" => set(&mut hint.remaining_requests, parse_count(figure)),
                "reset" | "t" => set(&mut hint.reset_requests_ms, parse_seconds_ms(figure)),
                _ => {}
            }
        }
    }
}

/// `"default";q=100;w=60`: the quota `q` is the request limit per window.
fn parse_policy(value: &str, hint: &mut RateHint) {
    for parameter in value.split([',', ';']) {
        if let Some((key, figure)) = parameter.split_once('=') {
            if key.trim().eq_ignore_ascii_case("q") {
                set(&mut hint.limit_requests, parse_count(figure));
            }
        }
    }
}

/// Parses a Go-style duration as OpenAI sends it: one or more `<decimal><unit>` parts with
/// units `h`, `m`, `s`, `ms`, `us`/`µs`, `ns` (`"6m0s"`, `"1.5s"`, `"20ms"`). A bare number
/// is taken as seconds. Rounded up to a whole ms, saturating; integer arithmetic only.
pub fn parse_duration_ms(text: &str) -> Option<Millis> {
    let text = text.trim();
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
}
