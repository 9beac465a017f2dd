//! The scenarios that play one seed rule each that no other shipped scenario plays (daily
//! quota, stream cut, latency spike, the TPM wall, interactive against batch, nested limits):
//! each passes under the stampede preset and fails under the naive one, where the rule
//! matters.

use crate::common;

use stampede_reports::Summary;

fn summary(name: &str, set: Option<&str>) -> Summary {
    common::shipped_summary(name, set)
}

fn failed(s: &Summary) -> Vec<String> {
    common::failed_expectations(s)
}

/// A count of a map-valued figure (`rate_limit_hits`, `failures_by_reason`, ...); absent is 0.
fn count(map: &std::collections::BTreeMap<String, u64>, key: &str) -> u64 {
    map.get(key).copied().unwrap_or(0)
}

#[test]
fn a_spent_daily_quota_is_waited_out_not_hammered() {
    let s = summary("daily-quota", None);
    assert_eq!(failed(&s), Vec::<String>::new());
    // The day's 400 requests, then one `insufficient_quota` and nothing more sent.
    assert_eq!(s.completed, 400);
    assert!(
        count(&s.rate_limit_hits, "rpd") <= 5,
        "{:?}",
        s.rate_limit_hits
    );
    assert_eq!(count(&s.retries_by_group, "quota_exhausted"), 0);
    // The one refused request is escalated: a spent quota is for a person to settle.
    assert_eq!(s.escalations, 1);
    assert_eq!(count(&s.failures_by_reason, "quota_exhausted"), 1);
    assert!(s.outbound_attempts <= 410, "{}", s.outbound_attempts);
    // The rest wait for the reset: still open at the cap, not failed.
    assert!(s.unfinished > 150, "{} unfinished", s.unfinished);

    let naive = summary("daily-quota", Some("client.preset=naive"));
    assert!(
        count(&naive.rate_limit_hits, "rpd") > 1_000,
        "{:?}",
        naive.rate_limit_hits
    );
    assert!(failed(&naive).contains(&"rate_limit_hits.rpd".to_string()));
    assert!(failed(&naive).contains(&"outbound_attempts".to_string()));
}

#[test]
fn a_stream_cut_is_interrupted_after_tokens_and_re_sent_with_its_key_before() {
    let s = summary("stream-cut", None);
    assert_eq!(failed(&s), Vec::<String>::new());
    let interrupted = count(&s.failures_by_reason, "stream_interrupted");
    assert!(interrupted >= 10, "{:?}", s.failures_by_reason);
    assert_eq!(s.duplicates, 0);
    assert_eq!(s.duplicate_billed_usd, 0.0);
    // The cuts before the first token were re-sent and replayed, not run again.
    assert!(s.duplicates_suppressed >= 10, "{}", s.duplicates_suppressed);

    let naive = summary("stream-cut", Some("client.preset=naive"));
    // Naive re-sends every cut stream, after tokens too (`resend_cut_streams`), and without
    // a key: each re-send is a second completion, billed again.
    assert_eq!(count(&naive.failures_by_reason, "stream_interrupted"), 0);
    assert!(naive.duplicates >= 2 * 10, "{}", naive.duplicates);
    assert!(naive.duplicate_billed_usd > 0.0);
    assert!(failed(&naive).contains(&"duplicate_billed_usd".to_string()));
    assert!(failed(&naive).contains(&"duplicates".to_string()));
}

#[test]
fn a_latency_spike_past_the_timeout_is_re_sent_with_the_same_key_and_billed_once() {
    let s = summary("latency-spike", None);
    assert_eq!(failed(&s), Vec::<String>::new());
    // The timed-out calls are re-sent, and the provider replays them.
    assert!(count(&s.retries_by_group, "after_success") >= 15);
    assert!(s.duplicates_suppressed >= 15, "{}", s.duplicates_suppressed);
    assert_eq!(s.duplicates, 0);
    assert_eq!(s.duplicate_billed_usd, 0.0);

    let naive = summary("latency-spike", Some("client.preset=naive"));
    assert!(naive.duplicates >= 15, "{}", naive.duplicates);
    assert!(naive.duplicate_billed_usd > 0.0);
    assert!(failed(&naive).contains(&"duplicates".to_string()));
    assert!(failed(&naive).contains(&"duplicate_billed_usd".to_string()));
}

#[test]
fn the_tpm_wall_is_paced_to_not_pushed_through() {
    let s = summary("tpm-wall", None);
    assert_eq!(failed(&s), Vec::<String>::new());
    // 120,000 TPM / 5,000 tokens a call = 24 calls a minute.
    assert_eq!(s.completed, 480);
    assert!(
        s.goodput_per_min > 22.0 && s.goodput_per_min <= 25.0,
        "{}",
        s.goodput_per_min
    );
    assert!(
        count(&s.rate_limit_hits, "tpm") <= 20,
        "{:?}",
        s.rate_limit_hits
    );

    let naive = summary("tpm-wall", Some("client.preset=naive"));
    assert!(
        count(&naive.rate_limit_hits, "tpm") > 1_000,
        "{:?}",
        naive.rate_limit_hits
    );
    assert!(failed(&naive).contains(&"rate_limit_hits.tpm".to_string()));
}

#[test]
fn interactive_work_keeps_its_latency_while_the_batch_waits_and_completes() {
    let s = summary("interactive-batch", None);
    assert_eq!(failed(&s), Vec::<String>::new());
    let chat = &s.by_tenant["chat"];
    let batch = &s.by_tenant["batch"];
    assert!(chat.latency_ms.p99 <= 12_000, "{:?}", chat.latency_ms);
    assert!(chat.failed <= 5, "{} chat calls failed", chat.failed);
    assert_eq!(batch.completed, 3_000);

    let naive = summary("interactive-batch", Some("client.preset=naive"));
    assert!(naive.by_tenant["chat"].failed > 5);
    assert!(naive.by_tenant["batch"].completed < 1_000);
    assert!(failed(&naive).contains(&"by_tenant.chat.latency_ms.p99".to_string()));
    assert!(failed(&naive).contains(&"by_tenant.chat.failed".to_string()));
    assert!(failed(&naive).contains(&"by_tenant.batch.completed".to_string()));
}

#[test]
fn two_keys_inside_one_account_are_paced_to_the_account() {
    let s = summary("nested-limits", None);
    assert_eq!(failed(&s), Vec::<String>::new());
    assert_eq!(s.completed, 3_000);
    // The account's 400 a minute binds, not the two keys' 600.
    assert!(
        s.goodput_per_min > 380.0 && s.goodput_per_min < 420.0,
        "{}",
        s.goodput_per_min
    );
    assert!(
        count(&s.rate_limit_hits, "rpm") <= 40,
        "{:?}",
        s.rate_limit_hits
    );

    let naive = summary("nested-limits", Some("client.preset=naive"));
    assert!(
        count(&naive.rate_limit_hits, "rpm") > 1_000,
        "{:?}",
        naive.rate_limit_hits
    );
    assert!(failed(&naive).contains(&"rate_limit_hits.rpm".to_string()));
}

#[test]
fn agent_runs_go_on_after_a_failed_call_and_stop_at_their_budget() {
    let s = summary("agent-runs", None);
    assert_eq!(failed(&s), Vec::<String>::new());
    let runs = &s.agent_runs;
    assert_eq!(runs["runs"], 150);
    assert_eq!(
        runs["completed"] + runs["over_budget"] + runs["cancelled"] + runs["unfinished"],
        runs["runs"],
        "every run ends one way: {runs:?}"
    );
    // The hung tool's runs: two 180 s tool timeouts do not fit in a 300 s budget.
    assert_eq!(runs["over_budget"], 30, "{runs:?}");
    assert!(runs["tool_timeouts"] >= 60, "{runs:?}");
    // A call whose retries ran out went back to its run, which made its next call.
    assert!(runs["failed_calls_returned"] >= 1, "{runs:?}");
    assert_eq!(runs["calls_per_run_max"], 5);
    // Each call of a run is a logical request of its own.
    assert_eq!(s.logical_requests, runs["calls"]);

    let naive = summary("agent-runs", Some("client.preset=naive"));
    assert!(failed(&naive).contains(&"retry_after_violations".to_string()));
    assert!(failed(&naive).contains(&"attempts_per_logical".to_string()));
}

#[test]
fn the_breaker_stops_an_improvising_agent_and_a_revoked_key() {
    let s = summary("agent-loops", None);
    assert_eq!(failed(&s), Vec::<String>::new());
    // Reordered fields, a changed filter, a nearby record: the task's path opens after
    // five identical 422s, whatever the agent changed, and the agent stops.
    assert_eq!(s.status_counts["422"], 5 * 20);
    assert_eq!(s.improvised["stopped"], 20);
    assert!(s.improvised["reorder"] >= 20 && s.improvised["filter"] >= 20);
    // The revoked key: a handful of 401s per open period, the rest escalated unsent.
    assert!(s.status_counts["401"] <= 60, "{:?}", s.status_counts);
    assert!(count(&s.failures_by_reason, "circuit_open") >= 250);

    let naive = summary("agent-loops", Some("client.preset=naive"));
    assert!(
        naive.status_counts["422"] >= 2_000,
        "{:?}",
        naive.status_counts
    );
    assert!(
        naive.status_counts["401"] >= 2_000,
        "{:?}",
        naive.status_counts
    );
    for name in ["status_counts.401", "improvised.stopped"] {
        assert!(failed(&naive).contains(&name.to_string()), "{name}");
    }
}

#[test]
fn a_request_larger_than_the_whole_limit_is_escalated_not_retried() {
    let s = summary("account-limits", None);
    assert_eq!(failed(&s), Vec::<String>::new());
    assert_eq!(count(&s.failures_by_reason, "limit_below_request"), 20);
    assert_eq!(s.escalations, 20);
    assert_eq!(s.by_tenant["support"].completed, 120);

    let naive = summary("account-limits", Some("client.preset=naive"));
    assert!(count(&naive.rate_limit_hits, "tpm") >= 100);
    assert!(failed(&naive).contains(&"failures_by_reason.limit_below_request".to_string()));
}

#[test]
fn work_already_late_is_refused_at_admission_and_never_sent() {
    let s = summary("stale-work", None);
    assert_eq!(failed(&s), Vec::<String>::new());
    assert_eq!(count(&s.failures_by_reason, "deadline_passed"), 200);
    assert_eq!(s.by_tenant["stale"].attempts, 0);
    assert_eq!(s.by_tenant["stale"].failed, 200);
    assert_eq!(s.by_tenant["fresh"].completed, 300);
    // Refused for good: never held back and offered again.
    assert_eq!(count(&s.rejected_by_reason, "deadline_passed"), 0);
}

/// Follow-up calls are created from outcomes: the same scenario and seed still give the same
/// figures, run after run (`wall_ms` apart).
#[test]
fn runs_that_follow_outcomes_are_deterministic() {
    for name in ["agent-runs", "agent-loops"] {
        let json = |s: Summary| {
            let mut v = serde_json::to_value(s).unwrap();
            v.as_object_mut().unwrap().remove("wall_ms");
            v.to_string()
        };
        let (a, b) = (json(summary(name, None)), json(summary(name, None)));
        assert_eq!(a, b, "{name} played twice differs");
    }
}
