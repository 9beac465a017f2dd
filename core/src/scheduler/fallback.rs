//! Routing with a primary and fallbacks. An action follows the plan whose `primary` is its
//! credential; when a failure meets a condition a later route lists, it moves there and
//! its next attempt goes without a backoff delay (a different provider), still through the
//! new scope's published wait and buckets like every dispatch. Each route gets the class's
//! `max_attempts` afresh; `max_wait`, the deadline and the task and scope retry budgets
//! bound the whole action (a move counts as a retry on both).
//!
//! Reconcile before falling back: while an attempt on the current route may have executed
//! and nothing settled it, the move is withheld and the action keeps retrying on that route
//! with the same idempotency key, where a provider that keeps completion idempotency replays
//! the original instead of billing a second execution elsewhere.

use super::admission::DEFAULT_SCOPE;
use super::Scheduler;
use crate::audit::{AuditDetail, AuditKind, FallbackMove};
use crate::command::Reason;
use crate::job::JobId;
use crate::ledger::{ActionState, Ledger};
use crate::routing::FallbackWhen;
use crate::time::Millis;

/// What an attempt to move an action to a fallback came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Move {
    /// No later route lists the condition (or the action follows no plan): decide as if
    /// there were no routing.
    NoRoute,
    /// A route lists it, but the current route may have executed an attempt: stay.
    Withheld,
    /// The action is ready on the new route.
    Moved,
    /// A budget of the whole action refuses the move: end it with this reason.
    Refused(Reason),
}

impl<L: Ledger> Scheduler<L> {
    /// The plan a job sent with `credential` follows, if the policy routes it.
    pub(super) fn plan_of(&self, credential: stampede_name::Name) -> Option<u32> {
        if self.policy.routing.plans.is_empty() {
            // No plan: the credential's text is not even read.
            return None;
        }
        self.policy
            .routing
            .plan_for(&credential)
            .and_then(|plan| u32::try_from(plan).ok())
    }

    /// Credential and model of the action's current route, when it is a fallback.
    pub(super) fn fallback_route(&self, id: JobId) -> Option<&crate::routing::FallbackRoute> {
        let job = &self.jobs[&id];
        let plan = job.plan?;
        let index = usize::from(job.route.checked_sub(1)?);
        self.policy.routing.plans[plan as usize]
            .fallbacks
            .get(index)
    }

    /// Moves the action to the first route after its current one whose `when` holds one of
    /// `conditions` (a bit set of [`FallbackWhen`]), unless the current route is uncertain
    /// and the policy reconciles before falling back.
    pub(super) fn fall_back(&mut self, id: JobId, conditions: u8, now: Millis) -> Move {
        if conditions == 0 {
            return Move::NoRoute;
        }
        let job = &self.jobs[&id];
        let Some(plan) = job.plan else {
            return Move::NoRoute;
        };
        let fallbacks = &self.policy.routing.plans[plan as usize].fallbacks;
        // Route r is the primary (0) or fallback r - 1: the routes after it start at r.
        let from = usize::from(job.route);
        let Some((offset, route)) = fallbacks
            .iter()
            .skip(from)
            .enumerate()
            .find(|(_, route)| route.when_bits() & conditions != 0)
        else {
            return Move::NoRoute;
        };
        let reason = route
            .when
            .iter()
            .copied()
            .find(|when| when.bit() & conditions != 0)
            .expect("the route lists a condition that happened");
        let to = from + offset;
        if self.policy.routing.reconcile_before_fallback && job.route_uncertain {
            let scope = job.scope;
            self.jobs
                .get_mut(&id)
                .expect("routed action is live")
                .withheld = true;
            let scope = self.scopes.get(scope).id;
            self.record(now, AuditKind::FallbackWithheld, id, None, || {
                AuditDetail::FallbackWithheld { reason, scope }
            });
            return Move::Withheld;
        }
        if self.task_budget_spent(job) {
            return Move::Refused(Reason::TaskBudgetExhausted);
        }
        let scope_name = fallbacks[to].scope.as_deref().unwrap_or(DEFAULT_SCOPE);
        // Not a retry against the new scope: the action has never been sent there, so its
        // first attempt on the route counts there as a first attempt (dispatch records it),
        // and only that route's later retries draw on the new scope's retry budget.
        let scope = self.scopes.intern(scope_name, &self.policy, now);
        let from_scope = self.jobs[&id].scope;
        let tenant = self.jobs[&id].tenant;
        let lane = self.lanes.lane(tenant, scope);
        let job = self.jobs.get_mut(&id).expect("routed action is live");
        // Its scope's count of waiting retries is released by the scope it holds then.
        debug_assert!(
            !job.retry_waiting,
            "an action on a retry timer changes route"
        );
        job.scope = scope;
        job.lane = lane;
        job.route = u16::try_from(to + 1).unwrap_or(u16::MAX);
        job.route_start = job.action_attempts;
        job.retries = job.retries.saturating_add(1);
        job.route_retry_start = job.retries;
        job.prev_delay = 0;
        job.route_uncertain = false;
        job.pending_fallback = Some(reason);
        job.entry.state = ActionState::Planned;
        job.entry.updated_at = now;
        if self.ledger.put_progress(&job.entry).is_err() {
            self.counts.ledger_errors += 1;
        }
        self.tasks.add_retry(self.jobs[&id].task);
        if self.policy.audit {
            let detail = AuditDetail::Fallback(Box::new(FallbackMove {
                reason,
                route: (to + 1) as u64,
                from_scope: self.scopes.get(from_scope).id,
                to_scope: self.scopes.get(scope).id,
                model: self.policy.routing.plans[plan as usize].fallbacks[to].model,
            }));
            self.record(now, AuditKind::Fallback, id, None, || detail);
        }
        self.make_ready(id, false);
        Move::Moved
    }

    /// The action's retry budget on its current route ended on a rate-limit or quota
    /// failure with `reason`: move on to a route listing `rate_limit_after_retry_budget`
    /// instead, if any; else (and for any other failure) it fails with `reason`.
    pub(super) fn fail_or_move_on(
        &mut self,
        id: JobId,
        reason: Reason,
        rate_limited: bool,
        now: Millis,
    ) {
        let route_budget = matches!(
            reason,
            Reason::AttemptsExhausted
                | Reason::WaitBudgetExhausted
                | Reason::DeadlineExceeded
                | Reason::ScopeBudgetExhausted
                | Reason::ScopeDelayedFull
                | Reason::QuotaExhausted
        );
        if rate_limited && route_budget && self.jobs[&id].plan.is_some() {
            let condition = FallbackWhen::RateLimitAfterRetryBudget.bit();
            match self.fall_back(id, condition, now) {
                Move::Moved => return,
                Move::Refused(refused) => {
                    return self.finish(id, crate::TerminalStatus::Failed, refused, now)
                }
                Move::NoRoute | Move::Withheld => {}
            }
        }
        // A spent shared quota is for a person to settle (seed 000: someone takes over "when
        // the shared quota is exhausted"): raise it, or wait for its reset.
        let status = if reason == Reason::QuotaExhausted {
            crate::TerminalStatus::Escalated
        } else {
            crate::TerminalStatus::Failed
        };
        self.finish(id, status, reason, now);
    }
}
