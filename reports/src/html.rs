//! `index.html`: one self-contained page (no script, no stylesheet or image fetched from
//! anywhere: the plots are inlined SVG) with the run, its verdict, every expectation, the
//! figures and the plots. All text from the scenario is escaped, and the page is also
//! well-formed XML, so any XML tool (and our tests) can read it.

use crate::breakdown::{error_table, outcome_tables, Table};
use crate::compare::{compare, verdict_word};
use crate::escape::escape_xml as esc;
use crate::figures::{describe, figures, FigureGroup};
use crate::markdown::verdict_line;
use crate::number::{fmt_actual, fmt_figure, fmt_grouped};
use crate::plots::run_plots::Plot;
use crate::report::RunReport;

const STYLE: &str =
    "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1000px;color:#222}\
table{border-collapse:collapse;margin:1em 0}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}\
td.num{text-align:right;font-variant-numeric:tabular-nums}\
.pass{color:#1a7f37}.fail{color:#cf222e;font-weight:bold}\
.better{color:#1a7f37}.worse{color:#cf222e;font-weight:bold}\
p.verdict{font-size:1.3em}\
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto}\
pre{background:#f6f8fa;padding:.6em;white-space:pre-wrap}";

/// The page for `report`, with `plots` inlined in order.
pub(crate) fn render_html(report: &RunReport, plots: &[Plot]) -> String {
    let s = &report.summary;
    let title = report.title.as_deref().unwrap_or(&s.scenario);
    let all_pass = s.expectations.iter().all(|e| e.pass);
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    h.push_str(&format!("<title>stampede: {}</title>\n", esc(title)));
    h.push_str(&format!("<style>{STYLE}</style>\n</head>\n<body>\n"));
    h.push_str(&format!("<h1>{}</h1>\n", esc(title)));
    h.push_str(&format!(
        "<p class=\"verdict {}\" id=\"verdict\">{}</p>\n",
        if all_pass { "pass" } else { "fail" },
        esc(&verdict_line(&s.expectations))
    ));
    if let Some(a) = &s.aborted {
        h.push_str(&format!(
            "<p class=\"fail\" id=\"aborted\" data-expectation=\"{}\" data-at-ms=\"{}\">{}</p>\n",
            esc(&a.expectation),
            a.at_ms,
            esc(&a.line())
        ));
    }
    if let Some(i) = &s.interrupted {
        h.push_str(&format!(
            "<p class=\"fail\" id=\"interrupted\" data-signal=\"{}\" data-at-ms=\"{}\">{}</p>\n",
            esc(&i.signal),
            i.at_ms,
            esc(&i.line())
        ));
    }
    if let Some(d) = &report.description {
        h.push_str(&format!("<p class=\"description\">{}</p>\n", esc(d)));
    }

    h.push_str("<table id=\"run\">\n");
    for (k, v) in [
        ("scenario", s.scenario.clone()),
        ("seed", s.seed.to_string()),
        ("mode", s.mode.clone()),
        ("preset", s.preset.clone()),
    ] {
        h.push_str(&format!("<tr><th>{k}</th><td>{}</td></tr>\n", esc(&v)));
    }
    h.push_str("</table>\n");
    if let Some(p) = &report.preset_text {
        h.push_str(&format!("<pre class=\"preset\">{}</pre>\n", esc(p)));
    }

    if !report.fault_windows.is_empty() {
        h.push_str("<h2>Provider faults</h2>\n<p>When the provider was told to shed load or fail (shaded on every plot):</p>\n<table id=\"faults\">\n<tr><th>from</th><th>until</th><th>what</th></tr>\n");
        let at = |ms: u64| format!("{} s", fmt_figure(ms as f64 / 1000.0));
        for w in &report.fault_windows {
            h.push_str(&format!(
                "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
                at(w.from_ms),
                w.until_ms.map_or_else(|| "the end".to_string(), at),
                esc(&w.what)
            ));
        }
        h.push_str("</table>\n");
    }

    h.push_str("<h2>Expectations</h2>\n");
    if s.expectations.is_empty() {
        h.push_str("<p>The scenario sets no expectations.</p>\n");
    } else {
        h.push_str("<table id=\"expectations\">\n<tr><th>expectation</th><th>limit</th><th>actual</th><th>verdict</th></tr>\n");
        for e in &s.expectations {
            let verdict = if e.pass { "pass" } else { "fail" };
            let ended = s
                .aborted
                .as_ref()
                .filter(|a| a.expectation == e.name)
                .map_or("", |_| " (aborted the run)");
            h.push_str(&format!(
                "<tr class=\"{verdict}\" data-expectation=\"{}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"{verdict}\">{verdict}{ended}</td></tr>\n",
                esc(&e.name),
                esc(&e.name),
                esc(&e.limit),
                fmt_actual(e.actual)
            ));
        }
        h.push_str("</table>\n");
    }

    if let Some(baseline) = &report.baseline {
        h.push_str(&comparison_html(baseline, s));
    }

    h.push_str("<h2>Figures</h2>\n");
    let shown: Vec<_> = figures(s).into_iter().filter(|f| f.deterministic).collect();
    for group in [
        FigureGroup::Finished,
        FigureGroup::Provider,
        FigureGroup::Safety,
        FigureGroup::Cost,
    ] {
        h.push_str(&format!(
            "<h3>{}</h3>\n<table class=\"figures\">\n<tr><th>figure</th><th>value</th><th>unit</th><th>key</th><th>meaning</th></tr>\n",
            group.heading()
        ));
        for f in shown.iter().filter(|f| describe(&f.key).0 == group) {
            let (_, label, meaning) = describe(&f.key);
            let label = if label.is_empty() {
                f.key.as_str()
            } else {
                label
            };
            h.push_str(&format!(
                "<tr data-figure=\"{}\"><td>{}</td><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>\n",
                esc(&f.key),
                esc(label),
                fmt_figure(f.value),
                f.unit,
                esc(&f.key),
                esc(meaning)
            ));
        }
        h.push_str("</table>\n");
    }

    let outcomes = outcome_tables(s);
    if !outcomes.is_empty() {
        h.push_str("<h2>Outcomes by class, tenant and route</h2>\n<p>Logical requests of each group and how they ended; attempts counted at the provider; latency counts a request that never completed until its deadline.</p>\n");
        for t in &outcomes {
            h.push_str(&format!("<h3>{}</h3>\n", esc(t.heading)));
            h.push_str(&table_html(t));
        }
    }
    let errors = error_table(s);
    h.push_str("<h2>Errors</h2>\n");
    if errors.rows.is_empty() {
        h.push_str("<p id=\"errors\">Every attempt was answered with success.</p>\n");
    } else {
        h.push_str("<p>Attempts the provider did not answer with success, by status and message (first and last seen: arrival at the provider, from the run's start).</p>\n");
        h.push_str(&table_html(&errors));
    }

    if report.case_files.iter().any(|c| c.lines > 0) {
        h.push_str("<h2>Left for a person</h2>\n<ul id=\"case-files\">\n");
        for c in report.case_files.iter().filter(|c| c.lines > 0) {
            h.push_str(&format!(
                "<li data-file=\"{f}\"><a href=\"{f}\">{f}</a>: {} {}</li>\n",
                fmt_grouped(c.lines as f64, 0),
                esc(&c.what),
                f = esc(&c.file),
            ));
        }
        h.push_str("</ul>\n");
    }

    if !report.left_out.is_empty() {
        h.push_str("<h2>Not written</h2>\n<table id=\"left-out\">\n<tr><th>file</th><th>why</th><th>how to get it</th></tr>\n");
        for l in &report.left_out {
            h.push_str(&format!(
                "<tr data-file=\"{}\"><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                esc(&l.file),
                esc(&l.file),
                esc(&l.why),
                esc(&l.how)
            ));
        }
        h.push_str("</table>\n");
    }

    if !plots.is_empty() {
        h.push_str("<h2>Plots</h2>\n");
    }
    for p in plots {
        let id = p.file.trim_end_matches(".svg");
        h.push_str(&format!(
            "<figure id=\"plot-{}\">\n<figcaption>{}</figcaption>\n",
            esc(id),
            esc(&p.title)
        ));
        h.push_str(&p.svg);
        h.push_str("</figure>\n");
    }
    h.push_str("</body>\n</html>\n");
    h
}

/// One breakdown table, its rows marked with `data-row` (the first cell) for readers and tests.
fn table_html(t: &Table) -> String {
    let mut h = format!("<table id=\"{}\" class=\"breakdown\">\n<tr>", t.id);
    for cell in &t.header {
        h.push_str(&format!("<th>{}</th>", esc(cell)));
    }
    h.push_str("</tr>\n");
    for row in &t.rows {
        let name = row.first().map_or("", String::as_str);
        h.push_str(&format!("<tr data-row=\"{}\">", esc(name)));
        for (i, cell) in row.iter().enumerate() {
            let class = if t.numeric.get(i).copied().unwrap_or(false) {
                " class=\"num\""
            } else {
                ""
            };
            h.push_str(&format!("<td{class}>{}</td>", esc(cell)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    h
}

/// This run beside `baseline`: whose runs, the expectations whose verdict changed, and
/// every figure with its change marked better or worse where one way is better.
fn comparison_html(baseline: &crate::schema::Summary, run: &crate::schema::Summary) -> String {
    let c = compare(baseline, run);
    let mut h = String::from("<h2>Compared with the baseline</h2>\n<table id=\"baseline-runs\">\n");
    for (k, v) in [("baseline", &c.before_label), ("this run", &c.after_label)] {
        h.push_str(&format!("<tr><th>{k}</th><td>{}</td></tr>\n", esc(v)));
    }
    h.push_str("</table>\n");
    if c.verdicts.is_empty() {
        h.push_str("<p id=\"verdict-changes\">No expectation changed verdict.</p>\n");
    } else {
        h.push_str("<p>Expectations that changed verdict:</p>\n<ul id=\"verdict-changes\">\n");
        for v in &c.verdicts {
            let class = match v.after {
                Some(false) => "fail",
                _ => "pass",
            };
            let actual = |x: Option<f64>| x.map_or("-".to_string(), fmt_actual);
            h.push_str(&format!(
                "<li class=\"{class}\" data-expectation=\"{}\">{}: {} → {} (actual {} → {}, limit {})</li>\n",
                esc(&v.name),
                esc(&v.name),
                verdict_word(v.before),
                verdict_word(v.after),
                actual(v.actual_before),
                actual(v.actual_after),
                esc(&v.limit)
            ));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("<table id=\"comparison\">\n<tr><th>figure</th><th>unit</th><th>baseline</th><th>this run</th><th>change</th><th>change %</th><th>direction</th></tr>\n");
    for f in c.deterministic_figures() {
        // A figure with no better direction that moved is `changed`, never `same`: a
        // script filtering the rows on `same` read 429s going from 3 to 3,000 as unchanged.
        let class = match (f.improved(), f.arrow()) {
            (Some(true), _) => "better",
            (Some(false), _) => "worse",
            (None, "=") => "same",
            (None, _) => "changed",
        };
        let (change, pct) = f.change_text();
        h.push_str(&format!(
            "<tr data-figure=\"{}\" class=\"{class}\"><td><code>{}</code></td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"{class}\">{}</td></tr>\n",
            esc(&f.key),
            esc(&f.key),
            esc(f.unit),
            fmt_figure(f.before),
            fmt_figure(f.after),
            change,
            pct,
            f.direction_text()
        ));
    }
    h.push_str("</table>\n");
    h
}
