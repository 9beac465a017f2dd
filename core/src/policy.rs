//! The policy as data: every knob of the scheduler, serde-deserializable so the scenario
//! format can embed it (`[client.policy]`). Durations are humantime strings ("500ms", "8s").

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

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

/// Backoff parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Backoff {
    #[serde(with = "humantime_serde_compat")]
    pub base: Duration,
    #[serde(with = "humantime_serde_compat")]
    pub cap: Duration,
    pub jitter: Jitter,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { base: Duration::from_millis(500), cap: Duration::from_secs(8), jitter: Jitter::Full }
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
}

/// Shared helper so policy durations read and write as humantime strings.
pub mod humantime_serde_compat {
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

/// The full policy. See `Policy::default()` for the stampede defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// Concurrency slots for the whole client (its workers).
    pub workers: u32,
    /// Request classes by name.
    pub classes: BTreeMap<String, ClassPolicy>,
    pub backoff: Backoff,
}

impl Default for Policy {
    fn default() -> Self {
        use FailureGroup::*;
        let secs = Duration::from_secs;
        let class = |max_attempts, max_wait, retry_on: &[FailureGroup], timeout, reconcile| ClassPolicy {
            max_attempts,
            max_wait,
            retry_on: retry_on.to_vec(),
            timeout,
            reconcile,
        };
        let mut classes = BTreeMap::new();
        classes.insert("llm".into(), class(3, secs(60), &[NeverArrived, MayHaveExecuted], secs(60), false));
        classes.insert("read".into(), class(4, secs(30), &[NeverArrived, MayHaveExecuted], secs(10), false));
        classes.insert("idempotent_write".into(), class(4, secs(30), &[NeverArrived, MayHaveExecuted], secs(10), false));
        classes.insert("tool".into(), class(3, secs(30), &[NeverArrived], secs(10), true));
        classes.insert("uncertain_write".into(), class(1, secs(30), &[NeverArrived], secs(10), true));
        Self { workers: 96, classes, backoff: Backoff::default() }
    }
}
