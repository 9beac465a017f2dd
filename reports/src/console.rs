//! Terminal lines for the command: `stampede check` prints one line per scenario, and every
//! command that fails an expectation prints which one, with actual and limit.

use crate::number::{fmt_actual, fmt_num};
use crate::schema::{Expectation, Summary};

/// One line per scenario for `stampede check`: verdict, name, then the key figures.
/// Example: `PASS quickstart: 1.050 attempts/logical, 2100 outbound, 429: 12, 503: 0,
/// 0 duplicates, 0 deadline misses, 0 retry waves, 590.0 completed/min`.
pub fn check_line(summary: &Summary) -> String {
    let s = summary;
    let status = |code: &str| s.status_counts.get(code).copied().unwrap_or(0);
    let verdict = if s.expectations.iter().all(|e| e.pass) {
        "PASS"
    } else {
        "FAIL"
    };
    format!(
        "{verdict} {}: {} attempts/logical, {} outbound, 429: {}, 503: {}, {} duplicates, {} deadline misses, {} retry waves, {} completed/min",
        s.scenario,
        fmt_num(s.attempts_per_logical, 3),
        s.outbound_attempts,
        status("429"),
        status("503"),
        s.duplicates,
        s.deadline_misses,
        s.retry_waves,
        fmt_num(s.goodput_per_min, 1)
    )
}

/// One line per failed expectation: `FAIL attempts_per_logical: actual 1.336, limit <= 1.2`.
pub fn failed_expectation_lines(expectations: &[Expectation]) -> Vec<String> {
    expectations
        .iter()
        .filter(|e| !e.pass)
        .map(|e| {
            format!(
                "FAIL {}: actual {}, limit {}",
                e.name,
                fmt_actual(e.actual),
                e.limit
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(name: &str, actual: f64, pass: bool) -> Expectation {
        Expectation {
            name: name.into(),
            limit: "<= 1.2".into(),
            actual,
            pass,
        }
    }

    #[test]
    fn check_line_shows_verdict_name_and_figures() {
        let mut s = Summary {
            scenario: "quickstart".into(),
            attempts_per_logical: 1.05,
            outbound_attempts: 2100,
            goodput_per_min: 590.0,
            expectations: vec![exp("attempts_per_logical", 1.05, true)],
            ..Default::default()
        };
        s.status_counts.insert("429".into(), 12);
        assert_eq!(
            check_line(&s),
            "PASS quickstart: 1.050 attempts/logical, 2100 outbound, 429: 12, 503: 0, 0 duplicates, 0 deadline misses, 0 retry waves, 590.0 completed/min"
        );
        s.expectations.push(exp("duplicates", 1.0, false));
        assert!(check_line(&s).starts_with("FAIL quickstart: "));
    }

    #[test]
    fn only_failed_expectations_are_listed() {
        let lines = failed_expectation_lines(&[
            exp("attempts_per_logical", 1.336, false),
            exp("duplicates", 0.0, true),
        ]);
        assert_eq!(
            lines,
            ["FAIL attempts_per_logical: actual 1.336, limit <= 1.2"]
        );
    }
}
