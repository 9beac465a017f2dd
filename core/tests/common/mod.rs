//! Builders shared by the rule and property tests.
#![allow(dead_code)]

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use stampede_core::{
    Command, InMemoryLedger, Job, JobId, Millis, Outcome, Policy, Priority, Response, Route,
    Scheduler, SendAttempt, Terminal, Usage,
};

pub const CREDENTIAL: &str = "sk-secret-credential";

pub fn scheduler(policy: Policy) -> Scheduler {
    scheduler_with(policy, InMemoryLedger::new())
}

/// A scheduler under `policy` persisting to `ledger`.
pub fn scheduler_with(policy: Policy, ledger: InMemoryLedger) -> Scheduler {
    Scheduler::new(policy, ledger, ChaCha8Rng::seed_from_u64(7)).expect("valid policy")
}

/// A job of `class` on scope "acct" for tenant "t1", task "task-{id}".
pub fn job(id: JobId, class: &str) -> Job {
    let route = match class {
        "llm" => Route::ChatCompletion,
        "read" => Route::GetItem,
        _ => Route::CreateRecord,
    };
    Job {
        id,
        tenant: "t1".into(),
        task: format!("task-{id}").into(),
        credential: CREDENTIAL.into(),
        scope: Some("acct".into()),
        class: class.into(),
        route,
        resource: None,
        priority: Priority::Normal,
        prompt_tokens: 100,
        max_output_tokens: 100,
        deadline: None,
        idempotency_key: None,
        payload_hash: id,
        external_ref: None,
        coalescable: false,
        stream: false,
        model: None,
        sole_task: false,
    }
}

/// Every command due at `now`.
pub fn drain(s: &mut Scheduler, now: Millis) -> Vec<Command> {
    let mut out = Vec::new();
    while let Some(command) = s.poll(now) {
        out.push(command);
        assert!(out.len() < 100_000, "poll never ran dry");
    }
    out
}

pub fn sends(commands: &[Command]) -> Vec<SendAttempt> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::Send(send) => Some(send.clone()),
            Command::Finish(_) => None,
        })
        .collect()
}

pub fn finishes(commands: &[Command]) -> Vec<Terminal> {
    commands
        .iter()
        .filter_map(|c| match c {
            Command::Finish(t) => Some(t.clone()),
            Command::Send(_) => None,
        })
        .collect()
}

pub fn response(status: u16, headers: &[(&str, &str)]) -> Outcome {
    Outcome::Response(Response {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        retry_after_ms: None,
        rate: None,
        error_code: None,
        usage: None,
        operation_id: None,
    })
}

pub fn with_code(status: u16, code: &str) -> Outcome {
    Outcome::Response(Response {
        status,
        headers: Vec::new(),
        retry_after_ms: None,
        rate: None,
        error_code: Some(code.to_owned().into()),
        usage: None,
        operation_id: None,
    })
}

pub fn ok_with_usage(prompt: u32, completion: u32) -> Outcome {
    Outcome::Response(Response {
        status: 200,
        headers: Vec::new(),
        retry_after_ms: None,
        rate: None,
        error_code: None,
        usage: Some(Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
        }),
        operation_id: None,
    })
}

pub fn ok() -> Outcome {
    response(200, &[])
}
