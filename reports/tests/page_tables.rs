//! The page's breakdown tables: outcomes by class, tenant and route with percentiles
//! (Gatling's OK/KO), and errors by status and message with first and last seen; the same in
//! the markdown summary.

use crate::common;

use std::fs;

use common::synthetic_report;
use stampede_reports::{render, ErrorCount, GroupOutcomes, Percentiles, RenderOptions, RunReport};

fn group(requests: u64, completed: u64, failed: u64, attempts: u64, p50: u64) -> GroupOutcomes {
    GroupOutcomes {
        logical_requests: requests,
        completed,
        failed,
        attempts,
        latency_ms: Percentiles {
            p50,
            p95: p50 * 2,
            p99: p50 * 3,
            max: p50 * 4,
        },
        queue_wait_ms: Percentiles {
            p50: 100,
            p95: 200,
            p99: 300,
            max: 400,
        },
        ..GroupOutcomes::default()
    }
}

fn report() -> RunReport {
    let mut r = synthetic_report(7);
    let s = &mut r.summary;
    s.by_class
        .insert("llm".into(), group(2_000, 1_990, 10, 2_400, 2_900));
    s.by_class
        .insert("tool".into(), group(1_000, 960, 40, 1_300, 400));
    s.by_tenant
        .insert("acme <eu>".into(), group(3_000, 2_950, 50, 3_700, 2_000));
    s.by_route.insert(
        "POST /v1/chat/completions".into(),
        group(2_000, 1_990, 10, 2_400, 2_900),
    );
    s.errors = vec![
        ErrorCount {
            status: "429".into(),
            message: "rate_limit_exceeded".into(),
            count: 57,
            first_ms: 60_000,
            last_ms: 65_500,
        },
        ErrorCount {
            status: "dropped".into(),
            message: String::new(),
            count: 2,
            first_ms: 121_000,
            last_ms: 170_000,
        },
    ];
    r
}

/// The cells of the row named `row` in the table with id `table`.
fn row_cells(html: &str, id: &str, row: &str) -> Vec<String> {
    let doc = common::xml::parse("index.html", html);
    let table = doc
        .descendants()
        .find(|n| n.has_tag_name("table") && n.attribute("id") == Some(id))
        .unwrap_or_else(|| panic!("no table {id}"));
    let tr = table
        .descendants()
        .find(|n| n.has_tag_name("tr") && n.attribute("data-row") == Some(row))
        .unwrap_or_else(|| panic!("no row {row} in {id}"));
    tr.children()
        .filter(|c| c.has_tag_name("td"))
        .map(|c| c.text().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn the_page_has_outcomes_by_class_tenant_and_route_with_percentiles() {
    let dir = tempfile::tempdir().unwrap();
    render(dir.path(), &report(), &RenderOptions::default()).unwrap();
    let html = fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert_eq!(
        row_cells(&html, "by-class", "llm"),
        [
            "llm", "2,000", "1,990", "10", "0", "0", "0", "2,400", "2,900", "5,800", "8,700",
            "100", "300"
        ]
    );
    assert_eq!(row_cells(&html, "by-class", "tool")[3], "40");
    // Names from the scenario are escaped.
    assert_eq!(row_cells(&html, "by-tenant", "acme <eu>")[1], "3,000");
    assert_eq!(
        row_cells(&html, "by-route", "POST /v1/chat/completions")[2],
        "1,990"
    );
    assert!(html.contains("<th>completed (OK)</th><th>failed (KO)</th>"));
}

#[test]
fn the_page_lists_errors_by_status_and_message_with_first_and_last_seen() {
    let dir = tempfile::tempdir().unwrap();
    render(dir.path(), &report(), &RenderOptions::default()).unwrap();
    let html = fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert_eq!(
        row_cells(&html, "errors", "429"),
        ["429", "rate_limit_exceeded", "57", "60 s", "65.5 s"]
    );
    assert_eq!(
        row_cells(&html, "errors", "dropped"),
        ["dropped", "(no error code)", "2", "121 s", "170 s"]
    );
    let md = fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(
        md.contains("| `429` | `rate_limit_exceeded` | 57 | 60 s | 65.5 s |"),
        "{md}"
    );
    assert!(md.contains("| `llm` | 2,000 | 1,990 | 10 |"), "{md}");
    assert!(md.contains("| `acme <eu>` | 3,000 |"), "{md}");
}

#[test]
fn a_run_without_errors_says_so_and_a_client_run_has_no_outcome_tables() {
    let dir = tempfile::tempdir().unwrap();
    let calm = synthetic_report(7);
    render(dir.path(), &calm, &RenderOptions::default()).unwrap();
    let html = fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert!(html.contains("Every attempt was answered with success."));
    assert!(!html.contains("id=\"by-class\""));
    assert!(!html.contains("<table id=\"errors\""));
}
