//! The shipped five-step safety scenario (scenarios/five-step-safety.toml) played live
//! over loopback HTTP and checked step by step from the provider's journal.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use stampede_core::{AuditKind, Reason, TerminalStatus};
use stampede_provider::model::JournalEntry;
use stampede_sim::live_driver::{run_live, LiveOptions};
use stampede_sim::run::RunOptions;
use stampede_sim::scenario;

#[test]
fn five_step_safety_holds_live() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/five-step-safety.toml");
    let scenario = scenario::load(&path, None, &[]).expect("scenario loads");
    let opts = LiveOptions {
        time_scale: Some(20.0),
        keep_audit: true,
        ..LiveOptions::default()
    };
    let (outcome, run) = run_live(&scenario, &opts, &RunOptions::default()).expect("live run");
    let summary = &outcome.report.summary;
    assert_eq!(
        run.journal.len() as u64,
        run.sends,
        "arrivals vs the core's sends"
    );
    let sent_at: BTreeMap<(u64, u32), u64> = run
        .attempts
        .iter()
        .map(|a| ((a.job, a.attempt_no), a.sent_real_us))
        .collect();
    let key = |e: &JournalEntry| (e.action.unwrap_or(0), e.attempt_no.unwrap_or(0));

    // 1. The read refused with Retry-After 10 s holds the whole scope: nothing the client
    //    sent after hearing it reaches the scope before the 10 s have passed.
    let told = run
        .journal
        .iter()
        .find(|e| e.route.starts_with("/v1/items") && e.status == Some(429))
        .expect("the first read is refused");
    let heard = run
        .attempts
        .iter()
        .find(|a| (a.job, a.attempt_no) == key(told))
        .expect("the client heard the 429")
        .done_real_us;
    let until = told.at_ms + 10_000;
    for e in run
        .journal
        .iter()
        .filter(|e| e.seq > told.seq && e.at_ms < until)
    {
        assert!(
            e.scope != told.scope || sent_at[&key(e)] < heard,
            "{:?} was sent after the 429 was heard and arrived at {} ms, before {until} ms",
            key(e),
            e.at_ms
        );
    }
    // 2. No retry wave.
    assert_eq!(summary.retry_waves, 0);
    // 3. The write dropped after commit is looked up, not created again.
    let dropped = run
        .journal
        .iter()
        .find(|e| e.method == "POST" && e.route == "/v1/records" && e.outcome == "dropped")
        .expect("the first write is dropped");
    let action = dropped.action.unwrap();
    let creates = run
        .journal
        .iter()
        .filter(|e| e.action == Some(action) && e.method == "POST")
        .count();
    assert_eq!(creates, 1, "the dropped write was created again");
    assert!(run.journal.iter().any(|e| e.action == Some(action)
        && e.method == "GET"
        && e.route.starts_with("/v1/records")
        && e.seq > dropped.seq));
    let write = run.terminals.iter().find(|t| t.job == action).unwrap();
    assert_eq!(
        (write.status, &write.reason),
        (TerminalStatus::Completed, &Reason::Reconciled)
    );
    assert_eq!(summary.duplicates, 0);
    // 4. The summarizer's budget runs out into a terminal outcome that carries no
    //    credential and no body.
    let summaries: BTreeSet<u64> = run
        .journal
        .iter()
        .filter(|e| e.tenant.as_deref() == Some("summarizer"))
        .filter_map(|e| e.action)
        .collect();
    assert_eq!(summaries.len(), 2);
    for t in run.terminals.iter().filter(|t| summaries.contains(&t.job)) {
        assert_ne!(t.status, TerminalStatus::Completed, "{t:?}");
        let text = serde_json::to_string(t).unwrap();
        assert!(!text.contains("sk-agent"), "credential in {text}");
        assert!(!text.contains("\"message\""), "response body in {text}");
    }
    assert!(run.audit.iter().any(|a| a.kind != AuditKind::Completed));
    assert!(run
        .audit
        .iter()
        .all(|a| !a.detail.text().contains("sk-agent")));
    // 5. The cancelled task's delayed work never wakes after 8 s.
    let cancelled: BTreeSet<u64> = run
        .terminals
        .iter()
        .filter(|t| t.status == TerminalStatus::Cancelled)
        .map(|t| t.job)
        .collect();
    assert_eq!(cancelled.len(), 3);
    for e in run
        .journal
        .iter()
        .filter(|e| e.action.is_some_and(|a| cancelled.contains(&a)))
    {
        assert!(
            e.at_ms < 8_000,
            "cancelled {:?} arrived at {} ms",
            e.action,
            e.at_ms
        );
    }
    assert_eq!(summary.completed, 4);
}
