//! Prints how many submit -> dispatch -> outcome -> terminal cycles per second the core runs
//! with a few thousand jobs queued (wall clock, one thread). The criterion bench
//! (`benches/cycle.rs`) measures the same cycle with statistics; this one is quick to run
//! under `perf stat`: `cargo run --release -p stampede-core --example cycle_rate -- 2000000`.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use stampede_core::{
    Command, InMemoryLedger, Job, Outcome, Policy, Priority, Response, Route, Scheduler,
    ScopeBudget, Usage,
};

const QUEUED: u64 = 4_096;

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

fn job(id: u64) -> Job {
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

fn main() {
    let cycles: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let audit = std::env::args().nth(2).map_or(true, |a| a != "no-audit");
    let mut policy = Policy {
        workers: 1,
        audit,
        ..Policy::default()
    };
    let budget = ScopeBudget {
        rpm: Some(u32::MAX),
        tpm: Some(u32::MAX),
        concurrency: None,
        reserve: None,
    };
    policy.scopes.insert("account:bench".into(), budget);
    let mut s = Scheduler::new(
        policy,
        InMemoryLedger::forgetting_terminal(),
        ChaCha8Rng::seed_from_u64(1),
    )
    .expect("valid policy");
    for id in 0..QUEUED {
        s.submit(job(id), 0).expect("admitted");
    }
    let ok = Outcome::Response(Response {
        status: 200,
        headers: Vec::new(),
        retry_after_ms: None,
        rate: None,
        error_code: None,
        usage: Some(Usage {
            prompt_tokens: 300,
            completion_tokens: 120,
        }),
        operation_id: None,
    });
    // Jobs are built outside the timed sections (they are the driver's input, not the core's
    // work), in chunks so memory stays small.
    let mut timed = std::time::Duration::ZERO;
    let mut done = 0;
    while done < cycles {
        let chunk = (cycles - done).min(65_536);
        let jobs: Vec<Job> = (0..chunk).map(|i| job(QUEUED + done + i)).collect();
        let start = Instant::now();
        for (i, job) in (done..).zip(jobs) {
            let now = i + 1;
            s.submit(job, now).expect("admitted");
            let Some(Command::Send(send)) = s.poll(now) else {
                panic!("a send was due")
            };
            s.on_outcome(send.attempt, ok.clone(), now);
            let Some(Command::Finish(_)) = s.poll(now) else {
                panic!("a terminal was due")
            };
            if i % 1024 == 0 {
                std::hint::black_box(s.drain_audit());
            }
        }
        timed += start.elapsed();
        done += chunk;
    }
    let secs = timed.as_secs_f64();
    println!(
        "{cycles} cycles with {QUEUED} queued (audit {}): {:.3} s wall in the core, {:.0} cycles/s",
        if audit { "on" } else { "off" },
        secs,
        cycles as f64 / secs
    );
}
