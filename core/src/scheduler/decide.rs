//! After an outcome: classify it, reconcile the token reservation with reported usage,
//! publish what the provider said on the scope record (Retry-After, rate-limit headers),
//! and only then decide: complete, retry after `max(backoff, Retry-After, scope wait)`,
//! reconcile an uncertain write, wait for a quota reset, or fail with context.

use super::fallback::Move;
use super::scope::ScopeSource;
use super::state::{held_less, millis, BreakerMarks, Flight, Tracked};
use super::Scheduler;
use crate::audit::{AuditDetail, AuditKind};
use crate::breaker::{fingerprint, wide_path, wide_paths_of};
use crate::classify::{classify, Classification, Failure, FailureKind};
use crate::command::{AttemptId, Reason, TerminalStatus};
use crate::job::JobId;
use crate::ledger::{ActionState, Ledger};
use crate::outcome::{Outcome, TransportFailure};
use crate::policy::FailureGroup;
use crate::routing::FallbackWhen;
use crate::time::Millis;
use rand::Rng;

impl<L: Ledger> Scheduler<L> {
    /// Takes in how attempt `attempt` ended (see `Scheduler::on_outcome`, its one caller).
    // Always inlined into that caller, which is kept out of line: left apart, it cost a call
    // of its own on every answer.
    #[inline(always)]
    pub(super) fn settle(&mut self, attempt: AttemptId, outcome: &Outcome, now: Millis) {
        // Unknown attempts are outcomes of cancelled (or pre-restart) sends: nothing to do.
        // Its fields read where it lies, then dropped there: taken out whole, its padding
        // was copied through the stack in overlapping pieces, and the read of the last
        // stalled on the stores just made (perf: 4% of the core's cycle).
        let Some(flight) = self.in_flight.remove_with(&attempt, |flight| Flight {
            job: flight.job,
            scope: flight.scope,
            reserved_tokens: flight.reserved_tokens,
            lookup: flight.lookup,
        }) else {
            return;
        };
        self.slots_used = held_less(self.slots_used, 1, "slots in use");
        self.counts.tokens_reserved = held_less(
            self.counts.tokens_reserved,
            flight.reserved_tokens,
            "tokens reserved",
        );
        let classification = classify(outcome);
        let scope = self.scopes.get_mut(flight.scope);
        scope.in_flight = held_less(scope.in_flight, 1, "attempts on the wire to a scope");
        scope.settle_tokens(
            flight.reserved_tokens,
            used_tokens(outcome, classification),
            now,
        );
        // Publish before rescheduling: the scope record changes before any retry is planned.
        let told = self.publish(flight.scope, outcome, classification, now);
        let Some(job) = self.jobs.get_mut(&flight.job) else {
            return;
        };
        // Its flight is gone: an end decided now has no attempt to look for on the wire.
        debug_assert_eq!(job.phase, super::state::Phase::InFlight(attempt));
        job.phase = super::state::Phase::Answered;
        if let Outcome::Response(response) = outcome {
            job.last_status = Some(response.status);
            if response.operation_id.is_some() {
                job.entry.operation_id.clone_from(&response.operation_id);
            }
        }
        // A success clears the action's breaker marks (`succeed`): taken while the record
        // is at hand, so a success does not look the action up again.
        let succeeded = !flight.lookup && matches!(classification, Classification::Success);
        let marks = if succeeded {
            job.breaker_marks.take()
        } else {
            None
        };
        super::audit_log::record_to(
            &mut self.audit,
            &self.policy,
            (now, AuditKind::ActionResult, flight.job, Some(attempt)),
            || match classification {
                Classification::Success => AuditDetail::Succeeded,
                Classification::Failure(f) => AuditDetail::Failure {
                    failure: f.kind.label(),
                    group: f.group,
                },
            },
        );
        match classification {
            _ if flight.lookup => self.after_lookup(flight.job, outcome, told, now),
            Classification::Success => self.succeed(flight.job, marks, now),
            Classification::Failure(failure) => {
                self.after_action(flight.job, outcome, failure, told, now);
            }
        }
    }

    /// Updates the scope record from the answer; returns the wait (ms) the provider asked of
    /// this job, when the policy honours it.
    fn publish(
        &mut self,
        scope: usize,
        outcome: &Outcome,
        classification: Classification,
        now: Millis,
    ) -> Option<Millis> {
        let Outcome::Response(response) = outcome else {
            return None;
        };
        let policy = &self.policy;
        let state = self.scopes.get_mut(scope);
        if policy.rate_header_pacing {
            response.read_rate_hint(|hint| state.learn(hint, now, policy.token_budget));
        }
        let Classification::Failure(failure) = classification else {
            return None;
        };
        let asks_wait = matches!(
            failure.kind,
            FailureKind::RateLimited | FailureKind::Unavailable | FailureKind::QuotaExhausted
        );
        if !asks_wait || !policy.retry_after.honour {
            if policy.share_scope_state && failure.kind == FailureKind::RateLimited {
                // A 429 without a usable wait still says the scope is hot: pause it briefly.
                let until = now.saturating_add(millis(policy.backoff.base));
                state.publish_wait(until, ScopeSource::RateLimited);
            }
            return None;
        }
        let wall = policy.wall_epoch_unix_ms.saturating_add(now);
        let told = response.retry_after(wall, millis(policy.retry_after.past_date_floor));
        if policy.share_scope_state {
            match (failure.kind, told) {
                (FailureKind::RateLimited, Some(told)) => {
                    let until = now.saturating_add(told.delay_ms);
                    state.publish_wait(until, ScopeSource::RateLimitedRetryAfter);
                    state.hold_requests_until(until, now);
                }
                (FailureKind::RateLimited, None) => state.publish_wait(
                    now.saturating_add(millis(policy.backoff.base)),
                    ScopeSource::RateLimited,
                ),
                (FailureKind::Unavailable, Some(told)) => state.publish_wait(
                    now.saturating_add(told.delay_ms),
                    ScopeSource::UnavailableRetryAfter,
                ),
                _ => {}
            }
        }
        told.map(|t| t.delay_ms)
    }

    /// Decides what follows action `id`'s failed attempt (a success ends in `succeed`, a
    /// look-up's answer in `after_lookup`).
    fn after_action(
        &mut self,
        id: JobId,
        outcome: &Outcome,
        failure: Failure,
        told: Option<Millis>,
        now: Millis,
    ) {
        let job = self.jobs.get_mut(&id).expect("settled action is live");
        if failure.group == FailureGroup::MayHaveExecuted {
            job.uncertain = true;
            // Unsettled on this route until the action ends: only a 2xx settles it.
            job.route_uncertain = true;
        }
        // Fixed for the action's life: read here once for every step below.
        let (class_index, has_plan) = (job.class, job.plan.is_some());
        if let Some(fingerprint) = self.breaker_failure(id, failure.kind, now) {
            return self.finish(
                id,
                TerminalStatus::Escalated,
                Reason::CircuitOpen { fingerprint },
                now,
            );
        }
        let class = &self.classes[class_index];
        let code = match outcome {
            Outcome::Response(response) => response.error_code.as_deref(),
            _ => None,
        };
        let rate_limited = matches!(
            failure.kind,
            FailureKind::RateLimited | FailureKind::QuotaExhausted
        );
        match (failure.group, failure.kind) {
            // Never retried, whatever the class says: tokens already streamed, or a refusal.
            (_, FailureKind::StreamCut { tokens_delivered })
                if tokens_delivered > 0 && !self.policy.resend_cut_streams =>
            {
                self.finish(id, TerminalStatus::Failed, Reason::StreamInterrupted, now)
            }
            (_, FailureKind::ContentPolicy) => {
                let status = self.jobs[&id].last_status.unwrap_or(0);
                self.finish(
                    id,
                    TerminalStatus::Failed,
                    Reason::WontImprove {
                        status,
                        code: code.map(str::to_owned),
                    },
                    now,
                )
            }
            (FailureGroup::QuotaExhausted, _) if self.policy.quota.wait_for_reset => {
                self.wait_for_quota(id, outcome, told, now)
            }
            (FailureGroup::MayHaveExecuted, _) if class.reconcile => {
                self.start_reconciliation(id, now)
            }
            // The same key is still executing at the provider: learn its fate by look-up.
            (_, FailureKind::IdempotencyKeyInUse) if class.reconcile => {
                self.start_reconciliation(id, now)
            }
            _ => {
                let rules = (class_index, has_plan);
                self.route_or_retry(id, rules, failure, code, rate_limited, told, now)
            }
        }
    }

    /// After the failures that end or reconcile an action whatever its route: move it to a
    /// fallback route when the failure is a condition a later route lists, else retry it
    /// or end it as its class says. `(class, has_plan)`: the action's class index and whether
    /// it follows a routing plan, both fixed for its life.
    #[allow(clippy::too_many_arguments)]
    fn route_or_retry(
        &mut self,
        id: JobId,
        (class_index, has_plan): (usize, bool),
        failure: Failure,
        code: Option<&str>,
        rate_limited: bool,
        told: Option<Millis>,
        now: Millis,
    ) {
        if has_plan {
            match self.fall_back(id, FallbackWhen::immediate(failure), now) {
                Move::Moved => return,
                Move::Refused(reason) => {
                    return self.finish(id, TerminalStatus::Failed, reason, now)
                }
                Move::NoRoute | Move::Withheld => {}
            }
        }
        let class = &self.classes[class_index];
        match (failure.group, failure.kind) {
            _ if class.retries_failure(failure) => self.retry(id, failure, told, now),
            (FailureGroup::WontImprove, _) => {
                let status = self.jobs[&id].last_status.unwrap_or(0);
                self.finish(
                    id,
                    TerminalStatus::Failed,
                    Reason::WontImprove {
                        status,
                        code: code.map(str::to_owned),
                    },
                    now,
                )
            }
            (FailureGroup::Conflict, _) => {
                let code = code.map(str::to_owned);
                self.finish(id, TerminalStatus::Failed, Reason::Conflict { code }, now)
            }
            // The class allows no further attempt for this group.
            _ => self.fail_or_move_on(id, Reason::AttemptsExhausted, rate_limited, now),
        }
    }

    /// Ends action `id`, whose attempt succeeded: its breaker `marks` (taken off its record)
    /// are cleared on their paths, and it completes.
    fn succeed(&mut self, id: JobId, marks: Option<Box<BreakerMarks>>, now: Millis) {
        let BreakerMarks { path, wide } = marks.map(|m| *m).unwrap_or_default();
        if let Some(fp) = path {
            self.breaker.record_success(&fp);
            let job = &self.jobs[&id];
            let path = (job.entry.job.route, job.class, job.entry.job.payload_hash);
            self.open_paths.remove(&path);
        }
        if let Some(fp) = wide {
            self.breaker.record_success(&fp);
            if let Some((path, _)) = fp.rsplit_once('|') {
                self.open_wide.remove(path);
            }
        }
        self.finish(id, TerminalStatus::Completed, Reason::Succeeded, now);
    }

    /// Counts a failure against its breaker path; the fingerprint when the path is open.
    fn breaker_failure(&mut self, id: JobId, kind: FailureKind, now: Millis) -> Option<String> {
        // Rate and quota refusals say nothing about the path itself.
        let path_failure = !matches!(
            kind,
            FailureKind::RateLimited
                | FailureKind::QuotaExhausted
                | FailureKind::IdempotencyKeyInUse
        );
        if !self.policy.breaker.enabled || !path_failure {
            return None;
        }
        let job = self.jobs.get_mut(&id).expect("settled action is live");
        let job_fields = &job.entry.job;
        let fp = fingerprint(
            job_fields.route,
            &job_fields.class,
            job_fields.payload_hash,
            kind.label(),
        );
        let path = (job_fields.route, job.class, job_fields.payload_hash);
        let opened = self.breaker.record_failure(&fp, now);
        let open = opened || self.breaker.is_open(&fp, now);
        job.breaker_marks.get_or_insert_with(Box::default).path = Some(fp.clone());
        if open {
            self.open_paths.insert(path, fp.clone());
            return Some(fp);
        }
        let wide = wide_path(&job.entry.job, kind)?;
        let fp = format!("{wide}|{}", kind.label());
        let open = self.breaker.record_failure(&fp, now) || self.breaker.is_open(&fp, now);
        job.breaker_marks.get_or_insert_with(Box::default).wide = Some(fp.clone());
        if open {
            self.open_wide.insert(wide, fp.clone());
            return Some(fp);
        }
        None
    }

    /// Whether `job`'s task has used its retry budget (never while the budget is off). A
    /// task of one sole action counts that action's own retries (see `tasks`).
    pub(super) fn task_budget_spent(&self, job: &Tracked) -> bool {
        let per_task = self.policy.retry_budgets.per_task;
        per_task.enabled && self.tasks.retries(job.task, job.retries) >= per_task.max_retries
    }

    /// The fingerprint of an open breaker path this action would take, if any. A path whose
    /// open period ended is forgotten here (its next failure reopens it at once).
    pub(super) fn open_breaker_path(&mut self, id: JobId, now: Millis) -> Option<String> {
        if !self.open_wide.is_empty() {
            for path in wide_paths_of(&self.jobs[&id].entry.job) {
                let Some(fp) = self.open_wide.get(&path) else {
                    continue;
                };
                if self.breaker.is_open(fp, now) {
                    return Some(fp.clone());
                }
                self.open_wide.remove(&path);
            }
        }
        if self.open_paths.is_empty() {
            return None;
        }
        let job = &self.jobs[&id];
        let path = (job.entry.job.route, job.class, job.entry.job.payload_hash);
        let fp = self.open_paths.get(&path)?;
        if self.breaker.is_open(fp, now) {
            return Some(fp.clone());
        }
        self.open_paths.remove(&path);
        None
    }

    /// Schedules the next attempt of a retryable failure, or fails now when a budget (class
    /// attempts, task, wait, deadline, execution, scope) would be broken by it.
    fn retry(&mut self, id: JobId, failure: Failure, told: Option<Millis>, now: Millis) {
        let job = &self.jobs[&id];
        let class = &self.classes[job.class];
        let rate_limited = matches!(
            failure.kind,
            FailureKind::RateLimited | FailureKind::QuotaExhausted
        );
        // Each route gets the class's attempts afresh (without routing, route_start is 0).
        let on_route = job.action_attempts.saturating_sub(job.route_start);
        if on_route >= class.max_attempts.saturating_add(job.resends) {
            return self.fail_or_move_on(id, Reason::AttemptsExhausted, rate_limited, now);
        }
        if self.task_budget_spent(job) {
            return self.finish(id, TerminalStatus::Failed, Reason::TaskBudgetExhausted, now);
        }
        let backoff = self.backoff.delay(
            job.retries.saturating_sub(job.route_retry_start),
            job.prev_delay,
            &mut self.rng,
        );
        let scope = job.scope;
        let delay = self.delay_with_waits(scope, backoff, told, now);
        // Found once more (drawing the delay borrowed the scheduler) for every budget.
        if let Err(reason) = self.fits_budgets(&self.jobs[&id], delay, now) {
            return self.fail_or_move_on(id, reason, rate_limited, now);
        }
        // Before the scope's retry budget: a retry shed here draws nothing from it.
        if self.retry_waits_full(scope) {
            return self.fail_or_move_on(id, Reason::ScopeDelayedFull, rate_limited, now);
        }
        if !self.scopes.get_mut(scope).retries.try_retry(now) {
            return self.fail_or_move_on(id, Reason::ScopeBudgetExhausted, rate_limited, now);
        }
        // The label is read only when the retry is audited.
        self.schedule_retry(id, delay, backoff, || failure.kind.label(), now);
    }

    /// A daily or billing quota is exhausted: wait for its reset (published on the scope),
    /// never a burst backoff; fail with `QuotaExhausted` when the wait does not fit.
    fn wait_for_quota(&mut self, id: JobId, outcome: &Outcome, told: Option<Millis>, now: Millis) {
        let hinted = match outcome {
            Outcome::Response(r) => r
                .rate_hint()
                .and_then(|h| h.reset_tokens_ms.max(h.reset_requests_ms)),
            _ => None,
        };
        let reset = told
            .or(hinted)
            .unwrap_or_else(|| millis(self.policy.quota.assumed_reset))
            .max(1);
        let job = &self.jobs[&id];
        if self.policy.share_scope_state {
            self.scopes
                .get_mut(job.scope)
                .publish_wait(now.saturating_add(reset), ScopeSource::QuotaReset);
        }
        let class = &self.classes[job.class];
        let on_route = job.action_attempts.saturating_sub(job.route_start);
        let retryable = class.retries(FailureGroup::QuotaExhausted)
            && on_route < class.max_attempts.saturating_add(job.resends);
        let scope = job.scope;
        let delay = self.delay_with_waits(scope, reset, None, now);
        if !retryable || self.fits_budgets(&self.jobs[&id], delay, now).is_err() {
            return self.fail_or_move_on(id, Reason::QuotaExhausted, true, now);
        }
        if self.retry_waits_full(scope) {
            return self.fail_or_move_on(id, Reason::ScopeDelayedFull, true, now);
        }
        self.schedule_retry(id, delay, reset, || "quota_exhausted", now);
    }

    /// The wait before the next attempt: the local delay, raised to the provider's wait
    /// (the scope's shared `next_allowed_at`, the job's own Retry-After) plus a random point
    /// of the spread window, so jobs released by one wait do not return in lockstep.
    /// `scope` is the action's (its index): the action's record is not read.
    fn delay_with_waits(
        &mut self,
        scope: usize,
        local: Millis,
        told: Option<Millis>,
        now: Millis,
    ) -> Millis {
        let mut wait = told.unwrap_or(0);
        if self.policy.share_scope_state {
            wait = wait.max(
                self.scopes
                    .get(scope)
                    .record
                    .next_allowed_at
                    .saturating_sub(now),
            );
        }
        let spread = millis(self.policy.retry_after.spread);
        if wait > 0 && wait >= local && spread > 0 {
            wait = wait.saturating_add(self.rng.gen_range(0..=spread));
        }
        local.max(wait)
    }

    /// Whether waiting `delay` more fits the class wait budget, the deadline and the run,
    /// for the action whose record is `job` (read where it lies, not looked up again).
    fn fits_budgets(&self, job: &Tracked, delay: Millis, now: Millis) -> Result<(), Reason> {
        let class = &self.classes[job.class];
        if job.entry.waited_ms.saturating_add(delay) > class.max_wait_ms {
            return Err(Reason::WaitBudgetExhausted);
        }
        let wake = now.saturating_add(delay);
        if job
            .entry
            .job
            .deadline
            .is_some_and(|deadline| wake > deadline)
        {
            return Err(Reason::DeadlineExceeded);
        }
        if self.execution_end().is_some_and(|end| wake >= end) {
            return Err(Reason::ExecutionBudgetExhausted);
        }
        Ok(())
    }

    fn schedule_retry(
        &mut self,
        id: JobId,
        delay: Millis,
        local: Millis,
        label: impl FnOnce() -> &'static str,
        now: Millis,
    ) {
        // The timer's ticket, taken before the record is borrowed: nothing between here and
        // the timer draws one.
        let ticket = self.next_seq();
        let due = now.saturating_add(delay);
        // The record found once serves the retry's counts, the ledger's write, the audit
        // and the move to the timer (`delay_until` had looked it up again).
        let job = self.jobs.get_mut(&id).expect("retried action is live");
        job.retries = job.retries.saturating_add(1);
        job.prev_delay = local;
        job.entry.waited_ms = job.entry.waited_ms.saturating_add(delay);
        job.entry.state = ActionState::Planned;
        job.entry.updated_at = now;
        let (task, attempts) = (job.task, job.entry.attempts);
        if self.ledger.put_progress(&job.entry).is_err() {
            self.counts.ledger_errors += 1;
        }
        self.tasks.add_retry(task);
        super::audit_log::record_to(
            &mut self.audit,
            &self.policy,
            (now, AuditKind::RetryScheduled, id, None),
            || AuditDetail::Retry {
                after: label(),
                attempts,
                delay_ms: delay,
                local_delay_ms: local,
            },
        );
        let (old, priority) = super::queueing::park(job, due, ticket);
        self.parked(id, old, priority, due, ticket);
        self.begin_retry_wait(id);
        debug_assert!(
            {
                let scope = self.scopes.get(self.jobs[&id].scope);
                !matches!(scope.max_delayed, Some(max) if scope.delayed_retries > max)
            },
            "a retry was scheduled past its scope's max_delayed_requests"
        );
    }
}

/// Tokens an attempt really used, as far as the outcome tells: reported usage for a
/// success, nothing for a refusal that never executed, unknown (`None`) otherwise.
fn used_tokens(outcome: &Outcome, classification: Classification) -> Option<u64> {
    match (outcome, classification) {
        (Outcome::Response(r), Classification::Success) => r
            .usage
            .map(|u| u64::from(u.prompt_tokens) + u64::from(u.completion_tokens)),
        (Outcome::Transport(TransportFailure::StreamCut { .. }), _) => None,
        (_, Classification::Failure(f)) if f.group == FailureGroup::MayHaveExecuted => None,
        _ => Some(0),
    }
}
