//! The `[provider]` part of a scenario: scopes, credentials, latency and the fault schedule.
//!
//! The scenario format embeds [`ProviderConfig`] as its `[provider]` table. Every duration is a
//! humantime string (see [`DurationMs`]); [`ProviderConfig::validate`] names the offending key
//! by its dotted path (`provider.scopes.1.rpm`) so `--set` users find it.

mod duration;
mod faults;
mod latency;
mod models;
mod phases;

pub use duration::DurationMs;
pub use faults::{ConnectionFault, FaultRule, RouteName, SequenceKey, SequenceStep};
pub use latency::{LatencyConfig, LatencyShape};
pub use models::{ModelConfig, Price};
pub use phases::{Phase, ScopeOverride};

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// How the fake provider behaves: latencies, limits, faults, Retry-After format,
/// idempotency and time scale (a scenario's `[provider]` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderConfig {
    /// Latency of chat completions (default `{ fixed = "50ms" }`).
    pub latency: LatencyConfig,
    /// Latency of record writes and reads and item reads (default `{ fixed = "20ms" }`).
    pub tool_latency: LatencyConfig,
    /// Time to answer an attempt refused at the edge (401, 429, injected statuses, 400), ms.
    pub reject_latency: DurationMs,
    /// How Retry-After is written: delta-seconds, HTTP-date, or both (alternating by attempt).
    pub retry_after_format: RetryAfterFormat,
    /// Whether 503 answers carry Retry-After (a fault's own `retry_after` always does).
    pub retry_after_on_503: bool,
    /// Whether `POST /v1/records` honours `Idempotency-Key` (false: a blind re-send duplicates).
    pub idempotency: bool,
    /// Model milliseconds per real millisecond, for the live harness: a scale of 60 makes a
    /// minute window last one real second, and emitted Retry-After values shrink to match.
    /// The model itself works in model time; the server converts.
    pub time_scale: f64,
    /// Context window in tokens: `prompt_tokens + max_tokens` above it gets 400
    /// `context_length_exceeded`. Absent: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    /// How long the provider remembers a logical request after its last attempt: an attempt
    /// with the same credential, route and body within this window is a retry of it (see
    /// `model::identity`). Default 15 minutes.
    pub identity_window: DurationMs,
    /// How long a committed record is kept (model time): after it, the record, its look-up
    /// indexes and its idempotency key are forgotten (a look-up answers "not found", a write
    /// with its key commits anew), as Stripe forgets idempotency keys after 24 hours. At
    /// most `model::DEFAULT_MAX_RECORDS` records are kept in any case. Default 24 hours.
    pub record_retention: DurationMs,
    /// What the provider limits on.
    pub scopes: Vec<ScopeLimits>,
    /// Bearer keys and their scopes.
    pub credentials: Vec<CredentialConfig>,
    /// The fault schedule, tried in order.
    pub faults: Vec<FaultRule>,
    /// The models served (`[[provider.models]]`). Empty (the default): any model name is
    /// accepted and the provider behaves as one unnamed model.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelConfig>,
    /// Whether a chat completion (or `/v1/messages`) carrying an `Idempotency-Key` its scope
    /// already completed within `record_retention` is answered with that completion again
    /// (no new commit, nothing billed) instead of running anew (default false: a re-send
    /// with the same key is billed again, as most LLM APIs do).
    #[serde(skip_serializing_if = "is_false")]
    pub completion_idempotency: bool,
    /// Spans of model time with their own completion latency or scope limits
    /// (`[[provider.phases]]`: a latency spike, a quota cut), applied in listed order, a
    /// later active phase winning for the same field. Empty (the default): the provider
    /// behaves the same for the whole run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// Whether the HTTP edge takes a body field the real API does not know (default false:
    /// refused with the API's 400, `Unrecognized request argument supplied` or `Extra
    /// inputs are not permitted`, as a misspelt or unsupported parameter is in production).
    /// The fields known are those of the SDKs CI pins (`examples/clients/requirements.txt`)
    /// and older ones the APIs still take; set this for a client that sends a parameter
    /// newer than those.
    #[serde(skip_serializing_if = "is_false")]
    pub accept_unknown_fields: bool,
}

impl Default for ProviderConfig {
    fn default() -> Self {
        ProviderConfig {
            latency: LatencyConfig::fixed_ms(50),
            tool_latency: LatencyConfig::fixed_ms(20),
            reject_latency: DurationMs(5),
            retry_after_format: RetryAfterFormat::Seconds,
            retry_after_on_503: true,
            idempotency: true,
            time_scale: 1.0,
            context_window: None,
            identity_window: DurationMs(crate::model::DEFAULT_IDENTITY_WINDOW_MS),
            record_retention: DurationMs(crate::model::DEFAULT_RECORD_RETENTION_MS),
            scopes: Vec::new(),
            credentials: Vec::new(),
            faults: Vec::new(),
            models: Vec::new(),
            completion_idempotency: false,
            phases: Vec::new(),
            accept_unknown_fields: false,
        }
    }
}

/// How the `Retry-After` header is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RetryAfterFormat {
    /// `Retry-After: 12` (whole seconds, rounded up).
    #[default]
    Seconds,
    /// `Retry-After: Sun, 06 Nov 1994 08:49:37 GMT` (from the wall epoch, rounded up).
    HttpDate,
    /// Seconds on even attempt numbers (seq), HTTP-date on odd ones.
    Both,
}

/// Limits of one scope (what the provider limits on: account, project, key, endpoint family).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeLimits {
    /// The scope's name, e.g. `account:acme`.
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
    /// Whether attempts this scope refuses with a 429 rate limit still use up one request of
    /// the current minute window (default false: only admitted attempts count).
    ///
    /// OpenAI documents that "unsuccessful requests contribute to your per-minute limit, so
    /// continuously resending a request won't work": a client that retries on a fixed sleep
    /// burns the quota with its own refusals and goodput collapses. When true, a refusal for
    /// requests or tokens per minute, or for concurrency, adds one request (not its tokens:
    /// a refused request is never run, so the token estimate is not charged) to the minute
    /// window. Daily-quota refusals (`insufficient_quota`) and injected faults never count.
    #[serde(default, skip_serializing_if = "is_false")]
    pub count_rejected: bool,
    /// Only requests for this model (a name in `provider.models`) count against the scope,
    /// as providers limit each model separately. Absent: every request counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl ScopeLimits {
    /// A scope named `id` that limits nothing: no rates, no quotas, no concurrency cap, for
    /// every model.
    pub fn unlimited(id: &str) -> Self {
        ScopeLimits {
            id: id.into(),
            rpm: None,
            tpm: None,
            rpd: None,
            tpd: None,
            concurrency: None,
            count_rejected: false,
            model: None,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A bearer key and the scope it is limited on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialConfig {
    /// The bearer key (`Authorization: Bearer KEY`).
    pub key: String,
    /// The id of the scope it counts against (and is journaled under).
    pub scope: String,
    /// Further scope ids the key also counts against (an account above the key, a model
    /// family), checked in this order after `scope`; one with a `model` counts only that
    /// model's requests. Default none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

/// A provider config that cannot run, naming the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A key has a value the provider cannot use.
    #[error("{key}: {message}")]
    Invalid {
        /// Dotted path, e.g. `provider.scopes.1.rpm`.
        key: String,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// The TOML or JSON text could not be read.
    #[error("{source_name}: {message}")]
    Parse {
        /// File name or `request body`.
        source_name: String,
        /// The parser's message (with line and column when known).
        message: String,
    },
}

/// Largest `provider.time_scale`: 10,000 model ms per real ms already plays a day in under
/// nine real seconds; beyond it the server's timers round every wait to zero.
pub const MAX_TIME_SCALE: f64 = 10_000.0;

/// Smallest `provider.time_scale`: 0.001 model ms per real ms already plays a minute in
/// about 17 real hours; below it a scenario's duration is no cap on a real run at all.
pub const MIN_TIME_SCALE: f64 = 0.001;

fn invalid(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        // A bad value it quotes may be a key put in the wrong place: shown masked.
        message: stampede_secret::mask_keys_in(&message.into(), &[]),
    }
}

/// Statuses a fault may inject (2xx would not be a fault; 1xx/3xx make no sense here).
fn injectable_status(status: u16) -> bool {
    (400..=599).contains(&status)
}

impl ProviderConfig {
    /// The model served to a call that names none: the first listed (`None` when none is
    /// listed, and any name is served). A driver that must name a model on the wire names
    /// this one, so its calls are served as a virtual run's are.
    pub fn default_model(&self) -> Option<&str> {
        self.models.first().map(|m| m.name.as_str())
    }

    /// Checks everything the model relies on; the error names the key by dotted path.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Err(m) = self.latency.shape() {
            return Err(invalid("provider.latency", m));
        }
        if let Err(m) = self.tool_latency.shape() {
            return Err(invalid("provider.tool_latency", m));
        }
        if !(self.time_scale.is_finite()
            && self.time_scale >= MIN_TIME_SCALE
            && self.time_scale <= MAX_TIME_SCALE)
        {
            return Err(invalid(
                "provider.time_scale",
                format!(
                    // `{:?}` writes 1e308 as that, not as 309 digits.
                    "must be at least {MIN_TIME_SCALE} and at most {MAX_TIME_SCALE} (got {:?})",
                    self.time_scale
                ),
            ));
        }
        if self.identity_window.ms() == 0 {
            return Err(invalid(
                "provider.identity_window",
                "must be longer than 0s (it is how long a request is remembered between its attempts)",
            ));
        }
        if self.record_retention.ms() == 0 {
            return Err(invalid(
                "provider.record_retention",
                "must be longer than 0s (it is how long a committed record and its idempotency key are kept)",
            ));
        }
        if self.context_window == Some(0) {
            return Err(invalid("provider.context_window", "must be above 0 tokens"));
        }
        let model_names = self.validate_models()?;
        let mut scope_ids = BTreeSet::new();
        for (i, s) in self.scopes.iter().enumerate() {
            if s.id.trim().is_empty() {
                return Err(invalid(
                    format!("provider.scopes.{i}.id"),
                    "must not be empty",
                ));
            }
            if !scope_ids.insert(s.id.as_str()) {
                return Err(invalid(
                    format!("provider.scopes.{i}.id"),
                    format!("scope {:?} is defined twice", s.id),
                ));
            }
            // Scope ids are written into a run's attempts.csv, where a cell that starts so is
            // a formula to a spreadsheet (`=HYPERLINK(...)`).
            if let Some(c) = s.id.chars().next().filter(|c| "=+-@".contains(*c)) {
                return Err(invalid(
                    format!("provider.scopes.{i}.id"),
                    format!(
                        "scope {:?} starts with {c:?}, which a spreadsheet reads as a formula in \
                         the attempts.csv scope ids are written into; start it with a letter \
                         or a digit",
                        s.id
                    ),
                ));
            }
            for (name, v) in [
                ("rpm", s.rpm),
                ("tpm", s.tpm),
                ("rpd", s.rpd),
                ("tpd", s.tpd),
                ("concurrency", s.concurrency),
            ] {
                if v == Some(0) {
                    return Err(invalid(
                        format!("provider.scopes.{i}.{name}"),
                        "must be at least 1 (leave it out for no limit)",
                    ));
                }
            }
            if let Some(m) = &s.model {
                if !model_names.contains(m.as_str()) {
                    return Err(invalid(
                        format!("provider.scopes.{i}.model"),
                        format!(
                            "unknown model {m:?}: add a [[provider.models]] with that name (known: {})",
                            list(&model_names)
                        ),
                    ));
                }
            }
        }
        let mut keys = BTreeSet::new();
        for (i, c) in self.credentials.iter().enumerate() {
            if c.key.is_empty() || c.key.chars().any(char::is_whitespace) {
                return Err(invalid(
                    format!("provider.credentials.{i}.key"),
                    "must be a non-empty bearer key without spaces",
                ));
            }
            if !keys.insert(c.key.as_str()) {
                return Err(invalid(
                    format!("provider.credentials.{i}.key"),
                    "this key is listed twice",
                ));
            }
            if !scope_ids.contains(c.scope.as_str()) {
                return Err(invalid(
                    format!("provider.credentials.{i}.scope"),
                    format!(
                        "unknown scope {:?}: add a [[provider.scopes]] with that id (known: {})",
                        c.scope,
                        list(&scope_ids)
                    ),
                ));
            }
            for (j, also) in c.scopes.iter().enumerate() {
                let key = format!("provider.credentials.{i}.scopes.{j}");
                if !scope_ids.contains(also.as_str()) {
                    return Err(invalid(
                        key,
                        format!(
                            "unknown scope {also:?}: add a [[provider.scopes]] with that id (known: {})",
                            list(&scope_ids)
                        ),
                    ));
                }
                // Counting a request twice against one scope would halve its limits.
                if *also == c.scope || c.scopes[..j].contains(also) {
                    return Err(invalid(
                        key,
                        format!("scope {also:?} is already counted for this key: list it once"),
                    ));
                }
            }
        }
        for (i, f) in self.faults.iter().enumerate() {
            validate_fault(i, f, &scope_ids, &keys)?;
        }
        for (i, p) in self.phases.iter().enumerate() {
            phases::validate_phase(i, p, &scope_ids)?;
        }
        Ok(())
    }

    /// Checks `provider.models` and returns its names.
    fn validate_models(&self) -> Result<BTreeSet<&str>, ConfigError> {
        let mut names = BTreeSet::new();
        for (i, m) in self.models.iter().enumerate() {
            let key = |k: &str| format!("provider.models.{i}.{k}");
            if m.name.trim().is_empty() {
                return Err(invalid(
                    key("name"),
                    "must not be empty (write the name requests send as \"model\")",
                ));
            }
            if !names.insert(m.name.as_str()) {
                return Err(invalid(
                    key("name"),
                    format!("model {:?} is listed twice", m.name),
                ));
            }
            if m.context_window == Some(0) {
                return Err(invalid(
                    key("context_window"),
                    "must be above 0 tokens (leave it out for the provider's window)",
                ));
            }
            if m.max_output_tokens == Some(0) {
                return Err(invalid(
                    key("max_output_tokens"),
                    "must be above 0 tokens (leave it out to take any max_tokens)",
                ));
            }
            if let Some(latency) = &m.latency {
                if let Err(e) = latency.shape() {
                    return Err(invalid(key("latency"), e));
                }
            }
            if let Some(p) = &m.price {
                for (name, v) in [
                    ("prompt_per_mtok", p.prompt_per_mtok),
                    ("completion_per_mtok", p.completion_per_mtok),
                ] {
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(invalid(
                            format!("provider.models.{i}.price.{name}"),
                            format!("must be a price of 0 or more US dollars per million tokens (got {v})"),
                        ));
                    }
                }
            }
        }
        Ok(names)
    }

    /// Reads a `[provider]` table from a whole scenario TOML (other top-level tables are
    /// ignored) or a bare provider table when there is no `provider` key.
    /// A scenario with named `[providers.<name>]` tables needs
    /// [`ProviderConfig::from_scenario_toml_named`].
    pub fn from_scenario_toml(text: &str, source_name: &str) -> Result<Self, ConfigError> {
        Self::from_scenario_toml_named(text, source_name, None)
    }

    /// [`ProviderConfig::from_scenario_toml`], or the table `[providers.<name>]` of a
    /// scenario that names several providers. `name` may be left out when the scenario
    /// names exactly one; the error lists the names otherwise.
    pub fn from_scenario_toml_named(
        text: &str,
        source_name: &str,
        name: Option<&str>,
    ) -> Result<Self, ConfigError> {
        // The line and what is wrong, not toml's own rendering, which quotes the source
        // line: a line that holds a key put it whole on stderr and in the control plane's
        // 400 answer.
        let parse_err = |e: toml::de::Error| {
            let line = e
                .span()
                .and_then(|s| text.get(..s.start))
                .map(|before| before.matches('\n').count() + 1);
            ConfigError::Parse {
                source_name: source_name.to_string(),
                message: stampede_secret::mask_keys_in(
                    &match line {
                        Some(line) => format!("line {line}: {}", e.message().trim_end()),
                        None => e.message().trim_end().to_string(),
                    },
                    &[],
                ),
            }
        };
        let doc: toml::Table = toml::from_str(text).map_err(parse_err)?;
        let named = doc.get("providers").and_then(toml::Value::as_table);
        let (table, what) = match (named, name) {
            (Some(all), Some(n)) => match all.get(n) {
                Some(p) => (Some(p), format!("[providers.{n}]")),
                None => {
                    return Err(invalid(
                        "providers",
                        format!(
                            "no [providers.{n}] in this scenario; it names: {}",
                            all.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    ))
                }
            },
            (Some(all), None) if all.len() == 1 => {
                let (n, p) = all.iter().next().expect("one entry");
                (Some(p), format!("[providers.{n}]"))
            }
            (Some(all), None) => {
                return Err(invalid(
                    "providers",
                    format!(
                        "this scenario names several providers ({}): say which one to serve \
                         (`stampede serve --scenario FILE --provider NAME`)",
                        all.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ))
            }
            (None, Some(n)) => {
                return Err(invalid(
                    "providers",
                    format!("no [providers.{n}]: this scenario has one [provider] table"),
                ))
            }
            (None, None) => (doc.get("provider"), "[provider]".to_string()),
        };
        let config: ProviderConfig = match table {
            Some(p) => p
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| ConfigError::Parse {
                    source_name: source_name.to_string(),
                    message: stampede_secret::mask_keys_in(&format!("in {what}: {e}"), &[]),
                })?,
            None => toml::from_str(text).map_err(parse_err)?,
        };
        config.validate()?;
        Ok(config)
    }
}

fn list(ids: &BTreeSet<&str>) -> String {
    if ids.is_empty() {
        "none".to_string()
    } else {
        ids.iter().copied().collect::<Vec<_>>().join(", ")
    }
}

fn validate_fault(
    i: usize,
    f: &FaultRule,
    scope_ids: &BTreeSet<&str>,
    keys: &BTreeSet<&str>,
) -> Result<(), ConfigError> {
    let key = |k: &str| format!("provider.faults.{i}.{k}");
    let kinds = [
        f.status.is_some(),
        f.fault.is_some(),
        !f.sequence.is_empty(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if kinds != 1 {
        return Err(invalid(
            format!("provider.faults.{i}"),
            "give exactly one of `status = 503`, `fault = \"drop_after_commit\"` or `sequence = [...]`",
        ));
    }
    if let Some(s) = f.status {
        if !injectable_status(s) {
            return Err(invalid(
                key("status"),
                format!("{s} is not an error status (use 400..=599)"),
            ));
        }
    }
    if let (Some(a), Some(b)) = (f.from, f.until) {
        if a >= b {
            return Err(invalid(
                key("until"),
                format!("`until` ({b}) must be after `from` ({a})"),
            ));
        }
    }
    if f.nth == Some(0) {
        return Err(invalid(
            key("nth"),
            "counts from 1 (the first matching attempt)",
        ));
    }
    if f.every == Some(0) {
        return Err(invalid(key("every"), "must be at least 1"));
    }
    if let Some(p) = f.probability {
        if !(0.0..=1.0).contains(&p) {
            return Err(invalid(
                key("probability"),
                format!("must be a probability from 0 to 1 (got {p})"),
            ));
        }
    }
    if let Some(c) = &f.credential {
        if !keys.contains(c.as_str()) {
            return Err(invalid(
                key("credential"),
                format!(
                    "unknown credential {}: use one of provider.credentials (known: {}; shown \
                     masked)",
                    stampede_secret::mask(c),
                    stampede_secret::mask_all(keys)
                ),
            ));
        }
    }
    if let Some(s) = &f.scope {
        if !scope_ids.contains(s.as_str()) {
            return Err(invalid(
                key("scope"),
                format!("unknown scope {s:?} (known: {})", list(scope_ids)),
            ));
        }
    }
    for (j, step) in f.sequence.iter().enumerate() {
        if step.status.is_some() && step.fault.is_some() {
            return Err(invalid(
                format!("provider.faults.{i}.sequence.{j}"),
                "give `status` or `fault`, not both",
            ));
        }
        if let Some(s) = step.status {
            if s != 200 && !injectable_status(s) {
                return Err(invalid(
                    format!("provider.faults.{i}.sequence.{j}.status"),
                    format!("{s}: use 200 (pass) or an error status 400..=599"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
name = "x"
[provider]
latency = { median = "2.8s", p99 = "9s", per_token = "2ms" }
retry_after_format = "both"
[[provider.scopes]]
id = "account:acme"
rpm = 600
tpm = 300_000
concurrency = 50
[[provider.credentials]]
key = "sk-acme-shared"
scope = "account:acme"
[[provider.faults]]
status = 503
from = "2m"
until = "3m"
probability = 0.3
[[provider.faults]]
route = "create_record"
sequence = [{ status = 429, retry_after = "10s" }, {}]
[workload]
ignored = true
"#;

    /// A time scale so small that a scenario's duration is no cap on a real run (1e-300
    /// made the client harness's cap overflow) is refused, as are 0, NaN and the too fast.
    #[test]
    fn a_time_scale_outside_its_bounds_is_refused_by_name() {
        let mut c = ProviderConfig::default();
        for bad in [1e-300, 0.000_999, 0.0, -1.0, f64::NAN, 10_001.0] {
            c.time_scale = bad;
            let e = c.validate().unwrap_err().to_string();
            assert!(
                e.contains("provider.time_scale") && e.contains("at least 0.001"),
                "{bad}: {e}"
            );
        }
        for good in [MIN_TIME_SCALE, 1.0, MAX_TIME_SCALE] {
            c.time_scale = good;
            assert!(c.validate().is_ok(), "{good}");
        }
    }

    #[test]
    fn a_named_provider_is_picked_by_name_and_several_need_one() {
        let text = "[providers.a]\n[[providers.a.scopes]]\nid = \"a\"\n[[providers.a.credentials]]\nkey = \"sk-a\"\nscope = \"a\"\n[providers.b]\n[[providers.b.scopes]]\nid = \"b\"\n[[providers.b.credentials]]\nkey = \"sk-b\"\nscope = \"b\"\n";
        let b = ProviderConfig::from_scenario_toml_named(text, "x.toml", Some("b")).unwrap();
        assert_eq!(b.credentials[0].key, "sk-b");
        let e = ProviderConfig::from_scenario_toml(text, "x.toml").unwrap_err();
        assert!(
            e.to_string().contains("a, b") && e.to_string().contains("--provider"),
            "{e}"
        );
        let e = ProviderConfig::from_scenario_toml_named(text, "x.toml", Some("c")).unwrap_err();
        assert!(e.to_string().contains("no [providers.c]"), "{e}");
    }

    #[test]
    fn reads_the_provider_table_of_a_scenario() {
        let c = ProviderConfig::from_scenario_toml(SAMPLE, "x.toml").unwrap();
        assert_eq!(c.scopes[0].rpm, Some(600));
        assert_eq!(c.retry_after_format, RetryAfterFormat::Both);
        assert_eq!(
            c.latency.shape().unwrap(),
            LatencyShape::LogNormal {
                median: 2_800,
                p99: 9_000
            }
        );
        assert_eq!(c.faults[0].from, Some(DurationMs(120_000)));
        assert_eq!(c.faults[1].sequence.len(), 2);
        // Round trip through JSON keeps everything.
        let json = serde_json::to_string(&c).unwrap();
        let back: ProviderConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn errors_name_the_key() {
        let mut c = ProviderConfig::from_scenario_toml(SAMPLE, "x.toml").unwrap();
        c.scopes.push(ScopeLimits {
            rpm: Some(0),
            ..ScopeLimits::unlimited("b")
        });
        let e = c.validate().unwrap_err().to_string();
        assert!(e.starts_with("provider.scopes.1.rpm:"), "{e}");

        let mut c = ProviderConfig::from_scenario_toml(SAMPLE, "x.toml").unwrap();
        c.credentials[0].scope = "nope".into();
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.starts_with("provider.credentials.0.scope:") && e.contains("account:acme"),
            "{e}"
        );

        let mut c = ProviderConfig::default();
        c.faults.push(FaultRule::default());
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("provider.faults.0:"));

        let bad = "[provider]\nlatency = { fixed = \"1s\", median = \"1s\" }\n";
        let e = ProviderConfig::from_scenario_toml(bad, "b.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("provider.latency:"), "{e}");
    }

    #[test]
    fn count_rejected_defaults_off_and_a_wrong_type_names_the_key() {
        let c = ProviderConfig::from_scenario_toml(SAMPLE, "x.toml").unwrap();
        assert!(!c.scopes[0].count_rejected);
        let on = SAMPLE.replace(
            "concurrency = 50",
            "concurrency = 50\ncount_rejected = true",
        );
        let c = ProviderConfig::from_scenario_toml(&on, "x.toml").unwrap();
        assert!(c.scopes[0].count_rejected);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<ProviderConfig>(&json).unwrap(), c);
        let bad = SAMPLE.replace(
            "concurrency = 50",
            "concurrency = 50\ncount_rejected = \"yes\"",
        );
        let e = ProviderConfig::from_scenario_toml(&bad, "x.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("count_rejected"), "{e}");
    }

    const MODELS: &str = r#"
[provider]
completion_idempotency = true
[[provider.models]]
name = "gpt-4o-mini"
context_window = 128_000
latency = { median = "800ms", p99 = "3s" }
price = { prompt_per_mtok = 0.15, completion_per_mtok = 0.6 }
[[provider.models]]
name = "gpt-4o"
[[provider.scopes]]
id = "key"
[[provider.scopes]]
id = "account"
rpm = 10
[[provider.scopes]]
id = "account:gpt-4o"
model = "gpt-4o"
tpm = 30_000
[[provider.credentials]]
key = "sk-one"
scope = "key"
scopes = ["account", "account:gpt-4o"]
"#;

    fn models_config() -> ProviderConfig {
        ProviderConfig::from_scenario_toml(MODELS, "m.toml").unwrap()
    }

    fn error_of(c: &ProviderConfig) -> String {
        c.validate().unwrap_err().to_string()
    }

    #[test]
    fn models_and_further_scopes_read_and_round_trip() {
        let c = models_config();
        assert_eq!(c.models.len(), 2);
        assert_eq!(c.models[0].price.unwrap().prompt_per_mtok, 0.15);
        assert_eq!(c.scopes[2].model.as_deref(), Some("gpt-4o"));
        assert_eq!(c.credentials[0].scopes, ["account", "account:gpt-4o"]);
        assert!(c.completion_idempotency);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<ProviderConfig>(&json).unwrap(), c);
        // Without the new keys nothing new is written.
        let plain =
            serde_json::to_string(&ProviderConfig::from_scenario_toml(SAMPLE, "x").unwrap())
                .unwrap();
        for key in [
            "models",
            "completion_idempotency",
            "\"model\"",
            "\"scopes\":[]",
        ] {
            assert!(!plain.contains(key), "{key} in {plain}");
        }
    }

    #[test]
    fn model_and_scope_errors_name_the_key() {
        let mut c = models_config();
        c.models[1].name = "gpt-4o-mini".into();
        let e = error_of(&c);
        assert!(
            e.starts_with("provider.models.1.name:") && e.contains("twice"),
            "{e}"
        );

        let mut c = models_config();
        c.models[0].name = " ".into();
        assert!(error_of(&c).starts_with("provider.models.0.name:"));

        let mut c = models_config();
        c.models[0].context_window = Some(0);
        assert!(error_of(&c).starts_with("provider.models.0.context_window:"));

        let mut c = models_config();
        c.models[0].price = Some(Price {
            prompt_per_mtok: -1.0,
            completion_per_mtok: 0.0,
        });
        assert!(error_of(&c).starts_with("provider.models.0.price.prompt_per_mtok:"));
        c.models[0].price = Some(Price {
            prompt_per_mtok: 1.0,
            completion_per_mtok: f64::NAN,
        });
        assert!(error_of(&c).starts_with("provider.models.0.price.completion_per_mtok:"));

        let mut c = models_config();
        c.scopes[0].model = Some("claude".into());
        let e = error_of(&c);
        assert!(
            e.starts_with("provider.scopes.0.model:") && e.contains("gpt-4o-mini"),
            "{e}"
        );

        let mut c = models_config();
        c.credentials[0].scopes.push("acount".into());
        let e = error_of(&c);
        assert!(
            e.starts_with("provider.credentials.0.scopes.2:") && e.contains("account"),
            "{e}"
        );

        let mut c = models_config();
        c.credentials[0].scopes.push("key".into());
        assert!(error_of(&c).starts_with("provider.credentials.0.scopes.2:"));

        let bad = MODELS.replace("name = \"gpt-4o\"", "name = \"gpt-4o\"\nprice = 3");
        let e = ProviderConfig::from_scenario_toml(&bad, "m.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("price"), "{e}");
    }

    const PHASES: &str = r#"
[provider]
latency = { fixed = "20s" }
[[provider.scopes]]
id = "account"
rpm = 60
concurrency = 20
[[provider.scopes]]
id = "project"
[[provider.credentials]]
key = "sk-one"
scope = "account"
[[provider.phases]]
from = "5m"
latency = { fixed = "90s" }
[[provider.phases]]
from = "1m"
until = "2m"
scopes = [{ id = "account", rpm = 10 }, { id = "project", tpm = 1000 }]
"#;

    fn phases_config() -> ProviderConfig {
        ProviderConfig::from_scenario_toml(PHASES, "p.toml").unwrap()
    }

    #[test]
    fn phases_read_and_round_trip() {
        let c = phases_config();
        assert_eq!(c.phases.len(), 2);
        assert_eq!(c.phases[0].from, DurationMs(300_000));
        assert_eq!(c.phases[0].until, None);
        assert_eq!(
            c.phases[0].latency.as_ref().unwrap().shape().unwrap(),
            LatencyShape::Fixed(90_000)
        );
        assert_eq!(c.phases[1].until, Some(DurationMs(120_000)));
        assert_eq!(c.phases[1].scopes[0].rpm, Some(10));
        assert_eq!(c.phases[1].scopes[1].tpm, Some(1000));
        assert!(c.phases[1].active_at(60_000) && !c.phases[1].active_at(120_000));
        assert!(!c.phases[0].active_at(299_999) && c.phases[0].active_at(u64::MAX));
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<ProviderConfig>(&json).unwrap(), c);
        let text = toml::to_string(&c).unwrap();
        assert_eq!(toml::from_str::<ProviderConfig>(&text).unwrap(), c);
        // Without phases, no `phases` key is written.
        let plain = serde_json::to_string(&ProviderConfig::default()).unwrap();
        assert!(!plain.contains("phases"), "{plain}");
    }

    #[test]
    fn phase_errors_name_the_key() {
        let mut c = phases_config();
        c.phases[1].scopes[1].id = "projekt".into();
        let e = error_of(&c);
        assert!(
            e.starts_with("provider.phases.1.scopes.1.id:") && e.contains("account, project"),
            "{e}"
        );

        let mut c = phases_config();
        c.phases[1].until = Some(DurationMs(60_000));
        let e = error_of(&c);
        assert!(e.starts_with("provider.phases.1.until:"), "{e}");
        c.phases[1].until = Some(DurationMs(30_000));
        assert!(error_of(&c).starts_with("provider.phases.1.until:"));

        let mut c = phases_config();
        c.phases[0].latency = Some(LatencyConfig {
            median: Some(DurationMs(5_000)),
            ..LatencyConfig::default()
        });
        let e = error_of(&c);
        assert!(
            e.starts_with("provider.phases.0.latency:") && e.contains("p99"),
            "{e}"
        );

        let mut c = phases_config();
        c.phases[1].scopes[0].rpm = Some(0);
        assert!(error_of(&c).starts_with("provider.phases.1.scopes.0.rpm:"));

        let mut c = phases_config();
        c.phases[1].scopes[1].id = "account".into();
        let e = error_of(&c);
        assert!(
            e.starts_with("provider.phases.1.scopes.1.id:") && e.contains("twice"),
            "{e}"
        );

        let mut c = phases_config();
        c.phases[1].scopes[1].tpm = None;
        assert!(error_of(&c).starts_with("provider.phases.1.scopes.1:"));

        let mut c = phases_config();
        c.phases[0].latency = None;
        assert!(error_of(&c).starts_with("provider.phases.0:"));

        let bad = PHASES.replace("from = \"5m\"", "from = \"5m\"\nuntill = \"6m\"");
        let e = ProviderConfig::from_scenario_toml(&bad, "p.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("untill"), "{e}");
        let bad = PHASES.replace("rpm = 10 }", "rpm = 10, rpn = 3 }");
        let e = ProviderConfig::from_scenario_toml(&bad, "p.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("rpn"), "{e}");
    }

    #[test]
    fn unknown_keys_are_refused_with_the_key_name() {
        let bad = "[provider]\nlatencyy = { fixed = \"1s\" }\n";
        let e = ProviderConfig::from_scenario_toml(bad, "b.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("latencyy"), "{e}");
    }

    /// A TOML error names its line and what is wrong, never the line itself: one that
    /// holds a key put it whole on stderr and in the control plane's answer.
    #[test]
    fn a_syntax_error_names_its_line_not_its_text() {
        let key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd";
        let text = format!(
            "[[provider.scopes]]\nid = \"s\"\n[[provider.credentials]]\nkey = \"{key}\" junk\n"
        );
        let e = ProviderConfig::from_scenario_toml(&text, "s.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("s.toml: line 4:"), "{e}");
        assert!(!e.contains(&key[8..40]), "{e}");
    }
}
