//! What a person reads off the run's plots: service time and queue wait apart, the backlog
//! beside what is in flight and not cut off at any queue bound, one unit per axis, and the
//! value of a point under the pointer (an SVG `<title>`, no script).

use crate::common;

use std::fs;
use std::path::Path;

use common::synthetic_report;
use stampede_reports::{render, RenderOptions, RunReport};

fn render_to(dir: &Path, report: &RunReport) {
    render(dir, report, &RenderOptions::default()).expect("render");
}

fn read(dir: &Path, file: &str) -> String {
    fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The hover titles of a plot, in document order.
fn titles(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("the plot is XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter(|n| n.parent().is_some_and(|p| p.has_tag_name("circle")))
        .map(|n| n.text().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn every_plotted_point_names_its_value_on_hover() {
    let dir = tempfile::tempdir().unwrap();
    render_to(dir.path(), &synthetic_report(7));
    for plot in [
        "attempts.svg",
        "queue.svg",
        "tokens.svg",
        "service.svg",
        "queue_wait.svg",
        "latency.svg",
        "tenants.svg",
    ] {
        let titles = titles(&read(dir.path(), plot));
        assert!(!titles.is_empty(), "{plot} has no hover values");
        assert!(
            titles
                .iter()
                .all(|t| t.contains(": ") && t.contains(" at ")),
            "{plot}: {:?}",
            &titles[..3.min(titles.len())]
        );
    }
    // The backlog's first point: 3,000 requests at the start.
    let queue = titles(&read(dir.path(), "queue.svg"));
    assert!(
        queue.contains(&"backlog: arrived, not yet sent: 3,000 requests at 0 s".to_string()),
        "{:?}",
        &queue[..3]
    );
    // Targets are invisible: the page looks the same, only the pointer finds them.
    let svg = read(dir.path(), "latency.svg");
    assert!(svg.contains("<g class=\"hover\" fill=\"#000000\" fill-opacity=\"0\">"));
}

#[test]
fn the_backlog_is_drawn_to_its_height_beside_a_bounded_queue() {
    let dir = tempfile::tempdir().unwrap();
    let report = synthetic_report(7);
    let deepest_queue = report
        .timeseries
        .iter()
        .map(|r| r.queue_depth)
        .max()
        .unwrap();
    assert!(deepest_queue < 200, "the client's queue is bounded");
    render_to(dir.path(), &report);
    let values: Vec<f64> = titles(&read(dir.path(), "queue.svg"))
        .iter()
        .filter_map(|t| t.strip_prefix("backlog: arrived, not yet sent: "))
        .filter_map(|t| t.split(' ').next())
        .map(|v| v.replace(',', "").parse().unwrap())
        .collect();
    assert_eq!(values.iter().copied().fold(0.0, f64::max), 3_000.0);
    let last = values.last().copied().unwrap();
    assert!(last <= 10.0, "and seen draining: {last} left at the end");
}

#[test]
fn no_run_plot_puts_two_units_on_one_chart() {
    let dir = tempfile::tempdir().unwrap();
    render_to(dir.path(), &synthetic_report(7));
    for entry in fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "svg") {
            let svg = fs::read_to_string(&path).unwrap();
            assert!(
                !svg.contains("right axis") && !svg.contains("left axis"),
                "{} has twin axes",
                path.display()
            );
        }
    }
    // Tokens: a level in tokens and a rate in tokens/s, each on a panel of its own.
    let tokens = read(dir.path(), "tokens.svg");
    let doc = roxmltree::Document::parse(&tokens).unwrap();
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    assert!(texts.contains(&"tokens reserved (tokens)"), "{texts:?}");
    assert!(texts.contains(&"tokens used (tokens/s)"));
}

#[test]
fn service_time_and_queue_wait_have_plots_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    render_to(dir.path(), &synthetic_report(7));
    let service = titles(&read(dir.path(), "service.svg"));
    assert!(
        service.iter().any(|t| t.starts_with("p50: 2,")),
        "{:?}",
        &service[..2]
    );
    assert!(service.iter().all(|t| t.contains(" ms at ")));
    // The queue wait grows to 36 s: drawn in seconds.
    let wait = titles(&read(dir.path(), "queue_wait.svg"));
    assert!(
        wait.contains(&"p99: 35.9 s at 299 s".to_string()),
        "{:?}",
        wait.last()
    );
}
