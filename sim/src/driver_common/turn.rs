//! One turn of a driver's loop, written once for both drivers.
//!
//! A driver owns a clock and a wire: the virtual one jumps its clock to the next event and
//! answers through the provider model in-process; the live one sleeps on a real clock and
//! answers over HTTP. Everything between "it is now `now`" and "wait until the next thing"
//! is the same for both, and lives here. The call order of one turn, at a time that never
//! goes back:
//!
//! 1. [`Turn::open`]: report buckets that ended by `now` are sampled; `false` when `now` is
//!    past the scenario's duration (the driver stops at the cap);
//! 2. [`Turn::arrivals`]: the arrivals due are offered with backpressure, then the
//!    cancellations due are handed to the core;
//! 3. [`Turn::answer`], once per answer the driver heard by `now`, in the order it heard them;
//! 4. [`Turn::commands`]: the core's commands are drained; each `Send` is measured and
//!    rendered as a provider request, then handed to the driver's [`Wire`]; each `Finish` is
//!    measured and frees its capacity for the arrival held back.
//!
//! The driver then does what is its own (the live one makes the ledger durable and puts the
//! attempts on the wire; the virtual one simulates crashes), and waits until the earliest of
//! [`Turn::next_arrival`], the core's `next_wakeup` and its own next event. When the loop
//! ends, [`Turn::close`] measures what was left unfinished.

use std::collections::BTreeSet;

use stampede_core::{Command, JobId, Millis, SendAttempt, Terminal};
use stampede_provider::model::Request;

use super::admission::Admission;
use super::client_core::ClientCore;
use super::gauges::GaugeSampler;
use super::live_actions::{LiveAction, LiveActions};
use crate::measure::Measurement;
use crate::scenario::Scenario;
use crate::workload::{self, Cancellation};

/// The core sent for an action the driver does not track: a bug in the core or the driver,
/// with its message.
#[derive(Debug)]
pub struct Untracked(pub String);

/// Whether the runner lives on after a send.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Go on draining.
    Go,
    /// The runner dies here (a simulated crash): stop draining; the driver kills it.
    Dies,
}

/// Where a driver puts the core's attempts: the provider model in virtual time, or HTTP.
pub trait Wire {
    /// What putting an attempt on the wire can fail with.
    type Error: From<Untracked>;

    /// Whether the runner dies just before `send` leaves (a simulated crash): the attempt is
    /// then neither measured nor sent.
    fn dies_before(&mut self, _send: &SendAttempt) -> bool {
        false
    }

    /// Puts `send`, rendered as `request`, on the wire at `now` (ms). `action` is the live
    /// action it is for (its tenant, class and priority; lent by the dispatch that just found
    /// it, not looked up again); `measure` takes what the provider journaled.
    /// Lent, not given: the virtual wire reads it where the core's command lies (a send is
    /// 150 bytes, and each move of it was a copy), and a wire that keeps it clones it.
    fn send(
        &mut self,
        send: &SendAttempt,
        request: &Request,
        action: &LiveAction,
        measure: &mut Measurement,
        now: Millis,
    ) -> Result<Flow, Self::Error>;

    /// An action ended (measured already): for a driver that keeps terminal outcomes (it
    /// clones what it keeps).
    fn finished(&mut self, _terminal: &Terminal) {}
}

/// What both drivers keep between turns: the arrivals still to offer, the cancellations still
/// to make, the actions the core holds, the gauge sampler and the measurement.
pub struct Turn {
    /// Arrivals, with the one the core refused.
    pub admission: Admission,
    /// Actions the core admitted, until their terminal outcome.
    pub live: LiveActions,
    /// Everything counted so far.
    pub measure: Measurement,
    /// Useful loop events so far: arrivals admitted, cancellations, answers, sends and
    /// terminal outcomes (refused offers are counted apart, by `admission`).
    pub events: u64,
    gauges: GaugeSampler,
    cancels: Vec<Cancellation>,
    next_cancel: usize,
    /// The scenario's duration (ms): a turn after it does not happen.
    cap: Millis,
    /// The last attempt's provider request, rewritten in place for the next one (see
    /// `translate::fill_request`).
    request: Request,
}

impl Turn {
    /// The turn state of `scenario` at its start; arrivals with ids in `restored` (submitted
    /// by a dead process) are skipped.
    pub fn new(scenario: &Scenario, restored: BTreeSet<JobId>) -> Self {
        let mut live = LiveActions::default();
        live.set_claims(scenario.client.claims);
        Self {
            admission: Admission::new(scenario, restored),
            live,
            measure: Measurement::new(scenario.bucket_ms, scenario.duration_ms),
            events: 0,
            gauges: GaugeSampler::new(scenario.bucket_ms),
            cancels: workload::cancellations(scenario),
            next_cancel: 0,
            cap: scenario.duration_ms,
            request: Request::default(),
        }
    }

    /// Resumes a dead process's run at `at` (ms): buckets it lived through are not sampled
    /// again, and the cancellations it made (`done` of them, counted by `cancellations_done`
    /// on [`Turn::cancellations`]) are not made again.
    pub fn resume_at(&mut self, at: Millis, done: usize) {
        self.gauges.resume_at(at);
        self.next_cancel = done.min(self.cancels.len());
    }

    /// Every cancellation of the scenario, in time order.
    pub fn cancellations(&self) -> &[Cancellation] {
        &self.cancels
    }

    /// The scenario's duration (ms).
    pub fn cap(&self) -> Millis {
        self.cap
    }

    /// Opens the turn at `now` (ms): samples the report buckets that ended by then. `false`
    /// when `now` is past the cap: the run stops at the cap, with no turn there.
    #[must_use]
    pub fn open(&mut self, now: Millis, core: &impl ClientCore) -> bool {
        self.gauges
            .sample_until(now.min(self.cap), core, &mut self.measure);
        now <= self.cap
    }

    /// Offers the arrivals due by `now` (ms) to `core`, then hands it the cancellations due.
    /// Nothing is offered or cancelled while the runner is not `accepting` (it is down).
    pub fn arrivals(&mut self, now: Millis, accepting: bool, core: &mut impl ClientCore) {
        self.events +=
            self.admission
                .admit(now, accepting, core, &mut self.live, &mut self.measure);
        while let Some(c) = self
            .cancels
            .get(self.next_cancel)
            .filter(|c| c.at <= now && accepting)
        {
            self.events += 1;
            core.cancel_task(&c.tenant, &c.task, now);
            self.next_cancel += 1;
        }
    }

    /// The client heard at `now` (ms) how attempt `attempt_no` of action `job` (the core's
    /// attempt `attempt`) ended.
    pub fn answer(
        &mut self,
        core: &mut impl ClientCore,
        heard: Heard,
        outcome: &stampede_core::Outcome,
        now: Millis,
    ) {
        self.events += 1;
        self.live
            .note_answer(heard.job, heard.attempt_no, outcome, now);
        core.on_outcome(heard.attempt, outcome, now);
    }

    /// Drains the core's commands at `now` (ms): each `Send` is measured, rendered as a
    /// provider request and handed to `wire`; each `Finish` is measured, frees its capacity
    /// and goes to `wire.finished`. A command is consumed once carried out. Stops early with
    /// [`Flow::Dies`] when the runner dies at a send.
    ///
    /// Inlined into each driver's loop, its one caller: left to the compiler, an unrelated
    /// change (sdk_client's call slots, commit 1e567a0) moved it out of the virtual loop, and
    /// the naive backlog's loop then ran 77 M instructions more, 185 an attempt
    /// (`scripts/instructions.sh`: 3,027 M against 2,950 M).
    #[inline(always)]
    pub fn commands<W: Wire>(
        &mut self,
        now: Millis,
        core: &mut impl ClientCore,
        wire: &mut W,
    ) -> Result<Flow, W::Error> {
        // Each command is read where it lies in the core's outbox, then consumed: a send is
        // 160 bytes, and moving it out was a copy of bytes written a moment before.
        while let Some(command) = core.peek(now) {
            self.events += 1;
            match command {
                Command::Send(send) => {
                    if wire.dies_before(send) {
                        core.consume();
                        return Ok(Flow::Dies);
                    }
                    let request = &mut self.request;
                    let action = self
                        .live
                        .dispatch(send, now, &mut self.measure, request)
                        .map_err(Untracked)?;
                    let flow = wire.send(send, request, action, &mut self.measure, now)?;
                    core.consume();
                    // The core's next send is most often the head behind this one, whose
                    // record here was last touched long ago: ask for it while the core
                    // dispatches.
                    if let Some(next) = core.next_send_hint() {
                        self.live.prefetch(next);
                    }
                    if flow == Flow::Dies {
                        return Ok(Flow::Dies);
                    }
                }
                Command::Finish(terminal) => {
                    if self.live.finish(terminal, now, &mut self.measure) {
                        self.admission.ended(terminal, now, &mut self.measure);
                        wire.finished(terminal);
                    }
                    core.consume();
                }
            }
        }
        Ok(Flow::Go)
    }

    /// When an arrival or a cancellation is next due (ms), if any; none while the runner is
    /// not `accepting`.
    pub fn next_arrival(&self, accepting: bool) -> Option<Millis> {
        if !accepting {
            return None;
        }
        let cancel = self.cancels.get(self.next_cancel).map(|c| c.at);
        stampede_core::earliest([self.admission.next_time(), cancel])
    }

    /// When the next report bucket ends (ms): a time a real-time loop must wake up at.
    pub fn next_bucket(&self) -> Millis {
        self.gauges.next_time()
    }

    /// Ends the run at `now` (ms): the last, partial bucket is sampled, and the actions still
    /// live, the one held back and those never pulled are measured as unfinished (with the
    /// state the core's ledger `entries` give them).
    pub fn close(
        &mut self,
        now: Millis,
        core: &impl ClientCore,
        entries: Vec<stampede_core::LedgerEntry>,
    ) {
        self.gauges.finish(now, core, &mut self.measure);
        self.live.unfinished(now, &mut self.measure, entries);
        self.admission.unfinished(now, &mut self.measure);
    }
}

/// Which attempt an answer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heard {
    /// The core's attempt id.
    pub attempt: stampede_core::AttemptId,
    /// The action it belongs to.
    pub job: JobId,
    /// Its number within the action (1 = first).
    pub attempt_no: u32,
}
