//! Durations and rates as scenario files write them: `"2.8s"`, `"15m"`, `"500ms"`, `"10/s"`.
//!
//! Our own parser rather than humantime's because scenarios need fractions (`"2.8s"`), and
//! because the error must say what a valid value looks like.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A span of virtual time in milliseconds, written `"500ms"`, `"2.8s"`, `"15m"`, `"1h"`,
/// `"1d"` or combined (`"1m30s"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DurationMs(pub u64);

impl DurationMs {
    /// The span in milliseconds.
    pub fn ms(self) -> u64 {
        self.0
    }
}

/// What a valid duration looks like, for error messages.
pub const DURATION_HINT: &str = "write it like \"500ms\", \"2.8s\", \"15m\", \"1h\" or \"1m30s\"";

/// Parses a duration (see [`DurationMs`]) into milliseconds.
pub fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err(format!("empty duration: {DURATION_HINT}"));
    }
    let bad = || format!("bad duration {text:?}: {DURATION_HINT}");
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
            .ok_or_else(bad)?;
        if num_len == 0 {
            return Err(bad());
        }
        let number: f64 = rest[..num_len]
            .replace('_', "")
            .parse()
            .map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = rest[unit_len..].trim_start();
        let factor = match unit {
            "ms" => 1.0,
            "s" | "sec" | "secs" => 1_000.0,
            "m" | "min" | "mins" => 60_000.0,
            "h" | "hr" | "hours" => 3_600_000.0,
            "d" | "day" | "days" => 86_400_000.0,
            _ => return Err(bad()),
        };
        total += number * factor;
    }
    if !total.is_finite() || total > 1e15 {
        // Well formed, but past any span a run plays (1e15 ms is over 30,000 years).
        return Err(format!(
            "duration {text:?} is too long: give at most a few years, {DURATION_HINT}"
        ));
    }
    Ok(total.round() as u64)
}

/// Formats milliseconds the way a scenario would write them (`"2800ms"`, `"15m"`).
pub fn format_duration_ms(ms: u64) -> String {
    if ms == 0 {
        "0s".to_string()
    } else if ms % 3_600_000 == 0 {
        format!("{}h", ms / 3_600_000)
    } else if ms % 60_000 == 0 {
        format!("{}m", ms / 60_000)
    } else if ms % 1_000 == 0 {
        format!("{}s", ms / 1_000)
    } else {
        format!("{ms}ms")
    }
}

impl<'de> Deserialize<'de> for DurationMs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = DurationMs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a duration string ({DURATION_HINT})")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<DurationMs, E> {
                parse_duration_ms(v).map(DurationMs).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

impl Serialize for DurationMs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration_ms(self.0))
    }
}

/// A rate of events, written `"10/s"`, `"600/m"`, `"36000/h"`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Rate {
    /// Events per second.
    pub per_second: f64,
}

/// What a valid rate looks like, for error messages.
pub const RATE_HINT: &str = "write it like \"10/s\", \"600/m\" or \"0.5/s\"";

/// Parses a rate (see [`Rate`]).
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    let bad = || format!("bad rate {text:?}: {RATE_HINT}");
    let (count, per) = text.trim().split_once('/').ok_or_else(bad)?;
    let count: f64 = count.trim().replace('_', "").parse().map_err(|_| bad())?;
    let per = per.trim();
    let per_ms = match per {
        "s" | "sec" => 1_000,
        "m" | "min" => 60_000,
        "h" | "hour" => 3_600_000,
        other => parse_duration_ms(other).map_err(|_| bad())?,
    };
    if !count.is_finite() {
        return Err(format!(
            "bad rate {text:?}: the count must be a finite number ({RATE_HINT})"
        ));
    }
    if count <= 0.0 || per_ms == 0 {
        return Err(format!(
            "bad rate {text:?}: the rate must be above zero ({RATE_HINT})"
        ));
    }
    Ok(Rate {
        per_second: count * 1_000.0 / per_ms as f64,
    })
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Rate;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a rate string ({RATE_HINT})")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Rate, E> {
                parse_rate(v).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}/s", self.per_second))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_accept_fractions_units_and_combinations() {
        assert_eq!(parse_duration_ms("2.8s"), Ok(2_800));
        assert_eq!(parse_duration_ms("500ms"), Ok(500));
        assert_eq!(parse_duration_ms("15m"), Ok(900_000));
        assert_eq!(parse_duration_ms("1m30s"), Ok(90_000));
        assert_eq!(parse_duration_ms("1h"), Ok(3_600_000));
    }

    #[test]
    fn bad_durations_say_what_is_expected() {
        for bad in ["", "15", "fast", "3 parsecs", "s"] {
            let err = parse_duration_ms(bad).unwrap_err();
            assert!(err.contains("\"500ms\""), "{bad}: {err}");
        }
    }

    #[test]
    fn rates_convert_to_per_second() {
        assert_eq!(parse_rate("10/s").unwrap().per_second, 10.0);
        assert_eq!(parse_rate("600/m").unwrap().per_second, 10.0);
        assert_eq!(parse_rate("5/100ms").unwrap().per_second, 50.0);
        assert!(parse_rate("0/s").is_err());
        assert!(parse_rate("ten/s").unwrap_err().contains("10/s"));
    }
}
