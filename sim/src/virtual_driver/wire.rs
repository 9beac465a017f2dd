//! The virtual driver's wire: an attempt reaches the provider model at once, the model
//! decides everything on arrival, and the answer is queued at `now + latency` (virtual ms).
//! What the model journaled is measured as it drains, and streamed to the attempt sink.

use stampede_core::{Millis, SendAttempt};
use stampede_provider::model::Request;

use super::crash::Crashes;
use super::events::{AnswerHead, Event, EventQueue};
use super::provider_set::ProviderSet;
use super::DriverError;
use crate::driver_common::live_actions::{self, LiveAction};
use crate::driver_common::translate;
use crate::driver_common::turn::{Flow, Turn, Untracked, Wire};
use crate::measure::Measurement;
use crate::sink::attempts::{self, Numbering};
use crate::sink::AttemptSink;

impl From<Untracked> for DriverError {
    fn from(e: Untracked) -> Self {
        DriverError::Output(e.0)
    }
}

/// The provider model in-process, the answers on their way, and the simulated crashes.
pub struct ModelWire<'a> {
    /// Every provider of the scenario.
    pub providers: ProviderSet,
    /// Answers (and hidden re-sends) in time order.
    pub queue: EventQueue,
    /// The runner's planned deaths.
    pub crashes: Crashes,
    sink: &'a mut dyn AttemptSink,
    /// Whether the sink wants rows ([`AttemptSink::wants_rows`], which every sink answers
    /// the same for its life, as the run's case files assume): asked once here, not through
    /// the sink's vtable at every attempt (about 27 instructions an attempt of a run that
    /// keeps no rows).
    rows: bool,
    /// Re-sends a retry layer under the client makes after a connection error
    /// (`client.transport_retries`), unknown to the core.
    hidden_retries: u32,
}

/// Where an attempt the layer under the client re-sends landed: which provider, its seq at
/// that provider's edge, and when (ms) the failure is known. An attempt that is not re-sent
/// is queued as its answer where it lands, so the answer (about 200 bytes) is written once
/// into its event, not moved through a return value first.
struct Failed {
    provider: u8,
    seq: u64,
    at: Millis,
}

impl<'a> ModelWire<'a> {
    /// A wire to `providers`, journal rows to `sink`.
    pub fn new(
        providers: ProviderSet,
        crashes: Crashes,
        sink: &'a mut dyn AttemptSink,
        hidden_retries: u32,
    ) -> Self {
        Self {
            providers,
            queue: EventQueue::default(),
            crashes,
            rows: sink.wants_rows(),
            sink,
            hidden_retries,
        }
    }

    /// Whether rows are wanted at all (see [`AttemptSink::wants_rows`]).
    pub fn wants_rows(&self) -> bool {
        self.rows
    }

    /// `request` (attempt `send`, the driver's attempt `global`) reaches its provider at
    /// `now` (ms); what the provider journaled is measured, attributed to the `action` the
    /// harness sent it for (none when the driver no longer tracks it). Its answer is queued,
    /// unless the layer under the client re-sends it (`left` re-sends allowed): then where
    /// it failed is returned, for the caller to queue the re-send with what it keeps of the
    /// attempt.
    fn land(
        &mut self,
        send: &SendAttempt,
        request: &Request,
        (action, measure): (Option<&LiveAction>, &mut Measurement),
        global: stampede_core::AttemptId,
        left: u32,
        now: Millis,
    ) -> Result<Option<Failed>, DriverError> {
        let provider = self.providers.of_request(request);
        let decision = self.providers.arrive(provider, request, now);
        let seq = decision.seq;
        // When it is heard, now; what is heard only where it will wait (see below).
        let after = translate::heard_after(send, &decision);
        let by = live_actions::sent_by(action, provider);
        let numbering = Numbering {
            action: send.job,
            attempt_no: send.attempt_no,
        };
        let (crashes, sink, rows) = (&mut self.crashes, &mut self.sink, self.rows);
        // A limit's refusal holds nothing at the provider (see `AnswerHead::holds`); anything
        // else, or an attempt whose entry the journal lost, departs as always.
        let mut holds = true;
        self.providers
            .drain_journal_with(provider, |entry| {
                if entry.seq == seq && entry.limit.is_some() {
                    holds = false;
                }
                crashes.on_journal(entry);
                measure.on_journal(entry, Some(now + after), &by);
                if !rows {
                    return Ok(());
                }
                attempts::write(*sink, entry, Some(now + after), by.tenant, numbering)
            })
            .map_err(DriverError::Output)?;
        if left > 0 && translate::hidden_layer_retries(&translate::heard(send, &decision)) {
            return Ok(Some(Failed {
                provider,
                seq,
                at: now + after,
            }));
        }
        // It carries ids: the send and its request are not kept. The outcome is written where
        // the answer waits, over the one its slot held last.
        let head = AnswerHead {
            attempt: global,
            job: send.job,
            attempt_no: send.attempt_no,
            provider,
            seq,
            holds,
        };
        self.queue.push_answer(now + after, head, |place| {
            translate::hear_into(place, send, &decision)
        });
        Ok(None)
    }

    /// The retry layer under the client sends `request` again at `now` (ms), after the
    /// connection of attempt `global` failed; `left` re-sends remain after this one.
    pub fn resend(
        &mut self,
        global: stampede_core::AttemptId,
        send: Box<SendAttempt>,
        request: Box<Request>,
        left: u32,
        turn: &mut Turn,
        now: Millis,
    ) -> Result<(), DriverError> {
        let on = (turn.live.get(send.job), &mut turn.measure);
        if let Some(failed) = self.land(&send, &request, on, global, left, now)? {
            self.queue_resend(global, failed, send, request, left);
        }
        Ok(())
    }

    /// Queues the layer under the client's re-send of attempt `global` (`send`, rendered as
    /// `request`) after it `failed` on a connection; `left` re-sends remained.
    fn queue_resend(
        &mut self,
        global: stampede_core::AttemptId,
        failed: Failed,
        send: Box<SendAttempt>,
        request: Box<Request>,
        left: u32,
    ) {
        let event = Event::HiddenResend {
            attempt: global,
            provider: failed.provider,
            seq: failed.seq,
            send,
            request,
            left: left - 1,
        };
        self.queue.push(failed.at, event);
    }
}

impl Wire for ModelWire<'_> {
    type Error = DriverError;

    fn dies_before(&mut self, send: &SendAttempt) -> bool {
        self.crashes.before_send(send)
    }

    fn send(
        &mut self,
        send: &SendAttempt,
        request: &Request,
        action: &LiveAction,
        measure: &mut Measurement,
        now: Millis,
    ) -> Result<Flow, DriverError> {
        // The global id first: the answer is queued under it where the attempt lands.
        let global = self.crashes.global(send.attempt);
        let left = self.hidden_retries;
        let failed = self.land(send, request, (Some(action), measure), global, left, now)?;
        let dies = self.crashes.after_send(send, global);
        if let Some(failed) = failed {
            // Kept for the re-send: the only attempts whose send and request outlive it.
            let request = Box::new(request.clone());
            self.queue_resend(global, failed, Box::new(send.clone()), request, left);
        }
        Ok(if dies { Flow::Dies } else { Flow::Go })
    }
}
