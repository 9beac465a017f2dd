//! One test per client-policy rule of DESIGN.md; each fails if its rule is broken.
// Each test reads as "the default policy, with this one knob changed".
#![allow(clippy::field_reassign_with_default)]

use crate::common;

use std::time::Duration;

use common::*;
use stampede_core::{
    preset, ActionState, AuditKind, Command, InMemoryLedger, Job, JobId, Ledger, LookupBy,
    LookupResult, NextAction, Outcome, Policy, Priority, Reason, Route, Scheduler, ScopeBudget,
    ScopeSource, SendKind, TerminalStatus, TransportFailure,
};

fn scoped(rpm: Option<u32>, tpm: Option<u32>) -> Policy {
    let mut policy = Policy::default();
    policy.scopes.insert(
        "acct".into(),
        ScopeBudget {
            rpm,
            tpm,
            concurrency: None,
            reserve: None,
            max_delayed_requests: None,
        },
    );
    policy
}

#[test]
fn retry_after_429_delays_every_job_of_the_scope() {
    let mut policy = Policy::default();
    policy.workers = 2;
    let mut s = scheduler(policy);
    for id in 1..=3 {
        s.submit(job(id, "llm"), 0).unwrap();
    }
    let first = sends(&drain(&mut s, 0));
    assert_eq!(first.len(), 2);
    s.on_outcome(
        first[0].attempt,
        response(429, &[("retry-after", "10")]),
        100,
    );
    s.on_outcome(first[1].attempt, ok(), 100);
    // Job 3 never got a 429 itself, yet it waits for the scope's Retry-After.
    assert!(sends(&drain(&mut s, 100)).is_empty());
    assert!(sends(&drain(&mut s, 10_099)).is_empty());
    assert!(s.next_wakeup().is_some_and(|t| t <= 10_100));
    let later = sends(&drain(&mut s, 10_100));
    assert!(
        later.iter().any(|send| send.job == 3),
        "job 3 goes once the wait has passed: {later:?}"
    );
}

#[test]
fn scope_record_is_published_before_the_retry_is_scheduled() {
    let mut s = scheduler(Policy::default());
    s.submit(job(1, "llm"), 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    let _admission_and_send = s.drain_audit();
    s.on_outcome(send.attempt, response(429, &[("retry-after", "4")]), 50);
    let record = s.scope_record("acct").unwrap();
    assert_eq!(record.next_allowed_at, 4_050);
    assert_eq!(record.source, Some(ScopeSource::RateLimitedRetryAfter));
    let retry = s
        .drain_audit()
        .into_iter()
        .find(|e| e.kind == AuditKind::RetryScheduled)
        .expect("retry scheduled");
    let delay: u64 = retry
        .detail
        .text()
        .split("delay_ms=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        delay >= 4_000,
        "the retry reads the published record: {}",
        retry.detail
    );
}

#[test]
fn retry_after_wins_over_a_shorter_backoff() {
    let mut policy = Policy::default();
    policy.share_scope_state = false; // the job's own wait still counts
    let mut s = scheduler(policy);
    s.submit(job(1, "read"), 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(send.attempt, response(503, &[("retry-after", "5")]), 0);
    assert!(sends(&drain(&mut s, 4_999)).is_empty());
    // Within the spread window (1 s by default) after the provider's wait.
    assert_eq!(sends(&drain(&mut s, 6_000)).len(), 1);
}

#[test]
fn retry_after_http_date_uses_the_wall_epoch_and_past_dates_get_a_floor() {
    let epoch = 1_700_000_000_000u64;
    let mut policy = Policy::default();
    policy.wall_epoch_unix_ms = epoch;
    let mut s = scheduler(policy);
    s.submit(job(1, "llm"), 0).unwrap();
    s.submit(job(2, "llm"), 0).unwrap();
    let sent = sends(&drain(&mut s, 0));
    let future = stampede_core::retry_after::format_http_date(epoch + 30_000);
    s.on_outcome(
        sent[0].attempt,
        response(429, &[("retry-after", &future)]),
        10_000,
    );
    assert_eq!(s.scope_record("acct").unwrap().next_allowed_at, 30_000);
    // A date already past (clock skew) waits the floor, never zero.
    let past = stampede_core::retry_after::format_http_date(epoch);
    s.on_outcome(
        sent[1].attempt,
        response(429, &[("retry-after", &past)]),
        40_000,
    );
    assert_eq!(s.scope_record("acct").unwrap().next_allowed_at, 41_000);
}

#[test]
fn full_jitter_backoff_is_spread_and_capped() {
    let mut policy = Policy::default();
    policy.breaker.enabled = false;
    policy.retry_budgets.per_scope.enabled = false;
    let mut s = scheduler(policy);
    for id in 1..=40 {
        s.submit(job(id, "read"), 0).unwrap();
    }
    for send in sends(&drain(&mut s, 0)) {
        s.on_outcome(send.attempt, response(500, &[]), 0);
    }
    let mut retry_times = Vec::new();
    for t in 0..=600 {
        retry_times.extend(sends(&drain(&mut s, t)).iter().map(|_| t));
    }
    assert_eq!(
        retry_times.len(),
        40,
        "every first retry comes within base (500ms)"
    );
    retry_times.dedup();
    assert!(
        retry_times.len() > 20,
        "full jitter spreads retries, got {} distinct times",
        retry_times.len()
    );
}

#[test]
fn slot_is_taken_after_rate_capacity() {
    let mut policy = scoped(Some(1), None);
    policy.workers = 1;
    let mut s = scheduler(policy);
    s.submit(job(1, "read"), 0).unwrap();
    s.submit(job(2, "read"), 0).unwrap();
    let first = sends(&drain(&mut s, 0));
    assert_eq!(first.len(), 1);
    s.on_outcome(first[0].attempt, ok(), 10);
    // Job 2 waits for the request bucket and must not hold the only slot meanwhile.
    let waiting = drain(&mut s, 10);
    assert!(sends(&waiting).is_empty(), "{waiting:?}");
    assert_eq!(s.gauges().in_flight, 0);
    let mut other = job(3, "read");
    other.scope = Some("other".into());
    s.submit(other, 10).unwrap();
    let next = sends(&drain(&mut s, 10));
    assert_eq!(
        next.iter().map(|x| x.job).collect::<Vec<_>>(),
        vec![3],
        "the free slot serves another scope"
    );
}

#[test]
fn token_reservation_is_reconciled_with_reported_usage() {
    let mut s = scheduler(scoped(None, Some(1_000)));
    s.submit(job(1, "llm"), 0).unwrap(); // reserves 200
    let mut big = job(2, "llm");
    big.prompt_tokens = 500;
    big.max_output_tokens = 400; // 900: does not fit next to 200
    s.submit(big, 0).unwrap();
    let first = sends(&drain(&mut s, 0));
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].reserved_tokens, 200);
    assert_eq!(s.gauges().tokens_reserved, 200);
    s.on_outcome(first[0].attempt, ok_with_usage(40, 10), 1);
    // 150 of the 200 came back: 950 available, 900 fit.
    let second = sends(&drain(&mut s, 1));
    assert_eq!(second.len(), 1, "released tokens admit the next call");
    assert_eq!(second[0].reserved_tokens, 900);
}

#[test]
fn unknown_usage_keeps_the_upper_estimate_and_is_marked_uncertain() {
    let mut s = scheduler(scoped(None, Some(1_000)));
    s.submit(job(1, "llm"), 0).unwrap();
    let mut big = job(2, "llm");
    big.prompt_tokens = 500;
    big.max_output_tokens = 400;
    s.submit(big, 0).unwrap();
    let first = sends(&drain(&mut s, 0));
    s.on_outcome(first[0].attempt, ok(), 1);
    assert!(
        sends(&drain(&mut s, 1)).is_empty(),
        "the 200 reserved stay used"
    );
    assert_eq!(s.scope_record("acct").unwrap().uncertain_usage, 1);
}

#[test]
fn usage_above_the_reservation_is_recorded_as_debt() {
    let mut s = scheduler(scoped(None, Some(1_000)));
    s.submit(job(1, "llm"), 0).unwrap();
    let first = sends(&drain(&mut s, 0));
    s.on_outcome(first[0].attempt, ok_with_usage(900, 300), 1);
    assert_eq!(s.scope_record("acct").unwrap().token_debt, 200);
    assert_eq!(s.gauges().token_debt, 200);
}

#[test]
fn rate_limit_headers_pace_the_scope_when_nothing_remains() {
    let mut s = scheduler(Policy::default());
    s.submit(job(1, "read"), 0).unwrap();
    s.submit(job(2, "read"), 0).unwrap();
    let mut policy = Policy::default();
    policy.workers = 1;
    let mut s1 = scheduler(policy);
    s1.submit(job(1, "read"), 0).unwrap();
    s1.submit(job(2, "read"), 0).unwrap();
    let first = sends(&drain(&mut s1, 0));
    let headers = [
        ("x-ratelimit-remaining-requests", "0"),
        ("x-ratelimit-reset-requests", "2s"),
    ];
    s1.on_outcome(first[0].attempt, response(200, &headers), 100);
    assert!(sends(&drain(&mut s1, 100)).is_empty());
    assert_eq!(
        s1.scope_record("acct").unwrap().source,
        Some(ScopeSource::RateLimitHeaders)
    );
    assert_eq!(sends(&drain(&mut s1, 2_100)).len(), 1);
    drop(s);
}

#[test]
fn uncertain_write_never_resent_before_lookup_absent() {
    let mut s = scheduler(Policy::default());
    s.submit(job(1, "uncertain_write"), 0).unwrap();
    let first = sends(&drain(&mut s, 0)).remove(0);
    let key = first.idempotency_key.clone().expect("keys are sent");
    s.on_outcome(
        first.attempt,
        Outcome::Transport(TransportFailure::ReadTimeout),
        10,
    );
    assert_eq!(
        s.ledger().get(1).unwrap().state,
        ActionState::ReconciliationRequired
    );
    let mut next = Vec::new();
    for t in (10..20_000).step_by(50) {
        next.extend(sends(&drain(&mut s, t)));
        if !next.is_empty() {
            break;
        }
    }
    assert_eq!(next.len(), 1);
    assert_eq!(
        next[0].kind,
        SendKind::Lookup(Box::new(LookupBy::IdempotencyKey(key.clone()))),
        "a look-up, not a re-send"
    );
    // A failed look-up is looked up again, never turned into a send of the action.
    s.on_outcome(next[0].attempt, response(503, &[]), 20_000);
    let mut again = Vec::new();
    for t in (20_000..40_000).step_by(50) {
        again.extend(sends(&drain(&mut s, t)));
        if !again.is_empty() {
            break;
        }
    }
    assert!(matches!(again[0].kind, SendKind::Lookup(_)));
    s.on_outcome(
        again[0].attempt,
        Outcome::Lookup(LookupResult::Absent),
        40_000,
    );
    let resend = sends(&drain(&mut s, 40_000));
    assert_eq!(resend.len(), 1);
    assert_eq!(resend[0].kind, SendKind::Action);
    assert_eq!(
        resend[0].idempotency_key.as_ref(),
        Some(&key),
        "re-sent with the same key"
    );
}

fn into_lookup(s: &mut stampede_core::Scheduler) -> stampede_core::SendAttempt {
    s.submit(job(1, "uncertain_write"), 0).unwrap();
    let first = sends(&drain(s, 0)).remove(0);
    s.on_outcome(first.attempt, response(502, &[]), 10);
    for t in (10..20_000).step_by(10) {
        if let Some(send) = sends(&drain(s, t)).pop() {
            return send;
        }
    }
    panic!("no look-up was sent");
}

#[test]
fn uncertain_write_found_by_lookup_completes_reconciled() {
    let mut s = scheduler(Policy::default());
    let lookup = into_lookup(&mut s);
    s.on_outcome(
        lookup.attempt,
        Outcome::Lookup(LookupResult::Found {
            operation_id: Some("rec_9".into()),
        }),
        20_000,
    );
    let done = finishes(&drain(&mut s, 20_000));
    assert_eq!(done[0].status, TerminalStatus::Completed);
    assert_eq!(done[0].reason, Reason::Reconciled);
    assert_eq!(done[0].operation_id.as_deref(), Some("rec_9"));
}

#[test]
fn uncertain_write_with_unsupported_lookup_is_escalated() {
    let mut s = scheduler(Policy::default());
    let lookup = into_lookup(&mut s);
    s.on_outcome(
        lookup.attempt,
        Outcome::Lookup(LookupResult::Unsupported),
        20_000,
    );
    let done = finishes(&drain(&mut s, 20_000));
    assert_eq!(done[0].status, TerminalStatus::Escalated);
    assert_eq!(done[0].reason, Reason::ReconciliationUnavailable);
    assert!(done[0].next_actions.contains(&NextAction::QueryStatus));
}

#[test]
fn lookup_budget_exhausted_escalates() {
    let mut policy = Policy::default();
    policy.reconciliation.max_lookups = 2;
    let mut s = scheduler(policy);
    s.submit(job(1, "uncertain_write"), 0).unwrap();
    let first = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(
        first.attempt,
        Outcome::Transport(TransportFailure::ResetAfterWrite),
        0,
    );
    let mut lookups = 0;
    let mut terminal = None;
    for t in (0..120_000).step_by(10) {
        for command in drain(&mut s, t) {
            match command {
                Command::Send(send) => {
                    lookups += 1;
                    assert!(matches!(send.kind, SendKind::Lookup(_)));
                    s.on_outcome(
                        send.attempt,
                        Outcome::Transport(TransportFailure::ConnectRefused),
                        t,
                    );
                }
                Command::Finish(done) => terminal = Some(done),
            }
        }
        if terminal.is_some() {
            break;
        }
    }
    assert_eq!(lookups, 2);
    assert_eq!(terminal.unwrap().status, TerminalStatus::Escalated);
}

#[test]
fn idempotency_key_is_persisted_before_the_first_send_and_stable_across_attempts() {
    let mut s = scheduler(Policy::default());
    s.submit(job(1, "read"), 0).unwrap();
    let persisted = s
        .ledger()
        .get(1)
        .unwrap()
        .job
        .idempotency_key
        .clone()
        .expect("key persisted at submit");
    let mut keys = Vec::new();
    for t in (0..30_000).step_by(10) {
        for send in sends(&drain(&mut s, t)) {
            keys.push(send.idempotency_key.clone().unwrap());
            s.on_outcome(send.attempt, response(503, &[]), t);
        }
    }
    assert!(keys.len() >= 2);
    assert!(keys.iter().all(|k| *k == persisted));
}

#[test]
fn retry_past_deadline_fails_now() {
    let mut s = scheduler(Policy::default());
    let mut j = job(1, "llm");
    j.deadline = Some(1_000);
    s.submit(j, 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(send.attempt, response(429, &[("retry-after", "10")]), 100);
    let now = drain(&mut s, 100);
    let done = finishes(&now);
    assert_eq!(done.len(), 1, "fails at once, not when the deadline passes");
    assert_eq!(done[0].reason, Reason::DeadlineExceeded);
    assert!(sends(&now).is_empty());
}

#[test]
fn attempts_never_exceed_the_class_max_attempts() {
    let mut policy = Policy::default();
    policy.breaker.enabled = false;
    let mut s = scheduler(policy);
    s.submit(job(1, "llm"), 0).unwrap();
    let (attempts, terminal) = answer_every_send(&mut s, 500);
    assert_eq!(attempts, 3, "llm max_attempts = 3");
    assert_eq!(terminal.unwrap().reason, Reason::AttemptsExhausted);
}

/// A class's attempts are bounded in count as well as in time: past `MAX_ATTEMPTS` a policy
/// is refused, since attempts answered in no time (0 ms refusals, no backoff) would
/// otherwise repeat without end at one instant of a virtual run.
#[test]
fn max_attempts_is_bounded() {
    let mut policy = Policy::default();
    policy.classes.get_mut("llm").unwrap().max_attempts = stampede_core::MAX_ATTEMPTS;
    assert!(policy.validate().is_ok());
    policy.classes.get_mut("llm").unwrap().max_attempts = stampede_core::MAX_ATTEMPTS + 1;
    let err = policy.validate().unwrap_err();
    assert!(
        err.starts_with("classes.llm.max_attempts = 1001: give at most 1000"),
        "{err}"
    );
}

/// Answers every send with `status` at once, every 10 ms for two virtual minutes; the sends
/// made and the last terminal.
fn answer_every_send(
    s: &mut stampede_core::Scheduler,
    status: u16,
) -> (u32, Option<stampede_core::Terminal>) {
    let mut attempts = 0;
    let mut terminal = None;
    for t in (0..120_000).step_by(10) {
        for command in drain(s, t) {
            match command {
                Command::Send(send) => {
                    attempts += 1;
                    s.on_outcome(send.attempt, response(status, &[]), t);
                }
                Command::Finish(done) => terminal = Some(done),
            }
        }
    }
    (attempts, terminal)
}

#[test]
fn max_wait_bounds_total_time_waiting() {
    let mut policy = Policy::default();
    policy.classes.get_mut("llm").unwrap().max_wait = Duration::from_secs(5);
    let mut s = scheduler(policy);
    s.submit(job(1, "llm"), 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(send.attempt, response(429, &[("retry-after", "6")]), 0);
    let done = finishes(&drain(&mut s, 0));
    assert_eq!(done[0].reason, Reason::WaitBudgetExhausted);
}

#[test]
fn task_retry_budget_bounds_retries_of_one_task() {
    let mut policy = Policy::default();
    policy.retry_budgets.per_task.max_retries = 1;
    policy.breaker.enabled = false;
    let mut s = scheduler(policy);
    for id in 1..=3 {
        let mut j = job(id, "read");
        j.task = "shared-task".into();
        s.submit(j, 0).unwrap();
    }
    for send in sends(&drain(&mut s, 0)) {
        s.on_outcome(send.attempt, response(503, &[]), 0);
    }
    let done = finishes(&drain(&mut s, 0));
    assert_eq!(done.len(), 2, "only one retry for the whole task");
    assert!(done.iter().all(|d| d.reason == Reason::TaskBudgetExhausted));
}

/// An action the driver says is alone in its task (`Job::sole_task`) keeps no task record,
/// yet meets the per-task budget as a recorded task of one action does, retry for retry, and
/// a cancellation of its task still ends it.
#[test]
fn a_sole_task_meets_the_task_budget_and_cancellation_as_a_recorded_one() {
    let run = |sole: bool| {
        let mut policy = Policy::default();
        policy.retry_budgets.per_task.max_retries = 2;
        policy.breaker.enabled = false;
        let mut s = scheduler(policy);
        let mut j = job(1, "read");
        j.task = "alone".into();
        j.sole_task = sole;
        s.submit(j, 0).unwrap();
        let (attempts, end) = answer_every_send(&mut s, 503);
        (attempts, end.map(|done| (done.reason, done.attempts)))
    };
    let recorded = run(false);
    assert_eq!(recorded, (3, Some((Reason::TaskBudgetExhausted, 3))));
    assert_eq!(run(true), recorded);

    let mut s = scheduler(Policy::default());
    for (id, task) in [(1, "alone"), (2, "other")] {
        let mut j = job(id, "llm");
        j.task = task.into();
        j.sole_task = true;
        s.submit(j, 0).unwrap();
    }
    s.cancel_task("t1", "alone", 0);
    let done = finishes(&drain(&mut s, 0));
    assert_eq!(
        done.iter().map(|d| (d.job, d.status)).collect::<Vec<_>>(),
        [(1, TerminalStatus::Cancelled)]
    );
}

#[test]
fn scope_retry_budget_bounds_retries_across_tasks() {
    let mut policy = Policy::default();
    policy.retry_budgets.per_task.enabled = false;
    policy.retry_budgets.per_scope.ratio = 0.0;
    policy.retry_budgets.per_scope.floor = 2;
    policy.breaker.enabled = false;
    let mut s = scheduler(policy);
    for id in 1..=10 {
        s.submit(job(id, "read"), 0).unwrap();
    }
    let mut retries = 0;
    let mut failed = 0;
    for t in (0..60_000).step_by(10) {
        for command in drain(&mut s, t) {
            match command {
                Command::Send(send) => {
                    retries += u32::from(send.attempt_no > 1);
                    s.on_outcome(send.attempt, response(503, &[]), t);
                }
                Command::Finish(done) => {
                    failed += u32::from(done.reason == Reason::ScopeBudgetExhausted)
                }
            }
        }
    }
    assert!(
        retries <= 2,
        "ten tasks may not make {retries} retries to one scope"
    );
    assert!(failed >= 8);
}

/// The default policy with `cap` on the retries waiting on scope `acct`, and no other
/// budget or breaker that could end a retry first.
fn retries_capped(cap: Option<u32>) -> Policy {
    let mut policy = scoped(None, None);
    policy.retry_budgets.per_task.enabled = false;
    policy.retry_budgets.per_scope.enabled = false;
    policy.breaker.enabled = false;
    policy.scopes.get_mut("acct").unwrap().max_delayed_requests = cap;
    policy
}

/// Seed 000's `shared_scope: max_delayed_requests`: at most that many retries wait on a
/// scope at once; one more ends now, and a retry that wakes makes room for the next.
#[test]
fn max_delayed_requests_caps_the_retries_waiting_on_a_scope() {
    let run = |cap: Option<u32>| {
        let mut s = scheduler(retries_capped(cap));
        for id in 1..=10 {
            s.submit(job(id, "read"), 0).unwrap();
        }
        let mut ends = Vec::new();
        for t in (0..120_000).step_by(10) {
            for command in drain(&mut s, t) {
                match command {
                    Command::Send(send) => s.on_outcome(send.attempt, response(503, &[]), t),
                    Command::Finish(done) => ends.push((t, done.reason)),
                }
            }
        }
        ends
    };
    let capped = run(Some(3));
    let shed: Vec<u64> = capped
        .iter()
        .filter(|(_, r)| *r == Reason::ScopeDelayedFull)
        .map(|(t, _)| *t)
        .collect();
    // The first wave (answered at 0 ms, heard by the next turn): three of the ten wait for
    // their retry, seven end at once.
    assert_eq!(shed, vec![10; 7], "{capped:?}");
    // The three run their class's attempts out: each wake gave its place back.
    assert_eq!(capped.len(), 10);
    assert!(
        capped
            .iter()
            .filter(|(_, r)| *r != Reason::ScopeDelayedFull)
            .all(|(_, r)| *r == Reason::AttemptsExhausted),
        "{capped:?}"
    );
    let uncapped = run(None);
    assert_eq!(uncapped.len(), 10);
    assert!(
        uncapped
            .iter()
            .all(|(_, r)| *r == Reason::AttemptsExhausted),
        "{uncapped:?}"
    );
}

/// A retry cancelled while it waits gives its place back: the next failure on the scope
/// waits for its retry instead of being shed by a place nobody holds.
#[test]
fn a_cancelled_retry_gives_its_place_on_the_scope_back() {
    let mut s = scheduler(retries_capped(Some(1)));
    s.submit(job(1, "read"), 0).unwrap();
    let first = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(first.attempt, response(503, &[]), 0);
    assert!(
        finishes(&drain(&mut s, 1)).is_empty(),
        "job 1 waits for its retry"
    );
    s.cancel_task("t1", "task-1", 2);
    let cancelled = finishes(&drain(&mut s, 2));
    assert_eq!(cancelled[0].status, TerminalStatus::Cancelled);
    s.submit(job(2, "read"), 3).unwrap();
    let second = sends(&drain(&mut s, 3)).remove(0);
    s.on_outcome(second.attempt, response(503, &[]), 3);
    assert!(
        finishes(&drain(&mut s, 4)).is_empty(),
        "job 2 takes the place job 1 left"
    );
    assert_eq!(sends(&drain(&mut s, 60_000)).len(), 1, "job 2's retry goes");
}

#[test]
fn a_cap_of_zero_waiting_retries_is_refused_naming_the_key() {
    let mut policy = scoped(None, None);
    policy.default_scope.max_delayed_requests = Some(0);
    let err = policy.validate().unwrap_err();
    assert!(
        err.starts_with("default_scope.max_delayed_requests = 0"),
        "{err}"
    );
}

#[test]
fn quota_exhausted_waits_for_the_reset_not_a_burst_backoff() {
    let mut s = scheduler(Policy::default());
    s.submit(job(1, "llm"), 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    let quota = Outcome::Response(stampede_core::Response {
        headers: vec![("x-ratelimit-reset-tokens".into(), "30s".into())],
        error_code: Some("insufficient_quota".into()),
        ..stampede_core::Response::new(429)
    });
    s.on_outcome(send.attempt, quota, 0);
    assert_eq!(
        s.scope_record("acct").unwrap().source,
        Some(ScopeSource::QuotaReset)
    );
    assert!(sends(&drain(&mut s, 29_999)).is_empty());
    assert_eq!(sends(&drain(&mut s, 31_000)).len(), 1);
}

#[test]
fn quota_exhausted_past_the_deadline_is_escalated_with_raise_quota() {
    let mut s = scheduler(Policy::default());
    let mut j = job(1, "llm");
    j.deadline = Some(10_000);
    s.submit(j, 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(send.attempt, with_code(429, "insufficient_quota"), 0);
    let done = finishes(&drain(&mut s, 0));
    assert_eq!(done[0].reason, Reason::QuotaExhausted);
    // Seed 000: a spent shared quota is for a person to settle.
    assert_eq!(done[0].status, TerminalStatus::Escalated);
    assert!(done[0].next_actions.contains(&NextAction::RaiseQuota));
}

#[test]
fn wont_improve_failures_are_not_retried() {
    let mut s = scheduler(Policy::default());
    s.submit(job(1, "read"), 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(send.attempt, response(422, &[]), 0);
    let after = drain(&mut s, 60_000);
    assert!(sends(&after).is_empty());
    assert_eq!(
        finishes(&after)[0].reason,
        Reason::WontImprove {
            status: 422,
            code: None
        }
    );
}

#[test]
fn content_policy_refusal_is_never_retried_even_by_the_naive_preset() {
    let mut s = scheduler(preset("naive").unwrap());
    s.submit(job(1, "llm"), 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(send.attempt, with_code(400, "content_policy_violation"), 0);
    let after = drain(&mut s, 60_000);
    assert!(sends(&after).is_empty());
    assert_eq!(finishes(&after)[0].status, TerminalStatus::Failed);
}

#[test]
fn stream_cut_after_the_first_token_is_never_retried() {
    let mut s = scheduler(Policy::default());
    let mut j = job(1, "llm");
    j.stream = true;
    s.submit(j, 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(
        send.attempt,
        Outcome::Transport(TransportFailure::StreamCut {
            tokens_delivered: 3,
        }),
        0,
    );
    let after = drain(&mut s, 60_000);
    assert!(sends(&after).is_empty());
    assert_eq!(finishes(&after)[0].reason, Reason::StreamInterrupted);
}

#[test]
fn conflict_409_is_not_retried() {
    let mut s = scheduler(Policy::default());
    s.submit(job(1, "idempotent_write"), 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(send.attempt, with_code(409, "version_conflict"), 0);
    let after = drain(&mut s, 60_000);
    assert!(sends(&after).is_empty());
    assert_eq!(
        finishes(&after)[0].reason,
        Reason::Conflict {
            code: Some("version_conflict".into())
        }
    );
}

/// A scheduler whose breaker opens on the second identical failure in a row.
fn breaker_of_two() -> Scheduler {
    let mut policy = Policy::default();
    policy.breaker.threshold = 2;
    scheduler(policy)
}

/// Read action `id` with the payload every breaker test shares: one path.
fn same_payload(id: JobId) -> Job {
    let mut j = job(id, "read");
    j.payload_hash = 77;
    j
}

#[test]
fn circuit_breaker_opens_on_identical_failures_and_stops_the_path() {
    let mut s = breaker_of_two();
    for id in 1..=2 {
        s.submit(same_payload(id), 0).unwrap();
        let send = sends(&drain(&mut s, 0)).remove(0);
        s.on_outcome(send.attempt, response(400, &[]), 0);
    }
    let opened = finishes(&drain(&mut s, 0));
    assert!(matches!(
        opened.last().unwrap().reason,
        Reason::CircuitOpen { .. }
    ));
    s.submit(same_payload(3), 1).unwrap();
    let third = drain(&mut s, 1);
    assert!(sends(&third).is_empty(), "an open path sends nothing");
    let done = finishes(&third);
    assert_eq!(done[0].status, TerminalStatus::Escalated);
    let Reason::CircuitOpen { fingerprint } = &done[0].reason else {
        panic!("{:?}", done[0].reason)
    };
    assert!(!fingerprint.contains(CREDENTIAL));
}

/// A success clears its path's count of failures in a row: the breaker opens on the same
/// failure repeated `threshold` times in a row, so a failure after a success is the first
/// again, not the threshold's second.
#[test]
fn a_success_clears_the_breaker_count_of_its_path() {
    let mut s = breaker_of_two();
    // Action 1 fails once on the path, then succeeds on its retry.
    s.submit(same_payload(1), 0).unwrap();
    let first = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(first.attempt, response(500, &[]), 0);
    let retry = sends(&drain(&mut s, 60_000)).remove(0);
    assert_eq!(retry.job, first.job);
    s.on_outcome(retry.attempt, ok(), 60_000);
    let done = finishes(&drain(&mut s, 60_000));
    assert_eq!(done[0].reason, Reason::Succeeded);
    // Action 2 fails the same way once: one failure in a row on the path, so it is retried
    // instead of escalated with `CircuitOpen`.
    s.submit(same_payload(2), 60_001).unwrap();
    let second = sends(&drain(&mut s, 60_001)).remove(0);
    s.on_outcome(second.attempt, response(500, &[]), 60_001);
    let after = drain(&mut s, 120_000);
    assert!(finishes(&after).is_empty(), "{:?}", finishes(&after));
    assert_eq!(sends(&after)[0].job, second.job, "the path is not open");
}

#[test]
fn admission_rejects_a_full_queue_with_a_reason_and_retry_after() {
    let mut policy = Policy::default();
    policy.admission.queue_capacity = 2;
    let mut s = scheduler(policy);
    s.submit(job(1, "read"), 0).unwrap();
    s.submit(job(2, "read"), 0).unwrap();
    let rejected = s.submit(job(3, "read"), 0).unwrap_err();
    assert_eq!(rejected.retry_after_ms, 1_000);
    assert!(rejected.reason.contains("t1"), "{}", rejected.reason);
    let mut bulk = job(4, "read");
    bulk.priority = Priority::Bulk;
    assert!(
        s.submit(bulk, 0).is_ok(),
        "bounds are per tenant and priority"
    );
}

#[test]
fn fair_dequeue_round_robins_across_tenants() {
    let mut policy = Policy::default();
    policy.workers = 1;
    let mut s = scheduler(policy);
    for id in 1..=6 {
        let mut j = job(id, "read");
        j.tenant = if id <= 3 {
            "big".into()
        } else {
            "small".into()
        };
        s.submit(j, 0).unwrap();
    }
    let mut order = Vec::new();
    for t in 0..6 {
        let send = sends(&drain(&mut s, t)).remove(0);
        order.push(send.job);
        s.on_outcome(send.attempt, ok(), t);
    }
    assert_eq!(order, vec![1, 4, 2, 5, 3, 6]);
}

#[test]
fn critical_priority_drains_before_normal_and_bulk() {
    let mut policy = Policy::default();
    policy.workers = 1;
    let mut s = scheduler(policy);
    for (id, priority) in [
        (1, Priority::Bulk),
        (2, Priority::Normal),
        (3, Priority::Critical),
    ] {
        let mut j = job(id, "read");
        j.priority = priority;
        s.submit(j, 0).unwrap();
    }
    let mut order = Vec::new();
    for t in 0..3 {
        let send = sends(&drain(&mut s, t)).remove(0);
        order.push(send.job);
        s.on_outcome(send.attempt, ok(), t);
    }
    assert_eq!(order, vec![3, 2, 1]);
}

#[test]
fn cancelled_task_emits_nothing_after_cancel() {
    let mut s = scheduler(scoped(None, Some(10_000)));
    let mut a = job(1, "llm");
    a.task = "doomed".into();
    let mut b = job(2, "llm");
    b.task = "doomed".into();
    s.submit(a, 0).unwrap();
    s.submit(b, 0).unwrap();
    let sent = sends(&drain(&mut s, 0));
    s.on_outcome(sent[0].attempt, response(503, &[("retry-after", "2")]), 5); // job 1 delayed
    assert_eq!(s.gauges().delayed, 1);
    s.cancel_task("t1", "doomed", 10);
    let done = finishes(&drain(&mut s, 10));
    assert_eq!(done.len(), 2);
    assert!(done.iter().all(|d| d.status == TerminalStatus::Cancelled));
    let gauges = s.gauges();
    assert_eq!(
        (
            gauges.in_flight,
            gauges.delayed,
            gauges.tokens_reserved,
            gauges.live
        ),
        (0, 0, 0, 0)
    );
    // The late outcome of the cancelled attempt is ignored; the dropped timer never wakes.
    s.on_outcome(sent[1].attempt, ok(), 20);
    // Time only moves on from the outcome's 20 ms (the core's time contract).
    for t in (20..10_000).step_by(100) {
        assert!(drain(&mut s, t).is_empty());
    }
    assert_eq!(s.ledger().get(1).unwrap().state, ActionState::Cancelled);
}

#[test]
fn coalesced_reads_send_once() {
    let mut s = scheduler(Policy::default());
    for id in 1..=3 {
        let mut j = job(id, "read");
        j.resource = Some("item-1".into());
        j.coalescable = true;
        s.submit(j, 0).unwrap();
    }
    let sent = sends(&drain(&mut s, 0));
    assert_eq!(sent.len(), 1);
    assert_eq!(s.gauges().coalesced, 2);
    s.on_outcome(sent[0].attempt, ok(), 5);
    let done = finishes(&drain(&mut s, 5));
    assert_eq!(done.len(), 3);
    assert!(done.iter().all(|d| d.status == TerminalStatus::Completed));
}

#[test]
fn freshness_sensitive_reads_are_never_coalesced() {
    let mut s = scheduler(Policy::default());
    for id in 1..=3 {
        let mut j = job(id, "read");
        j.resource = Some("balance".into());
        j.coalescable = false;
        s.submit(j, 0).unwrap();
    }
    assert_eq!(sends(&drain(&mut s, 0)).len(), 3);
}

#[test]
fn terminal_outcome_carries_context_and_next_safe_actions() {
    let mut s = scheduler(Policy::default());
    let mut j = job(1, "tool");
    j.deadline = Some(200);
    s.submit(j, 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(send.attempt, response(429, &[("retry-after", "1")]), 100);
    let done = finishes(&drain(&mut s, 100)).remove(0);
    assert!(done.sent);
    assert_eq!(done.last_status, Some(429));
    assert_eq!(done.attempts, 1);
    assert_eq!(done.reason, Reason::DeadlineExceeded);
    assert_eq!(
        done.next_actions.first(),
        Some(&NextAction::RetryWithSameKey)
    );
    assert!(done
        .next_actions
        .iter()
        .any(|a| matches!(a, NextAction::Wait { ms } if *ms >= 900)));
}

#[test]
fn audit_is_recorded_before_dispatch_and_free_of_secrets() {
    let mut s = scheduler(Policy::default());
    s.submit(job(1, "idempotent_write"), 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    let events = s.drain_audit();
    let kinds: Vec<AuditKind> = events.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        vec![AuditKind::ActionRequested, AuditKind::ActionSent]
    );
    assert_eq!(events[1].attempt, Some(send.attempt));
    s.on_outcome(send.attempt, response(503, &[]), 1);
    for t in 1..5_000 {
        for next in sends(&drain(&mut s, t)) {
            s.on_outcome(next.attempt, ok(), t);
        }
    }
    let key = send.idempotency_key.unwrap();
    let events = s.drain_audit();
    assert!(events.iter().any(|e| e.kind == AuditKind::RetryScheduled));
    assert!(events.iter().any(|e| e.kind == AuditKind::Completed));
    for event in events {
        assert!(
            !event.detail.text().contains(CREDENTIAL)
                && !event.detail.text().contains(&*key.text()),
            "{}",
            event.detail
        );
    }
}

#[test]
fn restore_sends_in_flight_uncertain_writes_to_lookup_with_their_original_key() {
    let mut s = scheduler(Policy::default());
    s.submit(job(1, "uncertain_write"), 0).unwrap();
    s.submit(job(2, "read"), 0).unwrap();
    s.submit(job(3, "read"), 0).unwrap();
    let sent = sends(&drain(&mut s, 0));
    let key = sent[0].idempotency_key.clone().unwrap();
    s.on_outcome(sent[2].attempt, ok(), 1); // job 3 completes before the crash
    let ledger = s.into_ledger();
    use rand::SeedableRng;
    let mut r = stampede_core::Scheduler::restore(
        Policy::default(),
        ledger,
        rand_chacha::ChaCha8Rng::seed_from_u64(1),
        100,
    )
    .unwrap();
    let mut seen = Vec::new();
    for t in (100..20_000).step_by(10) {
        seen.extend(sends(&drain(&mut r, t)));
    }
    let write: Vec<_> = seen.iter().filter(|x| x.job == 1).collect();
    assert_eq!(write.len(), 1);
    assert_eq!(
        write[0].kind,
        SendKind::Lookup(Box::new(LookupBy::IdempotencyKey(key.clone())))
    );
    let read: Vec<_> = seen.iter().filter(|x| x.job == 2).collect();
    assert_eq!(
        (read.len(), read[0].attempt_no),
        (1, 2),
        "safe in-flight work is re-queued, attempts counted"
    );
    assert!(
        seen.iter().all(|x| x.job != 3),
        "terminal actions stay terminal"
    );
}

#[test]
fn execution_budget_bounds_the_whole_run() {
    let mut policy = Policy::default();
    policy.execution_budget = Some(Duration::from_secs(1));
    let mut s = scheduler(policy);
    s.submit(job(1, "read"), 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    assert_eq!(s.next_wakeup(), Some(1_000));
    let done = finishes(&drain(&mut s, 1_000));
    assert_eq!(done[0].reason, Reason::ExecutionBudgetExhausted);
    s.on_outcome(send.attempt, ok(), 1_001);
    assert!(drain(&mut s, 1_001).is_empty());
    assert!(s.submit(job(2, "read"), 1_002).is_err());
}

#[test]
fn forgetting_ledger_keeps_memory_to_live_actions() {
    let mut s = stampede_core::Scheduler::new(
        Policy::default(),
        InMemoryLedger::forgetting_terminal(),
        rand::SeedableRng::seed_from_u64(3),
    )
    .unwrap();
    for id in 1..=1_000 {
        s.submit(job(id, "read"), id).unwrap();
        for send in sends(&drain(&mut s, id)) {
            s.on_outcome(send.attempt, ok(), id);
        }
        drain(&mut s, id);
    }
    assert!(
        s.ledger().len() <= 1,
        "terminal entries are forgotten: {}",
        s.ledger().len()
    );
    assert!(s
        .ledger()
        .entries()
        .unwrap()
        .iter()
        .all(|e| !e.state.is_terminal()));
}

#[test]
fn a_ledger_keeping_nothing_holds_no_entry_and_the_scheduler_says_what_is_live() {
    let mut s = scheduler_with(Policy::default(), InMemoryLedger::keeping_nothing());
    assert!(!s.ledger().keeps_entries());
    s.submit(job(1, "read"), 0).unwrap();
    s.submit(job(2, "uncertain_write"), 0).unwrap();
    let out = sends(&drain(&mut s, 0));
    let read = out.iter().find(|send| send.job == 1).unwrap();
    s.on_outcome(read.attempt, ok(), 5);
    drain(&mut s, 5);
    assert!(s.ledger().is_empty() && s.ledger().entries().unwrap().is_empty());
    let live = s.live_entries();
    assert_eq!(live.len(), 1, "the read ended; the write is on the wire");
    assert_eq!(live[0].job.id, 2);
    assert_eq!(live[0].state, stampede_core::ActionState::InFlight);
    assert!(
        live[0].job.idempotency_key.is_some(),
        "with the key it was persisted with"
    );
}

#[test]
fn naive_preset_blindly_resends_uncertain_writes_and_stampede_does_not() {
    let mut naive = scheduler(preset("naive").unwrap());
    naive.submit(job(1, "uncertain_write"), 0).unwrap();
    let first = sends(&drain(&mut naive, 0)).remove(0);
    assert_eq!(first.idempotency_key, None, "naive sends no key");
    naive.on_outcome(
        first.attempt,
        Outcome::Transport(TransportFailure::ReadTimeout),
        0,
    );
    let resend = sends(&drain(&mut naive, 1_000));
    assert_eq!(
        resend[0].kind,
        SendKind::Action,
        "a blind re-send after a fixed 1 s sleep"
    );
}

#[test]
fn unknown_scope_means_the_whole_account() {
    let mut s = scheduler(Policy::default());
    let mut j = job(1, "read");
    j.scope = None;
    s.submit(j, 0).unwrap();
    assert_eq!(sends(&drain(&mut s, 0))[0].scope.as_ref(), "account");
}

#[test]
fn delayed_work_wakes_at_its_not_before_time() {
    let mut s = scheduler(Policy::default());
    s.submit(job(1, "read"), 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(send.attempt, response(503, &[("retry-after", "3")]), 0);
    assert!(drain(&mut s, 0).is_empty());
    let wake = s.next_wakeup().expect("a timer is set");
    assert!((3_000..=4_000).contains(&wake), "{wake}");
    assert_eq!(s.gauges().delayed, 1);
    assert!(drain(&mut s, wake - 1).is_empty());
    assert_eq!(sends(&drain(&mut s, wake)).len(), 1);
}

#[test]
fn non_llm_routes_reserve_no_tokens() {
    let mut s = scheduler(scoped(None, Some(10)));
    s.submit(job(1, "read"), 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    assert_eq!((send.route, send.reserved_tokens), (Route::GetItem, 0));
}

#[test]
fn rate_blocked_job_past_its_deadline_fails_now() {
    let mut policy = scoped(Some(1), None);
    policy.workers = 4;
    let mut s = scheduler(policy);
    s.submit(job(1, "read"), 0).unwrap();
    let mut late = job(2, "read");
    late.deadline = Some(5_000); // the request bucket refills only after 60 s
    s.submit(late, 0).unwrap();
    let now = drain(&mut s, 0);
    assert_eq!(sends(&now).len(), 1);
    let done = finishes(&now);
    assert_eq!(
        done.len(),
        1,
        "fails at once instead of waiting for rate it cannot use"
    );
    assert_eq!(
        (done[0].job, done[0].reason.clone()),
        (2, Reason::DeadlineExceeded)
    );
    assert!(!done[0].sent);
}

#[test]
fn idempotency_key_in_use_on_an_uncertain_write_is_looked_up_not_resent() {
    let mut s = scheduler(Policy::default());
    s.submit(job(1, "tool"), 0).unwrap();
    let first = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(first.attempt, with_code(409, "idempotency_key_in_use"), 0);
    let mut next = Vec::new();
    for t in (0..20_000).step_by(10) {
        next.extend(sends(&drain(&mut s, t)));
        if !next.is_empty() {
            break;
        }
    }
    assert!(
        matches!(&next[0].kind, SendKind::Lookup(by)
            if matches!(**by, LookupBy::IdempotencyKey(_))),
        "{next:?}"
    );
}

#[test]
fn cancelling_a_coalesced_leader_hands_the_send_to_a_waiter() {
    let mut s = scheduler(Policy::default());
    for id in 1..=2 {
        let mut j = job(id, "read");
        j.resource = Some("item-1".into());
        j.coalescable = true;
        s.submit(j, 0).unwrap();
    }
    let leader = sends(&drain(&mut s, 0)).remove(0);
    assert_eq!(leader.job, 1);
    s.cancel_task("t1", "task-1", 1);
    let after = drain(&mut s, 1);
    assert_eq!(finishes(&after)[0].job, 1);
    let waiter = sends(&after);
    assert_eq!(waiter.len(), 1, "the waiting read sends itself");
    assert_eq!(waiter[0].job, 2);
    s.on_outcome(leader.attempt, ok(), 2); // the cancelled leader's late answer
    s.on_outcome(waiter[0].attempt, ok(), 2);
    let done = finishes(&drain(&mut s, 2));
    assert_eq!(
        done.iter().map(|d| (d.job, d.status)).collect::<Vec<_>>(),
        vec![(2, TerminalStatus::Completed)]
    );
}

#[test]
fn naive_preset_retries_quota_refusals_like_any_failure() {
    let mut s = scheduler(preset("naive").unwrap());
    s.submit(job(1, "llm"), 0).unwrap();
    let send = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(send.attempt, with_code(429, "insufficient_quota"), 0);
    assert_eq!(
        sends(&drain(&mut s, 1_000)).len(),
        1,
        "a fixed 1 s sleep, not the reset"
    );
}

#[test]
fn policy_is_data_with_defaults_and_clear_errors() {
    let policy: Policy = toml::from_str(
        r#"
        workers = 8
        share_scope_state = false
        [backoff]
        cap = "2s"
        [scopes."account:acme"]
        rpm = 600
        "#,
    )
    .unwrap();
    assert_eq!(policy.workers, 8);
    assert_eq!(policy.backoff.cap, Duration::from_secs(2));
    assert_eq!(
        policy.backoff.base,
        Duration::from_millis(500),
        "unset keys keep their defaults"
    );
    assert_eq!(policy.scope_budget("account:acme").rpm, Some(600));
    let err = toml::from_str::<Policy>("[backoff]\ncap = \"eight\"")
        .unwrap_err()
        .to_string();
    assert!(err.contains("eight") && err.contains("8s"), "{err}");
    let mut zero = Policy::default();
    zero.workers = 0;
    let err = stampede_core::Scheduler::new(
        zero,
        InMemoryLedger::new(),
        rand::SeedableRng::seed_from_u64(1),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("workers"), "{err}");
}

#[test]
fn scope_records_list_every_scope_in_order() {
    let mut s = scheduler(Policy::default());
    for (id, scope) in [(1, "b"), (2, "a")] {
        let mut j = job(id, "read");
        j.scope = Some(scope.into());
        s.submit(j, 0).unwrap();
    }
    drain(&mut s, 0);
    let ids: Vec<String> = s.scope_records().into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, vec!["a", "b"]);
    assert_eq!(s.scope_record("a").unwrap().in_flight, 1);
}

#[test]
fn delayed_submission_is_not_dispatched_before_not_before() {
    let mut s = scheduler(Policy::default());
    s.submit_not_before(job(1, "read"), 2_000, 0).unwrap();
    assert_eq!(s.gauges().delayed, 1);
    assert!(s.ledger().get(1).is_some(), "persisted at admission");
    assert!(drain(&mut s, 1_999).is_empty());
    assert_eq!(s.next_wakeup(), Some(2_000));
    assert_eq!(sends(&drain(&mut s, 2_000)).len(), 1);
}

#[test]
fn uncertain_write_out_of_time_before_its_lookup_stays_reconciliation_required() {
    let mut policy = Policy::default();
    policy.execution_budget = Some(Duration::from_secs(5));
    let mut s = scheduler(policy);
    s.submit(job(1, "uncertain_write"), 0).unwrap();
    let first = sends(&drain(&mut s, 0)).remove(0);
    // The look-up is throttled by the scope (Retry-After) past the run's end.
    s.on_outcome(first.attempt, response(502, &[]), 10);
    s.submit(job(2, "read"), 10).unwrap();
    let read = sends(&drain(&mut s, 10))
        .into_iter()
        .find(|x| x.job == 2)
        .unwrap();
    s.on_outcome(read.attempt, response(429, &[("retry-after", "60")]), 20);
    let done = finishes(&drain(&mut s, 5_000));
    let write = done
        .iter()
        .find(|d| d.job == 1)
        .expect("job 1 ends at the budget");
    assert_eq!(
        write.status,
        TerminalStatus::ReconciliationRequired,
        "its fate is unknown, not failed"
    );
    assert_eq!(
        s.ledger().get(1).unwrap().state,
        ActionState::ReconciliationRequired
    );
    assert!(write.next_actions.contains(&NextAction::QueryStatus));
}

#[test]
fn retries_released_by_one_retry_after_are_spread_not_a_wave() {
    let mut policy = Policy::default();
    policy.retry_budgets.per_scope.enabled = false;
    let mut s = scheduler(policy);
    for id in 1..=30 {
        s.submit(job(id, "read"), 0).unwrap();
    }
    for send in sends(&drain(&mut s, 0)) {
        s.on_outcome(send.attempt, response(429, &[("retry-after", "2")]), 0);
    }
    let mut times = Vec::new();
    for t in 0..=3_000 {
        times.extend(sends(&drain(&mut s, t)).iter().map(|_| t));
    }
    assert_eq!(times.len(), 30);
    assert!(
        times.iter().all(|&t| (2_000..=3_000).contains(&t)),
        "never before the wait, within the spread"
    );
    times.dedup();
    assert!(
        times.len() > 15,
        "only {} distinct retry times: a wave",
        times.len()
    );
}

#[test]
fn scope_reopened_after_retry_after_drains_paced_not_as_a_burst() {
    // 60 requests a minute on the scope: once reopened, one a second.
    let mut policy = scoped(Some(60), None);
    policy.workers = 64;
    policy.retry_after.spread = Duration::ZERO;
    let mut s = scheduler(policy);
    s.submit(job(1, "llm"), 0).unwrap();
    let first = sends(&drain(&mut s, 0)).remove(0);
    s.on_outcome(first.attempt, response(429, &[("retry-after", "30")]), 100);
    for id in 2..=41 {
        s.submit(job(id, "llm"), 100).unwrap();
    }
    assert!(
        sends(&drain(&mut s, 30_099)).is_empty(),
        "the scope is closed"
    );
    // The budget that would have built up while the scope was closed is not spent at once.
    let mut sent = 0;
    let mut at_reopening = 0;
    for now in (30_100..=40_100).step_by(100) {
        let n = sends(&drain(&mut s, now)).len();
        if now == 30_100 {
            at_reopening = n;
        }
        sent += n;
    }
    assert!(
        at_reopening <= 1,
        "{at_reopening} sent the moment the scope reopened"
    );
    assert!(
        (9..=12).contains(&sent),
        "{sent} sent in the 10 s after reopening: paced at one a second, not a burst"
    );
}

/// Scope "acct" with a request bucket of 10 a minute (one token every 6 s) and 30 % of it
/// held back from bulk work.
fn reserved(rpm: Option<u32>, tpm: Option<u32>) -> Policy {
    let mut policy = scoped(rpm, tpm);
    policy.scopes.get_mut("acct").unwrap().reserve = Some(0.3);
    policy
}

fn bulk(id: u64, class: &str) -> stampede_core::Job {
    let mut j = job(id, class);
    j.tenant = "bulk".into();
    j.priority = Priority::Bulk;
    j
}

/// Sends everything due at `now`, answering each with a 200 at once (no slot stays held)
/// and draining the completions; the jobs sent, in order.
fn send_and_answer(s: &mut stampede_core::Scheduler, now: u64) -> Vec<u64> {
    let mut jobs = Vec::new();
    loop {
        let sent = sends(&drain(s, now));
        if sent.is_empty() {
            return jobs;
        }
        for send in &sent {
            s.on_outcome(send.attempt, ok(), now);
            jobs.push(send.job);
        }
    }
}

#[test]
fn scope_reserve_holds_bulk_back_but_not_normal_work() {
    let mut s = scheduler(reserved(Some(10), None));
    for id in 1..=10 {
        s.submit(bulk(id, "read"), 0).unwrap();
    }
    // A full bucket of 10 with 30 % reserved: bulk sends 7 and waits, holding no slot.
    assert_eq!(send_and_answer(&mut s, 0), (1..=7).collect::<Vec<_>>());
    assert_eq!(s.gauges().in_flight, 0);
    // Bulk waits for the level to come back to 3 + 1 tokens: one token, 6 s.
    assert_eq!(s.next_wakeup(), Some(6_000));
    // A normal job goes at once, into the reserved part.
    let mut normal = job(20, "read");
    normal.tenant = "interactive".into();
    s.submit(normal, 10).unwrap();
    assert_eq!(send_and_answer(&mut s, 10), vec![20]);
    // 2 tokens left plus what refilled: bulk now needs two more, at 12 s, not sooner.
    assert_eq!(s.next_wakeup(), Some(12_000));
    assert!(send_and_answer(&mut s, 11_999).is_empty());
    // Bulk resumes as the bucket refills, one send per refilled token above the reserve.
    assert_eq!(send_and_answer(&mut s, 12_000), vec![8]);
    assert_eq!(s.next_wakeup(), Some(18_000));
    assert_eq!(send_and_answer(&mut s, 18_000), vec![9]);
    // Refilled to full, bulk takes its 7 again.
    assert_eq!(send_and_answer(&mut s, 120_000), vec![10]);
}

#[test]
fn scope_reserve_holds_the_token_bucket_too_and_critical_work_uses_it() {
    // 1,000 tokens a minute, 200 per call (100 prompt + 100 output): bulk leaves 300.
    let mut s = scheduler(reserved(None, Some(1_000)));
    for id in 1..=5 {
        s.submit(bulk(id, "llm"), 0).unwrap();
    }
    assert_eq!(send_and_answer(&mut s, 0), vec![1, 2, 3]);
    let mut critical = job(20, "llm");
    critical.priority = Priority::Critical;
    s.submit(critical, 0).unwrap();
    let mut normal = job(21, "llm");
    normal.tenant = "interactive".into();
    s.submit(normal, 0).unwrap();
    // Each answer reports no usage: the reservation is kept, 400 then 200 then 0 left.
    assert_eq!(send_and_answer(&mut s, 0), vec![20, 21]);
}

#[test]
fn without_a_reserve_bulk_takes_the_whole_bucket() {
    let mut s = scheduler(scoped(Some(10), None));
    for id in 1..=12 {
        s.submit(bulk(id, "read"), 0).unwrap();
    }
    assert_eq!(send_and_answer(&mut s, 0), (1..=10).collect::<Vec<_>>());
}

#[test]
fn bulk_held_by_the_reserve_still_fails_at_its_deadline() {
    let mut s = scheduler(reserved(Some(10), None));
    for id in 1..=7 {
        s.submit(bulk(id, "read"), 0).unwrap();
    }
    assert_eq!(send_and_answer(&mut s, 0).len(), 7);
    // The reserve frees a token for bulk only at 6 s: a 5 s deadline fails now.
    let mut early = bulk(8, "read");
    early.deadline = Some(5_000);
    s.submit(early, 0).unwrap();
    let now = drain(&mut s, 0);
    assert!(sends(&now).is_empty(), "{now:?}");
    let done = finishes(&now);
    assert_eq!(
        done.iter()
            .map(|t| (t.job, t.reason.clone()))
            .collect::<Vec<_>>(),
        vec![(8, Reason::DeadlineExceeded)]
    );
    assert!(!done[0].sent);
    // One due at 7 s waits for 6 s. Normal work then takes a token at 5 s, so bulk would
    // need until 12 s: it fails there and then, not at some later wake-up.
    let mut later = bulk(9, "read");
    later.deadline = Some(7_000);
    s.submit(later, 0).unwrap();
    assert!(drain(&mut s, 0).is_empty());
    assert_eq!(s.next_wakeup(), Some(6_000));
    let mut normal = job(20, "read");
    normal.tenant = "interactive".into();
    s.submit(normal, 5_000).unwrap();
    let then = drain(&mut s, 5_000);
    assert_eq!(
        sends(&then).iter().map(|x| x.job).collect::<Vec<_>>(),
        vec![20]
    );
    assert_eq!(
        finishes(&then)
            .iter()
            .map(|t| (t.job, t.reason.clone()))
            .collect::<Vec<_>>(),
        vec![(9, Reason::DeadlineExceeded)]
    );
}

#[test]
fn scope_reserve_is_validated_and_left_out_when_unset() {
    let policy: Policy = toml::from_str(
        r#"
        [scopes."account:acme"]
        rpm = 600
        reserve = 0.3
        "#,
    )
    .unwrap();
    assert_eq!(policy.scope_budget("account:acme").reserve, Some(0.3));
    assert!(policy.validate().is_ok());
    for bad in [0.0, 1.0, 1.5, -0.2, f64::NAN] {
        let mut policy = reserved(Some(10), None);
        policy.scopes.get_mut("acct").unwrap().reserve = Some(bad);
        let err = policy.validate().unwrap_err();
        assert!(err.starts_with("scopes.acct.reserve = "), "{err}");
        let err = stampede_core::Scheduler::new(
            policy,
            InMemoryLedger::new(),
            rand::SeedableRng::seed_from_u64(1),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("scopes.acct.reserve"), "{err}");
    }
    let mut policy = Policy::default();
    policy.default_scope.reserve = Some(2.0);
    let err = policy.validate().unwrap_err();
    assert!(err.starts_with("default_scope.reserve = 2"), "{err}");
    // Unset, it is not written: serialized policies do not change.
    let written = serde_json::to_string(&scoped(Some(10), None)).unwrap();
    assert!(!written.contains("reserve"), "{written}");
    let written = serde_json::to_string(&reserved(Some(10), None)).unwrap();
    assert!(written.contains("\"reserve\":0.3"), "{written}");
}
