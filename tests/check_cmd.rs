//! `stampede check`: the shipped scenarios pass, a failing expectation makes the check exit 1
//! with a JUnit failure, and a malformed file exits 2 while the good ones still run.

use std::path::PathBuf;

use crate::common;
use common::{a_str, repo, stampede, text};

/// A small scenario (`count` LLM calls against a 300 rpm account), with `expect` as the
/// `[expect]` table's lines.
fn scenario(name: &str, count: u32, expect: &str) -> String {
    format!(
        r#"name = "{name}"
seed = 3
duration = "10m"

[provider]
latency = {{ median = "500ms", p99 = "2s" }}

[[provider.scopes]]
id = "account:t"
rpm = 300
tpm = 400_000
concurrency = 20

[[provider.credentials]]
key = "sk-t"
scope = "account:t"

[[workload]]
tenant = "t"
credential = "sk-t"
class = "llm"
count = {count}
arrival = "backlog"
prompt_tokens = 300
max_output_tokens = 100
deadline = "5m"

[client]
preset = "stampede"
workers = 8

[expect]
{expect}
"#
    )
}

/// A suite's scenario name: `name (path)` without the path.
fn scenario_part(suite: &str) -> &str {
    suite.split(" (").next().unwrap_or(suite)
}

/// `(suite name, [(testcase name, has a <failure>)])` for every `<testsuite>`.
fn junit_cases(xml: &str) -> Vec<(String, Vec<(String, bool)>)> {
    let doc = roxmltree::Document::parse(xml).expect("junit.xml is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    root.children()
        .filter(|n| n.has_tag_name("testsuite"))
        .map(|suite| {
            let cases = suite
                .children()
                .filter(|n| n.has_tag_name("testcase"))
                .map(|c| {
                    let failed = c.children().any(|f| f.has_tag_name("failure"));
                    (c.attribute("name").unwrap_or_default().to_string(), failed)
                })
                .collect();
            (
                suite.attribute("name").unwrap_or_default().to_string(),
                cases,
            )
        })
        .collect()
}

#[test]
fn shipped_scenarios_pass_with_one_line_each_and_a_testcase_per_expectation() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let junit = tmp.path().join("junit.xml");
    let scenarios = repo().join("scenarios");
    let out = stampede(&[
        "check",
        a_str(&scenarios),
        "--out",
        a_str(&runs),
        "--junit",
        a_str(&junit),
        "--no-render",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );

    let mut files: Vec<PathBuf> = std::fs::read_dir(&scenarios)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let verdicts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("PASS ") || l.starts_with("FAIL "))
        .collect();
    assert_eq!(
        verdicts.len(),
        files.len(),
        "one line per scenario:\n{stdout}"
    );
    assert!(verdicts.iter().all(|l| l.starts_with("PASS ")));

    let suites = junit_cases(&std::fs::read_to_string(&junit).unwrap());
    assert_eq!(suites.len(), files.len());
    for (name, cases) in &suites {
        // Each scenario's run directory holds its summary: the JUnit file has exactly its
        // expectations, none failed.
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(runs.join(scenario_part(name)).join("summary.json")).unwrap(),
        )
        .unwrap();
        let expected: Vec<String> = summary["expectations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect();
        let got: Vec<String> = cases.iter().map(|c| c.0.clone()).collect();
        assert_eq!(got, expected, "testcases of {name}");
        assert!(cases.iter().all(|c| !c.1));
        let prefix = format!("PASS {}: ", scenario_part(name));
        assert!(verdicts.iter().any(|l| l.starts_with(&prefix)), "{stdout}");
    }
}

#[test]
fn a_failing_expectation_exits_1_with_a_junit_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("scenarios");
    std::fs::create_dir_all(dir.join("nested")).unwrap();
    std::fs::write(
        dir.join("a-holds.toml"),
        scenario("holds", 60, "duplicates = 0\ncompleted = { min = 60 }"),
    )
    .unwrap();
    // Sixty calls cannot be done in ten attempts.
    std::fs::write(
        dir.join("nested").join("b-too-strict.toml"),
        scenario("too-strict", 60, "duplicates = 0\noutbound_attempts = 10"),
    )
    .unwrap();
    let junit = tmp.path().join("junit.xml");
    let out = stampede(&["check", a_str(&dir), "--no-write", "--junit", a_str(&junit)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "stdout:\n{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("PASS holds: "), "{stdout}");
    assert!(lines[1].starts_with("FAIL too-strict: "), "{stdout}");
    assert!(
        lines[2]
            .trim_start()
            .starts_with("FAIL outbound_attempts: actual "),
        "{stdout}"
    );
    assert!(lines[2].ends_with("limit <= 10"), "{stdout}");

    let suites = junit_cases(&std::fs::read_to_string(&junit).unwrap());
    let names: Vec<&str> = suites.iter().map(|s| scenario_part(&s.0)).collect();
    assert_eq!(names, ["holds", "too-strict"]);
    assert!(
        suites[1].0.ends_with("b-too-strict.toml)"),
        "{}",
        suites[1].0
    );
    assert_eq!(
        suites[1].1,
        [
            ("duplicates".to_string(), false),
            ("outbound_attempts".to_string(), true)
        ]
    );
    assert!(suites[0].1.iter().all(|c| !c.1));
}

#[test]
fn a_malformed_scenario_exits_2_naming_the_file_and_the_others_still_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("a.toml"), scenario("first", 30, "duplicates = 0")).unwrap();
    let broken =
        scenario("broken", 30, "duplicates = 0").replace("duration = \"10m\"", "duration = 10");
    std::fs::write(dir.join("b-broken.toml"), broken).unwrap();
    std::fs::write(dir.join("c.toml"), scenario("last", 30, "duplicates = 0")).unwrap();
    std::fs::write(dir.join("notes.txt"), "not a scenario").unwrap();
    let junit = dir.join("out").join("junit.xml");
    let out = stampede(&["check", a_str(dir), "--no-write", "--junit", a_str(&junit)]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("PASS first: "), "{stdout}");
    assert!(lines[1].starts_with("ERROR "), "{stdout}");
    assert!(lines[1].contains("b-broken.toml"), "{stdout}");
    assert!(lines[1].contains("duration"), "the key is named: {stdout}");
    assert!(lines[2].starts_with("PASS last: "), "{stdout}");
    assert!(stderr.contains("could not run"), "{stderr}");
    // What was measured is kept; the file that could not run is an error test case.
    let xml = std::fs::read_to_string(&junit).unwrap();
    let suites = junit_cases(&xml);
    let names: Vec<&str> = suites.iter().map(|s| scenario_part(&s.0)).collect();
    assert_eq!(names, ["first", a_str(&dir.join("b-broken.toml")), "last"]);
    assert_eq!(suites[1].1, [("could not run".to_string(), false)]);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(doc.root_element().attribute("errors"), Some("1"));
    let error = doc
        .descendants()
        .find(|n| n.has_tag_name("error"))
        .expect("an <error> element");
    assert!(
        error
            .attribute("message")
            .unwrap()
            .contains("b-broken.toml"),
        "{xml}"
    );
}

/// A `*.toml` link whose file is not there is an error naming it, not a file skipped: a
/// check had passed playing one scenario fewer than its folder lists.
#[cfg(unix)]
#[test]
fn a_broken_link_to_a_scenario_exits_2_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("a.toml"), scenario("first", 30, "duplicates = 0")).unwrap();
    std::os::unix::fs::symlink(dir.join("gone.toml"), dir.join("b-link.toml")).unwrap();
    let out = stampede(&["check", a_str(dir), "--no-write"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("ERROR ") && l.contains("b-link.toml")),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("PASS first: ")),
        "{stdout}"
    );
}

#[test]
fn a_missing_path_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nowhere");
    let out = stampede(&["check", a_str(&missing), "--no-write"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stdout).contains("nowhere: no such file or folder"));
    // In the JUnit file too, as an error test case.
    let junit = tmp.path().join("junit.xml");
    let out = stampede(&[
        "check",
        a_str(&missing),
        "--no-write",
        "--junit",
        a_str(&junit),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let root = doc.root_element();
    assert_eq!(
        (root.attribute("tests"), root.attribute("errors")),
        (Some("1"), Some("1")),
        "{xml}"
    );
    assert!(xml.contains("nowhere: no such file or folder"), "{xml}");
}

/// An `--out` that is a file is refused before anything plays, where every scenario used to
/// play and then be reported an error, with a JUnit path under the file claimed written.
#[test]
fn an_out_that_is_a_file_is_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.toml");
    std::fs::write(&file, scenario("s", 5, "")).unwrap();
    let not_a_folder = tmp.path().join("out.txt");
    std::fs::write(&not_a_folder, "x").unwrap();
    let out = stampede(&["check", a_str(&file), "--out", a_str(&not_a_folder)]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("out.txt: it is a file, not a folder"), "{err}");
    assert!(
        text(&out.stdout).is_empty(),
        "nothing played: {}",
        text(&out.stdout)
    );
}

/// A `--junit` that cannot be written as a file (a folder, or under a file) is refused
/// before anything plays, naming the flag and what to give: every scenario played, the
/// tally said "junit: PATH" as if written, and only then the write failed, so CI had no
/// report of a check that took its time.
#[test]
fn a_junit_that_cannot_be_a_file_is_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.toml");
    std::fs::write(&file, scenario("s", 5, "")).unwrap();
    let a_file = tmp.path().join("out.txt");
    std::fs::write(&a_file, "x").unwrap();
    let under_a_file = a_file.join("junit.xml");
    let a_folder = tmp.path().join("reports");
    std::fs::create_dir(&a_folder).unwrap();
    for (junit, says) in [
        (&a_folder, "it is a folder"),
        (&under_a_file, "cannot be made"),
    ] {
        for extra in [
            &["--no-write"][..],
            &["--out", a_str(&tmp.path().join("runs"))],
        ] {
            let mut args = vec!["check", a_str(&file), "--junit", a_str(junit)];
            args.extend_from_slice(extra);
            let out = stampede(&args);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains(&format!("--junit {}: {says}", junit.display()))
                    && err.contains("give --junit the path of a file"),
                "{args:?}: {err}"
            );
            assert!(
                text(&out.stdout).is_empty(),
                "nothing played: {}",
                text(&out.stdout)
            );
        }
    }
    assert!(
        a_folder.read_dir().unwrap().next().is_none(),
        "the folder is left alone"
    );
}

#[test]
fn two_files_with_one_name_give_two_suites_named_by_path() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["a.toml", "b.toml"] {
        std::fs::write(dir.join(f), scenario("same", 20, "duplicates = 0")).unwrap();
    }
    let junit = tmp.path().join("junit.xml");
    let out = stampede(&["check", a_str(&dir), "--no-write", "--junit", a_str(&junit)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let suites = junit_cases(&std::fs::read_to_string(&junit).unwrap());
    assert_eq!(suites.len(), 2);
    assert_ne!(suites[0].0, suites[1].0);
    assert!(suites[0].0.starts_with("same (") && suites[0].0.ends_with("a.toml)"));
}

#[test]
fn check_out_holds_every_file_it_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.toml");
    std::fs::write(&file, scenario("one", 20, "duplicates = 0")).unwrap();
    let out_dir = tmp.path().join("elsewhere");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args([
            "check",
            a_str(&file),
            "--no-render",
            "--out",
            a_str(&out_dir),
        ])
        .current_dir(tmp.path())
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out_dir.join("junit.xml").is_file());
    assert!(!tmp.path().join("runs").exists(), "nothing under runs/");
}

/// A scenario with no `[expect]` still passes (it may be there to look at), but the check
/// says nothing was checked, on its line and in junit.xml as a skipped test case: it had
/// read `PASS` with `tests="0"`, whatever the run did.
#[test]
fn a_scenario_with_no_expectations_says_nothing_was_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bare.toml"), scenario("bare", 20, "")).unwrap();
    let junit = tmp.path().join("junit.xml");
    let out = stampede(&[
        "check",
        a_str(&dir),
        "--out",
        a_str(&tmp.path().join("runs")),
        "--junit",
        a_str(&junit),
        "--no-render",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("PASS bare"), "{stdout}");
    assert!(stdout.contains("nothing was checked"), "{stdout}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite.attribute("tests"), Some("1"), "{xml}");
    assert_eq!(suite.attribute("skipped"), Some("1"), "{xml}");
    assert!(
        doc.descendants().any(|n| n.has_tag_name("skipped")),
        "{xml}"
    );
    assert_eq!(doc.root_element().attribute("tests"), Some("1"), "{xml}");
}
