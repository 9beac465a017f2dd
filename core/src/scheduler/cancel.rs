//! Cancellation and the run's execution budget: both end live actions at once, dropping
//! their delayed work before it wakes and releasing their slots and reservations (a late
//! outcome of an attempt that was on the wire is then ignored).

use super::state::millis;
use super::Scheduler;
use crate::command::{Reason, TerminalStatus};
use crate::job::JobId;
use crate::ledger::Ledger;
use crate::time::Millis;

impl<L: Ledger> Scheduler<L> {
    pub(super) fn cancel(&mut self, tenant: &str, task: &str, now: Millis) {
        let Some(tenant) = self.lanes.tenant(tenant) else {
            return;
        };
        if !self.tasks.may_have(tenant, task) {
            return;
        }
        // Cancellation is rare: a scan of the live actions (in id order) beats keeping a
        // per-task index up to date on every submit and terminal.
        let ids: Vec<JobId> = self
            .jobs
            .ids()
            .into_iter()
            .filter(|id| {
                let job = &self.jobs[id];
                job.tenant == tenant && &*job.entry.job.task == task
            })
            .collect();
        for id in ids {
            self.finish(id, TerminalStatus::Cancelled, Reason::Cancelled, now);
        }
    }

    /// End of the run's execution budget (ms since run start), if the policy sets one.
    /// Converted once, when the scheduler is built: every dispatch turn reads it.
    #[inline]
    pub(super) fn execution_end(&self) -> Option<Millis> {
        self.execution_end
    }

    /// The end of the run's execution budget (ms) `policy` sets, if any.
    pub(super) fn execution_end_of(policy: &crate::policy::Policy) -> Option<Millis> {
        policy.execution_budget.map(millis)
    }

    /// Whether the execution budget ends at `now` and has not been enforced yet: the only
    /// case in which [`Scheduler::enforce_execution_budget`] does anything.
    #[inline]
    pub(super) fn execution_due(&self, now: Millis) -> bool {
        !self.execution_spent && self.execution_end.is_some_and(|end| now >= end)
    }

    /// Once the execution budget is spent, every live action fails and nothing new is admitted.
    pub(super) fn enforce_execution_budget(&mut self, now: Millis) {
        if !self.execution_due(now) {
            return;
        }
        self.execution_spent = true;
        let ids = self.jobs.ids();
        for id in ids {
            let status = self.give_up_status(id);
            self.finish(id, status, Reason::ExecutionBudgetExhausted, now);
        }
    }
}
