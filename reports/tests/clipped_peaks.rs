//! One bucket far above the rest (a naive backlog's last second) must not flatten a plot: the
//! y axis fits the bulk, the bucket is drawn at the top edge with a marker, and a note in the
//! plot names it. A plot without such a bucket keeps the axis it always had.

use crate::common;

use std::fs;
use std::path::Path;

use common::xml::{parse, points, texts, with_class};
use stampede_reports::{render, RenderOptions, RunReport};

/// Height (px) of the attempts plot's first panel, the breakdown by answer.
const BREAKDOWN_PX: f64 = 400.0;

fn render_svg(report: &RunReport, file: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    render(dir.path(), report, &RenderOptions::default()).expect("render");
    read(dir.path(), file)
}

fn read(dir: &Path, file: &str) -> String {
    fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("reading {file}: {e}"))
}

/// 25 minutes of one-second buckets (an axis in minutes) with the last bucket's attempts set
/// to `attempts`, all refused with 429.
fn with_last_bucket(attempts: u64) -> RunReport {
    let mut report = common::synthetic_report_of(7, 1500);
    let last = report.timeseries.last_mut().unwrap();
    last.attempts = attempts;
    last.status_2xx = 0;
    last.status_503 = 0;
    last.status_429 = attempts;
    report
}

/// The value at the top of the first panel's left axis, from its tick labels: the labels
/// (`text-anchor="end"` left of the plot) give value per pixel, the axis line gives the top.
fn first_panel_axis_top(svg: &str) -> f64 {
    let doc = parse("attempts.svg", svg);
    let ticks: Vec<(f64, f64)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text") && n.attribute("text-anchor") == Some("end"))
        .filter_map(|n| {
            let y: f64 = n.attribute("y")?.parse().ok()?;
            let v: f64 = n.text()?.trim().parse().ok()?;
            (y < BREAKDOWN_PX).then_some((y, v))
        })
        .collect();
    assert!(ticks.len() >= 2, "tick labels: {ticks:?}");
    let (zero_y, _) = ticks[0];
    let (high_y, high_v) = ticks[ticks.len() - 1];
    // The left axis line: the first vertical polyline, from the plot's top to its bottom.
    let axis_top_y = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .map(|n| points(&n))
        .find(|p| p.len() == 2 && p[0].0 == p[1].0 && p[0].1 < p[1].1)
        .expect("left axis line")[0]
        .1;
    high_v / (zero_y - high_y) * (zero_y - axis_top_y)
}

/// Black filled polygons: the clipped-point markers (and the note's key).
fn black_triangles(svg: &str) -> Vec<Vec<(f64, f64)>> {
    let doc = parse("attempts.svg", svg);
    doc.descendants()
        .filter(|n| n.has_tag_name("polygon") && n.attribute("fill") == Some("#000000"))
        .map(|n| points(&n))
        .collect()
}

fn attempts_line(svg: &str) -> Vec<(f64, f64)> {
    let doc = parse("attempts.svg", svg);
    with_class(&doc, "series-attempts")
        .into_iter()
        .find(|n| n.has_tag_name("polyline") && points(n).len() > 2)
        .map(|n| points(&n))
        .expect("attempts line")
}

#[test]
fn one_huge_bucket_is_clipped_to_the_bulk_s_axis_and_named() {
    let calm = common::synthetic_report_of(7, 1500);
    let bulk_max = calm.timeseries[..1499]
        .iter()
        .map(|r| r.attempts)
        .max()
        .unwrap();
    let storm = with_last_bucket(10_611);
    let svg = render_svg(&storm, "attempts.svg");

    // The axis fits the other 1,499 buckets: it is what it is without the huge one.
    let calm_svg = render_svg(&with_last_bucket(bulk_max), "attempts.svg");
    let top = first_panel_axis_top(&svg);
    let calm_top = first_panel_axis_top(&calm_svg);
    assert!(
        (top - calm_top).abs() <= calm_top * 0.02,
        "axis top {top} with the outlier, {calm_top} without"
    );
    assert!(
        top < 2.0 * bulk_max as f64,
        "axis top {top} for a bulk up to {bulk_max}/s"
    );

    // The note names the peak, its rate and its time (bucket start 1499 s = 24:59).
    let doc = parse("attempts.svg", &svg);
    let notes: Vec<String> = texts(&doc)
        .into_iter()
        .filter(|t| t.contains("clipped"))
        .collect();
    assert_eq!(notes, vec!["peak 10,611/s at 24:59 (clipped)".to_string()]);

    // The attempts line runs up to the top edge at the last bucket, and a marker sits there.
    let line = attempts_line(&svg);
    let (last_x, last_y) = *line.last().unwrap();
    let highest = line.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    assert_eq!(
        last_y, highest,
        "the clipped bucket is the line's highest point"
    );
    let triangles = black_triangles(&svg);
    assert!(
        triangles
            .iter()
            .any(|t| t[0].0 == last_x && t.iter().any(|p| p.1 >= last_y)),
        "no marker at x {last_x} on the top edge in {triangles:?}"
    );

    // Plots without an outlier are untouched by it: queue depth is the same bytes.
    assert_eq!(
        render_svg(&storm, "queue.svg"),
        render_svg(&calm, "queue.svg")
    );
}

#[test]
fn a_plot_without_outliers_keeps_its_axis_and_has_no_note() {
    // A spike three times the bulk is part of the picture: the axis fits it, with the
    // legend's headroom (1.1 + 0.08 per legend entry; four entries here) above it.
    let spike = 3 * common::synthetic_report_of(7, 1500)
        .timeseries
        .iter()
        .map(|r| r.attempts)
        .max()
        .unwrap();
    let svg = render_svg(&with_last_bucket(spike), "attempts.svg");
    let top = first_panel_axis_top(&svg);
    let expected = spike as f64 * (1.1 + 0.08 * 4.0);
    assert!(
        (top - expected).abs() <= expected * 0.02,
        "axis top {top}, expected {expected} for a peak of {spike}/s"
    );
    let doc = parse("attempts.svg", &svg);
    assert!(!texts(&doc).iter().any(|t| t.contains("clipped")));
    assert!(black_triangles(&svg).is_empty());
    // The spike is the line's highest point and stays below the top edge.
    let line = attempts_line(&svg);
    let highest = line.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    assert_eq!(line.last().unwrap().1, highest);
}

#[test]
fn a_clipped_plot_renders_the_same_bytes_twice() {
    let storm = with_last_bucket(10_611);
    assert_eq!(
        render_svg(&storm, "attempts.svg"),
        render_svg(&storm, "attempts.svg")
    );
}
