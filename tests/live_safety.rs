//! The five-step safety sequence, played live over loopback HTTP against the in-process
//! provider and checked from the provider's journal (what really reached it), not from the
//! client's own counters. Each step is a small scenario under tests/live/.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use stampede_core::{AuditKind, Reason, TerminalStatus};
use stampede_provider::model::JournalEntry;
use stampede_sim::live_driver::{run_live, LiveOptions, LiveRun};
use stampede_sim::run::{RunOptions, RunOutcome};
use stampede_sim::scenario;

/// A modest scale: timers tick in whole real ms, so 20 keeps that under 20 scenario ms.
const SCALE: f64 = 20.0;

fn live(file: &str) -> (RunOutcome, LiveRun) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/live")
        .join(file);
    let scenario = scenario::load(&path, None, &[]).expect("test scenario loads");
    let opts = LiveOptions {
        time_scale: Some(SCALE),
        keep_audit: true,
        ..LiveOptions::default()
    };
    let (outcome, run) = run_live(&scenario, &opts, &RunOptions::default()).expect("live run");
    // Every Send the core issued is exactly one arrival at the provider: nothing retried
    // underneath the core, nothing lost.
    assert_eq!(
        run.journal.len() as u64,
        run.sends,
        "arrivals vs the core's sends"
    );
    assert_eq!(outcome.report.summary.mode, "live");
    (outcome, run)
}

fn is_create(e: &JournalEntry) -> bool {
    e.method == "POST" && e.route == "/v1/records"
}

fn is_lookup(e: &JournalEntry) -> bool {
    e.method == "GET" && e.route.starts_with("/v1/records")
}

#[test]
fn step1_a_429_with_retry_after_pauses_the_whole_scope() {
    let (outcome, run) = live("retry-after.toml");
    let limited: Vec<&JournalEntry> = run
        .journal
        .iter()
        .filter(|e| e.status == Some(429))
        .collect();
    assert_eq!(limited.len(), 1, "the scenario scripts exactly one 429");
    let told = limited[0];
    assert!(told.retry_after_ms.is_some(), "the 429 carries Retry-After");
    // The scenario's `retry_after = "20s"`, in scenario ms. (The journal's retry_after_ms
    // holds the header as emitted, which a time-scaled server shrinks to real ms.)
    let until = told.at_ms + 20_000;
    // When the client knew about the 429 (real µs since the run's start).
    let heard = run
        .attempts
        .iter()
        .find(|a| Some(a.job) == told.action && Some(a.attempt_no) == told.attempt_no)
        .expect("the client heard the 429")
        .done_real_us;
    let sent_at: BTreeMap<(u64, u32), u64> = run
        .attempts
        .iter()
        .map(|a| ((a.job, a.attempt_no), a.sent_real_us))
        .collect();
    let mut early_in_flight = 0;
    for e in run
        .journal
        .iter()
        .filter(|e| e.seq > told.seq && e.at_ms < until)
    {
        let key = (e.action.unwrap(), e.attempt_no.unwrap());
        let sent = sent_at[&key];
        assert!(
            sent < heard,
            "attempt {key:?} was sent after the client heard the 429 and arrived at {} ms, \
             before the scope's wait ended at {until} ms",
            e.at_ms
        );
        early_in_flight += 1;
    }
    // Work resumed after the wait, on every action, and the paused one included.
    let after = run.journal.iter().filter(|e| e.at_ms >= until).count();
    assert!(after >= 5, "only {after} attempts after the wait");
    assert!(
        early_in_flight <= 4,
        "{early_in_flight} attempts were in flight (4 workers)"
    );
    assert_eq!(outcome.report.summary.completed, 12);
    assert_eq!(
        outcome.report.summary.retry_after_violations,
        early_in_flight
    );
}

#[test]
fn step2_retries_spread_out_instead_of_coming_back_as_one_burst() {
    let (outcome, run) = live("spread.toml");
    // When the client meant each retry to leave: heard at `at`, due `delay_ms` later. This
    // is the client's decision; a busy machine can only delay the sends after it.
    let mut due: BTreeMap<(u64, u32), u64> = BTreeMap::new();
    for e in run
        .audit
        .iter()
        .filter(|e| e.kind == AuditKind::RetryScheduled)
    {
        let field = |name: &str| -> u64 {
            e.detail
                .text()
                .split(' ')
                .find_map(|kv| kv.strip_prefix(name))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} in {:?}", e.detail))
        };
        let next = u32::try_from(field("attempts=") + 1).unwrap();
        due.insert((e.job, next), e.at + field("delay_ms="));
    }
    assert!(due.len() >= 10, "only {} retries scheduled", due.len());
    let mut bins: BTreeMap<u64, usize> = BTreeMap::new();
    for t in due.values() {
        *bins.entry(t / 100).or_default() += 1;
    }
    let peak = bins.values().copied().max().unwrap_or(0);
    assert!(
        peak * 2 <= due.len(),
        "{peak} of {} retries were scheduled in one 100 ms bin: {bins:?}",
        due.len()
    );
    assert!(
        bins.len() >= 4,
        "retries were scheduled in only {} bins of 100 ms",
        bins.len()
    );
    // What reached the provider: the retries, none before its time. (Under scheduling noise
    // several may arrive together after a stall of the test process, so the spread is
    // judged on the schedule above, and the provider's side on "never early".)
    let mut arrived = 0;
    for e in &run.journal {
        let (Some(action), Some(n)) = (e.action, e.attempt_no) else {
            continue;
        };
        if n < 2 {
            continue;
        }
        let at = *due
            .get(&(action, n))
            .unwrap_or_else(|| panic!("retry {n} of action {action} was never scheduled"));
        assert!(
            e.at_ms + 1 >= at,
            "retry {n} of action {action} arrived at {} ms, due at {at} ms",
            e.at_ms
        );
        arrived += 1;
    }
    // A retry the scope's retry budget then refused is never sent: most are.
    assert!(arrived >= 10, "only {arrived} retries reached the provider");
    assert_eq!(outcome.report.summary.retry_after_violations, 0);
}

#[test]
fn step3_a_write_dropped_after_commit_is_looked_up_not_created_again() {
    let (outcome, run) = live("reconcile.toml");
    let dropped: Vec<&JournalEntry> = run
        .journal
        .iter()
        .filter(|e| is_create(e) && e.outcome == "dropped")
        .collect();
    assert_eq!(dropped.len(), 1, "the scenario drops one write");
    assert!(dropped[0].committed, "the dropped write was committed");
    let action = dropped[0].action.unwrap();
    let of_action: Vec<&JournalEntry> = run
        .journal
        .iter()
        .filter(|e| e.action == Some(action))
        .collect();
    let creates = of_action.iter().filter(|e| is_create(e)).count();
    let lookups: Vec<&&JournalEntry> = of_action.iter().filter(|e| is_lookup(e)).collect();
    assert_eq!(creates, 1, "a second create was sent for action {action}");
    assert!(!lookups.is_empty(), "no look-up for action {action}");
    assert!(lookups.iter().all(|l| l.seq > dropped[0].seq));
    let terminal = run.terminals.iter().find(|t| t.job == action).unwrap();
    assert_eq!(terminal.status, TerminalStatus::Completed);
    assert_eq!(terminal.reason, Reason::Reconciled);
    assert_eq!(outcome.report.summary.duplicates, 0);
    assert_eq!(outcome.report.summary.completed, 5);
}

#[test]
fn step4_the_budget_runs_out_into_a_sanitized_escalation() {
    let (outcome, run) = live("escalate.toml");
    assert_eq!(outcome.report.summary.escalations, 3);
    for t in &run.terminals {
        assert!(
            matches!(
                t.status,
                TerminalStatus::Escalated | TerminalStatus::ReconciliationRequired
            ),
            "{t:?}"
        );
        let text = serde_json::to_string(t).unwrap();
        assert!(!text.contains("sk-acme-secret-key"), "credential in {text}");
        assert!(!text.contains("payload"), "request body in {text}");
        assert!(!text.contains("\"error\""), "response body in {text}");
    }
    let escalated: BTreeSet<u64> = run.terminals.iter().map(|t| t.job).collect();
    let audit: Vec<_> = run
        .audit
        .iter()
        .filter(|a| a.kind == stampede_core::AuditKind::Escalated)
        .collect();
    assert_eq!(audit.len(), escalated.len());
    for a in &run.audit {
        assert!(
            !a.detail.text().contains("sk-acme-secret-key"),
            "credential in audit {a:?}"
        );
    }
    // Every write was committed once and never re-sent blindly.
    for job in &escalated {
        let creates = run
            .journal
            .iter()
            .filter(|e| e.action == Some(*job) && is_create(e))
            .count();
        assert_eq!(creates, 1, "action {job} was created {creates} times");
    }
    assert_eq!(outcome.report.summary.duplicates, 0);
}

#[test]
fn step5_cancelled_work_never_wakes() {
    let (outcome, run) = live("cancel.toml");
    let cancel_at = 10_000;
    let cancelled: BTreeSet<u64> = run
        .terminals
        .iter()
        .filter(|t| t.status == TerminalStatus::Cancelled)
        .map(|t| t.job)
        .collect();
    assert_eq!(cancelled.len(), 3, "task 0 holds three actions");
    for e in &run.journal {
        if e.action.is_some_and(|a| cancelled.contains(&a)) {
            assert!(
                e.at_ms < cancel_at,
                "cancelled action {:?} reached the provider at {} ms",
                e.action,
                e.at_ms
            );
        }
    }
    // Task 1 woke after the 30 s wait and finished.
    assert_eq!(outcome.report.summary.completed, 3);
    assert!(run
        .journal
        .iter()
        .any(|e| e.at_ms >= 30_000 && e.status == Some(200)));
}
