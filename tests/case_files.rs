//! `dead_letter.jsonl` and `escalations.jsonl` against their documented schema (the tables
//! in `docs/contract.md`): every line of the shipped scenarios that leave any, with exactly
//! the documented keys and types, one dead letter per action that did not complete and one
//! case file per escalation, no credential or body in them, and the same bytes on a rerun.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use stampede_sim::run::{run_virtual, RunOptions};
use stampede_sim::scenario::{self, parse_override};

/// `(scenario, --set)`: runs that leave dead letters, escalations, or both.
const RUNS: [(&str, Option<&str>); 4] = [
    ("five-step-safety", None),
    ("uncertain-writes", None),
    ("layers", None),
    ("quickstart", Some("client.preset=naive")),
];

/// The documented schema of one file: key -> (JSON type, may be null), read from the table
/// that follows `heading` in `docs/contract.md`.
fn documented(heading: &str) -> BTreeMap<String, (String, bool)> {
    let contract = std::fs::read_to_string(common::repo().join("docs/contract.md")).unwrap();
    let from = contract
        .find(heading)
        .unwrap_or_else(|| panic!("docs/contract.md documents {heading}"));
    let mut keys = BTreeMap::new();
    let mut in_table = false;
    for line in contract[from..].lines().skip(1) {
        if line.starts_with("| key |") {
            in_table = true;
            continue;
        }
        if !in_table || line.starts_with("| ---") {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let key = cells[1].trim_matches('`').to_string();
        let ty = cells[2];
        keys.insert(
            key,
            (ty.trim_end_matches('?').to_string(), ty.ends_with('?')),
        );
    }
    assert!(!keys.is_empty(), "a key table under {heading}");
    keys
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every line of `path` against `schema`; returns the lines parsed.
fn check_file(path: &Path, schema: &BTreeMap<String, (String, bool)>) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let where_ = format!("{}:{}", path.display(), n + 1);
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{where_}: {e}"));
        let obj = v
            .as_object()
            .unwrap_or_else(|| panic!("{where_}: an object"));
        let got: Vec<&String> = obj.keys().collect();
        let want: Vec<&String> = schema.keys().collect();
        assert_eq!(got, want, "{where_}: the documented keys, exactly");
        for (key, (ty, nullable)) in schema {
            let t = type_of(&obj[key]);
            assert!(
                t == ty || (*nullable && t == "null"),
                "{where_}: `{key}` is {t}, documented {ty}{}",
                if *nullable { "?" } else { "" }
            );
        }
        lines.push(v);
    }
    lines
}

/// Runs `name` (with `set`) into a fresh folder; returns the folder, the summary and the
/// scenario's credential keys.
fn run(name: &str, set: Option<&str>) -> (tempfile::TempDir, Value, Vec<String>) {
    let scenario = common::shipped(name, set);
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        out_dir: Some(dir.path().to_path_buf()),
        render: false,
        ..RunOptions::default()
    };
    let outcome = run_virtual(&scenario, &opts).expect("run plays");
    let summary = serde_json::to_value(&outcome.report.summary).unwrap();
    let keys = scenario
        .provider
        .credentials
        .iter()
        .map(|c| c.key.clone())
        .collect();
    (dir, summary, keys)
}

#[test]
fn every_line_matches_the_documented_schema_and_counts_match_the_summary() {
    let dead_schema = documented("`dead_letter.jsonl`: an action");
    let case_schema = documented("`escalations.jsonl`: the case file");
    let (mut dead_total, mut case_total) = (0, 0);
    for (name, set) in RUNS {
        let (dir, summary, keys) = run(name, set);
        let dead = check_file(&dir.path().join("dead_letter.jsonl"), &dead_schema);
        let cases = check_file(&dir.path().join("escalations.jsonl"), &case_schema);
        let failed = summary["failed"].as_u64().unwrap();
        let escalations = summary["escalations"].as_u64().unwrap();
        assert_eq!(
            dead.len() as u64,
            failed + escalations,
            "{name}: one dead letter per action that failed or was escalated"
        );
        assert_eq!(
            cases.len() as u64,
            escalations,
            "{name}: one case per escalation"
        );
        let escalated = dead.iter().filter(|d| d["escalated"] == true).count();
        assert_eq!(
            escalated,
            cases.len(),
            "{name}: dead letters point at their cases"
        );
        for case in &cases {
            let timeline = case["timeline"].as_array().unwrap();
            assert_eq!(
                timeline.len() as u64 + case["attempts_left_out"].as_u64().unwrap(),
                case["budget_used"]["attempts"].as_u64().unwrap(),
                "{name}: the timeline holds every attempt the budget counts"
            );
            assert!(!case["next_options"].as_array().unwrap().is_empty());
        }
        for file in ["dead_letter.jsonl", "escalations.jsonl"] {
            let text = std::fs::read_to_string(dir.path().join(file)).unwrap();
            for key in &keys {
                assert!(
                    !text.contains(key.as_str()),
                    "{name}/{file}: holds a full credential"
                );
            }
            for body in ["\"messages\"", "\"content\"", "\"prompt\""] {
                assert!(
                    !text.contains(body),
                    "{name}/{file}: holds a body field {body}"
                );
            }
        }
        dead_total += dead.len();
        case_total += cases.len();
    }
    // The runs above must exercise both files, or this test would prove nothing.
    assert!(
        dead_total > 0 && case_total > 0,
        "{dead_total} {case_total}"
    );
}

#[test]
fn a_case_file_shows_the_timeline_and_what_each_option_risks() {
    // five-step-safety: two summaries stopped by the breaker after repeated 503s.
    let (dir, _, _) = run("five-step-safety", None);
    let text = std::fs::read_to_string(dir.path().join("escalations.jsonl")).unwrap();
    let case: Value = serde_json::from_str(text.lines().next().expect("a case")).unwrap();
    assert_eq!(case["reason"], "circuit_open");
    let timeline = case["timeline"].as_array().unwrap();
    assert!(timeline.len() >= 2, "{timeline:?}");
    for note in timeline {
        assert_eq!(note["status"], 503, "{note}");
        assert!(note["retry_after_ms"].as_u64().is_some(), "{note}");
        assert!(note["answered_at_ms"].as_u64() >= note["sent_at_ms"].as_u64());
    }
    // A 503 is refused before executing, and a chat completion has no look-up.
    assert_eq!(case["may_have_executed"], false);
    assert_eq!(case["reconcile_with"], Value::Null);
    assert!(case["idempotency_key"].as_str().is_some());
    let options = case["next_options"].as_array().unwrap();
    assert!(!options.is_empty());
    for o in options {
        assert!(!o["risk"].as_str().unwrap().is_empty(), "{o}");
        assert_eq!(o["wait_ms"].is_u64(), o["option"] == "wait", "{o}");
    }
}

#[test]
fn an_uncertain_write_nobody_can_look_up_is_handed_over_with_its_look_up() {
    // uncertain-writes, with every look-up of the records API refused: a write that may
    // have executed cannot be settled, so a person must decide.
    let shipped = common::repo().join("scenarios/uncertain-writes.toml");
    let text = std::fs::read_to_string(shipped).unwrap().replace(
        "[[workload]]",
        "[[provider.faults]]\nstatus = 503\nroute = \"find_records\"\nprobability = 1.0\n\n[[workload]]",
    );
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("no-look-ups.toml");
    std::fs::write(&path, text).unwrap();
    let scenario = scenario::load(&path, None, &[]).expect("scenario loads");
    let opts = RunOptions {
        out_dir: Some(tmp.path().join("run")),
        render: false,
        ..RunOptions::default()
    };
    std::fs::create_dir_all(tmp.path().join("run")).unwrap();
    let summary = run_virtual(&scenario, &opts).unwrap().report.summary;
    assert!(summary.escalations > 0, "{summary:?}");
    let text = std::fs::read_to_string(tmp.path().join("run/escalations.jsonl")).unwrap();
    let cases: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(cases.len() as u64, summary.escalations);
    let held: Vec<&Value> = cases
        .iter()
        .filter(|c| c["reason"] == "reconciliation_unavailable")
        .collect();
    assert!(!held.is_empty(), "{:?}", cases.first());
    for case in held {
        assert_eq!(case["may_have_executed"], true, "{case}");
        assert_eq!(case["endpoint"], "/v1/records");
        let look_up = case["reconcile_with"].as_str().expect("a look-up to run");
        assert!(
            look_up.starts_with("GET /v1/records?external_ref="),
            "{look_up}"
        );
        let kinds: Vec<&str> = case["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["kind"].as_str().unwrap())
            .collect();
        assert!(
            kinds.contains(&"lookup"),
            "the look-ups tried are in the timeline: {kinds:?}"
        );
        let options: Vec<&str> = case["next_options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["option"].as_str().unwrap())
            .collect();
        assert!(options.contains(&"query_status"), "{options:?}");
        for o in case["next_options"].as_array().unwrap() {
            if o["option"] == "send_new_operation" {
                assert!(o["risk"]
                    .as_str()
                    .unwrap()
                    .contains("second external effect"));
            }
        }
    }
}

#[test]
fn the_page_and_summary_md_link_the_files_that_hold_cases() {
    let rendered = |set: Option<&str>| {
        let path = common::repo().join("scenarios/quickstart.toml");
        let sets: Vec<_> = set
            .map(|s| parse_override(s).unwrap())
            .into_iter()
            .collect();
        let scenario = scenario::load(&path, None, &sets).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let opts = RunOptions {
            out_dir: Some(dir.path().to_path_buf()),
            render: true,
            ..RunOptions::default()
        };
        let failed = run_virtual(&scenario, &opts).unwrap().report.summary.failed;
        let page = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
        let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
        (failed, page, md)
    };
    // The naive client leaves failures: both the page and summary.md point at them.
    let (failed, page, md) = rendered(Some("client.preset=naive"));
    assert!(failed > 0);
    assert!(page.contains("<a href=\"dead_letter.jsonl\">dead_letter.jsonl</a>: 300 actions"));
    assert!(md.contains("`dead_letter.jsonl`: 300 actions"), "{md}");
    // No escalation, so no link to an empty escalations.jsonl.
    assert!(!page.contains("href=\"escalations.jsonl\""));
    // Every action completed: nothing left for a person, no section.
    let (failed, page, md) = rendered(None);
    assert_eq!(failed, 0);
    assert!(!page.contains("id=\"case-files\""));
    assert!(!md.contains("Left for a person"));
}

#[test]
fn the_same_seed_writes_the_same_bytes() {
    let (a, _, _) = run("quickstart", Some("client.preset=naive"));
    let (b, _, _) = run("quickstart", Some("client.preset=naive"));
    for file in ["dead_letter.jsonl", "escalations.jsonl"] {
        assert_eq!(
            std::fs::read(a.path().join(file)).unwrap(),
            std::fs::read(b.path().join(file)).unwrap(),
            "{file}"
        );
    }
}
