//! Admission with backpressure: an action is admitted only while its tenant's lane at its
//! priority has room, is given its idempotency key, and is persisted before anything is sent.

use super::lanes::rank;
use super::state::{Phase, Tracked};
use super::{Rejection, RejectionCause, RejectionReason, Scheduler};
use crate::audit::{AuditDetail, AuditKind};
use crate::idempotency::derive_key;
use crate::job::{Job, Priority};
use crate::ledger::{ActionState, Ledger, LedgerEntry};
use crate::time::Millis;

/// The scope assumed when a job names none: the whole account shares it.
pub const DEFAULT_SCOPE: &str = "account";

impl<L: Ledger> Scheduler<L> {
    pub(super) fn admit(
        &mut self,
        mut job: Job,
        not_before: Option<Millis>,
        now: Millis,
    ) -> Result<(), Rejection> {
        let retry_after_ms = super::state::millis(self.policy.admission.reject_retry_after);
        let reject = |cause: RejectionCause, reason: RejectionReason| {
            Err(Rejection {
                cause,
                reason,
                retry_after_ms,
            })
        };
        if let Some(deadline) = job.deadline.filter(|&deadline| now >= deadline) {
            // Nothing it could do would be in time (seed 001: admission rejects a deadline
            // already past): refused for good, before it takes a queue place or a ledger row.
            return reject(
                RejectionCause::DeadlinePassed,
                RejectionReason::DeadlinePassed {
                    job: job.id,
                    late_ms: now - deadline,
                },
            );
        }
        if self.execution_spent {
            return reject(
                RejectionCause::ExecutionBudgetSpent,
                RejectionReason::ExecutionBudgetSpent,
            );
        }
        let class = match self.last_class.get(job.class) {
            Some(class) => Some(class),
            None => {
                let class = self.class_index.get(&*job.class).copied();
                if let Some(class) = class {
                    self.last_class.keep(job.class, class);
                }
                class
            }
        };
        let Some(class) = class else {
            let known: Vec<&str> = self.class_index.keys().map(String::as_str).collect();
            return reject(
                RejectionCause::InvalidAction,
                RejectionReason::UnknownClass {
                    job: job.id,
                    class: job.class,
                    known: known.join(", "),
                },
            );
        };
        if self.jobs.contains_key(&job.id) {
            return reject(
                RejectionCause::InvalidAction,
                RejectionReason::AlreadyLive { job: job.id },
            );
        }
        // The tenant's id, found once for its queue's room and its lane. A tenant not seen
        // yet gets one here, as it did just after this check: it has no live action, and
        // the capacity is at least 1 (`Policy::validate`), so it is never refused here.
        let tenant = self.lanes.intern_shared(job.tenant);
        let lane = rank(job.priority);
        if self.lanes.live(tenant, lane) >= self.policy.admission.queue_capacity {
            let capacity = self.policy.admission.queue_capacity;
            return reject(
                RejectionCause::QueueFull,
                RejectionReason::QueueFull {
                    tenant: job.tenant,
                    capacity,
                    priority: job.priority,
                },
            );
        }
        if job.idempotency_key.is_none() {
            job.idempotency_key = Some(derive_key(&job.tenant, &job.task, job.payload_hash));
        }
        let scope = self.scopes.intern_shared(job.scope, &self.policy, now);
        let plan = self.plan_of(job.credential);
        let id = job.id;
        // Built where it stays, in the live table: the job (200 bytes) is moved once, not
        // into an entry, then a record, then the table. Its task and lane are filled in once
        // the ledger holds it; a refused write takes it out again.
        let tracked = self.jobs.insert_new_from(id, job, |job| {
            Tracked::new(
                LedgerEntry {
                    job,
                    state: ActionState::Planned,
                    attempts: 0,
                    waited_ms: 0,
                    operation_id: None,
                    updated_at: now,
                },
                scope,
                class,
                (tenant, super::tasks::NO_TASK),
                0,
            )
        });
        // Persist the key with the action before it can be sent.
        if let Err(e) = self.ledger.put(&tracked.entry) {
            self.jobs.delete(&id);
            self.counts.ledger_errors += 1;
            return reject(
                RejectionCause::LedgerRefused,
                RejectionReason::LedgerRefused {
                    job: id,
                    error: e.to_string(),
                },
            );
        }
        // The record stays at hand until it is queued: everything below changes other
        // parts of the scheduler than the live table (a look-up again was a search of it).
        let job = &tracked.entry.job;
        let (class_name, route, priority) = (job.class, job.route, job.priority);
        self.lanes.admit(tenant, lane);
        // Admission is what bounds the queues (a restore re-admits what the ledger holds,
        // whatever the capacity then).
        debug_assert!(self.lanes.live(tenant, lane) <= self.policy.admission.queue_capacity);
        tracked.task = self.tasks.join(tenant, &job.task, job.sole_task);
        super::audit_log::record_to(
            &mut self.audit,
            &self.policy,
            (now, AuditKind::ActionRequested, id, None),
            || AuditDetail::Requested {
                class: class_name,
                route,
                priority,
            },
        );
        tracked.lane = self.lanes.lane(tenant, scope);
        tracked.plan = plan;
        match not_before {
            Some(at) if at > now => self.delay_until(id, at),
            _ => {
                // `make_ready` with the record at hand (it looked the action up again, in a
                // call): a new action leaves no phase, so it only takes a ticket, is counted
                // ready and joins the back of its lane.
                debug_assert_eq!(tracked.phase, Phase::New);
                self.seq += 1;
                let ticket = self.seq;
                tracked.phase = Phase::Ready;
                tracked.ticket = ticket;
                self.counts.ready += 1;
                if priority == Priority::Bulk {
                    self.counts.ready_bulk += 1;
                }
                self.lanes
                    .push(tracked.lane, rank(priority), id, ticket, false);
            }
        }
        Ok(())
    }
}

impl<L: Ledger> Scheduler<L> {
    /// Whether `submit` would find room for `job` now: `Err(retry_after_ms)` when its
    /// tenant's queue at its priority is full or the execution budget is spent. A query: it
    /// changes nothing, allocates nothing and builds no message, so a driver holding an
    /// arrival back under backpressure can ask before it clones or submits anything.
    /// `submit` still checks everything (class, id, ledger).
    pub fn room_for(&self, job: &Job) -> Result<(), Millis> {
        let retry_after_ms = super::state::millis(self.policy.admission.reject_retry_after);
        if self.execution_spent {
            return Err(retry_after_ms);
        }
        if self.queue_full(job) {
            return Err(retry_after_ms);
        }
        Ok(())
    }

    /// Whether `job`'s tenant already has `admission.queue_capacity` live actions at its
    /// priority (a tenant not seen yet has none).
    fn queue_full(&self, job: &Job) -> bool {
        let live = self
            .lanes
            .tenant_shared(job.tenant)
            .map_or(0, |tenant| self.lanes.live(tenant, rank(job.priority)));
        live >= self.policy.admission.queue_capacity
    }
}
