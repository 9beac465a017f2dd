//! What an attempt carries when it reaches the provider's edge.

use crate::config::RouteName;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One attempt as the provider's edge sees it.
///
/// `tenant`, `action`, `attempt_no` and `class` come from optional `x-stampede-*` headers a
/// harness client may send: they are kept in the journal for attribution and may be used by
/// fault filters (`class`, `tenant`) and scripted sequences (`action`), but never to decide
/// whether a commit is a duplicate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Request {
    /// Which endpoint.
    pub route: RequestRoute,
    /// The bearer key, if any (`None` gets 401). Shared with the client's record of the
    /// action, so an attempt carries it without a copy.
    pub credential: Option<Arc<str>>,
    /// The `Idempotency-Key` header.
    pub idempotency_key: Option<Arc<str>>,
    /// Hash of the canonical request body (see [`body_hash`]); 0 for bodiless requests.
    pub body_hash: u64,
    /// `external_ref` field of a record write.
    pub external_ref: Option<String>,
    /// Prompt size in tokens (chat completions).
    pub prompt_tokens: u32,
    /// `max_tokens` of a chat completion (output cap, tokens).
    pub max_tokens: u32,
    /// Whether the client asked for server-sent events.
    pub stream: bool,
    /// Whether a streamed answer ends with a usage chunk (`stream_options.include_usage`).
    #[serde(default)]
    pub stream_usage: bool,
    /// `x-stampede-class`: the client's request class (`llm`, `tool`, ...). Shared, so the
    /// journal entry of each attempt holds it without a copy.
    pub class: Option<Arc<str>>,
    /// `x-stampede-tenant`, shared like `class`.
    pub tenant: Option<Arc<str>>,
    /// `x-stampede-action`: the client's logical action id.
    pub action: Option<u64>,
    /// `x-stampede-attempt`: the client's attempt number for that action (1-based).
    pub attempt_no: Option<u32>,
    /// `x-stainless-retry-count`, which the official SDKs send: how many times the SDK says
    /// it retried this request (a claim, journaled, never counted).
    #[serde(default)]
    pub sdk_retry_count: Option<u32>,
    /// The body's `"model"` of a completion, message or embedding (as sent; `None` when the
    /// body names none). Decides nothing unless `provider.models` is listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The endpoint an attempt targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum RequestRoute {
    /// `POST /v1/chat/completions`
    #[default]
    ChatCompletions,
    /// `POST /v1/messages`: Anthropic Messages, the same completion in another wire format
    Messages,
    /// `POST /v1/embeddings`: a cheap call, charged its input tokens only
    Embeddings,
    /// `POST /v1/records` (side effect; honours `Idempotency-Key`)
    CreateRecord,
    /// `GET /v1/records/{id}`
    GetRecord {
        /// Record id, e.g. `rec_000001`.
        id: String,
    },
    /// `GET /v1/records?external_ref=..` or `?idempotency_key=..`
    FindRecords {
        /// What to look up by.
        by: FindBy,
    },
    /// `GET /v1/items/{id}`: a safe read.
    GetItem {
        /// Item id (any string; items always exist).
        id: String,
    },
}

/// The key of a reconciliation look-up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FindBy {
    /// Records created with this `external_ref`.
    ExternalRef(String),
    /// Records created with this `Idempotency-Key`.
    IdempotencyKey(String),
}

impl RequestRoute {
    /// What a record look-up asked for (`id=rec_000001`, `external_ref=..`,
    /// `idempotency_key=..`), for the journal; `None` for other routes.
    pub fn lookup(&self) -> Option<String> {
        match self {
            RequestRoute::GetRecord { id } => Some(format!("id={id}")),
            RequestRoute::FindRecords {
                by: FindBy::ExternalRef(r),
            } => Some(format!("external_ref={r}")),
            RequestRoute::FindRecords {
                by: FindBy::IdempotencyKey(k),
            } => Some(format!("idempotency_key={k}")),
            _ => None,
        }
    }

    /// The route's name as used by fault filters.
    pub fn name(&self) -> RouteName {
        match self {
            RequestRoute::ChatCompletions => RouteName::ChatCompletions,
            RequestRoute::Messages => RouteName::Messages,
            RequestRoute::Embeddings => RouteName::Embeddings,
            RequestRoute::CreateRecord => RouteName::CreateRecord,
            RequestRoute::GetRecord { .. } => RouteName::GetRecord,
            RequestRoute::FindRecords { .. } => RouteName::FindRecords,
            RequestRoute::GetItem { .. } => RouteName::GetItem,
        }
    }

    /// HTTP method.
    pub fn method(&self) -> &'static str {
        match self {
            RequestRoute::ChatCompletions
            | RequestRoute::Messages
            | RequestRoute::Embeddings
            | RequestRoute::CreateRecord => "POST",
            _ => "GET",
        }
    }

    /// The path template (no ids, no query values), as used in fingerprints and the journal.
    pub fn template(&self) -> &'static str {
        match self {
            RequestRoute::ChatCompletions => "/v1/chat/completions",
            RequestRoute::Messages => "/v1/messages",
            RequestRoute::Embeddings => "/v1/embeddings",
            RequestRoute::CreateRecord => "/v1/records",
            RequestRoute::GetRecord { .. } => "/v1/records/{id}",
            RequestRoute::FindRecords {
                by: FindBy::ExternalRef(_),
            } => "/v1/records?external_ref",
            RequestRoute::FindRecords {
                by: FindBy::IdempotencyKey(_),
            } => "/v1/records?idempotency_key",
            RequestRoute::GetItem { .. } => "/v1/items/{id}",
        }
    }
}

/// FNV-1a (64-bit), fed in parts: the same value for the parts as for their concatenation.
/// Stable across runs and machines, unlike `std`'s hasher.
#[derive(Debug, Clone, Copy)]
pub struct Fnv(u64);

impl Fnv {
    /// A hasher with nothing fed yet (at FNV-1a's 64-bit offset basis).
    pub fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    /// Feeds `bytes`.
    pub fn bytes(mut self, bytes: &[u8]) -> Self {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        self
    }

    /// The FNV-1a hash of every part fed so far.
    pub fn finish(self) -> u64 {
        self.0
    }
}

impl Default for Fnv {
    fn default() -> Self {
        Fnv::new()
    }
}

/// FNV-1a 64-bit hash of a request body, the `body_hash` the server computes (over the
/// canonical JSON, keys sorted) and the simulator may compute the same way.
pub fn body_hash(bytes: &[u8]) -> u64 {
    Fnv::new().bytes(bytes).finish()
}

/// The `body_hash` of a JSON body as the server computes it: FNV-1a over the body in
/// canonical form (object keys sorted, as `serde_json`'s maps keep them), so key order and
/// whitespace do not change a request's fingerprint. A harness that built the body can
/// compute the same value.
pub fn canonical_body_hash(v: &serde_json::Value) -> u64 {
    body_hash(&serde_json::to_vec(v).unwrap_or_default())
}

/// The journal's fingerprint of an attempt: `"{method} {template} {body_hash:016x}"`, written
/// into one allocation of the right size.
pub(crate) fn fingerprint(route: &RequestRoute, body_hash: u64) -> String {
    let (method, template) = (route.method(), route.template());
    let mut out = String::with_capacity(method.len() + template.len() + 18);
    out.push_str(method);
    out.push(' ');
    out.push_str(template);
    out.push(' ');
    push_hex16(&mut out, body_hash);
    out
}

/// Appends `value` as 16 lower-case hex digits (what `{:016x}` writes).
pub(crate) fn push_hex16(out: &mut String, value: u64) {
    for shift in (0..16).rev() {
        let digit = ((value >> (shift * 4)) & 0xf) as u8;
        out.push(char::from(if digit < 10 {
            b'0' + digit
        } else {
            b'a' + digit - 10
        }));
    }
}

/// A credential as it may appear in the journal: a prefix and the last four characters.
pub fn mask_credential(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= 8 {
        return "*".repeat(chars.len().max(4));
    }
    let head: String = chars[..3].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}...{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_what_format_wrote() {
        for (route, hash) in [
            (RequestRoute::ChatCompletions, 0u64),
            (RequestRoute::CreateRecord, 0x0123_4567_89ab_cdef),
            (RequestRoute::GetItem { id: "x".into() }, u64::MAX),
            (RequestRoute::Embeddings, 0xa5),
        ] {
            assert_eq!(
                fingerprint(&route, hash),
                format!("{} {} {:016x}", route.method(), route.template(), hash)
            );
        }
    }
}
