//! Error messages point at the line (issue 15): every refused scenario names its file, the
//! line and the dotted key that is written there, in the format's words (no Rust type
//! names), lists the valid names when a name is unknown, and names the limit it hits.

use std::path::Path;

use crate::common;
use common::{a_str, stampede, text};

/// A small valid scenario; `extra` is appended.
fn scenario(extra: &str) -> String {
    format!(
        r#"name = "m"
duration = "1m"

[[provider.scopes]]
id = "acct"
rpm = 60

[[provider.credentials]]
key = "sk-a"
scope = "acct"

[[workload]]
tenant = "t"
credential = "sk-a"
class = "llm"
count = 5
arrival = {{ rate = "1/s" }}
{extra}"#
    )
}

/// `stampede validate FILE [--set ...]`'s error, for a file holding `body`; asserts exit 2.
fn refused(dir: &Path, body: &str, sets: &[&str]) -> String {
    let file = dir.join("s.toml");
    std::fs::write(&file, body).unwrap();
    let mut args = vec!["validate", a_str(&file)];
    for s in sets {
        args.push("--set");
        args.push(s);
    }
    let out = stampede(&args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

/// The 1-based line of the first line of `body` that starts with `needle`.
fn line_of(body: &str, needle: &str) -> usize {
    body.lines().position(|l| l.starts_with(needle)).unwrap() + 1
}

fn assert_points(err: &str, body: &str, needle: &str, key: &str) {
    let want = format!("s.toml:{}: key `{key}`:", line_of(body, needle));
    assert!(err.contains(&want), "want {want:?} in {err}");
}

#[test]
fn provider_table_errors_name_file_line_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let body = scenario("[[provider.faults]]\nstatus = 503\nprobability = 1.5\n");
    let err = refused(tmp.path(), &body, &[]);
    assert_points(&err, &body, "probability", "provider.faults.0.probability");
    assert!(err.contains("from 0 to 1"), "{err}");

    let body = scenario("[[provider.faults]]\nstatus = 503\nfrom = \"2m\"\nuntil = \"1m\"\n");
    let err = refused(tmp.path(), &body, &[]);
    assert_points(&err, &body, "until", "provider.faults.0.until");

    let body = scenario("").replace("scope = \"acct\"", "scope = \"nope\"");
    let err = refused(tmp.path(), &body, &[]);
    assert_points(
        &err,
        &body,
        "scope = \"nope\"",
        "provider.credentials.0.scope",
    );
    assert!(err.contains("known: acct"), "{err}");

    let body = scenario("[[provider.faults]]\nstatus = 503\ncredential = \"sk-x\"\n");
    let err = refused(tmp.path(), &body, &[]);
    assert_points(
        &err,
        &body,
        "credential = \"sk-x\"",
        "provider.faults.0.credential",
    );
    assert!(err.contains("known: ****; shown masked"), "{err}");
}

#[test]
fn the_key_blamed_is_the_one_written() {
    let tmp = tempfile::tempdir().unwrap();
    let body = scenario("").replace("rpm = 60", "rpm = 0");
    let err = refused(tmp.path(), &body, &[]);
    assert_points(&err, &body, "rpm = 0", "provider.scopes.0.rpm");

    let body = scenario("[client]\nworkers = 0\n");
    let err = refused(tmp.path(), &body, &[]);
    assert_points(&err, &body, "workers = 0", "client.workers");
    assert!(err.contains("at least 1"), "{err}");

    let body = scenario("[client.policy.classes.llm]\nmax_attempts = 0\n");
    let err = refused(tmp.path(), &body, &[]);
    assert_points(
        &err,
        &body,
        "max_attempts = 0",
        "client.policy.classes.llm.max_attempts",
    );
}

#[test]
fn a_misspelt_class_is_named_unknown_with_the_known_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let err = refused(
        tmp.path(),
        &scenario(""),
        &["client.policy.classes.lm.max_attempts=5"],
    );
    assert!(
        err.contains("class \"lm\" is not one of the preset's classes")
            && err.contains("llm, read"),
        "{err}"
    );
}

#[test]
fn messages_use_no_rust_type_names() {
    let tmp = tempfile::tempdir().unwrap();
    let err = refused(tmp.path(), &scenario(""), &["client.workers=-1"]);
    assert!(
        err.contains("a whole number from 0 to 4294967295") && !err.contains("u32"),
        "{err}"
    );
    // A TOML integer stops at i64's largest, so that is the range a message gives for a
    // seed or a count, not u64's, which no scenario file can write.
    let err = refused(tmp.path(), &scenario(""), &["seed=-1"]);
    assert!(
        err.contains("a whole number from 0 to 9223372036854775807") && !err.contains("u64"),
        "{err}"
    );
    let err = refused(
        tmp.path(),
        &scenario("").replacen("name =", "seed = 9223372036854775808\nname =", 1),
        &[],
    );
    assert!(
        err.contains("s.toml:")
            && err.contains("not valid TOML")
            && err.contains("a TOML integer goes up to 9223372036854775807"),
        "{err}"
    );
    let err = refused(tmp.path(), &scenario(""), &["provider.scopes.3.rpm=5"]);
    assert!(
        err.contains("1 entry, numbered 0") && !err.contains(".."),
        "{err}"
    );
}

#[test]
fn a_scenario_without_credentials_is_refused_saying_what_to_add() {
    let tmp = tempfile::tempdir().unwrap();
    let body = "name = \"m\"\nduration = \"1m\"\n\n[[workload]]\ntenant = \"t\"\ncredential = \"sk-a\"\ncount = 5\n";
    let err = refused(tmp.path(), body, &[]);
    assert!(
        err.contains("no [provider] table") && err.contains("[[provider.credentials]]"),
        "{err}"
    );
    let body = format!(
        "name = \"m\"\nduration = \"1m\"\n\n[provider]\nlatency = {{ fixed = \"1s\" }}\n\n{}",
        "[[workload]]\ntenant = \"t\"\ncredential = \"sk-a\"\ncount = 5\n"
    );
    let err = refused(tmp.path(), &body, &[]);
    assert!(
        err.contains("key `provider.credentials`") && err.contains("401"),
        "{err}"
    );
}

#[test]
fn absurd_values_are_refused_naming_the_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let body = scenario("").replace("count = 5", "count = 1_000_000_000_000");
    let err = refused(tmp.path(), &body, &[]);
    assert_points(&err, &body, "count =", "workload.0.count");
    assert!(err.contains("MAX_ACTIONS"), "{err}");
    // An agent's calls and improvised requests are actions too: ten thousand arrivals of a
    // thousand calls are ten million.
    let body = scenario("agent = { calls = 1000 }\nimprovise = { times = 1 }\n")
        .replace("count = 5", "count = 10_000");
    let err = refused(tmp.path(), &body, &[]);
    assert_points(&err, &body, "count =", "workload.0.count");
    assert!(
        err.contains("20000000 actions in all (10000 arrivals of 1000 agent calls, each improvised at most once)")
            && err.contains("MAX_ACTIONS"),
        "{err}"
    );

    let body = scenario("deadline = \"0s\"\n");
    let err = refused(tmp.path(), &body, &[]);
    assert_points(&err, &body, "deadline", "workload.0.deadline");

    let err = refused(tmp.path(), &scenario(""), &["duration=1000d"]);
    assert!(err.contains("MAX_DURATION_MS"), "{err}");
    let err = refused(
        tmp.path(),
        &scenario(""),
        &["workload.0.arrival={ rate = \"1000000/s\" }"],
    );
    assert!(err.contains("MAX_RATE_PER_SECOND"), "{err}");
    // A 1 ms bucket over ten days held gigabytes of timeseries rows.
    let err = refused(
        tmp.path(),
        &scenario("\n[measure]\nbucket = \"1ms\"\n"),
        &["duration=10d"],
    );
    assert!(
        err.contains("key `measure.bucket`") && err.contains("MAX_TIMESERIES_ROWS"),
        "{err}"
    );
}

#[test]
fn validate_takes_folders_like_check() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("scenarios");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("a.toml"), scenario("")).unwrap();
    std::fs::write(dir.join("sub").join("b.toml"), scenario("")).unwrap();
    let out = stampede(&["validate", a_str(&dir)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("a.toml") && stdout.contains("b.toml"),
        "{stdout}"
    );
    std::fs::write(dir.join("bad.toml"), "name = 1\n").unwrap();
    let out = stampede(&["validate", a_str(&dir)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("bad.toml"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn enum_and_list_errors_read_as_the_format_and_name_the_override() {
    let tmp = tempfile::tempdir().unwrap();
    let err = refused(tmp.path(), &scenario(""), &["workload.0.route=nope"]);
    assert!(
        err.contains("unknown value `nope`") && err.contains("chat_completion"),
        "{err}"
    );
    assert!(!err.contains("variant"), "{err}");
    let err = refused(
        tmp.path(),
        &scenario(""),
        &["client.policy.classes.llm.retry_on=[\"x\"]"],
    );
    assert!(
        err.contains("key `client.policy.classes.llm.retry_on`")
            && err.contains("--set client.policy.classes.llm.retry_on=")
            && err.contains("never_arrived"),
        "{err}"
    );
    let err = refused(tmp.path(), &scenario(""), &["workload.0.prompt_tokens=-3"]);
    assert!(err.contains("a whole number from 0 to"), "{err}");
}

#[test]
fn agent_and_improvise_mistakes_name_the_key_and_what_to_write() {
    let tmp = tempfile::tempdir().unwrap();
    let err = refused(tmp.path(), &scenario("agent = { calls = 0 }\n"), &[]);
    assert!(
        err.contains("workload.0.agent.calls") && err.contains("give 1 to 1000"),
        "{err}"
    );
    let err = refused(
        tmp.path(),
        &scenario("agent = { calls = 3, budget = \"0s\" }\n"),
        &[],
    );
    assert!(err.contains("workload.0.agent.budget"), "{err}");
    let body = scenario("agent = { calls = 3 }\n").replace("class = \"llm\"", "class = \"read\"");
    let err = refused(tmp.path(), &body, &[]);
    assert!(
        err.contains("workload.0.agent") && err.contains("chains LLM calls"),
        "{err}"
    );
    let err = refused(
        tmp.path(),
        &scenario("agent = { calls = 3, tool = \"5s\" }\n"),
        &[],
    );
    assert!(
        err.contains("unknown field `tool`") || err.contains("tool"),
        "{err}"
    );
    let err = refused(tmp.path(), &scenario("improvise = { times = 1000 }\n"), &[]);
    assert!(err.contains("workload.0.improvise.times"), "{err}");
    let crash = "\n[[crashes]]\nat = \"10s\"\nrestart_after = \"1s\"\n";
    let err = refused(
        tmp.path(),
        &scenario(&format!("improvise = {{ times = 2 }}\n{crash}")),
        &[],
    );
    assert!(
        err.contains("[[crashes]]") && err.contains("workload.0"),
        "{err}"
    );
}

/// A scenario a client command cannot play is refused before anything starts (exit 2),
/// saying what it sets and what to do instead; nothing is run, no directory is written.
#[test]
fn a_client_command_refuses_what_it_cannot_play() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.toml");
    std::fs::write(&file, scenario("\n[client]\nshare_scope = \"fleet\"\n")).unwrap();
    let out_dir = tmp.path().join("out");
    let out = stampede(&[
        "run",
        a_str(&file),
        "--client",
        "--out",
        a_str(&out_dir),
        "--",
        "python3",
        "-c",
        "raise SystemExit(0)",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(r#"scenario "m" sets client.share_scope = "fleet""#)
            && err.contains("remove the key, or run without --client"),
        "{err}"
    );
    assert!(!out_dir.join("attempts.csv").exists());
}

/// `stampede run`'s flags are refused before anything runs, saying what to give: a
/// provider URL that is not one, a time scale the provider cannot play (written in exponent
/// form, not 309 digits), and a baseline that is not there (to be read, not written).
#[test]
fn run_flags_are_refused_saying_what_to_give() {
    let tmp = tempfile::tempdir().unwrap();
    let qs = common::quickstart();
    let out_dir = tmp.path().join("never");
    let cases: [(&[&str], &str); 5] = [
        (
            &["--live", "--provider", "notaurl"],
            "give the provider's base URL, like http://127.0.0.1:8080",
        ),
        (
            &["--live", "--time-scale", "1e308"],
            "from 0.001 to 10000 (got 1e308)",
        ),
        (
            &["--live", "--time-scale", "20000"],
            "from 0.001 to 10000 (got 20000.0)",
        ),
        (
            &["--live", "--time-scale", "1e-300"],
            "from 0.001 to 10000 (got 1e-300)",
        ),
        (
            &["--baseline", "/nonexistent/stampede-baseline"],
            "check that the file exists and is readable",
        ),
    ];
    for (flags, says) in cases {
        let mut args = vec!["run", qs.as_str(), "--out", a_str(&out_dir)];
        args.extend_from_slice(flags);
        common::assert_refused(&args, says, &out_dir);
    }
}

/// `stampede serve --addr` that is not an address is refused before anything binds, with an
/// example of one.
#[test]
fn serve_addr_is_refused_with_an_example() {
    for addr in ["127.0.0.1:99999", "localhost", "8080"] {
        let out = stampede(&["serve", "--addr", addr]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{addr}: {err}");
        assert!(
            err.contains("give an IP address and a port, like 127.0.0.1:8080"),
            "{addr}: {err}"
        );
    }
}

/// A file no scenario could be (`/dev/zero` given by mistake, a huge file) is refused after
/// 16 MiB, not read whole into memory; a file that is not UTF-8 says so and what to do.
#[test]
fn a_huge_or_non_utf8_file_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut huge = scenario("");
    huge.push_str(&"#".repeat(17 * 1024 * 1024));
    let err = refused(dir.path(), &huge, &[]);
    assert!(
        err.contains("s.toml: the file is larger than 16 MiB, which no scenario is"),
        "{err}"
    );
    let file = dir.path().join("s.toml");
    let mut bytes = scenario("").into_bytes();
    bytes.extend_from_slice(b"# \xff\n");
    std::fs::write(&file, &bytes).unwrap();
    let out = stampede(&["validate", a_str(&file)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("it is not UTF-8 text"), "{err}");
    assert!(err.contains("save it as UTF-8"), "{err}");
}

/// What the hunt for hostile input found unclear, said plainly: a field missing from the
/// whole file is no fault of its first key, a nested one gets no top-level hint, a well-formed
/// duration too long or a rate of `inf` is named for what it is, two arrival patterns read
/// as a sentence, an empty name is refused, and expectations no figure can pass are refused.
#[test]
fn what_the_hostile_input_hunt_found_unclear_is_said_plainly() {
    let tmp = tempfile::tempdir().unwrap();
    let body = scenario("").replace("duration = \"1m\"\n", "");
    let err = refused(tmp.path(), &body, &[]);
    assert!(
        err.contains("s.toml: missing field `duration` (every scenario needs name, duration"),
        "{err}"
    );
    assert!(!err.contains("key `name`"), "{err}");

    let body = scenario("").replace("count = 5\n", "");
    let err = refused(tmp.path(), &body, &[]);
    assert!(err.contains("missing field `count`"), "{err}");
    assert!(!err.contains("every scenario needs"), "{err}");

    let body = scenario("").replace("duration = \"1m\"", "duration = \"1000000000h\"");
    let err = refused(tmp.path(), &body, &[]);
    assert!(
        err.contains("duration \"1000000000h\" is too long"),
        "{err}"
    );

    let body = scenario("").replace("rate = \"1/s\"", "rate = \"inf/s\"");
    let err = refused(tmp.path(), &body, &[]);
    assert!(err.contains("the count must be a finite number"), "{err}");
    assert!(!err.contains("above zero"), "{err}");

    let body = scenario("").replace("rate = \"1/s\"", "rate = \"1/s\", poisson = \"1/s\"");
    let err = refused(tmp.path(), &body, &[]);
    assert!(
        err.contains("arrival has two patterns (rate and poisson); pick one: write \"backlog\""),
        "{err}"
    );
    assert!(err.contains("(a rate: write it like \"10/s\""), "{err}");

    let body = scenario("").replace("name = \"m\"", "name = \"\"");
    let err = refused(tmp.path(), &body, &[]);
    assert_points(&err, &body, "name", "name");
    assert!(err.contains("the name is empty"), "{err}");

    // `[crashes]` for `[[crashes]]`: the message says how a list of tables is written.
    let body = scenario("[crashes]\nat = \"1s\"\n");
    let err = refused(tmp.path(), &body, &[]);
    assert!(
        err.contains("invalid type: a table, expected a list: [a, b], or a list of tables written as [[key]] blocks"),
        "{err}"
    );

    for (limit, says) in [
        (
            "completed = nan",
            "`completed` has the limit nan, which no figure passes",
        ),
        (
            "completed = { min = 10, max = 5 }",
            "`completed` has min 10 above max 5: no figure can pass",
        ),
    ] {
        let body = scenario(&format!("[expect]\n{limit}\n"));
        let err = refused(tmp.path(), &body, &[]);
        assert!(err.contains(says), "{limit}: {err}");
    }
}

/// docs/contract.md: `--set client.preset=naive`, `--set client.workers=8` and `--set
/// provider.scopes.0.rpm=1200` work on every shipped scenario but the listed exceptions,
/// which are refused saying what to write instead.
#[test]
fn the_contract_overrides_work_on_every_shipped_scenario_but_the_listed_ones() {
    let dir = common::repo().join("scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    let sdk_only = ["amplification", "layers", "router-failover"];
    let several_providers = ["fallback"];
    for file in &files {
        let name = file.file_stem().unwrap().to_str().unwrap();
        for set in [
            "client.preset=naive",
            "client.workers=8",
            "provider.scopes.0.rpm=1200",
        ] {
            let out = stampede(&["validate", a_str(file), "--set", set]);
            let err = text(&out.stderr);
            let refused = match set {
                "client.preset=naive" => sdk_only.contains(&name),
                "provider.scopes.0.rpm=1200" => several_providers.contains(&name),
                _ => false,
            };
            if !refused {
                assert_eq!(out.status.code(), Some(0), "{name} --set {set}: {err}");
                continue;
            }
            assert_eq!(out.status.code(), Some(2), "{name} --set {set}");
            let says = if set.starts_with("client") {
                "set client.preset"
            } else {
                "write --set providers."
            };
            assert!(err.contains(says), "{name} --set {set}: {err}");
        }
    }
}
