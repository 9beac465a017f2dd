//! The `[provider]` part of a scenario: scopes, credentials, latency and the fault schedule.
//!
//! SKELETON (issue 3 fills it in; the scenario format embeds `ProviderConfig`).

use serde::{Deserialize, Serialize};

/// The provider under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderConfig {
    pub scopes: Vec<ScopeLimits>,
    pub credentials: Vec<CredentialConfig>,
}

/// Limits of one scope (what the provider limits on: account, project, key, endpoint family).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeLimits {
    pub id: String,
    /// Requests per minute.
    pub rpm: Option<u64>,
    /// Tokens per minute.
    pub tpm: Option<u64>,
    /// Requests per day.
    pub rpd: Option<u64>,
    /// Tokens per day.
    pub tpd: Option<u64>,
    /// Concurrent requests.
    pub concurrency: Option<u64>,
}

/// A bearer key and the scope it is limited on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialConfig {
    pub key: String,
    pub scope: String,
}
