//! `render` on a synthetic run: the plots carry the series they claim, the page and the JUnit
//! file carry every expectation with its verdict, and two renders give the same bytes.

use crate::common;

use std::fs;
use std::path::Path;

use common::xml::{parse, points, text_of, texts, with_class};
use common::{expectation, synthetic_report};
use stampede_reports::{render, LeftOut, RenderOptions, RunReport};

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
    for legend in ["attempts/s", "retries/s", "2xx/s", "429/s", "503/s"] {
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

    // 429s and 503s are bands of the attempts' breakdown by answer. A rare one (the 6
    // buckets of 429s) also gets one marker per bucket; a dense one (60 buckets of 503s)
    // gets none, since markers in every bucket would wall off the plot.
    for (class, buckets) in [
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
        let nodes = with_class(&doc, class);
        let dots = nodes.iter().filter(|n| n.has_tag_name("circle")).count();
        assert!(buckets > 0, "the synthetic run has {class} buckets");
        assert!(
            nodes.iter().any(|n| n.has_tag_name("polygon")),
            "{class} band"
        );
        let expected = if buckets <= 40 { buckets } else { 0 };
        assert_eq!(dots, expected, "{class} markers for {buckets} buckets");
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

/// A render with every plot (several tenants, PNG where the build draws it) writes only
/// files `RENDERED_FILES` names: a run directory that replaces an earlier run removes the
/// listed files it did not write, and an unlisted one would be left to pass for the new
/// run's.
#[test]
fn rendered_files_names_every_file_a_render_writes() {
    let dir = tempfile::tempdir().unwrap();
    let opts = RenderOptions {
        plots: true,
        png: stampede_reports::PNG_SUPPORTED,
        github_step_summary: None,
    };
    let rendered = stampede_reports::render(dir.path(), &synthetic_report(7), &opts).unwrap();
    assert!(rendered.files.len() >= 10, "{:?}", rendered.files);
    for f in &rendered.files {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(
            stampede_reports::report::RENDERED_FILES.contains(&name),
            "{name} is not in RENDERED_FILES"
        );
    }
}

#[test]
fn every_run_plot_names_its_series_and_axes() {
    let dir = tempfile::tempdir().unwrap();
    render_to(dir.path(), &synthetic_report(7));
    let expected: [(&str, &[&str], &[&str]); 7] = [
        (
            "queue.svg",
            &[
                "backlog: arrived, not yet sent",
                "of which in the client's queue",
                "in flight",
                "requests waiting",
                "requests in flight",
            ],
            &["series-backlog", "series-queue_depth", "series-in_flight"],
        ),
        (
            "tokens.svg",
            &[
                "tokens reserved",
                "tokens used/s",
                "tokens reserved (tokens)",
                "tokens used (tokens/s)",
            ],
            &["series-tokens_reserved", "series-tokens_used"],
        ),
        (
            "service.svg",
            &["p50", "p99", "service time (ms)"],
            &["series-service_p50", "series-service_p99"],
        ),
        (
            "queue_wait.svg",
            &["p50", "p99", "queue wait (s)"],
            &["series-queue_wait_p50", "series-queue_wait_p99"],
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
        6
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
        // Every decimal the figure holds: three had made a failure read as its own limit.
        assert_eq!(cells[2].parse::<f64>().unwrap(), e.actual);
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
        7
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
    // Six plots (no tenant plot), the page, junit.xml and summary.md.
    assert_eq!(rendered.files.len(), 9);
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
fn files_the_run_did_not_write_are_named_with_how_to_get_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = synthetic_report(7);
    report.left_out.push(LeftOut {
        file: "audit.jsonl".into(),
        why: "a virtual run's audit trail is written <only> on request & costs 300 B a record"
            .into(),
        how: "run again with --audit".into(),
    });
    render_to(dir.path(), &report);
    let html = read(dir.path(), "index.html");
    let doc = parse("index.html", &html);
    let row = doc
        .descendants()
        .find(|n| n.has_tag_name("tr") && n.attribute("data-file") == Some("audit.jsonl"))
        .expect("a row for audit.jsonl");
    let cells: Vec<String> = row
        .children()
        .filter(|c| c.has_tag_name("td"))
        .map(|c| text_of(&c))
        .collect();
    assert_eq!(cells[1], report.left_out[0].why);
    assert_eq!(cells[2], "run again with --audit");
    let md = read(dir.path(), "summary.md");
    assert!(
        md.lines()
            .any(|l| l.starts_with("- `audit.jsonl`:") && l.contains("--audit")),
        "{md}"
    );
    // Nothing left out, no section.
    let plain = tempfile::tempdir().unwrap();
    render_to(plain.path(), &synthetic_report(7));
    assert!(!read(plain.path(), "index.html").contains("left-out"));
    assert!(!read(plain.path(), "summary.md").contains("Not written"));
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

/// Index in document order of the first element with `class` and tag `tag`.
fn first_index(doc: &roxmltree::Document, class: &str, tag: &str) -> usize {
    doc.descendants()
        .position(|n| {
            n.has_tag_name(tag)
                && n.attribute("class")
                    .is_some_and(|c| c.split_whitespace().any(|c| c == class))
        })
        .unwrap_or_else(|| panic!("no <{tag}> with class {class}"))
}

#[test]
fn a_storm_of_429s_is_a_band_under_the_attempts_line_not_a_wall_of_markers() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = synthetic_report(7);
    for r in &mut report.timeseries {
        // Most attempts refused in every bucket, as under the naive preset.
        let refused = r.attempts * 3 / 4;
        r.status_429 = refused;
        r.status_503 = 0;
        r.status_2xx = r.attempts - refused;
    }
    render_to(dir.path(), &report);
    let svg = read(dir.path(), "attempts.svg");
    let doc = parse("attempts.svg", &svg);
    let nodes = with_class(&doc, "series-429");
    assert_eq!(nodes.iter().filter(|n| n.has_tag_name("circle")).count(), 0);
    assert!(nodes.iter().any(|n| n.has_tag_name("polygon")));
    // The attempts line is drawn after (over) the bands, and the retries keep their panel.
    assert!(
        first_index(&doc, "series-attempts", "polyline")
            > first_index(&doc, "series-429", "polygon")
    );
    assert!(with_class(&doc, "series-retries")
        .iter()
        .any(|n| n.has_tag_name("polygon")));
}

#[test]
fn an_hour_of_one_second_buckets_is_thinned_without_losing_its_peaks() {
    let (short, long) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    render_to(short.path(), &common::synthetic_report_of(7, 300));
    render_to(long.path(), &common::synthetic_report_of(7, 3600));
    let retries_peak = |dir: &Path| {
        let svg = read(dir, "attempts.svg");
        let doc = parse("attempts.svg", &svg);
        let line = with_class(&doc, "series-retries")
            .into_iter()
            .find(|n| n.has_tag_name("polyline") && points(n).len() > 2)
            .map(|n| points(&n))
            .expect("retries line");
        (
            line.len(),
            line.iter().map(|p| p.1).fold(f64::MAX, f64::min),
        )
    };
    let (n_short, top_short) = retries_peak(short.path());
    let (n_long, top_long) = retries_peak(long.path());
    assert_eq!(n_short, 300);
    assert!(n_long <= 600, "{n_long} points for 3600 buckets");
    // Same retries, same y scale: the highest wave reaches the same pixel row.
    assert_eq!(top_short, top_long);
    for file in [
        "attempts.svg",
        "queue.svg",
        "tokens.svg",
        "latency.svg",
        "tenants.svg",
    ] {
        let svg = read(long.path(), file);
        let doc = parse(file, &svg);
        for line in doc.descendants().filter(|n| n.has_tag_name("polyline")) {
            assert!(
                points(&line).len() <= 700,
                "{file}: a line of {} points",
                points(&line).len()
            );
        }
    }
}

/// Writes an attempts.csv matching `report`: in each bucket the first attempts spread
/// evenly and the retries all in the bucket's first 100 ms (a fixed-sleep wave).
fn write_attempts_csv(dir: &Path, report: &RunReport) -> u64 {
    let mut text = String::from("seq,at_ms,logical_attempt\n");
    let mut seq = 0u64;
    for r in &report.timeseries {
        for k in 0..r.attempts {
            seq += 1;
            let (at, no) = if k < r.retries {
                (r.t_ms + k % 100, 2)
            } else {
                (r.t_ms + 100 + (k * 37) % 900, 1)
            };
            text.push_str(&format!("{seq},{at},{no}\n"));
        }
    }
    fs::write(dir.join("attempts.csv"), text).unwrap();
    seq
}

#[test]
fn the_run_s_attempts_csv_adds_a_panel_of_retries_per_100_ms() {
    let dir = tempfile::tempdir().unwrap();
    let report = synthetic_report(7);
    let rows = write_attempts_csv(dir.path(), &report);
    assert_eq!(rows, report.summary.outbound_attempts);
    render_to(dir.path(), &report);
    let svg = read(dir.path(), "attempts.svg");
    let doc = parse("attempts.svg", &svg);
    assert!(texts(&doc).iter().any(|t| t == "retries per 100 ms"));
    let fine = with_class(&doc, "series-retries_100ms")
        .into_iter()
        .find(|n| n.has_tag_name("polyline") && points(n).len() > 2)
        .map(|n| points(&n))
        .expect("retries per 100 ms line");
    // The biggest wave (40 retries at 74 s) is in the window; one 100 ms bin per second is
    // high and the nine after it are at zero, so the line sits at its baseline most of the time.
    let base = fine.iter().map(|p| p.1).fold(f64::MIN, f64::max);
    let top = fine.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    assert!(base - top > 420.0 / 3.0, "waves span {} px", base - top);
    let at_base = fine.iter().filter(|p| p.1 == base).count();
    assert!(
        at_base * 10 > fine.len() * 8,
        "{at_base} of {} points at zero",
        fine.len()
    );

    // Same inputs, same bytes; without attempts.csv, or with one from another run, no panel.
    let again = tempfile::tempdir().unwrap();
    write_attempts_csv(again.path(), &report);
    render_to(again.path(), &report);
    assert_eq!(svg, read(again.path(), "attempts.svg"));
    let stale = tempfile::tempdir().unwrap();
    let mut other_run = report.clone();
    other_run.summary.outbound_attempts += 1;
    write_attempts_csv(stale.path(), &report);
    render_to(stale.path(), &other_run);
    let doc_stale = read(stale.path(), "attempts.svg");
    assert!(!doc_stale.contains("series-retries_100ms"));
}

#[test]
fn fault_windows_are_shaded_on_every_time_plot_and_listed_on_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = synthetic_report(7);
    report.fault_windows.push(stampede_reports::FaultWindow {
        from_ms: 10_000,
        until_ms: Some(20_000),
        what: "429, Retry-After 5000 ms, probability 0.5".into(),
    });
    render_to(dir.path(), &report);
    for plot in [
        "attempts.svg",
        "queue.svg",
        "tokens.svg",
        "service.svg",
        "queue_wait.svg",
        "latency.svg",
    ] {
        let svg = read(dir.path(), plot);
        assert!(
            svg.contains("provider faults injected"),
            "{plot} has no fault band"
        );
    }
    let html = read(dir.path(), "index.html");
    let doc = parse("index.html", &html);
    let table = doc
        .descendants()
        .find(|n| n.has_tag_name("table") && n.attribute("id") == Some("faults"))
        .expect("a table of the provider's faults");
    let text = text_of(&table);
    assert!(text.contains("10 s") && text.contains("20 s"), "{text}");
    assert!(text.contains("probability 0.5"), "{text}");
    // Without faults: no band, no table.
    let calm = tempfile::tempdir().unwrap();
    render_to(calm.path(), &synthetic_report(7));
    assert!(!read(calm.path(), "attempts.svg").contains("provider faults injected"));
    assert!(!read(calm.path(), "index.html").contains("id=\"faults\""));
}

/// A scenario name with characters XML 1.0 forbids (a control character, a noncharacter)
/// leaves every plot and junit.xml readable: the SVGs had written them as they were, and
/// junit.xml kept U+FFFE, so a CI test reporter refused the whole file.
#[test]
fn names_with_characters_xml_forbids_leave_every_xml_file_readable() {
    let dir = tempfile::tempdir().unwrap();
    let mut report = synthetic_report(7);
    report.summary.scenario = "a\u{1}b\u{fffe}c\u{ffff}<d>".to_string();
    report.summary.expectations = vec![expectation("failed.\u{fffe}x", "<= 0", 3.0, false)];
    let rendered = render_to(dir.path(), &report);
    let mut xml = 0;
    for file in &rendered.files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".svg") || name.ends_with(".xml") {
            let text = fs::read_to_string(file).unwrap();
            parse(&name, &text);
            xml += 1;
        }
    }
    assert!(xml >= 5, "{:?}", rendered.files);
}
