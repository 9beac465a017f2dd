//! Builders shared by the rule and property tests.
#![allow(dead_code)]

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use stampede_core::{
    Command, InMemoryLedger, Job, JobId, Millis, Outcome, Policy, Response, Route, Scheduler,
    SendAttempt, Terminal, Usage,
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
        scope: Some("acct".into()),
        class: class.into(),
        route,
        prompt_tokens: 100,
        max_output_tokens: 100,
        ..Job::new(id, "t1", format!("task-{id}"), CREDENTIAL)
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
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Response::new(status)
    })
}

pub fn with_code(status: u16, code: &str) -> Outcome {
    Outcome::Response(Response {
        error_code: Some(code.to_owned().into()),
        ..Response::new(status)
    })
}

pub fn ok_with_usage(prompt: u32, completion: u32) -> Outcome {
    Outcome::Response(Response {
        usage: Some(Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
        }),
        ..Response::new(200)
    })
}

pub fn ok() -> Outcome {
    response(200, &[])
}
