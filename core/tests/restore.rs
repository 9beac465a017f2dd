//! `Scheduler::restore` after a crash, from what the ledger persisted: planned actions are
//! sent again, an in-flight uncertain write is looked up with its original key (never re-sent
//! blindly), attempts made before the crash count against the class budget, and terminal
//! actions (cancelled ones included) never wake.

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use stampede_core::{
    ActionState, Command, InMemoryLedger, Job, Ledger, LedgerEntry, LookupBy, Policy, Reason,
    Route, Scheduler, SendKind, TerminalStatus,
};

fn job(id: u64, class: &str, route: Route) -> Job {
    Job {
        scope: Some("account:acme".into()),
        class: class.into(),
        route,
        prompt_tokens: 10,
        max_output_tokens: 10,
        idempotency_key: Some(format!("key-{id}").into()),
        ..Job::new(id, "acme", format!("task-{id}"), "sk-acme")
    }
}

fn entry(job: Job, state: ActionState, attempts: u32) -> LedgerEntry {
    LedgerEntry {
        job,
        state,
        attempts,
        waited_ms: 0,
        operation_id: None,
        updated_at: 1_000,
    }
}

fn restored(entries: &[LedgerEntry]) -> Scheduler<InMemoryLedger> {
    let mut ledger = InMemoryLedger::new();
    for e in entries {
        ledger.put(e).unwrap();
    }
    Scheduler::restore(
        Policy::default(),
        ledger,
        ChaCha8Rng::seed_from_u64(1),
        5_000,
    )
    .unwrap()
}

/// Every command due within `until` ms of virtual time, polling at each wake-up.
fn drain(core: &mut Scheduler<InMemoryLedger>, until: u64) -> Vec<Command> {
    let mut out = Vec::new();
    let mut now = 5_000;
    for _ in 0..1_000 {
        while let Some(c) = core.poll(now) {
            out.push(c);
        }
        match core.next_wakeup() {
            Some(t) if t <= until => now = t.max(now + 1),
            _ => break,
        }
    }
    out
}

#[test]
fn an_in_flight_uncertain_write_is_looked_up_with_its_original_key() {
    let write = job(1, "uncertain_write", Route::CreateRecord);
    let mut core = restored(&[entry(write, ActionState::InFlight, 1)]);
    let sends: Vec<_> = drain(&mut core, 60_000)
        .into_iter()
        .filter_map(|c| match c {
            Command::Send(s) => Some(s),
            Command::Finish(_) => None,
        })
        .collect();
    assert_eq!(sends.len(), 1, "{sends:?}");
    assert_eq!(
        sends[0].kind,
        SendKind::Lookup(Box::new(LookupBy::IdempotencyKey("key-1".into())))
    );
    // Attempts count across the restart: the look-up is the action's second attempt.
    assert_eq!(sends[0].attempt_no, 2);
    assert_eq!(
        core.ledger().get(1).unwrap().state,
        ActionState::ReconciliationRequired
    );
}

#[test]
fn a_planned_action_is_sent_again_with_its_key() {
    let write = job(2, "uncertain_write", Route::CreateRecord);
    let mut core = restored(&[entry(write, ActionState::Planned, 0)]);
    let commands = drain(&mut core, 60_000);
    let Some(Command::Send(send)) = commands.first() else {
        panic!("expected a send, got {commands:?}");
    };
    assert_eq!(send.kind, SendKind::Action);
    assert_eq!(send.idempotency_key, Some("key-2".into()));
    assert_eq!(send.attempt_no, 1);
}

#[test]
fn attempts_before_the_crash_count_against_the_class_budget() {
    let policy = Policy::default();
    let max = policy.class("llm").unwrap().max_attempts;
    let llm = job(3, "llm", Route::ChatCompletion);
    let mut core = restored(&[entry(llm, ActionState::InFlight, max)]);
    let commands = drain(&mut core, 60_000);
    assert!(
        commands.iter().all(|c| !matches!(c, Command::Send(_))),
        "a spent action was sent again: {commands:?}"
    );
    let finished: Vec<_> = commands
        .iter()
        .filter_map(|c| match c {
            Command::Finish(t) => Some((t.status, t.reason.clone())),
            Command::Send(_) => None,
        })
        .collect();
    assert_eq!(
        finished,
        vec![(TerminalStatus::Failed, Reason::AttemptsExhausted)]
    );
}

#[test]
fn terminal_and_cancelled_actions_never_wake() {
    let states = [
        ActionState::Completed,
        ActionState::Failed,
        ActionState::Escalated,
        ActionState::Cancelled,
    ];
    let entries: Vec<LedgerEntry> = states
        .iter()
        .enumerate()
        .map(|(i, s)| entry(job(10 + i as u64, "llm", Route::ChatCompletion), *s, 1))
        .collect();
    let mut core = restored(&entries);
    assert_eq!(drain(&mut core, 600_000), Vec::new());
    assert_eq!(core.gauges().live, 0);
}
