//! The run directory stays a size people keep: a backlog like backlog-38k's, cut to 5,000
//! requests so the test is quick in a debug build, writes at most a fixed number of bytes per
//! request under the naive and the stampede presets. Asked for, the audit trail is written in
//! full (one `action_requested` per request, one `action_sent` per attempt) and verifies,
//! and asking for it changes no other file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// backlog-38k with 5,000 summaries (its deadline and cap scaled alike).
const BACKLOG_5K: &str = r#"
name = "backlog-5k"
seed = 7
duration = "20m"

[provider]
latency = { median = "2.8s", p99 = "9s" }

[[provider.scopes]]
id = "account:support"
rpm = 600
tpm = 300_000
concurrency = 48
count_rejected = true

[[provider.credentials]]
key = "sk-support-batch"
scope = "account:support"

[[workload]]
tenant = "support"
credential = "sk-support-batch"
class = "llm"
count = 5_000
arrival = "backlog"
prompt_tokens = { lognormal = { median = 300, p99 = 700 } }
max_output_tokens = 150
deadline = "10m"

[client]
preset = "stampede"
workers = 96

[client.policy.admission]
queue_capacity = 96

[client.policy.classes.llm]
max_attempts = 100
"#;

const REQUESTS: u64 = 5_000;

/// Bytes per request the whole directory may take. The naive storm sends about 11 attempts
/// per request, and attempts.csv (kept whole: one ~130-byte row per attempt) is nearly all
/// of it, about 1.5 KB per request; before the audit trail became opt-in the same directory
/// took about 11 KB per request.
const BUDGET_PER_REQUEST: u64 = 2_500;

fn stampede(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(args)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("STAMPEDE_AUDIT_KEY")
        .output()
        .expect("the stampede binary runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn scenario(dir: &Path) -> PathBuf {
    let path = dir.join("backlog-5k.toml");
    std::fs::write(&path, BACKLOG_5K).unwrap();
    path
}

/// Plays the scenario into `out` (plots and page included) and returns the exit code.
fn run(scenario: &Path, out: &Path, extra: &[&str]) -> i32 {
    let mut args = vec![
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = stampede(&args);
    let code = o.status.code().unwrap_or(-1);
    assert!(code == 0 || code == 1, "{}", text(&o));
    code
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

fn listing(dir: &Path) -> String {
    let mut rows: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            format!(
                "{:>12} {}",
                e.metadata().unwrap().len(),
                e.file_name().to_string_lossy()
            )
        })
        .collect();
    rows.sort();
    rows.join("\n")
}

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn count(s: &serde_json::Value, key: &str) -> u64 {
    s[key]
        .as_u64()
        .unwrap_or_else(|| panic!("summary has {key}"))
}

fn without_wall_ms(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("summary.json"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with("\"wall_ms\""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_backlog_run_directory_stays_within_its_byte_budget_under_either_preset() {
    let tmp = tempfile::tempdir().unwrap();
    let path = scenario(tmp.path());
    for (preset, extra) in [
        ("naive", &["--set", "client.preset=naive"][..]),
        ("stampede", &[][..]),
    ] {
        let out = tmp.path().join(preset);
        run(&path, &out, extra);
        let s = summary(&out);
        assert_eq!(count(&s, "logical_requests"), REQUESTS);
        let bytes = dir_bytes(&out);
        assert!(
            bytes <= BUDGET_PER_REQUEST * REQUESTS,
            "{preset}: {bytes} bytes for {REQUESTS} requests, over {BUDGET_PER_REQUEST} a \
             request:\n{}",
            listing(&out)
        );
        // Every documented file is there, attempts.csv whole: a header and one row per
        // attempt the provider saw.
        for file in [
            "summary.json",
            "timeseries.csv",
            "attempts.csv",
            "tenants.csv",
            "unfinished.csv",
            "index.html",
            "junit.xml",
            "summary.md",
            "attempts.svg",
        ] {
            assert!(out.join(file).exists(), "{preset}: no {file}");
        }
        let rows = std::fs::read_to_string(out.join("attempts.csv"))
            .unwrap()
            .lines()
            .count() as u64;
        assert_eq!(rows, count(&s, "outbound_attempts") + 1, "{preset}");
        // The trail was not asked for: not written, and the reports say how to get it.
        assert!(!out.join("audit.jsonl").exists(), "{preset}");
        let page = std::fs::read_to_string(out.join("index.html")).unwrap();
        assert!(
            page.contains("data-file=\"audit.jsonl\"") && page.contains("--audit"),
            "{preset}: the page does not say how to get the audit trail"
        );
        let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
        assert!(
            md.contains("`audit.jsonl`") && md.contains("--audit"),
            "{preset}: {md}"
        );
    }
    // The naive storm really is the large case this budget is about.
    let naive = summary(&tmp.path().join("naive"));
    assert!(
        count(&naive, "outbound_attempts") > 8 * REQUESTS,
        "{}",
        naive["outbound_attempts"]
    );
}

#[test]
fn asked_for_the_audit_trail_is_written_whole_and_verifies_and_changes_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let path = scenario(tmp.path());
    let naive = ["--set", "client.preset=naive"];
    let plain = tmp.path().join("plain");
    run(&path, &plain, &naive);
    let audited = tmp.path().join("audited");
    run(&path, &audited, &[&naive[..], &["--audit"]].concat());
    // The same run by the scenario key instead of the flag.
    let keyed = tmp.path().join("keyed");
    run(
        &path,
        &keyed,
        &[&naive[..], &["--set", "output.audit=true"]].concat(),
    );

    let trail = audited.join("audit.jsonl");
    let o = stampede(&["audit", "verify", trail.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("whole"), "{}", text(&o));
    assert!(audited.join("audit.jsonl.head").exists());

    // Whole: every request's first record and every attempt's send are in it.
    let s = summary(&audited);
    let (mut requested, mut sent) = (0u64, 0u64);
    for line in std::fs::read_to_string(&trail).unwrap().lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        match record["event"]["kind"].as_str().unwrap() {
            "action_requested" => requested += 1,
            "action_sent" => sent += 1,
            _ => {}
        }
    }
    assert_eq!(requested, count(&s, "logical_requests"));
    assert_eq!(sent, count(&s, "outbound_attempts"));

    // The trail is asked for in the reports no more, and no other data file changes.
    let page = std::fs::read_to_string(audited.join("index.html")).unwrap();
    assert!(!page.contains("data-file=\"audit.jsonl\""));
    for file in ["attempts.csv", "timeseries.csv", "tenants.csv", "junit.xml"] {
        let a = std::fs::read(plain.join(file)).unwrap();
        assert!(a == std::fs::read(audited.join(file)).unwrap(), "{file}");
    }
    assert_eq!(without_wall_ms(&plain), without_wall_ms(&audited));
    assert_eq!(
        std::fs::read(trail).unwrap(),
        std::fs::read(keyed.join("audit.jsonl")).unwrap(),
        "--audit and output.audit = true write the same trail"
    );

    // A run without it into the same folder leaves no stale trail to be taken for its own.
    run(&path, &audited, &naive);
    assert!(!audited.join("audit.jsonl").exists());
    assert!(!audited.join("audit.jsonl.head").exists());
}
