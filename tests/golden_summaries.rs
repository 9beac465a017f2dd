//! Every shipped scenario's summary, as written, against a golden copy in `tests/golden/`
//! (wall time left out): a rewrite of the hot path, the journal or the drivers that changes
//! any figure of any scenario fails here, naming the scenario and the keys that moved.
//!
//! ```sh
//! STAMPEDE_BLESS=1 cargo test --test integration golden_summaries    # rewrite after an intended change
//! ```

use crate::common;

use serde_json::Value;
use stampede_sim::run::{run_virtual, RunOptions};

/// Golden runs besides the scenarios as written: `(golden name, scenario, --set)`. The naive
/// backlog is the benchmark's heaviest path.
const VARIANTS: [(&str, &str, &str); 2] = [
    ("backlog-38k@naive", "backlog-38k", "client.preset=naive"),
    ("quickstart@naive", "quickstart", "client.preset=naive"),
];

fn summary_of(name: &str, set: Option<&str>) -> Value {
    let scenario = common::shipped(name, set);
    let summary = run_virtual(&scenario, &RunOptions::default())
        .expect("run plays")
        .report
        .summary;
    let mut v = serde_json::to_value(&summary).expect("summary serializes");
    v.as_object_mut().expect("an object").remove("wall_ms");
    v
}

/// Keys whose values differ, dotted.
fn moved(golden: &Value, now: &Value, at: &str, out: &mut Vec<String>) {
    match (golden, now) {
        (Value::Object(a), Value::Object(b)) => {
            for k in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                let here = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => moved(x, y, &here, out),
                    _ => out.push(here),
                }
            }
        }
        (a, b) if a != b => out.push(format!("{at}: {a} -> {b}")),
        _ => {}
    }
}

#[test]
fn every_shipped_scenario_gives_its_golden_summary() {
    let dir = common::repo().join("tests/golden");
    let mut names: Vec<String> = std::fs::read_dir(common::repo().join("scenarios"))
        .expect("scenarios/")
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "toml").then(|| p.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
    let mut runs: Vec<(String, String, Option<&str>)> =
        names.iter().map(|n| (n.clone(), n.clone(), None)).collect();
    for (golden, name, set) in VARIANTS {
        runs.push((golden.to_string(), name.to_string(), Some(set)));
    }
    let bless = std::env::var_os("STAMPEDE_BLESS").is_some();
    let mut failures = Vec::new();
    for (name, scenario, set) in &runs {
        let now = summary_of(scenario, *set);
        let path = dir.join(format!("{name}.json"));
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            let text = serde_json::to_string_pretty(&now).unwrap() + "\n";
            std::fs::write(&path, text).unwrap();
            continue;
        }
        let golden: Value = match std::fs::read_to_string(&path) {
            Ok(t) => serde_json::from_str(&t).expect("golden summary parses"),
            Err(_) => {
                failures.push(format!("{name}: no {}", path.display()));
                continue;
            }
        };
        let mut keys = Vec::new();
        moved(&golden, &now, "", &mut keys);
        if !keys.is_empty() {
            failures.push(format!("{name}: {}", keys.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "summaries moved (STAMPEDE_BLESS=1 cargo test --test integration golden_summaries if intended):\n{}",
        failures.join("\n")
    );
}
