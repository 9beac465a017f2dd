//! The job the cycle benchmark and the `cycle_rate` example submit, shared by both (the
//! bench includes it as `mod support`, the example by path).

use std::sync::{Arc, OnceLock};

use stampede_core::{Job, Priority, Route};

/// The names every job shares, made once. The drivers hand the core the same `Arc<str>`
/// for a workload's tenant, task, credential, scope and class (`Arc::clone`, see
/// `stampede-sim`'s workload), so a benchmark that built fresh strings per job would time
/// allocations and frees (of the names, and of what the core clones from them) that a real
/// run never makes. Only the idempotency key is per job, as it is in a run.
struct Names {
    tenants: [Arc<str>; 4],
    task: Arc<str>,
    credential: Arc<str>,
    scope: Arc<str>,
    class: Arc<str>,
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

pub fn job(id: u64) -> Job {
    let names = names();
    Job {
        id,
        tenant: Arc::clone(&names.tenants[(id % 4) as usize]),
        task: Arc::clone(&names.task),
        credential: Arc::clone(&names.credential),
        scope: Some(Arc::clone(&names.scope)),
        class: Arc::clone(&names.class),
        route: Route::ChatCompletion,
        resource: None,
        priority: Priority::Normal,
        prompt_tokens: 300,
        max_output_tokens: 200,
        deadline: None,
        idempotency_key: Some(format!("key-{id}").into()),
        payload_hash: id,
        external_ref: None,
        coalescable: false,
        stream: false,
        model: None,
    }
}
