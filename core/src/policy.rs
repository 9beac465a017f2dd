//! The policy as data: every knob of the scheduler, serde-deserializable so the scenario
//! format can embed it (`[client.policy]`). Durations are humantime strings ("500ms", "8s").

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::degradation::{Rung, RungKind, DEFAULT_TRIM_FACTOR};
pub use crate::routing::{FallbackRoute, FallbackWhen, RoutePlan, Routing};

/// The group a failure falls into; classes list the groups they may retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureGroup {
    /// Rejected before executing: connection refused, DNS, pool timeout, 429, 503.
    NeverArrived,
    /// May have executed: read timeout, drop after write, 500, 502, 504.
    MayHaveExecuted,
    /// Retrying will not help: 400, 401, 403, 404, 422, content policy, context length.
    WontImprove,
    /// 409: resource-specific (duplicate, version conflict, lock).
    Conflict,
    /// Daily or billing quota exhausted: wait for the reset, not a burst backoff.
    QuotaExhausted,
}

/// How a backoff delay is drawn from `base * 2^n` capped at `cap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Jitter {
    /// `uniform(0, min(cap, base * 2^n))`: the default, and the right one.
    #[default]
    Full,
    /// `min(cap, base * 2^n)`: synchronized retries (shown for comparison).
    None,
    /// `d/2 + uniform(0, d/2)`.
    Equal,
    /// `min(cap, uniform(base, prev * 3))`.
    Decorrelated,
    /// Always `base` (a fixed sleep; the naive client).
    Fixed,
}

/// Backoff parameters: the `n`-th retry waits a delay drawn from `base * 2^n`, capped at
/// `cap`, as `jitter` says (a provider's longer wait still wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Backoff {
    /// Delay before the first retry, before jitter; also the pause a 429 without any wait
    /// puts on its scope, and how long a send refused by the ledger is held back.
    #[serde(with = "humantime_serde_compat")]
    pub base: Duration,
    /// Longest backoff delay, before a provider's wait is applied.
    #[serde(with = "humantime_serde_compat")]
    pub cap: Duration,
    /// How the delay is drawn below the exponential bound.
    pub jitter: Jitter,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            base: Duration::from_millis(500),
            cap: Duration::from_secs(8),
            jitter: Jitter::Full,
        }
    }
}

/// One request class: its budgets and what it may retry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassPolicy {
    /// Attempts per logical action, first one included.
    pub max_attempts: u32,
    /// Total time an action of this class may spend waiting between attempts,
    /// Retry-After included.
    #[serde(with = "humantime_serde_compat")]
    pub max_wait: Duration,
    /// Failure groups this class may retry.
    pub retry_on: Vec<FailureGroup>,
    /// Client timeout for one attempt.
    #[serde(with = "humantime_serde_compat")]
    pub timeout: Duration,
    /// A write that may have executed is reconciled (looked up) instead of re-sent.
    #[serde(default)]
    pub reconcile: bool,
    /// HTTP statuses this class may retry, when the rule is per status rather than per
    /// group (seed 000: `retry_statuses: [408, 429, 502, 503, 504]`, "retry 502, not 500").
    /// When set, an answered failure is retried only if its status is listed, whatever its
    /// group; failures with no status (a timeout, a dropped connection) still follow
    /// `retry_on`. A write that may have executed is still reconciled first when
    /// `reconcile` is on. Absent: `retry_on` decides alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_statuses: Option<Vec<u16>>,
}

/// Shared helper so policy durations read and write as humantime strings.
mod humantime_serde_compat {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text).map_err(|e| {
            serde::de::Error::custom(format!(
                "bad duration {text:?}: {e} (write it like \"500ms\", \"8s\" or \"2m\")"
            ))
        })
    }
}

/// Optional durations as humantime strings; absent means "no limit".
mod humantime_option {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::humantime_serde_compat::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        text.map(|text| {
            humantime::parse_duration(&text).map_err(|e| {
                serde::de::Error::custom(format!(
                    "bad duration {text:?}: {e} (write it like \"500ms\", \"8s\" or \"2m\")"
                ))
            })
        })
        .transpose()
    }
}

/// How the provider's `Retry-After` / `retry-after-ms` is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryAfterPolicy {
    /// Wait at least as long as the provider asked (the wait wins over a shorter backoff).
    pub honour: bool,
    /// Delay used when an HTTP-date is already past (clock skew): a moderate wait, never a
    /// tight loop.
    #[serde(with = "humantime_serde_compat")]
    pub past_date_floor: Duration,
    /// A retry that waits for a provider's wait (its own Retry-After or the scope's
    /// `next_allowed_at`) goes at a uniform random point of this window after it, so the jobs
    /// held by one 429 do not come back as one synchronized wave. Zero: exactly at the end.
    #[serde(with = "humantime_serde_compat")]
    pub spread: Duration,
}

impl Default for RetryAfterPolicy {
    fn default() -> Self {
        Self {
            honour: true,
            past_date_floor: Duration::from_secs(1),
            spread: Duration::from_secs(1),
        }
    }
}

/// What the client believes one provider scope allows. `None` means "not known": no local
/// bucket for that dimension (rate-limit headers may still teach one when
/// `rate_header_pacing` is on).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct ScopeBudget {
    /// Requests per minute the client allows itself on this scope (requests).
    pub rpm: Option<u32>,
    /// Tokens per minute (prompt + max output reserved per call) (tokens).
    pub tpm: Option<u32>,
    /// Attempts on the wire at once on this scope (requests).
    pub concurrency: Option<u32>,
    /// Fraction, strictly between 0 and 1, of this scope's request and token buckets held
    /// back for critical and normal work: a bulk send waits (it does not fail) while taking
    /// its tokens would leave less than `reserve` of a bucket's capacity, so a bulk backlog
    /// cannot take a whole minute's quota. Critical and normal work may use all of it. A
    /// bulk send too big to fit above the reservation waits for a full bucket, like an
    /// oversized one. Applies to learned buckets too; `None` (the default): no reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve: Option<f64>,
    /// Retries that may wait on a retry timer for this scope at once, in one runner
    /// (requests, at least 1): a failed action whose retry would be one more ends at once
    /// instead (`scope_delayed_full`; a rate-limited one takes its next route when its plan
    /// falls back on `rate_limit_after_retry_budget`), so a storm cannot pile up timers
    /// that all return to the scope together. A retry's place is freed when its timer
    /// wakes. Actions restored after a crash with a backoff count (new retries are shed
    /// until they wake); look-ups of uncertain writes and scheduled starts never count and
    /// are never shed. `None` (the default): no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_delayed_requests: Option<u32>,
}

impl ScopeBudget {
    /// This budget with each field it leaves out taken from `fallback`: a scope's own entry
    /// overrides `default_scope` field by field (an entry that sets only `reserve` keeps the
    /// default's cap on waiting retries).
    #[must_use]
    pub fn or(self, fallback: ScopeBudget) -> ScopeBudget {
        ScopeBudget {
            rpm: self.rpm.or(fallback.rpm),
            tpm: self.tpm.or(fallback.tpm),
            concurrency: self.concurrency.or(fallback.concurrency),
            reserve: self.reserve.or(fallback.reserve),
            max_delayed_requests: self.max_delayed_requests.or(fallback.max_delayed_requests),
        }
    }
}

/// A retry budget shared by every task sending to one scope: in any sliding `window`,
/// retries may be at most `ratio` of the first attempts in that window plus `floor`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScopeRetryBudget {
    /// Off: any number of retries may reach the scope.
    pub enabled: bool,
    /// Retries allowed per first attempt in the window (0.2 = 20 %).
    pub ratio: f64,
    /// Retries always allowed in a window, whatever the traffic (requests).
    pub floor: u32,
    /// Length of the sliding window.
    #[serde(with = "humantime_serde_compat")]
    pub window: Duration,
}

impl Default for ScopeRetryBudget {
    fn default() -> Self {
        Self {
            enabled: true,
            ratio: 0.2,
            floor: 10,
            window: Duration::from_secs(10),
        }
    }
}

/// A retry budget per task: all actions of one task together may retry at most
/// `max_retries` times (attempts after the first; look-ups excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TaskRetryBudget {
    /// Off: only the class budgets bound a task's retries.
    pub enabled: bool,
    /// Retries per task (requests).
    pub max_retries: u32,
}

impl Default for TaskRetryBudget {
    fn default() -> Self {
        Self {
            enabled: true,
            max_retries: 8,
        }
    }
}

/// Budgets of retries at two levels: per task (how much uncertainty one goal tolerates) and
/// per scope (how much disturbance all tasks together may cause the provider).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct RetryBudgets {
    /// Retries all actions of one task may make together.
    pub per_task: TaskRetryBudget,
    /// Retries all tasks together may send to one scope, relative to first attempts.
    pub per_scope: ScopeRetryBudget,
}

/// Admission with backpressure: bounded queues per tenant and priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Admission {
    /// Live actions (admitted, not yet terminal) one tenant may hold at one priority
    /// (actions). A submit beyond it is rejected.
    pub queue_capacity: u32,
    /// The retry-after a rejection carries.
    #[serde(with = "humantime_serde_compat")]
    pub reject_retry_after: Duration,
}

impl Default for Admission {
    fn default() -> Self {
        Self {
            queue_capacity: 100_000,
            reject_retry_after: Duration::from_secs(1),
        }
    }
}

/// Circuit breaker on identical normalized failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BreakerPolicy {
    /// Off: failures never open a path; every action retries as its class allows.
    pub enabled: bool,
    /// Identical failures (same fingerprint) that open the path (failures).
    pub threshold: u32,
    /// How long an open path stays open.
    #[serde(with = "humantime_serde_compat")]
    pub open_for: Duration,
}

impl Default for BreakerPolicy {
    fn default() -> Self {
        Self {
            enabled: true,
            threshold: 5,
            open_for: Duration::from_secs(30),
        }
    }
}

/// Reconciliation of uncertain writes by look-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReconcilePolicy {
    /// Look-ups one action may make before it is escalated (requests).
    pub max_lookups: u32,
    /// Re-sends (with the same key) after a look-up said the action is absent, beyond the
    /// class's `max_attempts` (requests).
    pub max_resends: u32,
}

impl Default for ReconcilePolicy {
    fn default() -> Self {
        Self {
            max_lookups: 3,
            max_resends: 1,
        }
    }
}

/// Daily or billing quota exhaustion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QuotaPolicy {
    /// Wait for the quota's reset (published on the scope record) instead of a backoff;
    /// off: a quota refusal is retried like any other failure of its class.
    pub wait_for_reset: bool,
    /// Assumed time to the quota's reset when the provider gives neither `Retry-After` nor a
    /// reset header.
    #[serde(with = "humantime_serde_compat")]
    pub assumed_reset: Duration,
}

impl Default for QuotaPolicy {
    fn default() -> Self {
        Self {
            wait_for_reset: true,
            assumed_reset: Duration::from_secs(60),
        }
    }
}

/// Most attempts a class may give one logical action. An action's retrying is bounded by
/// time with `max_wait`; this bounds the count, so attempts answered in no time cannot
/// repeat without end at one instant of a virtual run.
pub const MAX_ATTEMPTS: u32 = 1_000;

/// The full policy. See `Policy::default()` for the stampede defaults and
/// [`crate::preset::preset`] for the named comparison clients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// Concurrency slots for the whole client (its workers) (requests on the wire).
    pub workers: u32,
    /// Request classes by name.
    pub classes: BTreeMap<String, ClassPolicy>,
    /// How long to wait before a retry when the provider asked for nothing longer.
    pub backoff: Backoff,
    /// How the provider's `Retry-After` / `retry-after-ms` is honoured.
    pub retry_after: RetryAfterPolicy,
    /// Publish 429/503 waits and rate-limit headers on the scope record, which every
    /// dispatch to that scope reads; off: each job only honours what it was told itself.
    pub share_scope_state: bool,
    /// Enforce the per-scope budgets (`scopes`, `default_scope`) locally: RPM and TPM token
    /// buckets with reserve-then-reconcile, and the scope's concurrency.
    pub token_budget: bool,
    /// Pace future requests from `RateLimit-*` / `x-ratelimit-*` headers.
    pub rate_header_pacing: bool,
    /// Per-scope budgets by scope id.
    pub scopes: BTreeMap<String, ScopeBudget>,
    /// Budget for scopes not listed in `scopes`.
    pub default_scope: ScopeBudget,
    /// How many retries a task, and all tasks on one scope, may make.
    pub retry_budgets: RetryBudgets,
    /// Bounded queues: how many live actions a tenant may hold per priority.
    pub admission: Admission,
    /// When repeated identical failures stop an action's path.
    pub breaker: BreakerPolicy,
    /// How many look-ups and re-sends an uncertain write may make.
    pub reconciliation: ReconcilePolicy,
    /// What a daily or billing quota refusal does.
    pub quota: QuotaPolicy,
    /// Single-flight identical coalescable reads (one send serves every waiter).
    pub coalesce_reads: bool,
    /// Send the `Idempotency-Key` header (the key is derived and persisted either way).
    pub send_idempotency_keys: bool,
    /// Send a stream again after it was cut once tokens had arrived, like any other
    /// failure of its class. Off (every preset but `naive`): such a stream ends
    /// `stream_interrupted`, since a re-send would show and bill the same text twice
    /// (seed 003, seed 004).
    pub resend_cut_streams: bool,
    /// Time (since run start) after which every unfinished action fails; `None`: unbounded.
    #[serde(with = "humantime_option", skip_serializing_if = "Option::is_none")]
    pub execution_budget: Option<Duration>,
    /// Wall clock at t = 0 (ms since the Unix epoch): HTTP-date `Retry-After` values are
    /// compared with `wall_epoch_unix_ms + now`. The core never reads a clock itself.
    pub wall_epoch_unix_ms: u64,
    /// Record audit events (`drain_audit`). Off only for benchmarks of the bare policy.
    pub audit: bool,
    /// Primary and fallback routes by credential (`[routing]`); default: no plans, every
    /// action keeps its own route.
    #[serde(skip_serializing_if = "Routing::is_default")]
    pub routing: Routing,
    /// The degradation ladder (`[[degradation]]`), in order; default empty: nothing is
    /// ever degraded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub degradation: Vec<Rung>,
}

impl Policy {
    /// The class policy for a class name.
    pub fn class(&self, name: &str) -> Option<&ClassPolicy> {
        self.classes.get(name)
    }

    /// The budget the client assumes for a scope.
    pub fn scope_budget(&self, scope: &str) -> ScopeBudget {
        self.scopes
            .get(scope)
            .map_or(self.default_scope, |own| own.or(self.default_scope))
    }

    /// Checks values the scheduler cannot work with; the message names the key and the fix.
    pub fn validate(&self) -> Result<(), String> {
        if self.workers == 0 {
            return Err(
                "workers = 0: at least one concurrency slot is needed (set workers >= 1)".into(),
            );
        }
        if self.classes.is_empty() {
            return Err(
                "classes is empty: define at least one request class (e.g. [classes.llm])".into(),
            );
        }
        for (name, class) in &self.classes {
            if class.max_attempts == 0 {
                return Err(format!(
                    "classes.{name}.max_attempts = 0: use 1 for a single attempt"
                ));
            }
            if class.max_attempts > MAX_ATTEMPTS {
                return Err(format!(
                    "classes.{name}.max_attempts = {}: give at most {MAX_ATTEMPTS} (bound the \
                     retrying by time with max_wait instead; attempts answered in no time, 0 ms \
                     refusals with no backoff, would otherwise repeat billions of times at one \
                     instant)",
                    class.max_attempts
                ));
            }
            if class.timeout.is_zero() {
                return Err(format!(
                    "classes.{name}.timeout is 0: give the attempt time, e.g. \"10s\""
                ));
            }
            if let Some(bad) = class
                .retry_statuses
                .iter()
                .flatten()
                .find(|s| !(100..=599).contains(*s))
            {
                return Err(format!(
                    "classes.{name}.retry_statuses lists {bad}: HTTP statuses run from 100 to 599, e.g. [408, 429, 502, 503, 504]"
                ));
            }
        }
        let budget = &self.retry_budgets.per_scope;
        if !(budget.ratio.is_finite() && budget.ratio >= 0.0) {
            return Err(format!(
                "retry_budgets.per_scope.ratio = {}: use a number >= 0 such as 0.2",
                budget.ratio
            ));
        }
        if budget.enabled && budget.window.is_zero() {
            return Err("retry_budgets.per_scope.window is 0: use a window such as \"10s\"".into());
        }
        if self.breaker.enabled && self.breaker.threshold == 0 {
            return Err(
                "breaker.threshold = 0: use 1 or more failures (or breaker.enabled = false)".into(),
            );
        }
        if self.admission.queue_capacity == 0 {
            return Err(
                "admission.queue_capacity = 0: every submit would be rejected; use 1 or more"
                    .into(),
            );
        }
        for (id, scope) in &self.scopes {
            if scope.rpm == Some(0) || scope.tpm == Some(0) || scope.concurrency == Some(0) {
                return Err(format!(
                    "scopes.{id}: a limit of 0 admits nothing; leave it out for no local limit"
                ));
            }
        }
        let budgets = self
            .scopes
            .iter()
            .map(|(id, b)| (format!("scopes.{id}"), b));
        for (key, budget) in budgets.chain([("default_scope".to_string(), &self.default_scope)]) {
            if let Some(reserve) = budget.reserve {
                if !(reserve > 0.0 && reserve < 1.0) {
                    return Err(format!(
                        "{key}.reserve = {reserve}: use a fraction strictly between 0 and 1, \
                         such as 0.3 (leave it out for no reservation)"
                    ));
                }
            }
            if budget.max_delayed_requests == Some(0) {
                return Err(format!(
                    "{key}.max_delayed_requests = 0 would end every retry on the scope: use 1 \
                     or more, such as 25 (leave it out for no cap; the classes' max_attempts \
                     = 1 is the way to retry nothing)"
                ));
            }
        }
        self.routing.validate()?;
        crate::degradation::validate(&self.degradation)?;
        Ok(())
    }
}

impl Default for Policy {
    fn default() -> Self {
        use FailureGroup::*;
        let secs = Duration::from_secs;
        let class =
            |max_attempts, max_wait, retry_on: &[FailureGroup], timeout, reconcile| ClassPolicy {
                max_attempts,
                max_wait,
                retry_on: retry_on.to_vec(),
                timeout,
                reconcile,
                retry_statuses: None,
            };
        let mut classes = BTreeMap::new();
        // LLM calls retry never-arrived and may-have-executed, and wait out quota resets.
        classes.insert(
            "llm".into(),
            class(
                3,
                secs(60),
                &[NeverArrived, MayHaveExecuted, QuotaExhausted],
                secs(60),
                false,
            ),
        );
        classes.insert(
            "read".into(),
            class(
                4,
                secs(30),
                &[NeverArrived, MayHaveExecuted],
                secs(10),
                false,
            ),
        );
        classes.insert(
            "idempotent_write".into(),
            class(
                4,
                secs(30),
                &[NeverArrived, MayHaveExecuted],
                secs(10),
                false,
            ),
        );
        // A non-idempotent tool retries only what never arrived; the rest is reconciled.
        classes.insert(
            "tool".into(),
            class(3, secs(30), &[NeverArrived], secs(10), true),
        );
        // One attempt, then reconciliation.
        classes.insert(
            "uncertain_write".into(),
            class(1, secs(30), &[NeverArrived], secs(10), true),
        );
        Self {
            workers: 96,
            classes,
            backoff: Backoff::default(),
            retry_after: RetryAfterPolicy::default(),
            share_scope_state: true,
            token_budget: true,
            rate_header_pacing: true,
            scopes: BTreeMap::new(),
            default_scope: ScopeBudget::default(),
            retry_budgets: RetryBudgets::default(),
            admission: Admission::default(),
            breaker: BreakerPolicy::default(),
            reconciliation: ReconcilePolicy::default(),
            quota: QuotaPolicy::default(),
            coalesce_reads: true,
            send_idempotency_keys: true,
            resend_cut_streams: false,
            execution_budget: None,
            wall_epoch_unix_ms: 0,
            audit: true,
            routing: Routing::default(),
            degradation: Vec::new(),
        }
    }
}
