//! HTTP requests into model attempts, with errors that say what is wrong.

use super::known_fields;
use super::plain_chat::{self, PlainChat};
use super::shaped::{self, Shape};
use crate::model::{canonical_body_hash, workload_item, FindBy, Fnv, Request, RequestRoute};
use axum::http::{header, HeaderMap, HeaderName};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use stampede_key::IdempotencyKey;
use std::borrow::Cow;
use std::sync::Arc;

/// Output tokens assumed when a completion request names no `max_tokens`.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 256;

/// Sets `req`'s output cap from what the client `named`: its count, or, when it named none,
/// [`DEFAULT_MAX_TOKENS`] with `max_tokens_assumed` set (a model's bound refuses only a
/// count the client named).
pub(crate) fn set_max_tokens(req: &mut Request, named: Option<u32>) {
    req.max_tokens = named.unwrap_or(DEFAULT_MAX_TOKENS);
    req.max_tokens_assumed = named.is_none();
}

/// The longest text a refusal repeats of what a client sent (bytes): a client that sends
/// a megabyte-long field name, id or query value gets its first part back, not a
/// megabyte-long 400.
const SHOWN_NAME_BYTES: usize = 256;

/// `name` (a field name, an id, a value a client sent) cut to at most
/// [`SHOWN_NAME_BYTES`], at a character's boundary.
pub(crate) fn shown(name: &str) -> &str {
    if name.len() <= SHOWN_NAME_BYTES {
        return name;
    }
    let mut end = SHOWN_NAME_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// A request the server cannot turn into an attempt: 400 with this message, and the
/// parameter at fault and an error code where the real API gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadRequest {
    pub message: String,
    /// The parameter at fault, as the real API names it (`messages[0].role`).
    pub param: Option<String>,
    /// OpenAI's `code` (`invalid_type`, `invalid_value`, ...); `None` is JSON `null`.
    pub code: Option<&'static str>,
}

impl BadRequest {
    /// A 400 with `message` and the server's own code, `invalid_request`.
    pub(crate) fn new(message: String) -> Self {
        BadRequest {
            message,
            param: None,
            code: Some("invalid_request"),
        }
    }

    /// A 400 as the real API answers a parameter at fault.
    pub(crate) fn at(
        param: impl Into<String>,
        code: Option<&'static str>,
        message: impl Into<String>,
    ) -> Self {
        BadRequest {
            message: message.into(),
            param: Some(param.into()),
            code,
        }
    }
}

// Deserialized from the parsed value by reference: the role is borrowed from it and the
// content skipped (`prompt_tokens` reads it from the value), so a message costs no copy.
// The names stay: serde's messages name the struct (`expected struct ChatMessage`).
#[derive(Deserialize)]
struct ChatBody<'a> {
    #[serde(borrow)]
    messages: Vec<ChatMessage<'a>>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    max_completion_tokens: Option<u32>,
    // Nullable, as in OpenAI's API reference (`"stream": null` is a plain answer): the SDK's
    // signature takes `stream=None`, and a client that passes it through got a 400.
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

#[derive(Deserialize)]
struct ChatMessage<'a> {
    // Required and a string, as before (`Cow`'s "expected a string" is `String`'s).
    #[allow(dead_code)]
    #[serde(borrow)]
    role: Cow<'a, str>,
    // Any JSON, or none (the value's `content` is read by `prompt_tokens`).
    #[allow(dead_code)]
    #[serde(default)]
    content: IgnoredAny,
}

/// `what` is at most `max` bytes, or a 400 naming it (Stripe's wording for keys).
pub(crate) fn capped(what: &str, value: &str, max: usize) -> Result<(), BadRequest> {
    if value.len() <= max {
        return Ok(());
    }
    Err(BadRequest::new(if what == "Idempotency-Key" {
        format!(
            "Keys for idempotent requests can only be {max} characters long (got {} bytes).",
            value.len()
        )
    } else {
        format!("{what} is {} bytes long; the limit is {max}", value.len())
    }))
}

/// The id in a `/v1/records/{id}` or `/v1/items/{id}` path, capped like the other fields.
fn route_id(route: &RequestRoute, max: usize) -> Result<(), BadRequest> {
    match route {
        RequestRoute::GetRecord { id } | RequestRoute::GetItem { id } => capped("the id", id, max),
        _ => Ok(()),
    }
}

/// The headers an attempt reads, named once: looking a header up by `&str` parses and checks
/// the name first, on every lookup of every request.
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
const X_STAMPEDE_ATTEMPT: HeaderName = HeaderName::from_static("x-stampede-attempt");
const X_STAMPEDE_CLASS: HeaderName = HeaderName::from_static("x-stampede-class");
const X_STAMPEDE_TENANT: HeaderName = HeaderName::from_static("x-stampede-tenant");
const X_STAMPEDE_ACTION: HeaderName = HeaderName::from_static("x-stampede-action");
const X_STAINLESS_RETRY_COUNT: HeaderName = HeaderName::from_static("x-stainless-retry-count");

/// The key a request carries: `Authorization: Bearer KEY` (or its bare value); on
/// Anthropic's wire (`anthropic`), Anthropic's own `x-api-key` first, as the real API reads
/// a request that carries both (the SDK majors sending API version 2026-10-21 send the key
/// as `Authorization: Bearer`, and a gateway may add its own `x-api-key`, which is the one
/// the API then bills). An `x-api-key` that is empty or no text is no key; an
/// `Authorization` that is not visible ASCII is a 400.
pub(crate) fn credential(headers: &HeaderMap, anthropic: bool) -> Result<Option<&str>, BadRequest> {
    if anthropic {
        let key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
        if let Some(key) = key.map(str::trim).filter(|k| !k.is_empty()) {
            return Ok(Some(key));
        }
    }
    let authorization = header_text(headers, &header::AUTHORIZATION)?;
    Ok(authorization.map(|a| {
        a.strip_prefix("Bearer ")
            .or_else(|| a.strip_prefix("bearer "))
            .unwrap_or(a)
            .trim()
    }))
}

/// Header `name`'s value, trimmed, borrowed from the head; a 400 when it is not visible
/// ASCII.
fn header_text<'h>(
    headers: &'h HeaderMap,
    name: &HeaderName,
) -> Result<Option<&'h str>, BadRequest> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(|s| Some(s.trim()))
            .map_err(|_| BadRequest::new(format!("header `{name}` is not visible ASCII"))),
    }
}

/// The attempt's attribution headers and credential; every string the journal keeps is at
/// most `max_field` bytes.
pub(crate) fn base_request(
    headers: &HeaderMap,
    max_field: usize,
    route: RequestRoute,
) -> Result<Request, BadRequest> {
    route_id(&route, max_field)?;
    // Values are borrowed from the head while they are checked; only what the attempt keeps
    // is copied, once.
    let text = |name: &HeaderName| -> Result<Option<&str>, BadRequest> {
        let v = header_text(headers, name)?;
        // The name is put in words only for a value over the cap: formatting it for every
        // header of every request cost more than the rest of this function.
        if let Some(v) = v.filter(|v| v.len() > max_field) {
            let what = if name == IDEMPOTENCY_KEY {
                "Idempotency-Key".to_string()
            } else {
                format!("header `{name}`")
            };
            capped(&what, v, max_field)?;
        }
        Ok(v)
    };
    let number = |name: &HeaderName| -> Result<Option<u64>, BadRequest> {
        text(name)?
            .map(|s| {
                s.parse::<u64>().map_err(|_| {
                    BadRequest::new(format!(
                        "header `{name}` must be a whole number (got {s:?})"
                    ))
                })
            })
            .transpose()
    };
    let anthropic = matches!(route, RequestRoute::Messages | RequestRoute::CountTokens);
    let credential = credential(headers, anthropic)?;
    let attempt_no = number(&X_STAMPEDE_ATTEMPT)?
        .map(|n| {
            u32::try_from(n)
                .map_err(|_| BadRequest::new("header `x-stampede-attempt` is too large".into()))
        })
        .transpose()?;
    Ok(Request {
        route,
        credential: credential.map(Arc::from),
        idempotency_key: text(&IDEMPOTENCY_KEY)?
            .filter(|k| !k.is_empty())
            .map(Into::into),
        class: text(&X_STAMPEDE_CLASS)?.map(Arc::from),
        tenant: text(&X_STAMPEDE_TENANT)?.map(Arc::from),
        action: number(&X_STAMPEDE_ACTION)?,
        attempt_no,
        sdk_retry_count: number(&X_STAINLESS_RETRY_COUNT)
            .ok()
            .flatten()
            .and_then(|n| u32::try_from(n).ok()),
        ..Request::default()
    })
}

/// Parses a JSON body, naming the problem (serde's message carries line and column).
pub(crate) fn json_body(bytes: &[u8]) -> Result<Value, BadRequest> {
    if bytes.is_empty() {
        return Err(BadRequest::new(
            "the request body is empty: send a JSON object".into(),
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| BadRequest::new(format!("malformed JSON body: {e}")))
}

/// The `body_hash` of every route that has a body: `canonical_body_hash`'s value, the
/// canonical text fed to the hash as it is written instead of gathered in a buffer first
/// (FNV-1a reads bytes in order, so the pieces hash as the whole would). `v` is the body's
/// `Value`, or a plain chat body, which writes the same canonical text (see `plain_chat`).
pub(crate) fn canonical_hash(v: &impl serde::Serialize) -> u64 {
    let mut sink = HashSink(Fnv::new());
    match serde_json::to_writer(&mut sink, v) {
        Ok(()) => sink.0.finish(),
        // Writing to the hash cannot fail; should serde_json refuse a value, the model's
        // own function says what it is.
        Err(_) => canonical_body_hash(&serde_json::to_value(v).unwrap_or_default()),
    }
}

/// The length of `v`'s JSON text, bytes, counted as it is written: no text is kept (a
/// request's tools or a call's input can be megabytes).
pub(crate) fn json_len(v: &Value) -> usize {
    let mut sink = CountSink(0);
    // Writing to a count cannot fail.
    let _ = serde_json::to_writer(&mut sink, v);
    sink.0
}

/// An `io::Write` that counts the bytes written to it.
struct CountSink(usize);

impl std::io::Write for CountSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An `io::Write` that feeds everything written to an FNV-1a hash.
struct HashSink(Fnv);

impl std::io::Write for HashSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.bytes(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The body's `"model"` when it is a string. Anything else is left as today (ignored): the
/// provider checks names only against `provider.models`, and the journal keeps at most a
/// cut of an unknown one.
pub(crate) fn model(v: &Value) -> Option<Arc<str>> {
    v.get("model").and_then(Value::as_str).map(Arc::from)
}

/// Rough tokens of a prompt: 4 characters a token plus 4 per message, as OpenAI's rule of
/// thumb. `messages` are the body's, as `ChatMessage` read them (a missing `content` is null).
fn prompt_tokens(messages: &[Value]) -> u32 {
    let chars: usize = messages
        .iter()
        .map(|m| match field(m, "content", 1) {
            Some(Value::String(s)) => s.chars().count(),
            None | Some(Value::Null) => 0,
            Some(other) => json_len(other),
        })
        .sum();
    u32::try_from(chars.div_ceil(4) + 4 * messages.len()).unwrap_or(u32::MAX)
}

/// Characters of text in a content value (a message's, a system prompt): a string, or
/// blocks (see [`block_chars`]); anything else counts its JSON text.
pub(crate) fn text_chars(v: &Value) -> usize {
    match v {
        Value::String(s) => s.chars().count(),
        Value::Array(parts) => parts.iter().map(block_chars).sum(),
        Value::Null => 0,
        other => json_len(other),
    }
}

/// Characters of one content block the model reads: its `text`, a tool result's
/// `content`, a tool call's `input` (as JSON), a thinking block's `thinking`. An agent's
/// conversation is mostly tool results and calls, which a count of `text` alone had left
/// out (its input tokens, and the limits they count against, read a fraction of the real
/// API's). A block of none of these (an image, a document) counts none.
fn block_chars(block: &Value) -> usize {
    if let Some(text) = block.get("text") {
        text_chars(text)
    } else if let Some(content) = block.get("content") {
        text_chars(content)
    } else if let Some(input) = block.get("input") {
        json_len(input)
    } else if let Some(Value::String(thought)) = block.get("thinking") {
        thought.chars().count()
    } else {
        0
    }
}

/// The workload item a body's messages name (the first that names one), read from any JSON
/// body, even one refused: a client that re-sends an invalid request for an item is
/// re-sending that item.
pub(crate) fn workload_item_in(bytes: &[u8]) -> Option<u64> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    v.get("messages")?
        .as_array()?
        .iter()
        .filter_map(|m| m.get("content"))
        .find_map(workload_item_of)
}

/// The workload item a message's content names ([`workload_item`]): its text, or, when it
/// is a list of parts (`[{"type": "text", "text": ...}]`, as the SDKs may send it), the
/// first of its text parts that names one (an image or a document may come first).
pub(crate) fn workload_item_of(content: &Value) -> Option<u64> {
    match content {
        Value::String(text) => workload_item(text),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .find_map(workload_item),
        _ => None,
    }
}

/// Field `name`, declared `index`-th, of a value serde read as a struct: by name from an
/// object, by position from an array (serde's derived structs accept both).
fn field<'v>(v: &'v Value, name: &str, index: usize) -> Option<&'v Value> {
    match v {
        Value::Object(map) => map.get(name),
        Value::Array(items) => items.get(index),
        _ => None,
    }
}

/// Fills a chat completion attempt from its body: the plain shape read straight off the
/// bytes when it is one (see `plain_chat`), any other body through a `Value`. A body the
/// real API refuses (no model, a role it does not know, content of the wrong type, a
/// temperature out of range) is refused here too, in its words: a client that sends one
/// learns it against the fake provider, not in production. Returns the shape its answer
/// must have (JSON output, a forced tool call: see `shaped`), which only a body read as a
/// `Value` can ask for (the plain shape has no such field). A field the API does not take
/// is refused unless `accept_unknown` (see `known_fields`); the plain shape has none.
pub(crate) fn chat(
    req: &mut Request,
    bytes: &[u8],
    accept_unknown: bool,
) -> Result<Option<Shape>, BadRequest> {
    if let Some(body) = plain_chat::read(bytes).filter(|b| !b.messages.is_empty()) {
        return plain(req, &body).map(|()| None);
    }
    chat_value(req, bytes, accept_unknown)
}

/// OpenAI's 400 for body fields of `route` it does not take: no `param`, no `code`.
fn unrecognized(v: &Value, route: &RequestRoute, accept_unknown: bool) -> Result<(), BadRequest> {
    if accept_unknown {
        return Ok(());
    }
    match known_fields::openai_refusal(v, route) {
        Some(message) => Err(BadRequest {
            message,
            param: None,
            code: None,
        }),
        None => Ok(()),
    }
}

/// The roles OpenAI's chat completions accept, in its error's words.
const CHAT_ROLES: [&str; 6] = [
    "system",
    "assistant",
    "user",
    "function",
    "tool",
    "developer",
];

/// The JSON type of `v` as OpenAI's errors name it (`got an integer instead`).
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a decimal",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// OpenAI's 400 for a parameter that is required and absent.
pub(crate) fn missing(param: &str) -> BadRequest {
    BadRequest::at(
        param,
        Some("missing_required_parameter"),
        format!("Missing required parameter: '{param}'."),
    )
}

pub(crate) fn invalid_type(param: &str, expected: &str, got: &Value) -> BadRequest {
    BadRequest::at(
        param,
        Some("invalid_type"),
        format!(
            "Invalid type for '{param}': expected {expected}, but got {} instead.",
            json_kind(got)
        ),
    )
}

/// A body's `model`, as a `Value`: required, a string, and a name ([`check_model`]).
pub(crate) fn check_model_value(v: &Value) -> Result<(), BadRequest> {
    match v.get("model") {
        None | Some(Value::Null) => check_model(None),
        Some(Value::String(name)) => check_model(Some(name)),
        Some(other) => Err(invalid_type("model", "a string", other)),
    }
}

/// `model` is required and a name.
fn check_model(model: Option<&str>) -> Result<(), BadRequest> {
    match model {
        Some(name) if !name.is_empty() => Ok(()),
        _ => Err(BadRequest {
            message: "you must provide a model parameter".into(),
            param: None,
            code: None,
        }),
    }
}

fn check_role(index: usize, role: &str) -> Result<(), BadRequest> {
    if CHAT_ROLES.contains(&role) {
        return Ok(());
    }
    let quoted: Vec<String> = CHAT_ROLES.iter().map(|r| format!("'{r}'")).collect();
    let (last, rest) = quoted.split_last().expect("roles");
    Err(BadRequest::at(
        format!("messages[{index}].role"),
        Some("invalid_value"),
        format!(
            "Invalid value: '{role}'. Supported values are: {}, and {last}.",
            rest.join(", ")
        ),
    ))
}

/// What the real API checks of a chat body read as a `Value` beyond its shape: the model,
/// each message's role and content, the sampling numbers' types and ranges, and the
/// pairing of tool calls and tool messages.
fn check_chat_value(v: &Value) -> Result<(), BadRequest> {
    check_model_value(v)?;
    if let Some(Value::Array(messages)) = v.get("messages") {
        for (i, m) in messages.iter().enumerate() {
            match m.get("role") {
                Some(Value::String(role)) => check_role(i, role)?,
                Some(other) => {
                    return Err(invalid_type(
                        &format!("messages[{i}].role"),
                        "a string",
                        other,
                    ))
                }
                None => return Err(missing(&format!("messages[{i}].role"))),
            }
            match m.get("content") {
                None | Some(Value::Null | Value::String(_) | Value::Array(_)) => {}
                Some(other) => {
                    return Err(invalid_type(
                        &format!("messages[{i}].content"),
                        "one of a string or array of objects",
                        other,
                    ))
                }
            }
        }
    }
    check_sampling(v)?;
    for param in ["max_tokens", "max_completion_tokens"] {
        if v.get(param).and_then(Value::as_u64) == Some(0) {
            return Err(zero_tokens(param));
        }
    }
    if let Some(Value::Array(messages)) = v.get("messages") {
        super::openai_tools::tool_pairing(messages)?;
    }
    Ok(())
}

/// `temperature` in [0, 2] and `top_p` in [0, 1], decimals, as OpenAI's APIs check them.
pub(crate) fn check_sampling(v: &Value) -> Result<(), BadRequest> {
    for (param, max) in [("temperature", 2.0), ("top_p", 1.0)] {
        match v.get(param) {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) => {
                let x = n.as_f64().unwrap_or(f64::NAN);
                if !(0.0..=max).contains(&x) {
                    let (code, side, relation, bound) = if x < 0.0 {
                        ("decimal_below_min_value", "below minimum", ">=", 0.0)
                    } else {
                        ("decimal_above_max_value", "above maximum", "<=", max)
                    };
                    return Err(BadRequest::at(
                        param,
                        Some(code),
                        format!(
                            "Invalid '{param}': decimal {side} value. Expected a value {relation} {bound}, but got {n} instead."
                        ),
                    ));
                }
            }
            Some(other) => return Err(invalid_type(param, "a decimal", other)),
        }
    }
    Ok(())
}

/// OpenAI's 400 for a token limit of 0: no completion fits in it (it had been answered 200
/// with an empty completion, where the real API refuses it).
fn zero_tokens(param: &str) -> BadRequest {
    BadRequest::at(
        param,
        Some("integer_below_min_value"),
        format!(
            "Invalid '{param}': integer below minimum value. Expected a value >= 1, but got 0 \
             instead."
        ),
    )
}

/// [`chat`] for a plain body: what [`chat_value`] reads from the same bytes, refused where
/// it refuses them (a plain body's content is a string and it has no sampling numbers, so
/// only its model and roles can be at fault).
fn plain(req: &mut Request, body: &PlainChat<'_>) -> Result<(), BadRequest> {
    check_model(body.model.as_deref())?;
    if body.max_tokens == Some(0) {
        return Err(zero_tokens("max_tokens"));
    }
    if body.max_completion_tokens == Some(0) {
        return Err(zero_tokens("max_completion_tokens"));
    }
    for (i, m) in body.messages.iter().enumerate() {
        check_role(i, &m.0.role)?;
    }
    // A plain message is a role and a content: a tool message among them names no call it
    // answers (the read of a value refuses it in the same words, `openai_tools`).
    if let Some(i) = body.messages.iter().position(|m| m.0.role == "tool") {
        return Err(super::openai_tools::no_tool_call_id(i));
    }
    req.body_hash = canonical_hash(body);
    req.model = body.model.as_deref().map(Arc::from);
    // The first message that names an item, wherever it stands: an agent puts a system
    // prompt, or the conversation so far, before the work it was given.
    req.workload_item = body
        .messages
        .iter()
        .filter_map(|m| m.0.content.as_deref())
        .find_map(workload_item);
    let chars: usize = body
        .messages
        .iter()
        .map(|m| m.0.content.as_deref().map_or(0, |c| c.chars().count()))
        .sum();
    req.prompt_tokens =
        u32::try_from(chars.div_ceil(4) + 4 * body.messages.len()).unwrap_or(u32::MAX);
    set_max_tokens(req, body.max_completion_tokens.or(body.max_tokens));
    req.stream = body.stream.unwrap_or(false);
    req.stream_usage = body
        .stream_options
        .as_ref()
        .is_some_and(|o| o.0.include_usage == Some(true));
    Ok(())
}

/// Fills a chat completion attempt from its body read as a `Value`.
fn chat_value(
    req: &mut Request,
    bytes: &[u8],
    accept_unknown: bool,
) -> Result<Option<Shape>, BadRequest> {
    let v = json_body(bytes)?;
    if !v.is_object() {
        return Err(BadRequest::new(format!(
            "the request body must be a JSON object, not {}",
            json_kind(&v)
        )));
    }
    unrecognized(&v, &RequestRoute::ChatCompletions, accept_unknown)?;
    if v.get("messages").is_none() {
        return Err(missing("messages"));
    }
    check_chat_value(&v)?;
    let body = ChatBody::deserialize(&v)
        .map_err(|e| BadRequest::new(format!("invalid chat completion request: {e}")))?;
    if body.messages.is_empty() {
        return Err(BadRequest::new(
            "`messages` must hold at least one message".into(),
        ));
    }
    req.body_hash = canonical_hash(&v);
    req.model = model(&v);
    // The list `ChatBody` read its messages from (its first field).
    let messages = field(&v, "messages", 0)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    req.prompt_tokens = prompt_tokens(messages);
    req.workload_item = messages
        .iter()
        .filter_map(|m| field(m, "content", 1))
        .find_map(workload_item_of);
    set_max_tokens(req, body.max_completion_tokens.or(body.max_tokens));
    req.stream = body.stream.unwrap_or(false);
    req.stream_usage = body.stream_options.is_some_and(|o| o.include_usage);
    shaped::openai(&v)
}

/// Fills an embeddings attempt from its body (`model`, and `input`: a string or a list of
/// strings): charged one token per 4 characters, no output. Returns how many inputs it
/// embeds (one vector each in the answer).
pub(crate) fn embeddings(
    req: &mut Request,
    bytes: &[u8],
    accept_unknown: bool,
) -> Result<usize, BadRequest> {
    let v = json_body(bytes)?;
    unrecognized(&v, &RequestRoute::Embeddings, accept_unknown)?;
    check_model_value(&v)?;
    let inputs = match v.get("input") {
        Some(Value::Array(items)) => items.len(),
        _ => 1,
    };
    let chars = match v.get("input") {
        Some(Value::String(s)) => s.chars().count(),
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map_or_else(|| json_len(i), |s| s.chars().count())
            })
            .sum(),
        _ => {
            return Err(BadRequest::new(
                "`input` must be a string or a non-empty list of strings".into(),
            ))
        }
    };
    req.body_hash = canonical_hash(&v);
    req.model = model(&v);
    req.prompt_tokens = u32::try_from(chars.div_ceil(4).max(1)).unwrap_or(u32::MAX);
    req.max_tokens = 0;
    Ok(inputs)
}

/// Fills a record write from its body (a JSON object; `external_ref` a string if present).
pub(crate) fn record(req: &mut Request, bytes: &[u8], max_field: usize) -> Result<(), BadRequest> {
    let v = json_body(bytes)?;
    let Value::Object(map) = &v else {
        return Err(BadRequest::new(
            "the record body must be a JSON object".into(),
        ));
    };
    req.external_ref = match map.get("external_ref") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            capped("`external_ref`", s, max_field)?;
            Some(s.clone())
        }
        Some(_) => return Err(BadRequest::new("`external_ref` must be a string".into())),
    };
    req.body_hash = canonical_hash(&v);
    Ok(())
}

/// `GET /v1/records?external_ref=..|idempotency_key=..`
pub(crate) fn find_by(
    query: &std::collections::BTreeMap<String, String>,
    max_field: usize,
) -> Result<FindBy, BadRequest> {
    for (name, value) in query {
        capped(&format!("query parameter `{name}`"), value, max_field)?;
    }
    match (query.get("external_ref"), query.get("idempotency_key")) {
        (Some(r), None) => Ok(FindBy::ExternalRef(r.clone())),
        (None, Some(k)) => Ok(FindBy::IdempotencyKey(IdempotencyKey::new(k))),
        _ => Err(BadRequest::new(
            "give exactly one query parameter: `external_ref=...` or `idempotency_key=...`".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An agent's turn counts what the model reads of it: a tool result's content (text or
    /// blocks), a call's input as JSON, a thought; an image counts none.
    #[test]
    fn an_agents_blocks_count_their_results_calls_and_thoughts() {
        let input = serde_json::json!({ "city": "Paris" });
        let blocks = serde_json::json!([
            { "type": "text", "text": "abcd" },
            { "type": "tool_use", "id": "t", "name": "get", "input": input },
            { "type": "tool_result", "tool_use_id": "t", "content": "12345678" },
            { "type": "tool_result", "tool_use_id": "t", "content": [{ "type": "text", "text": "xy" }] },
            { "type": "thinking", "thinking": "hmm", "signature": "s" },
            { "type": "image", "source": { "type": "base64", "data": "AAAA" } },
        ]);
        assert_eq!(text_chars(&blocks), 4 + input.to_string().len() + 8 + 2 + 3);
    }

    /// The item a workload prompt names reaches the attempt whichever way its body is
    /// read (plain, as a `Value`, with its content as a list of parts), and only from a
    /// prompt that starts `request N:`.
    #[test]
    fn a_prompt_names_its_workload_item() {
        let body = |content: &str| {
            format!(r#"{{"model":"m","messages":[{{"role":"user","content":{content}}}]}}"#)
        };
        let plain = body(r#""request 17: aaaa""#);
        assert_eq!(
            read_plain(plain.as_bytes()).unwrap().workload_item,
            Some(17)
        );
        assert_eq!(
            read_value(plain.as_bytes()).unwrap().workload_item,
            Some(17)
        );
        let parts = body(r#"[{"type":"text","text":"request 3: b"}]"#);
        assert_eq!(read_value(parts.as_bytes()).unwrap().workload_item, Some(3));
        // An image before the text, a system prompt or earlier turns before the prompt: an
        // agent's usual request names its item all the same.
        let image_first = body(
            r#"[{"type":"image_url","image_url":{"url":"data:,"}},{"type":"text","text":"request 4: c"}]"#,
        );
        assert_eq!(
            read_value(image_first.as_bytes()).unwrap().workload_item,
            Some(4)
        );
        let conversation = r#"{"model":"m","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"request 5: d"}]}"#;
        assert_eq!(
            read_plain(conversation.as_bytes()).unwrap().workload_item,
            Some(5)
        );
        assert_eq!(
            read_value(conversation.as_bytes()).unwrap().workload_item,
            Some(5)
        );
        assert_eq!(workload_item_in(conversation.as_bytes()), Some(5));
        for other in [
            r#""hi""#,
            r#""request : x""#,
            r#""request 1x: y""#,
            r#""a request 4: z""#,
            r#""request 99999999999999999999999: w""#,
        ] {
            let b = body(other);
            assert_eq!(
                read_value(b.as_bytes()).unwrap().workload_item,
                None,
                "{other}"
            );
        }
    }

    /// A token limit of 0 is refused as OpenAI refuses it, read either way.
    #[test]
    fn a_token_limit_of_zero_is_refused() {
        for body in [
            r#"{"model":"m","messages":[{"role":"user","content":"a"}],"max_tokens":0}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"a"}],"max_completion_tokens":0,"temperature":0.5}"#,
        ] {
            let mut req = Request::default();
            let e = chat(&mut req, body.as_bytes(), false).unwrap_err();
            assert_eq!(e.code, Some("integer_below_min_value"), "{body}");
        }
        let mut req = Request::default();
        let plain = r#"{"model":"m","messages":[{"role":"user","content":"a"}],"max_tokens":0}"#;
        assert!(
            plain_chat::read(plain.as_bytes()).is_some(),
            "the plain path reads it"
        );
        assert!(chat(&mut req, plain.as_bytes(), false).is_err());
    }

    /// `"stream": null` is a plain answer, as in OpenAI's API reference, where it was a 400.
    #[test]
    fn a_null_stream_is_no_stream() {
        let body = r#"{"model":"m","messages":[{"role":"user","content":"a"}],"stream":null}"#;
        let req = read_value(body.as_bytes()).expect("a null stream is valid");
        assert!(!req.stream && !req.stream_usage);
    }

    /// What a chat body gives an attempt, read the plain way (when the body is plain).
    fn read_plain(bytes: &[u8]) -> Option<Request> {
        let body = plain_chat::read(bytes).filter(|b| !b.messages.is_empty())?;
        let mut req = Request::default();
        plain(&mut req, &body).ok().map(|()| req)
    }

    /// What a chat body gives an attempt, read through a `Value` (when it is valid).
    fn read_value(bytes: &[u8]) -> Option<Request> {
        let mut req = Request::default();
        chat_value(&mut req, bytes, false).ok().map(|_| req)
    }

    fn same(a: &Request, b: &Request) -> bool {
        (
            a.body_hash,
            &a.model,
            a.prompt_tokens,
            a.max_tokens,
            a.stream,
            a.stream_usage,
        ) == (
            b.body_hash,
            &b.model,
            b.prompt_tokens,
            b.max_tokens,
            b.stream,
            b.stream_usage,
        )
    }

    /// `good` most of the time, now and then one of `odd` (values the field must not hold,
    /// or may hold but the plain shape refuses).
    fn mostly(
        good: &'static [&'static str],
        odd: &'static [&'static str],
    ) -> BoxedStrategy<String> {
        prop_oneof![
            6 => prop::sample::select(good).prop_map(str::to_string),
            1 => prop::sample::select(odd).prop_map(str::to_string),
        ]
        .boxed()
    }

    const TEXTS: &[&str] = &[
        "\"m\"",
        "\"user\"",
        "\"hello there\"",
        "\"\"",
        "\"\\u00e9\\\"\\n\\t\\/\"",
        "\"\u{e9}t\u{e9} \u{1f600}\"",
    ];
    const ODD: &[&str] = &["null", "16", "1.5", "true", "[]", "{}", "[\"a\"]"];

    /// `{"k": v, ...}` of `fields` (each a key and its value), in the order given, with
    /// `space` around every token; or, when `as_array`, the values alone as an array.
    fn write_object(fields: Vec<(&str, String)>, space: &str, as_array: bool) -> String {
        if as_array {
            let items: Vec<String> = fields.into_iter().map(|(_, v)| v).collect();
            return format!("[{}]", items.join(","));
        }
        let fields: Vec<String> = fields
            .into_iter()
            .map(|(k, v)| format!("{space}\"{k}\"{space}:{space}{v}"))
            .collect();
        format!("{{{}{space}}}", fields.join(","))
    }

    fn space() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec!["", "", " ", "\n  "])
    }

    /// A message: mostly a role and a text in either order, sometimes a field missing,
    /// `null`, of another type, unknown or repeated, or the message given as an array.
    fn message() -> impl Strategy<Value = String> {
        (
            mostly(TEXTS, ODD),
            prop::option::weighted(0.85, mostly(TEXTS, ODD)),
            prop::option::weighted(0.05, mostly(TEXTS, ODD)),
            any::<bool>(),
            space(),
            prop::bool::weighted(0.05),
            prop::bool::weighted(0.03),
        )
            .prop_map(|(role, content, name, swap, space, as_array, twice)| {
                let mut fields = vec![("role", role)];
                if let Some(c) = content {
                    fields.push(("content", c));
                }
                if let Some(n) = name {
                    fields.push(("name", n));
                }
                if swap {
                    fields.reverse();
                }
                if twice {
                    let again = fields[0].clone();
                    fields.push(again);
                }
                write_object(fields, space, as_array)
            })
    }

    /// A chat body: mostly of the plain shape, in any key order and spacing, with every way
    /// out of it mixed in now and then.
    fn body() -> impl Strategy<Value = String> {
        let messages = (
            prop::collection::vec(message(), 0..4),
            prop::bool::weighted(0.03),
        )
            .prop_map(|(m, null)| {
                if null {
                    "null".to_string()
                } else {
                    format!("[{}]", m.join(","))
                }
            });
        let options = (
            prop::option::weighted(0.8, mostly(&["true", "false"], ODD)),
            prop::bool::weighted(0.05),
            prop::bool::weighted(0.05),
            prop::bool::weighted(0.05),
        )
            .prop_map(|(usage, extra, as_array, null)| {
                if null {
                    return "null".to_string();
                }
                let mut fields: Vec<(&str, String)> = Vec::new();
                if let Some(u) = usage {
                    fields.push(("include_usage", u));
                }
                if extra {
                    fields.push(("extra", "1".to_string()));
                }
                write_object(fields, "", as_array)
            });
        let counts = || {
            mostly(
                &["0", "16", "256", "4294967295"],
                &["4294967296", "-1", "-0", "16.0", "1.5e1", "null", "\"16\""],
            )
        };
        (
            messages,
            prop::option::weighted(0.4, counts()),
            prop::option::weighted(0.4, counts()),
            prop::option::weighted(0.6, mostly(TEXTS, ODD)),
            prop::option::weighted(0.5, mostly(&["true", "false"], ODD)),
            prop::option::weighted(0.3, options),
            prop::option::weighted(0.4, mostly(TEXTS, ODD)),
            prop::option::weighted(0.05, mostly(&["0.2", "1"], ODD)),
            (
                prop::sample::subsequence((0..8usize).collect::<Vec<_>>(), 0..=8),
                any::<prop::sample::Index>(),
                prop::bool::weighted(0.03),
                prop::bool::weighted(0.03),
                space(),
            ),
        )
            .prop_map(
                |(
                    messages,
                    max_c,
                    max_t,
                    model,
                    stream,
                    options,
                    user,
                    temp,
                    (order, turn, twice, as_array, space),
                )| {
                    let mut fields: Vec<(&str, String)> = vec![("messages", messages)];
                    let rest = [
                        ("max_completion_tokens", max_c),
                        ("max_tokens", max_t),
                        ("model", model),
                        ("stream", stream),
                        ("stream_options", options),
                        ("user", user),
                        ("temperature", temp),
                    ];
                    fields.extend(rest.into_iter().filter_map(|(k, v)| Some((k, v?))));
                    // Any order: rotate, then take the drawn subsequence's order first.
                    let n = fields.len();
                    fields.rotate_left(turn.index(n));
                    let mut ordered: Vec<(&str, String)> = Vec::new();
                    for i in order.into_iter().filter(|&i| i < n) {
                        ordered.push(fields[i].clone());
                    }
                    for f in fields {
                        if !ordered.iter().any(|(k, _)| *k == f.0) {
                            ordered.push(f);
                        }
                    }
                    if twice {
                        let again = ordered[0].clone();
                        ordered.push(again);
                    }
                    write_object(ordered, space, as_array)
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]
        /// Wherever a body reads the plain way, it gives what the `Value` reading gives:
        /// the canonical hash, the model, the prompt and output tokens, the stream flags.
        #[test]
        fn a_plain_body_reads_as_its_value_does(text in body()) {
            if let Some(plain) = read_plain(text.as_bytes()) {
                let value = read_value(text.as_bytes());
                prop_assert!(value.is_some(), "plain but invalid: {text}");
                prop_assert!(same(&plain, &value.unwrap()), "{text}");
            }
        }
    }

    /// The bodies the harness, the HTTP benchmark and a bare client send are plain, so the
    /// property above is not vacuous, and they read as their `Value`s do.
    #[test]
    fn the_usual_bodies_read_the_plain_way() {
        let bodies = [
            r#"{"model":"m","messages":[{"role":"user","content":"hello there"}],"max_tokens":16}"#,
            r#"{"max_tokens":20,"messages":[{"content":"aaaa","role":"user"}],"model":"stampede-fake","stream":false,"user":"00000000000000ff"}"#,
            r#"{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"été"}],"model":"m","stream":true,"stream_options":{"include_usage":true}}"#,
            r#"{ "messages" : [ { "role" : "user" } ] , "max_completion_tokens" : 7, "model": "m" }"#,
        ];
        for text in bodies {
            let plain = read_plain(text.as_bytes()).expect(text);
            let value = read_value(text.as_bytes()).expect(text);
            assert!(same(&plain, &value), "{text}");
        }
        // And these are not: each would write another canonical text, or is not valid.
        for text in [
            r#"{"messages":[["hi","user"]]}"#,
            r#"{"messages":[{"role":"user","content":"a"}],"stream":null}"#,
            r#"{"messages":[{"role":"user","content":"a"}],"temperature":0.2}"#,
            r#"{"messages":[{"role":"user","content":"a"}],"model":"a","model":"b"}"#,
            r#"{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}"#,
            r#"{"messages":[]}"#,
            r#"[[{"role":"user"}]]"#,
        ] {
            assert!(read_plain(text.as_bytes()).is_none(), "{text}");
        }
    }

    #[test]
    fn the_streamed_hash_is_the_canonical_body_hash() {
        let long = "é\"\n".repeat(5_000);
        for v in [
            serde_json::json!({}),
            serde_json::json!({ "z": 1, "a": [1.5, null, true], "m": { "k": "v" } }),
            serde_json::json!({ "messages": [{ "role": "user", "content": long }] }),
        ] {
            assert_eq!(canonical_hash(&v), canonical_body_hash(&v));
        }
    }
}
