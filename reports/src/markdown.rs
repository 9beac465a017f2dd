//! The markdown summary (`summary.md`, and what goes to `$GITHUB_STEP_SUMMARY`): verdict,
//! expectations, figures.

use crate::escape::escape_md_cell;
use crate::figures::figures;
use crate::number::fmt_figure;
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
                fmt_figure(e.actual),
                match (e.pass, &s.aborted) {
                    (true, _) => "pass",
                    (false, Some(a)) if a.expectation == e.name => "**FAIL** (aborted the run)",
                    (false, _) => "**FAIL**",
                }
            ));
        }
        md.push('\n');
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
