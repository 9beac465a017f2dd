//! Restoring after a crash from what the ledger persisted. Terminal actions stay terminal;
//! planned ones are queued again; in-flight uncertain writes go to reconciliation with their
//! original key (never a blind re-send); in-flight safe ones are queued again with their
//! attempts counted against the class budget.

use super::admission::DEFAULT_SCOPE;
use super::state::Tracked;
use super::{CoreError, Scheduler};
use crate::backoff::backoff_delay;
use crate::command::{Reason, TerminalStatus};
use crate::idempotency::derive_key;
use crate::ledger::{ActionState, Ledger};
use crate::time::Millis;

impl<L: Ledger> Scheduler<L> {
    pub(super) fn restore_from_ledger(&mut self, now: Millis) -> Result<(), CoreError> {
        let entries = self.ledger.entries()?;
        for mut entry in entries {
            if entry.state.is_terminal() {
                continue;
            }
            let id = entry.job.id;
            let Some(&class) = self.class_index.get(&*entry.job.class) else {
                return Err(CoreError::Policy(format!(
                    "ledger entry for job {id} names request class {:?}, which the policy does not define; \
                     add the class to the policy before restoring",
                    entry.job.class
                )));
            };
            if entry.job.idempotency_key.is_none() {
                entry.job.idempotency_key = Some(derive_key(
                    &entry.job.tenant,
                    &entry.job.task,
                    entry.job.payload_hash,
                ));
                self.ledger.put(&entry)?;
            }
            let tenant = self.lanes.intern(&entry.job.tenant);
            let scope = self.scopes.intern(
                entry.job.scope.as_deref().unwrap_or(DEFAULT_SCOPE),
                &self.policy,
                now,
            );
            self.lanes
                .admit(tenant, super::lanes::rank(entry.job.priority));
            // Recorded whatever the driver said: the retries it made before the crash are
            // not its task's (see `Job::sole_task`).
            let task = self.tasks.join(tenant, &entry.job.task, false);
            let state = entry.state;
            let lane = self.lanes.lane(tenant, scope);
            let plan = self.plan_of(entry.job.credential);
            let mut tracked = Tracked::new(entry, scope, class, (tenant, task), lane);
            tracked.plan = plan;
            let reconcile = self.classes[class].reconcile;
            let spent = tracked.action_attempts >= self.classes[class].max_attempts;
            let attempted = tracked.action_attempts > 0;
            self.jobs.insert(id, tracked);
            match state {
                ActionState::ReconciliationRequired => self.start_reconciliation(id, now),
                ActionState::InFlight if reconcile => self.start_reconciliation(id, now),
                ActionState::InFlight if spent => {
                    self.jobs.get_mut(&id).expect("just restored").uncertain = true;
                    self.finish(id, TerminalStatus::Failed, Reason::AttemptsExhausted, now);
                }
                _ if attempted => {
                    // It was sent before the crash: come back after a backoff, not all at
                    // once with every other restored action (the scope record was lost).
                    let job = &self.jobs[&id];
                    let delay = backoff_delay(&self.policy.backoff, job.retries, 0, &mut self.rng);
                    self.delay_until(id, now.saturating_add(delay));
                    // A retry waiting on its scope like any other: these may pass the cap
                    // (the dead life's were not all waiting), and new ones are shed until
                    // they wake.
                    self.begin_retry_wait(id);
                }
                _ => self.make_ready(id, false),
            }
        }
        Ok(())
    }
}
