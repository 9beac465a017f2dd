//! The OpenAI Responses edge: `POST /v1/responses` in, the model's decision out in the
//! Responses API's wire format. The model decides exactly as for a chat completion (same
//! limits, faults, identity, idempotency and journal; the route is journaled as
//! `/v1/responses`, and fault rules name it `responses`); only the rendering differs:
//!
//! - a 200: a `response` object whose `output` is one assistant `message` with one
//!   `output_text` part, `status` `completed` (or `incomplete`, with
//!   `incomplete_details.reason` `max_output_tokens`, when the answer used them all), and
//!   `usage` as `{input_tokens, output_tokens, total_tokens}` with their details;
//! - errors: OpenAI's `{error: {message, type, param, code}}` and headers, as for a chat
//!   completion;
//! - streams: `response.created`, `response.in_progress`, `response.output_item.added`,
//!   `response.content_part.added`, one `response.output_text.delta` per token (a shaped
//!   answer's: per piece of its text, see below), then
//!   `response.output_text.done`, `response.content_part.done`,
//!   `response.output_item.done` and `response.completed` (or `response.incomplete`), every
//!   event with its `sequence_number`; a stream error is an `error` event.
//!
//! A 200 takes the shape the request asks for, as on the chat route (see `shaped`): a
//! forced call of a function tool (`tool_choice` `required` or naming it) is a
//! `function_call` output item, streamed as `response.function_call_arguments.delta`
//! events; `text.format` `json_schema` (the SDK's `responses.parse`) or `json_object`
//! makes the text an instance of the schema.
//!
//! The body's `input` (text, or a list of items), `instructions`, `max_output_tokens`
//! (at least 16, as the real API requires), `stream`, `tools`, `tool_choice` and
//! `text.format` are read; every other field the API takes is accepted and changes nothing
//! (`previous_response_id` is not looked up: a conversation's earlier turns are not
//! counted in its input, and an output answering a call made in them is taken; see
//! `openai_tools`). The settings a `response` echoes are the request's where it
//! sent them (see [`echo`]).

use super::known_fields;
use super::parse::{self, BadRequest};
// Ids are the answer's completion's (the caller passes its seq, so a replay says the same
// ids again).
use super::respond::{id, Frames, Wire};
use super::routes::{self, read_body};
use super::shaped::{self, Shape};
use super::App;
use crate::model::{Request, RequestRoute};
use axum::body::Body;
use axum::extract::State;
use axum::http::{Request as HttpRequest, Response};
use bytes::Bytes;
use serde_json::{json, Value};

/// The least `max_output_tokens` the real API takes.
const MIN_OUTPUT_TOKENS: u64 = 16;

/// The roles an input message may have.
const ROLES: [&str; 4] = ["user", "assistant", "system", "developer"];

/// `POST /v1/responses`.
pub(crate) async fn responses(State(app): State<App>, req: HttpRequest<Body>) -> Response<Body> {
    // The head is taken apart, not extracted: axum's `HeaderMap` extractor clones the map.
    let (head, body) = req.into_parts();
    let headers = &head.headers;
    let bytes = match read_body(body, &app.options).await {
        Ok(b) => b,
        Err(r) => return routes::body_refused(&app, headers, RequestRoute::Responses, r).await,
    };
    let mut req = match parse::base_request(
        headers,
        app.options.max_field_bytes,
        RequestRoute::Responses,
    ) {
        Ok(r) => r,
        Err(e) => return routes::bad_request(&e),
    };
    match read(&mut req, &bytes, app.shared.accepts_unknown_fields()) {
        Ok((shape, echo)) => {
            let echo = Some(std::sync::Arc::new(echo));
            routes::attempt_echoing(&app, req, Wire::Responses, shape, echo).await
        }
        // `read` named the workload item as soon as the body was JSON (one that is not
        // names none).
        Err(e) => routes::key_first(&app, req, Wire::Responses, routes::bad_request(&e)).await,
    }
}

/// Fills a Responses attempt from its body, or refuses it in OpenAI's words: a field the
/// API does not take (unless `accept_unknown`), no model, an `input` that is neither text
/// nor a list of items, an input message with a role the API does not know or content of
/// the wrong type, a `max_output_tokens` under 16 or past `u32`, a `temperature` or `top_p`
/// out of range, a forced call or an output format it cannot serve (see
/// `shaped::responses`). Returns the shape its answer must have, and what it echoes.
fn read(
    req: &mut Request,
    bytes: &[u8],
    accept_unknown: bool,
) -> Result<(Option<Shape>, Value), BadRequest> {
    let v = parse::json_body(bytes)?;
    // Named before anything is checked: a client that re-sends a refused body for an item
    // is re-sending that item.
    req.workload_item = workload_item(&v);
    if !v.is_object() {
        return Err(BadRequest::new(format!(
            "the request body must be a JSON object, not {}",
            parse::json_kind(&v)
        )));
    }
    if !accept_unknown {
        if let Some(name) = known_fields::first_unknown(&v, &RequestRoute::Responses) {
            return Err(unknown_parameter(name));
        }
    }
    parse::check_sampling(&v)?;
    // A stored prompt (`prompt`) may name the model for the request.
    if v.get("prompt").map_or(true, Value::is_null) {
        parse::check_model_value(&v)?;
    }
    let (input_chars, items) = input_size(v.get("input"))?;
    if let Some(Value::Array(input)) = v.get("input") {
        // A continued conversation's calls may be in its stored turns, which are not kept:
        // an earlier response, a conversation, or stored items the input refers to.
        let continued = ["previous_response_id", "conversation"]
            .iter()
            .any(|name| v.get(*name).is_some_and(|value| !value.is_null()))
            || input
                .iter()
                .any(|item| item.get("type").and_then(Value::as_str) == Some("item_reference"));
        super::openai_tools::function_call_pairing(input, continued)?;
    }
    let instructions = match v.get("instructions") {
        None | Some(Value::Null) => 0,
        Some(Value::String(s)) => s.chars().count(),
        Some(other) => return Err(parse::invalid_type("instructions", "a string", other)),
    };
    let named = match v.get("max_output_tokens") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => {
            let asked = n.as_u64().unwrap_or(0);
            if asked < MIN_OUTPUT_TOKENS {
                return Err(BadRequest::at(
                    "max_output_tokens",
                    Some("integer_below_min_value"),
                    format!(
                        "Invalid 'max_output_tokens': integer below minimum value. Expected a \
                         value >= {MIN_OUTPUT_TOKENS}, but got {n} instead."
                    ),
                ));
            }
            Some(u32::try_from(asked).map_err(|_| {
                BadRequest::at(
                    "max_output_tokens",
                    Some("integer_above_max_value"),
                    format!(
                        "Invalid 'max_output_tokens': integer above maximum value. Expected a \
                         value <= {}, but got {n} instead.",
                        u32::MAX
                    ),
                )
            })?)
        }
        Some(other) => {
            return Err(parse::invalid_type(
                "max_output_tokens",
                "an integer",
                other,
            ))
        }
    };
    parse::set_max_tokens(req, named);
    req.stream = match v.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(parse::invalid_type("stream", "a boolean", other)),
    };
    // Four characters a token, and four tokens an item, as for a chat message.
    req.prompt_tokens =
        u32::try_from((input_chars + instructions).div_ceil(4) + 4 * items).unwrap_or(u32::MAX);
    req.body_hash = parse::canonical_hash(&v);
    req.model = parse::model(&v);
    Ok((shaped::responses(&v)?, echo(&v)))
}

/// The settings of the request the API echoes in its `response` (each as sent, when sent
/// with a type the SDK takes): `instructions` (text), `max_output_tokens`, `metadata`,
/// `parallel_tool_calls`, `previous_response_id`, `temperature`, `top_p`, `tool_choice`,
/// `truncation` and `user`. `tools`, `text` and `reasoning` are not echoed (a tool the
/// provider does not check whole could fail the SDK's validation of the echo, where the
/// real API would have refused it first).
fn echo(v: &Value) -> Value {
    let mut echoed = serde_json::Map::new();
    let mut keep = |name: &str, ok: fn(&Value) -> bool| {
        if let Some(value) = v.get(name).filter(|value| ok(value)) {
            echoed.insert(name.to_string(), value.clone());
        }
    };
    keep("instructions", Value::is_string);
    keep("max_output_tokens", Value::is_u64);
    keep("metadata", Value::is_object);
    keep("parallel_tool_calls", Value::is_boolean);
    keep("previous_response_id", Value::is_string);
    keep("temperature", Value::is_number);
    keep("top_p", Value::is_number);
    keep("user", Value::is_string);
    keep("truncation", |t| {
        matches!(t.as_str(), Some("auto" | "disabled"))
    });
    keep("tool_choice", |c| match c {
        Value::String(s) => matches!(s.as_str(), "none" | "auto" | "required"),
        Value::Object(_) => {
            c.get("type").and_then(Value::as_str) == Some("function")
                && c.get("name").is_some_and(Value::is_string)
        }
        _ => false,
    });
    Value::Object(echoed)
}

/// The Responses API's 400 for a body field it does not take (its words differ from chat
/// completions'): `response_format`, chat's name for what moved to `text.format`, is told
/// where it went.
fn unknown_parameter(name: &str) -> BadRequest {
    if name == "response_format" {
        return BadRequest::at(
            name,
            Some("unsupported_parameter"),
            "Unsupported parameter: 'response_format'. In the Responses API, this parameter \
             has moved to 'text.format'. Try again with the new parameter.",
        );
    }
    BadRequest::at(
        name,
        Some("unknown_parameter"),
        format!("Unknown parameter: '{name}'."),
    )
}

/// Characters of text in `input` and how many items it holds (text is one), or the 400 of
/// an input the API refuses.
fn input_size(input: Option<&Value>) -> Result<(usize, usize), BadRequest> {
    let items = match input {
        None | Some(Value::Null) => return Ok((0, 0)),
        Some(Value::String(s)) => return Ok((s.chars().count(), 1)),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(parse::invalid_type(
                "input",
                "one of a string or array of input items",
                other,
            ))
        }
    };
    let mut chars = 0;
    for (i, item) in items.iter().enumerate() {
        let Value::Object(fields) = item else {
            return Err(parse::invalid_type(
                &format!("input[{i}]"),
                "an object",
                item,
            ));
        };
        if let Some(role) = fields.get("role") {
            match role.as_str() {
                Some(r) if ROLES.contains(&r) => {}
                Some(r) => {
                    return Err(BadRequest::at(
                        format!("input[{i}].role"),
                        Some("invalid_value"),
                        format!(
                            "Invalid value: '{r}'. Supported values are: 'user', 'assistant', \
                             'system', and 'developer'."
                        ),
                    ))
                }
                None => {
                    return Err(parse::invalid_type(
                        &format!("input[{i}].role"),
                        "a string",
                        role,
                    ))
                }
            }
        }
        check_content(i, fields.get("content"))?;
        // A message's content, a tool call's arguments, a tool's output.
        chars += ["content", "arguments", "output"]
            .iter()
            .filter_map(|name| fields.get(*name))
            .map(parse::text_chars)
            .sum::<usize>();
    }
    Ok((chars, items.len()))
}

/// The 400 of input item `i`'s `content` unless it is text or a list of parts (objects,
/// whose `text`, where they have one, is text).
fn check_content(i: usize, content: Option<&Value>) -> Result<(), BadRequest> {
    let parts = match content {
        None | Some(Value::Null | Value::String(_)) => return Ok(()),
        Some(Value::Array(parts)) => parts,
        Some(other) => {
            return Err(parse::invalid_type(
                &format!("input[{i}].content"),
                "one of a string or array of input content parts",
                other,
            ))
        }
    };
    for (j, part) in parts.iter().enumerate() {
        let at = format!("input[{i}].content[{j}]");
        match part {
            Value::Object(fields) => match fields.get("text") {
                None | Some(Value::String(_)) => {}
                Some(other) => {
                    return Err(parse::invalid_type(
                        &format!("{at}.text"),
                        "a string",
                        other,
                    ))
                }
            },
            other => return Err(parse::invalid_type(&at, "an object", other)),
        }
    }
    Ok(())
}

/// The workload item the body's input names: its text, or the first item whose content
/// names one (read from any body, even one refused).
fn workload_item(v: &Value) -> Option<u64> {
    match v.get("input")? {
        text @ Value::String(_) => parse::workload_item_of(text),
        Value::Array(items) => items
            .iter()
            .filter_map(|item| item.get("content"))
            .find_map(parse::workload_item_of),
        _ => None,
    }
}

/// What a 200 says, read from the chat completion the model's answer makes (see
/// `CompletionBody`, and `shaped::apply` for a JSON shape's text): `created`, the model
/// that answered, its text and whether it used every output token.
struct Said<'a> {
    created: &'a Value,
    model: &'a str,
    text: &'a str,
    incomplete: bool,
}

impl<'a> Said<'a> {
    fn of(body: &'a Value) -> Said<'a> {
        Said {
            created: body.get("created").unwrap_or(&Value::Null),
            model: super::respond::answered_by(body),
            text: body
                .pointer("/choices/0/message/content")
                .and_then(Value::as_str)
                .unwrap_or("stampede fake response"),
            incomplete: body
                .pointer("/choices/0/finish_reason")
                .and_then(Value::as_str)
                == Some("length"),
        }
    }

    fn created(&self) -> Value {
        match self.created {
            Value::Null => json!(super::respond::unix_now()),
            c => c.clone(),
        }
    }
}

/// `status` of a response and of its message.
fn status_of(incomplete: bool) -> &'static str {
    if incomplete {
        "incomplete"
    } else {
        "completed"
    }
}

/// The usage object of `(input, output)` tokens.
fn usage_value((input, output): (u32, u32)) -> Value {
    json!({
        "input_tokens": input,
        "input_tokens_details": { "cached_tokens": 0, "cache_write_tokens": 0 },
        "output_tokens": output,
        "output_tokens_details": { "reasoning_tokens": 0 },
        // In u64: both may be near u32::MAX.
        "total_tokens": u64::from(input) + u64::from(output),
    })
}

/// The assistant message holding `text`, `status` `in_progress`, `completed` or
/// `incomplete`; `None` for no content part yet.
fn message(id: &str, status: &str, text: Option<&str>) -> Value {
    let content = match text {
        Some(text) => json!([output_text(text)]),
        None => json!([]),
    };
    json!({ "type": "message", "id": id, "status": status, "role": "assistant", "content": content })
}

fn output_text(text: &str) -> Value {
    json!({ "type": "output_text", "text": text, "annotations": [], "logprobs": [] })
}

/// A `response` object: `status`, `output` and `usage` as given, and the settings the API
/// echoes: the request's own where `echo` (see [`echo`]) holds them, else the API's
/// defaults (`tools` and `text` always at their defaults).
fn response(
    said: &Said<'_>,
    seq: u64,
    status: &str,
    output: Value,
    (usage, echo): (Option<(u32, u32)>, Option<&Value>),
) -> Value {
    let incomplete_details = if status == "incomplete" {
        json!({ "reason": "max_output_tokens" })
    } else {
        Value::Null
    };
    let mut out = json!({
        "id": id("resp", seq),
        "object": "response",
        "created_at": said.created(),
        "status": status,
        "background": false,
        "error": null,
        "incomplete_details": incomplete_details,
        "instructions": null,
        "max_output_tokens": null,
        "metadata": {},
        "model": said.model,
        "output": output,
        "parallel_tool_calls": true,
        "previous_response_id": null,
        "reasoning": { "effort": null, "summary": null },
        "store": true,
        "temperature": 1.0,
        "text": { "format": { "type": "text" } },
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage.map(usage_value),
        "user": null,
    });
    if let (Value::Object(out), Some(Value::Object(echoed))) = (&mut out, echo) {
        for (name, value) in echoed {
            out.insert(name.clone(), value.clone());
        }
    }
    out
}

/// The `function_call` output item that calls `name` with `arguments`.
fn function_call(seq: u64, (name, arguments): (&str, &str), status: &str) -> Value {
    json!({ "type": "function_call", "id": id("fc", seq), "call_id": id("call", seq),
            "name": name, "arguments": arguments, "status": status })
}

/// A non-streamed 200: the completed (or incomplete) response, its output the message, or
/// the function call `shape` forces (a JSON shape is the message's text: `body` has it,
/// see `shaped::apply`).
pub(crate) fn answer(
    seq: u64,
    body: &Value,
    (usage, echo): (Option<(u32, u32)>, Option<&Value>),
    shape: Option<&Shape>,
) -> Value {
    let said = Said::of(body);
    let status = status_of(said.incomplete);
    let output = match shape {
        Some(Shape::Tool { name, arguments }) => function_call(seq, (name, arguments), status),
        _ => message(&id("msg", seq), status, Some(said.text)),
    };
    response(&said, seq, status, json!([output]), (usage, echo))
}

/// Events a stream sends before its first delta: the response's two, its output item's,
/// and a message's content part (a function call has none).
pub(crate) fn head_events(shape: Option<&Shape>) -> u32 {
    match shape {
        Some(Shape::Tool { .. }) => 3,
        _ => 4,
    }
}

/// Tokens of the streamed text written in one frame of a closing event.
const TEXT_FRAME_TOKENS: u32 = 8_192;

/// Stands for the streamed text in a closing event while it is serialized; the text goes
/// out in frames in its place (it may be gigabytes: one token a delta, billions of them).
const TEXT_HOLE: &str = "{stampede:streamed-text}";

fn event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// The streamed text of `chunks` deltas (`tok`, then ` tok` each), made in frames as it is
/// read.
fn text_frames(chunks: u32) -> impl Iterator<Item = Bytes> + Send {
    (0..chunks.div_ceil(TEXT_FRAME_TOKENS)).map(move |frame| {
        let first = frame * TEXT_FRAME_TOKENS;
        let last = first.saturating_add(TEXT_FRAME_TOKENS).min(chunks);
        let mut text = String::with_capacity(4 * (last - first) as usize);
        for i in first..last {
            text.push_str(if i == 0 { "tok" } else { " tok" });
        }
        Bytes::from(text)
    })
}

/// Event `name` whose data is `data`; with `hole`, the streamed text of that many deltas
/// in place of [`TEXT_HOLE`], in frames.
fn closing(name: &str, data: &Value, hole: Option<u32>) -> Frames {
    let Some(chunks) = hole else {
        return Box::new(std::iter::once(event(name, data)));
    };
    let whole = format!("event: {name}\ndata: {data}\n\n");
    let (before, after) = whole
        .split_once(TEXT_HOLE)
        .expect("the event holds the text's place");
    let (before, after) = (
        Bytes::from(before.to_string()),
        Bytes::from(after.to_string()),
    );
    Box::new(
        std::iter::once(before)
            .chain(text_frames(chunks))
            .chain(std::iter::once(after)),
    )
}

/// A streamed response: [`head_events`] events, `chunks` deltas and, when `complete`, the
/// closing events with the whole output, each numbered in order. The deltas are the text's
/// tokens, or the `chunks` pieces of the JSON text or of the forced call's arguments `shape`
/// holds (a broken-off stream's caller takes the frames before its last piece: see
/// `respond::broken_frames`).
pub(crate) fn sse_frames(
    seq: u64,
    body: &Value,
    (usage, echo): (Option<(u32, u32)>, Option<&Value>),
    (chunks, complete): (u32, bool),
    shape: Option<&Shape>,
) -> Frames {
    let said = Said::of(body);
    let head_count = head_events(shape);
    let started = response(&said, seq, "in_progress", json!([]), (None, echo));
    let item_id = match shape {
        Some(Shape::Tool { .. }) => id("fc", seq),
        _ => id("msg", seq),
    };
    let mut head = vec![
        event(
            "response.created",
            &json!({ "type": "response.created", "sequence_number": 0, "response": started }),
        ),
        event(
            "response.in_progress",
            &json!({ "type": "response.in_progress", "sequence_number": 1, "response": started }),
        ),
    ];
    match shape {
        Some(Shape::Tool { name, .. }) => head.push(event(
            "response.output_item.added",
            &json!({ "type": "response.output_item.added", "sequence_number": 2, "output_index": 0,
                     "item": function_call(seq, (name, ""), "in_progress") }),
        )),
        _ => {
            head.push(event(
                "response.output_item.added",
                &json!({ "type": "response.output_item.added", "sequence_number": 2, "output_index": 0,
                         "item": message(&item_id, "in_progress", None) }),
            ));
            head.push(event(
                "response.content_part.added",
                &json!({ "type": "response.content_part.added", "sequence_number": 3, "item_id": item_id,
                         "output_index": 0, "content_index": 0, "part": output_text("") }),
            ));
        }
    }
    debug_assert_eq!(head.len(), head_count as usize);

    let delta_item = item_id.clone();
    let delta_shape = shape.cloned();
    // The deltas are made as the client reads them (there may be billions).
    let deltas = (0..chunks).map(move |i| {
        let number = u64::from(head_count) + u64::from(i);
        let data = match &delta_shape {
            Some(Shape::Tool { arguments, .. }) => json!({
                "type": "response.function_call_arguments.delta", "sequence_number": number,
                "item_id": delta_item, "output_index": 0,
                "delta": shaped::piece(arguments, i, chunks) }),
            text => {
                let delta = match text {
                    Some(Shape::Json(text)) => shaped::piece(text, i, chunks),
                    _ if i == 0 => "tok",
                    _ => " tok",
                };
                json!({ "type": "response.output_text.delta", "sequence_number": number,
                        "item_id": delta_item, "output_index": 0, "content_index": 0,
                        "delta": delta, "logprobs": [] })
            }
        };
        event(data["type"].as_str().unwrap_or_default(), &data)
    });
    let frames: Frames = Box::new(head.into_iter().chain(deltas));
    if !complete {
        return frames;
    }
    let next = u64::from(head_count) + u64::from(chunks);
    let status = status_of(said.incomplete);
    let last = if said.incomplete {
        "response.incomplete"
    } else {
        "response.completed"
    };
    // The events that close the output item's own content (a call's arguments, a message's
    // text and part), the item, and where the numbers go on from.
    let (mut tail, item, hole, next): (Vec<Frames>, Value, Option<u32>, u64) = match shape {
        Some(Shape::Tool { name, arguments }) => (
            vec![closing(
                "response.function_call_arguments.done",
                &json!({ "type": "response.function_call_arguments.done", "sequence_number": next,
                         "item_id": item_id, "output_index": 0, "arguments": arguments }),
                None,
            )],
            function_call(seq, (name, arguments), status),
            None,
            next + 1,
        ),
        text => {
            // The text the deltas made: a JSON shape's whole, or `chunks` tokens, written
            // in frames in the hole's place.
            let (text, hole) = match text {
                Some(Shape::Json(text)) => (text.as_str(), None),
                _ => (TEXT_HOLE, Some(chunks)),
            };
            (
                vec![
                    closing(
                        "response.output_text.done",
                        &json!({ "type": "response.output_text.done", "sequence_number": next,
                                 "item_id": item_id, "output_index": 0, "content_index": 0,
                                 "text": text, "logprobs": [] }),
                        hole,
                    ),
                    closing(
                        "response.content_part.done",
                        &json!({ "type": "response.content_part.done", "sequence_number": next + 1,
                                 "item_id": item_id, "output_index": 0, "content_index": 0,
                                 "part": output_text(text) }),
                        hole,
                    ),
                ],
                message(&item_id, status, Some(text)),
                hole,
                next + 2,
            )
        }
    };
    let finished = response(&said, seq, status, json!([item]), (usage, echo));
    tail.push(closing(
        "response.output_item.done",
        &json!({ "type": "response.output_item.done", "sequence_number": next,
                 "output_index": 0, "item": item }),
        hole,
    ));
    tail.push(closing(
        last,
        &json!({ "type": last, "sequence_number": next + 1, "response": finished }),
        hole,
    ));
    Box::new(frames.chain(tail.into_iter().flatten()))
}

/// The `error` event that ends a stream of `shape` the provider broke off after it sent
/// `chunks` deltas.
pub(crate) fn sse_error(chunks: u32, shape: Option<&Shape>) -> Bytes {
    event(
        "error",
        &json!({ "type": "error", "sequence_number": u64::from(head_events(shape)) + u64::from(chunks),
                 "code": "server_error", "message": "The stream was interrupted by a server error.",
                 "param": null }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(frames: Frames) -> Vec<Value> {
        let text: Vec<u8> = frames.flat_map(|f| f.to_vec()).collect();
        let text = String::from_utf8(text).unwrap();
        text.split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                let (name, data) = e.split_once('\n').unwrap();
                let data: Value = serde_json::from_str(data.trim_start_matches("data: ")).unwrap();
                assert_eq!(name.trim_start_matches("event: "), data["type"]);
                data
            })
            .collect()
    }

    #[test]
    fn a_stream_has_the_event_sequence_and_its_text_whole_at_the_end() {
        let body =
            json!({ "id": "chatcmpl-42", "created": 7, "choices": [{ "finish_reason": "stop" }] });
        let all = events(sse_frames(
            42,
            &body,
            (Some((10, 3)), None),
            (3, true),
            None,
        ));
        let names: Vec<&str> = all.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let numbers: Vec<u64> = all
            .iter()
            .map(|e| e["sequence_number"].as_u64().unwrap())
            .collect();
        assert_eq!(numbers, (0..11).collect::<Vec<_>>());
        let deltas: String = all[4..7]
            .iter()
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(deltas, "tok tok tok");
        assert_eq!(all[7]["text"], deltas);
        assert_eq!(all[8]["part"]["text"], deltas);
        assert_eq!(all[9]["item"]["content"][0]["text"], deltas);
        let done = &all[10]["response"];
        assert_eq!(done["id"], "resp_000000000042");
        assert_eq!(done["status"], "completed");
        assert_eq!(done["output"][0]["content"][0]["text"], deltas);
        assert_eq!(done["usage"]["total_tokens"], 13);
    }

    #[test]
    fn the_closing_text_of_a_long_stream_goes_in_frames() {
        let chunks = 3 * TEXT_FRAME_TOKENS + 5;
        let frames: Vec<Bytes> =
            sse_frames(1, &json!({}), (None, None), (chunks, true), None).collect();
        let largest = frames.iter().map(Bytes::len).max().unwrap();
        assert!(largest < 40_000, "a frame of {largest} bytes");
        let all = events(Box::new(frames.into_iter()));
        let text = all[all.len() - 1]["response"]["output"][0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(text.len(), 4 * chunks as usize - 1);
        assert!(text.starts_with("tok tok") && text.ends_with(" tok"));
    }

    #[test]
    fn an_answer_that_used_every_token_is_incomplete() {
        let body = json!({ "id": "chatcmpl-5", "created": 1,
            "choices": [{ "finish_reason": "length", "message": { "content": "hi" } }] });
        let r = answer(5, &body, (Some((4, 16)), None), None);
        assert_eq!(r["status"], "incomplete");
        assert_eq!(r["incomplete_details"]["reason"], "max_output_tokens");
        assert_eq!(r["output"][0]["status"], "incomplete");
        assert_eq!(r["output"][0]["content"][0]["text"], "hi");
        let names: Vec<String> = events(sse_frames(
            5,
            &body,
            (Some((4, 16)), None),
            (16, true),
            None,
        ))
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
        assert_eq!(names.last().unwrap(), "response.incomplete");
    }

    /// A forced call streams its arguments in pieces and closes with the whole call; a JSON
    /// shape streams its text in pieces and closes with it whole.
    #[test]
    fn shaped_streams_carry_the_call_or_the_json() {
        let call = Shape::Tool {
            name: "make_plan".into(),
            arguments: r#"{"title":"","done":false}"#.into(),
        };
        let body = json!({ "id": "chatcmpl-3", "created": 1, "choices": [{ "finish_reason": "tool_calls" }] });
        let all = events(sse_frames(
            3,
            &body,
            (Some((5, 5)), None),
            (5, true),
            Some(&call),
        ));
        let names: Vec<&str> = all.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            names[..3],
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added"
            ]
        );
        assert_eq!(names[3..8], ["response.function_call_arguments.delta"; 5]);
        assert_eq!(
            names[8..],
            [
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed"
            ]
        );
        let pieces: String = all[3..8]
            .iter()
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        let Shape::Tool { arguments, .. } = &call else {
            unreachable!()
        };
        assert_eq!(&pieces, arguments);
        assert_eq!(all[8]["arguments"], *arguments);
        let done = &all[10]["response"]["output"][0];
        assert_eq!(
            (&done["type"], &done["name"]),
            (&json!("function_call"), &json!("make_plan"))
        );
        let numbers: Vec<u64> = all
            .iter()
            .map(|e| e["sequence_number"].as_u64().unwrap())
            .collect();
        assert_eq!(numbers, (0..11).collect::<Vec<_>>());
        let text = r#"{"a":[1,2,3]}"#;
        let body = json!({ "id": "chatcmpl-4", "created": 1,
            "choices": [{ "finish_reason": "stop", "message": { "content": text } }] });
        let json_shape = Shape::Json(text.into());
        let all = events(sse_frames(
            4,
            &body,
            (Some((5, 4)), None),
            (4, true),
            Some(&json_shape),
        ));
        let pieces: String = all[4..8]
            .iter()
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(pieces, text);
        assert_eq!(
            all[all.len() - 1]["response"]["output"][0]["content"][0]["text"],
            text
        );
        let plain = answer(4, &body, (Some((5, 4)), None), Some(&json_shape));
        assert_eq!(plain["output"][0]["content"][0]["text"], text);
    }

    #[test]
    fn forced_calls_and_formats_are_read_and_refused_in_the_apis_words() {
        let tools = json!([{ "type": "web_search" }, { "type": "function", "name": "f", "parameters": { "type": "object" } }]);
        let shape = |body: Value| shaped::responses(&body);
        let forced = shape(json!({ "tools": tools, "tool_choice": "required" })).unwrap();
        assert!(
            matches!(forced, Some(Shape::Tool { name, .. }) if name == "f"),
            "the first function tool"
        );
        let named =
            shape(json!({ "tools": tools, "tool_choice": { "type": "function", "name": "g" } }));
        assert_eq!(named.unwrap_err().param.as_deref(), Some("tool_choice"));
        let lone = shape(json!({ "tool_choice": "required" }));
        assert_eq!(lone.unwrap_err().code, Some("invalid_value"));
        assert_eq!(
            shape(json!({ "tools": tools, "tool_choice": "auto" })).unwrap(),
            None
        );
        let schema = json!({ "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"] });
        let format = shape(
            json!({ "text": { "format": { "type": "json_schema", "name": "x", "schema": schema } } }),
        );
        assert_eq!(format.unwrap(), Some(Shape::Json(r#"{"n":0}"#.into())));
        let missing =
            shape(json!({ "text": { "format": { "type": "json_schema", "name": "x" } } }));
        assert_eq!(
            missing.unwrap_err().param.as_deref(),
            Some("text.format.schema")
        );
        let odd = shape(json!({ "text": { "format": { "type": "yaml" } } }));
        assert_eq!(odd.unwrap_err().param.as_deref(), Some("text.format.type"));
    }

    /// The request's settings come back in its `response` as sent; those it did not send,
    /// at the API's defaults (`max_output_tokens` null), and one of a type the SDK would not
    /// take is not echoed.
    #[test]
    fn a_response_echoes_the_requests_settings() {
        let sent = json!({ "model": "m", "input": "x", "instructions": "be brief",
            "max_output_tokens": 40, "metadata": { "run": "7" }, "temperature": 0.2,
            "tool_choice": "none", "previous_response_id": "resp_1", "user": 5 });
        let echoed = echo(&sent);
        let body = json!({ "created": 1, "choices": [{ "finish_reason": "stop", "message": { "content": "hi" } }] });
        let r = answer(3, &body, (Some((1, 2)), Some(&echoed)), None);
        assert_eq!(r["instructions"], "be brief");
        assert_eq!(r["max_output_tokens"], 40);
        assert_eq!(r["metadata"], json!({ "run": "7" }));
        assert_eq!((&r["temperature"], &r["top_p"]), (&json!(0.2), &json!(1.0)));
        assert_eq!(r["tool_choice"], "none");
        assert_eq!(r["previous_response_id"], "resp_1");
        assert_eq!(r["user"], Value::Null, "a number is no user");
        let bare = answer(
            3,
            &body,
            (Some((1, 2)), Some(&echo(&json!({ "model": "m" })))),
            None,
        );
        assert_eq!(bare["max_output_tokens"], Value::Null);
        assert_eq!(bare["instructions"], Value::Null);
    }

    fn read_body(body: Value) -> Result<Request, BadRequest> {
        let mut req = Request::default();
        read(&mut req, body.to_string().as_bytes(), false).map(|_| req)
    }

    #[test]
    fn bodies_are_read_and_refused_in_the_apis_words() {
        let req = read_body(
            json!({ "model": "m", "input": "abcdefgh", "instructions": "abcd",
            "max_output_tokens": 40, "stream": true }),
        )
        .unwrap();
        assert_eq!(
            (req.prompt_tokens, req.max_tokens, req.stream),
            (3 + 4, 40, true)
        );
        let items = json!({ "model": "m", "input": [
            { "role": "user", "content": [{ "type": "input_text", "text": "abcd" }] },
            { "type": "function_call_output", "call_id": "c", "output": "abcd" }],
            "previous_response_id": "resp_1" });
        assert_eq!(read_body(items).unwrap().prompt_tokens, 2 + 8);
        // An output of a call the input does not make: refused alone, taken beside a
        // reference to stored items (the call may be among them).
        let stray = json!([{ "type": "function_call_output", "call_id": "c", "output": "x" }]);
        let e = read_body(json!({ "model": "m", "input": stray })).unwrap_err();
        assert_eq!((e.param.as_deref(), e.code), (Some("input"), None));
        let mut referred = stray.as_array().unwrap().clone();
        referred.insert(0, json!({ "type": "item_reference", "id": "fc_1" }));
        assert!(read_body(json!({ "model": "m", "input": referred })).is_ok());
        let low = read_body(json!({ "model": "m", "input": "x", "max_output_tokens": 5 }));
        assert_eq!(
            low.unwrap_err().code,
            Some("integer_below_min_value"),
            "the API's minimum"
        );
        let role =
            read_body(json!({ "model": "m", "input": [{ "role": "robot", "content": "x" }] }));
        assert_eq!(role.unwrap_err().param.as_deref(), Some("input[0].role"));
        let number = read_body(json!({ "model": "m", "input": 5 }));
        assert_eq!(number.unwrap_err().code, Some("invalid_type"));
        let unknown =
            read_body(json!({ "model": "m", "input": "x", "max_tokens": 20 })).unwrap_err();
        assert_eq!(unknown.message, "Unknown parameter: 'max_tokens'.");
        assert_eq!(
            (unknown.param.as_deref(), unknown.code),
            (Some("max_tokens"), Some("unknown_parameter"))
        );
        let moved = read_body(json!({ "model": "m", "input": "x", "response_format": {} }));
        assert!(moved
            .unwrap_err()
            .message
            .contains("moved to 'text.format'"));
        assert!(read_body(json!({ "input": "x" })).is_err(), "no model");
        let huge =
            read_body(json!({ "model": "m", "input": "x", "max_output_tokens": 4_294_967_296u64 }));
        assert_eq!(huge.unwrap_err().code, Some("integer_above_max_value"));
        let hot = read_body(json!({ "model": "m", "input": "x", "temperature": 5 }));
        assert_eq!(hot.unwrap_err().param.as_deref(), Some("temperature"));
        // Content and its parts of the wrong type, as for a chat message.
        for (input, param) in [
            (
                json!([{ "role": "user", "content": 5 }]),
                "input[0].content",
            ),
            (
                json!([{ "role": "user", "content": [3] }]),
                "input[0].content[0]",
            ),
            (
                json!([{ "role": "user", "content": [{ "type": "input_text", "text": 5 }] }]),
                "input[0].content[0].text",
            ),
        ] {
            let e = read_body(json!({ "model": "m", "input": input })).unwrap_err();
            assert_eq!(
                (e.param.as_deref(), e.code),
                (Some(param), Some("invalid_type"))
            );
        }
        // What the shape reads, of the wrong type.
        for (field, value, param) in [
            ("tools", json!("x"), "tools"),
            ("tools", json!(["f"]), "tools[0]"),
            ("tools", json!([{ "type": "function" }]), "tools[0].name"),
            ("tool_choice", json!(5), "tool_choice"),
            ("tool_choice", json!("bogus"), "tool_choice"),
            ("text", json!("json"), "text"),
            ("text", json!({ "format": "json_object" }), "text.format"),
            (
                "text",
                json!({ "format": { "type": 5 } }),
                "text.format.type",
            ),
            (
                "text",
                json!({ "format": { "type": "json_schema", "schema": {} } }),
                "text.format.name",
            ),
            (
                "text",
                json!({ "format": { "type": "json_schema", "name": "x", "schema": "x" } }),
                "text.format.schema",
            ),
        ] {
            let mut body = json!({ "model": "m", "input": "x" });
            body[field] = value;
            let e = read_body(body.clone()).unwrap_err();
            assert_eq!(e.param.as_deref(), Some(param), "{body}: {}", e.message);
        }
    }
}
