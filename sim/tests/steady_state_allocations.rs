//! The core and the provider model allocate nothing per steady-state event: a counting
//! global allocator watches the calls a driver makes once the run is warm (containers grown
//! to their working size), for the core's submit -> send -> outcome -> terminal cycle (no
//! allocation at all) and for the model's completions as the simulator drives them (lean
//! bodies; none per completion, see the test for the rare table growth). Counts, not times:
//! the figure is the same on every run and on any machine.
//!
//! Only the allocations of the thread under test are counted, so the test harness's own
//! threads cannot disturb the figure.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use stampede_core::{
    Command, InMemoryLedger, Job, Outcome, Policy, Priority, Response, Route, Scheduler,
    ScopeBudget, Usage,
};
use stampede_provider::config::{CredentialConfig, DurationMs, ProviderConfig, ScopeLimits};
use stampede_provider::model::{Answer, ProviderModel, Request, RequestRoute};

struct Counting;

thread_local! {
    /// Whether this thread's allocations are being counted, and how many so far.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn note_allocation() {
    // `try_with`: a thread being torn down has no thread-locals left, and is not counted.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        }
    });
}

// SAFETY: every call is forwarded unchanged to `System`, which upholds the contract; the
// counting touches only const-initialized thread-locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap allocations this thread makes while `f` runs.
fn allocations_in(f: impl FnOnce()) -> u64 {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|on| on.set(true));
    f();
    COUNTING.with(|on| on.set(false));
    ALLOCATIONS.with(Cell::get)
}

/// Actions queued behind the one being cycled, as in the `cycle_rate` benchmark.
const QUEUED: u64 = 1_024;
/// Cycles run before counting, so every container has grown to its working size.
const WARM_UP: u64 = 32_768;
/// Cycles counted.
const COUNTED: u64 = 8_192;

struct Names {
    tenants: [Arc<str>; 4],
    task: Arc<str>,
    credential: Arc<str>,
    scope: Arc<str>,
    class: Arc<str>,
}

/// A job as a driver hands it over: the names shared with every other job (the drivers
/// intern them when the scenario loads), its idempotency key made by the driver.
fn job(names: &Names, id: u64) -> Job {
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

#[test]
fn the_core_cycle_allocates_nothing_once_warm() {
    let names = Names {
        tenants: std::array::from_fn(|i| format!("tenant-{i}").into()),
        task: "bench".into(),
        credential: "sk-bench".into(),
        scope: "account:bench".into(),
        class: "llm".into(),
    };
    let mut policy = Policy {
        workers: 1,
        audit: true,
        ..Policy::default()
    };
    policy.scopes.insert(
        "account:bench".into(),
        ScopeBudget {
            rpm: Some(u32::MAX),
            tpm: Some(u32::MAX),
            concurrency: None,
            reserve: None,
        },
    );
    let mut core = Scheduler::new(
        policy,
        InMemoryLedger::forgetting_terminal(),
        ChaCha8Rng::seed_from_u64(1),
    )
    .expect("valid policy");
    for id in 0..QUEUED {
        core.submit(job(&names, id), 0).expect("admitted");
    }
    let completed = Outcome::Response(Response {
        status: 200,
        headers: Vec::new(),
        retry_after_ms: None,
        rate: None,
        error_code: None,
        usage: Some(Usage {
            prompt_tokens: 300,
            completion_tokens: 120,
        }),
        operation_id: Some("chatcmpl-123456".into()),
    });
    let mut audited = 0u64;
    // One cycle: submit an action, send the oldest, hear its answer, take its terminal. The
    // job and the outcome are the driver's to make; they are made before counting starts.
    let mut cycle = |now: u64, job: Job, outcome: Outcome, count: &mut u64| {
        *count += allocations_in(|| {
            core.submit(job, now).expect("admitted");
            let Some(Command::Send(send)) = core.poll(now) else {
                panic!("a send was due")
            };
            core.on_outcome(send.attempt, outcome, now);
            let Some(Command::Finish(done)) = core.poll(now) else {
                panic!("a terminal was due")
            };
            assert_eq!(done.operation_id.as_deref(), Some("chatcmpl-123456"));
            // The driver reads the audit events in place (as the virtual driver does).
            audited += core.drain_audit_with(|events| events.len() as u64);
        });
    };
    let mut warm_up = 0;
    for i in 0..WARM_UP {
        cycle(
            i + 1,
            job(&names, QUEUED + i),
            completed.clone(),
            &mut warm_up,
        );
    }
    let mut counted = 0;
    for i in WARM_UP..WARM_UP + COUNTED {
        cycle(
            i + 1,
            job(&names, QUEUED + i),
            completed.clone(),
            &mut counted,
        );
    }
    assert!(
        warm_up > 0,
        "the counter counts (the warm-up grows containers)"
    );
    assert!(
        audited >= 4 * (WARM_UP + COUNTED),
        "audit on: requested, sent, result and completed for every cycle ({audited} read)"
    );
    assert_eq!(
        counted, 0,
        "{counted} heap allocations in {COUNTED} warm submit -> send -> outcome -> terminal cycles"
    );
}

#[test]
fn the_model_answers_completions_without_allocating_once_warm() {
    let config = ProviderConfig {
        scopes: vec![ScopeLimits {
            id: "account:bench".into(),
            rpm: None,
            tpm: None,
            rpd: None,
            tpd: None,
            concurrency: None,
            count_rejected: false,
            model: None,
        }],
        credentials: vec![CredentialConfig {
            key: "sk-bench".into(),
            scope: "account:bench".into(),
            scopes: Vec::new(),
        }],
        // The model remembers each logical request for this long (to tell a retry from a new
        // request): 1,000 requests at one per 10 ms, so the warm-up fills its window and the
        // counted completions find it at its working size, one expiring for each arriving.
        identity_window: DurationMs(10_000),
        ..ProviderConfig::default()
    };
    let mut model = ProviderModel::new(config, 42, 1_700_000_000_000).expect("valid config");
    model.set_lean_bodies(true);
    let credential: Arc<str> = "sk-bench".into();
    let request = |n: u64| Request {
        route: RequestRoute::ChatCompletions,
        credential: Some(Arc::clone(&credential)),
        idempotency_key: None,
        prompt_tokens: 100,
        max_tokens: 50,
        body_hash: n,
        ..Request::default()
    };
    let mut answer = |n: u64, count: &mut u64| {
        let req = request(n);
        let now = n * 10;
        *count += allocations_in(|| {
            let decision = model.arrive(&req, now);
            assert!(
                matches!(
                    decision.answer,
                    Answer::Respond {
                        status: 200,
                        completion_id: Some(_),
                        ..
                    }
                ),
                "{:?}",
                decision.answer
            );
            model.depart(decision.seq, now + decision.latency_ms);
            // The driver reads the journal entry the answer wrote, and drops it.
            let entry = model.next_journal().expect("journaled");
            assert_eq!(entry.seq, decision.seq);
        });
    };
    let mut warm_up = 0;
    for n in 0..WARM_UP {
        answer(n, &mut warm_up);
    }
    let mut counted = 0;
    for n in WARM_UP..WARM_UP + COUNTED {
        answer(n, &mut counted);
    }
    assert!(
        warm_up > 0,
        "the counter counts (the warm-up grows containers)"
    );
    // No completion allocates. What can still allocate, rarely, is the identity table's
    // index reaching a new high-water mark: the number of requests it remembers wanders
    // around its mean, and a hash table whose free slots deletions have used up grows when
    // it is over half full (otherwise it rehashes in place). Amortized over the run, not
    // per event: under one in a thousand completions.
    assert!(
        counted * 1_000 < COUNTED,
        "{counted} heap allocations in {COUNTED} warm completions"
    );
}
