//! `[[workload]]`: one entry per tenant or task family. Each entry produces `count` logical
//! actions that arrive as a backlog, at a constant rate, as a Poisson process or in bursts.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use stampede_core::{Priority, Route};

use super::units::{DurationMs, Rate, RATE_HINT};

/// One workload entry.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Tenant that owns these actions (fair shares and per-tenant rows are by tenant).
    pub tenant: String,
    /// Bearer key the actions are sent with; must be one of `provider.credentials`.
    pub credential: String,
    /// Request class, a key of the client policy's classes (`llm`, `read`, `tool`, ...).
    #[serde(default = "default_class")]
    pub class: String,
    /// Endpoint family; by default from the class (`llm` chat, `read` items, others records).
    #[serde(default)]
    pub route: Option<Route>,
    /// Number of logical actions.
    pub count: u64,
    /// How the actions arrive.
    #[serde(default)]
    pub arrival: Arrival,
    /// When the first action may arrive (virtual time from run start).
    #[serde(default)]
    pub start: DurationMs,
    /// Estimated prompt tokens per action (LLM calls).
    #[serde(default = "default_prompt")]
    pub prompt_tokens: TokenCount,
    /// Maximum output tokens requested per action (LLM calls).
    #[serde(default = "default_output")]
    pub max_output_tokens: TokenCount,
    /// Deadline relative to submission; none means no deadline.
    #[serde(default)]
    pub deadline: Option<DurationMs>,
    /// How long each action already waited upstream before it reached the client: its
    /// deadline counts from then, so an action older than its deadline arrives already
    /// late (seed 001: admission rejects a deadline already past). Default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age: Option<DurationMs>,
    /// Admission priority.
    #[serde(default)]
    pub priority: Priority,
    /// Actions are spread round-robin over this many tasks (goals); default: one task per
    /// action. Per-task budgets and cancellation act on tasks.
    #[serde(default)]
    pub tasks: Option<u64>,
    /// Task name prefix; tasks are named `<task>-<n>`. Default `<tenant>-w<entry index>`.
    #[serde(default)]
    pub task: Option<String>,
    /// Cancel this workload's tasks at this time (virtual, from run start).
    #[serde(default)]
    pub cancel_at: Option<DurationMs>,
    /// Which task indices `cancel_at` cancels; default all of them.
    #[serde(default)]
    pub cancel_tasks: Option<Vec<u64>>,
    /// Safe reads of immutable resources that may be coalesced with identical reads.
    #[serde(default)]
    pub coalescable: bool,
    /// Reads pick their resource among this many items (`item-0`..), so reads repeat.
    #[serde(default)]
    pub resources: Option<u64>,
    /// Writes carry an external reference (`<task>-<n>`) the client can reconcile by.
    #[serde(default)]
    pub external_ref: bool,
    /// Ask for a streamed (SSE) answer.
    #[serde(default)]
    pub stream: bool,
    /// The model asked for (LLM calls): one of its provider's `models`. Absent: the
    /// provider's first model, or none when it lists none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Each arrival starts an agent run: a chain of LLM calls with a tool call between two
    /// of them, under one execution budget (seed 004). Absent: every arrival is one call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentSpec>,
    /// A failed request comes back slightly changed, as an agent under pressure improvises
    /// (seed 000): the same call with its fields reordered, with a changed filter, or for
    /// a nearby resource. Absent: a failure is final.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub improvise: Option<ImproviseSpec>,
}

/// `agent = { calls = 4, tool_time = "3s" }`: an agent run (seed 004). A call whose retries
/// are exhausted comes back to the run as a tool result and the run goes on; the run ends
/// over budget when a call cannot finish inside the run's execution budget.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// LLM calls per run, the first included.
    pub calls: u32,
    /// How long the tool call between two LLM calls takes (virtual time).
    #[serde(default = "default_tool_time")]
    pub tool_time: DurationMs,
    /// A tool call is given up after this long and its timeout comes back to the run as
    /// the tool's result (seed 004: 180 s).
    #[serde(default = "default_tool_timeout")]
    pub tool_timeout: DurationMs,
    /// The run's execution budget, retries and tool calls included (seed 004: 300 s): each
    /// call's deadline is the run's start plus this, or its own `deadline` if sooner.
    #[serde(default = "default_run_budget")]
    pub budget: DurationMs,
}

fn default_tool_time() -> DurationMs {
    DurationMs(2_000)
}
fn default_tool_timeout() -> DurationMs {
    DurationMs(180_000)
}
fn default_run_budget() -> DurationMs {
    DurationMs(300_000)
}

/// `improvise = { times = 3, after = "1s" }`: after a failure, the agent sends a changed
/// request, up to `times` per original request, cycling through the changes seed 000
/// names: fields reordered (the same normalized payload), a changed filter (a new
/// payload), a nearby resource (another id on the same endpoint template). An agent told
/// the path is open (the breaker's constraint) stops improvising.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ImproviseSpec {
    /// Changed requests per original request, at most.
    pub times: u32,
    /// How long the agent takes to send the changed request after the failure.
    #[serde(default = "default_improvise_after")]
    pub after: DurationMs,
}

fn default_improvise_after() -> DurationMs {
    DurationMs(1_000)
}

fn default_class() -> String {
    "llm".to_string()
}
fn default_prompt() -> TokenCount {
    TokenCount::Fixed(500)
}
fn default_output() -> TokenCount {
    TokenCount::Fixed(300)
}

impl WorkloadSpec {
    /// The route actions of this entry call.
    pub fn effective_route(&self) -> Route {
        self.route.unwrap_or(match self.class.as_str() {
            "llm" => Route::ChatCompletion,
            "read" => Route::GetItem,
            _ => Route::CreateRecord,
        })
    }
}

/// How a workload's actions arrive.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub enum Arrival {
    /// All at `start`: a backlog.
    #[default]
    Backlog,
    /// Evenly spaced at this rate.
    Rate(Rate),
    /// A Poisson process with this mean rate.
    Poisson(Rate),
    /// `size` actions at once every `every`.
    Bursts {
        /// Actions in each burst.
        size: u64,
        /// Time from one burst to the next (ms); the first is at `start`.
        every: DurationMs,
    },
}

impl Arrival {
    /// When the `n`-th action (from 0) of a workload starting at `start_ms` arrives, ms
    /// since run start: what the arrival stream plays for every pattern but Poisson, whose
    /// gaps are drawn, and for which this is the mean. Scenario loading reads it to tell
    /// whether a workload's arrivals fit in the run.
    pub fn planned_at(&self, start_ms: u64, n: u64) -> f64 {
        match self {
            Arrival::Backlog => start_ms as f64,
            Arrival::Rate(rate) | Arrival::Poisson(rate) => {
                start_ms as f64 + n as f64 * 1_000.0 / rate.per_second
            }
            // In whole ms, as a burst's actions all arrive at one instant.
            Arrival::Bursts { size, every } => {
                start_ms.saturating_add((n / size).saturating_mul(every.ms())) as f64
            }
        }
    }
}

/// What a valid arrival looks like, for error messages.
pub const ARRIVAL_HINT: &str =
    "write \"backlog\", { rate = \"10/s\" }, { poisson = \"5/s\" } or { bursts = { size = 100, every = \"30s\" } }";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BurstsSpec {
    size: u64,
    every: DurationMs,
}

impl<'de> Deserialize<'de> for Arrival {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Arrival;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "an arrival pattern: {ARRIVAL_HINT}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Arrival, E> {
                match v {
                    "backlog" => Ok(Arrival::Backlog),
                    other => Err(E::custom(format!(
                        "unknown arrival {other:?}: {ARRIVAL_HINT}"
                    ))),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Arrival, A::Error> {
                let key: String = map
                    .next_key()?
                    .ok_or_else(|| de::Error::custom(format!("empty arrival: {ARRIVAL_HINT}")))?;
                let arrival = match key.as_str() {
                    "rate" => Arrival::Rate(map.next_value()?),
                    "poisson" => Arrival::Poisson(map.next_value()?),
                    "bursts" => {
                        let b: BurstsSpec = map.next_value()?;
                        if b.size == 0 || b.every.ms() == 0 {
                            return Err(de::Error::custom("bursts need size > 0 and every > 0"));
                        }
                        Arrival::Bursts {
                            size: b.size,
                            every: b.every,
                        }
                    }
                    other => {
                        return Err(de::Error::custom(format!(
                            "unknown arrival {other:?}: {ARRIVAL_HINT}"
                        )))
                    }
                };
                if let Some(extra) = map.next_key::<String>()? {
                    return Err(de::Error::custom(format!(
                        "arrival has two patterns ({key} and {extra}); pick one: {ARRIVAL_HINT} (a rate: {RATE_HINT})"
                    )));
                }
                Ok(arrival)
            }
        }
        d.deserialize_any(V)
    }
}

/// A token count: fixed, or drawn per action from a distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum TokenCount {
    /// Always this many tokens.
    Fixed(u32),
    /// Uniform between `lo` and `hi` inclusive.
    Uniform {
        /// Least count (tokens).
        lo: u32,
        /// Greatest count, inclusive (tokens).
        hi: u32,
    },
    /// Lognormal with this median and 99th percentile (tokens), clamped to `1..=4 * p99`.
    LogNormal {
        /// Median count (tokens).
        median: u32,
        /// 99th-percentile count (tokens); draws are clamped to at most 4 × this.
        p99: u32,
    },
}

/// What a valid token count looks like, for error messages.
pub const TOKENS_HINT: &str =
    "write a number (500), { uniform = [100, 900] } or { lognormal = { median = 500, p99 = 4000 } }";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LogNormalSpec {
    median: u32,
    p99: u32,
}

impl<'de> Deserialize<'de> for TokenCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TokenCount;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a token count: {TOKENS_HINT}")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<TokenCount, E> {
                u32::try_from(v).map(TokenCount::Fixed).map_err(|_| {
                    E::custom(format!(
                        "token count {v}: give a whole number from 0 to 4294967295"
                    ))
                })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<TokenCount, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(-1))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TokenCount, A::Error> {
                let key: String = map.next_key()?.ok_or_else(|| {
                    de::Error::custom(format!("empty token count: {TOKENS_HINT}"))
                })?;
                let count = match key.as_str() {
                    "uniform" => {
                        let [lo, hi]: [u32; 2] = map.next_value()?;
                        if lo > hi {
                            return Err(de::Error::custom(format!("uniform = [{lo}, {hi}]: the first bound must not exceed the second")));
                        }
                        TokenCount::Uniform { lo, hi }
                    }
                    "lognormal" => {
                        let s: LogNormalSpec = map.next_value()?;
                        if s.median == 0 || s.p99 < s.median {
                            return Err(de::Error::custom("lognormal needs 0 < median <= p99"));
                        }
                        TokenCount::LogNormal {
                            median: s.median,
                            p99: s.p99,
                        }
                    }
                    other => {
                        return Err(de::Error::custom(format!(
                            "unknown distribution {other:?}: {TOKENS_HINT}"
                        )))
                    }
                };
                if map.next_key::<String>()?.is_some() {
                    return Err(de::Error::custom(format!(
                        "a token count has one distribution: {TOKENS_HINT}"
                    )));
                }
                Ok(count)
            }
        }
        d.deserialize_any(V)
    }
}

impl TokenCount {
    /// The largest value this count can produce (tokens), for sizing checks.
    pub fn upper_bound(self) -> u32 {
        match self {
            TokenCount::Fixed(n) => n,
            TokenCount::Uniform { hi, .. } => hi,
            TokenCount::LogNormal { p99, .. } => p99.saturating_mul(4),
        }
    }
}
