//! The seeds' figures on real runs: the summary's new breakdowns add up to the totals they
//! break down, and `metrics.prom` carries seed 003's metric names and labels (issue 17).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use stampede_reports::prometheus::{parse, render};
use stampede_reports::{GroupOutcomes, Summary};
use stampede_sim::run::{run_virtual, RunOptions};

/// Seed 003, section "Observabilidad: las métricas que realmente ayudan" ("Registra al
/// menos:"), copied because the seed documents are not shipped: each name with its labels.
const SEED_003_METRICS: [(&str, &[&str]); 9] = [
    ("llm_requests_total", &["provider", "model", "status"]),
    ("llm_tokens_reserved_total", &["provider", "model"]),
    ("llm_tokens_used_total", &["provider", "model"]),
    ("llm_retries_total", &["provider", "model", "error_type"]),
    ("llm_queue_depth", &["priority", "task_type"]),
    ("llm_queue_wait_seconds", &["priority", "task_type"]),
    (
        "llm_rate_limit_hits_total",
        &["provider", "model", "limit_type"],
    ),
    (
        "llm_fallbacks_total",
        &["from_provider", "to_provider", "reason"],
    ),
    ("llm_duplicate_suppressed_total", &["task_type"]),
];

fn summary_of(name: &str) -> Summary {
    let scenario = common::shipped(name, None);
    run_virtual(&scenario, &RunOptions::default())
        .expect("run plays")
        .report
        .summary
}

/// The shipped scenarios but the 38,000-request backlog (the golden test plays that one).
fn scenarios() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(common::repo().join("scenarios"))
        .expect("scenarios/")
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "toml").then(|| p.file_stem()?.to_str().map(String::from))?
        })
        .filter(|n| n != "backlog-38k")
        .collect();
    names.sort();
    names
}

fn sum(groups: &BTreeMap<String, GroupOutcomes>, f: impl Fn(&GroupOutcomes) -> u64) -> u64 {
    groups.values().map(f).sum()
}

#[test]
fn the_new_breakdowns_add_up_to_their_totals() {
    let mut priorities = BTreeSet::new();
    for name in scenarios() {
        let s = summary_of(&name);
        let p = &s.by_priority;
        assert!(!p.is_empty(), "{name}: no by_priority");
        priorities.extend(p.keys().cloned());
        assert_eq!(
            sum(p, |g| g.logical_requests),
            s.logical_requests,
            "{name}: by_priority covers every logical request"
        );
        assert_eq!(sum(p, |g| g.completed), s.completed, "{name}: completed");
        assert_eq!(sum(p, |g| g.failed), s.failed, "{name}: failed");
        assert_eq!(sum(p, |g| g.escalations), s.escalations, "{name}");
        assert_eq!(sum(p, |g| g.unfinished), s.unfinished, "{name}");
        assert_eq!(
            sum(p, |g| g.attempts),
            s.outbound_attempts,
            "{name}: every attempt under its priority"
        );
        for groups in [&s.by_priority, &s.by_class, &s.by_tenant] {
            assert_eq!(sum(groups, |g| g.tokens_used), s.tokens_used, "{name}");
            assert_eq!(
                sum(groups, |g| g.tokens_reserved),
                s.tokens_reserved,
                "{name}"
            );
            assert_eq!(
                sum(groups, |g| g.duplicates_suppressed),
                s.duplicates_suppressed,
                "{name}"
            );
            let goodput: f64 = groups.values().map(|g| g.goodput_per_min).sum();
            assert!(
                (goodput - s.goodput_per_min).abs() < 0.01 * groups.len() as f64,
                "{name}: goodput {goodput} against {}",
                s.goodput_per_min
            );
        }
        assert_eq!(
            s.failures_by_reason.values().sum::<u64>(),
            s.failed + s.escalations,
            "{name}: failures_by_reason {:?}",
            s.failures_by_reason
        );
        assert_eq!(
            s.retries_by_group.values().sum::<u64>(),
            s.retries,
            "{name}: retries_by_group {:?}",
            s.retries_by_group
        );
        assert_eq!(
            s.rejected_by_reason.values().sum::<u64>(),
            s.rejected,
            "{name}"
        );
        let b = s.backoff_ms;
        assert!(b.p50 <= b.p95 && b.p95 <= b.p99 && b.p99 <= b.max, "{name}");
        assert!(b.total >= b.max, "{name}: the total holds the longest");
        let arrived: u64 = s.queues.values().map(|q| q.arrived).sum();
        assert_eq!(arrived, s.logical_requests, "{name}: every arrival queued");
        for (key, q) in &s.queues {
            assert!(q.sent + q.depth_end <= q.arrived, "{name} {key}");
            assert!(q.depth_end <= q.depth_peak, "{name} {key}");
            assert!(
                p.contains_key(key.split('/').next().unwrap()),
                "{name} {key}"
            );
        }
    }
    assert!(
        priorities.len() > 1,
        "a shipped scenario plays more than one priority: {priorities:?}"
    );
}

#[test]
fn metrics_prom_of_a_real_run_has_seed_003s_names_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::shipped("quickstart", None);
    let opts = RunOptions {
        out_dir: Some(dir.path().to_path_buf()),
        ..RunOptions::default()
    };
    let outcome = run_virtual(&scenario, &opts).expect("run plays");
    let text = std::fs::read_to_string(dir.path().join("metrics.prom")).expect("metrics.prom");
    assert_eq!(text, render(&outcome.report.summary), "written as rendered");
    let samples = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    for (name, labels) in SEED_003_METRICS {
        assert!(
            text.contains(&format!("# TYPE {name} ")),
            "{name} is declared"
        );
        for s in samples.iter().filter(|s| s.family == name) {
            let got: Vec<&str> = s
                .labels
                .iter()
                .map(|(l, _)| l.as_str())
                .filter(|l| *l != "quantile")
                .collect();
            assert_eq!(got, labels, "{name}: the seed's labels, in its order");
        }
    }
    let s = &outcome.report.summary;
    let requests: f64 = samples
        .iter()
        .filter(|x| x.name == "llm_requests_total")
        .map(|x| x.value)
        .sum();
    assert_eq!(requests, s.outbound_attempts as f64);
    let retries: f64 = samples
        .iter()
        .filter(|x| x.name == "llm_retries_total")
        .map(|x| x.value)
        .sum();
    assert_eq!(retries, s.retries as f64);
    let waits: f64 = samples
        .iter()
        .filter(|x| x.name == "llm_queue_wait_seconds_count")
        .map(|x| x.value)
        .sum();
    assert!(waits > 0.0, "queue waits measured:\n{text}");
    // Same run, same bytes.
    let again = run_virtual(&scenario, &RunOptions::default()).expect("run plays");
    assert_eq!(render(&again.report.summary), text);
}

/// Seed 001's "backpressure with a reason": every refused offer is counted with the wait the
/// caller was given, here the policy's `admission.reject_retry_after` (1 s by default); an
/// action refused several times counts each time, so there are at least as many refusals as
/// actions held back.
#[test]
fn each_refusal_is_counted_with_the_wait_the_caller_was_given() {
    let s = common::shipped_summary("backlog-38k", None);
    let given = s.refusal_wait_ms;
    assert!(s.rejected > 0);
    assert!(
        given.count >= s.rejected,
        "{given:?} for {} held back",
        s.rejected
    );
    assert_eq!((given.p50, given.max), (1_000, 1_000), "{given:?}");
    let quiet = common::shipped_summary("quickstart", None);
    assert!(
        quiet.refusal_wait_ms.is_empty(),
        "nothing refused, nothing listed"
    );
}

/// A call an SDK preset's client-side throttle holds back (or refuses) has not left: its
/// queue wait runs to its first send, as `by_class` measures it, and one refused in the
/// client is never counted sent. The summary's `queue_wait_ms` and `queues` read a wait
/// ending when a worker took the call up: 8,095 ms against 7,367 at p50, and 600 sent where
/// the provider saw 557 requests.
#[test]
fn a_throttled_sdks_queue_wait_runs_to_its_first_send() {
    let scenario = common::shipped("quickstart", Some("client.preset=sre-throttling"));
    let s = run_virtual(&scenario, &RunOptions::default())
        .expect("run plays")
        .report
        .summary;
    let queue = &s.queues["normal/llm"];
    assert_eq!(queue.sent, s.provider_logical_requests, "{:?}", s.queues);
    assert!(queue.sent < s.logical_requests, "the throttle refused some");
    assert_eq!(s.queue_wait_ms, s.by_class["llm"].queue_wait_ms);
    assert_eq!(s.queue_wait_ms, queue.wait_ms);
}
