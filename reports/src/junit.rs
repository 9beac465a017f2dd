//! JUnit XML: one `<testcase>` per expectation, so CI systems show each expectation as a test.
//! No timestamps or durations: the file is byte-identical for the same run.

use crate::escape::escape_xml;
use crate::number::{fmt_actual, fmt_figure};
use crate::schema::{Aborted, Expectation, Interrupted, Summary};

/// How a run ended early, for its failure messages.
#[derive(Clone, Copy)]
enum Early<'a> {
    /// An expectation with `abort = true` could no longer hold.
    Aborted(&'a Aborted),
    /// The user stopped it.
    Interrupted(&'a Interrupted),
}

/// A failed expectation's message: `failed: actual 12, limit <= 10`; when it is the one
/// that ended the run early, `ABORTED the run at 3.2 s: ...` before it, and in a run the
/// user stopped, `INTERRUPTED by SIGINT at 3.2 s: ...` before each.
fn failure_detail(e: &Expectation, early: Option<Early<'_>>) -> String {
    let detail = format!(
        "{}: actual {}, limit {}",
        e.name,
        fmt_actual(e.actual),
        e.limit
    );
    match early {
        Some(Early::Aborted(a)) if a.expectation == e.name => format!(
            "ABORTED the run at {} s (abort = true: it could no longer hold; figures are of \
             the part played): {detail}",
            fmt_figure(a.at_ms as f64 / 1000.0)
        ),
        Some(Early::Interrupted(i)) => format!(
            "INTERRUPTED by {} at {} s (the run was stopped, neither passed nor failed; \
             figures are of the part played): {detail}",
            i.signal,
            fmt_figure(i.at_ms as f64 / 1000.0)
        ),
        _ => detail,
    }
}

/// A single run's `junit.xml`: [`junit_suite`] for its scenario, the expectation that
/// ended the run early (`summary.aborted`) marked ABORTED in its failure message.
pub fn junit_run(summary: &Summary) -> String {
    let early = match (&summary.aborted, &summary.interrupted) {
        (_, Some(i)) => Some(Early::Interrupted(i)),
        (Some(a), None) => Some(Early::Aborted(a)),
        (None, None) => None,
    };
    suites(
        &[(summary.scenario.clone(), summary.expectations.clone())],
        early,
    )
}

/// One `<testsuites>` document with a `<testsuite>` per scenario and a `<testcase>` per
/// expectation (`classname` = scenario name, `name` = the expectation's key). Failed
/// expectations carry a `<failure>` with the limit and the actual value. Used for a single
/// run's `junit.xml` and for `stampede check`'s combined file.
pub fn junit_suite(results: &[(String, Vec<Expectation>)]) -> String {
    suites(results, None)
}

/// The test case a scenario with no `[expect]` gets, skipped: it would pass whatever
/// happened, and a suite of no tests reads as nothing to a CI reporter.
const NOTHING_CHECKED: &str = "<testcase classname=\"{suite}\" name=\"expectations\"{file}>\n      <skipped message=\"no [expect] table: nothing was checked, so this scenario passes whatever happens\"/>\n    </testcase>\n";

/// [`NOTHING_CHECKED`] for suite `suite` (escaped) with its `file` attribute, if any.
fn nothing_checked(suite: &str, file: &str) -> String {
    NOTHING_CHECKED
        .replace("{suite}", suite)
        .replace("{file}", file)
}

fn suites(results: &[(String, Vec<Expectation>)], early: Option<Early<'_>>) -> String {
    let tests: usize = results.iter().map(|r| r.1.len().max(1)).sum();
    let failures: usize = results
        .iter()
        .map(|r| r.1.iter().filter(|e| !e.pass).count())
        .sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"stampede\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">\n"
    ));
    for (scenario, expectations) in results {
        let scenario = escape_xml(scenario);
        let failed = expectations.iter().filter(|e| !e.pass).count();
        let skipped = usize::from(expectations.is_empty());
        out.push_str(&format!(
            "  <testsuite name=\"{scenario}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" skipped=\"{skipped}\">\n",
            expectations.len().max(1)
        ));
        if expectations.is_empty() {
            out.push_str("    ");
            out.push_str(&nothing_checked(&scenario, ""));
        }
        for e in expectations {
            let name = escape_xml(&e.name);
            if e.pass {
                out.push_str(&format!(
                    "    <testcase classname=\"{scenario}\" name=\"{name}\"/>\n"
                ));
            } else {
                let detail = escape_xml(&failure_detail(e, early));
                out.push_str(&format!(
                    "    <testcase classname=\"{scenario}\" name=\"{name}\">\n      <failure type=\"expectation\" message=\"{detail}\">{detail}</failure>\n    </testcase>\n"
                ));
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// One scenario file of `stampede check`: what it measured, or why it could not run.
#[derive(Debug, Clone)]
pub struct CheckedFile {
    /// The scenario's `name`, when the file could be read that far.
    pub scenario: Option<String>,
    /// The file (or folder) as `check` found it.
    pub path: String,
    /// Its expectations, or why it could not run.
    pub outcome: Result<Vec<Expectation>, String>,
    /// The expectation that ended its run early, if one did (`summary.aborted`).
    pub aborted: Option<Aborted>,
}

/// `stampede check`'s combined JUnit document: a `<testsuite>` per file, named by its
/// scenario name and its path (two files may share a name), with a `<testcase>` per
/// expectation; a file that could not run is one test case with an `<error>` naming the
/// file and the reason, counted in `errors`.
pub fn junit_check(files: &[CheckedFile]) -> String {
    let suite_name = |f: &CheckedFile| match &f.scenario {
        Some(name) => format!("{name} ({})", f.path),
        None => f.path.clone(),
    };
    let tests: usize = files
        .iter()
        .map(|f| f.outcome.as_ref().map_or(1, |e| e.len().max(1)))
        .sum();
    let failures: usize = files
        .iter()
        .filter_map(|f| f.outcome.as_ref().ok())
        .map(|e| e.iter().filter(|e| !e.pass).count())
        .sum();
    let errors = files.iter().filter(|f| f.outcome.is_err()).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"stampede\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\">\n"
    ));
    for f in files {
        let name = escape_xml(&suite_name(f));
        let file = escape_xml(&f.path);
        match &f.outcome {
            Err(reason) => {
                let detail = escape_xml(reason);
                out.push_str(&format!(
                    "  <testsuite name=\"{name}\" file=\"{file}\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\">\n    <testcase classname=\"{name}\" name=\"could not run\" file=\"{file}\">\n      <error type=\"scenario\" message=\"{detail}\">{detail}</error>\n    </testcase>\n  </testsuite>\n"
                ));
            }
            Ok(expectations) => {
                let failed = expectations.iter().filter(|e| !e.pass).count();
                let skipped = usize::from(expectations.is_empty());
                out.push_str(&format!(
                    "  <testsuite name=\"{name}\" file=\"{file}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" skipped=\"{skipped}\">\n",
                    expectations.len().max(1)
                ));
                if expectations.is_empty() {
                    out.push_str("    ");
                    out.push_str(&nothing_checked(&name, &format!(" file=\"{file}\"")));
                }
                for e in expectations {
                    let case = escape_xml(&e.name);
                    if e.pass {
                        out.push_str(&format!(
                            "    <testcase classname=\"{name}\" name=\"{case}\" file=\"{file}\"/>\n"
                        ));
                    } else {
                        let early = f.aborted.as_ref().map(Early::Aborted);
                        let detail = escape_xml(&failure_detail(e, early));
                        out.push_str(&format!(
                            "    <testcase classname=\"{name}\" name=\"{case}\" file=\"{file}\">\n      <failure type=\"expectation\" message=\"{detail}\">{detail}</failure>\n    </testcase>\n"
                        ));
                    }
                }
                out.push_str("  </testsuite>\n");
            }
        }
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run the user stopped reads as stopped in CI, not as failing: each failure says
    /// it was interrupted, where it read like any failed expectation.
    #[test]
    fn an_interrupted_runs_failures_say_it_was_interrupted() {
        let summary = Summary {
            scenario: "s".into(),
            expectations: vec![Expectation {
                name: "completed".into(),
                limit: ">= 600".into(),
                actual: 345.0,
                pass: false,
            }],
            interrupted: Some(Interrupted {
                signal: "SIGINT".into(),
                at_ms: 1_500,
            }),
            ..Summary::default()
        };
        let xml = junit_run(&summary);
        assert!(
            xml.contains("message=\"INTERRUPTED by SIGINT at 1.500 s"),
            "{xml}"
        );
    }

    /// A run with no expectations is one skipped test case, not a suite of none.
    #[test]
    fn a_run_with_no_expectations_is_a_skipped_case() {
        let xml = junit_suite(&[("bare".to_string(), Vec::new())]);
        assert!(
            xml.contains("tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"1\""),
            "{xml}"
        );
        assert!(
            xml.contains("<skipped message=\"no [expect] table"),
            "{xml}"
        );
    }
}
