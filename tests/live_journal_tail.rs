//! A live run reads the provider's journal as it grows, so a provider whose journal ring
//! holds far fewer entries than the run makes attempts still measures every attempt. A run
//! that read the journal only at its end lost what the ring had dropped by then (and ended
//! in an error after playing everything).

use std::net::SocketAddr;

use stampede_provider::server::{spawn_with, ServerOptions};
use stampede_sim::live_driver::{run_live, LiveOptions};
use stampede_sim::run::RunOptions;
use stampede_sim::scenario;

/// 300 requests at 1 a second of scenario time: 300 s, 5 s of real time at scale 60.
const SCENARIO: &str = r#"
name = "journal-tail"
seed = 3
duration = "6m"

[provider]
latency = { fixed = "50ms" }

[[provider.scopes]]
id = "account:acme"

[[provider.credentials]]
key = "sk-acme-journal-tail"
scope = "account:acme"

[[workload]]
tenant = "acme"
credential = "sk-acme-journal-tail"
class = "llm"
count = 300
arrival = { rate = "1/s" }
prompt_tokens = 100
max_output_tokens = 50

[client]
preset = "stampede"
workers = 8
"#;

/// Entries the provider's ring keeps: half the run's attempts, and ten times what arrives
/// between two reads of the journal (15 in 250 ms of real time), so a reader held back two
/// seconds by a busy machine still reads every entry.
const RING: usize = 150;

#[test]
fn a_run_longer_than_the_providers_journal_ring_is_measured_whole() {
    let scenario = scenario::parse(SCENARIO, "journal-tail.toml", &[]).expect("scenario parses");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let options = ServerOptions {
        journal_ring: RING,
        ..ServerOptions::default()
    };
    let (addr, server) = runtime
        .block_on(spawn_with(
            scenario.provider.clone(),
            options,
            SocketAddr::from(([127, 0, 0, 1], 0)),
        ))
        .expect("provider starts");
    let opts = LiveOptions {
        provider: Some(format!("http://{addr}")),
        time_scale: Some(60.0),
        ..LiveOptions::default()
    };
    let (outcome, run) = run_live(&scenario, &opts, &RunOptions::default()).expect("live run");
    assert!(
        run.journal.len() > 2 * RING - 10,
        "the run made {} attempts: too few to outgrow a ring of {RING}",
        run.journal.len()
    );
    // Every attempt the core sent is measured, in seq order from the first.
    assert_eq!(run.journal.len() as u64, run.sends);
    let seqs: Vec<u64> = run.journal.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=run.sends).collect::<Vec<_>>());
    assert_eq!(outcome.report.summary.outbound_attempts, run.sends);
    assert_eq!(outcome.report.summary.logical_requests, 300);
    runtime.block_on(server.shutdown()).unwrap();
}
