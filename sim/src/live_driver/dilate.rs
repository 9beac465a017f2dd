//! Time-bearing response headers, from the client's real time into scenario time.
//!
//! A provider running `scale` times faster than the scenario says "retry after 1 s" when
//! the scenario means a minute. The core works in scenario time (see `clock`), so the
//! driver stretches every duration the provider states back by the scale before the core
//! reads it: `retry-after-ms`, `retry-after` (delta-seconds or HTTP-date),
//! `x-ratelimit-reset-*`, `ratelimit-reset`, and the `t`/`w`/`reset` parameters of the IETF
//! `RateLimit` and `RateLimit-Policy` fields. Everything is rounded up, so a client that
//! honours the stretched wait never arrives before the provider's own.

use std::time::{Duration, UNIX_EPOCH};

use stampede_core::rate_headers::parse_duration_ms;
use stampede_core::retry_after::decimal_parts;
use stampede_provider::model::LAST_HTTP_DATE_UNIX_S;

/// Where real wall time and scenario wall time meet, for HTTP-dates.
#[derive(Debug, Clone, Copy)]
pub struct Dilation {
    /// Scenario ms per real ms.
    pub scale: f64,
    /// Unix ms (real) when the run's clock read 0.
    pub real_start_unix_ms: u64,
    /// Unix ms the core takes scenario time 0 to be (`Policy::wall_epoch_unix_ms`).
    pub scenario_epoch_unix_ms: u64,
}

/// A non-negative decimal as the core reads one (`"10"`, `"1.5"`, `".5"`): digits and at
/// most one dot, no sign, no exponent. What the core would ignore is left as it is, so a
/// header reads the same at every time scale (`"1e3"` once became 60,000 ms at 60).
fn plain_decimal(text: &str) -> Option<f64> {
    decimal_parts(text)?;
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

impl Dilation {
    fn stretch_ms(&self, real_ms: f64) -> u64 {
        (real_ms * self.scale).ceil().max(0.0) as u64
    }

    /// Rewrites `headers` (names lower-case) in place into scenario time.
    pub fn apply(&self, headers: &mut [(String, String)]) {
        if self.scale == 1.0 {
            return;
        }
        for (name, value) in headers.iter_mut() {
            let stretched = match name.as_str() {
                "retry-after-ms" => {
                    plain_decimal(value.trim()).map(|v| self.stretch_ms(v).to_string())
                }
                "retry-after" => self.retry_after(value.trim()),
                "x-ratelimit-reset-requests" | "x-ratelimit-reset-tokens" => {
                    parse_duration_ms(value).map(|ms| format!("{}ms", self.stretch_ms(ms as f64)))
                }
                "ratelimit-reset" => self.seconds(value.trim()),
                "ratelimit" | "ratelimit-policy" => Some(self.parameters(value)),
                _ => None,
            };
            if let Some(v) = stretched {
                *value = v;
            }
        }
    }

    /// Whole seconds (or a decimal), stretched and rounded up to whole seconds.
    fn seconds(&self, text: &str) -> Option<String> {
        let secs = plain_decimal(text)?;
        Some(self.stretch_ms(secs * 1_000.0).div_ceil(1_000).to_string())
    }

    fn retry_after(&self, text: &str) -> Option<String> {
        if let Some(s) = self.seconds(text) {
            return Some(s);
        }
        let date = httpdate::parse_http_date(text).ok()?;
        let date_ms = date.duration_since(UNIX_EPOCH).ok()?.as_millis() as f64;
        let ahead_ms = date_ms - self.real_start_unix_ms as f64;
        let scenario_ms = self.scenario_epoch_unix_ms as f64 + ahead_ms * self.scale;
        // An HTTP-date ends with year 9999: a date stretched past it is written as that.
        let secs = ((scenario_ms / 1_000.0).ceil().max(0.0) as u64).min(LAST_HTTP_DATE_UNIX_S);
        Some(httpdate::fmt_http_date(
            UNIX_EPOCH + Duration::from_secs(secs),
        ))
    }

    /// `"rpm";r=5;t=30, "tpm";q=10;w=60` or `limit=100, remaining=50, reset=30`: the
    /// time parameters (`t`, `w`, `reset`, in seconds) stretched, the rest kept.
    fn parameters(&self, value: &str) -> String {
        value
            .split(',')
            .map(|item| {
                item.split(';')
                    .map(|part| {
                        let trimmed = part.trim();
                        let lead = &part[..part.len() - part.trim_start().len()];
                        match trimmed.split_once('=') {
                            Some((key @ ("t" | "w" | "reset"), v)) => {
                                match self.seconds(v.trim()) {
                                    Some(s) => format!("{lead}{key}={s}"),
                                    None => part.to_string(),
                                }
                            }
                            _ => part.to_string(),
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(";")
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dilation() -> Dilation {
        Dilation {
            scale: 60.0,
            real_start_unix_ms: 1_800_000_000_000,
            scenario_epoch_unix_ms: 1_767_225_600_000,
        }
    }

    fn one(name: &str, value: &str) -> String {
        let mut h = vec![(name.to_string(), value.to_string())];
        dilation().apply(&mut h);
        h.remove(0).1
    }

    /// What the core would not read is left for it to ignore, whatever the scale; a date
    /// stretched past year 9999 is written as the last one an HTTP-date can hold (it
    /// panicked in the date formatter).
    #[test]
    fn values_the_core_ignores_stay_and_dates_stay_writable() {
        for odd in ["1e3", "-0", "1e30", "+5", "inf", "NaN", ""] {
            assert_eq!(one("retry-after-ms", odd), odd);
            assert_eq!(one("retry-after", odd), odd);
        }
        assert_eq!(
            one("retry-after", "Sat, 01 Jan 2400 00:00:00 GMT"),
            "Fri, 31 Dec 9999 23:59:59 GMT"
        );
    }

    #[test]
    fn waits_stretch_by_the_scale_and_round_up() {
        assert_eq!(one("retry-after-ms", "250"), "15000");
        assert_eq!(one("retry-after-ms", "0.5"), "30");
        assert_eq!(one("retry-after", "1"), "60");
        assert_eq!(one("x-ratelimit-reset-requests", "250ms"), "15000ms");
        assert_eq!(one("x-ratelimit-reset-tokens", "1.5s"), "90000ms");
        assert_eq!(one("ratelimit-reset", "2"), "120");
        assert_eq!(
            one("ratelimit", "\"rpm\";r=5;t=1, \"tpm\";r=9;t=2"),
            "\"rpm\";r=5;t=60, \"tpm\";r=9;t=120"
        );
        assert_eq!(
            one("ratelimit-policy", "\"rpm\";q=300;w=1"),
            "\"rpm\";q=300;w=60"
        );
        assert_eq!(one("x-ratelimit-remaining-requests", "7"), "7");
    }

    #[test]
    fn an_http_date_moves_onto_the_scenario_wall_clock() {
        let d = dilation();
        // Two real seconds after the run started is two scenario minutes after its epoch.
        let real = UNIX_EPOCH + Duration::from_millis(d.real_start_unix_ms + 2_000);
        let out = one("retry-after", &httpdate::fmt_http_date(real));
        let parsed = httpdate::parse_http_date(&out).unwrap();
        let ms = parsed.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        assert_eq!(ms, d.scenario_epoch_unix_ms + 120_000);
    }

    #[test]
    fn a_scale_of_one_changes_nothing() {
        let mut h = vec![("retry-after".to_string(), "3".to_string())];
        Dilation {
            scale: 1.0,
            ..dilation()
        }
        .apply(&mut h);
        assert_eq!(h[0].1, "3");
    }
}
