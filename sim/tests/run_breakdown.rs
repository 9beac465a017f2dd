//! What a run's report breaks down beyond the headline figures: the backlog and the two
//! halves of latency (queue wait, service time) per time bucket, outcomes by class, tenant
//! and route, and errors by status and message. Played from the shipped scenarios.

use std::path::PathBuf;

use stampede_sim::run::{run_virtual, RunOptions};
use stampede_sim::scenario::{self, parse_override};

fn play(file: &str, sets: &[&str]) -> stampede_reports::RunReport {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(file);
    let sets: Vec<_> = sets.iter().map(|s| parse_override(s).unwrap()).collect();
    let scenario = scenario::load(&path, None, &sets).expect("the scenario loads");
    run_virtual(&scenario, &RunOptions::default())
        .expect("the run plays")
        .report
}

/// The median of `values`.
fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

#[test]
fn a_backlog_of_38000_is_seen_draining_beyond_the_clients_queue() {
    let report = play("backlog-38k.toml", &[]);
    let rows = &report.timeseries;
    let peak_backlog = rows.iter().map(|r| r.backlog).max().unwrap();
    let peak_queue = rows.iter().map(|r| r.queue_depth).max().unwrap();
    assert!(
        peak_backlog > 37_000,
        "38,000 arrive at once and only a few are sent in the first second: {peak_backlog}"
    );
    assert!(
        peak_queue < 1_000,
        "the client's own queue is bounded ({peak_queue}); the backlog is what waits behind it"
    );
    assert!(
        rows.windows(2).all(|w| w[1].backlog <= w[0].backlog),
        "everything arrives at 0, so the backlog only drains"
    );
    assert_eq!(rows.last().unwrap().backlog, 0, "every request was sent");
}

#[test]
fn service_time_and_queue_wait_are_measured_apart_per_bucket() {
    let report = play("backlog-38k.toml", &[]);
    let rows = &report.timeseries;
    let answered: Vec<_> = rows.iter().filter(|r| r.service_p50_ms > 0).collect();
    assert!(answered.len() > rows.len() / 2);
    // The provider's latency is a median of 2.8 s: service time stays near it all run...
    let service = median(answered.iter().map(|r| r.service_p50_ms).collect());
    assert!(
        (1_000..=6_000).contains(&service),
        "service p50 {service} ms"
    );
    assert!(answered
        .iter()
        .all(|r| r.service_p99_ms >= r.service_p50_ms));
    assert!(answered.iter().all(|r| r.service_p99_ms < 60_000));
    // ... while the queue wait of what is sent late in the run is most of an hour, and the
    // submit-to-outcome latency of those buckets is all queueing (p50 = p99).
    let late = &rows[rows.len() * 3 / 4..];
    let wait = median(late.iter().map(|r| r.queue_wait_p50_ms).collect());
    assert!(wait > 40 * 60_000, "late queue wait p50 {wait} ms");
    assert!(late
        .iter()
        .filter(|r| r.service_p50_ms > 0)
        .all(|r| r.service_p50_ms * 100 < r.queue_wait_p50_ms));
}

#[test]
fn outcomes_by_class_tenant_and_route_add_up_to_the_run() {
    let report = play("backlog-38k.toml", &["client.preset=naive"]);
    let s = &report.summary;
    for (what, groups) in [
        ("class", &s.by_class),
        ("tenant", &s.by_tenant),
        ("route", &s.by_route),
    ] {
        assert!(!groups.is_empty(), "by_{what} is empty");
        let sum = |f: &dyn Fn(&stampede_reports::GroupOutcomes) -> u64| -> u64 {
            groups.values().map(f).sum()
        };
        assert_eq!(sum(&|g| g.logical_requests), s.logical_requests, "{what}");
        assert_eq!(sum(&|g| g.completed), s.completed, "{what}");
        assert_eq!(sum(&|g| g.failed), s.failed, "{what}");
        assert_eq!(sum(&|g| g.unfinished), s.unfinished, "{what}");
        assert_eq!(sum(&|g| g.attempts), s.outbound_attempts, "{what}");
    }
    let chat = &s.by_route["POST /v1/chat/completions"];
    assert_eq!(chat.completed, s.completed);
    assert_eq!(
        chat.latency_ms, s.latency_ms,
        "one route: the run's own latency"
    );
    assert_eq!(chat.queue_wait_ms.p50, s.queue_wait_ms.p50);
}

#[test]
fn errors_are_listed_by_status_and_message_with_when_they_were_seen() {
    let report = play("quickstart.toml", &["client.preset=naive"]);
    let s = &report.summary;
    let refused = s
        .errors
        .iter()
        .find(|e| e.status == "429" && e.message == "rate_limit_exceeded")
        .expect("the storm's 429s are listed");
    assert_eq!(refused.count, s.status_counts["429"]);
    // The storm is injected from 70 s; the naive client's retries keep meeting the limit.
    assert!(
        refused.first_ms <= 79_000,
        "first seen at {}",
        refused.first_ms
    );
    assert!(refused.first_ms < refused.last_ms && refused.last_ms <= s.virtual_duration_ms);
    let listed: u64 = s.errors.iter().map(|e| e.count).sum();
    let succeeded: u64 = s
        .status_counts
        .iter()
        .filter(|(k, _)| k.starts_with('2'))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(listed, s.outbound_attempts - succeeded);
    assert!(s.errors.windows(2).all(|w| w[0].count >= w[1].count));
}
