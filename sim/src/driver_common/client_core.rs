//! The client under test as the drivers see it: one core, or a fleet of replicas of it
//! (`virtual_driver::fleet`). The core's own calls, so either can stand behind a turn.

use stampede_core::{
    AttemptId, Command, Gauges, Job, JobId, Ledger, Millis, Outcome, Rejection, Scheduler,
};

/// The client as the shared driver parts see it. Every `now` is ms since the run's start and
/// never goes back (the core's time contract).
pub trait ClientCore {
    /// Admits a logical action, or refuses it (see `Scheduler::submit`).
    fn submit(&mut self, job: Job, now: Millis) -> Result<(), Rejection>;
    /// Whether `submit` would find room for `job`, `Err(retry_after_ms)` when not (see
    /// `Scheduler::room_for`): asked first, so a refused offer costs no clone.
    fn room_for(&self, job: &Job) -> Result<(), Millis>;
    /// The next command due at `now`, lent where it lies; carry it out, then `consume`;
    /// drain until `None` (see `Scheduler::peek`).
    fn peek(&mut self, now: Millis) -> Option<&Command>;
    /// Takes the command `peek` lent (see `Scheduler::consume`).
    fn consume(&mut self);
    /// The action the core expects to send next, a cache hint (see
    /// `Scheduler::next_send_hint`); `None` when it cannot say.
    fn next_send_hint(&self) -> Option<JobId> {
        None
    }
    /// How attempt `attempt` ended, heard at `now` (see `Scheduler::on_outcome`).
    fn on_outcome(&mut self, attempt: AttemptId, outcome: &Outcome, now: Millis);
    /// Cancels every action of one task (see `Scheduler::cancel_task`).
    fn cancel_task(&mut self, tenant: &str, task: &str, now: Millis);
    /// Queue, delay and in-flight figures, summed over instances.
    fn gauges(&self) -> Gauges;
    /// Attempts whose token usage stayed unknown, so their reservation was kept as the
    /// upper estimate (`ScopeRecord::uncertain_usage`, summed over scopes); `None` when the
    /// client does not report it.
    fn uncertain_usage(&self) -> Option<u64> {
        None
    }
}

impl<L: Ledger> ClientCore for Scheduler<L> {
    fn submit(&mut self, job: Job, now: Millis) -> Result<(), Rejection> {
        Scheduler::submit(self, job, now)
    }

    fn room_for(&self, job: &Job) -> Result<(), Millis> {
        Scheduler::room_for(self, job)
    }

    fn peek(&mut self, now: Millis) -> Option<&Command> {
        Scheduler::peek(self, now)
    }

    fn consume(&mut self) {
        Scheduler::consume(self)
    }

    fn next_send_hint(&self) -> Option<JobId> {
        Scheduler::next_send_hint(self)
    }

    fn on_outcome(&mut self, attempt: AttemptId, outcome: &Outcome, now: Millis) {
        Scheduler::on_outcome(self, attempt, outcome, now)
    }

    fn cancel_task(&mut self, tenant: &str, task: &str, now: Millis) {
        Scheduler::cancel_task(self, tenant, task, now)
    }

    fn gauges(&self) -> Gauges {
        Scheduler::gauges(self)
    }

    fn uncertain_usage(&self) -> Option<u64> {
        Some(
            self.scope_records()
                .iter()
                .map(|(_, r)| r.uncertain_usage)
                .sum(),
        )
    }
}
