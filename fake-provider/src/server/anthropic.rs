//! The Anthropic Messages edge: `POST /v1/messages` in, the model's decision out in
//! Anthropic's wire format. The model decides exactly as for a chat completion (same
//! limits, faults, identity and journal; the route is journaled as `/v1/messages`); only
//! the rendering differs:
//!
//! - a message: `{id, type: "message", role, model, content: [{type: "text", text}],
//!   stop_reason, stop_sequence, usage: {input_tokens, output_tokens}}`;
//! - errors: `{type: "error", error: {type, message}}` with Anthropic's types
//!   (`rate_limit_error`, `overloaded_error` for 529 and 503, `api_error`, ...);
//! - headers: `request-id`, `retry-after` (not `retry-after-ms`, which Anthropic does not send), `x-should-retry`, and the
//!   scope's limits as `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`;
//! - streams: `message_start`, `content_block_start`, `ping`, one `content_block_delta`
//!   per token, `content_block_stop`, `message_delta` (stop reason and output tokens),
//!   `message_stop`; a stream error is an `error` event.
//!
//! The key comes from `x-api-key` (Anthropic's header) or `Authorization: Bearer`, from
//! `x-api-key` when both are sent, as the real API reads them (`parse::credential`). A request
//! without `anthropic-version`, or naming a version the API does not take, is refused as the
//! real API refuses it (see `anthropic_version`), after its key and before anything counts
//! it; so is a body the version it names does not take.

use super::anthropic_body::check_messages_body;
use super::anthropic_version;
use super::known_fields;
use super::parse::{self, BadRequest};
use super::routes::read_body;
use super::shaped::Shape;
use super::App;
use crate::model::RequestRoute;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, Response};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
struct MessagesBody {
    messages: Vec<Message>,
    /// Required of a Messages request (`check_messages_body` refuses one without it); a
    /// token count has none.
    #[serde(default)]
    max_tokens: u32,
    #[serde(default)]
    system: Value,
    #[serde(default)]
    stream: bool,
}

#[derive(Deserialize)]
struct Message {
    #[allow(dead_code)]
    role: String,
    #[serde(default)]
    content: Value,
}

/// Refuses `req` with the API's 400 for `e`, as a body the API refuses is: after the key
/// (an unknown one is told 401), journaled with a known key, and before any limit or fault
/// sees the request.
async fn refuse(
    app: &App,
    req: crate::model::Request,
    route: &RequestRoute,
    e: &BadRequest,
) -> Response<Body> {
    let refusal = error_response(&bad_request_body(e));
    let wire = super::respond::Wire::anthropic(route, false);
    super::routes::key_first(app, req, wire, refusal).await
}

/// `POST /v1/messages`.
pub(crate) async fn messages(State(app): State<App>, req: Request<Body>) -> Response<Body> {
    messages_or_count(app, req, RequestRoute::Messages).await
}

/// `POST /v1/messages/count_tokens`: the body of a Messages request without `max_tokens`,
/// answered `{"input_tokens": N}` (see `RequestRoute::CountTokens`).
pub(crate) async fn count_tokens(State(app): State<App>, req: Request<Body>) -> Response<Body> {
    messages_or_count(app, req, RequestRoute::CountTokens).await
}

/// A Messages request, or the count of its tokens (`route`): read and checked the same
/// way, but for `max_tokens`, which a count neither needs nor takes, and the answer.
async fn messages_or_count(app: App, req: Request<Body>, route: RequestRoute) -> Response<Body> {
    // The head is taken apart, not extracted: axum's `HeaderMap` extractor clones the map.
    let (head, body) = req.into_parts();
    let headers = &head.headers;
    let bytes = match read_body(body, &app.options).await {
        Ok(b) => b,
        Err(r) => return super::routes::body_refused(&app, headers, route, r).await,
    };
    // A token count does none of a workload item's work, whatever prompt it counts: it is
    // journaled as the client's own request, never as an attempt of the item.
    let counts_for_items = route == RequestRoute::Messages;
    let mut req = match parse::base_request(headers, app.options.max_field_bytes, route.clone()) {
        Ok(r) => r,
        Err(e) => return error_response(&bad_request_body(&e)),
    };
    // Refused as a body the API refuses is (see `refuse`).
    let version = match anthropic_version::version(headers) {
        Ok(v) => v,
        Err(e) => {
            req.workload_item = parse::workload_item_in(&bytes).filter(|_| counts_for_items);
            return refuse(&app, req, &route, &e).await;
        }
    };
    let read_as = ReadAs {
        accept_unknown: app.shared.accepts_unknown_fields(),
        interleaved_thinking: interleaves_thinking(headers),
        version,
    };
    let (v, parsed) = match read_messages(&bytes, &route, read_as) {
        Ok(read) => read,
        Err(e) => {
            req.workload_item = parse::workload_item_in(&bytes).filter(|_| counts_for_items);
            return refuse(&app, req, &route, &e).await;
        }
    };
    let chars: usize = parsed
        .messages
        .iter()
        .map(|m| parse::text_chars(&m.content))
        .sum::<usize>()
        + parse::text_chars(&parsed.system)
        // The tools' definitions are read by the model too, and counted by the real API.
        + v.get("tools").filter(|t| !t.is_null()).map_or(0, parse::json_len);
    req.prompt_tokens =
        u32::try_from(chars.div_ceil(4) + 4 * parsed.messages.len()).unwrap_or(u32::MAX);
    req.max_tokens = parsed.max_tokens;
    req.workload_item = parsed
        .messages
        .iter()
        .find_map(|m| parse::workload_item_of(&m.content))
        .filter(|_| counts_for_items);
    req.stream = parsed.stream;
    req.body_hash = parse::canonical_hash(&v);
    req.model = parse::model(&v);
    // A count's `tool_choice` is checked as a Messages request's is; its answer has no shape.
    let shape = match super::shaped::anthropic(&v) {
        Ok(shape) => shape.filter(|_| route == RequestRoute::Messages),
        Err(e) => return refuse(&app, req, &route, &e).await,
    };
    // Extended thinking opens a Messages answer with a `thinking` block (a count has none).
    let thinking = route == RequestRoute::Messages
        && v.pointer("/thinking/type")
            .and_then(Value::as_str)
            .is_some_and(super::anthropic_body::thinks);
    let wire = super::respond::Wire::anthropic(&route, thinking);
    super::routes::attempt_shaped(&app, req, wire, shape).await
}

/// Whether the request's `anthropic-beta` header (betas comma-separated, as the SDK joins
/// them) asks for interleaved thinking (`interleaved-thinking-2025-05-14`), under which
/// a thinking budget may pass `max_tokens`.
fn interleaves_thinking(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get_all("anthropic-beta")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|beta| beta.trim().starts_with("interleaved-thinking"))
}

/// How a Messages body is read: what the provider and the request's headers allow.
struct ReadAs {
    /// The provider takes fields the API does not know (`accept_unknown_fields`; see
    /// `known_fields`).
    accept_unknown: bool,
    /// The request's `anthropic-beta` asks for interleaved thinking (see
    /// [`interleaves_thinking`]).
    interleaved_thinking: bool,
    /// The `anthropic-version` the request names, one of `anthropic_version::VERSIONS`:
    /// the body is held to what that version takes.
    version: &'static str,
}

/// A Messages body (or a token count's, `route`) as JSON and in its shape, or Anthropic's
/// 400 in words: what the version it is read as does not take (see `anthropic_version`),
/// then what any version refuses (`check_messages_body`), then a field the API does not
/// know, unless the provider accepts those.
fn read_messages(
    bytes: &[u8],
    route: &RequestRoute,
    read_as: ReadAs,
) -> Result<(Value, MessagesBody), BadRequest> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| BadRequest::new(format!("malformed JSON body: {e}")))?;
    let max_tokens_required = route == &RequestRoute::Messages;
    anthropic_version::check_body(&v, read_as.version).map_err(BadRequest::new)?;
    check_messages_body(&v, max_tokens_required, read_as.interleaved_thinking)
        .map_err(BadRequest::new)?;
    if let Some(message) =
        known_fields::anthropic_refusal(&v, route).filter(|_| !read_as.accept_unknown)
    {
        return Err(BadRequest::new(message));
    }
    match MessagesBody::deserialize(&v) {
        Ok(b) if !b.messages.is_empty() => Ok((v, b)),
        Ok(_) => Err(BadRequest::new(
            "messages: at least one message is required".into(),
        )),
        Err(e) => Err(BadRequest::new(format!("invalid messages request: {e}"))),
    }
}

fn bad_request_body(e: &BadRequest) -> (u16, Vec<(String, String)>, Value) {
    (400, Vec::new(), error_body(400, &e.message))
}

/// Anthropic's error body for an HTTP status: `{type: "error", error: {type, message}}`,
/// the type the status has (see [`error_type`]).
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    json!({ "type": "error", "error": { "type": error_type(status), "message": message } })
}

fn error_response(parts: &(u16, Vec<(String, String)>, Value)) -> Response<Body> {
    super::respond::json_response(parts.0, &parts.1, &parts.2)
}

/// Anthropic's error type for an HTTP status.
fn error_type(status: u16) -> &'static str {
    match status {
        400 | 405 | 422 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        408 | 504 => "timeout_error",
        409 => "conflict_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        _ => "api_error",
    }
}

/// The model's headers in Anthropic's names: the request id, `retry-after` and
/// `x-should-retry` as they are, the scope's request and token limits as
/// `anthropic-ratelimit-*`; the `x-stampede-seq` of the attempt is kept. `retry-after-ms` is
/// left out: Anthropic sends `retry-after` alone (seconds, or the HTTP-date the scenario
/// asks for), and the SDK, which reads `retry-after-ms` first, never took the path the real
/// service sends it down.
pub(crate) fn headers(model: &[(String, String)]) -> Vec<(String, String)> {
    let mut out = Vec::with_capacity(model.len());
    for (name, value) in model {
        let renamed = match name.as_str() {
            "x-request-id" => Some("request-id"),
            "retry-after" | "x-should-retry" | "x-stampede-seq" => Some(name.as_str()),
            "x-ratelimit-limit-requests" => Some("anthropic-ratelimit-requests-limit"),
            "x-ratelimit-remaining-requests" => Some("anthropic-ratelimit-requests-remaining"),
            "x-ratelimit-limit-tokens" => Some("anthropic-ratelimit-tokens-limit"),
            "x-ratelimit-remaining-tokens" => Some("anthropic-ratelimit-tokens-remaining"),
            _ => None,
        };
        if let Some(n) = renamed {
            out.push((n.to_string(), value.clone()));
        }
        // Anthropic's resets are RFC 3339 times; the model gives a Go duration from now.
        let reset = match name.as_str() {
            "x-ratelimit-reset-requests" => Some("anthropic-ratelimit-requests-reset"),
            "x-ratelimit-reset-tokens" => Some("anthropic-ratelimit-tokens-reset"),
            _ => None,
        };
        if let (Some(n), Some(ms)) = (reset, go_duration_ms(value)) {
            let at = std::time::SystemTime::now() + std::time::Duration::from_millis(ms);
            out.push((n.to_string(), rfc3339(at)));
        }
    }
    out
}

/// Milliseconds of a Go duration as the model writes it (`1m0s`, `6.5s`, `120ms`).
fn go_duration_ms(text: &str) -> Option<u64> {
    let mut total = 0f64;
    let mut number = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let value: f64 = number.parse().ok()?;
        number.clear();
        let unit = match (c, chars.peek()) {
            ('m', Some('s')) => {
                chars.next();
                1.0
            }
            ('h', _) => 3_600_000.0,
            ('m', _) => 60_000.0,
            ('s', _) => 1_000.0,
            _ => return None,
        };
        total += value * unit;
    }
    number.is_empty().then_some(total.ceil() as u64)
}

/// A UTC time as RFC 3339 with seconds (`2026-11-30T10:00:00Z`).
fn rfc3339(at: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string()
}

/// A non-streamed answer: a message for a 200, an Anthropic error otherwise.
pub(crate) fn answer(
    seq: u64,
    status: u16,
    model_headers: &[(String, String)],
    body: &Value,
    (usage, shape, thinking): (Option<(u32, u32)>, Option<&Shape>, bool),
) -> Response<Body> {
    let headers = headers(model_headers);
    if status == 200 {
        let message = message(seq, body, usage, (shape, thinking));
        super::respond::json_response(200, &headers, &message)
    } else {
        let message = body
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("error");
        let mut err = error_body(status, message);
        // The body names its request as the `request-id` header does.
        err["request_id"] = Value::String(super::respond::id("req", seq));
        super::respond::json_response(status, &headers, &err)
    }
}

fn stop_reason(body: &Value) -> &'static str {
    match body
        .pointer("/choices/0/finish_reason")
        .and_then(Value::as_str)
    {
        Some("length") => "max_tokens",
        Some("tool_calls") => "tool_use",
        _ => "end_turn",
    }
}

/// The `tool_use` block that calls `name` with `arguments` (JSON text; the block holds
/// them parsed, or, in a stream's start, empty).
fn tool_use(seq: u64, name: &str, input: Value) -> Value {
    json!({ "type": "tool_use", "id": super::respond::id("toolu", seq), "name": name, "input": input })
}

/// What an answer's `thinking` block says it thought (extended thinking).
const THOUGHT: &str = "Thinking it over.";

/// The `signature` of answer `seq`'s `thinking` block: opaque to clients, which send the
/// block back whole on their next turn (tool use with thinking asks that of them).
fn signature(seq: u64) -> String {
    super::respond::id("sig", seq)
}

/// The `thinking` block that opens an answer with extended thinking on.
fn thinking_block(seq: u64) -> Value {
    json!({ "type": "thinking", "thinking": THOUGHT, "signature": signature(seq) })
}

fn message(
    seq: u64,
    body: &Value,
    usage: Option<(u32, u32)>,
    (shape, thinking): (Option<&Shape>, bool),
) -> Value {
    let (input, output) = usage.unwrap_or((0, 0));
    let answer = match shape {
        Some(Shape::Tool { name, arguments }) => {
            let input = serde_json::from_str(arguments).unwrap_or_else(|_| json!({}));
            tool_use(seq, name, input)
        }
        _ => {
            let text = body
                .pointer("/choices/0/message/content")
                .and_then(Value::as_str)
                .unwrap_or("stampede fake message");
            json!({ "type": "text", "text": text })
        }
    };
    let content = if thinking {
        json!([thinking_block(seq), answer])
    } else {
        json!([answer])
    };
    json!({
        "id": super::respond::id("msg", seq),
        "type": "message",
        "role": "assistant",
        "model": super::respond::answered_by(body),
        "content": content,
        "stop_reason": stop_reason(body),
        "stop_sequence": null,
        "usage": usage_of(input, output),
    })
}

/// A message's `usage` as the real API fills it: the cache counts (none is cached here) and
/// the service tier too, which clients that add the cache counts read as numbers.
fn usage_of(input: u32, output: u32) -> Value {
    json!({
        "input_tokens": input,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output,
        "service_tier": "standard",
    })
}

fn event(name: &str, data: Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// How many events of a stream come before its first answer delta (they go out at once,
/// unpaced): `message_start`, `content_block_start` and `ping`; with extended thinking the
/// whole `thinking` block before them too (its start, its thought, its signature, its
/// stop).
pub(crate) fn lead_events(thinking: bool) -> u32 {
    if thinking {
        7
    } else {
        3
    }
}

/// A streamed message: `chunks` text deltas (a forced tool call's: its input as JSON in
/// `chunks` pieces), after a whole `thinking` block when `thinking`; when `complete`, the
/// closing events too. The first [`lead_events`] events lead the deltas.
pub(crate) fn sse_frames(
    seq: u64,
    body: &Value,
    usage: Option<(u32, u32)>,
    (chunks, complete): (u32, bool),
    (shape, thinking): (Option<&Shape>, bool),
) -> super::respond::Frames {
    let (input, output) = usage.unwrap_or((0, chunks));
    let mut start = message(seq, body, Some((input, 1)), (None, false));
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let mut out = Vec::with_capacity(lead_events(thinking) as usize);
    out.push(event(
        "message_start",
        json!({ "type": "message_start", "message": start }),
    ));
    // The answer's block follows the thinking block, if any.
    let index = u32::from(thinking);
    if thinking {
        let block = json!({ "type": "thinking", "thinking": "", "signature": "" });
        let deltas = [
            json!({ "type": "thinking_delta", "thinking": THOUGHT }),
            json!({ "type": "signature_delta", "signature": signature(seq) }),
        ];
        out.push(event(
            "content_block_start",
            json!({ "type": "content_block_start", "index": 0, "content_block": block }),
        ));
        for delta in deltas {
            out.push(event(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": 0, "delta": delta }),
            ));
        }
        out.push(event(
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": 0 }),
        ));
    }
    let block = match shape {
        Some(Shape::Tool { name, .. }) => tool_use(seq, name, json!({})),
        _ => json!({ "type": "text", "text": "" }),
    };
    out.push(event(
        "content_block_start",
        json!({ "type": "content_block_start", "index": index, "content_block": block }),
    ));
    out.push(event("ping", json!({ "type": "ping" })));
    // The deltas are made as the client reads them (there may be billions).
    let shape = shape.cloned();
    let deltas = (0..chunks).map(move |i| {
        let delta = match &shape {
            Some(Shape::Tool { arguments, .. }) => json!({ "type": "input_json_delta", "partial_json": super::shaped::piece(arguments, i, chunks) }),
            Some(Shape::Json(text)) => json!({ "type": "text_delta", "text": super::shaped::piece(text, i, chunks) }),
            None if i == 0 => json!({ "type": "text_delta", "text": "tok" }),
            None => json!({ "type": "text_delta", "text": " tok" }),
        };
        event(
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": index, "delta": delta }),
        )
    });
    let mut tail = Vec::with_capacity(3);
    if complete {
        tail.push(event(
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": index }),
        ));
        tail.push(event(
            "message_delta",
            json!({ "type": "message_delta", "delta": { "stop_reason": stop_reason(body), "stop_sequence": null }, "usage": { "input_tokens": input, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": output } }),
        ));
        tail.push(event("message_stop", json!({ "type": "message_stop" })));
    }
    Box::new(out.into_iter().chain(deltas).chain(tail))
}

/// The `error` event that ends a stream the provider broke off.
pub(crate) fn sse_error() -> Bytes {
    event(
        "error",
        json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_read_back_in_ms() {
        assert_eq!(go_duration_ms("1m0s"), Some(60_000));
        assert_eq!(go_duration_ms("6.5s"), Some(6_500));
        assert_eq!(go_duration_ms("120ms"), Some(120));
        assert_eq!(go_duration_ms("1h2m3s"), Some(3_723_000));
        assert_eq!(go_duration_ms("soon"), None);
    }

    #[test]
    fn rfc3339_has_the_shape_clients_parse() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        assert_eq!(rfc3339(t), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn errors_take_anthropics_types() {
        assert_eq!(error_type(429), "rate_limit_error");
        assert_eq!(error_type(529), "overloaded_error");
        assert_eq!(error_type(401), "authentication_error");
        assert_eq!(error_type(500), "api_error");
        // The SDK's `ErrorType` names these three, which had been told `api_error` and
        // `invalid_request_error`.
        assert_eq!(error_type(402), "billing_error");
        assert_eq!(error_type(409), "conflict_error");
        assert_eq!(error_type(504), "timeout_error");
    }

    #[test]
    fn a_stream_has_the_event_sequence() {
        let frames = sse_frames(7, &json!({}), Some((10, 3)), (3, true), (None, false));
        let names: Vec<String> = frames
            .map(|f| {
                let t = std::str::from_utf8(&f).unwrap();
                t.lines()
                    .next()
                    .unwrap()
                    .trim_start_matches("event: ")
                    .to_string()
            })
            .collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
    }

    /// With extended thinking on, an answer opens with a whole `thinking` block (its
    /// thought and its signature), the answer's block at index 1, as the real API answers:
    /// a client reading `content[0].text` had passed here and failed in production.
    #[test]
    fn thinking_opens_the_answer_with_a_thinking_block() {
        let plain = message(7, &json!({}), Some((10, 3)), (None, true));
        let content = plain["content"].as_array().unwrap();
        assert_eq!(content.len(), 2, "{plain}");
        assert_eq!(content[0]["type"], "thinking");
        assert_eq!(content[0]["thinking"], THOUGHT);
        assert_eq!(content[0]["signature"], "sig_000000000007");
        assert_eq!(content[1]["type"], "text");
        let events: Vec<Value> = sse_frames(7, &json!({}), Some((10, 3)), (3, true), (None, true))
            .map(|f| {
                let t = std::str::from_utf8(&f).unwrap().to_string();
                serde_json::from_str(t.split_once("\ndata: ").unwrap().1.trim()).unwrap()
            })
            .collect();
        let kinds: Vec<String> = events
            .iter()
            .map(|e| match e["delta"]["type"].as_str() {
                Some(delta) => format!("{}:{}", e["index"], delta),
                None => e["type"].as_str().unwrap().to_string(),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "message_start",
                "content_block_start",
                "0:thinking_delta",
                "0:signature_delta",
                "content_block_stop",
                "content_block_start",
                "ping",
                "1:text_delta",
                "1:text_delta",
                "1:text_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        // The deltas come after the lead, as the pacing counts it.
        assert_eq!(kinds[lead_events(true) as usize], "1:text_delta");
        assert_eq!(events[5]["index"], 1);
        assert_eq!(events[10]["index"], 1);
    }

    /// A 429's wait goes out as `retry-after` alone, as Anthropic sends it: with
    /// `retry-after-ms` beside it the SDK read that first and never parsed `retry-after`,
    /// seconds or an HTTP-date, the path the real service sends it down.
    #[test]
    fn a_wait_is_retry_after_alone() {
        let model = [
            ("retry-after".to_string(), "3".to_string()),
            ("retry-after-ms".to_string(), "2500".to_string()),
            ("x-request-id".to_string(), "req_1".to_string()),
        ];
        let names: Vec<String> = headers(&model).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["retry-after", "request-id"]);
    }
}
