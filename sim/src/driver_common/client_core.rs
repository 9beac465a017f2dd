//! What admission and gauge sampling need from the client under test: one core, or a fleet
//! of replicas of it (`virtual_driver::fleet`). Two calls, so either can stand behind them.

use stampede_core::{Gauges, Job, Ledger, Millis, Rejection, Scheduler};

/// The client as the shared driver parts see it.
pub trait ClientCore {
    /// Admits a logical action, or refuses it (see `Scheduler::submit`).
    fn submit(&mut self, job: Job, now: Millis) -> Result<(), Rejection>;
    /// Whether `submit` would find room for `job`, `Err(retry_after_ms)` when not (see
    /// `Scheduler::room_for`): asked first, so a refused offer costs no clone.
    fn room_for(&self, job: &Job) -> Result<(), Millis>;
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
