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
    /// Attempts that arrived on a scope before its Retry-After had passed.
    pub retry_after_violations: u64,
    /// Tokens used by committed completions.
    pub tokens_used: u64,
    /// Records in the store.
    pub records: u64,
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
    /// Attempts that reached this scope.
    pub attempts: u64,
    /// Attempts the limits admitted.
    pub admitted: u64,
    /// 429 answers (limits and injected).
    pub rate_limited: u64,
    /// Retry-After violations on this scope.
    pub retry_after_violations: u64,
    /// Tokens used by committed completions.
    pub tokens_used: u64,
    /// Admitted attempts in flight now.
    pub in_flight: u64,
    /// Latest time a Retry-After told clients to wait until, model ms.
    pub retry_after_until_ms: u64,
}
