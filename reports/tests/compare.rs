//! Comparing two runs, and reading a `summary.json` back.

use crate::common;

use std::fs;

use common::{expectation, synthetic_report};
use stampede_reports::{compare, read_summary, render_comparison, write_summary_json, ReportError};

#[test]
fn comparison_gives_before_after_change_and_percent_for_each_figure() {
    let before = synthetic_report(7).summary;
    let mut after = before.clone();
    after.preset = "stampede".into();
    after.outbound_attempts = before.outbound_attempts / 2;
    after.retry_waves = 0;
    after.duplicates = 2;
    after.status_counts.insert("dropped".into(), 5);
    after.status_counts.remove("503");

    let c = compare(&before, &after);
    let get = |k: &str| c.figures.iter().find(|f| f.key == k).unwrap();

    let oa = get("outbound_attempts");
    assert_eq!(oa.before, before.outbound_attempts as f64);
    assert_eq!(oa.after, after.outbound_attempts as f64);
    assert_eq!(oa.change(), oa.after - oa.before);
    let expected_pct = (oa.after - oa.before) / oa.before * 100.0;
    assert!((oa.percent().unwrap() - expected_pct).abs() < 1e-9);
    assert_eq!(oa.arrow(), "↓");

    assert_eq!(get("retry_waves").after, 0.0);
    let dup = get("duplicates");
    assert_eq!((dup.before, dup.after, dup.percent()), (0.0, 2.0, None));
    assert_eq!(dup.arrow(), "↑");
    assert_eq!(get("completed").arrow(), "=");
    // A status seen in only one of the runs is zero in the other.
    assert_eq!(get("status_counts.dropped").before, 0.0);
    assert_eq!(get("status_counts.503").after, 0.0);
    // wall_ms stays last: it is the one figure that is not deterministic.
    assert_eq!(c.figures.last().unwrap().key, "wall_ms");

    let text = render_comparison(&c);
    assert!(text.starts_with("before: synthetic-waves seed 7 preset naive (virtual)\n"));
    let line = text
        .lines()
        .find(|l| l.starts_with("outbound_attempts "))
        .unwrap();
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        cols,
        [
            "outbound_attempts",
            &before.outbound_attempts.to_string(),
            &after.outbound_attempts.to_string(),
            &format!("-{}", before.outbound_attempts - after.outbound_attempts),
            &format!("{}%", stampede_reports::fmt_num(expected_pct, 1)),
            "↓",
            "better"
        ]
    );
    let dup_line = text.lines().find(|l| l.starts_with("duplicates ")).unwrap();
    assert!(
        dup_line.contains("+2") && dup_line.contains("new") && dup_line.ends_with("↑ worse"),
        "{dup_line}"
    );
}

#[test]
fn arrows_say_which_way_is_better_and_regressions_are_found() {
    let before = synthetic_report(7).summary;
    let mut after = before.clone();
    after.completed = before.completed + 10;
    after.outbound_attempts = before.outbound_attempts + before.outbound_attempts / 5;
    after.latency_ms.p99 = before.latency_ms.p99 / 2;
    after.goodput_per_min = before.goodput_per_min / 2.0;
    after.tokens_used = before.tokens_used + 100;
    let c = compare(&before, &after);
    let get = |k: &str| c.figures.iter().find(|f| f.key == k).unwrap();
    assert_eq!(get("completed").improved(), Some(true));
    assert_eq!(get("outbound_attempts").improved(), Some(false));
    assert_eq!(get("latency_ms.p99").improved(), Some(true));
    assert_eq!(get("goodput_per_min").improved(), Some(false));
    assert_eq!(get("tokens_used").improved(), None);
    let text = render_comparison(&c);
    let line = |k: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(k))
            .unwrap()
            .to_string()
    };
    assert!(line("completed").ends_with("↑ better"), "{text}");
    assert!(line("outbound_attempts").ends_with("↑ worse"), "{text}");
    assert!(line("latency_ms.p99").ends_with("↓ better"), "{text}");
    assert!(line("tokens_used").ends_with('↑'), "{text}");
    // Attempts rose by 20 %, goodput fell by 50 %.
    let keys =
        |pct: f64| -> Vec<String> { c.regressions(pct).iter().map(|f| f.key.clone()).collect() };
    assert_eq!(keys(30.0), ["goodput_per_min"]);
    assert_eq!(keys(10.0), ["outbound_attempts", "goodput_per_min"]);
}

#[test]
fn comparison_lists_expectations_that_changed_verdict() {
    let mut before = synthetic_report(7).summary;
    before.expectations = vec![
        expectation("attempts_per_logical", "<= 1.2", 2.5, false),
        expectation("duplicates", "<= 0", 0.0, true),
        expectation("deadline_misses", "<= 0", 0.0, true),
    ];
    let mut after = before.clone();
    after.expectations = vec![
        expectation("attempts_per_logical", "<= 1.2", 1.05, true),
        expectation("duplicates", "<= 0", 0.0, true),
        expectation("retry_waves", "<= 0", 3.0, false),
    ];
    let c = compare(&before, &after);
    let changed: Vec<(&str, Option<bool>, Option<bool>)> = c
        .verdicts
        .iter()
        .map(|v| (v.name.as_str(), v.before, v.after))
        .collect();
    assert_eq!(
        changed,
        [
            ("attempts_per_logical", Some(false), Some(true)),
            ("retry_waves", None, Some(false)),
            ("deadline_misses", Some(true), None),
        ]
    );
    let text = render_comparison(&c);
    assert!(
        text.contains("  attempts_per_logical: FAIL -> pass (actual 2.5 -> 1.05, limit <= 1.2)")
    );
    assert!(text.contains("  retry_waves: absent -> FAIL"));

    let same = compare(&after, &after);
    assert!(same.verdicts.is_empty());
    assert!(render_comparison(&same).ends_with("no expectation changed verdict\n"));
}

#[test]
fn summary_round_trips_through_a_file_or_a_run_directory() {
    let dir = tempfile::tempdir().unwrap();
    let summary = synthetic_report(7).summary;
    let path = dir.path().join("summary.json");
    write_summary_json(&path, &summary).unwrap();
    assert_eq!(read_summary(&path).unwrap(), summary);
    assert_eq!(read_summary(dir.path()).unwrap(), summary);
    // Same summary, same bytes.
    let again = dir.path().join("again.json");
    write_summary_json(&again, &summary).unwrap();
    assert_eq!(fs::read(&path).unwrap(), fs::read(&again).unwrap());
}

#[test]
fn reading_a_missing_or_broken_summary_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope").join("summary.json");
    let err = read_summary(&missing).unwrap_err();
    assert!(matches!(err, ReportError::Io { .. }));
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );

    // A folder with no summary.json in it: not a run directory, said as such.
    let err = read_summary(dir.path()).unwrap_err();
    assert!(matches!(err, ReportError::NotARunDirectory { .. }), "{err}");
    assert!(err.to_string().contains("is not a run directory"), "{err}");

    let broken = dir.path().join("summary.json");
    fs::write(&broken, "{\"scenario\": 3}").unwrap();
    let err = read_summary(dir.path()).unwrap_err();
    assert!(matches!(err, ReportError::Json { .. }));
    let msg = err.to_string();
    assert!(msg.contains(&broken.display().to_string()), "{msg}");
    assert!(msg.contains("not a valid stampede summary"), "{msg}");
}

#[test]
fn the_comparison_says_what_rejected_counts() {
    let before = synthetic_report(7).summary;
    let mut after = before.clone();
    after.rejected = 37_714;
    let text = render_comparison(&compare(&before, &after));
    assert!(
        text.lines()
            .any(|l| l.starts_with("rejected (held back, offered again) ")),
        "{text}"
    );
}

/// A summary read from elsewhere may hold a status label of any length: the table cuts it
/// and stays aligned, where `format!`'s width (a u16) panicked past 65,535 characters.
#[test]
fn a_figure_name_longer_than_any_width_is_cut_not_a_panic() {
    let before = synthetic_report(7).summary;
    let mut after = before.clone();
    let long = "x".repeat(70_000);
    after.status_counts.insert(long.clone(), 1);
    let text = render_comparison(&compare(&before, &after));
    let line = text
        .lines()
        .find(|l| l.starts_with("status_counts.xxx"))
        .expect("the long status's row");
    assert!(
        line.chars().count() < 300,
        "cut: {} chars",
        line.chars().count()
    );
    assert!(line.contains('…'));
    // The rows stay aligned: the short figures' columns start where the cut one's do.
    let width = |l: &str| l.split("  ").next().map_or(0, |k| k.chars().count());
    let outbound = text
        .lines()
        .find(|l| l.starts_with("outbound_attempts "))
        .unwrap();
    // 120 characters and the ellipsis.
    assert_eq!(width(line), 121);
    assert!(outbound.chars().count() > width(line));
}
