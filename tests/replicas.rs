//! Replicas of the client (`client.replicas`): independent instances that each see only
//! their own 429s, and a fleet that shares one scope record (`client.share_scope =
//! "fleet"`) after a propagation delay. Figures from the provider's journal.

use std::path::Path;

use stampede_reports::Summary;
use stampede_sim::run::{run_virtual, RunOptions};
use stampede_sim::scenario::{self, parse_override, Scenario, ScenarioError};

fn amplification(sets: &[&str]) -> Result<Scenario, ScenarioError> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/amplification.toml");
    let sets: Vec<_> = sets.iter().map(|s| parse_override(s).unwrap()).collect();
    scenario::load(&path, None, &sets)
}

fn run(sets: &[&str]) -> Summary {
    let s = amplification(sets).unwrap();
    run_virtual(&s, &RunOptions::default())
        .unwrap()
        .report
        .summary
}

const STAMPEDE: [&str; 2] = ["client.preset=stampede", "client.layers=[]"];

fn with(extra: &[&'static str]) -> Vec<&'static str> {
    STAMPEDE
        .iter()
        .copied()
        .chain(extra.iter().copied())
        .collect()
}

#[test]
fn replicas_that_share_nothing_break_retry_after_on_the_scope_while_each_honours_its_own() {
    let fleet = run(&with(&["client.replicas=4", "client.workers=8"]));
    assert_eq!(
        fleet.retry_after_violations, 0,
        "each replica honours the Retry-After it was told"
    );
    assert!(
        fleet.scope_wait_violations > 0,
        "no replica hears another's 429: {fleet:?}"
    );
    // The same 32 workers in one instance see every 429 on the scope.
    let one = run(&with(&["client.replicas=1", "client.workers=32"]));
    assert_eq!(one.retry_after_violations, 0);
    assert_eq!(one.scope_wait_violations, 0);
    assert!(fleet.outbound_attempts > one.outbound_attempts);
}

#[test]
fn a_shared_fleet_record_keeps_replicas_off_the_scope_up_to_its_propagation_delay() {
    let alone = run(&with(&["client.replicas=4"]));
    let shared = run(&with(&["client.replicas=4", "client.share_scope=fleet"]));
    let instant = run(&with(&[
        "client.replicas=4",
        "client.share_scope=fleet",
        "client.share_delay=0ms",
    ]));
    assert_eq!(
        instant.scope_wait_violations, 0,
        "news that arrives at once reaches every replica before its next send"
    );
    assert!(
        shared.scope_wait_violations < alone.scope_wait_violations,
        "100 ms late still beats never: {} vs {}",
        shared.scope_wait_violations,
        alone.scope_wait_violations
    );
    // Shared buckets keep the fleet to the scope's rate: fewer 429s than four full budgets.
    let refused = |s: &Summary| s.status_counts.get("429").copied().unwrap_or(0);
    assert!(refused(&shared) < refused(&alone), "{shared:?}");
    assert_eq!(shared.completed, 1_500);
}

#[test]
fn a_replicated_run_is_the_same_on_every_run() {
    let sets = with(&["client.replicas=4", "client.share_scope=fleet"]);
    let a = serde_json::to_string(&run(&sets)).unwrap();
    let b = serde_json::to_string(&run(&sets)).unwrap();
    let strip = |s: &str| {
        let mut v: serde_json::Value = serde_json::from_str(s).unwrap();
        v.as_object_mut().unwrap().remove("wall_ms");
        v
    };
    assert_eq!(strip(&a), strip(&b));
}

#[test]
fn replica_settings_that_cannot_work_are_refused_naming_the_key() {
    for (sets, key, says) in [
        (
            vec!["client.replicas=0"],
            "client.replicas",
            "give 1 to 256",
        ),
        (
            vec!["client.replicas=257"],
            "client.replicas",
            "give 1 to 256",
        ),
        (
            vec!["client.share_scope=fleet"],
            "client.share_scope",
            "SDK keeps no scope record",
        ),
        (
            vec!["client.share_scope=everyone"],
            "share_scope",
            "unknown value `everyone`, expected `replica` or `fleet`",
        ),
    ] {
        let err = amplification(&sets).unwrap_err().to_string();
        assert!(err.contains(key) && err.contains(says), "{sets:?}: {err}");
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/restarts.toml");
    let err = scenario::load(&path, None, &[parse_override("client.replicas=2").unwrap()])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("client.replicas") && err.contains("crashes"),
        "{err}"
    );
}

fn layers(sets: &[&str]) -> Summary {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/layers.toml");
    let sets: Vec<_> = sets.iter().map(|s| parse_override(s).unwrap()).collect();
    let s = scenario::load(&path, None, &sets).unwrap();
    run_virtual(&s, &RunOptions::default())
        .unwrap()
        .report
        .summary
}

#[test]
fn each_sdk_replica_spends_its_own_retry_budget() {
    // 200 calls against a scope that refuses everything, under the AWS SDKs' retry quota
    // (500 tokens, 5 a retry): one instance stops after 100 retries, four have four quotas.
    let sets = |replicas: &'static str| {
        vec![
            "client.preset=aws-standard",
            "client.layers=[]",
            "workload.0.count=200",
            "expect={}",
            replicas,
        ]
    };
    let one = layers(&sets("client.replicas=1"));
    assert_eq!(
        one.outbound_attempts, 300,
        "200 first attempts and 100 retries"
    );
    let four = layers(&sets("client.replicas=4"));
    assert!(
        four.outbound_attempts > 500,
        "four quotas let most calls retry twice: {}",
        four.outbound_attempts
    );
}

#[test]
fn the_stack_on_more_replicas_sends_more_into_the_storm_and_the_provider_counts_it() {
    let attempts: Vec<u64> = ["client.replicas=1", "client.replicas=4"]
        .iter()
        .map(|r| run(&[r]).outbound_attempts)
        .collect();
    assert!(attempts[1] > attempts[0], "{attempts:?}");
    let stack = run(&[]);
    let core = run(&with(&[]));
    assert!(stack.retry_waves >= 3 && core.retry_waves == 0, "{stack:?}");
    assert!(stack.outbound_attempts > core.outbound_attempts);
}
