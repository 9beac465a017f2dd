//! Routing as data: a primary route (the job's own credential and scope) and ordered
//! fallback routes an action may move to when a named condition happens
//! (`[client.policy.routing]`, `[[client.policy.routing.plans]]`).
//!
//! The rules the scheduler applies (see `docs/design.md`, "The client policy the core
//! implements"): an action moves to the first fallback after its current route whose `when`
//! holds the condition that just happened; each route gets the class's `max_attempts`
//! afresh while `max_wait`, the deadline and the task and scope budgets bound the whole
//! action; and, by default, an action whose current route may have executed an attempt
//! stays on that route (same idempotency key) instead of crossing, so one logical request
//! is never billed on two providers.

use stampede_name::Name;

use serde::{Deserialize, Serialize};

use crate::classify::{Failure, FailureKind};
use crate::policy::FailureGroup;

/// A condition under which an action moves from its current route to a fallback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackWhen {
    /// `provider_5xx`: a 5xx answer (500, 502, 503, 504, ...) or a failed connection
    /// (refused, dropped, timed out, a stream cut before its first token).
    #[serde(rename = "provider_5xx")]
    ProviderFiveXx,
    /// `rate_limit_after_retry_budget`: a 429 (rate limit or quota) whose retry on the
    /// current route would end the action (its attempts on the route, its wait budget, its
    /// deadline or the scope's retry budget): move on instead of failing.
    RateLimitAfterRetryBudget,
    /// `context_length_needed`: a 400 `context_length_exceeded`: a model with a bigger
    /// context is needed.
    ContextLengthNeeded,
    /// `primary_unavailable`: a failure that never reached execution, other than a 429:
    /// 503, connection refused, DNS, connect or pool timeout, dropped before the write.
    PrimaryUnavailable,
}

impl FallbackWhen {
    crate::labels::kinds_and_labels!(
        FallbackWhen,
        [
            ProviderFiveXx,
            RateLimitAfterRetryBudget,
            ContextLengthNeeded,
            PrimaryUnavailable
        ]
    );

    /// The snake_case name, as scenarios write it (`provider_5xx`).
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            FallbackWhen::ProviderFiveXx => "provider_5xx",
            FallbackWhen::RateLimitAfterRetryBudget => "rate_limit_after_retry_budget",
            FallbackWhen::ContextLengthNeeded => "context_length_needed",
            FallbackWhen::PrimaryUnavailable => "primary_unavailable",
        }
    }

    pub(crate) fn bit(self) -> u8 {
        match self {
            FallbackWhen::ProviderFiveXx => 1,
            FallbackWhen::RateLimitAfterRetryBudget => 2,
            FallbackWhen::ContextLengthNeeded => 4,
            FallbackWhen::PrimaryUnavailable => 8,
        }
    }

    /// The conditions a failure meets at once (a bit set of [`FallbackWhen::bit`]), not
    /// counting `rate_limit_after_retry_budget`, which needs the retry budget to end first.
    /// A 503 or a refused connection is both `primary_unavailable` and `provider_5xx`.
    pub(crate) fn immediate(failure: Failure) -> u8 {
        let mut set = 0;
        match failure.kind {
            FailureKind::ContextLength => set |= FallbackWhen::ContextLengthNeeded.bit(),
            FailureKind::ServerError(_)
            | FailureKind::Unavailable
            | FailureKind::Transport(_)
            | FailureKind::StreamCut {
                tokens_delivered: 0,
            } => set |= FallbackWhen::ProviderFiveXx.bit(),
            _ => {}
        }
        let never_arrived = failure.group == FailureGroup::NeverArrived
            && !matches!(
                failure.kind,
                FailureKind::RateLimited | FailureKind::IdempotencyKeyInUse
            );
        if never_arrived {
            set |= FallbackWhen::PrimaryUnavailable.bit();
        }
        set
    }
}

/// One route an action may move to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackRoute {
    /// Credential (bearer key) attempts on this route are sent with.
    pub credential: Name,
    /// Provider scope that credential is limited on; `None`: unknown, the whole account
    /// (`"account"`) is assumed, as for a job without a scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Model asked for on this route; `None`: the job's own model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Name>,
    /// Conditions that move an action here (from the primary or an earlier fallback).
    pub when: Vec<FallbackWhen>,
}

impl FallbackRoute {
    /// The bit set of this route's `when`.
    pub(crate) fn when_bits(&self) -> u8 {
        self.when.iter().fold(0, |bits, when| bits | when.bit())
    }
}

/// The routes of the jobs sent with one credential: the primary (the job's own credential
/// and scope) and its fallbacks, tried in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutePlan {
    /// Credential of the jobs this plan applies to (their primary route).
    pub primary: String,
    /// Routes an action may move to, in order.
    #[serde(default)]
    pub fallbacks: Vec<FallbackRoute>,
}

/// Routing with a primary and fallbacks (`[client.policy.routing]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Routing {
    /// Plans by primary credential; a job whose credential no plan names keeps its route.
    pub plans: Vec<RoutePlan>,
    /// Reconcile before falling back: an action whose current route may have executed an
    /// attempt (500, 502, 504, dropped after the write, read timeout) that no later answer
    /// settled stays on that route, re-sending with the same idempotency key, instead of
    /// crossing to another provider. Off (what a naive router does): it crosses at once.
    pub reconcile_before_fallback: bool,
}

impl Default for Routing {
    fn default() -> Self {
        Self {
            plans: Vec::new(),
            reconcile_before_fallback: true,
        }
    }
}

impl Routing {
    /// Whether this is the default routing (no plans, reconcile before falling back): the
    /// policy then serializes without a `routing` table.
    #[must_use]
    pub fn is_default(&self) -> bool {
        self.plans.is_empty() && self.reconcile_before_fallback
    }

    /// The index of the plan a job sent with `credential` follows, if any.
    #[must_use]
    pub fn plan_for(&self, credential: &str) -> Option<usize> {
        if self.plans.is_empty() {
            return None;
        }
        self.plans
            .iter()
            .position(|plan| plan.primary == credential)
    }

    /// Checks the plans; the message names the key (`routing.plans.0.fallbacks.1.when`).
    pub(crate) fn validate(&self) -> Result<(), String> {
        for (i, plan) in self.plans.iter().enumerate() {
            if plan.primary.is_empty() {
                return Err(format!(
                    "routing.plans.{i}.primary is empty: name the credential of the jobs this plan routes"
                ));
            }
            if let Some(first) = self.plans[..i]
                .iter()
                .position(|p| p.primary == plan.primary)
            {
                return Err(format!(
                    "routing.plans.{i}.primary repeats routing.plans.{first}.primary: one plan per primary credential"
                ));
            }
            for (j, route) in plan.fallbacks.iter().enumerate() {
                if route.credential.is_empty() {
                    return Err(format!(
                        "routing.plans.{i}.fallbacks.{j}.credential is empty: name the credential to send with"
                    ));
                }
                if route.when.is_empty() {
                    return Err(format!(
                        "routing.plans.{i}.fallbacks.{j}.when is empty: list the conditions that move an action here \
                         (provider_5xx, rate_limit_after_retry_budget, context_length_needed, primary_unavailable)"
                    ));
                }
            }
        }
        Ok(())
    }
}
