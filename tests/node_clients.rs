//! The official Node.js SDKs (openai, @anthropic-ai/sdk), unmodified, as the client under
//! test: `stampede run SCENARIO --client -- node examples/clients/node/DRIVER.mjs`. They
//! need `npm ci --prefix examples/clients/node` (the versions pinned in its
//! package-lock.json); without them these tests say so and pass, unless
//! `STAMPEDE_REQUIRE_SDKS=1` (as `.ci/run` sets it), where a missing SDK fails them.

use crate::clients::{run_client, summary};
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
    if !found {
        assert!(
            std::env::var_os("STAMPEDE_REQUIRE_SDKS").is_none(),
            "node cannot import {package}: npm ci --prefix {NODE_CLIENTS}"
        );
        eprintln!("skipped: node cannot import {package} (npm ci --prefix {NODE_CLIENTS})");
    }
    found
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
