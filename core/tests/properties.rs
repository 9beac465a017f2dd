//! Invariants of the scheduler over random job streams, outcomes, latencies, cancellations
//! and presets, played by a small discrete-event driver. Default case counts keep the file
//! under a few seconds; set PROPTEST_CASES for a longer search.

use crate::common;

use std::collections::BTreeMap;

use common::job;
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use stampede_core::{
    preset, AttemptId, Command, InMemoryLedger, JobId, Ledger, LookupResult, Millis, Outcome,
    Policy, Priority, Response, Scheduler, ScopeBudget, SendKind, TransportFailure, Usage, PRESETS,
};

const CLASSES: [&str; 5] = ["llm", "read", "tool", "uncertain_write", "idempotent_write"];
const WINDOW_MS: i128 = 60_000;

#[derive(Debug, Clone)]
struct JobSpec {
    arrival: Millis,
    class: usize,
    tenant: u8,
    scope: u8,
    priority: u8,
    deadline: Option<Millis>,
    read_of: Option<u8>,
    prompt: u32,
    max_output: u32,
}

#[derive(Debug, Clone)]
struct Input {
    seed: u64,
    preset: usize,
    workers: u32,
    rpm: Option<u32>,
    tpm: Option<u32>,
    /// Each scope's `max_delayed_requests` (the core asserts, in debug builds, that the
    /// retries waiting on a scope never pass it).
    max_delayed: Option<u32>,
    jobs: Vec<JobSpec>,
    outcomes: Vec<u8>,
    latencies: Vec<u16>,
    cancels: Vec<(Millis, u8)>,
}

fn job_spec() -> impl Strategy<Value = JobSpec> {
    (
        0u64..20_000,
        0usize..CLASSES.len(),
        0u8..3,
        0u8..2,
        0u8..3,
        prop::option::weighted(0.3, 1_000u64..60_000),
        prop::option::weighted(0.3, 0u8..3),
        (1u32..400, 1u32..400),
    )
        .prop_map(
            |(arrival, class, tenant, scope, priority, deadline, read_of, (prompt, max_output))| {
                JobSpec {
                    arrival,
                    class,
                    tenant,
                    scope,
                    priority,
                    deadline: deadline.map(|d| arrival + d),
                    read_of,
                    prompt,
                    max_output,
                }
            },
        )
}

fn input() -> impl Strategy<Value = Input> {
    (
        any::<u64>(),
        0usize..PRESETS.len(),
        1u32..6,
        prop::option::of(5u32..200),
        prop::option::of(500u32..5_000),
        prop::option::weighted(0.4, 1u32..4),
        prop::collection::vec(job_spec(), 1..40),
        prop::collection::vec(0u8..16, 1..24),
        prop::collection::vec(1u16..3_000, 1..8),
        prop::collection::vec((0u64..30_000, 0u8..40), 0..3),
    )
        .prop_map(
            |(seed, preset, workers, rpm, tpm, max_delayed, jobs, outcomes, latencies, cancels)| {
                Input {
                    seed,
                    preset,
                    workers,
                    rpm,
                    tpm,
                    max_delayed,
                    jobs,
                    outcomes,
                    latencies,
                    cancels,
                }
            },
        )
}

fn policy_of(input: &Input) -> Policy {
    let mut policy = preset(PRESETS[input.preset]).expect("listed preset");
    policy.workers = input.workers;
    for scope in ["s0", "s1"] {
        let budget = ScopeBudget {
            rpm: input.rpm,
            tpm: input.tpm,
            concurrency: Some(3),
            reserve: None,
            max_delayed_requests: input.max_delayed,
        };
        policy.scopes.insert(scope.into(), budget);
    }
    policy
}

fn http(
    status: u16,
    headers: &[(&str, &str)],
    code: Option<&str>,
    usage: Option<Usage>,
) -> Outcome {
    Outcome::Response(Response {
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        error_code: code.map(|c| c.to_owned().into()),
        usage,
        ..Response::new(status)
    })
}

/// The outcome of an action attempt for script code `code`, and the tokens it used as far as
/// the outcome tells (`None`: unknown).
fn action_outcome(code: u8, reserved: u64) -> (Outcome, Option<u64>) {
    let usage = |total: u64| Usage {
        prompt_tokens: (total / 2) as u32,
        completion_tokens: (total - total / 2) as u32,
    };
    match code {
        0..=4 => (
            http(200, &[], None, Some(usage(reserved / 2))),
            Some(reserved / 2),
        ),
        5 => (
            http(200, &[], None, Some(usage(reserved * 2))),
            Some(reserved * 2),
        ),
        6 => (http(200, &[], None, None), None),
        7 => (
            http(
                429,
                &[("retry-after", "2")],
                Some("rate_limit_exceeded"),
                None,
            ),
            Some(0),
        ),
        8 => (http(429, &[], None, None), Some(0)),
        9 => (http(503, &[("retry-after-ms", "700")], None, None), Some(0)),
        10 => (http(500, &[], None, None), None),
        11 => (Outcome::Transport(TransportFailure::ReadTimeout), None),
        12 => (
            Outcome::Transport(TransportFailure::ConnectRefused),
            Some(0),
        ),
        13 => (http(400, &[], None, None), Some(0)),
        14 => (http(429, &[], Some("insufficient_quota"), None), Some(0)),
        _ => (
            Outcome::Transport(TransportFailure::StreamCut {
                tokens_delivered: 2,
            }),
            None,
        ),
    }
}

fn lookup_outcome(code: u8) -> Outcome {
    match code % 4 {
        0 => Outcome::Lookup(LookupResult::Found {
            operation_id: Some("op".into()),
        }),
        1 => Outcome::Lookup(LookupResult::Absent),
        2 => Outcome::Lookup(LookupResult::Unsupported),
        _ => http(503, &[], None, None),
    }
}

/// A driver-side mirror of one scope's token bucket (same units: tokens x window ms), to
/// check that no reservation is granted beyond what the bucket holds.
#[derive(Debug)]
struct Mirror {
    capacity: i128,
    level: i128,
    last: Millis,
}

impl Mirror {
    fn refill(&mut self, now: Millis) {
        if now > self.last {
            self.level = (self.level + i128::from(now - self.last) * self.capacity)
                .min(self.capacity * WINDOW_MS);
            self.last = now;
        }
    }
}

struct Pending {
    attempt: AttemptId,
    outcome: Outcome,
    scope: String,
    reserved: u64,
    used: Option<u64>,
}

/// How `play` takes the core's commands.
#[derive(Clone, Copy)]
enum Take {
    /// `poll`, each moved out.
    Poll,
    /// `peek` (every other command twice), then `consume`.
    Peek,
}

/// Plays the input and checks every invariant; returns the command log for determinism.
fn play(input: &Input) -> Vec<(Millis, Command)> {
    play_taking(input, Take::Poll)
}

/// [`play`], taking the commands as `take` says.
fn play_taking(input: &Input, take: Take) -> Vec<(Millis, Command)> {
    let policy = policy_of(input);
    let shared = policy.share_scope_state;
    let shaped = policy.token_budget;
    let classes = policy.classes.clone();
    let reconcile = policy.reconciliation;
    let mut s = Scheduler::new(
        policy,
        InMemoryLedger::forgetting_terminal(),
        ChaCha8Rng::seed_from_u64(input.seed),
    )
    .expect("valid policy");
    let mut arrivals: Vec<(Millis, usize)> = input
        .jobs
        .iter()
        .enumerate()
        .map(|(i, j)| (j.arrival, i))
        .collect();
    arrivals.sort();
    let mut arrivals = arrivals.into_iter().peekable();
    let mut cancels = input.cancels.clone();
    cancels.sort();
    let mut cancels = cancels.into_iter().peekable();
    let mut pending: BTreeMap<(Millis, u64), Pending> = BTreeMap::new();
    let mut on_wire: BTreeMap<AttemptId, (JobId, String, u64)> = BTreeMap::new();
    let mut mirrors: BTreeMap<String, Mirror> = BTreeMap::new();
    let mut actions: BTreeMap<JobId, u32> = BTreeMap::new();
    let mut lookups: BTreeMap<JobId, u32> = BTreeMap::new();
    let mut terminals: BTreeMap<JobId, u32> = BTreeMap::new();
    let mut admitted: Vec<JobId> = Vec::new();
    let mut log = Vec::new();
    let mut seq = 0u64;
    let mut now: Millis = 0;
    for _step in 0..200_000 {
        // Events due now: arrivals, cancellations, outcomes.
        while let Some(&(_, i)) = arrivals.peek().filter(|(t, _)| *t <= now) {
            arrivals.next();
            let spec = &input.jobs[i];
            let id = i as JobId + 1;
            let mut j = job(id, CLASSES[spec.class]);
            j.tenant = format!("tenant-{}", spec.tenant).into();
            j.task = format!("task-{}", i % 5).into();
            j.scope = Some(format!("s{}", spec.scope).into());
            j.priority =
                [Priority::Critical, Priority::Normal, Priority::Bulk][usize::from(spec.priority)];
            j.deadline = spec.deadline;
            j.prompt_tokens = spec.prompt;
            j.max_output_tokens = spec.max_output;
            if let (Some(item), "read") = (spec.read_of, CLASSES[spec.class]) {
                j.resource = Some(format!("item-{item}"));
                j.coalescable = true;
            }
            if s.submit(j, now).is_ok() {
                admitted.push(id);
            }
        }
        while let Some(&(_, task)) = cancels.peek().filter(|(t, _)| *t <= now) {
            cancels.next();
            for tenant in 0..3 {
                s.cancel_task(
                    &format!("tenant-{tenant}"),
                    &format!("task-{}", task % 5),
                    now,
                );
            }
        }
        while let Some(entry) = pending.first_entry().filter(|e| e.key().0 <= now) {
            let p = entry.remove();
            let was_on_wire = on_wire.remove(&p.attempt).is_some();
            if let (true, Some(mirror)) = (was_on_wire, mirrors.get_mut(&p.scope)) {
                mirror.refill(now);
                let reserved = i128::from(p.reserved) * WINDOW_MS;
                match p.used.map(|u| i128::from(u) * WINDOW_MS) {
                    Some(used) if used < reserved => {
                        mirror.level =
                            (mirror.level + reserved - used).min(mirror.capacity * WINDOW_MS)
                    }
                    Some(used) => mirror.level -= used - reserved,
                    None => {}
                }
            }
            s.on_outcome(p.attempt, p.outcome, now);
        }
        // Commands due now.
        while let Some(command) = next_command(&mut s, now, take, log.len()) {
            match &command {
                Command::Send(send) => {
                    assert!(
                        !terminals.contains_key(&send.job),
                        "send after terminal: {send:?}"
                    );
                    if shared {
                        let record = s.scope_record(&send.scope).expect("scope known");
                        assert!(
                            now >= record.next_allowed_at,
                            "sent to {} at {now} before {}",
                            send.scope,
                            record.next_allowed_at
                        );
                    }
                    on_wire.insert(
                        send.attempt,
                        (
                            send.job,
                            send.scope.to_string(),
                            u64::from(send.reserved_tokens),
                        ),
                    );
                    assert!(
                        on_wire.len() <= input.workers as usize,
                        "in flight {} > slots",
                        on_wire.len()
                    );
                    assert!(s.gauges().in_flight <= u64::from(input.workers));
                    let reserved = u64::from(send.reserved_tokens);
                    if let (true, Some(tpm), true) = (shaped, input.tpm, reserved > 0) {
                        let capacity = i128::from(tpm);
                        let mirror = mirrors.entry(send.scope.to_string()).or_insert(Mirror {
                            capacity,
                            level: capacity * WINDOW_MS,
                            last: now,
                        });
                        mirror.refill(now);
                        let need = (i128::from(reserved) * WINDOW_MS).min(capacity * WINDOW_MS);
                        assert!(
                            mirror.level >= need,
                            "reserved {reserved} with {} tokens left",
                            mirror.level / WINDOW_MS
                        );
                        mirror.level -= i128::from(reserved) * WINDOW_MS;
                    }
                    let code = input.outcomes[(seq as usize) % input.outcomes.len()];
                    let latency =
                        u64::from(input.latencies[(seq as usize) % input.latencies.len()]);
                    let (outcome, used) = match send.kind {
                        SendKind::Action => {
                            *actions.entry(send.job).or_default() += 1;
                            action_outcome(code, reserved)
                        }
                        SendKind::Lookup(_) => {
                            *lookups.entry(send.job).or_default() += 1;
                            (lookup_outcome(code), Some(0))
                        }
                    };
                    pending.insert(
                        (now + latency, seq),
                        Pending {
                            attempt: send.attempt,
                            outcome,
                            scope: send.scope.to_string(),
                            reserved,
                            used,
                        },
                    );
                    seq += 1;
                }
                Command::Finish(done) => {
                    *terminals.entry(done.job).or_default() += 1;
                    let class = &input.jobs[done.job as usize - 1];
                    let rules = &classes[CLASSES[class.class]];
                    assert!(
                        done.waited_ms as u128 <= rules.max_wait.as_millis(),
                        "waited {} > max_wait",
                        done.waited_ms
                    );
                    // A cancelled attempt on the wire gave its tokens back.
                    let cancelled: Vec<AttemptId> = on_wire
                        .iter()
                        .filter(|(_, (job, ..))| *job == done.job)
                        .map(|(a, _)| *a)
                        .collect();
                    for attempt in cancelled {
                        let (_, scope, reserved) = on_wire.remove(&attempt).unwrap();
                        if let Some(mirror) = mirrors.get_mut(&scope) {
                            mirror.refill(now);
                            mirror.level = (mirror.level + i128::from(reserved) * WINDOW_MS)
                                .min(mirror.capacity * WINDOW_MS);
                        }
                    }
                }
            }
            log.push((now, command));
        }
        live_entries_agree_with_the_ledger(&s, &terminals);
        // Next event time.
        let next = [
            arrivals.peek().map(|(t, _)| *t),
            cancels.peek().map(|(t, _)| *t),
            pending.keys().next().map(|(t, _)| *t),
            s.next_wakeup(),
        ]
        .into_iter()
        .flatten()
        .min();
        match next {
            Some(t) => now = t.max(now + 1),
            None => break,
        }
    }
    assert!(
        pending.is_empty() && arrivals.peek().is_none(),
        "the run did not settle"
    );
    for id in &admitted {
        assert_eq!(
            terminals.get(id),
            Some(&1),
            "job {id} must end exactly once"
        );
        let class = &classes[CLASSES[input.jobs[*id as usize - 1].class]];
        let extra = if class.reconcile {
            reconcile.max_resends
        } else {
            0
        };
        assert!(
            actions.get(id).copied().unwrap_or(0) <= class.max_attempts + extra,
            "job {id} over its attempts"
        );
        assert!(
            lookups.get(id).copied().unwrap_or(0) <= reconcile.max_lookups,
            "job {id} over its look-ups"
        );
    }
    assert_eq!(s.gauges().live, 0);
    assert_eq!(s.gauges().tokens_reserved, 0);
    log
}

/// What the scheduler says of its live actions (`live_entries`, which a driver whose ledger
/// keeps nothing reads at the end of a run) is what its ledger holds for them: each live
/// action's entry, and every action the ledger has unfinished whose terminal has not been
/// given. (The ledger also keeps a write left `reconciliation_required` after its terminal.)
/// The next command due at `now`, taken as `take` says; `n` commands were taken before.
fn next_command(s: &mut Scheduler, now: Millis, take: Take, n: usize) -> Option<Command> {
    match take {
        Take::Poll => s.poll(now),
        Take::Peek => {
            let command = s.peek(now)?.clone();
            if n % 2 == 1 {
                // Lent again, unchanged, until consumed.
                assert_eq!(s.peek(now), Some(&command), "peek lends the same command");
            }
            s.consume();
            Some(command)
        }
    }
}

fn live_entries_agree_with_the_ledger(s: &Scheduler, terminals: &BTreeMap<JobId, u32>) {
    let live = s.live_entries();
    assert!(
        live.windows(2).all(|w| w[0].job.id < w[1].job.id),
        "live entries come once each, by id"
    );
    for entry in &live {
        assert_eq!(
            s.ledger().get(entry.job.id).as_ref(),
            Some(entry),
            "the ledger holds what the scheduler says of live action {}",
            entry.job.id
        );
    }
    let unfinished = s
        .ledger()
        .entries()
        .expect("an in-memory ledger reads")
        .into_iter()
        .filter(|e| !e.state.is_terminal() && !terminals.contains_key(&e.job.id));
    for entry in unfinished {
        assert!(
            live.binary_search_by_key(&entry.job.id, |e| e.job.id)
                .is_ok(),
            "action {} is unfinished in the ledger but not live in the scheduler",
            entry.job.id
        );
    }
}

/// 64 cases by default (fast enough for every `cargo test`); PROPTEST_CASES searches longer.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Attempts within the class budget, waits within max_wait, nothing before a scope's
    /// next_allowed_at, in-flight within the slots, reservations within the bucket except as
    /// debt, exactly one terminal per job (all checked inside `play`).
    #[test]
    fn invariants_hold_over_random_runs(input in input()) {
        play(&input);
    }

    /// Identical inputs and seed give identical command sequences.
    #[test]
    fn identical_inputs_give_identical_commands(input in input()) {
        prop_assert_eq!(play(&input), play(&input));
    }

    /// A driver that reads each command where it lies (`peek`, then `consume`) gets the
    /// commands, in the order, that `poll` hands out.
    #[test]
    fn peek_and_consume_give_what_poll_gives(input in input()) {
        prop_assert_eq!(play_taking(&input, Take::Peek), play(&input));
    }
}
