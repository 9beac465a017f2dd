//! The core and the provider model allocate nothing per steady-state event: a counting
//! global allocator watches the calls a driver makes once the run is warm (containers grown
//! to their working size), for the core's submit -> send -> outcome -> terminal cycle (no
//! allocation at all) and for the model's completions as the simulator drives them (lean
//! bodies; none per completion, see the test for the rare table growth). Counts, not times:
//! the figure is the same on every run and on any machine.
//!
//! The core's jobs, scheduler and answer are the cycle benchmark's (`core/benches/support`):
//! the names a job shares with others made once, as the drivers make them, and a key of its
//! own (or none, for the core to derive).

#[path = "../../core/benches/support/mod.rs"]
mod core_support;
#[path = "support/counting_alloc.rs"]
mod counting_alloc;

use std::sync::Arc;

use counting_alloc::allocations_in;
use stampede_core::{Command, Job, Name, Outcome};
use stampede_provider::config::{CredentialConfig, DurationMs, ProviderConfig, ScopeLimits};
use stampede_provider::model::{Answer, ProviderModel, Request, RequestRoute};

/// Actions queued behind the one being cycled, as in the `cycle_rate` benchmark.
const QUEUED: u64 = 1_024;
/// Cycles run before counting, so every container has grown to its working size.
const WARM_UP: u64 = 32_768;
/// Cycles counted.
const COUNTED: u64 = 8_192;

#[test]
fn the_core_cycle_allocates_nothing_once_warm() {
    let (counted, _) = warm_core_cycle_allocations(core_support::job);
    assert_eq!(
        counted, 0,
        "{counted} heap allocations in {COUNTED} warm submit -> send -> outcome -> terminal cycles"
    );
}

/// A job that names its model: the attempt carries the job's interned name (as it carries
/// its credential and scope), not a copy made per send.
#[test]
fn a_job_naming_its_model_is_sent_without_allocating() {
    let model = Name::new("gpt-4o-mini");
    let (counted, naming) = warm_core_cycle_allocations(|id| Job {
        model: Some(model),
        ..core_support::job(id)
    });
    assert_eq!(
        naming, COUNTED,
        "every counted send asks for the job's model"
    );
    assert_eq!(
        counted, 0,
        "{counted} heap allocations in {COUNTED} warm cycles of jobs naming a model"
    );
}

/// A job that brings no idempotency key, as the simulator's workload makes every job: the
/// core derives one at admission and holds it in place, so deriving costs no allocation
/// either.
#[test]
fn the_core_derives_a_key_without_allocating() {
    let (counted, _) = warm_core_cycle_allocations(|id| Job {
        idempotency_key: None,
        ..core_support::job(id)
    });
    assert_eq!(
        counted, 0,
        "{counted} heap allocations in {COUNTED} warm cycles of jobs whose key the core derives"
    );
}

/// The heap allocations the core makes in [`COUNTED`] submit -> send -> outcome -> terminal
/// cycles of jobs `job(id)` makes, after [`WARM_UP`] cycles that grow its containers, and
/// how many of the counted sends named a model (each send is for the job submitted
/// [`QUEUED`] cycles earlier).
fn warm_core_cycle_allocations(job: impl Fn(u64) -> Job) -> (u64, u64) {
    let mut core = core_support::loaded(true, QUEUED);
    let completed = core_support::completed(Some("chatcmpl-123456"));
    let mut audited = 0u64;
    // One cycle: submit an action, send the oldest, hear its answer, take its terminal. The
    // job and the outcome are the driver's to make; they are made before counting starts.
    // Returns whether the send named a model.
    let mut cycle = |now: u64, job: Job, outcome: Outcome, count: &mut u64| {
        let mut named = false;
        *count += allocations_in(|| {
            core.submit(job, now).expect("admitted");
            let Some(Command::Send(send)) = core.poll(now) else {
                panic!("a send was due")
            };
            named = send.model.is_some();
            core.on_outcome(send.attempt, outcome, now);
            let Some(Command::Finish(done)) = core.poll(now) else {
                panic!("a terminal was due")
            };
            assert_eq!(done.operation_id.as_deref(), Some("chatcmpl-123456"));
            // The driver reads the audit events in place (as the virtual driver does).
            audited += core.drain_audit_with(|events| events.len() as u64);
        });
        named
    };
    let mut warm_up = 0;
    for i in 0..WARM_UP {
        let _ = cycle(i + 1, job(QUEUED + i), completed.clone(), &mut warm_up);
    }
    let (mut counted, mut naming) = (0, 0);
    for i in WARM_UP..WARM_UP + COUNTED {
        naming += u64::from(cycle(
            i + 1,
            job(QUEUED + i),
            completed.clone(),
            &mut counted,
        ));
    }
    assert!(
        warm_up > 0,
        "the counter counts (the warm-up grows containers)"
    );
    assert!(
        audited >= 4 * (WARM_UP + COUNTED),
        "audit on: requested, sent, result and completed for every cycle ({audited} read)"
    );
    (counted, naming)
}

#[test]
fn the_model_answers_completions_without_allocating_once_warm() {
    let config = ProviderConfig {
        scopes: vec![ScopeLimits::unlimited("account:bench")],
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
