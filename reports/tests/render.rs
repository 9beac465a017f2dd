//! `render` on a synthetic run: the plots carry the series they claim, the page and the JUnit
//! file carry every expectation with its verdict, and two renders give the same bytes.

mod common;

use std::fs;
use std::path::Path;

use common::xml::{parse, points, text_of, texts, with_class};
use common::{expectation, synthetic_report};
use stampede_reports::{render, RenderOptions, RunReport};

fn render_to(dir: &Path, report: &RunReport) -> stampede_reports::Rendered {
    render(dir, report, &RenderOptions::default()).expect("render")
}

fn read(dir: &Path, file: &str) -> String {
    fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("reading {file}: {e}"))
}

#[test]
fn attempts_plot_shows_attempts_retries_429_and_503() {
    let dir = tempfile::tempdir().unwrap();
    let report = synthetic_report(7);
    render_to(dir.path(), &report);
    let svg = read(dir.path(), "attempts.svg");
    let doc = parse("attempts.svg", &svg);

    let labels = texts(&doc);
    for legend in ["attempts/s", "retries/s", "429/s", "503/s"] {
        assert!(
            labels.iter().any(|t| t == legend),
            "legend {legend} missing in {labels:?}"
        );
    }
    assert!(labels.iter().any(|t| t == "virtual time (s)"));
    assert!(labels.iter().any(|t| t == "attempts per second (1/s)"));

    // One attempts line through every bucket.
    let attempts: Vec<_> = with_class(&doc, "series-attempts")
        .into_iter()
        .filter(|n| n.has_tag_name("polyline") && points(n).len() > 2)
        .collect();
    assert_eq!(attempts.len(), 1);
    assert_eq!(points(&attempts[0]).len(), report.timeseries.len());

    // 429s and 503s: one marker per bucket that had any.
    for (class, count) in [
        (
            "series-429",
            report
                .timeseries
                .iter()
                .filter(|r| r.status_429 > 0)
                .count(),
        ),
        (
            "series-503",
            report
                .timeseries
                .iter()
                .filter(|r| r.status_503 > 0)
                .count(),
        ),
    ] {
        let dots = with_class(&doc, class)
            .into_iter()
            .filter(|n| n.has_tag_name("circle"))
            .count();
        assert!(count > 0, "the synthetic run has {class} buckets");
        assert_eq!(dots, count, "{class} markers");
    }

    // Retry waves stand out: the retries line's peaks rise far above its baseline (SVG y grows
    // downwards), at least a third of the plot's height.
    let retries = with_class(&doc, "series-retries")
        .into_iter()
        .filter(|n| n.has_tag_name("polyline") && points(n).len() > 2)
        .map(|n| points(&n))
        .next()
        .expect("retries line");
    let low = retries.iter().map(|p| p.1).fold(f64::MIN, f64::max);
    let high = retries.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    assert!(
        low - high > 420.0 / 3.0,
        "retry peaks span {} px",
        low - high
    );
    // And the area under the retries line is filled.
    assert!(with_class(&doc, "series-retries")
        .iter()
        .any(|n| n.has_tag_name("polygon")));
}

#[test]
fn every_run_plot_names_its_series_and_axes() {
    let dir = tempfile::tempdir().unwrap();
    render_to(dir.path(), &synthetic_report(7));
    let expected: [(&str, &[&str], &[&str]); 5] = [
        (
            "queue.svg",
            &["queue depth", "in flight", "jobs"],
            &["series-queue_depth", "series-in_flight"],
        ),
        (
            "tokens.svg",
            &[
                "tokens reserved (left axis)",
                "tokens used/s (right axis)",
                "tokens used (tokens/s)",
            ],
            &["series-tokens_reserved", "series-tokens_used"],
        ),
        (
            "latency.svg",
            &["p50", "p99", "latency (ms)"],
            &["series-latency_p50", "series-latency_p99"],
        ),
        (
            "tenants.svg",
            &["acme", "globex", "completed requests per minute (1/min)"],
            &["series-tenant-acme", "series-tenant-globex"],
        ),
        (
            "attempts.svg",
            &["virtual time (s)"],
            &["series-attempts", "series-retries"],
        ),
    ];
    for (file, labels, classes) in expected {
        let svg = read(dir.path(), file);
        let doc = parse(file, &svg);
        let found = texts(&doc);
        for l in labels {
            assert!(found.iter().any(|t| t == l), "{file}: no text {l:?}");
        }
        for c in classes {
            assert!(
                with_class(&doc, c)
                    .iter()
                    .any(|n| n.has_tag_name("polyline")),
                "{file}: no line with class {c}"
            );
        }
    }
}

#[test]
fn a_single_tenant_run_has_no_tenant_plot() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = synthetic_report(7);
    report.tenants.retain(|t| t.tenant == "acme");
    let rendered = render_to(dir.path(), &report);
    assert!(!dir.path().join("tenants.svg").exists());
    assert!(rendered.files.iter().all(|f| !f.ends_with("tenants.svg")));
    let html = read(dir.path(), "index.html");
    let doc = parse("index.html", &html);
    assert_eq!(
        doc.descendants().filter(|n| n.has_tag_name("svg")).count(),
        4
    );
}

#[test]
fn page_lists_every_expectation_with_limit_actual_and_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let report = synthetic_report(7);
    render_to(dir.path(), &report);
    let html = read(dir.path(), "index.html");
    let doc = parse("index.html", &html);

    let title = doc
        .descendants()
        .find(|n| n.has_tag_name("h1"))
        .map(|n| text_of(&n))
        .unwrap();
    assert_eq!(Some(title.as_str()), report.title.as_deref());

    let rows: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("tr") && n.attribute("data-expectation").is_some())
        .collect();
    assert_eq!(rows.len(), report.summary.expectations.len());
    for e in &report.summary.expectations {
        let row = rows
            .iter()
            .find(|r| r.attribute("data-expectation") == Some(e.name.as_str()))
            .unwrap_or_else(|| panic!("no row for {}", e.name));
        let cells: Vec<String> = row
            .children()
            .filter(|c| c.has_tag_name("td"))
            .map(|c| text_of(&c))
            .collect();
        assert_eq!(cells[0], e.name);
        // The limit survives escaping (it contains <, > , & and quotes).
        assert_eq!(cells[1], e.limit);
        assert_eq!(
            cells[2].parse::<f64>().unwrap(),
            (e.actual * 1000.0).round() / 1000.0
        );
        assert_eq!(cells[3], if e.pass { "pass" } else { "fail" });
    }

    let verdict = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("verdict"))
        .unwrap();
    assert_eq!(text_of(&verdict), "FAIL: 2 of 4 expectations failed");

    // Key figures and the run's identity.
    let page_text = text_of(&doc.root_element());
    for needle in ["synthetic-waves", "naive", "virtual", "outbound_attempts"] {
        assert!(page_text.contains(needle), "page lacks {needle}");
    }
    let seed_cell = doc
        .descendants()
        .filter(|n| n.has_tag_name("tr"))
        .find(|tr| {
            tr.children()
                .any(|c| c.has_tag_name("th") && text_of(&c) == "seed")
        })
        .unwrap();
    assert!(text_of(&seed_cell).contains(&report.summary.seed.to_string()));

    // Self-contained: plots inline, nothing to fetch, no script.
    assert_eq!(
        doc.descendants().filter(|n| n.has_tag_name("svg")).count(),
        5
    );
    for n in doc.descendants().filter(|n| n.is_element()) {
        assert!(
            !["script", "link", "img", "iframe"].contains(&n.tag_name().name()),
            "page has a <{}>",
            n.tag_name().name()
        );
        assert!(n.attribute("src").is_none() && n.attribute("href").is_none());
    }
}

#[test]
fn junit_has_one_testcase_per_expectation_and_failures_with_limit_and_actual() {
    let dir = tempfile::tempdir().unwrap();
    let report = synthetic_report(7);
    render_to(dir.path(), &report);
    let xml = read(dir.path(), "junit.xml");
    let doc = parse("junit.xml", &xml);
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), report.summary.expectations.len());
    for (case, e) in cases.iter().zip(&report.summary.expectations) {
        assert_eq!(case.attribute("classname"), Some("synthetic-waves"));
        assert_eq!(case.attribute("name"), Some(e.name.as_str()));
        let failure = case.children().find(|c| c.has_tag_name("failure"));
        assert_eq!(failure.is_some(), !e.pass, "{}", e.name);
        if let Some(f) = failure {
            let msg = f.attribute("message").unwrap();
            assert!(msg.contains(&e.limit), "{msg}");
            assert!(
                msg.contains(&stampede_reports::fmt_figure(e.actual)),
                "{msg}"
            );
        }
    }
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite.attribute("tests"), Some("4"));
    assert_eq!(suite.attribute("failures"), Some("2"));
}

#[test]
fn combined_junit_keeps_scenarios_apart_and_escapes_names() {
    let results = vec![
        (
            "a<b>&\"c\"".to_string(),
            vec![expectation("duplicates", "<= 0", 1.0, false)],
        ),
        (
            "quickstart".to_string(),
            vec![
                expectation("duplicates", "<= 0", 0.0, true),
                expectation("attempts_per_logical", "<= 1.2", 1.05, true),
            ],
        ),
    ];
    let xml = stampede_reports::junit_suite(&results);
    let doc = parse("combined junit", &xml);
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(root.attribute("tests"), Some("3"));
    assert_eq!(root.attribute("failures"), Some("1"));
    let suites: Vec<_> = root
        .children()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 2);
    assert_eq!(suites[0].attribute("name"), Some("a<b>&\"c\""));
    let first_cases: Vec<_> = suites[0]
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(first_cases[0].attribute("classname"), Some("a<b>&\"c\""));
    assert!(suites[1].descendants().all(|n| !n.has_tag_name("failure")));
}

#[test]
fn two_renders_of_the_same_run_are_byte_identical() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let report = synthetic_report(11);
    let first = render_to(a.path(), &report);
    // Wall-clock time differs between two runs of one seed; the outputs must not show it.
    let mut again = report.clone();
    again.summary.wall_ms += 977;
    render_to(b.path(), &again);
    assert!(first.files.len() >= 8);
    for f in &first.files {
        let name = f.file_name().unwrap();
        let (x, y) = (fs::read(f).unwrap(), fs::read(b.path().join(name)).unwrap());
        assert!(
            x == y,
            "{} differs between two renders",
            name.to_string_lossy()
        );
    }
    // A different seed does change the plots, so the comparison above has teeth.
    let c = tempfile::tempdir().unwrap();
    render_to(c.path(), &synthetic_report(12));
    assert_ne!(
        read(a.path(), "attempts.svg"),
        read(c.path(), "attempts.svg")
    );
}

#[test]
fn markdown_summary_is_written_and_appended_to_the_step_summary() {
    let dir = tempfile::tempdir().unwrap();
    let step = dir.path().join("step-summary.md");
    fs::write(&step, "earlier step\n").unwrap();
    let report = synthetic_report(7);
    let opts = RenderOptions {
        github_step_summary: Some(step.clone()),
        ..Default::default()
    };
    let rendered = render(&dir.path().join("run"), &report, &opts).unwrap();
    render(&dir.path().join("run"), &report, &opts).unwrap();
    let md = read(&dir.path().join("run"), "summary.md");
    assert_eq!(md, rendered.markdown);
    for e in &report.summary.expectations {
        let line = md
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", e.name)))
            .unwrap_or_else(|| panic!("no row for {} in\n{md}", e.name));
        assert!(line.ends_with(if e.pass { "| pass |" } else { "| **FAIL** |" }));
    }
    let step_text = fs::read_to_string(&step).unwrap();
    assert!(step_text.starts_with("earlier step\n"));
    assert_eq!(step_text.matches("## stampede:").count(), 2);
}

#[test]
fn an_empty_run_still_renders_every_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = RunReport::default();
    report.summary.scenario = "empty".into();
    let rendered = render_to(dir.path(), &report);
    assert_eq!(rendered.files.len(), 7);
    let svg = read(dir.path(), "attempts.svg");
    let doc = parse("attempts.svg", &svg);
    assert!(texts(&doc)
        .iter()
        .any(|t| t == "no time buckets in this run"));
    let html = read(dir.path(), "index.html");
    assert!(text_of(&parse("index.html", &html).root_element())
        .contains("The scenario sets no expectations."));
}

#[test]
fn plots_can_be_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let opts = RenderOptions {
        plots: false,
        ..Default::default()
    };
    let rendered = render(dir.path(), &synthetic_report(7), &opts).unwrap();
    let names: Vec<String> = rendered
        .files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["index.html", "junit.xml", "summary.md"]);
}
