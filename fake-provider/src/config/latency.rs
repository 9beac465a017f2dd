//! How long the provider takes to answer: a distribution plus a per-token term.

use super::duration::DurationMs;
use serde::{Deserialize, Serialize};

/// `latency = { median = "2.8s", p99 = "9s" }` (lognormal), `{ fixed = "100ms" }`, or
/// `{ min = "50ms", max = "300ms" }` (uniform), each with an optional `per_token = "2ms"` added
/// per output token. Exactly one shape must be given; [`LatencyConfig::shape`] says which.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct LatencyConfig {
    /// Every answer takes exactly this long (before the per-token term).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed: Option<DurationMs>,
    /// Uniform distribution: lower bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<DurationMs>,
    /// Uniform distribution: upper bound (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<DurationMs>,
    /// Lognormal distribution: the median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median: Option<DurationMs>,
    /// Lognormal distribution: the 99th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<DurationMs>,
    /// Added once per output (completion) token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_token: Option<DurationMs>,
}

/// The distribution a [`LatencyConfig`] describes, all values in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LatencyShape {
    /// Always this many ms.
    Fixed(u64),
    /// Uniform in `[min, max]` ms.
    Uniform {
        /// Shortest answer (ms).
        min: u64,
        /// Longest answer, inclusive (ms).
        max: u64,
    },
    /// Lognormal with this median and 99th percentile (ms).
    LogNormal {
        /// Half the answers are faster than this (ms).
        median: u64,
        /// 99 answers in 100 are faster than this (ms).
        p99: u64,
    },
}

impl LatencyConfig {
    /// A fixed latency of `ms` milliseconds.
    pub fn fixed_ms(ms: u64) -> Self {
        LatencyConfig {
            fixed: Some(DurationMs(ms)),
            ..LatencyConfig::default()
        }
    }

    /// The distribution, or a message saying which keys are missing or conflict. An empty
    /// table means zero latency.
    pub fn shape(&self) -> Result<LatencyShape, String> {
        let uniform = self.min.is_some() || self.max.is_some();
        let lognormal = self.median.is_some() || self.p99.is_some();
        let given = [self.fixed.is_some(), uniform, lognormal]
            .iter()
            .filter(|b| **b)
            .count();
        if given > 1 {
            return Err(
                "give exactly one of `fixed`, `min`+`max` (uniform) or `median`+`p99` (lognormal)"
                    .to_string(),
            );
        }
        if let Some(f) = self.fixed {
            return Ok(LatencyShape::Fixed(f.ms()));
        }
        if uniform {
            let (Some(min), Some(max)) = (self.min, self.max) else {
                return Err("a uniform latency needs both `min` and `max`".to_string());
            };
            if min > max {
                return Err(format!("`min` ({min}) is larger than `max` ({max})"));
            }
            return Ok(LatencyShape::Uniform {
                min: min.ms(),
                max: max.ms(),
            });
        }
        if lognormal {
            let (Some(median), Some(p99)) = (self.median, self.p99) else {
                return Err("a lognormal latency needs both `median` and `p99`".to_string());
            };
            if median.ms() == 0 {
                return Err("`median` must be above 0ms".to_string());
            }
            if median > p99 {
                return Err(format!("`median` ({median}) is larger than `p99` ({p99})"));
            }
            return Ok(LatencyShape::LogNormal {
                median: median.ms(),
                p99: p99.ms(),
            });
        }
        Ok(LatencyShape::Fixed(0))
    }

    /// The per-token term in ms (0 when absent).
    pub fn per_token_ms(&self) -> u64 {
        self.per_token.map_or(0, DurationMs::ms)
    }
}
