//! Time-varying provider behaviour (`[[provider.phases]]`): a latency spike, a quota cut,
//! each active over a span of model time.
//!
//! A phase is active from `from` (inclusive) until `until` (exclusive; absent: to the end of
//! the run), in model time since the run (or the server) started, like a fault's window.
//! While it is active its `latency` replaces the latency every completion draws from, and
//! each of its `scopes` replaces the limits it names on that scope. Phases apply in listed
//! order, so a later active phase wins for the same field.

use super::duration::DurationMs;
use super::latency::LatencyConfig;
use super::{invalid, list, ConfigError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// One span of model time with its own latency or limits:
///
/// ```toml
/// [[provider.phases]]
/// from = "5m"
/// until = "10m"
/// latency = { fixed = "90s" }
/// scopes = [{ id = "account", rpm = 30 }]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// Model time since the run started when the phase begins (inclusive), ms.
    pub from: DurationMs,
    /// Model time since the run started when the phase ends (exclusive), ms. Absent: it
    /// lasts to the end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DurationMs>,
    /// While active, the latency of every chat completion (and `/v1/messages`,
    /// `/v1/embeddings`), whatever its model: it replaces `provider.latency` and a model's
    /// own latency. Record and tool routes keep `provider.tool_latency`. Absent: unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyConfig>,
    /// While active, limits that replace those of the named scopes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<ScopeOverride>,
}

impl Phase {
    /// Whether the phase is active at model time `now_ms`: `from <= now < until`.
    pub fn active_at(&self, now_ms: u64) -> bool {
        now_ms >= self.from.ms() && self.until.map_or(true, |u| now_ms < u.ms())
    }
}

/// Limits of one scope while a phase is active: each given value replaces the scope's own
/// (or sets one it does not have); an absent one leaves the scope's value as it is.
///
/// Counters are not reset when a limit changes: the limit in force applies to what the
/// current window (minute, day) has already counted, so cutting `rpm` from 60 to 20 when 30
/// requests of the minute are used refuses every further request of that minute; in-flight
/// attempts above a lowered `concurrency` finish, and no new one is admitted until fewer
/// are in flight than the new limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeOverride {
    /// The id of a scope in `provider.scopes`.
    pub id: String,
    /// Requests per minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u64>,
    /// Tokens per minute (prompt + max_tokens charged at admission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpm: Option<u64>,
    /// Requests per day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpd: Option<u64>,
    /// Tokens per day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpd: Option<u64>,
    /// Concurrent requests in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u64>,
}

impl ScopeOverride {
    /// The limits it gives, by their key in `[[provider.scopes]]`.
    pub fn limits(&self) -> [(&'static str, Option<u64>); 5] {
        [
            ("rpm", self.rpm),
            ("tpm", self.tpm),
            ("rpd", self.rpd),
            ("tpd", self.tpd),
            ("concurrency", self.concurrency),
        ]
    }
}

/// Checks `provider.phases.{i}` against the known scope ids.
pub(super) fn validate_phase(
    i: usize,
    p: &Phase,
    scope_ids: &BTreeSet<&str>,
) -> Result<(), ConfigError> {
    let key = |k: &str| format!("provider.phases.{i}.{k}");
    if let Some(until) = p.until {
        if until <= p.from {
            return Err(invalid(
                key("until"),
                format!(
                    "`until` ({until}) must be after `from` ({}); leave it out for a phase that lasts to the end",
                    p.from
                ),
            ));
        }
    }
    if let Some(latency) = &p.latency {
        if let Err(m) = latency.shape() {
            return Err(invalid(key("latency"), m));
        }
    }
    if p.latency.is_none() && p.scopes.is_empty() {
        return Err(invalid(
            format!("provider.phases.{i}"),
            "changes nothing: give a `latency` or `scopes = [{ id = \"...\", rpm = ... }]`",
        ));
    }
    let mut seen = BTreeSet::new();
    for (j, s) in p.scopes.iter().enumerate() {
        if !scope_ids.contains(s.id.as_str()) {
            return Err(invalid(
                key(&format!("scopes.{j}.id")),
                format!(
                    "unknown scope {:?}: use the id of a [[provider.scopes]] (known: {})",
                    s.id,
                    list(scope_ids)
                ),
            ));
        }
        if !seen.insert(s.id.as_str()) {
            return Err(invalid(
                key(&format!("scopes.{j}.id")),
                format!(
                    "scope {:?} is listed twice in this phase: list it once",
                    s.id
                ),
            ));
        }
        for (name, v) in s.limits() {
            if v == Some(0) {
                return Err(invalid(
                    key(&format!("scopes.{j}.{name}")),
                    "must be at least 1 (leave it out to keep the scope's own limit)",
                ));
            }
        }
        if s.limits().iter().all(|(_, v)| v.is_none()) {
            return Err(invalid(
                key(&format!("scopes.{j}")),
                "changes nothing: give at least one of rpm, tpm, rpd, tpd or concurrency",
            ));
        }
    }
    Ok(())
}
