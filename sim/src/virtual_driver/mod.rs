//! The virtual driver: a discrete-event loop over a virtual clock (ms). The core's
//! `Scheduler` is the client and the provider model answers in-process, so a run is exact,
//! fast and the same on every machine.
//!
//! Each turn of the loop jumps to the earliest of: the next arrival (generated lazily), the
//! next cancellation, the next answer in the event queue, and the core's next wake-up. At
//! that time it submits arrivals, cancels tasks, delivers answers (and lets the provider
//! release their slots), then drains the core's commands: a `Send` goes to the provider
//! model at once and its answer is queued at `now + latency`; a `Finish` is measured. Memory
//! holds live actions and attempts in flight only; attempts stream to the sink.
//!
//! Backpressure: when the core's admission refuses an action (its queue for that tenant and
//! priority is full), the driver stops pulling arrivals, like a producer that honours the
//! refusal, and offers the same action again when an action finishes or the refusal's
//! retry-after has passed. The action's latency, queue wait and deadline still count from
//! its arrival. One refused action holds back the arrivals behind it (head of line).

pub mod audit_sink;
pub mod crash;
pub mod events;
pub mod translate;

use std::collections::HashMap;

use stampede_core::{Command, JobId, Millis, Scheduler, TerminalStatus};
use stampede_provider::config::ConfigError;
use stampede_provider::model::ProviderModel;
use stampede_reports::AttemptRow;

use crate::measure::{Measured, Measurement};
use crate::rng;
use crate::scenario::Scenario;
use crate::workload::{self, Arrival, Arrivals};
pub use audit_sink::{AuditFile, AuditSink, NoAudit};
use crash::{Crashes, Delivery};
use events::{Event, EventQueue};
use translate::ActionFacts;

/// Wall-clock time of virtual t = 0 (2026-01-01T00:00:00Z, ms since the Unix epoch): fixed,
/// so HTTP-date Retry-After values are the same on every run.
pub const VIRTUAL_EPOCH_UNIX_MS: u64 = 1_767_225_600_000;

/// Where attempts.csv rows go as the journal drains.
pub trait AttemptSink {
    fn attempt(&mut self, row: &AttemptRow) -> Result<(), String>;
}

/// Discards rows (benchmarks).
pub struct NoAttempts;

impl AttemptSink for NoAttempts {
    fn attempt(&mut self, _row: &AttemptRow) -> Result<(), String> {
        Ok(())
    }
}

impl<W: std::io::Write> AttemptSink for csv::Writer<W> {
    fn attempt(&mut self, row: &AttemptRow) -> Result<(), String> {
        self.serialize(row)
            .map_err(|e| format!("writing attempts.csv: {e}"))
    }
}

/// A run could not start or its output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error("the provider configuration is invalid: {0}")]
    Provider(#[from] ConfigError),
    #[error("the client policy is invalid: {0}")]
    Core(#[from] stampede_core::CoreError),
    #[error("{0}")]
    Output(String),
}

/// What the loop produced.
#[derive(Debug, Clone)]
pub struct VirtualRun {
    pub measured: Measured,
    /// Loop events handled: arrivals, cancellations, answers and commands.
    pub events: u64,
    /// Virtual time when the loop stopped (ms).
    pub end_ms: Millis,
}

/// A live action as the driver tracks it.
struct Live {
    facts: ActionFacts,
    submitted_at: Millis,
    deadline: Option<Millis>,
    dispatched: bool,
}

/// Plays a scenario in virtual time.
pub fn run(scenario: &Scenario, sink: &mut dyn AttemptSink) -> Result<VirtualRun, DriverError> {
    run_with_audit(scenario, sink, &mut NoAudit)
}

/// Plays a scenario in virtual time, crashing and restoring the runner as its `[[crashes]]`
/// say (see [`crash`]), and handing the runner's audit events to `audit_sink`.
pub fn run_with_audit(
    scenario: &Scenario,
    sink: &mut dyn AttemptSink,
    audit_sink: &mut dyn AuditSink,
) -> Result<VirtualRun, DriverError> {
    let mut provider = ProviderModel::new(
        scenario.provider.clone(),
        rng::stream_u64(scenario.seed, "provider"),
        VIRTUAL_EPOCH_UNIX_MS,
    )?;
    // The driver reads only a completion's id from its body (translate::answered).
    provider.set_lean_bodies(true);
    let mut policy = scenario.policy.clone();
    policy.wall_epoch_unix_ms = VIRTUAL_EPOCH_UNIX_MS;
    // Audit events change no decision of the core: skip them when the sink drops them.
    policy.audit = policy.audit && audit_sink.keeps_events();
    let audit = policy.audit;
    let mut crashes = Crashes::new(scenario, &policy);
    let mut core = Scheduler::new(
        policy,
        crashes.first_ledger(),
        rng::stream(scenario.seed, "client"),
    )?;

    let mut arrivals = Arrivals::new(scenario);
    // An arrival the core refused, and when to offer it again.
    let mut held: Option<(Arrival, Millis)> = None;
    let cancels = workload::cancellations(scenario);
    let mut next_cancel = 0usize;
    let mut queue = EventQueue::default();
    let mut live: HashMap<JobId, Live> = HashMap::new();
    let mut measure = Measurement::new(scenario.bucket_ms);
    let bucket = scenario.bucket_ms.max(1);
    let cap = scenario.duration_ms;

    let mut now: Millis = 0;
    let mut next_sample: Millis = bucket;
    let mut events: u64 = 0;
    // Set when a turn changed nothing: the core's wake-up is then taken as at least `now + 1`,
    // so a wake-up that is due but yields nothing cannot spin the loop.
    let mut stalled = false;

    loop {
        let wake = core
            .next_wakeup()
            .map(|w| if stalled { w.max(now + 1) } else { w });
        let arrival_time = match &held {
            Some((_, retry_at)) => Some(*retry_at),
            None => arrivals.peek_time(),
        };
        let candidates = [
            queue.peek_time(),
            arrival_time.filter(|_| crashes.accepting()),
            cancels
                .get(next_cancel)
                .map(|c| c.at)
                .filter(|_| crashes.accepting()),
            wake,
            crashes.next_time(),
        ];
        let Some(t) = candidates.into_iter().flatten().min() else {
            break;
        };
        let t = t.max(now);
        while next_sample <= t.min(cap) {
            let g = core.gauges();
            measure.on_gauges(
                next_sample - 1,
                g.queued + g.delayed,
                g.in_flight,
                g.tokens_reserved,
            );
            next_sample += bucket;
        }
        if t > cap {
            now = cap;
            break;
        }
        now = t;
        let before = events;
        // A restart or a crash at a time comes first; while down, only answers move.
        crashes.turn(now, &mut core, &mut live, &mut measure, audit_sink)?;

        loop {
            let arrival = match held.take() {
                Some((arrival, retry_at)) if retry_at <= now && crashes.accepting() => arrival,
                Some(waiting) => {
                    held = Some(waiting);
                    break;
                }
                None if crashes.accepting() && arrivals.peek_time().is_some_and(|t| t <= now) => {
                    match arrivals.next() {
                        Some(a) => {
                            measure.on_submit();
                            a
                        }
                        None => break,
                    }
                }
                None => break,
            };
            events += 1;
            let job = arrival.job.clone();
            let facts = ActionFacts {
                tenant: job.tenant.clone(),
                class: job.class.clone(),
                resource: job.resource.clone(),
                prompt_tokens: job.prompt_tokens,
                max_output_tokens: job.max_output_tokens,
                external_ref: job.external_ref.clone(),
                stream: job.stream,
                payload_hash: job.payload_hash,
            };
            let (id, deadline) = (job.id, job.deadline);
            match core.submit(job, now) {
                Ok(()) => {
                    live.insert(
                        id,
                        Live {
                            facts,
                            submitted_at: arrival.at,
                            deadline,
                            dispatched: false,
                        },
                    );
                }
                Err(rejection) => {
                    measure.on_pushed_back(id);
                    held = Some((arrival, now + rejection.retry_after_ms.max(1)));
                    break;
                }
            }
        }
        while let Some(c) = cancels
            .get(next_cancel)
            .filter(|c| c.at <= now && crashes.accepting())
        {
            events += 1;
            core.cancel_task(&c.tenant, &c.task, now);
            next_cancel += 1;
        }
        while let Some(Event::Answer {
            attempt,
            seq,
            outcome,
        }) = queue.pop_due(now)
        {
            events += 1;
            provider.depart(seq, now);
            match crashes.deliver(attempt) {
                Delivery::Deliver(attempt) => core.on_outcome(attempt, outcome, now),
                // Its process died: the answer reaches no one.
                Delivery::Dead => {}
                Delivery::Crash => {
                    crashes.crash(now, &mut core, &mut live, &mut measure, audit_sink)?
                }
            }
        }
        while let Some(command) = core.poll(now) {
            events += 1;
            match command {
                Command::Send(send) => {
                    if crashes.before_send(&send) {
                        crashes.crash(now, &mut core, &mut live, &mut measure, audit_sink)?;
                        break;
                    }
                    let Some(action) = live.get_mut(&send.job) else {
                        // The core sends only for actions it admitted, which are all live here.
                        return Err(DriverError::Output(format!(
                            "the core sent for unknown action {}",
                            send.job
                        )));
                    };
                    if !action.dispatched {
                        action.dispatched = true;
                        measure.on_first_dispatch(now - action.submitted_at);
                    }
                    measure.on_reserved(send.reserved_tokens);
                    let request = translate::request(&send, &action.facts);
                    let decision = provider.arrive(&request, now);
                    let seq = decision.seq;
                    let (after, outcome) = translate::outcome(&send, decision);
                    for entry in provider.drain_journal() {
                        crashes.on_journal(&entry);
                        let row = measure.on_journal(&entry, Some(now + after));
                        sink.attempt(&row).map_err(DriverError::Output)?;
                    }
                    let global = crashes.global(send.attempt);
                    queue.push(
                        now + after,
                        Event::Answer {
                            attempt: global,
                            seq,
                            outcome,
                        },
                    );
                    if crashes.after_send(&send, global) {
                        crashes.crash(now, &mut core, &mut live, &mut measure, audit_sink)?;
                        break;
                    }
                }
                Command::Finish(terminal) => {
                    let Some(action) = live.remove(&terminal.job) else {
                        continue;
                    };
                    let late = terminal.status != TerminalStatus::Cancelled
                        && action.deadline.is_some_and(|d| now > d);
                    measure.on_terminal(
                        now,
                        &action.facts.tenant,
                        &terminal,
                        now - action.submitted_at,
                        late,
                    );
                    // Capacity freed: offer a refused arrival again at once.
                    if let Some((_, retry_at)) = &mut held {
                        *retry_at = now;
                    }
                }
            }
        }
        if audit {
            core.drain_audit_with(|events| audit_sink.record(events))
                .map_err(DriverError::Output)?;
        }
        stalled = events == before;
    }
    // The last, partial bucket.
    if next_sample.saturating_sub(bucket) <= now {
        let g = core.gauges();
        measure.on_gauges(now, g.queued + g.delayed, g.in_flight, g.tokens_reserved);
    }
    // Actions still live, the one held back and those never pulled did not finish in time.
    let mut unfinished = live.len() as u64;
    let mut late = live
        .values()
        .filter(|a| a.deadline.is_some_and(|d| d < now))
        .count() as u64;
    if let Some((arrival, _)) = &held {
        unfinished += 1;
        late += u64::from(arrival.job.deadline.is_some_and(|d| d < now));
    }
    // Arrivals due by the cap but never offered (held back behind a refusal) count as
    // unfinished logical requests; those due after the cap were never part of the run.
    while arrivals.peek_time().is_some_and(|t| t <= now) {
        let Some(arrival) = arrivals.next() else {
            break;
        };
        measure.on_submit();
        unfinished += 1;
        late += u64::from(arrival.job.deadline.is_some_and(|d| d < now));
    }
    let mut measured = measure.finish(now, unfinished, late);
    measured.summary.crashes = crashes.count();
    Ok(VirtualRun {
        measured,
        events,
        end_ms: now,
    })
}
