//! `Retry-After` and `retry-after-ms`: how long the provider asked us to wait.
//!
//! A provider's wait wins over a shorter local backoff (the scheduler takes the larger of
//! the two); this module only reads the headers.

use std::time::{Duration, UNIX_EPOCH};

use crate::time::Millis;

/// Which header (and form) a wait came from: kept for audit records and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RetryAfterSource {
    /// `retry-after-ms: 1500` (milliseconds, fractions allowed).
    RetryAfterMs,
    /// `retry-after: 10` (delta-seconds).
    DeltaSeconds,
    /// `retry-after: Wed, 21 Oct 2015 07:28:00 GMT`, still in the future.
    HttpDate,
    /// An HTTP-date already past (clock skew): replaced by the floor delay.
    PastDate,
}

/// A provider-requested wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfter {
    /// How long to wait from now (ms).
    pub delay_ms: Millis,
    /// Which header (and form) gave it.
    pub source: RetryAfterSource,
}

/// Reads the provider's requested wait from response headers.
///
/// - `retry-after-ms` (ms, a decimal such as `"1500.5"` is rounded up) wins over
///   `retry-after` when it parses;
/// - `retry-after` is delta-seconds (an integer; a decimal such as `"1.5"` is tolerated and
///   rounded up to the ms) or an HTTP-date compared with `now_unix_ms` (ms since the Unix
///   epoch, the driver's wall clock);
/// - a date at or before now (clock skew, or a stale proxy) gives `past_date_floor_ms`, never
///   zero, so a skewed clock cannot cause a tight retry loop;
/// - negative, non-finite or unparseable values are ignored (`None` when nothing usable).
///
/// Header names match ASCII case-insensitively; the first usable header of each name counts.
#[must_use]
pub fn retry_after_delay(
    headers: &[(String, String)],
    now_unix_ms: u64,
    past_date_floor_ms: Millis,
) -> Option<RetryAfter> {
    let named = |name: &'static str| {
        headers
            .iter()
            .filter(move |(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.trim())
    };
    if let Some(delay_ms) = named("retry-after-ms").find_map(|value| parse_decimal_scaled(value, 1))
    {
        return Some(RetryAfter {
            delay_ms,
            source: RetryAfterSource::RetryAfterMs,
        });
    }
    named("retry-after").find_map(|value| parse_retry_after(value, now_unix_ms, past_date_floor_ms))
}

fn parse_retry_after(
    value: &str,
    now_unix_ms: u64,
    past_date_floor_ms: Millis,
) -> Option<RetryAfter> {
    if let Some(delay_ms) = parse_decimal_scaled(value, 1_000) {
        return Some(RetryAfter {
            delay_ms,
            source: RetryAfterSource::DeltaSeconds,
        });
    }
    let date = httpdate::parse_http_date(value).ok()?;
    let date_unix_ms = match date.duration_since(UNIX_EPOCH) {
        Ok(since_epoch) => Millis::try_from(since_epoch.as_millis()).unwrap_or(Millis::MAX),
        Err(_) => 0,
    };
    if date_unix_ms <= now_unix_ms {
        return Some(RetryAfter {
            delay_ms: past_date_floor_ms,
            source: RetryAfterSource::PastDate,
        });
    }
    Some(RetryAfter {
        delay_ms: date_unix_ms - now_unix_ms,
        source: RetryAfterSource::HttpDate,
    })
}

/// Parses a non-negative decimal (`"10"`, `"1.5"`, `"1500.25"`) and multiplies it by `scale`
/// (1 for ms, 1000 for seconds), rounding up to a whole ms and saturating. Integer-only
/// arithmetic so the result never depends on float formatting. `None` for anything else
/// (signs, exponents, empty strings, a bare `"."`).
fn parse_decimal_scaled(text: &str, scale: u64) -> Option<Millis> {
    let (whole, fraction) = decimal_parts(text)?;
    let whole_value = if whole.is_empty() {
        0
    } else {
        // All digits, so the only possible error is overflow: saturate.
        whole.parse::<u64>().unwrap_or(u64::MAX)
    };
    let mut delay = whole_value.saturating_mul(scale);
    // Fractional digits beyond the 18th cannot change a rounded-up ms once scaled by <= 1000,
    // except to make it non-zero, which `any_rest` keeps.
    let kept = &fraction[..fraction.len().min(18)];
    let any_rest = fraction[kept.len()..].bytes().any(|b| b != b'0');
    if !kept.is_empty() {
        let numerator = kept.parse::<u64>().unwrap_or(0);
        let denominator = 10u64.pow(kept.len() as u32);
        let scaled = u128::from(numerator) * u128::from(scale);
        let mut extra = scaled / u128::from(denominator);
        if scaled % u128::from(denominator) != 0 || any_rest {
            extra += 1;
        }
        delay = delay.saturating_add(u64::try_from(extra).unwrap_or(u64::MAX));
    }
    Some(delay)
}

/// The whole and fractional digits of a non-negative decimal as the core reads one in a
/// time header (`"10"`, `"1.5"`, `".5"`, `"5."`): digits and at most one dot, no sign, no
/// exponent; `None` for anything else. A driver that rewrites such a header (the live
/// driver stretches waits by its time scale) reads it by this, so it rewrites exactly what
/// the core would read.
#[must_use]
pub fn decimal_parts(text: &str) -> Option<(&str, &str)> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let all_digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    Some((whole, fraction))
}

/// Formats a Unix time (ms) as an HTTP-date, for drivers and tests that build headers.
#[must_use]
pub fn format_http_date(unix_ms: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_millis(unix_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_700_000_000_000; // 2023-11-14T22:13:20Z
    const FLOOR: Millis = 1_000;

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn delay(pairs: &[(&str, &str)]) -> Option<RetryAfter> {
        retry_after_delay(&headers(pairs), NOW, FLOOR)
    }

    #[test]
    fn retry_after_ms_wins_over_retry_after() {
        let got = delay(&[("retry-after", "10"), ("retry-after-ms", "250")]).unwrap();
        assert_eq!(
            got,
            RetryAfter {
                delay_ms: 250,
                source: RetryAfterSource::RetryAfterMs
            }
        );
    }

    #[test]
    fn retry_after_ms_accepts_fractions_rounded_up() {
        assert_eq!(
            delay(&[("retry-after-ms", "1500.5")]).unwrap().delay_ms,
            1_501
        );
        assert_eq!(
            delay(&[("retry-after-ms", "1500.0")]).unwrap().delay_ms,
            1_500
        );
    }

    #[test]
    fn garbage_retry_after_ms_falls_back_to_retry_after() {
        let got = delay(&[("retry-after-ms", "soon"), ("retry-after", "3")]).unwrap();
        assert_eq!(
            got,
            RetryAfter {
                delay_ms: 3_000,
                source: RetryAfterSource::DeltaSeconds
            }
        );
    }

    #[test]
    fn delta_seconds_are_converted_to_ms() {
        assert_eq!(
            delay(&[("retry-after", "10")]),
            Some(RetryAfter {
                delay_ms: 10_000,
                source: RetryAfterSource::DeltaSeconds
            })
        );
        assert_eq!(delay(&[("retry-after", " 0 ")]).unwrap().delay_ms, 0);
    }

    #[test]
    fn decimal_delta_seconds_are_tolerated() {
        assert_eq!(delay(&[("retry-after", "1.5")]).unwrap().delay_ms, 1_500);
        assert_eq!(delay(&[("retry-after", "0.0001")]).unwrap().delay_ms, 1);
    }

    #[test]
    fn future_http_date_gives_the_remaining_time() {
        let date = format_http_date(NOW + 30_000);
        assert_eq!(
            delay(&[("retry-after", &date)]),
            Some(RetryAfter {
                delay_ms: 30_000,
                source: RetryAfterSource::HttpDate
            })
        );
    }

    #[test]
    fn past_http_date_gives_floor_not_zero() {
        for past in [NOW - 60_000, NOW, 0] {
            let date = format_http_date(past);
            assert_eq!(
                delay(&[("retry-after", &date)]),
                Some(RetryAfter {
                    delay_ms: FLOOR,
                    source: RetryAfterSource::PastDate
                }),
                "{date}"
            );
        }
    }

    #[test]
    fn garbage_or_negative_retry_after_gives_none() {
        for bad in [
            "",
            "soon",
            "-5",
            "-1.5",
            "1e3",
            "NaN",
            "inf",
            ".",
            "1.2.3",
            "+3",
            "Wed, 99 Foo 2015",
        ] {
            assert_eq!(delay(&[("retry-after", bad)]), None, "{bad:?}");
            assert_eq!(delay(&[("retry-after-ms", bad)]), None, "{bad:?}");
        }
        assert_eq!(delay(&[]), None);
        assert_eq!(delay(&[("x-other", "5")]), None);
    }

    #[test]
    fn header_names_match_case_insensitively() {
        assert_eq!(delay(&[("Retry-After", "2")]).unwrap().delay_ms, 2_000);
        assert_eq!(
            delay(&[("Retry-After-Ms", "7")]).unwrap().source,
            RetryAfterSource::RetryAfterMs
        );
    }

    #[test]
    fn huge_values_saturate_instead_of_overflowing() {
        assert_eq!(
            delay(&[("retry-after", "99999999999999999999999")])
                .unwrap()
                .delay_ms,
            Millis::MAX
        );
        assert_eq!(
            delay(&[("retry-after", "18446744073709551.615")])
                .unwrap()
                .delay_ms,
            Millis::MAX
        );
    }
}
