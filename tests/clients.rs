//! `stampede run --client`: any process as the client under test, measured from the
//! provider's journal. The SDK examples need the official SDKs (examples/clients/
//! requirements.txt); without them those tests say so and pass, unless
//! `STAMPEDE_REQUIRE_SDKS=1` (as `.ci/run` sets it), where a missing SDK fails them.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::{a_str, stampede, text};

pub(crate) fn summary(dir: &Path) -> serde_json::Value {
    let raw = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json written");
    serde_json::from_str(&raw).expect("summary.json is JSON")
}

pub(crate) fn run_client(scenario: &str, dir: &Path, command: &[&str]) -> Output {
    let mut args = vec!["run", scenario, "--out", a_str(dir), "--client"];
    if !command.is_empty() {
        args.push("--");
        args.extend_from_slice(command);
    }
    stampede(&args)
}

/// `stampede run examples/clients/blind-retry.toml --out DIR --set ... --client -- COMMAND`.
fn run_blind_retry(dir: &Path, sets: &[&str], command: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "examples/clients/blind-retry.toml",
        "--out",
        a_str(dir),
    ];
    for set in sets {
        args.extend(["--set", set]);
    }
    args.extend(["--client", "--"]);
    args.extend_from_slice(command);
    stampede(&args)
}

fn python_has(module: &str) -> bool {
    let found = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    found_or_skipped(
        found,
        &format!("python3 cannot import {module}"),
        "pip install -r examples/clients/requirements.txt",
    )
}

/// `found`, after saying the test is skipped when it is not (`missing`, and the command
/// that installs it); with `STAMPEDE_REQUIRE_SDKS` set, as CI sets it, a missing SDK fails
/// the test instead.
pub(crate) fn found_or_skipped(found: bool, missing: &str, install: &str) -> bool {
    if !found {
        assert!(
            std::env::var_os("STAMPEDE_REQUIRE_SDKS").is_none(),
            "{missing}: {install}"
        );
        eprintln!("skipped: {missing} ({install})");
    }
    found
}

/// What the hand-written Python clients below share: the provider's address, the key, and
/// `post` (sends a JSON body, returns the connection with its answer unread) and `send`
/// (sends one and returns the answer's status). OpenAI's headers unless `headers` says.
const PY_CLIENT: &str = r#"
import http.client, json, os, sys, time, urllib.parse
url = urllib.parse.urlparse(os.environ["STAMPEDE_PROVIDER_URL"])
key = os.environ["OPENAI_API_KEY"]
def post(path, body, headers=None, timeout=10):
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    headers = dict(headers or {"authorization": "Bearer " + key})
    headers["content-type"] = "application/json"
    c.request("POST", path, body=json.dumps(body), headers=headers)
    return c
def send(path, body, headers=None):
    c = post(path, body, headers)
    r = c.getresponse(); r.read(); c.close()
    return r.status
"#;

#[test]
fn a_blind_client_with_no_sdk_is_caught_double_billing() {
    if !python_has("json") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run_client("examples/clients/blind-retry.toml", dir.path(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let s = summary(dir.path());
    assert_eq!(s["mode"], "client");
    assert_eq!(s["client_exit_code"], 0);
    assert_eq!(s["logical_requests"], 20);
    let dup = s["duplicates"].as_u64().unwrap();
    assert!(dup > 0, "{s}");
    // Every duplicate is a retry the provider saw, though the client claimed nothing.
    assert_eq!(s["retries"].as_u64().unwrap(), dup);
    assert_eq!(s["claim_mismatches"], 0);
    assert!(text(&out.stdout).contains("FAIL duplicates"));
    for file in [
        "client.log",
        "workload.jsonl",
        "attempts.csv",
        "index.html",
        "junit.xml",
    ] {
        assert!(dir.path().join(file).exists(), "no {file}");
    }
    let workload = std::fs::read_to_string(dir.path().join("workload.jsonl")).unwrap();
    assert_eq!(workload.lines().count(), 20);
    let first: serde_json::Value = serde_json::from_str(workload.lines().next().unwrap()).unwrap();
    for key in [
        "id",
        "at_ms",
        "tenant",
        "credential",
        "class",
        "path",
        "body",
        "messages",
    ] {
        assert!(
            first.get(key).is_some(),
            "workload line has no {key}: {first}"
        );
    }
}

#[test]
fn replicas_of_a_client_command_are_processes_that_split_the_workload() {
    if !python_has("json") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = stampede(&[
        "run",
        "examples/clients/blind-retry.toml",
        "--set",
        "client.replicas=3",
        "--out",
        a_str(dir.path()),
        "--client",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let s = summary(dir.path());
    assert_eq!(s["client_exit_code"], 0, "every replica exited 0");
    assert_eq!(s["logical_requests"], 20);
    assert_eq!(s["provider_logical_requests"], 20, "{s}");
    let mut lines = 0;
    for r in 0..3 {
        for file in [format!("client-{r}.log"), format!("workload-{r}.jsonl")] {
            assert!(dir.path().join(&file).exists(), "no {file}");
        }
        let w = std::fs::read_to_string(dir.path().join(format!("workload-{r}.jsonl"))).unwrap();
        lines += w.lines().count();
    }
    assert_eq!(lines, 20, "the replicas' workloads split the whole");
    assert!(!dir.path().join("workload.jsonl").exists());
}

#[test]
fn the_official_openai_sdk_passes_strict_validation_plain_and_streamed() {
    if !python_has("openai") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run_client("examples/clients/openai-sdk.toml", dir.path(), &[]);
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{}\n{log}", text(&out.stdout));
    assert!(!log.contains("error "), "the SDK raised: {log}");
    let s = summary(dir.path());
    assert_eq!(s["completed"], 40);
    // Each request met a 429 and a 503 and was retried twice by the SDK: the provider
    // counted every retry, though the SDK says nothing about them.
    assert_eq!(s["retries"], 80, "{s}");
    assert_eq!(s["status_counts"]["429"], 40);
    assert_eq!(s["status_counts"]["503"], 40);
    assert_eq!(
        s["retry_after_violations"], 0,
        "the SDK honours Retry-After"
    );
}

#[test]
fn the_official_anthropic_sdk_passes_strict_validation_plain_and_streamed() {
    if !python_has("anthropic") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run_client("examples/clients/anthropic-sdk.toml", dir.path(), &[]);
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{}\n{log}", text(&out.stdout));
    assert!(!log.contains("error "), "the SDK raised: {log}");
    let s = summary(dir.path());
    assert_eq!(s["completed"], 40);
    assert_eq!(s["retries"], 80, "{s}");
    assert_eq!(s["status_counts"]["429"], 40);
    assert_eq!(s["status_counts"]["529"], 40);
    assert_eq!(
        s["retry_after_violations"], 0,
        "the SDK honours Retry-After"
    );
    let attempts = std::fs::read_to_string(dir.path().join("attempts.csv")).unwrap();
    assert!(
        attempts.contains("/v1/messages"),
        "journaled as Messages calls"
    );
}

/// The same workload and faults through the openai SDK's Responses API
/// (`client.responses.create`, plain and streamed): every answer passes the SDK's strict
/// validation, its retries are counted, and the journal holds Responses calls only.
#[test]
fn the_official_openai_sdk_passes_strict_validation_on_the_responses_api() {
    if !python_has("openai") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run_client(
        "examples/clients/openai-responses-sdk.toml",
        dir.path(),
        &[],
    );
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{}\n{log}", text(&out.stdout));
    assert!(!log.contains("error "), "the SDK raised: {log}");
    assert!(
        log.contains(r#"{"ok": 40}"#),
        "every call ok, streams with usage: {log}"
    );
    let s = summary(dir.path());
    assert_eq!(s["completed"], 40);
    assert_eq!(s["retries"], 80, "{s}");
    assert_eq!(s["status_counts"]["429"], 40);
    assert_eq!(s["status_counts"]["503"], 40);
    assert_eq!(s["retry_after_violations"], 0);
    let mut routes = std::collections::BTreeSet::new();
    let mut reader = csv::Reader::from_path(dir.path().join("attempts.csv")).unwrap();
    for row in reader.deserialize::<std::collections::HashMap<String, String>>() {
        routes.insert(row.unwrap()["route"].clone());
    }
    assert_eq!(routes, ["/v1/responses".to_string()].into());
}

/// The anthropic SDK's `messages.count_tokens` passes strict validation, and a count does
/// none of an item's work: a client that counts every LLM item and sends half of them,
/// and never sends its two record writes, completes half the LLM items and no record (a
/// count had been matched to a record, which takes any request naming no prompt), its
/// counts journaled as its own requests (`foreign_requests`).
#[test]
fn the_anthropic_sdks_token_counts_are_the_clients_own_requests() {
    if !python_has("anthropic") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import anthropic, json, os
client = anthropic.Anthropic(_strict_response_validation=True, max_retries=0)
items = [json.loads(l) for l in open(os.environ["STAMPEDE_WORKLOAD"])]
items = [item for item in items if "messages" in item]
for n, item in enumerate(items):
    counted = client.messages.count_tokens(model=item["model"], messages=item["messages"])
    assert counted.input_tokens > 0, counted
    if n % 2 == 0:
        client.messages.create(model=item["model"], messages=item["messages"],
                               max_tokens=item["max_tokens"])
print("counted", len(items))
"#;
    let out = common::stampede(&[
        "run",
        "tests/clients/count-tokens.toml",
        "--out",
        a_str(dir.path()),
        "--client",
        "--",
        "python3",
        "-c",
        script,
    ]);
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap_or_default();
    assert!(log.contains("counted 8"), "{}\n{log}", text(&out.stdout));
    let s = summary(dir.path());
    assert_eq!(s["logical_requests"], 10, "{s}");
    assert_eq!(s["completed"], 4, "{s}");
    assert_eq!(s["foreign_requests"], 8, "{s}");
    let attempts = std::fs::read_to_string(dir.path().join("attempts.csv")).unwrap();
    assert_eq!(attempts.matches("/v1/messages/count_tokens").count(), 8);
}

/// Both official SDKs' `models.list()` and `models.retrieve()` pass strict validation
/// against the model catalog (`GET /v1/models`, `/v1/models/{id}`): OpenAI's list,
/// Anthropic's pages (iterated page by page by `after_id`, and back by `before_id`), and
/// each API's not-found and unknown-key answers raised as the SDK's own exceptions. The
/// reads are journaled, but are no logical request: the four items the client then sends,
/// on models it found there, all complete, and none of its requests is foreign.
#[test]
fn the_official_sdks_list_and_retrieve_the_models_served() {
    if !python_has("openai") || !python_has("anthropic") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import anthropic, openai, json, os
items = [json.loads(l) for l in open(os.environ["STAMPEDE_WORKLOAD"])]
oa = openai.OpenAI(_strict_response_validation=True, max_retries=0)
listed = [m.id for m in oa.models.list()]
assert listed == ["gpt-small", "claude-small"], listed
m = oa.models.retrieve("claude-small")
assert (m.id, m.object, m.created, m.owned_by) == ("claude-small", "model", 1704067200, "stampede"), m
try:
    oa.models.retrieve("gpt-nope")
    raise SystemExit("gpt-nope was found")
except openai.NotFoundError as e:
    assert e.code == "model_not_found", e.body
an = anthropic.Anthropic(_strict_response_validation=True, max_retries=0)
first = an.models.list(limit=1)
assert [m.id for m in first.data] == ["gpt-small"] and first.has_more, first
# Iterating a page fetches the next ones by after_id, while has_more says there are.
assert [m.id for m in an.models.list(limit=1)] == listed
back = an.models.list(limit=1, before_id="claude-small")
assert [m.id for m in back.data] == ["gpt-small"] and not back.has_more, back
info = an.models.retrieve("claude-small")
assert info.created_at.isoformat() == "2024-01-01T00:00:00+00:00", info
assert (info.display_name, info.lifecycle, info.max_input_tokens, info.max_tokens) == (
    "claude-small", "active", 200000, 64000), info
try:
    an.models.retrieve("claude-nope")
    raise SystemExit("claude-nope was found")
except anthropic.NotFoundError as e:
    assert e.type == "not_found_error", e.body
try:
    openai.OpenAI(api_key="sk-wrong-key-0001", max_retries=0).models.list()
    raise SystemExit("a wrong key listed the models")
except openai.AuthenticationError as e:
    assert e.code == "invalid_api_key", e.body
try:
    anthropic.Anthropic(api_key="sk-wrong-key-0001", max_retries=0).models.retrieve("gpt-small")
    raise SystemExit("a wrong key found a model")
except anthropic.AuthenticationError as e:
    assert e.type == "authentication_error", e.body
for n, item in enumerate(items):
    if n % 2 == 0:
        oa.chat.completions.create(model=listed[0], messages=item["messages"],
                                   max_tokens=item["max_tokens"])
    else:
        an.messages.create(model=listed[1], messages=item["messages"],
                           max_tokens=item["max_tokens"])
print("models ok")
"#;
    let out = common::stampede(&[
        "run",
        "tests/clients/models.toml",
        "--out",
        a_str(dir.path()),
        "--client",
        "--",
        "python3",
        "-c",
        script,
    ]);
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap_or_default();
    assert!(log.contains("models ok"), "{}\n{log}", text(&out.stdout));
    assert_eq!(out.status.code(), Some(0), "{}\n{log}", text(&out.stdout));
    let s = summary(dir.path());
    assert_eq!(s["completed"], 4, "{s}");
    assert_eq!(s["foreign_requests"].as_u64().unwrap_or(0), 0, "{s}");
    // Eleven catalog reads (two of them refused keys), counted apart: the four items' four
    // attempts are the run's attempts, one each, as if no catalog had been read.
    assert_eq!(s["catalog_reads"], 11, "{s}");
    assert_eq!(s["outbound_attempts"], 4, "{s}");
    assert_eq!(s["attempts_per_logical"], 1.0, "{s}");
    let attempts = std::fs::read_to_string(dir.path().join("attempts.csv")).unwrap();
    assert_eq!(attempts.matches(",/v1/models").count(), 0, "{attempts}");
}

/// The anthropic SDK told to leave out `anthropic-version` (which it always sends), or to
/// send it doubled as a gateway that adds its own does, or sending a `temperature` under the
/// version it sends (2026-10-21, which removed it), is refused on `/v1/messages` (and
/// without the header on `/v1/messages/count_tokens`) with the real API's 400,
/// raised as its `BadRequestError` and not retried; the SDK as shipped then completes
/// every item: the refusals were journaled, each for its item. (That no limit counts them
/// is the provider's HTTP test's to show, at 1 rpm; this scenario's limit is far above.)
#[test]
fn the_anthropic_sdk_without_its_version_header_is_refused_as_the_real_api_refuses_it() {
    if !python_has("anthropic") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import anthropic, json, os
items = [json.loads(l) for l in open(os.environ["STAMPEDE_WORKLOAD"])]
bare = anthropic.Anthropic(_strict_response_validation=True, max_retries=2,
                           default_headers={"anthropic-version": anthropic.Omit()})
for item in items:
    for call in (lambda: bare.messages.create(model=item["model"], messages=item["messages"],
                                              max_tokens=item["max_tokens"]),
                 lambda: bare.messages.count_tokens(model=item["model"], messages=item["messages"])):
        try:
            call()
            raise SystemExit("sent without anthropic-version")
        except anthropic.BadRequestError as e:
            assert e.type == "invalid_request_error", e.body
            assert e.body["error"]["message"] == "anthropic-version: header is required", e.body
# A gateway that adds the header the SDK already sends: one value the API does not take.
doubled = anthropic.Anthropic(_strict_response_validation=True, max_retries=2,
                              default_headers={"anthropic-version": "2023-06-01, 2023-06-01"})
for item in items:
    try:
        doubled.messages.create(model=item["model"], messages=item["messages"],
                                max_tokens=item["max_tokens"])
        raise SystemExit("sent with a doubled anthropic-version")
    except anthropic.BadRequestError as e:
        assert e.type == "invalid_request_error", e.body
        assert e.body["error"]["message"] == \
            'anthropic-version: "2023-06-01, 2023-06-01" is not a valid version', e.body
client = anthropic.Anthropic(_strict_response_validation=True, max_retries=0)
# This SDK sends 2026-10-21, which took the sampling parameters out of the body: code that
# still passes one (through extra_body, since the SDK took them out too) is refused.
for item in items:
    try:
        client.messages.create(model=item["model"], messages=item["messages"],
                               max_tokens=item["max_tokens"], extra_body={"temperature": 0.2})
        raise SystemExit("sent a temperature under 2026-10-21")
    except anthropic.BadRequestError as e:
        assert e.body["error"]["message"] == "temperature: Extra inputs are not permitted", e.body
for item in items:
    client.messages.create(model=item["model"], messages=item["messages"],
                           max_tokens=item["max_tokens"])
print("version ok")
"#;
    let out = common::stampede(&[
        "run",
        "tests/clients/anthropic-version.toml",
        "--out",
        a_str(dir.path()),
        "--client",
        "--",
        "python3",
        "-c",
        script,
    ]);
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap_or_default();
    assert!(log.contains("version ok"), "{}\n{log}", text(&out.stdout));
    assert_eq!(out.status.code(), Some(0), "{}\n{log}", text(&out.stdout));
    let s = summary(dir.path());
    assert_eq!(s["completed"], 4, "{s}");
    // One refusal a call (400 is not retried): two without the header, one with it doubled
    // and one with a temperature under the SDK's version, an item; then one answer an item.
    assert_eq!(s["outbound_attempts"], 20, "{s}");
    assert_eq!(s["status_counts"]["400"], 16, "{s}");
    assert_eq!(s["status_counts"]["200"], 4, "{s}");
    assert_eq!(s["foreign_requests"].as_u64().unwrap_or(0), 0, "{s}");
}

#[test]
fn the_openai_sdk_default_retries_double_bill_and_the_run_says_so() {
    if !python_has("openai") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run_client(
        "examples/clients/openai-double-billing.toml",
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let s = summary(dir.path());
    assert!(s["duplicates"].as_u64().unwrap() > 0, "{s}");
    assert!(s["duplicate_tokens"].as_u64().unwrap() > 0);
    let page = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert!(
        page.contains("duplicates"),
        "the report names the failing figure"
    );
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(junit.contains("duplicates") && junit.contains("<failure"));
}

#[test]
fn a_command_that_does_not_exist_exits_2_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_client(
        "examples/clients/blind-retry.toml",
        dir.path(),
        &["no-such-client-binary-xyz"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("no-such-client-binary-xyz") && err.contains("PATH"),
        "{err}"
    );
}

#[test]
fn no_command_anywhere_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_client(&common::quickstart(), dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--client --"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_client_that_fails_at_once_is_a_reported_failure() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_client("examples/clients/blind-retry.toml", dir.path(), &["false"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let s = summary(dir.path());
    assert_eq!(s["client_exit_code"], 1);
    assert_eq!(s["failed"], 20, "nothing was sent: every request failed");
    assert!(text(&out.stdout).contains("FAIL client_exit_code"));
}

#[test]
fn a_client_that_runs_forever_is_ended_at_the_scenarios_duration() {
    let dir = tempfile::tempdir().unwrap();
    // blind-retry lasts 2 scenario minutes at a time scale of 10: 12 real seconds.
    let started = std::time::Instant::now();
    let out = run_client(
        "examples/clients/blind-retry.toml",
        dir.path(),
        &["sleep", "600"],
    );
    assert!(started.elapsed().as_secs() < 120, "the cap did not hold");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let s = summary(dir.path());
    assert_eq!(s["client_exit_code"], -15, "SIGTERM ended it: {s}");
    assert!(text(&out.stdout).contains("duration ran out"));
}

/// What each SDK raised, by request, and the journal's outcome and commit per attempt.
fn probe(api: &str) -> (Vec<String>, Vec<(String, bool)>) {
    let dir = tempfile::tempdir().unwrap();
    let out = run_client(&format!("tests/clients/faults-{api}.toml"), dir.path(), &[]);
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{}\n{log}", text(&out.stdout));
    let raised = log
        .lines()
        .filter_map(|l| l.split_once(": ").map(|(_, e)| e.to_string()))
        .collect();
    let mut journal = Vec::new();
    let mut reader = csv::Reader::from_path(dir.path().join("attempts.csv")).unwrap();
    for row in reader.deserialize::<std::collections::HashMap<String, String>>() {
        let row = row.unwrap();
        journal.push((row["outcome"].clone(), row["committed"] == "true"));
    }
    (raised, journal)
}

/// The provider's side of the fault sequence, the same for both APIs but the overload
/// status: no attempt was retried (x-should-retry: false held the last one back, though
/// its retries were on).
pub(crate) fn assert_journal(journal: &[(String, bool)], overloaded: &str) {
    let expected: Vec<(String, bool)> = [
        ("429", false),
        (overloaded, false),
        ("dropped", false),
        ("dropped", true),
        ("hang", false),
        ("stream_cut", true),
        ("stream_error", true),
        ("500", false),
    ]
    .iter()
    .map(|(o, c)| (o.to_string(), *c))
    .collect();
    assert_eq!(journal, expected.as_slice());
}

/// What the openai SDK raises for each fault of the probe, in order, through either API:
/// they differ only in what a stream's error event comes out as (`stream_error`).
fn openai_raised(stream_error: &str) -> [&str; 8] {
    [
        "RateLimitError",
        "InternalServerError",
        "APIConnectionError",
        "APIConnectionError",
        "APITimeoutError",
        "APIConnectionError",
        stream_error,
        "InternalServerError",
    ]
}

#[test]
fn every_fault_reaches_the_openai_sdk_as_the_real_api_delivers_it() {
    if !python_has("openai") {
        return;
    }
    let (raised, journal) = probe("openai");
    assert_eq!(raised, openai_raised("APIError"));
    assert_journal(&journal, "503");
}

#[test]
fn every_fault_reaches_the_openai_sdks_responses_api_as_the_real_api_delivers_it() {
    if !python_has("openai") {
        return;
    }
    let (raised, journal) = probe("openai-responses");
    // The stream's `error` event is an event the helper hands on, not an exception: its
    // final response never came.
    assert_eq!(raised, openai_raised("RuntimeError"));
    assert_journal(&journal, "503");
}

#[test]
fn every_fault_reaches_the_anthropic_sdk_as_the_real_api_delivers_it() {
    if !python_has("anthropic") {
        return;
    }
    let (raised, journal) = probe("anthropic");
    assert_eq!(
        raised,
        [
            "RateLimitError",
            "OverloadedError",
            "APIConnectionError",
            "APIConnectionError",
            "APITimeoutError",
            // A stream cut mid-answer surfaces from httpx as it is, as with the real API.
            "RemoteProtocolError",
            "APIStatusError",
            "InternalServerError"
        ]
    );
    assert_journal(&journal, "529");
}

#[test]
fn check_runs_a_client_scenario_from_its_file() {
    if !python_has("openai") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("junit.xml");
    let out = stampede(&[
        "check",
        "examples/clients/openai-sdk.toml",
        "--junit",
        a_str(&junit),
        "--out",
        a_str(dir.path()),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("PASS openai-sdk"));
}

/// Whether process `pid` still exists (a zombie counts as gone: it runs nothing).
/// The pid a client wrote to `path` (whole lines only), waiting up to a minute for it.
fn pid_written_to(path: &Path) -> String {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        match std::fs::read_to_string(path) {
            Ok(pid) if pid.ends_with('\n') => return pid.trim().to_string(),
            _ if std::time::Instant::now() < end => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => panic!("the client never started"),
        }
    }
}

fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat.split(") ").nth(1).is_some_and(|s| s.starts_with('Z')))
}

/// What a client starts ends with the run: a wrapper's child left in the background (as
/// `sh -c`, `npm run` or `uv run` leave the real client) is killed with its group, where it
/// used to outlive the run.
#[test]
fn a_child_the_client_leaves_running_is_stopped_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let script = format!("sleep 600 & echo $! > {}; exit 0", a_str(&pid_file));
    let out = run_client(
        "examples/clients/blind-retry.toml",
        &dir.path().join("run"),
        &["sh", "-c", &script],
    );
    assert_eq!(
        summary(&dir.path().join("run"))["client_exit_code"],
        0,
        "{}",
        text(&out.stdout)
    );
    let pid = std::fs::read_to_string(&pid_file).expect("the client wrote its child's pid");
    let pid = pid.trim();
    // Killed before the run returned; reaped by whoever adopted it a moment later.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(pid) && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!alive(pid), "the client's child {pid} outlived the run");
}

/// Replicas that ignore SIGTERM are told to stop together and killed together after the
/// grace, not one after another (each waited its own grace: 4 replicas took 20 s more).
#[test]
fn replicas_that_ignore_sigterm_are_stopped_together() {
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    // 20 scenario seconds at a time scale of 10: a cap of 2 real seconds, then 5 of grace.
    let out = run_blind_retry(
        dir.path(),
        &["duration=\"20s\"", "client.replicas=4"],
        &["sh", "-c", "trap '' TERM; while :; do sleep 0.2; done"],
    );
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert_eq!(
        summary(dir.path())["client_exit_code"],
        -9,
        "killed after the grace"
    );
    // Together: about 7 s. One after another: 22 s. The bound leaves a busy machine 9 s.
    assert!(
        took < std::time::Duration::from_secs(16),
        "stopping 4 replicas took {took:?}"
    );
}

/// A runner stopped by Ctrl-C (SIGINT) while its client runs takes the client's processes
/// down with it (in a group of their own, they no longer get the terminal's signal), and
/// still reports what reached the provider until then: the summary says it was
/// interrupted, and the run exits as SIGINT ends a process (130), neither passed nor failed.
#[test]
fn a_runner_interrupted_while_its_client_runs_stops_the_client_and_keeps_what_it_measured() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    // The workload's first item, then a child that would outlive the run, then a wait for it.
    let script = format!(
        r#"
import http.client, json, os, subprocess, urllib.parse
url = urllib.parse.urlparse(os.environ["STAMPEDE_PROVIDER_URL"])
c = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
with open(os.environ["STAMPEDE_WORKLOAD"]) as f:
    first = json.loads(f.readline())
c.request("POST", "/v1/chat/completions", body=json.dumps(first["body"]), headers={{
    "authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
    "content-type": "application/json"}})
print("status", c.getresponse().status, flush=True)
child = subprocess.Popen(["sleep", "600"])
with open({pid:?} + ".tmp", "w") as f:
    f.write(str(child.pid) + "\n")
os.rename({pid:?} + ".tmp", {pid:?})
child.wait()
"#,
        pid = a_str(&pid_file)
    );
    let run_dir = dir.path().join("run");
    let runner = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args([
            "run",
            "examples/clients/blind-retry.toml",
            "--out",
            a_str(&run_dir),
            "--client",
            "--",
            "python3",
            "-c",
            &script,
        ])
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the stampede binary runs");
    let pid = pid_written_to(&pid_file);
    // SAFETY: kill(2) on the runner this test spawned and has not reaped.
    unsafe {
        libc::kill(runner.id() as libc::pid_t, libc::SIGINT);
    }
    let out = runner.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("interrupted by SIGINT at"),
        "{}",
        text(&out.stdout)
    );
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(&pid) && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        !alive(&pid),
        "the client's child {pid} outlived the interrupted run"
    );
    // The completion the client made before the stop is measured, from the journal.
    let s = summary(&run_dir);
    assert_eq!(s["interrupted"]["signal"], "SIGINT", "{s}");
    assert_eq!(s["outbound_attempts"], 1, "{s}");
    assert_eq!(s["completed"], 1, "{s}");
    // The rest was not done, not failed: open when the run stopped, and never sent.
    assert_eq!(s["failed"], 0, "{s}");
    assert_eq!(s["unfinished"], 19, "{s}");
    assert_eq!(s["unfinished_sent"], 0, "{s}");
    let stopped = s["interrupted"]["at_ms"].as_u64().unwrap();
    assert!(s["latency_ms"]["max"].as_u64().unwrap() <= stopped, "{s}");
    assert!(
        std::fs::read_to_string(run_dir.join("client.log"))
            .unwrap()
            .contains("status 200"),
        "the client's output is kept"
    );
}

/// The provider a `--client` run starts answers its control plane only to the run: a
/// client that resets it (which emptied the journal the run is measured from) or gives it
/// another scenario is refused, and the run's figures keep every attempt it made.
#[test]
fn the_client_under_test_cannot_reset_the_provider() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import http.client, json, os, urllib.parse
url = urllib.parse.urlparse(os.environ["STAMPEDE_PROVIDER_URL"])
key = os.environ["OPENAI_API_KEY"]
def call(method, path, body):
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        c.request(method, path, body=json.dumps(body), headers={
            "authorization": "Bearer " + key, "content-type": "application/json"})
        r = c.getresponse(); r.read()
        return r.status
    except (http.client.HTTPException, OSError):
        return "dropped"  # the scenario drops every 4th completion after commit
    finally:
        c.close()
chat = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
sent = [call("POST", "/v1/chat/completions", chat) for _ in range(3)]
print("reset", call("POST", "/_stampede/reset", {}))
print("scenario", call("PUT", "/_stampede/scenario", {"scopes": [], "credentials": []}))
sent += [call("POST", "/v1/chat/completions", chat) for _ in range(2)]
print("sent", sent)
"#;
    let out = run_client(
        "examples/clients/blind-retry.toml",
        dir.path(),
        &["python3", "-c", script],
    );
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap();
    assert!(log.contains("reset 401"), "{log}\n{}", text(&out.stdout));
    assert!(log.contains("scenario 401"), "{log}");
    assert_eq!(summary(dir.path())["outbound_attempts"], 5, "{log}");
}

/// A client that gives up on an answer before the provider sends it (its timeout shorter
/// than the latency) did not get a completion: the provider journaled a 200 at arrival, and
/// marks it undelivered when the client goes away, so the run counts the request failed,
/// not completed.
#[test]
fn an_answer_the_client_gave_up_on_is_not_a_completion() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import http.client, json, os, urllib.parse
url = urllib.parse.urlparse(os.environ["STAMPEDE_PROVIDER_URL"])
c = http.client.HTTPConnection(url.hostname, url.port, timeout=1)
chat = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
c.request("POST", "/v1/chat/completions", body=json.dumps(chat), headers={
    "authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
    "content-type": "application/json"})
try:
    c.getresponse().read()
    print("answered")
except OSError as e:
    print("gave up:", e)
"#;
    // Latency 60 scenario seconds: 6 real seconds at the scenario's time scale of 10.
    let out = run_blind_retry(
        dir.path(),
        &["provider.latency={fixed=\"60s\"}", "provider.faults=[]"],
        &["python3", "-c", script],
    );
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap();
    assert!(log.contains("gave up"), "{log}\n{}", text(&out.stderr));
    let s = summary(dir.path());
    assert_eq!(s["outbound_attempts"], 1, "{s}");
    assert_eq!(s["completed"], 0, "the client never got its answer: {s}");
    assert!(s["undelivered_tokens"].as_u64() > Some(0), "{s}");
    // Nor a success anywhere else: an error, undelivered, and no 2xx in the time series.
    let errors = s["errors"].as_array().expect("errors");
    assert!(
        errors
            .iter()
            .any(|e| e["status"] == "200" && e["message"] == "undelivered"),
        "{s}"
    );
    let series = std::fs::read_to_string(dir.path().join("timeseries.csv")).unwrap();
    let mut rows = series.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let column = header.iter().position(|c| *c == "status_2xx").unwrap();
    let delivered: u64 = rows
        .map(|r| r.split(',').nth(column).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(delivered, 0, "{series}");
}

/// A client that writes without end fills its log to the cap and no further; the log says
/// how much it dropped (`yes` wrote 4.4 GB in two seconds), and the client is not held up.
#[test]
fn a_client_log_stops_at_its_cap_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // 20 scenario seconds at a time scale of 10: `yes` writes for 2 real seconds.
    let out = run_blind_retry(dir.path(), &["duration=\"20s\""], &["yes"]);
    let log = dir.path().join("client.log");
    let size = std::fs::metadata(&log).unwrap().len();
    let cap: u64 = 64 << 20;
    assert!(
        size > cap && size < cap + 1024,
        "client.log is {size} bytes: {}",
        text(&out.stderr)
    );
    let mut tail = std::fs::read(&log).unwrap();
    let tail = String::from_utf8_lossy(&tail.split_off(tail.len() - 300)).into_owned();
    assert!(tail.contains("reached its cap of 64 MiB"), "{tail}");
    assert!(
        tail.contains("more bytes of the client's output were dropped"),
        "{tail}"
    );
}

/// A run into a folder an earlier run with more replicas used leaves none of that run's
/// workload files and logs (`workload-2.jsonl` beside a run of one); the workload's path
/// is absolute, so a client that changes directory still finds it; a folder given as the
/// command is named as one.
#[test]
fn a_run_directory_holds_only_this_runs_replica_files() {
    let dir = tempfile::tempdir().unwrap();
    let run = |replicas: &str, command: &[&str]| run_blind_retry(dir.path(), &[replicas], command);
    run("client.replicas=3", &["true"]);
    assert!(dir.path().join("workload-2.jsonl").exists());
    let found = r#"cd / && test -s "$STAMPEDE_WORKLOAD""#;
    let out = run("client.replicas=1", &["sh", "-c", found]);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("workload") || n.starts_with("client"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["client.log", "workload.jsonl"],
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        summary(dir.path())["client_exit_code"],
        0,
        "the workload was found from /"
    );
    let folder = run("client.replicas=1", &[a_str(dir.path())]);
    assert_eq!(folder.status.code(), Some(2));
    assert!(
        text(&folder.stderr).contains("it is a folder, not a program"),
        "{}",
        text(&folder.stderr)
    );
}

/// An answer still on its way when the run is over was not delivered within it: a client
/// whose requests are held open by a process outside its group (a long-lived local proxy)
/// leaves them pending past the run's end, and they are counted undelivered, not completed
/// (they were counted completed, with a latency past the run's end).
#[test]
fn answers_still_pending_at_the_end_are_not_completions() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("holder.pid");
    let script = format!(
        r#"
import http.client, json, os, sys, time, urllib.parse
url = urllib.parse.urlparse(os.environ["STAMPEDE_PROVIDER_URL"])
chat = {{"model": "m", "max_tokens": 5, "messages": [{{"role": "user", "content": "hi"}}]}}
held = []
for i in range(3):
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    chat["user"] = str(i)
    c.request("POST", "/v1/chat/completions", body=json.dumps(chat), headers={{
        "authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
        "content-type": "application/json"}})
    held.append(c)
time.sleep(0.5)
if os.fork() == 0:
    os.setsid()  # out of the client's group: the run cannot stop it
    open({pid:?}, "w").write(str(os.getpid()) + "\n")
    time.sleep(60)
    sys.exit(0)
"#,
        pid = a_str(&pid_file)
    );
    // Answers take 60 scenario seconds: 6 real seconds, after the run is over.
    let out = run_blind_retry(
        dir.path(),
        &["provider.latency={fixed=\"60s\"}", "provider.faults=[]"],
        &["python3", "-c", &script],
    );
    if let Ok(pid) = std::fs::read_to_string(&pid_file) {
        // SAFETY: kill(2) on the helper process this test's client left behind.
        unsafe {
            libc::kill(pid.trim().parse().unwrap_or(0), libc::SIGKILL);
        }
    }
    let s = summary(dir.path());
    assert_eq!(s["outbound_attempts"], 3, "{s}\n{}", text(&out.stdout));
    assert_eq!(
        s["completed"], 0,
        "no answer was delivered within the run: {s}"
    );
}

/// The run names the replica that failed and its log, not the first replica's, and says
/// which replicas the duration's end stopped; and a flag of live runs given to a client
/// run is refused by name, where it was ignored.
#[test]
fn the_log_named_is_the_failed_replicas_and_live_flags_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_blind_retry(
        dir.path(),
        &["client.replicas=3"],
        &[
            "sh",
            "-c",
            r#"test "$STAMPEDE_REPLICA" = 2 && exit 5; exit 0"#,
        ],
    );
    let said = text(&out.stdout);
    assert!(
        said.contains("client replica 2 of 3 exited with 5"),
        "{said}"
    );
    assert!(said.contains("client-2.log"), "{said}");
    // Replica 0 fails at once and the others run into the duration's end: the line says
    // how each ended, where it said replica 0's 4 was "ended by the runner".
    let out = run_blind_retry(
        dir.path(),
        &["client.replicas=3", "duration=30s"],
        &[
            "sh",
            "-c",
            r#"test "$STAMPEDE_REPLICA" = 0 && exit 4; sleep 30"#,
        ],
    );
    let said = text(&out.stdout);
    let line = said
        .lines()
        .find(|l| l.starts_with("client replica 0 of 3 exited with 4"))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(!line.contains("ended by the runner"), "{line}");
    // Its own time, not the whole client's (which ran into the duration's 3 real s).
    let ms: u64 = line
        .split(" after ")
        .nth(1)
        .and_then(|rest| rest.split(" ms").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(ms < 3_000, "{line}");
    assert!(
        said.contains("the runner ended replica(s) 1, 2 when the scenario's duration ran out"),
        "{said}"
    );
    for flag in [
        &["--time-scale", "100"][..],
        &["--provider", "http://127.0.0.1:9"][..],
        &["--ledger", "l.db"][..],
    ] {
        let mut args = vec![
            "run",
            "examples/clients/blind-retry.toml",
            "--out",
            a_str(dir.path()),
            "--client",
        ];
        args.extend_from_slice(flag);
        args.extend(["--", "true"]);
        let out = stampede(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flag:?}: {}",
            text(&out.stdout)
        );
        assert!(
            text(&out.stderr).contains("is for --live runs"),
            "{flag:?}: {}",
            text(&out.stderr)
        );
    }
}

/// A client's figures are its workload's: each attempt counts for the item whose prompt it
/// carried (`request N:`, which every workload prompt starts with), whatever key or route
/// sent it. This client sends the first half of the workload, late, then requests of its
/// own. Only the half it sent completes; its own requests are counted apart
/// (`foreign_requests`); the queue wait runs from when the workload made each item due;
/// and an item sent past its deadline misses it. Before, the 10 requests of its own made
/// up `completed 20` of 20, with queue waits of 0 and no deadline missed.
#[test]
fn a_client_is_judged_by_its_workload_not_by_what_else_it_sends() {
    if !python_has("json") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Items are due at 5/s from 0 (scenario time, 10 times real time): this client waits
    // until 10 scenario-s before it starts, past every item's 5 s deadline.
    let script = PY_CLIENT.to_string()
        + r#"
start = int(os.environ["STAMPEDE_START_UNIX_MS"]) / 1000
scale = float(os.environ["STAMPEDE_TIME_SCALE"])
time.sleep(max(0, start + 10 / scale - time.time()))
chat = "/v1/chat/completions"
items = [json.loads(l) for l in open(os.environ["STAMPEDE_WORKLOAD"])]
sent = [send(chat, i["body"]) for i in items[:10]]
own = [send(chat, {"model": "m", "max_tokens": 5,
                   "messages": [{"role": "user", "content": "status check %d" % n}]})
       for n in range(10)]
print("workload", sent, "own", own)
"#;
    let out = run_blind_retry(
        dir.path(),
        &[
            "provider.faults=[]",
            "workload.0.deadline=5s",
            "expect.foreign_requests=0",
        ],
        &["python3", "-c", &script],
    );
    let s = summary(dir.path());
    assert!(
        text(&out.stdout).contains("client exited with 0"),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(s["logical_requests"], 20, "{s}");
    assert_eq!(s["completed"], 10, "only the workload's own items: {s}");
    assert_eq!(s["failed"], 10, "{s}");
    assert_eq!(s["foreign_requests"], 10, "{s}");
    // A scenario can hold a client to the prompts it is given.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("FAIL foreign_requests: actual 10, limit <= 0"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stdout).contains("note: 10 request(s) the provider saw named no item"),
        "the console says why items failed: {}",
        text(&out.stdout)
    );
    assert!(
        std::fs::read_to_string(dir.path().join("summary.md"))
            .unwrap()
            .contains("| `foreign_requests` | 10 |"),
        "and so does the report"
    );
    assert_eq!(s["outbound_attempts"], 20, "every attempt is measured: {s}");
    assert_eq!(s["by_tenant"]["acme"]["completed"], 10, "{s}");
    // Due from 0 to 1.8 s, first sent from 10 s on.
    assert!(
        s["queue_wait_ms"]["p50"].as_u64().unwrap() >= 8_000,
        "the wait in the client counts: {s}"
    );
    assert_eq!(s["deadline_misses"], 20, "sent late or never: {s}");
}

/// A client still at work when the scenario's duration runs out is ended by the runner; the
/// items it had not finished are unfinished at the cap (and listed in unfinished.csv), not
/// failed: it never gave them up, and what it sent may have executed. Before, they were
/// failed with `attempts_exhausted`, the two sent among them.
#[test]
fn work_open_when_the_duration_runs_out_is_unfinished_not_failed() {
    if !python_has("json") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Two items sent, their answers due (30 s of scenario time) after the duration (20 s)
    // runs out; then nothing until the runner ends the client.
    let script = PY_CLIENT.to_string()
        + r#"
items = [json.loads(l) for l in open(os.environ["STAMPEDE_WORKLOAD"])]
held = [post("/v1/chat/completions", item["body"], timeout=60) for item in items[:2]]
print("sent 2", flush=True)
time.sleep(60)
"#;
    let out = run_blind_retry(
        dir.path(),
        &[
            "provider.faults=[]",
            "duration=20s",
            "provider.latency={ fixed = \"30s\" }",
        ],
        &["python3", "-c", &script],
    );
    let s = summary(dir.path());
    assert!(
        text(&out.stdout).contains("ended by the runner"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(s["outbound_attempts"], 2, "{s}");
    assert_eq!(s["completed"], 0, "{s}");
    assert_eq!(s["failed"], 0, "none was given up: {s}");
    assert_eq!(s["unfinished"], 20, "{s}");
    assert_eq!(
        s["unfinished_sent"], 2,
        "the two sent may have executed: {s}"
    );
    let unfinished = std::fs::read_to_string(dir.path().join("unfinished.csv")).unwrap();
    assert_eq!(unfinished.lines().count(), 1 + 20, "{unfinished}");
}

/// A client that removes its own run directory (a clean-up step run in the wrong folder)
/// loses its log, not the run: the directory is made again for what the provider measured,
/// and the console says what happened. Before, the run ended with exit 2, "cannot write
/// attempts.csv", and no figures.
#[test]
fn a_client_that_removes_its_run_directory_loses_its_log_not_the_run() {
    if !python_has("json") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = "import shutil, sys; shutil.rmtree(sys.argv[1])";
    let out = run_blind_retry(
        dir.path(),
        &[],
        &["python3", "-c", script, a_str(dir.path())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("was removed while the client ran"),
        "{}",
        text(&out.stdout)
    );
    let s = summary(dir.path());
    assert_eq!(s["logical_requests"], 20, "{s}");
    assert!(dir.path().join("attempts.csv").exists());
}

/// A process the client started in a session of its own (`setsid`, a daemon) is out of
/// reach of the signals to the client's process group; it carries the run's mark
/// (`STAMPEDE_CLIENT_RUN`) and is killed once the client is done, and the console says so.
/// Before, it ran on after the run, unseen.
#[cfg(target_os = "linux")]
#[test]
fn a_process_the_client_started_in_a_session_of_its_own_does_not_outlive_the_run() {
    if !python_has("json") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("escaped.pid");
    let script = "import subprocess, sys\n\
        p = subprocess.Popen(['sleep', '300'], start_new_session=True)\n\
        open(sys.argv[1], 'w').write(str(p.pid))\n";
    let out = run_blind_retry(
        dir.path(),
        &[],
        &["python3", "-c", script, a_str(&pid_file)],
    );
    let pid =
        std::fs::read_to_string(&pid_file).unwrap_or_else(|_| panic!("{}", text(&out.stderr)));
    let pid = pid.trim().to_string();
    let gone = (0..100).any(|_| {
        !alive(&pid) || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            false
        }
    });
    if !gone {
        // SAFETY: kill(2) on the process this test's client started.
        unsafe {
            libc::kill(pid.parse().unwrap_or(0), libc::SIGKILL);
        }
    }
    assert!(gone, "the escaped process {pid} outlived the run");
    assert!(
        text(&out.stdout).contains("outlived it outside its process group"),
        "{}",
        text(&out.stdout)
    );
}

/// A link the client puts in place of a run file is removed before the run writes there:
/// the run's files stay in the run directory. Before, attempts.csv was written through the
/// link, outside it.
#[cfg(unix)]
#[test]
fn a_link_the_client_puts_in_the_run_directory_is_not_written_through() {
    if !python_has("json") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let outside = dir.path().join("outside.csv");
    let script = "import os, sys\n\
        os.symlink(sys.argv[2], os.path.join(sys.argv[1], 'attempts.csv'))\n";
    let out = run_blind_retry(
        &run,
        &[],
        &["python3", "-c", script, a_str(&run), a_str(&outside)],
    );
    assert!(
        text(&out.stdout).contains("symbolic link(s) the client left"),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(!outside.exists(), "written through the link");
    let kept = std::fs::symlink_metadata(run.join("attempts.csv")).unwrap();
    assert!(kept.file_type().is_file());
}

/// A client that sends nothing (it never read its workload, or sent elsewhere) leaves every
/// item failed; the console says the client sent nothing, where it had only said the
/// client exited with 0.
#[test]
fn a_client_that_sends_nothing_is_told_so() {
    if !python_has("json") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run_blind_retry(dir.path(), &[], &["python3", "-c", "pass"]);
    let s = summary(dir.path());
    assert_eq!(s["outbound_attempts"], 0, "{s}");
    assert_eq!(s["failed"], 20, "{s}");
    assert!(
        text(&out.stdout).contains("note: the client sent no request to the provider"),
        "{}",
        text(&out.stdout)
    );
}

/// An agent puts a system prompt, or the conversation so far, before the work it was given,
/// and may send its prompt as a list of parts with an image first: the provider finds the
/// item wherever the prompt stands. Before, it read the first message alone, so every item
/// of such a client was "foreign": completed 0, failed 20, and dead letters saying "not
/// executed" for work that ran and was billed.
#[test]
fn an_agents_system_prompt_or_history_before_its_prompt_still_names_the_item() {
    if !python_has("json") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = PY_CLIENT.to_string()
        + r#"
statuses = []
for n, line in enumerate(open(os.environ["STAMPEDE_WORKLOAD"])):
    item = json.loads(line)
    prompt = item["body"]["messages"][0]["content"]
    if n % 4 == 0:
        messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": prompt}]
    elif n % 4 == 1:
        messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                    {"role": "user", "content": prompt}]
    elif n % 4 == 2:
        messages = [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "text", "text": prompt}]}]
    else:
        # Anthropic: the system prompt is its own field, the history comes first.
        statuses.append(send("/v1/messages", {"model": "claude", "max_tokens": 16, "system": "Be terse.",
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                         {"role": "user", "content": prompt}]},
            {"x-api-key": key, "anthropic-version": "2023-06-01"}))
        continue
    statuses.append(send("/v1/chat/completions", {"model": "m", "max_tokens": 16, "messages": messages}))
print("statuses", statuses)
"#;
    let out = run_blind_retry(
        dir.path(),
        &["provider.faults=[]", "expect.foreign_requests=0"],
        &["python3", "-c", &script],
    );
    let s = summary(dir.path());
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap_or_default();
    assert!(
        text(&out.stdout).contains("client exited with 0"),
        "{}{}{log}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(s["outbound_attempts"], 20, "{s}\n{log}");
    assert_eq!(
        s["completed"], 20,
        "every item was sent and answered: {s}\n{log}"
    );
    assert_eq!(s["failed"], 0, "{s}");
    assert_eq!(s["foreign_requests"].as_u64().unwrap_or(0), 0, "{s}");
}

/// A runner killed with SIGKILL (a CI job's timeout, the OOM killer) can stop nothing
/// itself; Linux stops the client it started (the replica's leader) for it, where the
/// client ran on to its end.
#[cfg(target_os = "linux")]
#[test]
fn a_runner_killed_with_sigkill_takes_its_client_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("client.pid");
    let script = format!(
        "import os, time\nopen({p:?} + '.tmp', 'w').write(str(os.getpid()) + '\\n')\nos.rename({p:?} + '.tmp', {p:?})\ntime.sleep(600)\n",
        p = a_str(&pid_file)
    );
    let mut runner = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args([
            "run",
            "examples/clients/blind-retry.toml",
            "--out",
            a_str(&dir.path().join("run")),
            "--client",
            "--",
            "python3",
            "-c",
            &script,
        ])
        .env_remove("GITHUB_STEP_SUMMARY")
        // A runner killed with SIGKILL cannot remove the private copy of its workload:
        // made in this test's folder, it goes with it, not left in the machine's /tmp.
        .env("TMPDIR", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the stampede binary runs");
    let pid = pid_written_to(&pid_file);
    runner.kill().expect("SIGKILL the runner");
    runner.wait().expect("reap it");
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(&pid) && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!alive(&pid), "the client {pid} outlived its killed runner");
}

/// The client reads its workload with each key whole (the line's `credential`, and its
/// place in `STAMPEDE_CREDENTIALS` as `credential_index`) from a private file removed when
/// the run ends; the run directory, a CI artifact, holds no key whole anywhere, even where
/// the client printed it (a shell's trace of its `curl`, an error quoting the key).
#[test]
fn the_run_directory_keeps_the_workload_with_keys_masked() {
    if !python_has("json") {
        return;
    }
    let key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd";
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let seen = dir.path().join("seen.json");
    let script = "import json, os, sys\n\
        path = os.environ['STAMPEDE_WORKLOAD']\n\
        line = json.loads(open(path).readline())\n\
        keys = os.environ['STAMPEDE_CREDENTIALS'].split(',')\n\
        modes = [os.stat(p).st_mode & 0o777 for p in (path, os.path.dirname(path))]\n\
        json.dump({'path': path, 'credential': line['credential'], 'modes': modes, \
        'by_index': keys[line['credential_index']]}, open(sys.argv[1], 'w'))\n\
        print('+ curl -H \"Authorization: Bearer ' + os.environ['OPENAI_API_KEY'] + '\"')\n\
        sys.stderr.write('invalid key ' + line['credential'] + '\\n')\n";
    let out = stampede(&[
        "run",
        "examples/clients/blind-retry.toml",
        "--set",
        &format!("provider.credentials.0.key={key}"),
        "--set",
        &format!("workload.0.credential={key}"),
        "--out",
        a_str(&run_dir),
        "--client",
        "--",
        "python3",
        "-c",
        script,
        a_str(&seen),
    ]);
    let seen: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&seen).unwrap_or_else(|_| panic!("{}", text(&out.stderr))),
    )
    .unwrap();
    assert_eq!(seen["credential"], key, "the client gets the key whole");
    assert_eq!(seen["by_index"], key);
    // Only its user reads it, whatever the umask (022 had made both readable by all).
    assert_eq!(seen["modes"], serde_json::json!([0o600, 0o700]), "{seen}");
    let handed = Path::new(seen["path"].as_str().unwrap());
    assert!(!handed.starts_with(&run_dir), "{handed:?}");
    assert!(
        !handed.exists(),
        "the private copy is removed after the run"
    );
    let kept = std::fs::read_to_string(run_dir.join("workload.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(kept.lines().next().unwrap()).unwrap();
    assert_eq!(first["credential"], "sk-...abcd");
    assert_eq!(first["credential_index"], 0);
    let log = std::fs::read_to_string(run_dir.join("client.log")).unwrap();
    assert!(
        log.contains("Bearer sk-...abcd") && log.contains("invalid key sk-...abcd"),
        "what the client printed is kept, its key masked: {log}"
    );
    for entry in std::fs::read_dir(&run_dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let whole = bytes.windows(key.len()).any(|w| w == key.as_bytes());
        assert!(!whole, "{} holds the key whole", path.display());
    }
}

/// What `examples/clients/structured_probe.py` printed, by call: `ok ...` or the exception.
fn structured(api: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let scenario = format!("tests/clients/structured-{api}.toml");
    let out = run_client(&scenario, dir.path(), &[]);
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{}\n{log}", text(&out.stdout));
    let s = summary(dir.path());
    assert_eq!(s["completed"], s["logical_requests"], "{s}");
    log.lines().map(String::from).collect()
}

/// Structured outputs and forced tool calls parse as the official openai SDK parses the
/// real API's: `chat.completions.parse` with a pydantic model, a `tool_choice="required"`
/// call, each plain and streamed. The provider had answered its own text to each, which
/// the SDK could not parse ("Invalid JSON") and which held no tool call.
#[test]
fn the_openai_sdk_parses_structured_outputs_and_forced_tool_calls() {
    if !python_has("openai") {
        return;
    }
    assert_eq!(
        structured("openai"),
        [
            "parse: ok Plan",
            "parse_stream: ok Plan",
            "tool: ok make_plan Plan tool_calls",
            "tool_stream: ok make_plan Plan",
        ]
    );
}

/// The same through the openai SDK's Responses API: `responses.parse` with a pydantic model
/// (`text.format` `json_schema`), plain and streamed, and a forced function call
/// (`tool_choice="required"`, and naming the function, streamed) whose arguments validate
/// against the model. The route had answered text to each.
#[test]
fn the_openai_sdks_responses_api_parses_structured_outputs_and_forced_calls() {
    if !python_has("openai") {
        return;
    }
    assert_eq!(
        structured("openai-responses"),
        [
            "parse: ok Plan completed",
            "parse_stream: ok Plan",
            "tool: ok function_call make_plan completed",
            "tool_stream: ok function_call make_plan",
        ]
    );
}

/// A forced tool call (`tool_choice={"type": "any"}`) reaches the official anthropic SDK as
/// a `tool_use` block whose input validates against the tool's schema, plain and streamed,
/// and `messages.parse` with a pydantic model gets JSON it parses.
#[test]
fn the_anthropic_sdk_gets_forced_tool_calls() {
    if !python_has("anthropic") {
        return;
    }
    assert_eq!(
        structured("anthropic"),
        [
            "tool: ok tool_use make_plan tool_use",
            "tool_stream: ok tool_use make_plan tool_use",
            "parse: ok Plan",
        ]
    );
}

/// An agent's tool round trip through the official openai SDK, on chat completions and on
/// the Responses API: the call's answer sent back is taken, and a turn that drops it gets
/// the real API's 400 (`BadRequestError`), which the SDK never retries. Such a turn had
/// been answered 200, so an agent that lost its tool messages ran cleanly here. The turns
/// name no workload item (the items are done first), so they are the client's own requests.
#[test]
fn the_openai_sdk_hears_a_dropped_tool_answer_refused() {
    if !python_has("openai") {
        return;
    }
    let script = r#"
import json, os, openai
client = openai.OpenAI(_strict_response_validation=True, timeout=10, max_retries=0)
for line in open(os.environ["STAMPEDE_WORKLOAD"]):
    r = json.loads(line)
    client.chat.completions.create(model=r["model"], messages=r["messages"], max_tokens=r["max_tokens"])
schema = {"type": "object", "properties": {}}
ask = [{"role": "user", "content": "weather in Paris?"}]
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": schema}}]
m = client.chat.completions.create(model="m", messages=ask, tools=tools, tool_choice="required", max_tokens=50)
said = m.choices[0].message.model_dump(exclude_none=True)
answer = {"role": "tool", "tool_call_id": m.choices[0].message.tool_calls[0].id, "content": "sunny"}
turn = client.chat.completions.create(model="m", messages=ask + [said, answer], max_tokens=50)
print("chat round trip:", turn.choices[0].finish_reason)
def refused(name, call):
    try:
        call()
        print(name + ": answered")
    except openai.BadRequestError as e:
        print(name + ":", e.status_code, e.body.get("param"), e.body.get("message"))
refused("chat dropped", lambda: client.chat.completions.create(model="m", messages=ask + [said, {"role": "user", "content": "and?"}], max_tokens=50))
tools = [{"type": "function", "name": "get_weather", "parameters": schema}]
r = client.responses.create(model="m", input=ask, tools=tools, tool_choice="required", max_output_tokens=50)
call = r.output[0]
output = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}
turn = client.responses.create(model="m", input=ask + [call.model_dump(exclude_none=True), output], max_output_tokens=50)
print("responses round trip:", turn.status)
refused("responses dropped", lambda: client.responses.create(model="m", input=ask + [call.model_dump(exclude_none=True)], max_output_tokens=50))
refused("responses stray", lambda: client.responses.create(model="m", input=ask + [output], max_output_tokens=50))
"#;
    let dir = tempfile::tempdir().unwrap();
    let out = run_client(
        "tests/clients/structured-openai.toml",
        dir.path(),
        &["python3", "-c", script],
    );
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{}\n{log}", text(&out.stdout));
    let call = log
        .lines()
        .find_map(|l| {
            l.strip_prefix("responses dropped: 400 input No tool output found for function call ")
        })
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [
            "chat round trip: stop",
            "chat dropped: 400 messages.[1].role An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_000000000005",
            "responses round trip: completed",
            &format!("responses dropped: 400 input No tool output found for function call {call}"),
            &format!("responses stray: 400 input No tool call found for function call output with call_id {call}"),
        ],
        "{log}"
    );
    let s = summary(dir.path());
    assert_eq!(s["completed"], s["logical_requests"], "{s}");
}

/// Requests the provider refuses as invalid (a temperature of 5), sent for a workload item,
/// count for that item: its dead letter says it was sent 3 times and last heard 400. They
/// had counted for no item and as no foreign request ("sent": false, 0 attempts).
#[test]
fn invalid_requests_for_an_item_count_for_it() {
    if !python_has("json") {
        return;
    }
    let script = "import json, os, urllib.request\n\
        base = os.environ['OPENAI_BASE_URL']; key = os.environ['OPENAI_API_KEY']\n\
        for line in open(os.environ['STAMPEDE_WORKLOAD']):\n\
        \x20   body = dict(json.loads(line)['body']); body['temperature'] = 5\n\
        \x20   for _ in range(3):\n\
        \x20       req = urllib.request.Request(base + '/chat/completions', data=json.dumps(body).encode(), headers={'Authorization': 'Bearer ' + key, 'Content-Type': 'application/json'})\n\
        \x20       try: urllib.request.urlopen(req, timeout=5)\n\
        \x20       except Exception: pass\n";
    let dir = tempfile::tempdir().unwrap();
    let out = run_blind_retry(
        dir.path(),
        &["workload.0.count=2"],
        &["python3", "-c", script],
    );
    // The scenario's expectations (no duplicates, exit 0) hold.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let s = summary(dir.path());
    assert_eq!(s["outbound_attempts"], 6, "{s}");
    assert_eq!(s["status_counts"]["400"], 6, "{s}");
    assert_eq!(s["foreign_requests"].as_u64().unwrap_or(0), 0, "{s}");
    let letters = std::fs::read_to_string(dir.path().join("dead_letter.jsonl")).unwrap();
    for line in letters.lines() {
        let d: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            (
                d["sent"].clone(),
                d["attempts"].clone(),
                d["last_status"].clone()
            ),
            (true.into(), 3.into(), 400.into()),
            "{d}"
        );
    }
    assert_eq!(letters.lines().count(), 2);
}

/// The fields the provider takes in a body (`known_fields`) hold every request parameter of
/// the SDKs CI pins, read from the SDKs themselves: with a newer SDK pinned, a parameter the
/// provider would refuse with the API's 400 fails this test, not a user's run.
#[test]
fn every_request_parameter_of_the_pinned_sdks_is_a_known_body_field() {
    if !python_has("openai") || !python_has("anthropic") {
        return;
    }
    let script = r#"
import json
from openai.types.chat import completion_create_params as chat
from openai.types import embedding_create_params as embeddings
from openai.types.responses import response_create_params as responses
from anthropic.types import message_create_params as messages
from anthropic.types.beta import message_create_params as beta
from anthropic.types import message_count_tokens_params as count
from anthropic.types.beta import message_count_tokens_params as beta_count
def keys(*types):
    # A TypedDict's keys, its bases' included, without evaluating its annotations.
    found = set()
    for t in types:
        found |= t.__required_keys__ | t.__optional_keys__
    return sorted(found)
print(json.dumps({
    "chat": keys(chat.CompletionCreateParamsStreaming, chat.CompletionCreateParamsNonStreaming),
    "embeddings": keys(embeddings.EmbeddingCreateParams),
    "responses": keys(responses.ResponseCreateParamsStreaming, responses.ResponseCreateParamsNonStreaming),
    "messages": keys(messages.MessageCreateParamsStreaming, messages.MessageCreateParamsNonStreaming),
    # `betas` travels as the anthropic-beta header, not in the body.
    "beta": [k for k in keys(beta.MessageCreateParamsStreaming) if k != "betas"],
    "count": keys(count.MessageCountTokensParams),
    "beta_count": [k for k in keys(beta_count.MessageCountTokensParams) if k != "betas"],
}))
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .output()
        .expect("run python3");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sdk: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the lists as JSON");
    use stampede_provider::server::known_fields;
    use stampede_provider::RequestRoute;
    for (list, route) in [
        ("chat", RequestRoute::ChatCompletions),
        ("embeddings", RequestRoute::Embeddings),
        ("responses", RequestRoute::Responses),
        ("messages", RequestRoute::Messages),
        ("beta", RequestRoute::Messages),
        ("count", RequestRoute::CountTokens),
        ("beta_count", RequestRoute::CountTokens),
    ] {
        let known = known_fields::of(&route).expect("a route with an API body");
        let params = sdk[list].as_array().expect("a list");
        assert!(params.len() > 3, "{list}: {params:?}");
        let missing: Vec<&str> = params
            .iter()
            .filter_map(serde_json::Value::as_str)
            .filter(|p| !known.contains(p))
            .collect();
        assert!(
            missing.is_empty(),
            "{list}: the SDK sends {missing:?}, which the provider would refuse: add them to \
             fake-provider/src/server/known_fields.rs"
        );
    }
}

/// A client whose bodies the API refuses (a misspelt parameter) fails those items for
/// that reason: `wont_improve_400`, not a spent budget it never had.
#[test]
fn items_refused_for_an_unknown_field_fail_as_wont_improve() {
    if !python_has("json") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = PY_CLIENT.to_string()
        + r#"
chat = "/v1/chat/completions"
items = [json.loads(l) for l in open(os.environ["STAMPEDE_WORKLOAD"])]
statuses = []
for n, item in enumerate(items):
    body = dict(item["body"])
    if n % 2:
        body["max_tokenz"] = 5
    statuses.append(send(chat, body))
print("statuses", statuses)
"#;
    let out = run_blind_retry(
        dir.path(),
        &["provider.faults=[]"],
        &["python3", "-c", &script],
    );
    let s = summary(dir.path());
    assert_eq!(s["logical_requests"], 20, "{}{s}", text(&out.stdout));
    assert_eq!(s["completed"], 10, "{s}");
    assert_eq!(s["failed"], 10, "{s}");
    assert_eq!(s["failures_by_reason"]["wont_improve_400"], 10, "{s}");
}
