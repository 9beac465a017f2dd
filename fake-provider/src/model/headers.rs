//! Rate-limit and Retry-After headers, in client time.
//!
//! The model counts in model ms; a live server may run model time faster than real time
//! (`time_scale`). Emitted durations are divided by the emit scale (rounded up, so a client
//! that honours them never arrives early) and HTTP-dates are computed from the wall epoch.

use super::limits::ScopeState;
use crate::config::RetryAfterFormat;
use std::time::{Duration, UNIX_EPOCH};

/// Converts model durations to what the client is told.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientClock {
    /// Model ms per client ms (1.0 in the simulator).
    pub(crate) scale: f64,
    /// Unix ms of model time 0.
    pub(crate) wall_epoch_unix_ms: u64,
}

/// Whether the answer to attempt `seq` writes `Retry-After` as an HTTP-date.
pub(crate) fn as_http_date(format: RetryAfterFormat, seq: u64) -> bool {
    match format {
        RetryAfterFormat::Seconds => false,
        RetryAfterFormat::HttpDate => true,
        RetryAfterFormat::Both => seq % 2 == 1,
    }
}

impl ClientClock {
    /// A model duration in client ms, rounded up.
    pub(crate) fn client_ms(&self, model_ms: u64) -> u64 {
        if self.scale == 1.0 {
            model_ms
        } else {
            (model_ms as f64 / self.scale).ceil() as u64
        }
    }

    /// `retry-after` and `retry-after-ms` for a wait of `delay_ms` model ms from `now`.
    pub(crate) fn retry_after(
        &self,
        format: RetryAfterFormat,
        seq: u64,
        now: u64,
        delay_ms: u64,
        out: &mut Vec<(String, String)>,
    ) {
        let delay = self.client_ms(delay_ms);
        let value = if as_http_date(format, seq) {
            let until_ms = self.wall_epoch_unix_ms + self.client_ms(now) + delay;
            let secs = until_ms.div_ceil(1_000);
            httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs))
        } else {
            delay.div_ceil(1_000).to_string()
        };
        out.push(("retry-after".to_string(), value));
        out.push(("retry-after-ms".to_string(), delay.to_string()));
    }

    /// `x-ratelimit-*` (OpenAI style) and IETF `RateLimit-Policy` / `RateLimit` headers.
    pub(crate) fn rate_limit(&self, scope: &ScopeState, now: u64, out: &mut Vec<(String, String)>) {
        let l = &scope.limits;
        let minute_reset = self.client_ms(scope.minute.reset_at().saturating_sub(now));
        let day_reset = self.client_ms(scope.day.reset_at().saturating_sub(now));
        let minute_w = self.client_ms(60_000).div_ceil(1_000);
        let day_w = self.client_ms(86_400_000).div_ceil(1_000);
        // Built in place, one string per header: this runs for every answer.
        let mut policy = String::new();
        let mut current = String::new();
        let mut add = |name: &str, limit: Option<u64>, used: u64, w: u64, reset_ms: u64| {
            if let Some(q) = limit {
                if !policy.is_empty() {
                    policy.push_str(", ");
                    current.push_str(", ");
                }
                policy.push('"');
                policy.push_str(name);
                policy.push_str("\";q=");
                push_number(&mut policy, q);
                policy.push_str(";w=");
                push_number(&mut policy, w);
                current.push('"');
                current.push_str(name);
                current.push_str("\";r=");
                push_number(&mut current, q.saturating_sub(used));
                current.push_str(";t=");
                push_number(&mut current, reset_ms.div_ceil(1_000));
            }
        };
        add("rpm", l.rpm, scope.minute.requests, minute_w, minute_reset);
        add("tpm", l.tpm, scope.minute.tokens, minute_w, minute_reset);
        add("rpd", l.rpd, scope.day.requests, day_w, day_reset);
        add("tpd", l.tpd, scope.day.tokens, day_w, day_reset);
        // OpenAI's headers describe the per-minute limits, or the daily ones when only those
        // exist.
        let requests = l
            .rpm
            .map(|q| (q, scope.minute.requests, minute_reset))
            .or(l.rpd.map(|q| (q, scope.day.requests, day_reset)));
        if let Some((q, used, reset)) = requests {
            out.push(("x-ratelimit-limit-requests".into(), number(q)));
            out.push((
                "x-ratelimit-remaining-requests".into(),
                number(q.saturating_sub(used)),
            ));
            out.push(("x-ratelimit-reset-requests".into(), go_duration(reset)));
        }
        let tokens = l
            .tpm
            .map(|q| (q, scope.minute.tokens, minute_reset))
            .or(l.tpd.map(|q| (q, scope.day.tokens, day_reset)));
        if let Some((q, used, reset)) = tokens {
            out.push(("x-ratelimit-limit-tokens".into(), number(q)));
            out.push((
                "x-ratelimit-remaining-tokens".into(),
                number(q.saturating_sub(used)),
            ));
            out.push(("x-ratelimit-reset-tokens".into(), go_duration(reset)));
        }
        if !policy.is_empty() {
            out.push(("ratelimit-policy".into(), policy));
            out.push(("ratelimit".into(), current));
        }
    }
}

/// Appends `value` in decimal (what `to_string` writes), without the formatting machinery.
fn push_number(out: &mut String, value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = value;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    for &digit in &digits[at..] {
        out.push(char::from(digit));
    }
}

/// `value` in decimal.
fn number(value: u64) -> String {
    let mut out = String::with_capacity(20);
    push_number(&mut out, value);
    out
}

/// OpenAI's reset format: "250ms", "12.5s", "6m0s", "2h3m4s".
pub(crate) fn go_duration(ms: u64) -> String {
    let mut out = String::with_capacity(16);
    if ms < 1_000 {
        push_number(&mut out, ms);
        out.push_str("ms");
        return out;
    }
    let h = ms / 3_600_000;
    let m = (ms % 3_600_000) / 60_000;
    let s_ms = ms % 60_000;
    if h > 0 {
        push_number(&mut out, h);
        out.push('h');
    }
    if h > 0 || m > 0 {
        push_number(&mut out, m);
        out.push('m');
    }
    push_number(&mut out, s_ms / 1_000);
    let fraction = s_ms % 1_000;
    if fraction != 0 {
        // Three digits with the trailing zeros dropped: 500 -> ".5", 250 -> ".25".
        let digits = [fraction / 100, fraction / 10 % 10, fraction % 10];
        let kept = if digits[2] != 0 {
            3
        } else if digits[1] != 0 {
            2
        } else {
            1
        };
        out.push('.');
        for digit in &digits[..kept] {
            out.push(char::from(b'0' + *digit as u8));
        }
    }
    out.push('s');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The formatting-free writers give what `format!` gave, across every shape of value.
    #[test]
    fn go_duration_and_numbers_match_their_format_definitions() {
        fn reference(ms: u64) -> String {
            if ms < 1_000 {
                return format!("{ms}ms");
            }
            let h = ms / 3_600_000;
            let m = (ms % 3_600_000) / 60_000;
            let s_ms = ms % 60_000;
            let secs = if s_ms % 1_000 == 0 {
                format!("{}s", s_ms / 1_000)
            } else {
                let text = format!("{}.{:03}", s_ms / 1_000, s_ms % 1_000);
                format!("{}s", text.trim_end_matches('0'))
            };
            match (h, m) {
                (0, 0) => secs,
                (0, m) => format!("{m}m{secs}"),
                (h, m) => format!("{h}h{m}m{secs}"),
            }
        }
        let mut values: Vec<u64> = (0..130_000).collect();
        values.extend((0..2_000).map(|i| i * 7_919_993));
        values.extend([3_600_000, 3_600_001, 86_400_000, u64::MAX]);
        for ms in values {
            assert_eq!(go_duration(ms), reference(ms), "{ms}");
            assert_eq!(number(ms), ms.to_string());
        }
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration(250), "250ms");
        assert_eq!(go_duration(12_500), "12.5s");
        assert_eq!(go_duration(360_000), "6m0s");
        assert_eq!(go_duration(7_384_000), "2h3m4s");
    }

    #[test]
    fn retry_after_in_both_forms_rounds_up() {
        let clock = ClientClock {
            scale: 1.0,
            wall_epoch_unix_ms: 1_700_000_000_000,
        };
        let mut h = Vec::new();
        clock.retry_after(RetryAfterFormat::Seconds, 1, 500, 10_200, &mut h);
        assert_eq!(h[0], ("retry-after".into(), "11".into()));
        assert_eq!(h[1], ("retry-after-ms".into(), "10200".into()));
        let mut h = Vec::new();
        clock.retry_after(RetryAfterFormat::HttpDate, 1, 500, 10_200, &mut h);
        // 1_700_000_000_000 + 500 + 10_200 ms rounds up to second 1_700_000_011.
        let expect = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(1_700_000_011));
        assert_eq!(h[0].1, expect);
    }

    #[test]
    fn time_scale_shrinks_emitted_waits() {
        let clock = ClientClock {
            scale: 60.0,
            wall_epoch_unix_ms: 0,
        };
        let mut h = Vec::new();
        clock.retry_after(RetryAfterFormat::Seconds, 0, 0, 60_000, &mut h);
        assert_eq!(h[1].1, "1000");
        assert_eq!(h[0].1, "1");
    }
}
