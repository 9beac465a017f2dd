//! Rate-limit and Retry-After headers, in client time.
//!
//! The model counts in model ms; a live server may run model time faster than real time
//! (`time_scale`). Emitted durations are divided by the emit scale (rounded up, so a client
//! that honours them never arrives early) and HTTP-dates are computed from the wall epoch.

use super::limits::{ScopeState, DAY_MS, MINUTE_MS};
use crate::config::RetryAfterFormat;
use serde::{Deserialize, Serialize};
use std::time::{Duration, UNIX_EPOCH};

/// Converts model durations to what the client is told.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientClock {
    /// Model ms per client ms (1.0 in the simulator).
    scale: f64,
    /// Whether `scale` is 1: a flag tested, where comparing the float was a few
    /// instructions for each of the half-dozen durations an answer carries.
    unit: bool,
    /// The minute window, then the day window, in client seconds (rounded up): what every
    /// answer's rate-limit figures carry, worked out once per scale.
    window_s: [u64; 2],
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
    /// A clock emitting `scale` model ms per client ms, whose model time 0 is
    /// `wall_epoch_unix_ms` (Unix ms).
    pub(crate) fn new(scale: f64, wall_epoch_unix_ms: u64) -> Self {
        let mut clock = ClientClock {
            scale,
            unit: true,
            window_s: [0; 2],
            wall_epoch_unix_ms,
        };
        clock.set_scale(scale);
        clock
    }

    /// Model ms per client ms.
    pub(crate) fn scale(&self) -> f64 {
        self.scale
    }

    /// Emits `scale` model ms per client ms from now on.
    pub(crate) fn set_scale(&mut self, scale: f64) {
        self.scale = scale;
        self.unit = scale == 1.0;
        self.window_s = [
            self.client_ms(MINUTE_MS).div_ceil(1_000),
            self.client_ms(DAY_MS).div_ceil(1_000),
        ];
    }

    /// A model duration in client ms, rounded up.
    // Inlined: at scale 1 (the simulator's, on every attempt) it is a test and the value.
    #[inline]
    pub(crate) fn client_ms(&self, model_ms: u64) -> u64 {
        if self.unit {
            model_ms
        } else {
            (model_ms as f64 / self.scale).ceil() as u64
        }
    }

    /// The Retry-After of a wait of `delay_ms` model ms from `now` (see [`RetryAfterSignal`]).
    pub(crate) fn retry_after(
        &self,
        format: RetryAfterFormat,
        seq: u64,
        now: u64,
        delay_ms: u64,
    ) -> RetryAfterSignal {
        let delay = self.client_ms(delay_ms);
        let http_date_unix_s = as_http_date(format, seq).then(|| {
            let until_ms = self.wall_epoch_unix_ms + self.client_ms(now) + delay;
            until_ms.div_ceil(1_000)
        });
        RetryAfterSignal {
            delay_ms: delay,
            http_date_unix_s,
        }
    }

    /// A scope's rate-limit figures at `now`, in client time (see [`RateFigures`]).
    pub(crate) fn rate_limit(&self, scope: &ScopeState, now: u64) -> RateFigures {
        let l = &scope.limits;
        let minute_left = scope.minute.reset_at().saturating_sub(now);
        let day_left = scope.day.reset_at().saturating_sub(now);
        RateFigures {
            quotas: [l.rpm, l.tpm, l.rpd, l.tpd],
            used: [
                scope.minute.requests,
                scope.minute.tokens,
                scope.day.requests,
                scope.day.tokens,
            ],
            reset_ms: [self.client_ms(minute_left), self.client_ms(day_left)],
            window_s: self.window_s,
        }
    }
}

/// A Retry-After as numbers; the HTTP edge writes `retry-after` (seconds, rounded up, or an
/// HTTP-date) and `retry-after-ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryAfterSignal {
    /// The wait in client ms (`retry-after-ms`; `retry-after` is it in seconds, rounded up).
    pub delay_ms: u64,
    /// When `retry-after` is an HTTP-date: the Unix time (seconds) it names, the end of the
    /// wait rounded up to a second.
    pub http_date_unix_s: Option<u64>,
}

/// One limit in OpenAI's `x-ratelimit-{limit,remaining,reset}-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitFigures {
    /// The limit per window (requests or tokens).
    pub limit: u64,
    /// What is left of it in the current window.
    pub remaining: u64,
    /// Client ms until the window resets (written as a Go duration, `6m0s`).
    pub reset_ms: u64,
}

/// One item of the IETF `RateLimit-Policy` / `RateLimit` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowFigures {
    /// The quota per window (`q`).
    pub quota: u64,
    /// What is left of it (`r`).
    pub remaining: u64,
    /// The window, client seconds (`w`).
    pub window_s: u64,
    /// Client seconds until it resets, rounded up (`t`).
    pub reset_s: u64,
}

/// A scope's rate-limit figures as an answer carries them, in client time: what each limit
/// allows, what is used of it, and when its window resets. Every header figure derives from
/// these ([`RateFigures::requests`], [`RateFigures::tokens`], [`RateFigures::windows`]) when
/// it is written or read: an in-process run reads two of them on every answer, and keeping
/// the sixteen figures the headers show, most of them read by nobody, made every answer
/// about 100 bytes longer and its making a few hundred instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateFigures {
    /// The limits per window, in [`RateFigures::WINDOW_NAMES`] order: requests and tokens
    /// per minute, then per day (`None`: no such limit).
    pub quotas: [Option<u64>; 4],
    /// What is used of each in its current window, in the same order.
    pub used: [u64; 4],
    /// Client ms until the minute window, then the day window, resets.
    pub reset_ms: [u64; 2],
    /// The minute window, then the day window, in client seconds (rounded up).
    pub window_s: [u64; 2],
}

impl RateFigures {
    /// The IETF item names of `windows`, in order.
    pub const WINDOW_NAMES: [&'static str; 4] = ["rpm", "tpm", "rpd", "tpd"];

    /// Limit `i` (an index of [`RateFigures::WINDOW_NAMES`]) as OpenAI's headers say it.
    fn limit(&self, i: usize) -> Option<LimitFigures> {
        self.quotas[i].map(|q| LimitFigures {
            limit: q,
            remaining: q.saturating_sub(self.used[i]),
            reset_ms: self.reset_ms[i / 2],
        })
    }

    /// Requests: per minute, or per day when the scope has only a daily request limit.
    pub fn requests(&self) -> Option<LimitFigures> {
        self.limit(0).or_else(|| self.limit(2))
    }

    /// Tokens: per minute, or per day when the scope has only a daily token limit.
    pub fn tokens(&self) -> Option<LimitFigures> {
        self.limit(1).or_else(|| self.limit(3))
    }

    /// The IETF items, in [`RateFigures::WINDOW_NAMES`] order (`None`: no such limit).
    pub fn windows(&self) -> [Option<WindowFigures>; 4] {
        std::array::from_fn(|i| {
            self.quotas[i].map(|q| WindowFigures {
                quota: q,
                remaining: q.saturating_sub(self.used[i]),
                window_s: self.window_s[i / 2],
                // Seconds to the reset, rounded up: once per window, shared by its two limits.
                reset_s: self.reset_ms[i / 2].div_ceil(1_000),
            })
        })
    }

    /// `x-ratelimit-*` (OpenAI style) and IETF `RateLimit-Policy` / `RateLimit` headers,
    /// into any [`HeaderOut`]: names are static and values are written in pieces, so the
    /// HTTP edge renders them with no allocation of their own.
    pub(crate) fn write(&self, out: &mut impl HeaderOut) {
        const NAMES: [[&str; 3]; 2] = [
            [
                "x-ratelimit-limit-requests",
                "x-ratelimit-remaining-requests",
                "x-ratelimit-reset-requests",
            ],
            [
                "x-ratelimit-limit-tokens",
                "x-ratelimit-remaining-tokens",
                "x-ratelimit-reset-tokens",
            ],
        ];
        let mut digits = [0u8; 20];
        for (names, figures) in NAMES.iter().zip([self.requests(), self.tokens()]) {
            if let Some(f) = figures {
                out.start(names[0]);
                out.push(number_str(&mut digits, f.limit));
                out.start(names[1]);
                out.push(number_str(&mut digits, f.remaining));
                out.start(names[2]);
                write_go_duration(f.reset_ms, &mut |piece| out.push(piece));
            }
        }
        if self.quotas.iter().all(Option::is_none) {
            return;
        }
        let windows = self.windows();
        // Each list in a pass of its own (a header's value is written whole before the next
        // header starts): `"rpm";q=5;w=60, "tpm";q=2000;w=60`, then `"rpm";r=4;t=12, ...`.
        type Pick = fn(&WindowFigures) -> (u64, u64);
        let lists: [(&'static str, &str, &str, Pick); 2] = [
            ("ratelimit-policy", "q", "w", |w| (w.quota, w.window_s)),
            ("ratelimit", "r", "t", |w| (w.remaining, w.reset_s)),
        ];
        for (header, first, second, pick) in lists {
            out.start(header);
            let mut separator = "";
            for (name, w) in Self::WINDOW_NAMES.iter().zip(&windows) {
                let Some(w) = w else { continue };
                let (a, b) = pick(w);
                out.push(separator);
                separator = ", ";
                out.push("\"");
                out.push(name);
                out.push("\";");
                out.push(first);
                out.push("=");
                out.push(number_str(&mut digits, a));
                out.push(";");
                out.push(second);
                out.push("=");
                out.push(number_str(&mut digits, b));
            }
        }
    }
}

/// 9999-12-31 23:59:59 UTC in Unix seconds: the last instant an HTTP-date can write (the
/// formatter panics past it). A later one is written as this.
pub const LAST_HTTP_DATE_UNIX_S: u64 = 253_402_300_799;

impl RetryAfterSignal {
    /// `retry-after` and `retry-after-ms`, into any [`HeaderOut`].
    pub(crate) fn write(&self, out: &mut impl HeaderOut) {
        let mut digits = [0u8; 20];
        out.start("retry-after");
        match self.http_date_unix_s {
            Some(secs) => out.push(&httpdate::fmt_http_date(
                UNIX_EPOCH + Duration::from_secs(secs.min(LAST_HTTP_DATE_UNIX_S)),
            )),
            None => out.push(number_str(&mut digits, self.delay_ms.div_ceil(1_000))),
        }
        out.start("retry-after-ms");
        out.push(number_str(&mut digits, self.delay_ms));
    }
}

/// Where an answer's headers are written: each header starts with its name (static, lower
/// case), then its value is pushed in pieces until the next header starts or writing ends.
/// A `Vec` of `(name, value)` pairs collects them as strings; the HTTP edge writes the values
/// straight into its response buffer.
pub trait HeaderOut {
    /// Starts the next header.
    fn start(&mut self, name: &'static str);
    /// Appends a piece of the current header's value.
    fn push(&mut self, piece: &str);
}

impl HeaderOut for Vec<(String, String)> {
    fn start(&mut self, name: &'static str) {
        self.push((name.to_string(), String::new()));
    }

    fn push(&mut self, piece: &str) {
        if let Some((_, value)) = self.last_mut() {
            value.push_str(piece);
        }
    }
}

/// `value` in decimal (what `to_string` writes), written into `digits` without the
/// formatting machinery.
pub(crate) fn number_str(digits: &mut [u8; 20], value: u64) -> &str {
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
    // Only ASCII digits were written.
    std::str::from_utf8(&digits[at..]).unwrap_or_default()
}

/// `value` in decimal.
#[cfg(test)]
fn number(value: u64) -> String {
    number_str(&mut [0u8; 20], value).to_string()
}

/// OpenAI's reset format: "250ms", "12.5s", "6m0s", "2h3m4s".
pub(crate) fn go_duration(ms: u64) -> String {
    let mut out = String::with_capacity(16);
    write_go_duration(ms, &mut |piece| out.push_str(piece));
    out
}

/// [`go_duration`] written in pieces to `push`.
fn write_go_duration(ms: u64, push: &mut impl FnMut(&str)) {
    let mut digits = [0u8; 20];
    if ms < 1_000 {
        push(number_str(&mut digits, ms));
        push("ms");
        return;
    }
    let h = ms / 3_600_000;
    let m = (ms % 3_600_000) / 60_000;
    let s_ms = ms % 60_000;
    if h > 0 {
        push(number_str(&mut digits, h));
        push("h");
    }
    if h > 0 || m > 0 {
        push(number_str(&mut digits, m));
        push("m");
    }
    push(number_str(&mut digits, s_ms / 1_000));
    let fraction = s_ms % 1_000;
    if fraction != 0 {
        // Three digits with the trailing zeros dropped: 500 -> ".5", 250 -> ".25".
        let text = [
            b'.',
            b'0' + (fraction / 100) as u8,
            b'0' + (fraction / 10 % 10) as u8,
            b'0' + (fraction % 10) as u8,
        ];
        let kept = if text[3] != b'0' {
            4
        } else if text[2] != b'0' {
            3
        } else {
            2
        };
        push(std::str::from_utf8(&text[..kept]).unwrap_or_default());
    }
    push("s");
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

    /// The headers rendered from the figures are byte for byte what the model wrote before
    /// it carried figures (the writers below are that code, kept as the reference).
    #[test]
    fn rendered_figures_are_the_headers_written_before() {
        use crate::config::ScopeLimits;

        fn old_retry_after(
            clock: &ClientClock,
            format: RetryAfterFormat,
            seq: u64,
            now: u64,
            delay_ms: u64,
            out: &mut Vec<(String, String)>,
        ) {
            let delay = clock.client_ms(delay_ms);
            let value = if as_http_date(format, seq) {
                let until_ms = clock.wall_epoch_unix_ms + clock.client_ms(now) + delay;
                let secs = until_ms.div_ceil(1_000).min(LAST_HTTP_DATE_UNIX_S);
                httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs))
            } else {
                delay.div_ceil(1_000).to_string()
            };
            out.push(("retry-after".to_string(), value));
            out.push(("retry-after-ms".to_string(), delay.to_string()));
        }

        fn old_rate_limit(
            clock: &ClientClock,
            scope: &ScopeState,
            now: u64,
            out: &mut Vec<(String, String)>,
        ) {
            let l = &scope.limits;
            let minute_reset = clock.client_ms(scope.minute.reset_at().saturating_sub(now));
            let day_reset = clock.client_ms(scope.day.reset_at().saturating_sub(now));
            let minute_w = clock.client_ms(60_000).div_ceil(1_000);
            let day_w = clock.client_ms(86_400_000).div_ceil(1_000);
            let mut policy = Vec::new();
            let mut current = Vec::new();
            let mut add = |name: &str, limit: Option<u64>, used: u64, w: u64, reset_ms: u64| {
                if let Some(q) = limit {
                    policy.push(format!("\"{name}\";q={q};w={w}"));
                    current.push(format!(
                        "\"{name}\";r={};t={}",
                        q.saturating_sub(used),
                        reset_ms.div_ceil(1_000)
                    ));
                }
            };
            add("rpm", l.rpm, scope.minute.requests, minute_w, minute_reset);
            add("tpm", l.tpm, scope.minute.tokens, minute_w, minute_reset);
            add("rpd", l.rpd, scope.day.requests, day_w, day_reset);
            add("tpd", l.tpd, scope.day.tokens, day_w, day_reset);
            let requests = l
                .rpm
                .map(|q| (q, scope.minute.requests, minute_reset))
                .or(l.rpd.map(|q| (q, scope.day.requests, day_reset)));
            if let Some((q, used, reset)) = requests {
                out.push(("x-ratelimit-limit-requests".into(), q.to_string()));
                out.push((
                    "x-ratelimit-remaining-requests".into(),
                    q.saturating_sub(used).to_string(),
                ));
                out.push(("x-ratelimit-reset-requests".into(), go_duration(reset)));
            }
            let tokens = l
                .tpm
                .map(|q| (q, scope.minute.tokens, minute_reset))
                .or(l.tpd.map(|q| (q, scope.day.tokens, day_reset)));
            if let Some((q, used, reset)) = tokens {
                out.push(("x-ratelimit-limit-tokens".into(), q.to_string()));
                out.push((
                    "x-ratelimit-remaining-tokens".into(),
                    q.saturating_sub(used).to_string(),
                ));
                out.push(("x-ratelimit-reset-tokens".into(), go_duration(reset)));
            }
            if !policy.is_empty() {
                out.push(("ratelimit-policy".into(), policy.join(", ")));
                out.push(("ratelimit".into(), current.join(", ")));
            }
        }

        let mut compared = 0;
        for scale in [1.0, 60.0, 7.5] {
            let clock = ClientClock::new(scale, 1_767_225_600_123);
            for mask in 0u8..16 {
                let limit = |bit: u8, q: u64| (mask & bit != 0).then_some(q);
                let mut scope = ScopeState::new(ScopeLimits {
                    id: "s".into(),
                    rpm: limit(1, 5),
                    tpm: limit(2, 2_000),
                    rpd: limit(4, 9),
                    tpd: limit(8, 7_000),
                    concurrency: None,
                    count_rejected: false,
                    model: None,
                });
                for i in 0..40u64 {
                    let now = i * 4_567 + i * i * 1_001;
                    let _ = scope.admit(now, 150 + i * 13);
                    scope.refresh(now);
                    let mut old = Vec::new();
                    old_rate_limit(&clock, &scope, now, &mut old);
                    let mut new = Vec::new();
                    clock.rate_limit(&scope, now).write(&mut new);
                    assert_eq!(old, new, "scale {scale} mask {mask} #{i}");
                    for format in [
                        RetryAfterFormat::Seconds,
                        RetryAfterFormat::HttpDate,
                        RetryAfterFormat::Both,
                    ] {
                        let wait = i * 777 + 1;
                        let mut old = Vec::new();
                        old_retry_after(&clock, format, i, now, wait, &mut old);
                        let mut new = Vec::new();
                        clock.retry_after(format, i, now, wait).write(&mut new);
                        assert_eq!(old, new, "scale {scale} {format:?} #{i}");
                    }
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, 3 * 16 * 40);
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
        let clock = ClientClock::new(1.0, 1_700_000_000_000);
        let mut h = Vec::new();
        clock
            .retry_after(RetryAfterFormat::Seconds, 1, 500, 10_200)
            .write(&mut h);
        assert_eq!(h[0], ("retry-after".into(), "11".into()));
        assert_eq!(h[1], ("retry-after-ms".into(), "10200".into()));
        let mut h = Vec::new();
        clock
            .retry_after(RetryAfterFormat::HttpDate, 1, 500, 10_200)
            .write(&mut h);
        // 1_700_000_000_000 + 500 + 10_200 ms rounds up to second 1_700_000_011.
        let expect = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(1_700_000_011));
        assert_eq!(h[0].1, expect);
    }

    /// A wait that ends past year 9999 (a scenario's `retry_after = "10000y"`) is written
    /// as the last date an HTTP-date holds, where the formatter panicked.
    #[test]
    fn a_date_past_year_9999_is_written_as_the_last_one() {
        let clock = ClientClock::new(1.0, 1_700_000_000_000);
        let mut h = Vec::new();
        let ten_thousand_years = 10_000 * 365 * 86_400_000;
        clock
            .retry_after(RetryAfterFormat::HttpDate, 1, 0, ten_thousand_years)
            .write(&mut h);
        assert_eq!(h[0].1, "Fri, 31 Dec 9999 23:59:59 GMT");
        assert_eq!(h[1].1, ten_thousand_years.to_string());
    }

    #[test]
    fn time_scale_shrinks_emitted_waits() {
        let clock = ClientClock::new(60.0, 0);
        let mut h = Vec::new();
        clock
            .retry_after(RetryAfterFormat::Seconds, 0, 0, 60_000)
            .write(&mut h);
        assert_eq!(h[1].1, "1000");
        assert_eq!(h[0].1, "1");
    }
}
