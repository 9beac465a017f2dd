//! `[providers.<name>]`: several providers in one scenario, each with its own scopes,
//! credentials, latency, faults and journal (an OpenAI account and an Anthropic one, a
//! primary region and a fallback). The single `[provider]` table stays the one-provider
//! case, named [`SINGLE`].
//!
//! A credential belongs to exactly one provider, so an attempt goes to the provider that
//! issued its key: a client falls back by sending with another key. Scope ids are unique
//! across providers, so the client's scope records never mix two providers' limits.

use std::collections::BTreeMap;

use stampede_provider::config::{ConfigError, ProviderConfig};

/// The name of the provider of a scenario written with one `[provider]` table.
pub const SINGLE: &str = "provider";

/// Most providers one scenario may name: each has its own model, journal and figures.
pub const MAX_PROVIDERS: usize = 8;

/// One provider of a scenario, by name.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedProvider {
    /// Its name: the key of `[providers.<name>]`, or [`SINGLE`].
    pub name: String,
    /// Its behaviour.
    pub config: ProviderConfig,
}

/// Checks `[providers.*]` and builds the list a run plays, plus the one-table view
/// (`Scenario::provider`) the rest of the harness reads credentials, scopes and faults from.
/// Errors are `(dotted key, message)`.
pub fn resolve(
    single: ProviderConfig,
    single_written: bool,
    named: BTreeMap<String, ProviderConfig>,
) -> Result<(ProviderConfig, Vec<NamedProvider>), (String, String)> {
    if named.is_empty() {
        return Ok((single, Vec::new()));
    }
    if single_written {
        return Err((
            "providers".into(),
            "write either one [provider] table or named [providers.<name>] tables, not both: \
             move the [provider] keys under a [providers.<name>] of their own"
                .into(),
        ));
    }
    if named.len() > MAX_PROVIDERS {
        return Err((
            "providers".into(),
            format!(
                "{} providers is more than the {MAX_PROVIDERS} a scenario may name",
                named.len()
            ),
        ));
    }
    let mut key_owner: BTreeMap<&str, &str> = BTreeMap::new();
    let mut scope_owner: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, config) in &named {
        let at = |k: &str| format!("providers.{name}.{k}");
        if name == SINGLE || name.is_empty() || !name.chars().all(is_name_char) {
            return Err((
                format!("providers.{name}"),
                format!(
                    "{name:?} cannot name a provider: use letters, digits, '-' and '_' \
                     (and not {SINGLE:?}, the name of a lone [provider])"
                ),
            ));
        }
        config.validate().map_err(|e| match e {
            ConfigError::Invalid { key, message } => {
                (at(key.strip_prefix("provider.").unwrap_or(&key)), message)
            }
            ConfigError::Parse { message, .. } => (format!("providers.{name}"), message),
        })?;
        if config.credentials.is_empty() {
            return Err((
                at("credentials"),
                format!(
                    "provider {name:?} has no [[providers.{name}.credentials]]: nothing could \
                     be sent to it"
                ),
            ));
        }
        for (i, c) in config.credentials.iter().enumerate() {
            if let Some(other) = key_owner.insert(&c.key, name) {
                return Err((
                    at(&format!("credentials.{i}.key")),
                    format!(
                        "this key is already one of provider {other:?}'s: a key belongs to one \
                         provider (it is how an attempt finds its provider); give each its own"
                    ),
                ));
            }
        }
        for (i, s) in config.scopes.iter().enumerate() {
            if let Some(other) = scope_owner.insert(&s.id, name) {
                return Err((
                    at(&format!("scopes.{i}.id")),
                    format!(
                        "scope id {:?} is already provider {other:?}'s: the client keeps one \
                         record per scope id, so two providers' limits would mix; name it \
                         after its provider (\"{name}:...\")",
                        s.id
                    ),
                ));
            }
        }
    }
    let list: Vec<NamedProvider> = named
        .into_iter()
        .map(|(name, config)| NamedProvider { name, config })
        .collect();
    Ok((union(&list), list))
}

/// The scope the client paces an action of `credential` asking for `model` on: the most
/// specific one the provider limits it by, a scope of the key's own that limits only that
/// model, else the key's scope. `None` for a key no provider issued.
pub fn client_scope(
    view: &ProviderConfig,
    credential: &str,
    model: Option<&str>,
) -> Option<String> {
    let c = view.credentials.iter().find(|c| c.key == credential)?;
    let per_model = model.and_then(|m| {
        c.scopes.iter().find(|id| {
            view.scopes
                .iter()
                .any(|s| &s.id == *id && s.model.as_deref() == Some(m))
        })
    });
    Some(per_model.unwrap_or(&c.scope).clone())
}

/// The models the provider that issued `credential` serves (empty: it lists none, and any
/// name passes).
pub fn models_of<'a>(
    single: &'a ProviderConfig,
    named: &'a [NamedProvider],
    credential: &str,
) -> &'a [stampede_provider::config::ModelConfig] {
    let owner = if named.is_empty() {
        Some(single)
    } else {
        named
            .iter()
            .map(|p| &p.config)
            .find(|c| c.credentials.iter().any(|k| k.key == credential))
    };
    owner.map_or(&[], |c| c.models.as_slice())
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Every provider's scopes, credentials and faults in one table, the rest from the first:
/// what the harness reads to find a key's scope, to tell the client the limits it knows,
/// and to draw fault windows. Never played as a provider itself.
fn union(list: &[NamedProvider]) -> ProviderConfig {
    let mut out = list[0].config.clone();
    for p in &list[1..] {
        out.scopes.extend(p.config.scopes.iter().cloned());
        out.credentials.extend(p.config.credentials.iter().cloned());
        out.faults.extend(p.config.faults.iter().cloned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(key: &str, scope: &str) -> ProviderConfig {
        let text = format!(
            "[[scopes]]\nid = \"{scope}\"\nrpm = 60\n[[credentials]]\nkey = \"{key}\"\nscope = \"{scope}\"\n"
        );
        toml::from_str(&text).unwrap()
    }

    #[test]
    fn one_provider_table_is_the_single_case() {
        let (view, list) = resolve(config("sk-a", "a"), true, BTreeMap::new()).unwrap();
        assert!(list.is_empty());
        assert_eq!(view.credentials[0].key, "sk-a");
    }

    #[test]
    fn named_providers_are_listed_by_name_and_viewed_as_one() {
        let named = BTreeMap::from([
            ("openai".to_string(), config("sk-o", "openai:org")),
            ("anthropic".to_string(), config("sk-an", "anthropic:org")),
        ]);
        let (view, list) = resolve(ProviderConfig::default(), false, named).unwrap();
        let names: Vec<_> = list.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["anthropic", "openai"]);
        assert_eq!(view.credentials.len(), 2);
        assert_eq!(view.scopes.len(), 2);
    }

    #[test]
    fn a_key_or_a_scope_shared_by_two_providers_is_refused_by_key() {
        let named = BTreeMap::from([
            ("a".to_string(), config("sk-x", "a:org")),
            ("b".to_string(), config("sk-x", "b:org")),
        ]);
        let (key, msg) = resolve(ProviderConfig::default(), false, named).unwrap_err();
        assert_eq!(key, "providers.b.credentials.0.key");
        assert!(msg.contains("\"a\""), "{msg}");
        let named = BTreeMap::from([
            ("a".to_string(), config("sk-a", "org")),
            ("b".to_string(), config("sk-b", "org")),
        ]);
        let (key, _) = resolve(ProviderConfig::default(), false, named).unwrap_err();
        assert_eq!(key, "providers.b.scopes.0.id");
    }

    #[test]
    fn both_forms_at_once_are_refused() {
        let named = BTreeMap::from([("a".to_string(), config("sk-a", "a"))]);
        let (key, _) = resolve(config("sk-b", "b"), true, named).unwrap_err();
        assert_eq!(key, "providers");
    }

    #[test]
    fn a_provider_errors_name_its_own_key() {
        let mut bad = config("sk-a", "a");
        bad.scopes[0].rpm = Some(0);
        let named = BTreeMap::from([("a".to_string(), bad)]);
        let (key, _) = resolve(ProviderConfig::default(), false, named).unwrap_err();
        assert!(key.starts_with("providers.a.scopes.0"), "{key}");
    }
}
