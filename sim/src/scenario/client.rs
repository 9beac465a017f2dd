//! `[client]`: the client under test: a preset of the core's policy, the number of workers,
//! and `[client.policy]` overrides merged onto the preset key by key.

use serde::{Deserialize, Serialize};
use stampede_core::policy::ScopeBudget;
use stampede_core::Policy;
use stampede_provider::config::ProviderConfig;

/// The client table as written.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    /// `naive`, `exponential`, `full-jitter` or `stampede`.
    #[serde(default = "default_preset")]
    pub preset: String,
    /// Concurrency slots (workers); overrides the preset's.
    #[serde(default)]
    pub workers: Option<u32>,
    /// Copy each provider scope's published rpm, tpm and concurrency into the client's scope
    /// budgets unless `[client.policy.scopes]` sets them: what a user of the tool expects.
    #[serde(default = "yes")]
    pub know_provider_limits: bool,
    /// Overrides of any policy key, merged onto the preset (`classes.llm.max_attempts = 5`).
    #[serde(default)]
    pub policy: Option<toml::Table>,
    /// Re-sends that a retry layer *under* the client makes after a connection error (a
    /// drop, a reset, a cut stream), with the same request and headers and without telling
    /// the client: what urllib3 or an SDK's own retries do under an agent framework. 0 (the
    /// default): the client's own retries are the only layer. The provider counts every
    /// re-send; the client's figures never see them. At most 10.
    #[serde(default)]
    pub transport_retries: u32,
    /// Whether the client sends its `x-stampede-*` attribution headers (tenant, class,
    /// action, attempt). `false` plays a client that says nothing about itself, as the
    /// official SDKs do: every figure is the same, since the provider identifies requests
    /// on its own.
    #[serde(default = "yes")]
    pub claims: bool,
    /// A client process to put under test instead of the core (`run --client` takes it
    /// from here when no command follows `--`): program and arguments, run with the
    /// provider's address, the keys and the workload file in its environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Retry layers stacked over an SDK preset (`client.preset = "openai-python"`),
    /// outermost first: an attempt of an outer layer runs the whole retry sequence of the
    /// layers under it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<LayerSpec>,
    /// The per-attempt timeout of an SDK client, in the client's own (real) time: the
    /// innermost layer's in the simulator, and `STAMPEDE_CLIENT_TIMEOUT` (seconds) for a
    /// `--client` command. Absent: the preset's (600 s for the openai and anthropic SDKs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<crate::scenario::DurationMs>,
    /// Independent instances of the client (the processes of one service), each with its
    /// own scope records, buckets, budgets, breaker and `workers`, sharing the scenario's
    /// credentials; the workload is spread across them by task. 1 to 256; 1 (the default)
    /// is the single client.
    #[serde(default = "one")]
    pub replicas: u32,
    /// What the replicas share: `"replica"` (the default: nothing, each sees only its own
    /// 429s) or `"fleet"` (one scope record, its waits and spent rate reaching the other
    /// replicas after `share_delay`). Core presets only: an SDK keeps no scope record.
    #[serde(default)]
    pub share_scope: ShareScope,
    /// How long the fleet's shared record takes to reach the other replicas (virtual
    /// time). Default 100 ms.
    #[serde(default = "default_share_delay")]
    pub share_delay: crate::scenario::DurationMs,
    /// With `preset = "litellm-router"`: the router's deployments, as keys of
    /// `[[provider.credentials]]` (absent: the job's own credential, one deployment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployments: Option<Vec<String>>,
    /// With `preset = "litellm-router"`: a fallback group of credentials, tried with its
    /// own retries when the deployments' are spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallbacks: Option<Vec<String>>,
}

/// What replicas of the client share (`client.share_scope`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShareScope {
    /// Nothing: each replica keeps its own scope record.
    #[default]
    Replica,
    /// One scope record for the fleet, after the share delay.
    Fleet,
}

impl ClientSpec {
    /// The propagation delay of the fleet's shared scope record (ms), `None` when the
    /// replicas share nothing.
    pub fn fleet_share_delay(&self) -> Option<u64> {
        (self.share_scope == ShareScope::Fleet).then_some(self.share_delay.ms())
    }
}

fn one() -> u32 {
    1
}

fn default_share_delay() -> crate::scenario::DurationMs {
    crate::scenario::DurationMs(100)
}

/// One `[[client.layers]]` entry: an SDK or framework preset, optionally with its own
/// number of attempts. Written as a table, or as just the preset's name
/// (`client.layers = ["langchain-retry", "langchain-retry"]`), which is what a sweep varies
/// (`--vary 'client.layers=[],["langchain-retry"]'`).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct LayerSpec {
    /// One of `SDK_PRESETS` (`openai-python`, `langchain-retry`, `litellm-router`, ...).
    pub preset: String,
    /// Attempts of what is under it, the first included (the preset's when absent).
    pub max_attempts: Option<u32>,
    /// `litellm-router` only: its deployments, as keys of `[[provider.credentials]]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployments: Option<Vec<String>>,
    /// `litellm-router` only: its fallback group, as keys of `[[provider.credentials]]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallbacks: Option<Vec<String>>,
}

/// A layer written as a table: the type check (and its "unknown field" errors) of
/// [`LayerSpec`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayerTable {
    preset: String,
    #[serde(default)]
    max_attempts: Option<u32>,
    #[serde(default)]
    deployments: Option<Vec<String>>,
    #[serde(default)]
    fallbacks: Option<Vec<String>>,
}

impl<'de> Deserialize<'de> for LayerSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = LayerSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a preset name like \"langchain-retry\", or a table like \
                     { preset = \"langchain-retry\", max_attempts = 5 }",
                )
            }
            fn visit_str<E: serde::de::Error>(self, preset: &str) -> Result<LayerSpec, E> {
                Ok(LayerSpec {
                    preset: preset.to_string(),
                    ..LayerSpec::default()
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<LayerSpec, A::Error> {
                let t = LayerTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(LayerSpec {
                    preset: t.preset,
                    max_attempts: t.max_attempts,
                    deployments: t.deployments,
                    fallbacks: t.fallbacks,
                })
            }
        }
        d.deserialize_any(Entry)
    }
}

/// The retry layers a client spec describes, outermost first: its `[[client.layers]]`
/// over its preset. Empty when the preset is one of the core's. Errors are `(key, message)`.
pub fn sdk_layers(
    spec: &ClientSpec,
    provider: &ProviderConfig,
) -> Result<Vec<crate::sdk_client::RetryLayer>, (String, String)> {
    use crate::sdk_client::{sdk_preset, SDK_PRESETS};
    let inner = sdk_preset(&spec.preset);
    if inner.is_none() {
        for (key, given) in [
            ("deployments", &spec.deployments),
            ("fallbacks", &spec.fallbacks),
        ] {
            if given.is_some() {
                return Err((
                    format!("client.{key}"),
                    format!(
                        "{key} are LiteLLM Router options: set client.preset = \"litellm-router\" \
                         (client.preset is {:?})",
                        spec.preset
                    ),
                ));
            }
        }
        if spec.layers.is_empty() {
            return Ok(Vec::new());
        }
        return Err((
            "client.layers".into(),
            format!(
                "layers stack over an SDK preset: set client.preset to one of {} (the core's \
                 presets cannot be stacked yet; to compare a stack with a core preset in one \
                 sweep, vary the whole client: --vary 'client={{preset=\"stampede\"}},\
                 {{preset=\"openai-python\",layers=[\"langchain-retry\"]}}')",
                SDK_PRESETS.join(", ")
            ),
        ));
    }
    let mut inner = inner;
    if let (Some(layer), Some(t)) = (inner.as_mut(), spec.timeout) {
        layer.timeout_ms = t.ms().max(1);
    }
    if let Some(layer) = inner.as_mut() {
        route(
            layer,
            "client",
            spec.deployments.as_ref(),
            spec.fallbacks.as_ref(),
            provider,
        )?;
    }
    let mut out = Vec::with_capacity(spec.layers.len() + 1);
    for (i, l) in spec.layers.iter().enumerate() {
        let mut layer = sdk_preset(&l.preset).ok_or_else(|| {
            (
                format!("client.layers.{i}.preset"),
                format!(
                    "unknown layer preset {:?}; use one of: {}",
                    l.preset,
                    SDK_PRESETS.join(", ")
                ),
            )
        })?;
        if let Some(n) = l.max_attempts {
            if n == 0 || n > 100 {
                return Err((
                    format!("client.layers.{i}.max_attempts"),
                    format!("{n} attempts: give 1 to 100"),
                ));
            }
            layer.max_attempts = n;
        }
        route(
            &mut layer,
            &format!("client.layers.{i}"),
            l.deployments.as_ref(),
            l.fallbacks.as_ref(),
            provider,
        )?;
        out.push(layer);
    }
    out.extend(inner);
    Ok(out)
}

/// Sets a router layer's deployments and fallbacks from the scenario (`at`: the table's
/// key), checking each names a credential of the provider, once.
fn route(
    layer: &mut crate::sdk_client::RetryLayer,
    at: &str,
    deployments: Option<&Vec<String>>,
    fallbacks: Option<&Vec<String>>,
    provider: &ProviderConfig,
) -> Result<(), (String, String)> {
    let Some(router) = layer.router.as_mut() else {
        for (key, given) in [("deployments", deployments), ("fallbacks", fallbacks)] {
            if given.is_some() {
                return Err((
                    format!("{at}.{key}"),
                    format!(
                        "{key} are LiteLLM Router options: only a \"litellm-router\" layer takes \
                         them (this one is {:?})",
                        layer.name
                    ),
                ));
            }
        }
        return Ok(());
    };
    let known: Vec<&str> = provider
        .credentials
        .iter()
        .map(|c| c.key.as_str())
        .collect();
    let mut seen: Vec<&str> = Vec::new();
    for (key, given) in [("deployments", deployments), ("fallbacks", fallbacks)] {
        let Some(list) = given else { continue };
        if list.is_empty() {
            return Err((
                format!("{at}.{key}"),
                format!(
                    "an empty {key} list: name at least one credential, or leave {key} out{}",
                    if key == "deployments" {
                        " to route over the job's own credential"
                    } else {
                        ""
                    }
                ),
            ));
        }
        for (j, credential) in list.iter().enumerate() {
            if !known.contains(&credential.as_str()) {
                return Err((
                    format!("{at}.{key}.{j}"),
                    format!(
                        "unknown credential {}: {key} name keys of [[provider.credentials]] \
                         ({}; shown masked)",
                        stampede_secret::mask(credential),
                        stampede_secret::mask_all(&known)
                    ),
                ));
            }
            if seen.contains(&credential.as_str()) {
                return Err((
                    format!("{at}.{key}.{j}"),
                    format!(
                        "credential {} is listed twice in deployments and fallbacks",
                        stampede_secret::mask(credential)
                    ),
                ));
            }
            seen.push(credential);
        }
    }
    router.deployments = deployments.cloned().unwrap_or_default();
    router.fallbacks = fallbacks.cloned().unwrap_or_default();
    Ok(())
}

/// Most hidden transport re-sends a scenario may ask for.
pub const MAX_TRANSPORT_RETRIES: u32 = 10;

impl Default for ClientSpec {
    fn default() -> Self {
        Self {
            preset: default_preset(),
            workers: None,
            know_provider_limits: true,
            policy: None,
            transport_retries: 0,
            claims: true,
            command: Vec::new(),
            layers: Vec::new(),
            timeout: None,
            replicas: 1,
            share_scope: ShareScope::Replica,
            share_delay: default_share_delay(),
            deployments: None,
            fallbacks: None,
        }
    }
}

fn default_preset() -> String {
    "stampede".to_string()
}
fn yes() -> bool {
    true
}

/// The preset names a scenario may use, in the order reports list them.
pub use stampede_core::preset::PRESETS;

/// The core's policy for a preset name.
pub fn preset_policy(name: &str) -> Option<Policy> {
    stampede_core::preset::preset(name)
}

/// Builds the policy a run uses. Errors are `(dotted key, message)`.
pub fn resolve_policy(
    spec: &ClientSpec,
    provider: &ProviderConfig,
) -> Result<Policy, (String, String)> {
    // An SDK preset is played by the SDK client (see `sdk_client`); the core's policy
    // is only carried along (workers).
    let sdk = crate::sdk_client::sdk_preset(&spec.preset).is_some();
    let base = preset_policy(if sdk { "naive" } else { &spec.preset }).ok_or_else(|| {
        (
            "client.preset".to_string(),
            format!(
                "unknown preset {:?}; use one of: {}, or an SDK's: {}",
                spec.preset,
                PRESETS.join(", "),
                crate::sdk_client::SDK_PRESETS.join(", ")
            ),
        )
    })?;
    if spec.transport_retries > MAX_TRANSPORT_RETRIES {
        return Err((
            "client.transport_retries".to_string(),
            format!(
                "{} hidden re-sends per attempt is more than the {MAX_TRANSPORT_RETRIES} allowed; \
                 real HTTP libraries retry 0 to 5 times",
                spec.transport_retries
            ),
        ));
    }
    if spec.workers == Some(0) {
        return Err((
            "client.workers".to_string(),
            "must be at least 1: a worker is a concurrency slot, and none would send anything"
                .to_string(),
        ));
    }
    let mut policy = match &spec.policy {
        None => base,
        Some(overrides) => merge(base, overrides)?,
    };
    if let Some(workers) = spec.workers {
        policy.workers = workers;
    }
    undeclared_scopes(&policy, provider)?;
    if spec.know_provider_limits {
        for scope in &provider.scopes {
            let set = |field: &str| {
                spec.policy
                    .as_ref()
                    .and_then(|p| p.get("scopes"))
                    .and_then(|s| s.get(&scope.id))
                    .and_then(|s| s.get(field))
                    .is_some()
            };
            let clamp = |v: Option<u64>| v.map(|v| u32::try_from(v).unwrap_or(u32::MAX));
            // What it leaves out, `default_scope` gives (`Policy::scope_budget`).
            let budget: &mut ScopeBudget = policy.scopes.entry(scope.id.clone()).or_default();
            if !set("rpm") {
                budget.rpm = clamp(scope.rpm).or(budget.rpm);
            }
            if !set("tpm") {
                budget.tpm = clamp(scope.tpm).or(budget.tpm);
            }
            if !set("concurrency") {
                budget.concurrency = clamp(scope.concurrency).or(budget.concurrency);
            }
        }
    }
    for (id, budget) in &policy.scopes {
        for (field, v) in [
            ("rpm", budget.rpm),
            ("tpm", budget.tpm),
            ("concurrency", budget.concurrency),
        ] {
            if v == Some(0) {
                return Err((
                    format!("client.policy.scopes.{id}.{field}"),
                    "a limit of 0 admits nothing; leave it out for no local limit".to_string(),
                ));
            }
        }
    }
    policy.validate().map_err(|msg| (policy_key(&msg), msg))?;
    Ok(policy)
}

/// Refuses a budget under `client.policy.scopes` for a scope the provider does not declare:
/// no request is paced on it, so a misspelt id (`account:acme` for `account:acm`) would
/// have changed nothing without a word. A provider that declares no scope (a live run
/// against a provider described elsewhere) leaves every id open, and `account`, the scope
/// of a request whose key names none, is always known.
fn undeclared_scopes(policy: &Policy, provider: &ProviderConfig) -> Result<(), (String, String)> {
    if provider.scopes.is_empty() {
        return Ok(());
    }
    let declared =
        |id: &str| id == stampede_core::DEFAULT_SCOPE || provider.scopes.iter().any(|s| s.id == id);
    match policy.scopes.keys().find(|id| !declared(id)) {
        None => Ok(()),
        Some(id) => {
            let known: Vec<&str> = provider.scopes.iter().map(|s| s.id.as_str()).collect();
            Err((
                format!("client.policy.scopes.{id}"),
                format!(
                    "scope {id:?} is not one of provider.scopes ({}), so no request would be \
                     paced on it; name one of those (or `{}`, the scope of a key that names \
                     none)",
                    known.join(", "),
                    stampede_core::DEFAULT_SCOPE
                ),
            ))
        }
    }
}

/// The key a message of `Policy::validate` is about: it starts with the key's path inside
/// the policy (`classes.llm.max_attempts = 0: ...`, `breaker.threshold = 0: ...`).
fn policy_key(message: &str) -> String {
    // Cut at the first space: a scope id such as `account:shared` holds a colon, so only a
    // colon that ends the word ends the key.
    let head = message
        .split(' ')
        .next()
        .unwrap_or_default()
        .trim_end_matches(':');
    let looks_like_key = !head.is_empty()
        && head
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | ':'));
    if looks_like_key {
        format!("client.policy.{head}")
    } else {
        "client.policy".to_string()
    }
}

/// Merges the scenario's overrides onto the preset, key by key, and type-checks the result.
fn merge(base: Policy, overrides: &toml::Table) -> Result<Policy, (String, String)> {
    let known: Vec<String> = base.classes.keys().cloned().collect();
    let mut value = serde_json::to_value(&base).map_err(|e| {
        (
            "client.preset".to_string(),
            format!("preset could not be expanded: {e}"),
        )
    })?;
    let patch = serde_json::to_value(overrides).map_err(|e| {
        (
            "client.policy".to_string(),
            format!("policy overrides are not plain data: {e}"),
        )
    })?;
    deep_merge(&mut value, patch);
    serde_path_to_error::deserialize::<_, Policy>(value).map_err(|e| {
        // serde_path_to_error writes list indices as `retry_on[0]`; keys are dotted.
        let path = e.path().to_string().replace('[', ".").replace(']', "");
        let key = if path == "." || path.is_empty() {
            "client.policy".to_string()
        } else {
            format!("client.policy.{path}")
        };
        let message = crate::scenario::plain_words(&e.into_inner().to_string());
        // A class the preset does not have must be written whole; a partial one is most
        // likely a misspelt name (`classes.lm.max_attempts`).
        let new_class = path
            .strip_prefix("classes.")
            .map(|rest| rest.split('.').next().unwrap_or(rest))
            .filter(|name| !known.iter().any(|k| k == name));
        match new_class {
            Some(name) if message.starts_with("missing field") => (
                format!("client.policy.classes.{name}"),
                format!(
                    "class {name:?} is not one of the preset's classes ({}); check the spelling, \
                     or define a new class whole, with max_attempts, max_wait, retry_on and \
                     timeout ({message})",
                    known.join(", ")
                ),
            ),
            _ => (key, message),
        }
    })
}

fn deep_merge(into: &mut serde_json::Value, patch: serde_json::Value) {
    match (into, patch) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(slot) => deep_merge(slot, v),
                    None => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::parse;

    fn scenario(client: &str) -> String {
        format!(
            r#"
name = "router"
seed = 1
duration = "1m"

[[provider.scopes]]
id = "a"

[[provider.scopes]]
id = "b"

[[provider.credentials]]
key = "sk-a"
scope = "a"

[[provider.credentials]]
key = "sk-b"
scope = "b"

[[workload]]
tenant = "t"
credential = "sk-a"
class = "llm"
count = 1
arrival = {{ rate = "1/s" }}

[client]
{client}
"#
        )
    }

    fn error(client: &str) -> (String, String) {
        let e = parse(&scenario(client), "t.toml", &[]).unwrap_err();
        (e.key.unwrap_or_default(), e.message)
    }

    /// A scope the provider declares (and the client learns its limits of), or one the
    /// policy names for another field, keeps what `default_scope` says beyond them: its
    /// `reserve` and `max_delayed_requests` had been dropped for such scopes, so the cap
    /// did nothing.
    #[test]
    fn a_scope_the_client_learns_from_the_provider_starts_from_the_default_scope() {
        let client = "preset = \"stampede\"\n[client.policy.default_scope]\nreserve = 0.25\n\
                      max_delayed_requests = 4\n[client.policy.scopes.b]\nmax_delayed_requests = 9";
        let s = parse(&scenario(client), "t.toml", &[]).unwrap();
        let a = s.policy.scope_budget("a");
        assert_eq!((a.reserve, a.max_delayed_requests), (Some(0.25), Some(4)));
        // A scope the policy names keeps its own, and the default's for what it leaves out.
        let b = s.policy.scope_budget("b");
        assert_eq!((b.reserve, b.max_delayed_requests), (Some(0.25), Some(9)));
    }

    /// A budget for a scope the provider does not declare is refused, naming the key and the
    /// scopes it could be: a misspelt id had changed nothing without a word.
    #[test]
    fn a_budget_for_a_scope_the_provider_does_not_declare_is_refused() {
        let (key, message) = error("[client.policy.scopes.c]\nrpm = 10");
        assert_eq!(key, "client.policy.scopes.c");
        assert!(
            message.contains("not one of provider.scopes (a, b)"),
            "{message}"
        );
        // The provider's own scopes, and `account` (a key that names none), are known.
        let known = "[client.policy.scopes.b]\nrpm = 10\n[client.policy.scopes.account]\nrpm = 5";
        assert!(parse(&scenario(known), "t.toml", &[]).is_ok());
    }

    #[test]
    fn a_policy_error_on_a_scope_with_a_colon_names_the_whole_key() {
        assert_eq!(
            super::policy_key("scopes.account:shared.reserve = 1.5: use a fraction"),
            "client.policy.scopes.account:shared.reserve"
        );
        assert_eq!(
            super::policy_key("breaker.threshold = 0: use 1 or more"),
            "client.policy.breaker.threshold"
        );
        assert_eq!(
            super::policy_key("retry_budgets.per_scope.window is 0: use a window"),
            "client.policy.retry_budgets.per_scope.window"
        );
    }

    #[test]
    fn litellm_router_takes_deployments_and_fallbacks_from_the_client_or_a_layer() {
        let s = parse(
            &scenario(
                "preset = \"litellm-router\"\ndeployments = [\"sk-a\"]\nfallbacks = [\"sk-b\"]",
            ),
            "t.toml",
            &[],
        )
        .unwrap();
        let router = s.sdk_layers[0].router.clone().unwrap();
        assert_eq!(router.deployments, vec!["sk-a".to_string()]);
        assert_eq!(router.fallbacks, vec!["sk-b".to_string()]);
        let s = parse(
            &scenario(
                "preset = \"openai-python\"\n[[client.layers]]\npreset = \"litellm-router\"\n\
                 deployments = [\"sk-a\", \"sk-b\"]",
            ),
            "t.toml",
            &[],
        )
        .unwrap();
        assert_eq!(s.sdk_layers.len(), 2);
        assert_eq!(
            s.sdk_layers[0].router.as_ref().unwrap().deployments.len(),
            2
        );
        // Absent: the job's own credential.
        let s = parse(&scenario("preset = \"litellm-router\""), "t.toml", &[]).unwrap();
        assert!(s.sdk_layers[0]
            .router
            .as_ref()
            .unwrap()
            .deployments
            .is_empty());
    }

    #[test]
    fn router_keys_are_checked_and_errors_name_the_key() {
        let (key, msg) = error("preset = \"litellm-router\"\ndeployments = [\"sk-a\", \"sk-x\"]");
        assert_eq!(key, "client.deployments.1");
        assert!(
            msg.contains("unknown credential ****") && msg.contains("(****, ****; shown masked)"),
            "{msg}"
        );
        let (key, msg) = error("preset = \"litellm-router\"\ndeployments = []");
        assert_eq!(key, "client.deployments");
        assert!(msg.contains("empty"), "{msg}");
        let (key, msg) =
            error("preset = \"litellm-router\"\ndeployments = [\"sk-a\"]\nfallbacks = [\"sk-a\"]");
        assert_eq!(key, "client.fallbacks.0");
        assert!(msg.contains("twice"), "{msg}");
        let (key, msg) = error("preset = \"openai-python\"\ndeployments = [\"sk-a\"]");
        assert_eq!(key, "client.deployments");
        assert!(msg.contains("litellm-router"), "{msg}");
        let (key, _) = error("preset = \"stampede\"\nfallbacks = [\"sk-b\"]");
        assert_eq!(key, "client.fallbacks");
        let (key, msg) = error(
            "preset = \"openai-python\"\n[[client.layers]]\npreset = \"langchain-retry\"\n\
             deployments = [\"sk-a\"]",
        );
        assert_eq!(key, "client.layers.0.deployments");
        assert!(msg.contains("\"langchain-retry\""), "{msg}");
        let (key, _) = error("preset = \"aws-adaptive\"\n[[client.layers]]\npreset = \"aws-nope\"");
        assert_eq!(key, "client.layers.0.preset");
    }
}
