//! The jobs, the loaded scheduler and the answer of the core's submit -> dispatch -> outcome
//! -> terminal cycle, shared by the cycle benchmark (as `mod support`), the `cycle_rate`
//! example and stampede-sim's steady-state allocation test (both by path).

use std::sync::OnceLock;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use stampede_core::{
    IdempotencyKey, InMemoryLedger, Job, Name, Outcome, Policy, Priority, Response, Route,
    Scheduler, ScopeBudget, TaskName, Usage,
};

/// The names every job shares, made once. The drivers hand the core interned names for a
/// workload's tenant, credential, scope and class, and a task name (see `stampede-sim`'s
/// workload) that a clone copies, so a benchmark that built fresh strings per job would
/// time allocations and frees that a real run never makes. Only the idempotency key is per job,
/// as it is in a run.
struct Names {
    tenants: [Name; 4],
    task: TaskName,
    credential: Name,
    scope: Name,
    class: Name,
}

fn names() -> &'static Names {
    static NAMES: OnceLock<Names> = OnceLock::new();
    NAMES.get_or_init(|| Names {
        tenants: std::array::from_fn(|i| format!("tenant-{i}").into()),
        task: "bench".into(),
        credential: "sk-bench".into(),
        scope: "account:bench".into(),
        class: "llm".into(),
    })
}

/// Job `id`, written out field by field rather than through `Job::new`:
/// `scripts/instructions.sh` counts the building of these jobs with the cycles, and a
/// constructor whose defaults are then overwritten would move that count with no change in
/// the core.
pub fn job(id: u64) -> Job {
    let names = names();
    Job {
        id,
        tenant: names.tenants[(id % 4) as usize],
        task: names.task.clone(),
        credential: names.credential,
        scope: Some(names.scope),
        class: names.class,
        route: Route::ChatCompletion,
        resource: None,
        priority: Priority::Normal,
        prompt_tokens: 300,
        max_output_tokens: 200,
        deadline: None,
        // A key of its own in the form the core derives (held in place, as a driver's jobs
        // carry it from the core's derivation on).
        idempotency_key: Some(IdempotencyKey::derived(u128::from(id).to_be_bytes())),
        payload_hash: id,
        external_ref: None,
        coalescable: false,
        stream: false,
        model: None,
        sole_task: false,
    }
}

/// A scheduler with `queued` jobs waiting and one worker, so each cycle dispatches the head
/// of a deep queue. Buckets are on (huge limits) so reservation and reconciliation are
/// measured. Its ledger keeps the live actions' entries and forgets ended ones.
pub fn loaded(audit: bool, queued: u64) -> Scheduler {
    loaded_on(audit, queued, InMemoryLedger::forgetting_terminal())
}

/// [`loaded`] on `ledger` (the cycle example's `keep-nothing` measures what the ledger's
/// writes cost by leaving them out).
pub fn loaded_on(audit: bool, queued: u64, ledger: InMemoryLedger) -> Scheduler {
    let mut policy = Policy {
        workers: 1,
        audit,
        ..Policy::default()
    };
    policy.scopes.insert(
        "account:bench".into(),
        ScopeBudget {
            rpm: Some(u32::MAX),
            tpm: Some(u32::MAX),
            concurrency: None,
            reserve: None,
            max_delayed_requests: None,
        },
    );
    let mut s = Scheduler::new(policy, ledger, ChaCha8Rng::seed_from_u64(1)).expect("valid policy");
    for id in 0..queued {
        s.submit(job(id), 0).expect("admitted");
    }
    s
}

/// A completion's answer: 200, with usage and `operation_id`.
pub fn completed(operation_id: Option<&str>) -> Outcome {
    Outcome::Response(Response {
        usage: Some(Usage {
            prompt_tokens: 300,
            completion_tokens: 120,
        }),
        operation_id: operation_id.map(Into::into),
        ..Response::new(200)
    })
}
