//! The scheduler: the state machine drivers feed with events and time.
//!
//! SKELETON: the public surface other crates code against. Bodies are filled in by the core
//! work (issue 2); signatures may gain items but not change shape.

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::audit::AuditEvent;
use crate::command::{AttemptId, Command};
use crate::job::Job;
use crate::ledger::{InMemoryLedger, Ledger, LedgerError};
use crate::outcome::Outcome;
use crate::policy::Policy;
use crate::time::Millis;

/// Why `submit` refused a job (admission with backpressure).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    /// What was full or wrong, for the caller and the report.
    pub reason: String,
    /// When it makes sense to submit again (ms from now).
    pub retry_after_ms: Millis,
}

/// The scheduler could not be built or restored.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error("invalid policy: {0}")]
    Policy(String),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// Instantaneous figures a driver samples for time series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gauges {
    /// Jobs admitted and waiting for their first dispatch (ready or delayed).
    pub queued: u64,
    /// Jobs waiting on a backoff or Retry-After timer.
    pub delayed: u64,
    /// Attempts on the wire.
    pub in_flight: u64,
    /// Tokens currently reserved (tokens).
    pub tokens_reserved: u64,
}

/// The client scheduling policy as a state machine.
pub struct Scheduler<L: Ledger = InMemoryLedger> {
    _policy: Policy,
    _ledger: L,
    _rng: ChaCha8Rng,
}

impl<L: Ledger> Scheduler<L> {
    /// A fresh scheduler with an empty (or ignored) ledger.
    pub fn new(policy: Policy, ledger: L, rng: ChaCha8Rng) -> Result<Self, CoreError> {
        let _ = (&policy, &ledger, &rng);
        todo!("issue 2")
    }

    /// Rebuilds a scheduler after a crash from what the ledger persisted: planned actions are
    /// queued again, in-flight uncertain writes go to reconciliation with their original key.
    pub fn restore(policy: Policy, ledger: L, rng: ChaCha8Rng, now: Millis) -> Result<Self, CoreError> {
        let _ = (&policy, &ledger, &rng, now);
        todo!("issue 2/7")
    }

    /// Admits a logical action, or refuses it with a reason and a retry-after.
    pub fn submit(&mut self, job: Job, now: Millis) -> Result<(), Rejection> {
        let _ = (job, now);
        todo!("issue 2")
    }

    /// Reports how an attempt from a `Command::Send` ended.
    pub fn on_outcome(&mut self, attempt: AttemptId, outcome: Outcome, now: Millis) {
        let _ = (attempt, outcome, now);
        todo!("issue 2")
    }

    /// Cancels every action of a task: delayed work is dropped before it wakes, slots and
    /// reservations are released; each action ends `Cancelled`.
    pub fn cancel_task(&mut self, tenant: &str, task: &str, now: Millis) {
        let _ = (tenant, task, now);
        todo!("issue 2")
    }

    /// The next command due at `now`, if any. Call until `None`.
    pub fn poll(&mut self, now: Millis) -> Option<Command> {
        let _ = now;
        todo!("issue 2")
    }

    /// When the scheduler next wants `poll` called if nothing else happens.
    pub fn next_wakeup(&self) -> Option<Millis> {
        todo!("issue 2")
    }

    /// Audit events recorded since the last drain, in order.
    pub fn drain_audit(&mut self) -> Vec<AuditEvent> {
        todo!("issue 2")
    }

    /// Current queue, delay, in-flight and reservation figures.
    pub fn gauges(&self) -> Gauges {
        todo!("issue 2")
    }

    /// The ledger.
    pub fn ledger(&self) -> &L {
        &self._ledger
    }

    /// Gives the ledger back (for a simulated crash: only what it holds survives).
    pub fn into_ledger(self) -> L {
        self._ledger
    }
}
