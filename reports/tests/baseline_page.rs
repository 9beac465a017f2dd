//! With a baseline (`run --baseline`), the page, `summary.md` and the CI step summary show
//! both runs side by side, each figure marked better or worse by its direction, and the
//! expectations whose verdict changed.

use crate::common;

use std::fs;

use common::{synthetic_report, xml};
use stampede_reports::{render, RenderOptions, RunReport};

/// The synthetic run against a baseline with more retries (so fewer now is better), fewer
/// failures (so more now is worse), and the duplicates expectation passing in both while
/// deadline_misses held before and fails now.
fn with_baseline() -> RunReport {
    let mut report = synthetic_report(7);
    let mut before = report.summary.clone();
    before.retries = report.summary.retries + 100;
    before.failed = 10;
    before.wall_ms = 99;
    // A figure with no better direction that moved.
    before.logical_requests = report.summary.logical_requests + 5;
    for e in &mut before.expectations {
        if e.name == "deadline_misses" {
            e.pass = true;
            e.actual = 0.0;
        }
    }
    report.baseline = Some(before);
    report
}

/// `(class, direction cell)` of the comparison row for `key`.
fn comparison_row(html: &str, key: &str) -> (String, String) {
    let doc = xml::parse("index.html", html);
    let table = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("comparison"))
        .expect("a comparison table");
    let tr = table
        .descendants()
        .find(|n| n.has_tag_name("tr") && n.attribute("data-figure") == Some(key))
        .unwrap_or_else(|| panic!("no comparison row for {key}"));
    let cells: Vec<String> = tr
        .children()
        .filter(|c| c.has_tag_name("td"))
        .map(|c| xml::text_of(&c))
        .collect();
    (
        tr.attribute("class").unwrap_or_default().to_string(),
        cells.last().cloned().unwrap_or_default(),
    )
}

#[test]
fn the_page_shows_both_runs_each_figure_marked_better_or_worse() {
    let dir = tempfile::tempdir().unwrap();
    render(dir.path(), &with_baseline(), &RenderOptions::default()).unwrap();
    let html = fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert_eq!(
        comparison_row(&html, "retries"),
        ("better".to_string(), "↓ better".to_string())
    );
    assert_eq!(
        comparison_row(&html, "failed"),
        ("worse".to_string(), "↑ worse".to_string())
    );
    assert_eq!(comparison_row(&html, "completed").0, "same");
    // Moved, with no better direction: changed, never same (a script filtering on `same`
    // read a move from 3 to 3,000 as none).
    assert_eq!(
        comparison_row(&html, "logical_requests"),
        ("changed".to_string(), "↓".to_string())
    );
    let doc = xml::parse("index.html", &html);
    let flips = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("verdict-changes"))
        .expect("the verdict changes");
    let text = xml::text_of(&flips);
    assert!(text.contains("deadline_misses: pass → FAIL"), "{text}");
    assert!(
        !html.contains("data-figure=\"wall_ms\""),
        "wall time varies per run"
    );
}

#[test]
fn summary_md_and_the_step_summary_carry_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let step = dir.path().join("step.md");
    let opts = RenderOptions {
        github_step_summary: Some(step.clone()),
        ..RenderOptions::default()
    };
    render(dir.path(), &with_baseline(), &opts).unwrap();
    let md = fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(md.contains("### Compared with the baseline"), "{md}");
    assert!(md.contains("- `deadline_misses`: pass → **FAIL**"), "{md}");
    let failed = md
        .lines()
        .find(|l| l.starts_with("| `failed` |"))
        .expect("a row for failed");
    assert!(failed.ends_with("| **↑ worse** |"), "{failed}");
    let retries = md.lines().find(|l| l.starts_with("| `retries` |")).unwrap();
    assert!(
        retries.contains("| -100 |") && retries.ends_with("| ↓ better |"),
        "{retries}"
    );
    assert_eq!(fs::read_to_string(&step).unwrap(), md);
}

#[test]
fn the_comparison_is_the_same_bytes_whatever_the_wall_time() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = with_baseline();
    let mut second = first.clone();
    second.summary.wall_ms += 500;
    if let Some(base) = &mut second.baseline {
        base.wall_ms += 700;
    }
    render(a.path(), &first, &RenderOptions::default()).unwrap();
    render(b.path(), &second, &RenderOptions::default()).unwrap();
    for file in ["index.html", "summary.md"] {
        assert_eq!(
            fs::read(a.path().join(file)).unwrap(),
            fs::read(b.path().join(file)).unwrap(),
            "{file}"
        );
    }
    // Without a baseline there is no comparison at all.
    let c = tempfile::tempdir().unwrap();
    render(c.path(), &synthetic_report(7), &RenderOptions::default()).unwrap();
    assert!(!fs::read_to_string(c.path().join("index.html"))
        .unwrap()
        .contains("id=\"comparison\""));
    assert!(!fs::read_to_string(c.path().join("summary.md"))
        .unwrap()
        .contains("Compared with the baseline"));
}
