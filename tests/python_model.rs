//! The hand-written Python model of the naive backlog (`scripts/backlog_model.py`), the
//! yardstick of the README's Speed table, models the same thing the simulator plays: its
//! counts for seed 7 land within a few percent of the simulator's golden summary of
//! `backlog-38k` under the naive preset (`tests/golden/backlog-38k@naive.json`). A speed
//! comparison against a model of something else would mean nothing; if the scenario or the
//! simulator's rules move, this test says the model must move with them.
//!
//! The two draw from different random streams (Python's, ChaCha8), so they agree in
//! distribution, not to the attempt. Without python3 the test is skipped, unless
//! `STAMPEDE_REQUIRE_SDKS=1` (CI, which installs python3 for the SDK tests).

use crate::common;

use std::process::Command;

use serde_json::Value;

/// `(what, where the golden summary has it, the model's key, tolerance)`: each of the
/// model's figures within `tolerance` (a fraction) of the golden one.
const FIGURES: &[(&str, &str, &str, f64)] = &[
    ("outbound attempts", "/outbound_attempts", "attempts", 0.01),
    ("retries", "/retries", "retries", 0.01),
    ("429s", "/status_counts/429", "rejected_429", 0.01),
    (
        "429s for the requests per minute",
        "/rate_limit_hits/rpm",
        "rejected_429_rpm",
        0.02,
    ),
    (
        "429s for concurrency",
        "/rate_limit_hits/concurrency",
        "rejected_429_concurrency",
        0.05,
    ),
    ("completed", "/completed", "completed", 0.02),
    ("failed", "/failed", "failed", 0.02),
    (
        "deadline misses",
        "/deadline_misses",
        "deadline_misses",
        0.02,
    ),
    (
        "failed, attempts exhausted",
        "/failures_by_reason/attempts_exhausted",
        "failed_attempts_exhausted",
        0.05,
    ),
    (
        "goodput per minute",
        "/goodput_per_min",
        "goodput_per_min",
        0.02,
    ),
];

#[test]
fn the_python_model_counts_what_the_simulator_counts() {
    let repo = common::repo();
    let out = match Command::new("python3")
        .arg(repo.join("scripts/backlog_model.py"))
        .args(["--json", "--seed", "7"])
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            assert!(
                std::env::var_os("STAMPEDE_REQUIRE_SDKS").is_none(),
                "python3 cannot run ({e}): install python3"
            );
            eprintln!("skipped: python3 cannot run ({e})");
            return;
        }
    };
    assert!(
        out.status.success(),
        "backlog_model.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let model: Value = serde_json::from_slice(&out.stdout).expect("the model prints JSON");
    assert_eq!(model["jobs"], 38_000, "the scenario's backlog");
    let golden: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.join("tests/golden/backlog-38k@naive.json"))
            .expect("the golden summary"),
    )
    .expect("the golden summary parses");
    assert_eq!(golden["seed"], 7, "the golden run's seed is the model's");

    let mut apart = Vec::new();
    for &(what, at, key, tolerance) in FIGURES {
        let ours = golden
            .pointer(at)
            .and_then(Value::as_f64)
            .unwrap_or_else(|| panic!("the golden summary has no {at}"));
        let theirs = model[key]
            .as_f64()
            .unwrap_or_else(|| panic!("the model prints no {key}"));
        let off = (theirs - ours).abs() / ours;
        if off > tolerance {
            apart.push(format!(
                "{what}: simulator {ours}, Python model {theirs} ({:.1}% apart, {:.0}% allowed)",
                off * 100.0,
                tolerance * 100.0
            ));
        }
    }
    assert!(
        apart.is_empty(),
        "scripts/backlog_model.py no longer models backlog-38k under the naive preset:\n{}",
        apart.join("\n")
    );
}
