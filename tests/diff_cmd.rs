//! Comparing runs: `stampede diff BEFORE AFTER` and `stampede run ... --baseline DIR` print
//! each figure's change and the expectations whose verdict changed.

use std::path::Path;
use std::process::Output;

use crate::common;
use common::{a_str, quickstart, stampede, text};

/// Runs the quickstart on 16 workers (enough to overrun its 300 rpm), under `preset` into `out` (plus any
/// `extra` arguments); returns its output and its summary.json.
fn run(preset: &str, out: &Path, extra: &[&str]) -> (Output, serde_json::Value) {
    let qs = quickstart();
    let preset = format!("client.preset={preset}");
    let mut args = vec![
        "run",
        qs.as_str(),
        "--set",
        "client.workers=16",
        "--set",
        &preset,
        "--out",
        a_str(out),
        "--no-render",
    ];
    args.extend(extra);
    let output = stampede(&args);
    let summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    (output, summary)
}

/// The table row of `key`: `[before, after, change, ...]`.
fn row<'a>(table: &'a str, key: &str) -> Vec<&'a str> {
    let line = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(key))
        .unwrap_or_else(|| panic!("a row for {key} in:\n{table}"));
    line.split_whitespace().skip(1).collect()
}

#[test]
fn diff_prints_each_changed_figure_between_two_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("naive"), tmp.path().join("stampede"));
    let (_, before) = run("naive", &a, &[]);
    let (_, after) = run("stampede", &b, &[]);
    let out = stampede(&["diff", a_str(&a), a_str(&b)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("preset naive"), "{stdout}");
    assert!(stdout.contains("preset stampede"), "{stdout}");
    for key in ["outbound_attempts", "retries", "duplicates"] {
        let cells = row(&stdout, key);
        let (x, y) = (before[key].as_f64().unwrap(), after[key].as_f64().unwrap());
        assert_eq!(cells[0].parse::<f64>().unwrap(), x, "{key}: {stdout}");
        assert_eq!(cells[1].parse::<f64>().unwrap(), y, "{key}: {stdout}");
        let change: f64 = cells[2].trim_start_matches('+').parse().unwrap();
        assert_eq!(change, y - x, "{key}: {stdout}");
    }
    // The two presets differ in what they send, so the diff is not all zeros.
    assert_ne!(
        before["outbound_attempts"], after["outbound_attempts"],
        "the presets behave differently on this scenario"
    );
}

#[test]
fn run_with_a_baseline_prints_the_comparison_after_its_table() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    run("naive", &base, &[]);
    let later = tmp.path().join("later");
    let (out, after) = run("stampede", &later, &["--baseline", a_str(&base)]);
    let stdout = text(&out.stdout);
    let table = stdout
        .split_once("before: ")
        .map(|x| x.1)
        .unwrap_or_else(|| panic!("a comparison after the run table:\n{stdout}"));
    let cells = row(table, "outbound_attempts");
    assert_eq!(
        cells[1].parse::<f64>().unwrap(),
        after["outbound_attempts"].as_f64().unwrap()
    );
    assert!(
        table.contains("no expectation changed verdict")
            || table.contains("expectations that changed verdict:"),
        "{table}"
    );
}

#[test]
fn run_with_a_baseline_puts_the_comparison_on_the_page_in_summary_md_and_the_step_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    run("naive", &base, &[]);
    let later = tmp.path().join("later");
    let step = tmp.path().join("step-summary.md");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args([
            "run",
            &quickstart(),
            "--set",
            "client.workers=16",
            "--out",
            a_str(&later),
            "--baseline",
            a_str(&base),
        ])
        .env("GITHUB_STEP_SUMMARY", &step)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The stampede preset against the naive one: fewer attempts, marked better everywhere
    // a reviewer looks.
    let html = std::fs::read_to_string(later.join("index.html")).unwrap();
    assert!(
        html.contains("<tr data-figure=\"outbound_attempts\" class=\"better\">"),
        "no comparison row on the page"
    );
    let md = std::fs::read_to_string(later.join("summary.md")).unwrap();
    let attempts = md
        .lines()
        .find(|l| l.starts_with("| `outbound_attempts` |"))
        .unwrap_or_else(|| panic!("no comparison in summary.md:\n{md}"));
    assert!(attempts.ends_with("| ↓ better |"), "{attempts}");
    assert!(md.contains("preset naive"), "the baseline is named");
    assert_eq!(std::fs::read_to_string(&step).unwrap(), md);
}

#[test]
fn a_missing_run_directory_exits_2_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-run");
    let out = stampede(&["diff", a_str(&missing), a_str(&missing)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no-such-run"));
    let qs = quickstart();
    let out = stampede(&["run", &qs, "--baseline", a_str(&missing), "--no-render"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--baseline"));
}

/// A folder that exists but no run wrote (a typo one level up, a sweep's folder) is named as
/// not a run directory, not as a file that cannot be read.
#[test]
fn a_folder_without_a_summary_is_named_as_not_a_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let out = stampede(&["diff", a_str(tmp.path()), a_str(tmp.path())]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the earlier run: "), "{err}");
    assert!(
        err.contains(&format!(
            "{} is not a run directory: it holds no summary.json",
            tmp.path().display()
        )),
        "{err}"
    );
    let qs = quickstart();
    let out = stampede(&["run", &qs, "--baseline", a_str(tmp.path()), "--no-render"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is not a run directory"), "{err}");
}

#[test]
fn diff_exits_1_when_a_verdict_flips_to_fail_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let (good, bad) = (tmp.path().join("stampede"), tmp.path().join("naive"));
    run("stampede", &good, &[]);
    run("naive", &bad, &[]);
    let out = stampede(&["diff", a_str(&good), a_str(&bad)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("REGRESSION:") && stdout.contains("held before and fail now"),
        "{stdout}"
    );
    // Each figure's arrow says which way is worse.
    let line = stdout
        .lines()
        .find(|l| l.starts_with("outbound_attempts "))
        .unwrap();
    assert!(line.ends_with("↑ worse"), "{line}");
    // The other way round nothing failed that held.
    let out = stampede(&["diff", a_str(&bad), a_str(&good)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(!text(&out.stdout).contains("REGRESSION"));
}

#[test]
fn fail_on_regression_fails_when_a_figure_gets_worse_by_more_than_the_percentage() {
    let tmp = tempfile::tempdir().unwrap();
    let (good, bad) = (tmp.path().join("stampede"), tmp.path().join("naive"));
    run("stampede", &good, &[]);
    run("naive", &bad, &[]);
    // The same run twice: nothing moved.
    let out = stampede(&[
        "diff",
        a_str(&good),
        a_str(&good),
        "--fail-on-regression",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // naive after stampede: more attempts by far.
    let out = stampede(&[
        "diff",
        a_str(&good),
        a_str(&bad),
        "--fail-on-regression",
        "5",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("moved the wrong way by more than 5%")
            && stdout.contains("  outbound_attempts: "),
        "{stdout}"
    );
    let out = stampede(&[
        "diff",
        a_str(&good),
        a_str(&good),
        "--fail-on-regression",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
