//! The provider decides which attempts are one logical request: a retry layer hidden under
//! the client, and a client that sends no attribution at all, are counted from the journal
//! alone, in a virtual run and in a live one over HTTP.

use std::path::Path;

use stampede_reports::Summary;
use stampede_sim::live_driver::{run_live, LiveOptions};
use stampede_sim::run::{run_virtual, RunOptions};
use stampede_sim::scenario::{self, Override, Scenario};

fn load(name: &str, sets: &[&str]) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/identity")
        .join(name);
    let sets: Vec<Override> = sets
        .iter()
        .map(|s| scenario::parse_override(s).expect("override parses"))
        .collect();
    scenario::load(&path, None, &sets).expect("test scenario loads")
}

fn virtual_summary(s: &Scenario) -> Summary {
    run_virtual(s, &RunOptions::default())
        .expect("virtual run")
        .report
        .summary
}

fn live_summary(s: &Scenario) -> Summary {
    let opts = LiveOptions {
        time_scale: Some(10.0),
        ..LiveOptions::default()
    };
    run_live(s, &opts, &RunOptions::default())
        .expect("live run")
        .0
        .report
        .summary
}

/// Every one of the `n` requests was billed twice, once for an answer that never arrived;
/// `hidden`: the second attempt came from a layer under the client, with the same claim.
fn assert_billed_twice(s: &Summary, n: u64, hidden: bool, mode: &str) {
    assert_eq!(s.completed, n, "{mode}: {s:?}");
    assert_eq!(s.outbound_attempts, 2 * n, "{mode}");
    assert_eq!(s.provider_logical_requests, n, "{mode}");
    assert_eq!(s.retries, n, "{mode}: every second attempt is a retry");
    assert_eq!(s.duplicates, n, "{mode}: every request billed twice");
    assert!(
        s.duplicate_tokens >= n * 101,
        "{mode}: {}",
        s.duplicate_tokens
    );
    assert!(
        s.undelivered_tokens >= n * 101,
        "{mode}: {}",
        s.undelivered_tokens
    );
    let mismatches = if hidden { n } else { 0 };
    assert_eq!(
        s.claim_mismatches, mismatches,
        "{mode}: a hidden re-send repeats the claim `attempt 1`"
    );
}

#[test]
fn a_hidden_retry_layer_shows_as_retries_and_double_billing_in_a_virtual_run() {
    let hidden = virtual_summary(&load("hidden-layer.toml", &[]));
    assert_billed_twice(&hidden, 20, true, "virtual, hidden layer");
    // The same drops with the client's own retries instead: each retry is billed again
    // too, and the claims now agree with the provider.
    let own = virtual_summary(&load("hidden-layer.toml", &["client.transport_retries=0"]));
    assert!(own.retries > 0, "{own:?}");
    assert_eq!(
        own.duplicates, own.retries,
        "every retry after a drop after commit bills"
    );
    assert_eq!(own.claim_mismatches, 0);
}

#[test]
fn a_hidden_retry_layer_shows_as_retries_and_double_billing_in_a_live_run() {
    let hidden = live_summary(&load("hidden-layer.toml", &[]));
    assert_billed_twice(&hidden, 20, true, "live, hidden layer");
}

/// Two retries and one duplicate per request, from a client that claims nothing.
fn assert_silent_blind(s: &Summary, mode: &str) {
    let n = 15;
    assert_eq!(s.completed, n, "{mode}: {s:?}");
    assert_eq!(s.outbound_attempts, 3 * n, "{mode}");
    assert_eq!(s.provider_logical_requests, n, "{mode}");
    assert_eq!(s.retries, 2 * n, "{mode}");
    assert_eq!(s.duplicates, n, "{mode}");
    assert!(s.duplicate_tokens > 0, "{mode}");
    assert_eq!(s.claim_mismatches, 0, "{mode}: nothing was claimed");
    assert_eq!(s.status_counts.get("503"), Some(&n), "{mode}");
}

#[test]
fn a_client_that_claims_nothing_is_counted_from_the_journal_alone() {
    let silent = load("silent-blind.toml", &[]);
    let s = virtual_summary(&silent);
    assert_silent_blind(&s, "virtual");
    // The claims change no figure.
    let claimed = virtual_summary(&load("silent-blind.toml", &["client.claims=true"]));
    let strip = |mut s: Summary| {
        s.wall_ms = 0;
        s
    };
    assert_eq!(strip(s.clone()), strip(claimed), "claims changed a figure");
    assert_silent_blind(&live_summary(&silent), "live");
}
