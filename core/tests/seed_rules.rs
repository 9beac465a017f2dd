//! The seed rules issue 17 added to the core, one test each: per-status retry lists (seed
//! 000's "retry 502, not 500"), a deadline already past refused at admission (seed 001), a
//! request larger than its scope's whole limit escalated as an account configuration
//! problem (seed 000), and the breaker's wide paths that stop an improvising agent and a
//! revoked key (seed 000).
#![allow(clippy::field_reassign_with_default)]

use crate::common;

use common::*;
use stampede_core::{
    Command, Millis, Outcome, Policy, Reason, RejectionCause, ScopeBudget, TerminalStatus,
};

/// From `from` (ms), answers every send due by `until` (ms) with `answer(job)` 10 ms later; returns the
/// sends made and the terminals, in order.
fn play(
    s: &mut stampede_core::Scheduler,
    from: Millis,
    until: Millis,
    answer: impl Fn(u64) -> Outcome,
) -> (
    Vec<stampede_core::SendAttempt>,
    Vec<stampede_core::Terminal>,
) {
    let (mut sent, mut ended) = (Vec::new(), Vec::new());
    let mut now = from;
    while now <= until {
        for command in drain(s, now) {
            match command {
                Command::Send(send) => {
                    s.on_outcome(send.attempt, answer(send.job), now + 10);
                    sent.push(send);
                }
                Command::Finish(done) => ended.push(done),
            }
        }
        now = match s.next_wakeup() {
            Some(at) => at.max(now + 10),
            None => now + 10,
        };
    }
    (sent, ended)
}

#[test]
fn a_class_with_a_status_list_retries_502_but_not_500() {
    let mut policy = Policy::default();
    let write = policy.classes.get_mut("idempotent_write").unwrap();
    write.retry_statuses = Some(vec![408, 429, 502, 503, 504]);
    write.max_attempts = 3;
    let mut s = scheduler(policy);
    s.submit(job(1, "idempotent_write"), 0).unwrap();
    s.submit(job(2, "idempotent_write"), 0).unwrap();
    let (sent, ended) = play(&mut s, 0, 600_000, |job| {
        response(if job == 1 { 502 } else { 500 }, &[])
    });
    let tries = |id| sent.iter().filter(|x| x.job == id).count();
    assert_eq!(tries(1), 3, "502 is listed: retried to max_attempts");
    assert_eq!(tries(2), 1, "500 is not listed: never retried");
    assert_eq!(ended.len(), 2);
    // A status outside HTTP's range is refused with the key named.
    let mut bad = Policy::default();
    bad.classes.get_mut("read").unwrap().retry_statuses = Some(vec![42]);
    let err = bad.validate().unwrap_err();
    assert!(
        err.contains("classes.read.retry_statuses lists 42"),
        "{err}"
    );
}

#[test]
fn a_deadline_already_past_is_refused_for_good_at_admission() {
    let mut s = scheduler(Policy::default());
    let mut late = job(1, "llm");
    late.deadline = Some(5_000);
    let refusal = s.submit(late.clone(), 5_000).unwrap_err();
    assert_eq!(refusal.cause, RejectionCause::DeadlinePassed);
    assert!(refusal.cause.is_final());
    assert!(
        refusal.reason.contains("deadline passed"),
        "{}",
        refusal.reason
    );
    assert!(
        drain(&mut s, 5_000).is_empty(),
        "nothing queued, nothing sent"
    );
    // One millisecond earlier it is admitted and sent.
    let mut s = scheduler(Policy::default());
    s.submit(late, 4_999).unwrap();
    assert_eq!(sends(&drain(&mut s, 4_999)).len(), 1);
}

#[test]
fn a_request_larger_than_the_scopes_whole_minute_is_escalated_unsent() {
    let mut policy = Policy::default();
    let mut budget = ScopeBudget::default();
    budget.tpm = Some(8_000);
    policy.scopes.insert("acct".into(), budget);
    let mut s = scheduler(policy);
    let mut big = job(1, "llm");
    (big.prompt_tokens, big.max_output_tokens) = (9_000, 1_000);
    s.submit(big, 0).unwrap();
    s.submit(job(2, "llm"), 0).unwrap();
    let commands = drain(&mut s, 0);
    let sent = sends(&commands);
    assert_eq!(sent.len(), 1, "only the small call goes: {sent:?}");
    assert_eq!(sent[0].job, 2);
    let done = finishes(&commands);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].status, TerminalStatus::Escalated);
    assert_eq!(
        done[0].reason,
        Reason::LimitBelowRequest {
            limit: "tpm".into(),
            capacity: 8_000,
            needed: 10_000
        }
    );
    assert!(!done[0].sent);
}

#[test]
fn the_breaker_counts_a_tasks_4xx_whatever_the_payload_and_a_401_on_the_key() {
    // An agent changing its payload after each 422, in one task: the task's path opens at
    // the threshold although no two payloads are the same.
    // One request at a time, as an agent sends them.
    let mut s = scheduler(Policy::default());
    let (mut sent, mut ended) = (0, Vec::new());
    for id in 1..=8 {
        let mut changed = job(id, "idempotent_write");
        changed.task = "one-run".into();
        let t = (id - 1) * 2_000;
        s.submit(changed, t).unwrap();
        let (out, done) = play(&mut s, t, t + 1_000, |_| {
            with_code(422, "unsupported_filter")
        });
        sent += out.len();
        ended.extend(done);
    }
    assert_eq!(sent, 5, "five identical 422s open the task's path");
    let open = ended
        .iter()
        .filter(|t| matches!(t.reason, Reason::CircuitOpen { .. }))
        .count();
    assert_eq!(
        open,
        8 - 5 + 1,
        "the fifth failure and the three unsent end escalated"
    );
    // Other tasks are not stopped by it.
    s.submit(job(20, "idempotent_write"), 20_000).unwrap();
    assert_eq!(sends(&drain(&mut s, 20_000)).len(), 1);

    // A revoked key: 401s on different tasks and payloads open the key's path, and its
    // fingerprint names no part of the key.
    let mut s = scheduler(Policy::default());
    let (mut sent, mut ended) = (0, Vec::new());
    for id in 1..=8 {
        let t = (id - 1) * 2_000;
        s.submit(job(id, "idempotent_write"), t).unwrap();
        let (out, done) = play(&mut s, t, t + 1_000, |_| with_code(401, "invalid_api_key"));
        sent += out.len();
        ended.extend(done);
    }
    assert_eq!(sent, 5);
    for t in &ended {
        if let Reason::CircuitOpen { fingerprint } = &t.reason {
            assert!(fingerprint.contains("|key ") && fingerprint.ends_with("|401"));
            assert!(!fingerprint.contains("secret"), "{fingerprint}");
        }
    }
}
