//! One test per routing and degradation rule of DESIGN.md ("The client policy the core
//! implements"): fallbacks, reconcile before falling back, and the degradation ladder.
#![allow(clippy::field_reassign_with_default)]

use crate::common;

use std::collections::BTreeMap;

use common::*;
use proptest::prelude::*;
use stampede_core::{
    preset, AuditKind, Command, FallbackRoute, FallbackWhen, Job, Millis, NextAction, Outcome,
    Policy, Priority, Reason, RoutePlan, Rung, RungKind, ScopeBudget, SendAttempt, SendKind,
    TerminalStatus, TransportFailure,
};

const BACKUP: &str = "sk-backup-credential";
const SPARE: &str = "sk-spare-credential";

fn route(credential: &str, scope: &str, when: &[FallbackWhen]) -> FallbackRoute {
    FallbackRoute {
        credential: credential.into(),
        scope: Some(scope.into()),
        model: None,
        when: when.to_vec(),
    }
}

/// The default policy with one plan for the test credential.
fn routed(fallbacks: Vec<FallbackRoute>) -> Policy {
    let mut policy = Policy::default();
    policy.routing.plans.push(RoutePlan {
        primary: CREDENTIAL.into(),
        fallbacks,
    });
    policy
}

fn backup_on(when: &[FallbackWhen]) -> Policy {
    routed(vec![route(BACKUP, "backup", when)])
}

fn one_send(s: &mut stampede_core::Scheduler, now: Millis) -> SendAttempt {
    let mut out = sends(&drain(s, now));
    assert_eq!(out.len(), 1, "one send due at {now}: {out:?}");
    out.remove(0)
}

/// Drives one job: answers each of its sends with the next outcome (10 ms later) until it
/// ends or the outcomes run out; returns every send and the terminal.
fn play(
    s: &mut stampede_core::Scheduler,
    outcomes: &[Outcome],
) -> (Vec<SendAttempt>, Option<stampede_core::Terminal>) {
    play_from(s, 0, outcomes)
}

/// `play` from time `start` (ms).
fn play_from(
    s: &mut stampede_core::Scheduler,
    start: Millis,
    outcomes: &[Outcome],
) -> (Vec<SendAttempt>, Option<stampede_core::Terminal>) {
    let mut sent = Vec::new();
    let mut now = start;
    let mut next = outcomes.iter();
    loop {
        let commands = drain(s, now);
        for command in commands {
            match command {
                Command::Send(send) => {
                    let Some(outcome) = next.next() else {
                        sent.push(send);
                        return (sent, None);
                    };
                    s.on_outcome(send.attempt, outcome.clone(), now + 10);
                    sent.push(send);
                }
                Command::Finish(done) => return (sent, Some(done)),
            }
        }
        now = match s.next_wakeup() {
            Some(at) => at.max(now + 10),
            None => now + 10,
        };
        assert!(now < 10_000_000, "the job never ended");
    }
}

fn status(code: u16) -> Outcome {
    response(code, &[])
}

// ---------------------------------------------------------------------------------------
// Routing

#[test]
fn a_job_follows_the_plan_of_its_credential_only() {
    let mut s = scheduler(backup_on(&[FallbackWhen::PrimaryUnavailable]));
    let mut other = job(2, "llm");
    other.credential = "sk-unrouted".into();
    s.submit(job(1, "llm"), 0).unwrap();
    s.submit(other, 0).unwrap();
    let first = sends(&drain(&mut s, 0));
    assert_eq!(first.len(), 2);
    for send in &first {
        assert_eq!(send.fallback, None);
        s.on_outcome(send.attempt, status(503), 10);
    }
    let moved = sends(&drain(&mut s, 10));
    assert_eq!(
        moved.len(),
        1,
        "only the routed job moves at once: {moved:?}"
    );
    assert_eq!(moved[0].job, 1);
    assert_eq!(moved[0].credential.as_ref(), BACKUP);
    assert_eq!(moved[0].scope.as_ref(), "backup");
    assert_eq!(moved[0].fallback, Some(FallbackWhen::PrimaryUnavailable));
    // The unrouted job retries on its own route after a backoff.
    let (_, retry) = (10..60_000)
        .step_by(10)
        .find_map(|t| {
            let out = sends(&drain(&mut s, t));
            out.into_iter().next().map(|send| (t, send))
        })
        .expect("the unrouted job retries");
    assert_eq!(retry.job, 2);
    assert_eq!(retry.credential.as_ref(), "sk-unrouted");
    assert_eq!(retry.fallback, None);
}

#[test]
fn fallback_goes_to_the_first_later_route_listing_the_condition() {
    // Five identical 503s would open the breaker on the payload's path (it does not
    // tell routes apart); this test is about the order of routes.
    let mut policy = routed(vec![
        route(BACKUP, "backup", &[FallbackWhen::ContextLengthNeeded]),
        route(SPARE, "spare", &[FallbackWhen::PrimaryUnavailable]),
        route(BACKUP, "backup", &[FallbackWhen::PrimaryUnavailable]),
    ]);
    policy.breaker.enabled = false;
    let mut s = scheduler(policy);
    s.submit(job(1, "llm"), 0).unwrap();
    let first = one_send(&mut s, 0);
    s.on_outcome(first.attempt, status(503), 10);
    let second = one_send(&mut s, 10);
    assert_eq!(
        (second.credential.as_ref(), second.scope.as_ref()),
        (SPARE, "spare")
    );
    // From the spare, the next route listing the condition is the third one, not an
    // earlier route.
    s.on_outcome(second.attempt, status(503), 20);
    let third = one_send(&mut s, 20);
    assert_eq!(
        (third.credential.as_ref(), third.scope.as_ref()),
        (BACKUP, "backup")
    );
    assert_eq!(third.fallback, Some(FallbackWhen::PrimaryUnavailable));
    // No route after the last: it retries where it is, under the normal rules.
    s.on_outcome(third.attempt, status(503), 30);
    let (rest, done) = play_from(&mut s, 30, &[status(503), status(503)]);
    assert!(rest
        .iter()
        .all(|send| &*send.credential == BACKUP && send.fallback.is_none()));
    assert_eq!(done.unwrap().reason, Reason::AttemptsExhausted);
}

#[test]
fn each_route_gets_the_class_max_attempts_afresh() {
    let mut s = scheduler(backup_on(&[FallbackWhen::RateLimitAfterRetryBudget]));
    s.submit(job(1, "llm"), 0).unwrap();
    let (sent, done) = play(&mut s, &vec![status(429); 6]);
    let on = |credential: &str| sent.iter().filter(|s| &*s.credential == credential).count();
    assert_eq!(
        (on(CREDENTIAL), on(BACKUP)),
        (3, 3),
        "llm max_attempts = 3 per route"
    );
    let first_backup = sent.iter().find(|s| &*s.credential == BACKUP).unwrap();
    assert_eq!(
        first_backup.fallback,
        Some(FallbackWhen::RateLimitAfterRetryBudget)
    );
    assert!(sent
        .iter()
        .all(|s| s.idempotency_key == sent[0].idempotency_key));
    let done = done.unwrap();
    assert_eq!(done.reason, Reason::AttemptsExhausted);
    assert_eq!(done.attempts, 6);
}

#[test]
fn a_429_moves_on_only_when_the_retry_budget_on_its_route_ends() {
    let mut s = scheduler(backup_on(&[FallbackWhen::RateLimitAfterRetryBudget]));
    s.submit(job(1, "llm"), 0).unwrap();
    let (sent, _) = play(&mut s, &[status(429), status(429)]);
    assert_eq!(sent.len(), 3);
    assert!(
        sent.iter().all(|s| &*s.credential == CREDENTIAL),
        "{sent:?}"
    );
    // A Retry-After longer than the wait budget ends the budget at once: move on.
    let mut policy = backup_on(&[FallbackWhen::RateLimitAfterRetryBudget]);
    policy.classes.get_mut("llm").unwrap().max_wait = std::time::Duration::from_secs(5);
    let mut s = scheduler(policy);
    s.submit(job(1, "llm"), 0).unwrap();
    let first = one_send(&mut s, 0);
    s.on_outcome(first.attempt, response(429, &[("retry-after", "30")]), 10);
    let moved = one_send(&mut s, 10);
    assert_eq!(moved.credential.as_ref(), BACKUP);
}

#[test]
fn first_fallback_attempt_goes_without_backoff_but_waits_for_the_new_scope() {
    let mut s = scheduler(backup_on(&[FallbackWhen::PrimaryUnavailable]));
    // Another job on the backup scope learns a 10 s Retry-After there.
    let mut neighbour = job(2, "llm");
    neighbour.credential = BACKUP.into();
    neighbour.scope = Some("backup".into());
    s.submit(neighbour, 0).unwrap();
    let n = one_send(&mut s, 0);
    s.on_outcome(n.attempt, response(429, &[("retry-after", "10")]), 5);
    assert!(sends(&drain(&mut s, 5)).is_empty());
    s.submit(job(1, "llm"), 5).unwrap();
    let first = one_send(&mut s, 5);
    s.on_outcome(first.attempt, status(503), 20);
    assert!(
        sends(&drain(&mut s, 20)).is_empty(),
        "the backup scope is waiting"
    );
    let wake = s.next_wakeup().expect("a wake-up for the backup scope");
    assert!((10_005..=11_005).contains(&wake), "{wake}");
    let later = sends(&drain(&mut s, 10_005));
    assert!(later
        .iter()
        .any(|send| send.job == 1 && &*send.credential == BACKUP));

    // Without a published wait the move is immediate: no backoff delay.
    let mut s = scheduler(backup_on(&[FallbackWhen::PrimaryUnavailable]));
    s.submit(job(1, "llm"), 0).unwrap();
    let first = one_send(&mut s, 0);
    s.on_outcome(first.attempt, status(503), 10);
    assert_eq!(one_send(&mut s, 10).credential.as_ref(), BACKUP);
}

#[test]
fn task_budget_and_deadline_still_bound_the_whole_action() {
    let mut policy = backup_on(&[FallbackWhen::PrimaryUnavailable]);
    policy.retry_budgets.per_task.max_retries = 0;
    let mut s = scheduler(policy);
    s.submit(job(1, "llm"), 0).unwrap();
    let (sent, done) = play(&mut s, &[status(503)]);
    assert_eq!(sent.len(), 1);
    assert_eq!(done.unwrap().reason, Reason::TaskBudgetExhausted);

    // The backup scope asks for a wait past the deadline: the action fails now.
    let mut s = scheduler(backup_on(&[FallbackWhen::PrimaryUnavailable]));
    let mut neighbour = job(2, "llm");
    neighbour.credential = BACKUP.into();
    neighbour.scope = Some("backup".into());
    s.submit(neighbour, 0).unwrap();
    let n = one_send(&mut s, 0);
    s.on_outcome(n.attempt, response(429, &[("retry-after", "30")]), 5);
    let _ = drain(&mut s, 5);
    let mut j = job(1, "llm");
    j.deadline = Some(5_000);
    s.submit(j, 5).unwrap();
    let first = one_send(&mut s, 5);
    s.on_outcome(first.attempt, status(503), 20);
    let after = drain(&mut s, 20);
    assert!(sends(&after).is_empty());
    let done = finishes(&after);
    assert_eq!(done[0].reason, Reason::DeadlineExceeded);
}

#[test]
fn reconcile_before_fallback_keeps_an_uncertain_action_on_its_route_with_the_same_key() {
    let mut s = scheduler(backup_on(&[
        FallbackWhen::ProviderFiveXx,
        FallbackWhen::PrimaryUnavailable,
    ]));
    s.submit(job(1, "llm"), 0).unwrap();
    // A 500 may have executed; the 503 after it does not settle that.
    let (sent, done) = play(&mut s, &[status(500), status(503), ok()]);
    assert_eq!(sent.len(), 3);
    assert!(
        sent.iter()
            .all(|s| &*s.credential == CREDENTIAL && &*s.scope == "acct" && s.fallback.is_none()),
        "{sent:?}"
    );
    assert!(sent
        .iter()
        .all(|s| s.idempotency_key == sent[0].idempotency_key));
    assert_eq!(done.unwrap().status, TerminalStatus::Completed);
    let audit = s.drain_audit();
    let withheld: Vec<_> = audit
        .iter()
        .filter(|e| e.kind == AuditKind::FallbackWithheld)
        .collect();
    assert_eq!(withheld.len(), 2, "{audit:?}");
    assert!(withheld[0].detail.text().contains("reason=provider_5xx"));
    assert!(audit.iter().all(|e| e.kind != AuditKind::Fallback));
}

#[test]
fn timeouts_and_drops_after_the_write_are_reconciled_on_the_route_too() {
    for uncertain in [
        Outcome::Transport(TransportFailure::ReadTimeout),
        Outcome::Transport(TransportFailure::ResetAfterWrite),
        status(502),
        status(504),
    ] {
        let mut s = scheduler(backup_on(&[FallbackWhen::ProviderFiveXx]));
        s.submit(job(1, "llm"), 0).unwrap();
        let (sent, _) = play(&mut s, &[uncertain.clone(), ok()]);
        assert!(
            sent.iter().all(|s| &*s.credential == CREDENTIAL),
            "{uncertain:?}"
        );
    }
}

#[test]
fn a_lookup_that_finds_nothing_settles_the_route() {
    let mut s = scheduler(backup_on(&[
        FallbackWhen::ProviderFiveXx,
        FallbackWhen::PrimaryUnavailable,
    ]));
    s.submit(job(1, "tool"), 0).unwrap();
    let answers = [
        status(500),
        Outcome::Lookup(stampede_core::LookupResult::Absent),
        status(503),
        ok(),
    ];
    let (sent, done) = play(&mut s, &answers);
    let kinds: Vec<(bool, &str)> = sent
        .iter()
        .map(|s| (s.kind == SendKind::Action, s.credential.as_ref()))
        .collect();
    // The uncertain write is looked up on its route (never crossed); the look-up says it
    // did not execute, so the 503 after the re-send may cross.
    assert_eq!(
        kinds,
        vec![
            (true, CREDENTIAL),
            (false, CREDENTIAL),
            (true, CREDENTIAL),
            (true, BACKUP)
        ]
    );
    assert_eq!(done.unwrap().status, TerminalStatus::Completed);
}

#[test]
fn uncertain_action_out_of_budget_offers_a_status_query_and_never_claims_it_did_not_execute() {
    let mut s = scheduler(backup_on(&[FallbackWhen::ProviderFiveXx]));
    s.submit(job(1, "llm"), 0).unwrap();
    let (sent, done) = play(&mut s, &vec![status(500); 3]);
    assert!(sent.iter().all(|s| &*s.credential == CREDENTIAL));
    let done = done.unwrap();
    assert_eq!(done.reason, Reason::AttemptsExhausted);
    assert!(
        done.next_actions.contains(&NextAction::QueryStatus),
        "{done:?}"
    );
    assert!(!done.next_actions.contains(&NextAction::SendNewOperation {
        may_duplicate: false
    }));

    // The same budget ending without any routing keeps today's next actions.
    let mut s = scheduler(Policy::default());
    s.submit(job(1, "llm"), 0).unwrap();
    let (_, plain) = play(&mut s, &vec![status(500); 3]);
    assert!(!plain
        .unwrap()
        .next_actions
        .contains(&NextAction::QueryStatus));
}

#[test]
fn naive_router_crosses_at_once_even_after_an_attempt_that_may_have_executed() {
    let mut policy = backup_on(&[FallbackWhen::ProviderFiveXx]);
    policy.routing.reconcile_before_fallback = false;
    let mut s = scheduler(policy);
    s.submit(job(1, "llm"), 0).unwrap();
    let first = one_send(&mut s, 0);
    s.on_outcome(first.attempt, status(500), 10);
    let moved = one_send(&mut s, 10);
    assert_eq!(moved.credential.as_ref(), BACKUP);
    assert_eq!(moved.fallback, Some(FallbackWhen::ProviderFiveXx));
    assert!(s
        .drain_audit()
        .iter()
        .any(|e| e.kind == AuditKind::Fallback));
    // The naive preset routes this way.
    assert!(!preset("naive").unwrap().routing.reconcile_before_fallback);
}

#[test]
fn never_arrived_failures_cross_even_when_reconciling() {
    for never in [
        status(503),
        Outcome::Transport(TransportFailure::ConnectRefused),
        Outcome::Transport(TransportFailure::ResetBeforeWrite),
    ] {
        let mut s = scheduler(backup_on(&[FallbackWhen::PrimaryUnavailable]));
        s.submit(job(1, "llm"), 0).unwrap();
        let first = one_send(&mut s, 0);
        s.on_outcome(first.attempt, never.clone(), 10);
        assert_eq!(
            one_send(&mut s, 10).credential.as_ref(),
            BACKUP,
            "{never:?}"
        );
    }
    // A 429 is not "unavailable": it slows the scope, it does not move the action.
    let mut s = scheduler(backup_on(&[FallbackWhen::PrimaryUnavailable]));
    s.submit(job(1, "llm"), 0).unwrap();
    let (sent, _) = play(&mut s, &[status(429), ok()]);
    assert!(sent.iter().all(|s| &*s.credential == CREDENTIAL));
}

#[test]
fn a_stream_that_delivered_tokens_never_falls_back() {
    let mut s = scheduler(routed(vec![route(
        BACKUP,
        "backup",
        &[
            FallbackWhen::ProviderFiveXx,
            FallbackWhen::PrimaryUnavailable,
            FallbackWhen::ContextLengthNeeded,
            FallbackWhen::RateLimitAfterRetryBudget,
        ],
    )]));
    let mut j = job(1, "llm");
    j.stream = true;
    s.submit(j, 0).unwrap();
    let first = one_send(&mut s, 0);
    let cut = Outcome::Transport(TransportFailure::StreamCut {
        tokens_delivered: 3,
    });
    s.on_outcome(first.attempt, cut, 10);
    let after = drain(&mut s, 60_000);
    assert!(sends(&after).is_empty());
    assert_eq!(finishes(&after)[0].reason, Reason::StreamInterrupted);
}

#[test]
fn a_cancelled_action_never_falls_back() {
    let mut s = scheduler(backup_on(&[FallbackWhen::PrimaryUnavailable]));
    s.submit(job(1, "llm"), 0).unwrap();
    let first = one_send(&mut s, 0);
    s.cancel_task("t1", "task-1", 5);
    let cancelled = finishes(&drain(&mut s, 5));
    assert_eq!(cancelled[0].reason, Reason::Cancelled);
    s.on_outcome(first.attempt, status(503), 10);
    assert!(drain(&mut s, 10).is_empty());
    assert!(s.next_wakeup().is_none());
}

#[test]
fn context_length_moves_to_a_route_with_a_bigger_model() {
    let mut big = route(BACKUP, "backup", &[FallbackWhen::ContextLengthNeeded]);
    big.model = Some("big-128k".into());
    let mut s = scheduler(routed(vec![big]));
    let mut j = job(1, "llm");
    j.model = Some("small-8k".into());
    s.submit(j, 0).unwrap();
    let first = one_send(&mut s, 0);
    assert_eq!(first.model.as_deref(), Some("small-8k"));
    s.on_outcome(first.attempt, with_code(400, "context_length_exceeded"), 10);
    let moved = one_send(&mut s, 10);
    assert_eq!(moved.model.as_deref(), Some("big-128k"));
    assert_eq!(moved.fallback, Some(FallbackWhen::ContextLengthNeeded));
    // Without a route for it, a context-length failure still won't improve.
    let mut s = scheduler(Policy::default());
    s.submit(job(1, "llm"), 0).unwrap();
    let (_, done) = play(&mut s, &[with_code(400, "context_length_exceeded")]);
    assert!(matches!(done.unwrap().reason, Reason::WontImprove { .. }));
}

#[test]
fn fallback_is_audited_with_scopes_and_never_a_credential() {
    let mut s = scheduler(backup_on(&[FallbackWhen::PrimaryUnavailable]));
    s.submit(job(1, "llm"), 0).unwrap();
    let _ = play(&mut s, &[status(503), ok()]);
    let audit = s.drain_audit();
    let moved: Vec<_> = audit
        .iter()
        .filter(|e| e.kind == AuditKind::Fallback)
        .collect();
    assert_eq!(moved.len(), 1);
    assert_eq!(
        moved[0].detail,
        "reason=primary_unavailable route=1 from_scope=acct to_scope=backup"
    );
    for event in &audit {
        assert!(
            !event.detail.text().contains(CREDENTIAL) && !event.detail.text().contains(BACKUP),
            "{event:?}"
        );
    }
}

#[test]
fn plans_for_other_credentials_change_nothing() {
    let script = |policy: Policy| {
        let mut s = scheduler(policy);
        let mut all = Vec::new();
        for id in 1..=4 {
            s.submit(job(id, "llm"), 0).unwrap();
        }
        let answers = [status(503), status(500), status(429), ok()];
        let mut n = 0;
        for t in (0..120_000).step_by(50) {
            for command in drain(&mut s, t) {
                if let Command::Send(send) = &command {
                    s.on_outcome(send.attempt, answers[n % answers.len()].clone(), t + 20);
                    n += 1;
                }
                all.push(command);
            }
        }
        (all, s.drain_audit())
    };
    let mut other = Policy::default();
    other.routing.plans.push(RoutePlan {
        primary: "sk-somebody-else".into(),
        fallbacks: vec![route(BACKUP, "backup", &[FallbackWhen::ProviderFiveXx])],
    });
    assert_eq!(script(Policy::default()), script(other));
}

// ---------------------------------------------------------------------------------------
// Degradation

fn rung(at_queued: u64, kind: RungKind) -> Rung {
    Rung {
        at_queued,
        kind,
        priorities: vec![Priority::Normal, Priority::Bulk],
        factor: None,
        model: None,
    }
}

fn laddered(rungs: Vec<Rung>, workers: u32) -> Policy {
    let mut policy = Policy::default();
    policy.workers = workers;
    policy.degradation = rungs;
    policy
}

#[test]
fn trim_output_rung_cuts_output_and_context_while_the_queue_is_long() {
    let mut s = scheduler(laddered(vec![rung(3, RungKind::TrimOutput)], 1));
    for id in 1..=4 {
        s.submit(job(id, "llm"), 0).unwrap();
    }
    let mut seen = Vec::new();
    let mut now = 0;
    while seen.len() < 4 {
        let send = one_send(&mut s, now);
        seen.push((send.reserved_tokens, send.degraded));
        now += 10;
        s.on_outcome(send.attempt, ok(), now);
    }
    // Pressure counts the job being dispatched: 4, 3 (trimmed), then 2, 1 (not).
    let trimmed = (100, Some(RungKind::TrimOutput));
    let whole = (200, None);
    assert_eq!(seen, vec![trimmed, trimmed, whole, whole]);
}

#[test]
fn trim_keeps_at_least_one_token() {
    let mut tiny = rung(1, RungKind::TrimOutput);
    tiny.factor = Some(0.001);
    let mut s = scheduler(laddered(vec![tiny], 1));
    s.submit(job(1, "llm"), 0).unwrap();
    assert_eq!(one_send(&mut s, 0).reserved_tokens, 2);
}

#[test]
fn retries_keep_the_shape_of_the_first_attempt() {
    let mut s = scheduler(laddered(vec![rung(2, RungKind::TrimOutput)], 1));
    s.submit(job(1, "llm"), 0).unwrap();
    s.submit(job(2, "llm"), 0).unwrap();
    let first = one_send(&mut s, 0);
    assert_eq!((first.job, first.reserved_tokens), (1, 100));
    s.on_outcome(first.attempt, status(503), 10);
    // Job 2 goes (the queue is short now: not trimmed), then job 1's retry keeps its trim.
    let second = one_send(&mut s, 10);
    assert_eq!((second.job, second.reserved_tokens), (2, 200));
    s.on_outcome(second.attempt, ok(), 20);
    let retry = (20..60_000)
        .step_by(10)
        .find_map(|t| sends(&drain(&mut s, t)).into_iter().next())
        .expect("job 1 retries");
    let retry = [retry];
    assert_eq!(retry[0].job, 1);
    assert_eq!(retry[0].reserved_tokens, 100);
    assert_eq!(retry[0].degraded, Some(RungKind::TrimOutput));
}

#[test]
fn smaller_model_rung_changes_the_model_and_stacks_with_trim() {
    let mut smaller = rung(3, RungKind::SmallerModel);
    smaller.model = Some("mini".into());
    let mut s = scheduler(laddered(vec![rung(2, RungKind::TrimOutput), smaller], 1));
    for id in 1..=3 {
        let mut j = job(id, "llm");
        j.model = Some("large".into());
        s.submit(j, 0).unwrap();
    }
    let first = one_send(&mut s, 0);
    assert_eq!(first.model.as_deref(), Some("mini"));
    assert_eq!(first.reserved_tokens, 100);
    assert_eq!(
        first.degraded,
        Some(RungKind::SmallerModel),
        "the most severe rung"
    );
    s.on_outcome(first.attempt, ok(), 10);
    let second = one_send(&mut s, 10);
    assert_eq!(second.model.as_deref(), Some("large"));
    assert_eq!(second.degraded, Some(RungKind::TrimOutput));
}

#[test]
fn critical_work_is_never_degraded_by_default() {
    let mut s = scheduler(laddered(
        vec![rung(1, RungKind::TrimOutput), rung(1, RungKind::Cached)],
        1,
    ));
    let mut j = job(1, "llm");
    j.priority = Priority::Critical;
    s.submit(j, 0).unwrap();
    let send = one_send(&mut s, 0);
    assert_eq!((send.reserved_tokens, send.degraded), (200, None));
}

#[test]
fn cached_rung_answers_without_a_send_even_when_every_worker_is_busy() {
    let mut s = scheduler(laddered(vec![rung(3, RungKind::Cached)], 1));
    s.submit(job(1, "llm"), 0).unwrap();
    let busy = one_send(&mut s, 0);
    for id in 2..=4 {
        s.submit(job(id, "llm"), 1).unwrap();
    }
    // Three wait, the one worker is busy: the first in line is answered from the cache.
    let now = drain(&mut s, 1);
    assert!(sends(&now).is_empty());
    let cached = finishes(&now);
    assert_eq!(
        cached.len(),
        1,
        "pressure fell below the rung after one: {now:?}"
    );
    assert_eq!(cached[0].job, 2);
    assert_eq!(cached[0].status, TerminalStatus::Completed);
    assert_eq!(
        cached[0].reason,
        Reason::Degraded {
            rung: RungKind::Cached
        }
    );
    assert!(!cached[0].sent && cached[0].attempts == 0 && cached[0].next_actions.is_empty());
    s.on_outcome(busy.attempt, ok(), 10);
    assert_eq!(one_send(&mut s, 10).job, 3);
}

#[test]
fn pause_bulk_holds_bulk_work_while_other_work_waits_then_releases_it() {
    let mut policy = laddered(vec![rung(1, RungKind::PauseBulk)], 10);
    policy.scopes.insert(
        "acct".into(),
        ScopeBudget {
            rpm: Some(1),
            tpm: None,
            concurrency: None,
            reserve: None,
            max_delayed_requests: None,
        },
    );
    let mut s = scheduler(policy);
    let mut bulk = job(9, "llm");
    bulk.priority = Priority::Bulk;
    bulk.scope = Some("other".into());
    let mut late = job(10, "llm");
    late.priority = Priority::Bulk;
    // Its own lane: like a rate-blocked lane, a held lane checks its head's deadline.
    late.scope = Some("late".into());
    late.deadline = Some(5_000);
    s.submit(job(1, "llm"), 0).unwrap();
    s.submit(job(2, "llm"), 0).unwrap();
    s.submit(bulk, 0).unwrap();
    s.submit(late, 0).unwrap();
    // Job 1 takes the scope's one request a minute; job 2 waits for rate, so the
    // bulk jobs, on a free scope, are held (not failed).
    let first = sends(&drain(&mut s, 0));
    assert_eq!(first.iter().map(|s| s.job).collect::<Vec<_>>(), vec![1]);
    s.on_outcome(first[0].attempt, ok(), 10);
    assert!(sends(&drain(&mut s, 10)).is_empty());
    // The held bulk job with a deadline still fails at it.
    assert!(s.next_wakeup().is_some_and(|t| t <= 5_000));
    let at_deadline = drain(&mut s, 5_000);
    assert_eq!(finishes(&at_deadline)[0].job, 10);
    assert_eq!(finishes(&at_deadline)[0].reason, Reason::DeadlineExceeded);
    // Once job 2 is sent, nothing else waits: bulk goes.
    let mut released = Vec::new();
    let mut t = 5_000;
    while released.len() < 2 && t < 120_000 {
        t = s.next_wakeup().unwrap_or(t + 1_000).max(t);
        released.extend(sends(&drain(&mut s, t)).into_iter().map(|s| s.job));
        t += 1;
    }
    assert_eq!(released, vec![2, 9]);
}

#[test]
fn pause_bulk_cannot_be_held_by_a_bulk_backlog_alone() {
    let mut s = scheduler(laddered(vec![rung(1, RungKind::PauseBulk)], 2));
    for id in 1..=3 {
        let mut j = job(id, "llm");
        j.priority = Priority::Bulk;
        s.submit(j, 0).unwrap();
    }
    assert_eq!(sends(&drain(&mut s, 0)).len(), 2);
}

// ---------------------------------------------------------------------------------------
// Policy data

#[test]
fn routing_and_degradation_read_from_toml_with_snake_case_names() {
    let text = r#"
        [routing]
        reconcile_before_fallback = false

        [[routing.plans]]
        primary = "sk-a"

        [[routing.plans.fallbacks]]
        credential = "sk-b"
        scope = "deployment:b"
        model = "gpt-4o"
        when = ["provider_5xx", "rate_limit_after_retry_budget", "context_length_needed", "primary_unavailable"]

        [[degradation]]
        at_queued = 50
        kind = "trim_output"
        factor = 0.25

        [[degradation]]
        at_queued = 200
        kind = "smaller_model"
        model = "gpt-4o-mini"

        [[degradation]]
        at_queued = 500
        kind = "pause_bulk"

        [[degradation]]
        at_queued = 1000
        kind = "cached"
        priorities = ["bulk"]
    "#;
    let policy: Policy = toml::from_str(text).expect("parses");
    policy.validate().expect("valid");
    assert!(!policy.routing.reconcile_before_fallback);
    let fallback = &policy.routing.plans[0].fallbacks[0];
    assert_eq!(fallback.when.len(), 4);
    assert_eq!(fallback.when[0], FallbackWhen::ProviderFiveXx);
    assert_eq!(
        policy.degradation[0].priorities,
        vec![Priority::Normal, Priority::Bulk]
    );
    assert_eq!(policy.degradation[3].priorities, vec![Priority::Bulk]);
    let back: Policy = toml::from_str(&toml::to_string(&policy).unwrap()).unwrap();
    assert_eq!(back, policy);
    // Defaults: reconcile before falling back.
    let plain: Policy = toml::from_str("[[routing.plans]]\nprimary = \"sk-a\"").unwrap();
    assert!(plain.routing.reconcile_before_fallback);
}

#[test]
fn bad_routing_and_degradation_are_refused_naming_the_key() {
    let check = |policy: Policy, key: &str| {
        let err = policy.validate().unwrap_err();
        assert!(err.starts_with(key), "{err} should name {key}");
    };
    let mut bad_factor = rung(10, RungKind::TrimOutput);
    bad_factor.factor = Some(1.5);
    check(laddered(vec![bad_factor], 1), "degradation.0.factor");
    let mut zero_factor = rung(10, RungKind::TrimOutput);
    zero_factor.factor = Some(0.0);
    check(laddered(vec![zero_factor], 1), "degradation.0.factor");
    check(
        laddered(
            vec![
                rung(5, RungKind::TrimOutput),
                rung(10, RungKind::SmallerModel),
            ],
            1,
        ),
        "degradation.1.model",
    );
    check(
        laddered(vec![rung(0, RungKind::Cached)], 1),
        "degradation.0.at_queued",
    );
    check(backup_on(&[]), "routing.plans.0.fallbacks.0.when");
    let mut twice = backup_on(&[FallbackWhen::ProviderFiveXx]);
    twice.routing.plans.push(twice.routing.plans[0].clone());
    check(twice, "routing.plans.1.primary");
}

#[test]
fn a_job_without_a_model_serializes_as_before() {
    let text = serde_json::to_string(&job(1, "llm")).unwrap();
    assert!(!text.contains("model"), "{text}");
    let back: Job = serde_json::from_str(&text).unwrap();
    assert_eq!(back.model, None);
}

// ---------------------------------------------------------------------------------------
// Property: reconcile before falling back

fn outcome_of(code: u8) -> Outcome {
    match code % 10 {
        0 => ok(),
        1 => status(429),
        2 => status(503),
        3 => status(500),
        4 => status(504),
        5 => Outcome::Transport(TransportFailure::ReadTimeout),
        6 => Outcome::Transport(TransportFailure::ResetAfterWrite),
        7 => Outcome::Transport(TransportFailure::ConnectRefused),
        8 => with_code(400, "context_length_exceeded"),
        _ => status(502),
    }
}

fn may_have_executed(code: u8) -> bool {
    matches!(code % 10, 3 | 4 | 5 | 6 | 9)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// With reconcile_before_fallback, no action ever sends on another route while an
    /// attempt on its current route may have executed and nothing settled it.
    #[test]
    fn no_send_on_a_second_route_while_the_current_one_is_unsettled(
        codes in prop::collection::vec(0u8..10, 1..200),
        jobs in 1u64..6,
        classes in prop::collection::vec(0usize..3, 6),
    ) {
        let all = [
            FallbackWhen::ProviderFiveXx,
            FallbackWhen::RateLimitAfterRetryBudget,
            FallbackWhen::ContextLengthNeeded,
            FallbackWhen::PrimaryUnavailable,
        ];
        let mut s = scheduler(routed(vec![
            route(BACKUP, "backup", &all),
            route(SPARE, "spare", &all),
        ]));
        let class_names = ["llm", "read", "idempotent_write"];
        for id in 1..=jobs {
            s.submit(job(id, class_names[classes[id as usize - 1]]), 0).unwrap();
        }
        // Per job: (route of its last send, an unsettled may-have-executed answer there).
        let mut state: BTreeMap<u64, (String, bool)> = BTreeMap::new();
        let mut pending: BTreeMap<u64, (u64, u8)> = BTreeMap::new();
        let mut next = codes.iter().cycle();
        let mut now = 0;
        for _ in 0..2_000 {
            for command in drain(&mut s, now) {
                if let Command::Send(send) = command {
                    if send.kind == SendKind::Action {
                        let route = format!("{}/{}", send.credential, send.scope);
                        if let Some((last, unsettled)) = state.get(&send.job) {
                            prop_assert!(
                                !(*unsettled && *last != route),
                                "job {} crossed from {last} to {route} while unsettled",
                                send.job
                            );
                        }
                        let unsettled = state
                            .get(&send.job)
                            .is_some_and(|(last, u)| *u && *last == route);
                        state.insert(send.job, (route, unsettled));
                    }
                    let code = *next.next().unwrap();
                    pending.insert(send.attempt, (send.job, code));
                }
            }
            if let Some((&attempt, &(job, code))) = pending.iter().next() {
                pending.remove(&attempt);
                now += 7;
                if may_have_executed(code) {
                    if let Some(entry) = state.get_mut(&job) {
                        entry.1 = true;
                    }
                }
                s.on_outcome(attempt, outcome_of(code), now);
                continue;
            }
            match s.next_wakeup() {
                Some(at) => now = now.max(at),
                None => break,
            }
        }
    }
}

#[test]
fn a_move_is_new_load_on_the_fallback_scope_not_a_retry_against_its_budget() {
    // A scope retry budget that allows no retry at all (ratio 0, floor 0): every action of
    // a 503'd primary still moves, because its first attempt on the fallback is a first
    // attempt there. Only retries on the fallback route draw on the budget.
    let mut policy = backup_on(&[FallbackWhen::PrimaryUnavailable]);
    policy.retry_budgets.per_scope.enabled = true;
    policy.retry_budgets.per_scope.ratio = 0.0;
    policy.retry_budgets.per_scope.floor = 0;
    let mut s = scheduler(policy);
    for id in 1..=5 {
        s.submit(job(id, "llm"), 0).unwrap();
    }
    for send in sends(&drain(&mut s, 0)) {
        s.on_outcome(send.attempt, status(503), 10);
    }
    let moved = sends(&drain(&mut s, 10));
    assert_eq!(moved.len(), 5, "every action moved: {moved:?}");
    assert!(moved.iter().all(|m| &*m.scope == "backup"));
    // A 503 on the fallback is a retry there: the empty budget refuses it.
    for send in &moved {
        s.on_outcome(send.attempt, status(503), 20);
    }
    let ended: Vec<_> = drain(&mut s, 20)
        .into_iter()
        .filter_map(|c| match c {
            Command::Finish(t) => Some(t.reason),
            Command::Send(_) => None,
        })
        .collect();
    assert_eq!(ended, vec![Reason::ScopeBudgetExhausted; 5]);
}
