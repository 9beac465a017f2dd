//! Running totals of a model, cheap to read at any time.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Totals since the model was built or reset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderStats {
    /// Attempts that reached the edge (every `arrive`).
    pub attempts: u64,
    /// Attempts per outcome label ("200", "429", "dropped", ...).
    pub status_counts: BTreeMap<String, u64>,
    /// Attempts that committed a side effect.
    pub committed: u64,
    /// Commits that duplicated an earlier one (same `external_ref`).
    pub duplicates: u64,
    /// Attempts of a request that had itself been told to wait, early.
    pub retry_after_violations: u64,
    /// Attempts on a scope that another request had been told to leave alone.
    #[serde(default)]
    pub scope_wait_violations: u64,
    /// Tokens used by committed completions.
    pub tokens_used: u64,
    /// Tokens billed again for a logical request already billed.
    #[serde(default)]
    pub duplicate_tokens: u64,
    /// Tokens billed whose answer never reached the client.
    #[serde(default)]
    pub undelivered_tokens: u64,
    /// Records in the store.
    pub records: u64,
    /// Records evicted from the store (older than `provider.record_retention`, or beyond
    /// the count cap), with their indexes and idempotency keys.
    #[serde(default)]
    pub records_evicted: u64,
    /// Admitted attempts not yet departed.
    pub in_flight: u64,
    /// Journal entries evicted before anyone drained them.
    pub journal_lost: u64,
    /// Per scope.
    pub scopes: BTreeMap<String, ScopeStats>,
}

/// Totals of one scope.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeStats {
    /// Attempts that reached this scope: every attempt of its own keys, and the attempts of
    /// keys counting it as a further scope that its admission check was reached for (a
    /// refusal by an earlier scope stops there).
    pub attempts: u64,
    /// Attempts the limits admitted (on a further scope: the attempts charged to it).
    pub admitted: u64,
    /// 429 answers (limits and injected).
    pub rate_limited: u64,
    /// Retry-After violations on this scope.
    pub retry_after_violations: u64,
    /// Scope-wait violations on this scope.
    #[serde(default)]
    pub scope_wait_violations: u64,
    /// Tokens used by committed completions counted against this scope.
    pub tokens_used: u64,
    /// Admitted attempts in flight now.
    pub in_flight: u64,
    /// Latest time a Retry-After told clients to wait until, model ms.
    pub retry_after_until_ms: u64,
}
