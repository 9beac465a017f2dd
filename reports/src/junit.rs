//! JUnit XML: one `<testcase>` per expectation, so CI systems show each expectation as a test.
//! No timestamps or durations: the file is byte-identical for the same run.

use crate::escape::escape_xml;
use crate::number::fmt_figure;
use crate::schema::Expectation;

/// One `<testsuites>` document with a `<testsuite>` per scenario and a `<testcase>` per
/// expectation (`classname` = scenario name, `name` = the expectation's key). Failed
/// expectations carry a `<failure>` with the limit and the actual value. Used for a single
/// run's `junit.xml` and for `stampede check`'s combined file.
pub fn junit_suite(results: &[(String, Vec<Expectation>)]) -> String {
    let tests: usize = results.iter().map(|r| r.1.len()).sum();
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
        out.push_str(&format!(
            "  <testsuite name=\"{scenario}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" skipped=\"0\">\n",
            expectations.len()
        ));
        for e in expectations {
            let name = escape_xml(&e.name);
            if e.pass {
                out.push_str(&format!(
                    "    <testcase classname=\"{scenario}\" name=\"{name}\"/>\n"
                ));
            } else {
                let detail = escape_xml(&format!(
                    "{}: actual {}, limit {}",
                    e.name,
                    fmt_figure(e.actual),
                    e.limit
                ));
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
