//! The short way out of `fill_outbox` (the execution budget does not end, no timer is due,
//! and no lane holds an entry or every slot is taken) leaves the scheduler exactly as the
//! whole turn does: it repeats that turn's outcome for the turns that find nothing to send,
//! so a rule added to the turn and not to the test would show here first. Runs are played
//! twice, once with every turn whole, and must give the same commands, wake-ups and gauges
//! after every step. The skipped pruning of current timers is held the same way.

use super::*;
use crate::job::{Priority, Route};
use crate::outcome::{Response, TransportFailure, Usage};
use crate::{preset, PRESETS};
use proptest::prelude::*;
use rand::SeedableRng;

/// One step of a run.
#[derive(Debug, Clone)]
enum Step {
    /// Submit a job of class `class` (an index) for tenant `tenant` on scope `scope`, due
    /// within `deadline` ms, if any.
    Submit {
        tenant: u8,
        scope: u8,
        class: u8,
        priority: u8,
        deadline: Option<u64>,
    },
    /// Answer the `which`-th attempt on the wire (modulo their number) with outcome `code`.
    Answer { which: u8, code: u8 },
    /// Let `ms` pass.
    Wait { ms: u16 },
    /// Go to the scheduler's next wake-up (at least 1 ms on).
    Wake,
    /// Cancel the task of job `job` (modulo the jobs submitted).
    Cancel { job: u8 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0u8..3, 0u8..2, 0u8..3, 0u8..3, prop::option::weighted(0.3, 1u64..20_000))
            .prop_map(|(tenant, scope, class, priority, deadline)| Step::Submit {
                tenant,
                scope,
                class,
                priority,
                deadline,
            }),
        4 => (any::<u8>(), 0u8..8).prop_map(|(which, code)| Step::Answer { which, code }),
        2 => (0u16..3_000).prop_map(|ms| Step::Wait { ms }),
        2 => Just(Step::Wake),
        1 => any::<u8>().prop_map(|job| Step::Cancel { job }),
    ]
}

fn outcome(code: u8) -> Outcome {
    let http = |status: u16, code: Option<&'static str>| {
        Outcome::Response(Response {
            error_code: code.map(Into::into),
            usage: (status == 200).then_some(Usage {
                prompt_tokens: 10,
                completion_tokens: 10,
            }),
            ..Response::new(status)
        })
    };
    match code {
        0 | 1 => http(200, None),
        2..=4 => http(429, Some("rate_limit_exceeded")),
        5 => http(500, None),
        6 => Outcome::Transport(TransportFailure::ConnectRefused),
        _ => Outcome::Transport(TransportFailure::ReadTimeout),
    }
}

fn scheduler(
    preset_index: usize,
    workers: u32,
    budget_ms: Option<u64>,
    cached: bool,
    whole: bool,
) -> Scheduler {
    let mut policy = preset(PRESETS[preset_index]).expect("listed preset");
    policy.workers = workers;
    policy.execution_budget = budget_ms.map(std::time::Duration::from_millis);
    // A tight scope, so that heads wait for rate (a rate wake-up to clear) and for the
    // scope's slots, and one that caps its waiting retries.
    let budget = |rpm, max_delayed_requests| crate::ScopeBudget {
        rpm,
        tpm: None,
        concurrency: Some(2),
        reserve: None,
        max_delayed_requests,
    };
    policy.scopes.insert("s0".into(), budget(Some(20), None));
    policy.scopes.insert("s1".into(), budget(None, Some(3)));
    // A `cached` rung, active from two waiting actions: with every slot taken the short way
    // out is taken only while it is not active (it serves reads without a slot).
    if cached {
        policy.degradation.push(crate::degradation::Rung {
            at_queued: 2,
            kind: crate::degradation::RungKind::Cached,
            priorities: vec![
                crate::job::Priority::Critical,
                crate::job::Priority::Normal,
                crate::job::Priority::Bulk,
            ],
            factor: None,
            model: None,
        });
    }
    let mut s = Scheduler::new(policy, InMemoryLedger::new(), ChaCha8Rng::seed_from_u64(3))
        .expect("valid policy");
    s.full_turns = whole;
    s
}

/// What a driver sees of a scheduler after a step, plus the timers it still holds.
fn seen(s: &Scheduler) -> (Option<Millis>, Gauges, usize, Option<JobId>) {
    (
        s.next_wakeup(),
        s.gauges(),
        s.delayed.len(),
        s.next_send_hint(),
    )
}

/// Drains the commands due at `now`, by `peek` and `consume`.
fn drain(s: &mut Scheduler, now: Millis, wire: &mut Vec<AttemptId>) -> Vec<Command> {
    let mut out = Vec::new();
    while let Some(command) = s.peek(now) {
        if let Command::Send(send) = command {
            wire.push(send.attempt);
        }
        out.push(command.clone());
        s.consume();
        assert!(out.len() < 10_000, "peek never ran dry");
    }
    out
}

fn play(
    preset_index: usize,
    workers: u32,
    budget_ms: Option<u64>,
    cached: bool,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let classes = ["llm", "read", "tool"];
    let mut short = scheduler(preset_index, workers, budget_ms, cached, false);
    let mut whole = scheduler(preset_index, workers, budget_ms, cached, true);
    let (mut wire_short, mut wire_whole) = (Vec::new(), Vec::new());
    let mut now: Millis = 0;
    let mut next_id: JobId = 1;
    for step in steps {
        match *step {
            Step::Submit {
                tenant,
                scope,
                class,
                priority,
                deadline,
            } => {
                let job = Job {
                    scope: Some(format!("s{scope}").into()),
                    class: classes[usize::from(class)].into(),
                    route: if class == 0 {
                        Route::ChatCompletion
                    } else {
                        Route::GetItem
                    },
                    priority: [Priority::Critical, Priority::Normal, Priority::Bulk]
                        [usize::from(priority)],
                    deadline: deadline.map(|d| now + d),
                    prompt_tokens: 50,
                    max_output_tokens: 50,
                    ..Job::new(
                        next_id,
                        format!("t{tenant}"),
                        format!("task-{next_id}"),
                        "sk",
                    )
                };
                next_id += 1;
                let a = short.submit(job.clone(), now);
                let b = whole.submit(job, now);
                prop_assert_eq!(a, b);
            }
            Step::Answer { which, code } => {
                prop_assert_eq!(&wire_short, &wire_whole);
                if !wire_short.is_empty() {
                    let at = usize::from(which) % wire_short.len();
                    let attempt = wire_short.remove(at);
                    wire_whole.remove(at);
                    let outcome = outcome(code);
                    short.on_outcome(attempt, &outcome, now);
                    whole.on_outcome(attempt, &outcome, now);
                }
            }
            Step::Wait { ms } => now += u64::from(ms),
            Step::Wake => {
                let wake = short.next_wakeup();
                prop_assert_eq!(wake, whole.next_wakeup());
                now = wake.map_or(now + 1, |w| w.max(now + 1));
            }
            Step::Cancel { job } => {
                let task = format!("task-{}", 1 + u64::from(job) % next_id);
                for tenant in ["t0", "t1", "t2"] {
                    short.cancel_task(tenant, &task, now);
                    whole.cancel_task(tenant, &task, now);
                }
            }
        }
        let a = drain(&mut short, now, &mut wire_short);
        let b = drain(&mut whole, now, &mut wire_whole);
        prop_assert_eq!(a, b);
        prop_assert_eq!(seen(&short), seen(&whole));
        prop_assert_eq!(short.rate_wakeup, whole.rate_wakeup);
        // The pruning skipped when no timer is stale: the timers outnumber the delayed
        // actions only by stale ones, so with none the earliest is current.
        if short.delayed.len() as u64 == short.counts.delayed {
            if let Some(t) = short.delayed.peek() {
                let current = short.jobs.get(&t.id).is_some_and(|j| {
                    j.ticket == t.ticket && j.phase == state::Phase::Delayed(t.due)
                });
                prop_assert!(current, "no stale timer counted, yet the earliest is stale");
            }
        }
    }
    Ok(())
}

proptest! {
    /// Random runs of every preset, few or many workers, with or without an execution
    /// budget and a `cached` degradation rung: the short way out changes nothing a driver can see or the core keeps.
    #[test]
    fn the_short_turn_leaves_what_the_whole_turn_leaves(
        preset_index in 0..PRESETS.len(),
        workers in 1u32..5,
        budget_ms in prop::option::weighted(0.3, 1_000u64..40_000),
        cached in any::<bool>(),
        steps in prop::collection::vec(step(), 1..120),
    ) {
        play(preset_index, workers, budget_ms, cached, &steps)?;
    }
}
