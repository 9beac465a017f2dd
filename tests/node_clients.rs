//! The official Node.js SDKs (openai, @anthropic-ai/sdk), unmodified, as the client under
//! test: `stampede run SCENARIO --client -- node examples/clients/node/DRIVER.mjs`. They
//! need `npm ci --prefix examples/clients/node` (the versions pinned in its
//! package-lock.json); without them these tests say so and pass, unless
//! `STAMPEDE_REQUIRE_SDKS=1` (as `.ci/run` sets it), where a missing SDK fails them.

use crate::clients::{assert_journal, found_or_skipped, run_client, summary};
use crate::common::text;

use std::collections::BTreeSet;
use std::process::Command;

/// Where the drivers and their `node_modules` are.
const NODE_CLIENTS: &str = "examples/clients/node";

fn node_has(package: &str) -> bool {
    let found = Command::new("node")
        .current_dir(NODE_CLIENTS)
        .args([
            "--input-type=module",
            "-e",
            &format!("await import({package:?})"),
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    found_or_skipped(
        found,
        &format!("node cannot import {package}"),
        &format!("npm ci --prefix {NODE_CLIENTS}"),
    )
}

/// Plays `scenario` (20 plain and 20 streamed requests, each answered first a 429 with a
/// Retry-After, then `second`, then a success) with the Node.js driver `command`, and
/// checks what the provider measured: every request completed, after the two retries the
/// SDK made of it by default and never reported, with Retry-After honoured. Returns the
/// routes the journal holds.
fn plays_the_faults(scenario: &str, command: &[&str], second: &str) -> BTreeSet<String> {
    let dir = tempfile::tempdir().unwrap();
    let out = run_client(scenario, dir.path(), command);
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{}\n{log}", text(&out.stdout));
    assert!(
        log.lines().any(|line| line == r#"{"ok":40}"#),
        "every call ok, streams with usage: {log}"
    );
    let s = summary(dir.path());
    assert_eq!(s["completed"], 40, "{s}");
    assert_eq!(s["retries"], 80, "{s}");
    assert_eq!(s["status_counts"]["429"], 40, "{s}");
    assert_eq!(s["status_counts"][second], 40, "{s}");
    assert_eq!(
        s["retry_after_violations"], 0,
        "the SDK honours Retry-After: {s}"
    );
    let mut reader = csv::Reader::from_path(dir.path().join("attempts.csv")).unwrap();
    reader
        .deserialize::<std::collections::HashMap<String, String>>()
        .map(|row| row.unwrap()["route"].clone())
        .collect()
}

#[test]
fn the_official_openai_node_sdk_plays_plain_and_streamed() {
    if !node_has("openai") {
        return;
    }
    let driver = format!("{NODE_CLIENTS}/openai_driver.mjs");
    let routes = plays_the_faults(
        "examples/clients/openai-sdk.toml",
        &["node", &driver],
        "503",
    );
    assert_eq!(routes, ["/v1/chat/completions".to_string()].into());
}

#[test]
fn the_official_openai_node_sdk_plays_the_responses_api() {
    if !node_has("openai") {
        return;
    }
    let driver = format!("{NODE_CLIENTS}/openai_driver.mjs");
    let routes = plays_the_faults(
        "examples/clients/openai-responses-sdk.toml",
        &["node", &driver, "--api", "responses"],
        "503",
    );
    assert_eq!(routes, ["/v1/responses".to_string()].into());
}

#[test]
fn the_official_anthropic_node_sdk_plays_plain_and_streamed() {
    if !node_has("@anthropic-ai/sdk") {
        return;
    }
    let driver = format!("{NODE_CLIENTS}/anthropic_driver.mjs");
    let routes = plays_the_faults(
        "examples/clients/anthropic-sdk.toml",
        &["node", &driver],
        "529",
    );
    assert_eq!(routes, ["/v1/messages".to_string()].into());
}

/// What the Node.js SDK raised for each request of `tests/clients/faults-API.toml` (played
/// by `fault_probe.mjs`: the k-th attempt gets the k-th fault, streamed, no retries but on
/// the last), and the journal's side, which the Python SDKs' probes see too.
fn probe(api: &str, overloaded: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let driver = format!("{NODE_CLIENTS}/fault_probe.mjs");
    let scenario = format!("tests/clients/faults-{api}.toml");
    let out = run_client(&scenario, dir.path(), &["node", &driver, api]);
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{}\n{log}", text(&out.stdout));
    let mut journal = Vec::new();
    let mut reader = csv::Reader::from_path(dir.path().join("attempts.csv")).unwrap();
    for row in reader.deserialize::<std::collections::HashMap<String, String>>() {
        let row = row.unwrap();
        journal.push((row["outcome"].clone(), row["committed"] == "true"));
    }
    assert_journal(&journal, overloaded);
    log.lines()
        .filter_map(|l| l.split_once(": ").map(|(_, e)| e.to_string()))
        .collect()
}

/// Every fault reaches the Node.js SDKs as the real API delivers it, each as the SDK's own
/// error class: a 429, an overload, two drops, a hang (the SDK's timeout), a stream cut
/// (`fetch` says the body was `terminated`: a `TypeError` from chat's stream, wrapped as
/// `OpenAIError` by the Responses stream helper, `APIConnectionError` by anthropic's), a
/// stream's error event (`APIError`; the Responses helper rejects with the event itself,
/// a plain object) and a 500 that says not to retry it, which the last request's retries
/// leave alone.
#[test]
fn every_fault_reaches_the_node_sdks_as_the_real_api_delivers_it() {
    if !node_has("openai") || !node_has("@anthropic-ai/sdk") {
        return;
    }
    let first = [
        "RateLimitError",
        "InternalServerError",
        "APIConnectionError",
        "APIConnectionError",
        "APIConnectionTimeoutError",
    ];
    for (api, overloaded, overload_raised, cut, stream_error) in [
        (
            "openai",
            "503",
            "InternalServerError",
            "TypeError",
            "APIError",
        ),
        (
            "openai-responses",
            "503",
            "InternalServerError",
            "OpenAIError",
            "Object",
        ),
        (
            "anthropic",
            "529",
            "OverloadedError",
            "APIConnectionError",
            "APIError",
        ),
    ] {
        let mut expected = first.to_vec();
        expected[1] = overload_raised;
        expected.extend([cut, stream_error, "InternalServerError"]);
        assert_eq!(probe(api, overloaded), expected, "{api}");
    }
}

/// The openai Node.js SDK's default retries re-send a completion whose connection dropped
/// after the provider committed it, as the Python SDK's do: billed twice, and the run
/// fails on `duplicates` (exit 1), its page and JUnit naming the figure. The drivers
/// report every call ok: only the provider's journal shows the double billing.
#[test]
fn the_openai_node_sdks_default_retries_double_bill_and_the_run_says_so() {
    if !node_has("openai") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let driver = format!("{NODE_CLIENTS}/openai_driver.mjs");
    let out = run_client(
        "examples/clients/openai-double-billing.toml",
        dir.path(),
        &["node", &driver],
    );
    let log = std::fs::read_to_string(dir.path().join("client.log")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(1), "{}\n{log}", text(&out.stdout));
    assert!(log.lines().any(|line| line == r#"{"ok":20}"#), "{log}");
    let s = summary(dir.path());
    let duplicates = s["duplicates"].as_u64().unwrap_or(0);
    assert!(duplicates > 0, "{s}");
    assert_eq!(s["duplicate_completions"], duplicates, "{s}");
    assert!(s["duplicate_tokens"].as_u64().unwrap_or(0) > 0, "{s}");
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(
        junit.contains("duplicates") && junit.contains("<failure"),
        "{junit}"
    );
}
