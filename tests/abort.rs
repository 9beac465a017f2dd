//! `abort = true` on an expectation: a long run ends as soon as the expectation can no
//! longer hold (k6's abortOnFail), its run directory is written in full for the part
//! played, and the summary, the page, summary.md, the console and JUnit say so. Without
//! `abort` the same scenario plays to its end; on a figure that can fall it is refused.

use std::path::Path;

use crate::common;
use common::{a_str, repo, stampede, text};

/// backlog-38k with its last expectation (`retry_after_violations = 0`) replaced by `last`.
fn backlog_with(last: &str) -> String {
    let shipped = std::fs::read_to_string(repo().join("scenarios").join("backlog-38k.toml"))
        .expect("backlog-38k.toml");
    assert!(shipped.contains("\nretry_after_violations = 0\n"));
    shipped.replace("\nretry_after_violations = 0\n", &format!("\n{last}\n"))
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// Runs `text` as a scenario under the naive preset into `dir/run`; returns the output.
fn run_naive(dir: &Path, text: &str) -> std::process::Output {
    let file = dir.join("backlog.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("run");
    stampede(&[
        "run",
        a_str(&file),
        "--set",
        "client.preset=naive",
        "--out",
        a_str(&out),
    ])
}

#[test]
fn an_expectation_that_can_no_longer_hold_ends_the_run_early() {
    let tmp = tempfile::tempdir().unwrap();
    let output = run_naive(
        tmp.path(),
        &backlog_with("retry_after_violations = { max = 100, abort = true }"),
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let dir = tmp.path().join("run");
    let s = summary(&dir);

    let aborted = &s["aborted"];
    assert_eq!(aborted["expectation"], "retry_after_violations", "{s}");
    let at_ms = aborted["at_ms"].as_u64().unwrap();
    // The full naive run plays for more than an hour of virtual time (below); this one
    // stops within its first minute, when the figure passes 100.
    assert!(at_ms < 60_000, "aborted at {at_ms} ms");
    assert_eq!(s["virtual_duration_ms"].as_u64(), Some(at_ms));
    assert!(s["retry_after_violations"].as_u64().unwrap() > 100);
    let verdict = s["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "retry_after_violations")
        .unwrap();
    assert_eq!(verdict["pass"], false);

    // Nothing measured is lost: every file of a run directory, for the part played.
    let attempts = std::fs::read_to_string(dir.join("attempts.csv")).unwrap();
    assert_eq!(
        attempts.lines().count() as u64 - 1,
        s["outbound_attempts"].as_u64().unwrap(),
        "one attempts.csv row per attempt that reached the provider"
    );
    let unfinished = std::fs::read_to_string(dir.join("unfinished.csv")).unwrap();
    assert_eq!(
        unfinished.lines().count() as u64 - 1,
        s["unfinished"].as_u64().unwrap()
    );
    assert_eq!(
        s["completed"].as_u64().unwrap() + s["unfinished"].as_u64().unwrap(),
        38_000,
        "what did not finish before the abort is listed as open, not failed"
    );
    for file in [
        "timeseries.csv",
        "tenants.csv",
        "index.html",
        "summary.md",
        "junit.xml",
    ] {
        assert!(dir.join(file).is_file(), "{file} is written");
    }

    // Everyone who reads the run is told.
    assert!(
        stdout.contains("aborted at ")
            && stdout.contains("FAIL retry_after_violations: actual ")
            && stdout.contains("(aborted the run at "),
        "{stdout}"
    );
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let case = doc
        .descendants()
        .find(|n| n.attribute("name") == Some("retry_after_violations"))
        .unwrap();
    let failure = case
        .children()
        .find(|n| n.has_tag_name("failure"))
        .expect("the aborting expectation is a failed test case");
    assert!(
        failure
            .attribute("message")
            .unwrap()
            .starts_with("ABORTED the run at "),
        "{junit}"
    );
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let page = roxmltree::Document::parse_with_options(&page, opts).expect("well-formed page");
    let banner = page
        .descendants()
        .find(|n| n.attribute("id") == Some("aborted"))
        .expect("the page says the run was aborted");
    assert_eq!(
        banner.attribute("data-at-ms"),
        Some(at_ms.to_string().as_str())
    );
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("aborted at ") && md.contains("(aborted the run)"),
        "{md}"
    );

    // Same seed, same bytes: the abort is part of the deterministic run.
    let again = tempfile::tempdir().unwrap();
    run_naive(
        again.path(),
        &backlog_with("retry_after_violations = { max = 100, abort = true }"),
    );
    let mut first = s.clone();
    let mut second = summary(&again.path().join("run"));
    first["wall_ms"] = 0.into();
    second["wall_ms"] = 0.into();
    assert_eq!(first, second);
}

#[test]
fn without_abort_the_same_run_plays_to_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let output = run_naive(
        tmp.path(),
        &backlog_with("retry_after_violations = { max = 100 }"),
    );
    assert_eq!(output.status.code(), Some(1));
    let s = summary(&tmp.path().join("run"));
    assert!(
        s.get("aborted").is_none(),
        "no abort key when the run played out"
    );
    assert!(
        s["virtual_duration_ms"].as_u64().unwrap() > 3_600_000,
        "the naive backlog plays past its 75 min deadline: {}",
        s["virtual_duration_ms"]
    );
    assert!(!text(&output.stdout).contains("aborted"));
}

#[test]
fn check_marks_the_aborting_expectation_in_its_junit() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("scenarios");
    std::fs::create_dir_all(&folder).unwrap();
    let text_ = backlog_with("retry_after_violations = { max = 100, abort = true }")
        .replace("preset = \"stampede\"", "preset = \"naive\"");
    std::fs::write(folder.join("backlog.toml"), text_).unwrap();
    let out = tmp.path().join("out");
    let output = stampede(&["check", a_str(&folder), "--out", a_str(&out)]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("    aborted at "),
        "{}",
        text(&output.stdout)
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("message=\"ABORTED the run at "), "{junit}");
}

#[test]
fn abort_on_a_figure_that_can_fall_is_refused_with_file_line_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    for (expect, key, words) in [
        (
            "latency_ms.p99 = { max = 5000, abort = true }",
            "expect.latency_ms.p99.abort",
            "can fall as well as rise",
        ),
        (
            "goodput_per_min = { max = 1000, abort = true }",
            "expect.goodput_per_min.abort",
            "can fall as well as rise",
        ),
        (
            "failed = { min = 3, abort = true }",
            "expect.failed.abort",
            "needs a max",
        ),
        (
            "failed = { max = 3, abort = \"yes\" }",
            "expect.failed.abort",
            "true or false",
        ),
    ] {
        let scenario = backlog_with(expect);
        let line = scenario
            .lines()
            .position(|l| l == expect)
            .expect("the expectation is written")
            + 1;
        let file = tmp.path().join("bad.toml");
        std::fs::write(&file, &scenario).unwrap();
        let output = stampede(&["validate", a_str(&file)]);
        assert_eq!(output.status.code(), Some(2), "{expect}");
        let err = text(&output.stderr);
        assert!(
            err.contains(&format!("bad.toml:{line}: key `{key}`")) && err.contains(words),
            "{expect}: {err}"
        );
    }
}

/// An SDK client (played by `sdk_client`, not the core) is stopped the same way.
#[test]
fn an_sdk_client_run_aborts_too() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("backlog.toml");
    std::fs::write(
        &file,
        backlog_with("status_counts.429 = { max = 100, abort = true }"),
    )
    .unwrap();
    let out = tmp.path().join("run");
    let output = stampede(&[
        "run",
        a_str(&file),
        "--set",
        "client.preset=openai-python",
        "--out",
        a_str(&out),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let s = summary(&out);
    assert_eq!(s["aborted"]["expectation"], "status_counts.429", "{s}");
    assert!(s["status_counts"]["429"].as_u64().unwrap() > 100);
    assert!(s["aborted"]["at_ms"].as_u64().unwrap() < 30 * 60_000);
}

/// A small scenario whose provider answers every call with `status` (a fault on every
/// attempt), so what fails does not depend on timing: 200 LLM calls, a 10 minute cap.
fn refusing(status: u16, expect: &str) -> String {
    format!(
        r#"name = "refusing"
seed = 5
duration = "10m"

[provider]
latency = {{ fixed = "200ms" }}

[[provider.scopes]]
id = "account:r"

[[provider.credentials]]
key = "sk-r-key"
scope = "account:r"

[[provider.faults]]
status = {status}
retry_after = "1s"

[[workload]]
tenant = "r"
credential = "sk-r-key"
class = "llm"
count = 200
arrival = {{ rate = "2/s" }}

[client]
preset = "naive"
workers = 8

[expect]
{expect}
"#
    )
}

/// A live run stops on a figure it counts itself (`failed`: every call is refused with a
/// 400, which is not retried) and on one it reads from the provider's journal while playing
/// (`status_counts.429`: every attempt is refused with a 429), long before its cap.
#[test]
fn a_live_run_aborts_on_its_own_figures_and_on_the_journals() {
    use stampede_sim::live_driver::{run_live, LiveOptions};
    use stampede_sim::run::RunOptions;
    use stampede_sim::scenario;

    for (status, expect, key) in [
        (400, "failed = { max = 5, abort = true }", "failed"),
        (
            429,
            "status_counts.429 = { max = 40, abort = true }",
            "status_counts.429",
        ),
    ] {
        let scenario = scenario::parse(&refusing(status, expect), "refusing.toml", &[]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let opts = RunOptions {
            out_dir: Some(dir.path().to_path_buf()),
            ..RunOptions::default()
        };
        let (outcome, _) = run_live(&scenario, &LiveOptions::default(), &opts).expect("live run");
        let s = &outcome.report.summary;
        let aborted = s
            .aborted
            .as_ref()
            .unwrap_or_else(|| panic!("{expect}: not aborted: {s:?}"));
        assert_eq!(aborted.expectation, key);
        assert_eq!(s.mode, "live");
        // Arrivals come at 2 a second for 100 s; the figure passes its max within the first
        // tens of them, whatever the machine's load does to the timing.
        assert!(
            aborted.at_ms < 100_000,
            "{expect}: aborted at {} ms",
            aborted.at_ms
        );
        assert!(
            s.logical_requests < 200,
            "{expect}: stopped before the workload ended"
        );
        assert!(!outcome.passed());
        let attempts = std::fs::read_to_string(dir.path().join("attempts.csv")).unwrap();
        assert_eq!(attempts.lines().count() as u64 - 1, s.outbound_attempts);
    }
}
