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
//! Backpressure on arrivals the core refuses is the live driver's too (see
//! `driver_common::admission`). An expectation with `abort = true` whose figure passes its
//! max ends the loop at that turn's time (`driver_common::abort`); what was played is
//! measured as at the cap, and `summary.aborted` says when and why.

pub mod audit_sink;
pub mod crash;
pub mod events;
pub mod fleet;
pub mod provider_set;
pub mod translate;

use stampede_core::{Command, Millis};
use stampede_provider::config::ConfigError;
use stampede_reports::AttemptRow;

use crate::driver_common::abort::AbortWatch;
use crate::driver_common::admission::Admission;
use crate::driver_common::gauges::GaugeSampler;
use crate::driver_common::live_actions::LiveActions;
use crate::measure::{Measured, Measurement, SentBy};
use crate::progress::{self, Pacer, Progress, Snapshot};
use crate::scenario::Scenario;
use crate::workload;
pub use audit_sink::{AuditFile, AuditSink, NoAudit};
use crash::{Crashes, Delivery};
use events::{Event, EventQueue};
use fleet::Fleet;
use provider_set::ProviderSet;

/// Wall-clock time of virtual t = 0 (2026-01-01T00:00:00Z, ms since the Unix epoch): fixed,
/// so HTTP-date Retry-After values are the same on every run.
pub const VIRTUAL_EPOCH_UNIX_MS: u64 = 1_767_225_600_000;

/// Where attempts.csv rows go as the journal drains.
pub trait AttemptSink {
    /// Takes one attempts.csv row; an `Err` says why it could not be written.
    fn attempt(&mut self, row: &AttemptRow) -> Result<(), String>;

    /// Whether rows are wanted at all: `false` lets the loop skip building them.
    fn wants_rows(&self) -> bool {
        true
    }
}

/// Discards rows (benchmarks).
pub struct NoAttempts;

impl AttemptSink for NoAttempts {
    fn attempt(&mut self, _row: &AttemptRow) -> Result<(), String> {
        Ok(())
    }

    fn wants_rows(&self) -> bool {
        false
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
    let mut providers = ProviderSet::new(scenario, VIRTUAL_EPOCH_UNIX_MS)?;
    let mut policy = scenario.policy.clone();
    policy.wall_epoch_unix_ms = VIRTUAL_EPOCH_UNIX_MS;
    // Audit events change no decision of the core: skip them when the sink drops them.
    policy.audit = policy.audit && audit_sink.keeps_events();
    let audit = policy.audit;
    let mut crashes = Crashes::new(scenario, &policy);
    let mut core = Fleet::new(
        &policy,
        crashes.first_ledger(),
        scenario.seed,
        scenario.client.replicas,
        scenario.client.fleet_share_delay(),
    )?;

    let mut admission = Admission::new(scenario, Default::default());
    let cancels = workload::cancellations(scenario);
    let mut next_cancel = 0usize;
    let mut queue = EventQueue::default();
    let mut live = LiveActions::default();
    live.set_claims(scenario.client.claims);
    live.name_providers(scenario.providers.iter().flat_map(|p| {
        p.config
            .credentials
            .iter()
            .map(|c| (c.key.clone(), p.name.clone()))
    }));
    let hidden_retries = scenario.client.transport_retries;
    let mut measure = Measurement::new(scenario.bucket_ms, scenario.duration_ms);
    if providers.several() {
        measure.name_providers(providers.names());
    }
    // Dead letters and case files only for a run that writes its files.
    measure.keep_cases(sink.wants_rows());
    let mut gauges = GaugeSampler::new(scenario.bucket_ms);
    let cap = scenario.duration_ms;
    let abort = AbortWatch::new(scenario);
    let mut aborted = None;
    let mut pacer = Pacer::new();
    let requests = progress.map_or(0, |_| progress::requests_of(scenario));

    let mut now: Millis = 0;
    let mut events: u64 = 0;
    // Set when a turn changed nothing: the core's wake-up is then taken as at least `now + 1`,
    // so a wake-up that is due but yields nothing cannot spin the loop.
    let mut stalled = false;

    loop {
        let wake = core
            .next_wakeup()
            .map(|w| if stalled { w.max(now + 1) } else { w });
        let candidates = [
            queue.peek_time(),
            admission.next_time().filter(|_| crashes.accepting()),
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
        gauges.sample_until(t.min(cap), &core, &mut measure);
        if t > cap {
            now = cap;
            break;
        }
        now = t;
        let before = events;
        // A restart or a crash at a time comes first; while down, only answers move.
        if crashes.planned() {
            crashes.turn(now, core.sole_mut(), &mut live, &mut measure, audit_sink)?;
        }

        events += admission.admit(now, crashes.accepting(), &mut core, &mut live, &mut measure);
        while let Some(c) = cancels
            .get(next_cancel)
            .filter(|c| c.at <= now && crashes.accepting())
        {
            events += 1;
            core.cancel_task(&c.tenant, &c.task, now);
            next_cancel += 1;
        }
        while let Some(event) = queue.pop_due(now) {
            events += 1;
            match event {
                Event::Answer {
                    attempt,
                    job,
                    attempt_no,
                    provider,
                    seq,
                    outcome,
                } => {
                    providers.depart(provider, seq, now);
                    match crashes.deliver(attempt) {
                        Delivery::Deliver(attempt) => {
                            live.note_answer(job, attempt_no, &outcome, now);
                            core.on_outcome(attempt, outcome, now);
                        }
                        // Its process died: the answer reaches no one.
                        Delivery::Dead => {}
                        Delivery::Crash => crashes.crash(
                            now,
                            core.sole_mut(),
                            &mut live,
                            &mut measure,
                            audit_sink,
                        )?,
                    }
                }
                Event::HiddenResend {
                    attempt,
                    provider,
                    seq,
                    send,
                    request,
                    left,
                } => {
                    providers.depart(provider, seq, now);
                    let (provider, decision) = providers.arrive(&request, now);
                    let seq = decision.seq;
                    let (after, outcome) = translate::outcome(&send, decision);
                    let by = SentBy {
                        tenant: live.tenant_of(send.job),
                        class: live.class_of(send.job),
                        priority: live.priority_of(send.job),
                        action: send.job,
                        attempt_no: send.attempt_no,
                        provider,
                    };
                    while let Some(entry) = providers.next_journal(provider) {
                        measure
                            .record(&entry, Some(now + after), &by, sink)
                            .map_err(DriverError::Output)?;
                    }
                    let event = if left > 0 && translate::hidden_layer_retries(&outcome) {
                        Event::HiddenResend {
                            attempt,
                            provider,
                            seq,
                            send,
                            request,
                            left: left - 1,
                        }
                    } else {
                        Event::Answer {
                            attempt,
                            job: send.job,
                            attempt_no: send.attempt_no,
                            provider,
                            seq,
                            outcome,
                        }
                    };
                    queue.push(now + after, event);
                }
            }
        }
        while let Some(command) = core.poll(now) {
            events += 1;
            match command {
                Command::Send(send) => {
                    if crashes.before_send(&send) {
                        crashes.crash(now, core.sole_mut(), &mut live, &mut measure, audit_sink)?;
                        break;
                    }
                    let request = live
                        .dispatch(&send, now, &mut measure)
                        .map_err(DriverError::Output)?;
                    let (provider, decision) = providers.arrive(&request, now);
                    let seq = decision.seq;
                    let (after, outcome) = translate::outcome(&send, decision);
                    let by = SentBy {
                        tenant: live.tenant_of(send.job),
                        class: live.class_of(send.job),
                        priority: live.priority_of(send.job),
                        action: send.job,
                        attempt_no: send.attempt_no,
                        provider,
                    };
                    while let Some(entry) = providers.next_journal(provider) {
                        crashes.on_journal(&entry);
                        measure
                            .record(&entry, Some(now + after), &by, sink)
                            .map_err(DriverError::Output)?;
                    }
                    let global = crashes.global(send.attempt);
                    let event = if hidden_retries > 0 && translate::hidden_layer_retries(&outcome) {
                        Event::HiddenResend {
                            attempt: global,
                            provider,
                            seq,
                            send: Box::new(send.clone()),
                            request: Box::new(request),
                            left: hidden_retries - 1,
                        }
                    } else {
                        Event::Answer {
                            attempt: global,
                            job: send.job,
                            attempt_no: send.attempt_no,
                            provider,
                            seq,
                            outcome,
                        }
                    };
                    queue.push(now + after, event);
                    if crashes.after_send(&send, global) {
                        crashes.crash(now, core.sole_mut(), &mut live, &mut measure, audit_sink)?;
                        break;
                    }
                }
                Command::Finish(terminal) => {
                    if live.finish(&terminal, now, &mut measure) {
                        admission.ended(&terminal, now, &mut measure);
                    }
                }
            }
        }
        if audit {
            core.drain_audit_with(|events| audit_sink.record(events))
                .map_err(DriverError::Output)?;
        }
        // An expectation with `abort = true` that can no longer hold ends the run here.
        if let Some(a) = abort.check(now, &[measure.running()]) {
            aborted = Some(a);
            break;
        }
        if let Some(p) = progress.filter(|_| pacer.due(events)) {
            p.update(&Snapshot::of(measure.running(), now, cap, requests));
        }
        stalled = events == before;
    }
    // The last, partial bucket.
    gauges.finish(now, &core, &mut measure);
    // Actions still live, the one held back and those never pulled did not finish in time.
    live.unfinished(now, &mut measure, core.ledger_entries());
    admission.unfinished(now, &mut measure);
    let mut measured = measure.finish(now);
    measured.summary.crashes = crashes.count();
    measured.downs = crashes.downs().to_vec();
    measured.summary.aborted = aborted;
    Ok(VirtualRun {
        measured,
        events,
        refused_offers: admission.refused_offers(),
        end_ms: now,
    })
}
