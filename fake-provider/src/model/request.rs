//! What an attempt carries when it reaches the provider's edge.

use crate::config::RouteName;
use serde::{Deserialize, Serialize};
use stampede_key::IdempotencyKey;
use std::sync::Arc;

use super::completion_body::UNNAMED_MODEL;

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
    /// The `Idempotency-Key` header (a derived key held as its 16 bytes).
    pub idempotency_key: Option<IdempotencyKey>,
    /// Hash of the canonical request body (see [`body_hash`]); 0 for bodiless requests.
    pub body_hash: u64,
    /// `external_ref` field of a record write.
    pub external_ref: Option<String>,
    /// Prompt size in tokens (chat completions).
    pub prompt_tokens: u32,
    /// `max_tokens` of a chat completion (output cap, tokens).
    pub max_tokens: u32,
    /// The client named no `max_tokens` (nor `max_output_tokens`): the edge assumed
    /// `max_tokens`. A model's `max_output_tokens` refuses only a count the client named,
    /// as the real APIs serve a request that names none.
    pub max_tokens_assumed: bool,
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
    /// body names none). Decides nothing unless `provider.models` is listed. Shared, so
    /// a simulated client's attempt carries its job's model without a copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Arc<str>>,
    /// The workload item whose prompt this request carries: `N` when one of its messages
    /// starts `request N:` (the first that does, in order; of a message in parts, its first
    /// text part that does), as every prompt of a workload file Stampede writes for a
    /// client under test does (see [`workload_item`]). A system prompt, or the turns of a
    /// conversation, before it change nothing. The work itself, as the provider reads it,
    /// not a header the client sends about itself: what tells a `--client` run's answers to
    /// its workload apart from requests it was not given. `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_item: Option<u64>,
}

impl Request {
    /// The model the request names, else [`UNNAMED_MODEL`]: the one its answer names.
    pub fn model_name(&self) -> &str {
        self.model.as_deref().unwrap_or(UNNAMED_MODEL)
    }

    /// Whether the request is one of a model's (a generation, an embedding or a token
    /// count): it names a model, and its tokens count against token limits and the
    /// context window.
    pub(crate) fn is_model_call(&self) -> bool {
        matches!(
            self.route.name(),
            RouteName::ChatCompletions
                | RouteName::Messages
                | RouteName::Responses
                | RouteName::CountTokens
                | RouteName::Embeddings
        )
    }

    /// The tokens the request asks for (its prompt and the most it may answer): what a
    /// model call charges its scopes' token limits and holds to the context window; 0 for
    /// any other request.
    pub(crate) fn token_charge(&self) -> u64 {
        if self.is_model_call() {
            u64::from(self.prompt_tokens) + u64::from(self.max_tokens)
        } else {
            0
        }
    }
}

/// The workload item a prompt's text names: `N` when it starts `request N:` (N a whole
/// number), as the prompts of a workload file do; `None` otherwise.
pub fn workload_item(prompt: &str) -> Option<u64> {
    let rest = prompt.strip_prefix("request ")?;
    let (digits, _) = rest.split_once(':')?;
    if digits.is_empty() || digits.len() > 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The endpoint an attempt targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum RequestRoute {
    /// `POST /v1/chat/completions`
    #[default]
    ChatCompletions,
    /// `POST /v1/messages`: Anthropic Messages, the same completion in another wire format
    Messages,
    /// `POST /v1/responses`: OpenAI Responses, the same completion in a third wire format
    Responses,
    /// `POST /v1/messages/count_tokens`: Anthropic's count of a Messages request's input
    /// tokens. It bills nothing and is held to none of its scope's limits (Anthropic limits
    /// token counting apart from Messages): a client that counts before it sends shows in
    /// the journal, and costs its scope nothing.
    CountTokens,
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
    IdempotencyKey(IdempotencyKey),
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
            RequestRoute::Responses => RouteName::Responses,
            RequestRoute::CountTokens => RouteName::CountTokens,
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
            | RequestRoute::Responses
            | RequestRoute::CountTokens
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
            RequestRoute::Responses => "/v1/responses",
            RequestRoute::CountTokens => "/v1/messages/count_tokens",
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

/// So a value with a `Hash` of its own (an idempotency key: a derived key's 16 bytes, or
/// its text) can be fed as that value hashes, rather than as text rendered for it.
impl std::hash::Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        *self = self.bytes(bytes);
    }

    fn finish(&self) -> u64 {
        self.0
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

/// The journal's fingerprint of an attempt, without secrets: method, route template and
/// canonical body hash, written `"{method} {template} {body_hash:016x}"`. The model keeps
/// the three parts (an attempt's entry allocates nothing for it) and renders the text only
/// where it is shown or serialized; an entry read back from JSON holds the text.
#[derive(Debug, Clone, Default)]
pub enum Fingerprint {
    /// No fingerprint (a request to a route the provider does not serve).
    #[default]
    None,
    /// As the model saw the request.
    Parts {
        /// HTTP method (`POST`).
        method: &'static str,
        /// Route template (`/v1/chat/completions`).
        template: &'static str,
        /// Canonical body hash.
        body_hash: u64,
    },
    /// As read back from a journal's JSON.
    Text(String),
}

impl Fingerprint {
    /// The fingerprint of a request to `route` with `body_hash`.
    pub fn of(route: &RequestRoute, body_hash: u64) -> Self {
        Fingerprint::Parts {
            method: route.method(),
            template: route.template(),
            body_hash,
        }
    }

    /// Feeds the fingerprint's text to `fnv`, byte for byte as its rendering reads.
    pub fn feed(&self, fnv: Fnv) -> Fnv {
        match self {
            Fingerprint::None => fnv,
            Fingerprint::Parts {
                method,
                template,
                body_hash,
            } => fnv
                .bytes(method.as_bytes())
                .bytes(b" ")
                .bytes(template.as_bytes())
                .bytes(b" ")
                .bytes(&hex16(*body_hash)),
            Fingerprint::Text(text) => fnv.bytes(text.as_bytes()),
        }
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fingerprint::None => Ok(()),
            Fingerprint::Parts {
                method,
                template,
                body_hash,
            } => {
                let hex = hex16(*body_hash);
                let hex = std::str::from_utf8(&hex).map_err(|_| std::fmt::Error)?;
                write!(f, "{method} {template} {hex}")
            }
            Fingerprint::Text(text) => f.write_str(text),
        }
    }
}

/// Two fingerprints are equal when their texts are.
impl PartialEq for Fingerprint {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Fingerprint::Parts {
                    method: m1,
                    template: t1,
                    body_hash: h1,
                },
                Fingerprint::Parts {
                    method: m2,
                    template: t2,
                    body_hash: h2,
                },
            ) => m1 == m2 && t1 == t2 && h1 == h2,
            _ => self.to_string() == other.to_string(),
        }
    }
}

impl Eq for Fingerprint {}

impl Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Fingerprint {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(if text.is_empty() {
            Fingerprint::None
        } else {
            Fingerprint::Text(text)
        })
    }
}

/// `value` as 16 lower-case hex digits (what `{:016x}` writes).
pub(crate) fn hex16(value: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (i, slot) in out.iter_mut().enumerate() {
        let digit = ((value >> ((15 - i) * 4)) & 0xf) as u8;
        *slot = if digit < 10 {
            b'0' + digit
        } else {
            b'a' + digit - 10
        };
    }
    out
}

/// A credential as it may appear in the journal, the banner and the control plane (the
/// rule is `stampede_secret::mask`, which the durable ledger's references use too).
pub use stampede_secret::mask as mask_credential;

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
            (RequestRoute::Responses, 7),
            (RequestRoute::CountTokens, 9),
        ] {
            let text = format!("{} {} {:016x}", route.method(), route.template(), hash);
            let fp = Fingerprint::of(&route, hash);
            assert_eq!(fp.to_string(), text);
            assert_eq!(
                fp.feed(Fnv::new()).finish(),
                Fnv::new().bytes(text.as_bytes()).finish()
            );
            assert_eq!(serde_json::to_value(&fp).unwrap(), serde_json::json!(text));
            let back: Fingerprint = serde_json::from_value(serde_json::json!(text)).unwrap();
            assert_eq!(back, fp);
        }
        let none: Fingerprint = serde_json::from_value(serde_json::json!("")).unwrap();
        assert_eq!(none, Fingerprint::None);
        assert_eq!(serde_json::to_value(&none).unwrap(), serde_json::json!(""));
    }
}
