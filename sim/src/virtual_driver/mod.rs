//! The virtual driver: a discrete-event loop over a virtual clock (ms). The core's
//! `Scheduler` is the client and the provider model answers in-process, so a run is exact,
//! fast and the same on every machine.
//!
//! Each turn of the loop jumps to the earliest of: the next arrival (generated lazily), the
//! next cancellation, the next answer in the event queue, and the core's next wake-up. At
//! that time it plays the turn both drivers share (`driver_common::turn`): it submits
//! arrivals, cancels tasks, delivers answers (and lets the provider release their slots),
//! then drains the core's commands: a `Send` goes to the provider model at once and its
//! answer is queued at `now + latency` ([`wire::ModelWire`]); a `Finish` is measured. Memory
//! holds live actions and attempts in flight only; attempts stream to the sink.
//!
//! Backpressure on arrivals the core refuses is the live driver's too (see
//! `driver_common::admission`). An expectation with `abort = true` whose figure passes its
//! max ends the loop at that turn's time (`driver_common::abort`); what was played is
//! measured as at the cap, and `summary.aborted` says when and why.

pub mod crash;
pub mod events;
pub mod fleet;
pub mod provider_set;
pub mod wire;

use stampede_core::{Millis, Outcome};
use stampede_provider::config::ConfigError;

use crate::driver_common::abort::AbortWatch;
use crate::driver_common::turn::{Flow, Heard, Turn};
use crate::driver_common::SCENARIO_EPOCH_UNIX_MS;
use crate::measure::Measured;
use crate::progress::{self, Pacer, Progress, Snapshot};
use crate::scenario::Scenario;
use crate::sink::{AttemptSink, AuditSink, NoAudit};
use crash::{Crashes, Delivery};
use events::{AnswerHead, Event};
use fleet::Fleet;
use provider_set::ProviderSet;
use wire::ModelWire;

/// A run could not start or its output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The scenario's provider configuration is invalid.
    #[error("the provider configuration is invalid: {0}")]
    Provider(#[from] ConfigError),
    /// The scenario's client policy is invalid.
    #[error("the client policy is invalid: {0}")]
    Core(#[from] stampede_core::CoreError),
    /// attempts.csv or the audit trail could not be written, or the core sent for an action
    /// the driver does not know.
    #[error("{0}")]
    Output(String),
}

/// What the loop produced.
#[derive(Debug, Clone)]
pub struct VirtualRun {
    /// The run's figures, in virtual ms.
    pub measured: Measured,
    /// Useful loop events: arrivals admitted, cancellations, answers, sends and terminal
    /// outcomes. Offers the core refused are not among them (`refused_offers`).
    pub events: u64,
    /// Arrival offers the core refused under backpressure (each re-offer of a held arrival
    /// counts again): work the loop did that moved nothing.
    pub refused_offers: u64,
    /// Virtual time when the loop stopped (ms).
    pub end_ms: Millis,
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
    run_observed(scenario, sink, audit_sink, None)
}

/// [`run_with_audit`], reporting where the run stands to `progress` now and then (see
/// [`Pacer`]). Progress changes nothing the run measures or writes.
pub fn run_observed(
    scenario: &Scenario,
    sink: &mut dyn AttemptSink,
    audit_sink: &mut dyn AuditSink,
    progress: Option<&dyn Progress>,
) -> Result<VirtualRun, DriverError> {
    let providers = ProviderSet::new(scenario, SCENARIO_EPOCH_UNIX_MS)?;
    let mut policy = scenario.policy.clone();
    policy.wall_epoch_unix_ms = SCENARIO_EPOCH_UNIX_MS;
    // Audit events change no decision of the core: skip them when the sink drops them.
    policy.audit = policy.audit && audit_sink.keeps_events();
    let audit = policy.audit;
    let crashes = Crashes::new(scenario, &policy);
    let mut core = Fleet::new(
        &policy,
        crashes.first_ledger(),
        scenario.seed,
        scenario.client.replicas,
        scenario.client.fleet_share_delay(),
    )?;

    let mut turn = Turn::new(scenario, Default::default());
    turn.live
        .name_providers(scenario.providers.iter().flat_map(|p| {
            p.config
                .credentials
                .iter()
                .map(|c| (c.key.clone(), p.name.clone()))
        }));
    if providers.several() {
        turn.measure.name_providers(providers.names());
    }
    // Dead letters and case files only for a run that writes its files; the attempt
    // timelines they are made from only then too.
    turn.measure.keep_cases(sink.wants_rows());
    turn.live.keep_notes(sink.wants_rows());
    let mut wire = ModelWire::new(providers, crashes, sink, scenario.client.transport_retries);
    let abort = AbortWatch::new(scenario);
    let mut aborted = None;
    let mut pacer = Pacer::new();
    let requests = progress.map_or(0, |_| progress::requests_of(scenario));

    let mut now: Millis = 0;
    // Set when a turn changed nothing: the core's wake-up is then taken as at least `now + 1`,
    // so a wake-up that is due but yields nothing cannot spin the loop.
    let mut stalled = false;

    loop {
        let wake = core
            .next_wakeup()
            .map(|w| if stalled { w.max(now + 1) } else { w });
        let accepting = wire.crashes.accepting();
        let candidates = [
            wire.queue.peek_time(),
            turn.next_arrival(accepting),
            wake,
            wire.crashes.next_time(),
        ];
        let Some(t) = stampede_core::earliest(candidates) else {
            break;
        };
        let t = t.max(now);
        if !turn.open(t, &core) {
            now = turn.cap();
            break;
        }
        now = t;
        let before = turn.events;
        // A restart or a crash at a time comes first; while down, only answers move.
        if wire.crashes.planned() {
            let Turn { live, measure, .. } = &mut turn;
            wire.crashes
                .turn(now, core.sole_mut(), live, measure, audit_sink)?;
        }

        turn.arrivals(now, wire.crashes.accepting(), &mut core);
        // An answer is read where it lies in the queue and discarded once heard: it carries
        // about 200 bytes, and moving it out was a copy of bytes written at its send.
        while let Some(event) = wire.queue.peek_due(now) {
            match event {
                Event::Answer { head, outcome } => {
                    let AnswerHead {
                        attempt,
                        job,
                        attempt_no,
                        provider,
                        seq,
                        holds,
                    } = *head;
                    // The core settles the answer next, and the driver's record is read again
                    // when the action's terminal comes out: both were last touched at its
                    // send, long gone from cache. A 429 is nearly always retried, its record
                    // read next at the re-send, after its wait: not asked for (the look-up
                    // cost 42 instructions an answer of a storm).
                    core.prefetch(job);
                    if !matches!(outcome, Outcome::Response(r) if r.status == 429) {
                        turn.live.prefetch(job);
                    }
                    if holds {
                        wire.providers.depart(provider, seq, now);
                    }
                    match wire.crashes.deliver(attempt) {
                        Delivery::Deliver(attempt) => {
                            let heard = Heard {
                                attempt,
                                job,
                                attempt_no,
                            };
                            turn.answer(&mut core, heard, outcome, now);
                        }
                        // Its process died: the answer reaches no one.
                        Delivery::Dead => turn.events += 1,
                        Delivery::Crash => {
                            turn.events += 1;
                            let Turn { live, measure, .. } = &mut turn;
                            wire.crashes
                                .crash(now, core.sole_mut(), live, measure, audit_sink)?;
                        }
                    }
                    wire.queue.discard();
                }
                Event::HiddenResend { .. } => {
                    // Owned: the re-send keeps its attempt and request.
                    let Some(Event::HiddenResend {
                        attempt,
                        provider,
                        seq,
                        send,
                        request,
                        left,
                    }) = wire.queue.pop_due(now)
                    else {
                        unreachable!("the event lent is the one popped")
                    };
                    turn.events += 1;
                    wire.providers.depart(provider, seq, now);
                    wire.resend(attempt, send, request, left, &mut turn, now)?;
                }
            }
        }
        if turn.commands(now, &mut core, &mut wire)? == Flow::Dies {
            let Turn { live, measure, .. } = &mut turn;
            wire.crashes
                .crash(now, core.sole_mut(), live, measure, audit_sink)?;
        }
        if audit {
            core.drain_audit_with(|events| audit_sink.record(events))
                .map_err(DriverError::Output)?;
        }
        // An expectation with `abort = true` that can no longer hold ends the run here.
        if let Some(a) = abort.check(now, || [turn.measure.running()]) {
            aborted = Some(a);
            break;
        }
        if let Some(p) = progress.filter(|_| pacer.due(turn.events)) {
            let cap = turn.cap();
            p.update(&Snapshot::of(turn.measure.running(), now, cap, requests));
        }
        stalled = turn.events == before;
    }
    // Actions still live, the one held back and those never pulled did not finish in time.
    let entries = core.ledger_entries();
    turn.close(now, &core, entries);
    let mut measured = turn.measure.finish(now);
    measured.summary.crashes = wire.crashes.count();
    measured.downs = wire.crashes.downs().to_vec();
    measured.summary.aborted = aborted;
    Ok(VirtualRun {
        measured,
        events: turn.events,
        refused_offers: turn.admission.refused_offers(),
        end_ms: now,
    })
}
