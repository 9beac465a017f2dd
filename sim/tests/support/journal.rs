//! What the measurement tests in `sim/tests` play: a provider model that limits one scope,
//! requests and journal entries that claim nothing about themselves, and who the harness
//! sent them for. Each test file uses what it needs.
#![allow(dead_code)]

use std::borrow::Cow;

use stampede_provider::config::{CredentialConfig, DurationMs, ScopeLimits};
use stampede_provider::model::{Fingerprint, JournalEntry};
use stampede_provider::{ProviderConfig, ProviderModel, Request, RequestRoute};
use stampede_sim::measure::SentBy;

/// A provider with one scope of 1 request a minute whose 429s leave 100 ms after the
/// decision.
pub fn provider() -> ProviderModel {
    let config = ProviderConfig {
        reject_latency: DurationMs(100),
        scopes: vec![ScopeLimits {
            rpm: Some(1),
            ..ScopeLimits::unlimited("s")
        }],
        credentials: vec![CredentialConfig {
            key: "sk-s".into(),
            scope: "s".into(),
            scopes: Vec::new(),
        }],
        ..ProviderConfig::default()
    };
    ProviderModel::new(config, 1, 0).unwrap()
}

/// A chat completion that says nothing about itself (no `x-stampede-*` claims).
pub fn chat() -> Request {
    Request {
        route: RequestRoute::ChatCompletions,
        credential: Some("sk-s".into()),
        prompt_tokens: 10,
        max_tokens: 5,
        ..Request::default()
    }
}

/// Who the harness sent an attempt for, at provider `provider`.
pub fn sent_by(provider: u8) -> SentBy<'static> {
    SentBy {
        tenant: "t",
        class: "llm",
        priority: "normal",
        provider,
        group: None,
    }
}

/// A committed chat completion as provider journals record it, with key `key` (if any) and
/// fingerprint `fingerprint`. Every field not set keeps its default: nothing the client
/// claims about itself is written unless a test writes it to show it changes nothing.
pub fn commit(key: Option<&str>, fingerprint: &str) -> JournalEntry {
    JournalEntry {
        seq: 1,
        route: Cow::Borrowed("/v1/chat/completions"),
        method: Cow::Borrowed("POST"),
        idempotency_key: key.map(Into::into),
        fingerprint: Fingerprint::Text(fingerprint.to_string()),
        status: Some(200),
        outcome: Cow::Borrowed("200"),
        committed: true,
        tokens_used: 10,
        logical: 1,
        logical_attempt: 1,
        ..JournalEntry::default()
    }
}
