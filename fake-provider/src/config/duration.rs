//! Durations in scenario files: humantime strings ("2.8s", "100ms", "1m 30s").

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A duration written as a humantime string in the scenario file, held in milliseconds.
///
/// Accepts what `humantime` accepts ("1m 30s", "250ms") plus decimal numbers with a unit
/// ("2.8s", "0.5m"), because latency medians are naturally fractional. Serializes back to a
/// string the parser reads again ("2s 800ms"), so a config round-trips through TOML and JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DurationMs(pub u64);

impl DurationMs {
    /// The duration in milliseconds.
    pub fn ms(self) -> u64 {
        self.0
    }

    /// Parses a duration string; the error says what was expected.
    pub fn parse(text: &str) -> Result<Self, String> {
        parse_duration_ms(text).map(DurationMs)
    }
}

impl fmt::Display for DurationMs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("0ms");
        }
        let d = std::time::Duration::from_millis(self.0);
        write!(f, "{}", humantime::format_duration(d))
    }
}

impl Serialize for DurationMs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for DurationMs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = DurationMs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration string such as \"2.8s\", \"100ms\" or \"1m 30s\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<DurationMs, E> {
                DurationMs::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_str(Visitor)
    }
}

/// Parses "2.8s", "100ms", "1m 30s", "1h", "1d"; returns milliseconds (rounded to nearest).
fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("empty duration: write e.g. \"100ms\" or \"2.8s\"".to_string());
    }
    if trimmed.starts_with('-') {
        return Err(format!(
            "duration {text:?} is negative: a duration is a length of time, 0 or more"
        ));
    }
    if let Ok(d) = humantime::parse_duration(trimmed) {
        return u64::try_from(d.as_millis()).map_err(|_| format!("duration {text:?} is too long"));
    }
    // Fallback for decimals: a sequence of <number><unit> parts, e.g. "2.8s" or "1.5m 10s".
    let mut total = 0f64;
    for part in trimmed.split_whitespace() {
        let split = part
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| {
                format!("duration {text:?} has no unit: write e.g. \"{part}ms\" or \"{part}s\"")
            })?;
        let (number, unit) = part.split_at(split);
        let value: f64 = number
            .parse()
            .map_err(|_| format!("duration {text:?}: {number:?} is not a number"))?;
        let unit_ms = match unit {
            "ms" | "msec" => 1.0,
            "s" | "sec" | "secs" => 1_000.0,
            "m" | "min" | "mins" => 60_000.0,
            "h" | "hr" | "hours" => 3_600_000.0,
            "d" | "day" | "days" => 86_400_000.0,
            other => {
                return Err(format!(
                    "duration {text:?}: unknown unit {other:?} (use ms, s, m, h or d)"
                ))
            }
        };
        total += value * unit_ms;
    }
    if !total.is_finite() || total > 1e15 {
        return Err(format!("duration {text:?} is too long"));
    }
    Ok(total.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_humantime_and_decimal_forms() {
        assert_eq!(DurationMs::parse("100ms").unwrap().ms(), 100);
        assert_eq!(DurationMs::parse("2.8s").unwrap().ms(), 2_800);
        assert_eq!(DurationMs::parse("1m 30s").unwrap().ms(), 90_000);
        assert_eq!(DurationMs::parse("1.5m 10s").unwrap().ms(), 100_000);
        assert!(DurationMs::parse("12").unwrap_err().contains("no unit"));
        assert!(DurationMs::parse("3 parsecs").is_err());
        // Said in words, where it read `"" is not a number`.
        assert!(DurationMs::parse("-5s")
            .unwrap_err()
            .contains("is negative"));
    }

    #[test]
    fn display_round_trips() {
        for ms in [0, 1, 999, 2_800, 90_000, 86_400_000] {
            let d = DurationMs(ms);
            assert_eq!(DurationMs::parse(&d.to_string()).unwrap(), d);
        }
    }
}
