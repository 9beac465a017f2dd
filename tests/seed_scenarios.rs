//! The issue-17 scenarios that play a seed rule no other scenario plays: each passes under
//! the stampede preset and fails under the naive one, where the rule matters.

use crate::common;

use stampede_reports::Summary;

fn summary(name: &str, set: Option<&str>) -> Summary {
    common::shipped_summary(name, set)
}

fn failed(s: &Summary) -> Vec<String> {
    common::failed_expectations(s)
}

#[test]
fn concurrency_is_not_rate_when_latency_rises() {
    let s = summary("concurrency-not-rate", None);
    assert_eq!(failed(&s), Vec::<String>::new());
    // Same 60 RPM, same 20 slots: at 20 s latency the rate binds, at 90 s the slots do.
    let before = s.by_tenant["before-slowdown"].completed;
    let during = s.by_tenant["during-slowdown"].completed;
    assert!(
        before > 4 * during,
        "{before} before, {during} during the slowdown"
    );
    assert_eq!(s.status_counts.get("429"), None);

    let naive = summary("concurrency-not-rate", Some("client.preset=naive"));
    assert!(
        naive
            .rate_limit_hits
            .get("concurrency")
            .copied()
            .unwrap_or(0)
            > 1_000
    );
    assert!(failed(&naive).contains(&"rate_limit_hits.concurrency".to_string()));
}
