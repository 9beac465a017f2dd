//! End-to-end tests of `stampede run` and `stampede validate` on the shipped scenarios.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn stampede(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(args)
        .current_dir(root())
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("the stampede binary runs")
}

fn run(scenario: &str, out: &Path, extra: &[&str]) -> Output {
    let out = out.to_str().expect("utf-8 temp path");
    let mut args = vec!["run", scenario, "--out", out, "--no-render"];
    args.extend_from_slice(extra);
    stampede(&args)
}

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json written");
    serde_json::from_str(&text).expect("summary.json is JSON")
}

fn num(s: &serde_json::Value, key: &str) -> f64 {
    s[key]
        .as_f64()
        .unwrap_or_else(|| panic!("summary has a numeric {key}"))
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn quickstart_runs_and_writes_the_run_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = stampede(&[
        "run",
        "scenarios/quickstart.toml",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for file in [
        "summary.json",
        "timeseries.csv",
        "attempts.csv",
        "index.html",
        "junit.xml",
    ] {
        assert!(dir.path().join(file).exists(), "{file} missing");
    }
    // A virtual run's audit trail is written on request only (--audit), and the page says so.
    assert!(!dir.path().join("audit.jsonl").exists());
    let page = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert!(page.contains("data-file=\"audit.jsonl\""), "{page}");
    let s = summary(dir.path());
    assert_eq!(s["scenario"], "quickstart");
    assert_eq!(s["mode"], "virtual");
    assert_eq!(num(&s, "completed"), num(&s, "logical_requests"));
    assert!(text(&out).contains("attempts per logical"));
}

#[test]
fn backlog_38k_naive_storms_and_misses_deadlines_while_stampede_passes() {
    let good = tempfile::tempdir().unwrap();
    let out = run("scenarios/backlog-38k.toml", good.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let naive_dir = tempfile::tempdir().unwrap();
    let out = run(
        "scenarios/backlog-38k.toml",
        naive_dir.path(),
        &["--set", "client.preset=naive"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("FAIL attempts_per_logical"),
        "{}",
        text(&out)
    );
    let (s, n) = (summary(good.path()), summary(naive_dir.path()));
    assert_eq!(n["preset"], "naive");
    assert!(
        num(&n, "retry_waves") > num(&s, "retry_waves") + 10.0,
        "waves {} vs {}",
        n["retry_waves"],
        s["retry_waves"]
    );
    assert!(num(&n, "attempts_per_logical") > 3.0 * num(&s, "attempts_per_logical"));
    // The provider counts refused requests against the minute (count_rejected), so the
    // storm burns the quota: goodput collapses and the backlog misses its deadline.
    assert!(
        num(&n, "goodput_per_min") < 0.5 * num(&s, "goodput_per_min"),
        "goodput {} vs {}",
        n["goodput_per_min"],
        s["goodput_per_min"]
    );
    assert!(
        num(&n, "deadline_misses") > 1_000.0,
        "the storm misses deadlines: {}",
        n["deadline_misses"]
    );
    assert!(
        text(&out).contains("FAIL deadline_misses"),
        "{}",
        text(&out)
    );
    assert_eq!(num(&s, "deadline_misses"), 0.0);
    assert!(
        num(&n, "failed") > 1_000.0,
        "the storm fails work: {}",
        n["failed"]
    );
    assert!(num(&n, "retry_after_violations") > 1_000.0);
    assert_eq!(num(&s, "completed"), 38_000.0);
}

fn strip_wall_ms(json: &str) -> String {
    json.lines()
        .filter(|l| !l.trim_start().starts_with("\"wall_ms\""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn same_seed_same_bytes_another_seed_differs() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let c = tempfile::tempdir().unwrap();
    for (dir, seed) in [(&a, "42"), (&b, "42"), (&c, "43")] {
        let mut args = vec![
            "run",
            "scenarios/uncertain-writes.toml",
            "--out",
            dir.path().to_str().unwrap(),
            "--seed",
            seed,
            "--audit",
        ];
        // PNG plots are a cargo feature (`--features png`, on in CI's --all-features).
        if cfg!(feature = "png") {
            args.push("--png");
        }
        let out = stampede(&args);
        assert!(out.status.code().is_some_and(|c| c <= 1), "{}", text(&out));
    }
    let read = |d: &tempfile::TempDir, f: &str| std::fs::read_to_string(d.path().join(f)).unwrap();
    // Every file the run wrote, byte for byte: plots (SVG and PNG), the page, JUnit, the
    // markdown summary, the audit trail, every CSV; summary.json apart from wall_ms.
    let files = |d: &tempfile::TempDir| {
        let mut names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let written = files(&a);
    assert_eq!(written, files(&b), "the same run wrote other files");
    for expected in [
        "summary.json",
        "timeseries.csv",
        "attempts.csv",
        "tenants.csv",
        "index.html",
        "junit.xml",
        "summary.md",
        "audit.jsonl",
        "attempts.svg",
    ]
    .into_iter()
    .chain(cfg!(feature = "png").then_some("attempts.png"))
    {
        assert!(
            written.iter().any(|f| f == expected),
            "no {expected}: {written:?}"
        );
    }
    for name in &written {
        let (x, y) = (
            std::fs::read(a.path().join(name)).unwrap(),
            std::fs::read(b.path().join(name)).unwrap(),
        );
        if name == "summary.json" {
            assert_eq!(
                strip_wall_ms(&String::from_utf8_lossy(&x)),
                strip_wall_ms(&String::from_utf8_lossy(&y))
            );
        } else {
            assert!(x == y, "{name} differs between two runs of the same seed");
        }
    }
    assert_ne!(read(&a, "attempts.csv"), read(&c, "attempts.csv"));
    assert_ne!(
        strip_wall_ms(&read(&a, "summary.json")),
        strip_wall_ms(&read(&c, "summary.json"))
    );
}

#[test]
fn every_shipped_scenario_passes_its_expectations() {
    for name in [
        "quickstart",
        "rpm-vs-tpm",
        "five-step-safety",
        "shared-credential",
        "uncertain-writes",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&format!("scenarios/{name}.toml"), dir.path(), &[]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out));
        let s = summary(dir.path());
        let expectations = s["expectations"].as_array().expect("expectations listed");
        assert!(!expectations.is_empty(), "{name} has expectations");
        assert!(
            expectations.iter().all(|e| e["pass"] == true),
            "{name}: {expectations:?}"
        );
    }
}

#[test]
fn router_failover_moves_traffic_to_the_healthy_deployment() {
    let dir = tempfile::tempdir().unwrap();
    let out = run("scenarios/router-failover.toml", dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let s = summary(dir.path());
    let expectations = s["expectations"].as_array().expect("expectations listed");
    assert!(
        expectations.iter().all(|e| e["pass"] == true),
        "{expectations:?}"
    );
    // The provider's journal: refused attempts on the first deployment's scope, every
    // completion on the second's.
    let csv = std::fs::read_to_string(dir.path().join("attempts.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (scope, outcome) = (col("scope"), col("outcome"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let on = |s: &str, o: &str| {
        rows.iter()
            .filter(|r| r[scope] == s && r[outcome] == o)
            .count()
    };
    assert!(on("deployment:a", "429") > 0, "{csv}");
    assert_eq!(on("deployment:a", "200"), 0);
    assert_eq!(on("deployment:b", "200"), 60);
}

#[test]
fn contract_overrides_work_on_every_shipped_scenario() {
    for name in [
        "quickstart",
        "rpm-vs-tpm",
        "five-step-safety",
        "shared-credential",
        "uncertain-writes",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = run(
            &format!("scenarios/{name}.toml"),
            dir.path(),
            &[
                "--set",
                "client.preset=naive",
                "--set",
                "client.workers=8",
                "--set",
                "provider.scopes.0.rpm=1200",
            ],
        );
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{name}: {}",
            text(&out)
        );
        assert_eq!(summary(dir.path())["preset"], "naive");
    }
}

#[test]
fn five_step_safety_reconciles_the_dropped_write_and_cancels_the_doomed_task() {
    let dir = tempfile::tempdir().unwrap();
    let out = run("scenarios/five-step-safety.toml", dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let s = summary(dir.path());
    assert!(num(&s, "reconciliations") >= 1.0);
    assert_eq!(num(&s, "duplicates"), 0.0);
    assert_eq!(num(&s, "cancelled"), 3.0);
    // The 429 with Retry-After 10 held the whole scope: nothing else went out before 10 s.
    let attempts = std::fs::read_to_string(dir.path().join("attempts.csv")).unwrap();
    let late_first = attempts
        .lines()
        .skip(1)
        .filter(|l| l.contains("/v1/records,"))
        .all(|l| {
            let at: u64 = l.split(',').nth(1).unwrap().parse().unwrap();
            at >= 10_000
        });
    assert!(
        late_first,
        "the write waited for the scope's Retry-After:\n{attempts}"
    );
}

fn write_scenario(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("bad.toml");
    std::fs::write(&path, body).unwrap();
    path
}

const MINIMAL: &str = "name = \"m\"\nduration = \"1m\"\n\n[[provider.scopes]]\nid = \"s\"\nrpm = 60\n\n[[provider.credentials]]\nkey = \"k\"\nscope = \"s\"\n\n[[workload]]\ntenant = \"t\"\ncredential = \"k\"\ncount = 2\n";

fn validate_error(body: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = write_scenario(dir.path(), body);
    let out = stampede(&["validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    text(&out)
}

#[test]
fn the_minimal_scenario_validates() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_scenario(dir.path(), MINIMAL);
    let out = stampede(&["validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn unknown_key_is_named_with_its_line() {
    let msg = validate_error(&MINIMAL.replace("count = 2", "count = 2\ncuont = 3"));
    assert!(msg.contains("bad.toml:16"), "{msg}");
    assert!(
        msg.contains("workload.0.cuont") && msg.contains("unknown field"),
        "{msg}"
    );
}

#[test]
fn wrong_type_is_named_with_its_line() {
    let msg = validate_error(&MINIMAL.replace("count = 2", "count = \"two\""));
    assert!(
        msg.contains("bad.toml:15") && msg.contains("workload.0.count"),
        "{msg}"
    );
    assert!(msg.contains("invalid type"), "{msg}");
}

#[test]
fn bad_duration_says_how_to_write_one() {
    let msg = validate_error(&MINIMAL.replace("duration = \"1m\"", "duration = \"one minute\""));
    assert!(
        msg.contains("bad.toml:2") && msg.contains("key `duration`"),
        "{msg}"
    );
    assert!(msg.contains("\"500ms\""), "{msg}");
}

#[test]
fn unknown_preset_lists_the_valid_ones() {
    let msg = validate_error(&format!("{MINIMAL}\n[client]\npreset = \"polite\"\n"));
    assert!(
        msg.contains("client.preset") && msg.contains("naive") && msg.contains("full-jitter"),
        "{msg}"
    );
}

#[test]
fn expect_key_that_is_not_a_summary_figure_is_refused() {
    let msg = validate_error(&format!("{MINIMAL}\n[expect]\nduplicate_records = 0\n"));
    assert!(
        msg.contains("expect.duplicate_records") && msg.contains("duplicate_writes"),
        "{msg}"
    );
}

#[test]
fn a_misspelt_status_in_expect_is_refused_not_silently_zero() {
    let msg = validate_error(&format!("{MINIMAL}\n[expect]\nstatus_counts.dropepd = 0\n"));
    assert!(
        msg.contains("status_counts.dropepd") && msg.contains("dropped"),
        "{msg}"
    );
}

#[test]
fn set_on_a_missing_path_names_the_path_and_the_keys_there() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        "scenarios/quickstart.toml",
        dir.path(),
        &["--set", "client.wrokers=8"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let msg = text(&out);
    assert!(
        msg.contains("client.wrokers") && msg.contains("workers"),
        "{msg}"
    );
    let out = run(
        "scenarios/quickstart.toml",
        dir.path(),
        &["--set", "provider.scopes.5.rpm=1"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("provider.scopes") && text(&out).contains("1 entry, numbered 0"),
        "{}",
        text(&out)
    );
}

#[test]
fn set_with_a_wrong_type_is_refused_like_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        "scenarios/quickstart.toml",
        dir.path(),
        &["--set", "client.workers=many"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let msg = text(&out);
    assert!(
        msg.contains("--set client.workers=many") && msg.contains("invalid type"),
        "{msg}"
    );
}

#[cfg(not(feature = "png"))]
#[test]
fn png_without_the_feature_says_how_to_build_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = stampede(&[
        "run",
        "scenarios/quickstart.toml",
        "--png",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--features png"),
        "the message says how: {}",
        text(&out)
    );
}

#[test]
fn json_prints_the_summary_alone_and_quiet_only_the_failures() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = stampede(&["run", "scenarios/quickstart.toml", "--json", "--out", d]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let printed: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is the summary, nothing else");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(printed, written);
    let out = stampede(&[
        "run",
        "scenarios/quickstart.toml",
        "--quiet",
        "--set",
        "client.preset=naive",
        "--out",
        d,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.is_empty() && stdout.lines().all(|l| l.starts_with("FAIL ")),
        "{stdout}"
    );
    let calm = stampede(&["run", "scenarios/quickstart.toml", "--quiet", "--out", d]);
    assert_eq!(calm.status.code(), Some(0));
    assert!(calm.stdout.is_empty(), "a passing quiet run prints nothing");
}

/// `$GITHUB_STEP_SUMMARY` holds a copy of the markdown: set empty, or naming a folder, it
/// gets a warning, and the run keeps its verdict (exit 0, the failed expectations printed)
/// and its whole directory. It had exited 2 blaming the run directory, which was written.
#[test]
fn a_step_summary_that_cannot_be_written_costs_a_warning_not_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    for (i, value) in ["".to_string(), dir.path().display().to_string()]
        .iter()
        .enumerate()
    {
        for (preset, code) in [("stampede", 0), ("naive", 1)] {
            let out_dir = dir.path().join(format!("run-{i}-{preset}"));
            let out = Command::new(env!("CARGO_BIN_EXE_stampede"))
                .args(["run", "scenarios/quickstart.toml", "--quiet", "--out"])
                .arg(&out_dir)
                .args(["--set", &format!("client.preset={preset}")])
                .current_dir(root())
                .env("GITHUB_STEP_SUMMARY", value)
                .output()
                .unwrap();
            let all = text(&out);
            assert_eq!(out.status.code(), Some(code), "{preset}, {value:?}: {all}");
            if value.is_empty() {
                assert!(!all.contains("warning"), "an empty value is unset: {all}");
            } else {
                assert!(
                    all.contains("warning: cannot append to $GITHUB_STEP_SUMMARY"),
                    "{all}"
                );
            }
            if code == 1 {
                assert!(all.contains("FAIL "), "the failures are printed: {all}");
            }
            assert!(out_dir.join("summary.md").is_file(), "{all}");
        }
    }
}

/// An error about a credential names no key whole: a one-character typo had printed every
/// configured key in full, into CI logs, junit.xml and the step summary.
#[test]
fn a_credential_error_shows_keys_masked() {
    let key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd";
    let typo = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcX";
    let body = MINIMAL
        .replace("key = \"k\"", &format!("key = \"{key}\""))
        .replace("credential = \"k\"", &format!("credential = \"{typo}\""));
    let msg = validate_error(&body);
    assert!(msg.contains("workload.0.credential"), "{msg}");
    assert!(
        msg.contains("sk-...abcd") && msg.contains("sk-...abcX"),
        "{msg}"
    );
    for whole in [key, typo] {
        assert!(!msg.contains(&whole[8..40]), "a key shown whole: {msg}");
    }
    // A router's deployments and a fault's credential are named the same way.
    let deployments =
        body.replace(
            "credential = \"sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcX\"",
            &format!("credential = \"{key}\""),
        ) + &format!("\n[client]\npreset = \"litellm-router\"\ndeployments = [\"{typo}\"]\n");
    let faults = body.replace(
        "credential = \"sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcX\"",
        &format!("credential = \"{key}\""),
    ) + &format!("\n[[provider.faults]]\nstatus = 429\ncredential = \"{typo}\"\n");
    for body in [deployments, faults] {
        let msg = validate_error(&body);
        assert!(msg.contains("sk-...abcX"), "{msg}");
        assert!(!msg.contains(&key[8..40]), "a key shown whole: {msg}");
    }
}

/// An expectation naming a group the scenario does not have is refused at load, naming
/// the key and the groups there are: a typo (`tenants.acmee`) read 0 and passed `failed = 0`.
#[test]
fn an_expectation_on_a_group_the_scenario_lacks_is_refused() {
    for (expect, key, has) in [
        (
            "[expect.tenants.tt]\nfailed = 0\n",
            "expect.tenants.tt",
            "has: t",
        ),
        (
            "[expect]\n\"by_priority.urgent.failed\" = 0\n",
            "expect.by_priority.urgent",
            "critical, normal, bulk",
        ),
        (
            "[expect.by_class.lmm]\nfailed = 0\n",
            "expect.by_class.lmm",
            "llm",
        ),
        (
            "[expect.by_provider.other]\nfailed = 0\n",
            "expect.by_provider.other",
            "has: none",
        ),
    ] {
        let msg = validate_error(&format!("{MINIMAL}\n{expect}"));
        assert!(msg.contains(key) && msg.contains(has), "{msg}");
    }
    // Nested figures of a group that exists are fine.
    let dir = tempfile::tempdir().unwrap();
    let ok =
        MINIMAL.to_string() + "\n[expect.tenants.t]\nfailed = 0\nlatency_ms = { p99 = 1000 }\n";
    let path = write_scenario(dir.path(), &ok);
    let out = stampede(&["validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// A per-tenant expectation that is wrong is named as it is written, `tenants.<name>` or
/// `by_tenant.<name>`, with the line it is on: `"by_tenant.tt.failed" = 0` (a quoted key)
/// was named `expect.tenants.tt`, `tenants.tt` beside a `by_tenant` key `expect.by_tenant.tt`,
/// `tenants.t.failed = "x"` as `expect.by_tenant.t.failed`, and a key not written in the
/// file was blamed on the `[expect]` line.
#[test]
fn a_wrong_tenant_expectation_is_named_as_written() {
    for (expect, key, says, not) in [
        (
            "[expect]\ntenants.t.completed = { min = 1 }\nby_tenant.tt.failed = 0\n",
            "bad.toml:19: key `expect.by_tenant.tt`",
            "has: t",
            "expect.tenants.tt",
        ),
        (
            "[expect]\nby_tenant.t.completed = { min = 1 }\ntenants.tt.failed = 0\n",
            "bad.toml:19: key `expect.tenants.tt`",
            "has: t",
            "expect.by_tenant.tt",
        ),
        (
            "[expect]\n\"by_tenant.tt.failed\" = 0\n",
            "bad.toml:18: key `expect.by_tenant.tt`",
            "has: t",
            "expect.tenants.tt",
        ),
        (
            "[expect]\ntenants.t.failed = \"x\"\n",
            "bad.toml:18: key `expect.tenants.t.failed`",
            "`tenants.t.failed` has a string limit",
            "by_tenant",
        ),
        (
            "[expect.tenants.t]\nfailed = -1\n",
            "bad.toml:18: key `expect.tenants.t.failed`",
            "`tenants.t.failed` has a max below 0",
            "by_tenant",
        ),
        (
            "[expect.by_tenant.t]\nfailed = { max = 1, abort = true }\n",
            "bad.toml:18: key `expect.by_tenant.t.failed.abort`",
            "`by_tenant.t.failed` can fall",
            "tenants.",
        ),
    ] {
        let msg = validate_error(&format!("{MINIMAL}\n{expect}"));
        assert!(msg.contains(key) && msg.contains(says), "{expect}: {msg}");
        assert!(!msg.contains(not), "{expect}: {msg}");
    }
}

/// A group's expectation that names no figure a group has (`tenants.t.faild`, a bound
/// misspelt inside it, a group with no figure at all) is refused at load, naming the key as
/// written and the figures there are: it validated, played, and failed with "actual 0,
/// limit <= 0", exit 1, a verdict that contradicts itself on a figure that does not exist.
#[test]
fn an_expectation_on_a_figure_a_group_lacks_is_refused() {
    for (expect, key, says) in [
        (
            "[expect]\ntenants.t.faild = 0\n",
            "bad.toml:18: key `expect.tenants.t.faild`",
            "`faild` is not a figure of a tenant",
        ),
        (
            "[expect.by_class.llm]\nfaild = 0\n",
            "bad.toml:18: key `expect.by_class.llm.faild`",
            "`faild` is not a figure of a class",
        ),
        (
            "[expect]\ntenants.t.latency_ms.p98 = 5\n",
            "key `expect.tenants.t.latency_ms.p98`",
            "latency_ms.p99",
        ),
        (
            "[expect]\ntenants.t.failed = { mix = 0 }\n",
            "key `expect.tenants.t.failed.mix`",
            "unknown bound `mix`",
        ),
        (
            "[expect]\nby_priority.normal = 5\n",
            "key `expect.by_priority.normal`",
            "names no figure",
        ),
    ] {
        let msg = validate_error(&format!("{MINIMAL}\n{expect}"));
        assert!(msg.contains(key) && msg.contains(says), "{expect}: {msg}");
        assert!(
            says.contains("bound")
                || (msg.contains("completed") && msg.contains("queue_wait_ms.p99")),
            "lists the figures: {msg}"
        );
    }
    // Every figure a group has is still taken, under each way of writing it.
    let dir = tempfile::tempdir().unwrap();
    let ok = MINIMAL.to_string()
        + "\n[expect]\ntenants.t.completed = { min = 1 }\nby_tenant.t.latency_ms.p99 = 100000\n\
           by_class.llm.goodput_per_min = { min = 0.1 }\nby_priority.normal.queue_wait_ms = { p99 = 100000 }\n\
           by_route.chat_completion.failed = 0\n";
    let path = write_scenario(dir.path(), &ok);
    let out = stampede(&["validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// A name with a control character (an escape sequence that rewrites the terminal's
/// lines, a character XML forbids) is refused at load, naming the key.
#[test]
fn a_name_with_a_control_character_is_refused() {
    for (from, to, key) in [
        ("name = \"m\"", "name = \"m\\u001b[31m\"", "name"),
        (
            "tenant = \"t\"",
            "tenant = \"t\\r2nd\"",
            "workload.0.tenant",
        ),
    ] {
        let msg = validate_error(&MINIMAL.replace(from, to));
        assert!(
            msg.contains(key) && msg.contains("control character"),
            "{msg}"
        );
    }
}

/// A name a spreadsheet would run as a formula in the CSV files it is written into
/// (`=HYPERLINK(...)`, `@SUM(...)`), an empty tenant (it had no row in `by_tenant`) and a
/// description holding an escape sequence (shown as it is in summary.md) are refused at
/// load, naming the key; a description's own lines are kept.
#[test]
fn formula_names_empty_tenants_and_escapes_in_descriptions_are_refused() {
    for (from, to, key, says) in [
        (
            "tenant = \"t\"",
            "tenant = \"=HYPERLINK(1)\"",
            "workload.0.tenant",
            "formula",
        ),
        (
            "tenant = \"t\"",
            "tenant = \"@SUM(A1)\"",
            "workload.0.tenant",
            "formula",
        ),
        ("name = \"m\"", "name = \"-2+3\"", "name", "formula"),
        (
            "id = \"s\"",
            "id = \"@s\"",
            "provider.scopes.0.id",
            "formula",
        ),
        (
            "tenant = \"t\"",
            "tenant = \" \"",
            "workload.0.tenant",
            "is empty",
        ),
        (
            "name = \"m\"",
            "name = \"m\"\ndescription = \"red \\u001b[31m\"",
            "description",
            "control character",
        ),
        (
            "tenant = \"t\"",
            "tenant = \"t\\u202Egnp.exe\"",
            "workload.0.tenant",
            "U+202E",
        ),
    ] {
        let msg = validate_error(&MINIMAL.replace(from, to));
        assert!(msg.contains(key) && msg.contains(says), "{to}: {msg}");
    }
    let dir = tempfile::tempdir().unwrap();
    let lines = MINIMAL.replace(
        "name = \"m\"",
        "name = \"m\"\ndescription = \"\"\"two\n\tlines\"\"\"",
    );
    let path = write_scenario(dir.path(), &lines);
    let out = stampede(&["validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// A workload that starts after the run's end would send nothing: refused naming `start`.
/// One whose count its rate cannot place before the end plays up to it (a `--set
/// duration=...` cutting a run short asks that), with a note saying the rest is never sent;
/// an arrival at the end itself still plays, and gets none.
#[test]
fn arrivals_past_the_end_are_refused_or_noted() {
    let msg = validate_error(&MINIMAL.replace("count = 2", "count = 2\nstart = \"61s\""));
    assert!(
        msg.contains("workload.0.start") && msg.contains("none of its 2 actions would be sent"),
        "{msg}"
    );
    let dir = tempfile::tempdir().unwrap();
    for (arrival, noted) in [
        // 61 actions a second apart: the 61st at 60 s, the end itself.
        ("count = 61\narrival = { rate = \"1/s\" }", false),
        ("count = 62\narrival = { rate = \"1/s\" }", true),
        (
            "count = 62\narrival = { bursts = { size = 2, every = \"2s\" } }",
            false,
        ),
        (
            "count = 63\narrival = { bursts = { size = 2, every = \"2s\" } }",
            true,
        ),
        ("count = 6000\narrival = { poisson = \"10/s\" }", true),
    ] {
        let path = write_scenario(dir.path(), &MINIMAL.replace("count = 2", arrival));
        let out = stampede(&["validate", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{arrival}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.contains("workload.0:") && stderr.contains("are never sent"),
            noted,
            "{arrival}: {stderr}"
        );
    }
}

/// A `--set` whose value holds a key is echoed with the key masked in the error it gets.
#[test]
fn a_set_echoed_in_an_error_shows_its_key_masked() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_scenario(dir.path(), MINIMAL);
    let typo = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcX";
    let set = format!("workload.0.credential={typo}");
    let out = stampede(&["validate", path.to_str().unwrap(), "--set", &set]);
    let msg = text(&out);
    assert_eq!(out.status.code(), Some(2), "{msg}");
    assert!(
        msg.contains("--set workload.0.credential=sk-...abcX"),
        "{msg}"
    );
    assert!(!msg.contains(&typo[8..40]), "{msg}");
}

/// A tenant whose name holds a dot (`t.eu`) can be named in `[expect]` and is read as it
/// is: it had been refused as the tenant `t`.
#[test]
fn a_tenant_with_a_dot_in_its_name_can_be_expected() {
    let dir = tempfile::tempdir().unwrap();
    let body = MINIMAL.replace("tenant = \"t\"", "tenant = \"t.eu\"")
        + "\n[expect.tenants.\"t.eu\"]\ncompleted = { min = 3 }\n";
    let path = write_scenario(dir.path(), &body);
    let out_dir = dir.path().join("out");
    let out = stampede(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--quiet",
    ]);
    let printed = text(&out);
    // The workload has 2 requests: the tenant's figure is read (2), not taken as 0 or missing.
    assert_eq!(out.status.code(), Some(1), "{printed}");
    assert!(
        printed.contains("FAIL by_tenant.t.eu.completed: actual 2, limit >= 3"),
        "{printed}"
    );
}

/// A completion that asks for 0 tokens is refused at load: the real APIs refuse
/// `max_tokens: 0`, so a live run would meet 400s its virtual run never had.
#[test]
fn a_completion_of_zero_tokens_is_refused() {
    let msg = validate_error(&MINIMAL.replace("count = 2", "count = 2\nmax_output_tokens = 0"));
    assert!(msg.contains("workload.0.max_output_tokens"), "{msg}");
}

/// A key put in a number's place, or a scope's, is quoted masked in the error it gets (the
/// parser's own words quote the value): it was shown whole.
#[test]
fn a_key_in_the_wrong_place_is_quoted_masked() {
    let key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd";
    for body in [
        MINIMAL.replace("rpm = 60", &format!("rpm = \"{key}\"")),
        MINIMAL.replace("scope = \"s\"", &format!("scope = \"{key}\"")),
    ] {
        let msg = validate_error(&body);
        assert!(msg.contains("sk-...abcd"), "{msg}");
        assert!(!msg.contains(&key[8..40]), "{msg}");
    }
}
