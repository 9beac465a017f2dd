//! No retries underneath the core: the provider drops connections (before and after
//! commit) and lets some requests hang, and its journal shows exactly as many arrivals as
//! the core issued `Send` commands, both with the in-process provider and with one reached
//! by URL (`--provider`).

use std::path::Path;

use stampede_sim::live_driver::{run_live, LiveOptions, LiveRun};
use stampede_sim::run::RunOptions;
use stampede_sim::scenario::{self, Scenario};

fn drops() -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live/drops.toml");
    scenario::load(&path, None, &[]).expect("test scenario loads")
}

fn check(run: &LiveRun) {
    let dropped = run
        .journal
        .iter()
        .filter(|e| e.outcome == "dropped")
        .count();
    let hung = run.journal.iter().filter(|e| e.outcome == "hang").count();
    assert!(
        dropped >= 5,
        "only {dropped} dropped connections: the test proves little"
    );
    assert!(hung >= 1, "no hang: the timeout path went untested");
    assert_eq!(
        run.journal.len() as u64,
        run.sends,
        "the provider saw {} arrivals for {} sends: something retried underneath the core",
        run.journal.len(),
        run.sends
    );
    // Each attempt of an action arrives once: (action, attempt_no) pairs are unique.
    let mut pairs: Vec<_> = run
        .journal
        .iter()
        .map(|e| (e.action, e.attempt_no))
        .collect();
    let before = pairs.len();
    pairs.sort();
    pairs.dedup();
    assert_eq!(pairs.len(), before, "an attempt reached the provider twice");
}

#[test]
fn dropped_connections_are_never_retried_by_the_http_client() {
    let opts = LiveOptions {
        time_scale: Some(20.0),
        ..LiveOptions::default()
    };
    let (outcome, run) = run_live(&drops(), &opts, &RunOptions::default()).expect("live run");
    check(&run);
    assert_eq!(outcome.report.summary.outbound_attempts, run.sends);
}

#[test]
fn a_provider_reached_by_url_is_given_the_scenario_and_measured_the_same_way() {
    // A provider started apart from the run, on its own runtime, as `stampede serve` would be.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (addr, server) = runtime
        .block_on(stampede_provider::spawn_ephemeral(
            stampede_provider::ProviderConfig::default(),
            5,
        ))
        .expect("provider starts");
    let opts = LiveOptions {
        provider: Some(format!("http://{addr}")),
        time_scale: Some(20.0),
        ..LiveOptions::default()
    };
    let (outcome, run) = run_live(&drops(), &opts, &RunOptions::default()).expect("live run");
    check(&run);
    assert_eq!(outcome.report.summary.logical_requests, 60);
    runtime.block_on(server.shutdown()).unwrap();
}
