//! The run report schema. Field names are the public contract (CONTRACT.md): extend, never
//! rename. Maps are `BTreeMap` so serialization order is stable.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Latency-like percentiles (ms), from an HdrHistogram.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
}

/// One expectation from the scenario's `[expect]` table and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Expectation {
    /// The summary key it constrains (dotted for nested keys: `latency_ms.p99`).
    pub name: String,
    /// Human-readable limit: `<= 1.2`, `>= 10`, `10..=20`.
    pub limit: String,
    /// The measured value.
    pub actual: f64,
    pub pass: bool,
}

/// `summary.json`: the run's figures, counted at the provider edge where it matters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub scenario: String,
    pub seed: u64,
    /// `"virtual"` or `"live"`.
    pub mode: String,
    /// The client preset the run used.
    pub preset: String,
    pub logical_requests: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub escalations: u64,
    /// Admission refusals (counted in `failed` too).
    pub rejected: u64,
    /// Attempts that reached the provider's edge, from its journal.
    pub outbound_attempts: u64,
    pub attempts_per_logical: f64,
    /// `{"200": n, "429": n, "503": n, "dropped": n, ...}` from the journal.
    pub status_counts: BTreeMap<String, u64>,
    /// Outbound attempts after the first for their logical action (journal).
    pub retries: u64,
    /// Synchronized retry bursts (definition in the README).
    pub retry_waves: u64,
    pub peak_retries_per_100ms: u64,
    /// Side effects committed more than once for one logical action (journal).
    pub duplicates: u64,
    /// Reconciliation look-ups that reached the provider.
    pub reconciliations: u64,
    /// Uncertain writes left unresolved (`reconciliation_required`).
    pub reconciliation_required: u64,
    pub deadline_misses: u64,
    /// Attempts that reached a scope before the Retry-After it was given had passed.
    pub retry_after_violations: u64,
    /// Virtual time from start to the last terminal outcome (ms).
    pub virtual_duration_ms: u64,
    /// Wall time of the run (ms). Not deterministic; the determinism check ignores it.
    pub wall_ms: u64,
    /// Submit to terminal outcome (ms).
    pub latency_ms: Percentiles,
    /// Submit to first dispatch (ms).
    pub queue_wait_ms: Percentiles,
    pub tokens_reserved: u64,
    pub tokens_used: u64,
    /// Completed logical requests per minute of virtual time.
    pub goodput_per_min: f64,
    pub expectations: Vec<Expectation>,
    /// Simulated runner crashes (scenario `[[crashes]]`) that happened during the run.
    #[serde(default)]
    pub crashes: u64,
    /// Uncertain writes re-sent blindly, from the journal: a second create for an action
    /// whose earlier create committed or left the client unable to know (hang, drop after
    /// the write, 500/502/504), with no look-up for it in between that answered absent.
    #[serde(default)]
    pub blind_resends: u64,
}

/// One row of `timeseries.csv`: one time bucket.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeseriesRow {
    /// Bucket start (ms since run start).
    pub t_ms: u64,
    /// Attempts that reached the provider in the bucket.
    pub attempts: u64,
    /// Of those, retries (not the first attempt of their action).
    pub retries: u64,
    pub status_2xx: u64,
    pub status_429: u64,
    pub status_503: u64,
    pub status_5xx_other: u64,
    pub status_4xx_other: u64,
    pub dropped: u64,
    /// Queue depth at the bucket's end (jobs admitted, not yet dispatched).
    pub queue_depth: u64,
    pub in_flight: u64,
    /// Tokens reserved by the client at the bucket's end.
    pub tokens_reserved: u64,
    /// Tokens used (provider-reported) in the bucket.
    pub tokens_used: u64,
    /// Completions in the bucket.
    pub completed: u64,
    /// Failures (failed, escalated, cancelled) in the bucket.
    pub failed: u64,
    /// Median submit-to-terminal latency of actions that ended in the bucket (ms, 0 if none).
    pub latency_p50_ms: u64,
    /// 99th percentile of the same (ms, 0 if none).
    pub latency_p99_ms: u64,
}

/// One row of `tenants.csv`: one tenant's completions in one time bucket (for per-tenant
/// goodput when a scenario has several tenants).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TenantRow {
    /// Bucket start (ms since run start).
    pub t_ms: u64,
    pub tenant: String,
    pub completed: u64,
    /// Outbound attempts of this tenant's actions in the bucket.
    pub attempts: u64,
}

/// One row of `attempts.csv`: one outbound attempt as the provider saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AttemptRow {
    /// Journal sequence number.
    pub seq: u64,
    /// Arrival at the provider edge (ms since run start).
    pub at_ms: u64,
    /// When the answer left or the connection closed (ms).
    pub done_ms: u64,
    pub tenant: String,
    pub scope: String,
    pub route: String,
    /// Logical action id (0 when the provider could not tell).
    pub action: u64,
    /// 1-based attempt number of the action as sent by the client.
    pub attempt_no: u32,
    /// HTTP status, or `dropped`, `hang`, `stream_cut`.
    pub outcome: String,
    /// Provider error code, if any.
    pub error_code: String,
    /// Whether a side effect was committed.
    pub committed: bool,
    /// Whether the attempt arrived before a Retry-After given on its scope had passed.
    pub retry_after_violation: bool,
    pub idempotency_key: String,
}
