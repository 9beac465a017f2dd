//! The markdown summary (`summary.md`, and what goes to `$GITHUB_STEP_SUMMARY`): verdict,
//! expectations, figures.

use crate::breakdown::{error_table, outcome_tables, Table};
use crate::compare::{compare, verdict_word};
use crate::escape::escape_md_cell;
use crate::figures::figures;
use crate::number::{fmt_actual, fmt_figure, fmt_grouped};
use crate::report::RunReport;
use crate::schema::Expectation;

/// A markdown code span for a key or name: no escaping inside, except what would end the span
/// or split the table cell.
fn code(text: &str) -> String {
    format!(
        "`{}`",
        text.replace('`', "'")
            .replace('|', "\\|")
            .replace(['\n', '\r'], " ")
    )
}

/// One line verdict: `PASS: all 3 expectations held` / `FAIL: 1 of 3 expectations failed`.
pub fn verdict_line(expectations: &[Expectation]) -> String {
    let failed = expectations.iter().filter(|e| !e.pass).count();
    match (expectations.len(), failed) {
        (0, _) => "PASS: the scenario sets no expectations".to_string(),
        (n, 0) => format!("PASS: all {n} expectations held"),
        (n, f) => format!("FAIL: {f} of {n} expectations failed"),
    }
}

/// The markdown summary of a run.
pub fn render_markdown(report: &RunReport) -> String {
    let s = &report.summary;
    let mut md = String::new();
    let title = report.title.as_deref().unwrap_or(&s.scenario);
    md.push_str(&format!("## stampede: {}\n\n", escape_md_cell(title)));
    md.push_str(&format!("**{}**\n\n", verdict_line(&s.expectations)));
    if let Some(aborted) = &s.aborted {
        md.push_str(&format!("**{}**\n\n", escape_md_cell(&aborted.line())));
    }
    if let Some(interrupted) = &s.interrupted {
        md.push_str(&format!("**{}**\n\n", escape_md_cell(&interrupted.line())));
    }
    md.push_str(&format!(
        "scenario {} · seed {} · mode {} · preset {}\n\n",
        code(&s.scenario),
        s.seed,
        escape_md_cell(&s.mode),
        escape_md_cell(&s.preset)
    ));
    if let Some(d) = &report.description {
        md.push_str(&format!("{}\n\n", escape_md_cell(d)));
    }
    if !s.expectations.is_empty() {
        md.push_str("| expectation | limit | actual | verdict |\n|---|---|---|---|\n");
        for e in &s.expectations {
            md.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                code(&e.name),
                escape_md_cell(&e.limit),
                fmt_actual(e.actual),
                match (e.pass, &s.aborted) {
                    (true, _) => "pass",
                    (false, Some(a)) if a.expectation == e.name => "**FAIL** (aborted the run)",
                    (false, _) => "**FAIL**",
                }
            ));
        }
        md.push('\n');
    }
    if let Some(baseline) = &report.baseline {
        md.push_str(&comparison_md(baseline, s));
    }
    md.push_str("| figure | value |\n|---|---:|\n");
    for f in figures(s).iter().filter(|f| f.deterministic) {
        let unit = if f.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", f.unit)
        };
        md.push_str(&format!(
            "| {} | {}{} |\n",
            code(&f.key),
            fmt_figure(f.value),
            unit
        ));
    }
    md.push('\n');
    for t in outcome_tables(s) {
        md.push_str(&format!("Outcomes {}:\n\n", t.heading.to_lowercase()));
        md.push_str(&table_md(&t));
    }
    let errors = error_table(s);
    if !errors.rows.is_empty() {
        md.push_str("Errors by status and message:\n\n");
        md.push_str(&table_md(&errors));
    }
    if report.case_files.iter().any(|c| c.lines > 0) {
        md.push_str("Left for a person:\n\n");
        for c in report.case_files.iter().filter(|c| c.lines > 0) {
            md.push_str(&format!(
                "- {}: {} {}\n",
                code(&c.file),
                fmt_grouped(c.lines as f64, 0),
                escape_md_cell(&c.what)
            ));
        }
        md.push('\n');
    }
    if !report.left_out.is_empty() {
        md.push_str("Not written:\n\n");
        for l in &report.left_out {
            md.push_str(&format!(
                "- {}: {}. To get it: {}.\n",
                code(&l.file),
                escape_md_cell(&l.why),
                escape_md_cell(&l.how)
            ));
        }
        md.push('\n');
    }
    md
}

/// A breakdown table in markdown, numbers right-aligned.
fn table_md(t: &Table) -> String {
    // Names and codes as code spans (no markdown inside them), numbers as they are.
    let cells = |row: &[String]| -> String {
        let shown: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if t.numeric.get(i).copied().unwrap_or(false) {
                    escape_md_cell(c)
                } else {
                    code(c)
                }
            })
            .collect();
        format!("| {} |\n", shown.join(" | "))
    };
    let header: Vec<String> = t.header.iter().map(|h| escape_md_cell(h)).collect();
    let mut md = format!("| {} |\n", header.join(" | "));
    let rule: Vec<&str> = (0..t.header.len())
        .map(|i| {
            if t.numeric.get(i).copied().unwrap_or(false) {
                "---:"
            } else {
                "---"
            }
        })
        .collect();
    md.push_str(&format!("|{}|\n", rule.join("|")));
    for row in &t.rows {
        md.push_str(&cells(row));
    }
    md.push('\n');
    md
}

/// This run beside `baseline`, as the page shows it: the runs, the expectations whose
/// verdict changed, and every figure with its change, `**worse**` in bold.
fn comparison_md(baseline: &crate::schema::Summary, run: &crate::schema::Summary) -> String {
    let c = compare(baseline, run);
    let mut md = format!(
        "### Compared with the baseline\n\nbaseline: {} · this run: {}\n\n",
        code(&c.before_label),
        code(&c.after_label)
    );
    if c.verdicts.is_empty() {
        md.push_str("No expectation changed verdict.\n\n");
    } else {
        md.push_str("Expectations that changed verdict:\n\n");
        for v in &c.verdicts {
            let after = match v.after {
                Some(false) => format!("**{}**", verdict_word(v.after)),
                _ => verdict_word(v.after).to_string(),
            };
            let actual = |x: Option<f64>| x.map_or("-".to_string(), fmt_actual);
            md.push_str(&format!(
                "- {}: {} → {} (actual {} → {}, limit {})\n",
                code(&v.name),
                verdict_word(v.before),
                after,
                actual(v.actual_before),
                actual(v.actual_after),
                escape_md_cell(&v.limit)
            ));
        }
        md.push('\n');
    }
    md.push_str(
        "| figure | baseline | this run | change | change % | |\n|---|---:|---:|---:|---:|---|\n",
    );
    for f in c.deterministic_figures() {
        let key = if f.unit.is_empty() {
            code(&f.key)
        } else {
            format!("{} ({})", code(&f.key), escape_md_cell(f.unit))
        };
        let (change, pct) = f.change_text();
        let direction = match f.improved() {
            Some(false) => format!("**{}**", f.direction_text()),
            _ => f.direction_text(),
        };
        md.push_str(&format!(
            "| {key} | {} | {} | {change} | {pct} | {direction} |\n",
            fmt_figure(f.before),
            fmt_figure(f.after)
        ));
    }
    md.push('\n');
    md
}
