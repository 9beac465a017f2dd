//! Model decisions into HTTP: statuses, SSE streams, dropped connections and hangs.

use super::anthropic;
use super::responses;
use super::shaped::{self, Shape};
use super::state::Shared;
use crate::model::{
    Answer, CompletionBody, Decision, HeaderOut, RequestRoute, Signals, UNNAMED_MODEL,
};
use axum::body::Body;
use axum::http::{header, HeaderName, HeaderValue, Response, StatusCode};
use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Marker in a response's extensions: close the connection instead of sending it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DropConnection;

/// The longest a hang holds its connection, real time (the client normally gives up first).
pub(crate) const HANG_LIMIT: Duration = Duration::from_secs(300);

/// Pause before a stream cut so the chunks before it leave the socket first.
const CUT_FLUSH: Duration = Duration::from_millis(20);

/// Calls `depart` exactly once: when dropped, whether the answer went out, the client went
/// away, or the server shut down. Dropped without [`Departure::delivered`] (the client went
/// away first), it also marks the attempt's answer abandoned (`Inner::abandon`).
pub(crate) struct Departure {
    shared: Arc<Shared>,
    seq: u64,
    delivered: bool,
}

impl Departure {
    pub(crate) fn new(shared: Arc<Shared>, seq: u64) -> Self {
        Departure {
            shared,
            seq,
            delivered: false,
        }
    }

    /// The answer is handed to the connection whole (a stream: its last frame was taken).
    pub(crate) fn delivered(mut self) {
        self.delivered = true;
    }
}

impl Drop for Departure {
    fn drop(&mut self) {
        let mut inner = self.shared.lock();
        if !self.delivered {
            inner.abandon(self.seq);
        }
        inner.depart(self.seq);
    }
}

/// A JSON response with extra headers.
pub(crate) fn json_response(
    status: u16,
    headers: &[(String, String)],
    body: &Value,
) -> Response<Body> {
    // Sized for a completion's body up front (grown from empty it is copied three times).
    let mut bytes = Vec::with_capacity(512);
    if serde_json::to_writer(&mut bytes, body).is_err() {
        bytes.clear();
    }
    let mut resp = Response::new(Body::from(bytes));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = resp.headers_mut();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    for (name, value) in headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            h.append(n, v);
        }
    }
    resp
}

/// The most headers a [`Signals`] writes: seq, request id, six `x-ratelimit-*`, the two IETF
/// lists, two Retry-After forms, `x-should-retry`, `idempotent-replayed`.
const MAX_SIGNAL_HEADERS: usize = 14;

/// An answer's header values and body written into one buffer: the headers' spans are cut
/// from it once it is whole, so the response costs one buffer instead of a string per name
/// and value and a copy of each into the header map.
struct Rendered {
    buf: Vec<u8>,
    /// Each header's name and where its value starts (it ends where the next starts).
    spans: [(&'static str, usize); MAX_SIGNAL_HEADERS],
    len: usize,
    /// Headers beyond `spans` (none while `Signals` writes at most `MAX_SIGNAL_HEADERS`).
    more: Vec<(&'static str, usize)>,
}

impl HeaderOut for Rendered {
    fn start(&mut self, name: &'static str) {
        let at = self.buf.len();
        match self.spans.get_mut(self.len) {
            Some(span) => {
                *span = (name, at);
                self.len += 1;
            }
            None => self.more.push((name, at)),
        }
    }

    fn push(&mut self, piece: &str) {
        self.buf.extend_from_slice(piece.as_bytes());
    }
}

/// What a [`signals_response`] body is.
pub(crate) enum JsonBody<'a> {
    /// A value, serialized.
    Value(&'a Value),
    /// A plain completion, written straight as text, answered by the model named.
    Completion(&'a CompletionBody, &'a str),
}

/// A JSON response with the headers `signals` writes: the same bytes on the wire as
/// `json_response(status, &signals.headers(), body)`, rendered with no string per header.
pub(crate) fn signals_response(
    status: u16,
    signals: &Signals,
    body: JsonBody<'_>,
) -> Response<Body> {
    let mut out = Rendered {
        // Sized for a completion's headers and body up front.
        buf: Vec::with_capacity(512),
        spans: [("", 0); MAX_SIGNAL_HEADERS],
        len: 0,
        more: Vec::new(),
    };
    signals.write_headers(&mut out);
    let body_start = out.buf.len();
    match body {
        JsonBody::Value(v) => {
            if serde_json::to_writer(&mut out.buf, v).is_err() {
                out.buf.truncate(body_start);
            }
        }
        JsonBody::Completion(c, model) => c.write_json(&mut out.buf, model),
    }
    let whole = Bytes::from(out.buf);
    let mut resp = Response::new(Body::from(whole.slice(body_start..)));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let spans = out.spans[..out.len].iter().chain(&out.more);
    let ends = spans
        .clone()
        .skip(1)
        .map(|&(_, at)| at)
        .chain(std::iter::once(body_start));
    for (&(name, start), end) in spans.zip(ends) {
        // A value that is no valid header value is left out, as `json_response` does.
        if let Ok(v) = HeaderValue::from_maybe_shared(whole.slice(start..end)) {
            h.append(HeaderName::from_static(name), v);
        }
    }
    resp
}

/// A response that tells the connection layer to close without answering.
pub(crate) fn dropped() -> Response<Body> {
    let mut resp = Response::new(Body::empty());
    resp.extensions_mut().insert(DropConnection);
    resp
}

/// Waits `latency_ms` real ms, or until shutdown.
async fn wait(ms: u64, stop: &mut watch::Receiver<bool>) {
    if ms == 0 {
        return;
    }
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
        _ = stopped(stop) => {}
    }
}

/// Most pauses a stream makes between its pieces: its content leaves in this many groups
/// at most, so a stream of thousands of tokens costs a few timers, not one a token.
pub const MAX_STREAM_GROUPS: u32 = 16;

/// When a stream's pieces leave (real time): its `chunks` content frames in `groups`
/// groups, the first (with the frames before the content) after `first_ms`, each next one
/// `gap_ms` later, and the closing frames `gap_ms` after the last group, at the answer's
/// latency (so even a stream of one piece starts early: half way). A real API sends its headers and first
/// token at the time to first token and the rest as they are made; a stream that spent its
/// whole latency before its headers timed out a client whose read timeout was shorter than
/// the latency but longer than any gap, which the real API would have kept reading.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Pace {
    first_ms: u64,
    gap_ms: u64,
    /// Content frames in a group.
    per_group: u32,
    chunks: u32,
}

impl Pace {
    /// The pace of `chunks` content frames over `latency_ms`.
    fn of(chunks: u32, latency_ms: u64) -> Pace {
        let per_group = chunks.div_ceil(MAX_STREAM_GROUPS).max(1);
        let groups = chunks.div_ceil(per_group).max(1);
        // One step a group, and one more before the closing frames.
        let step = latency_ms / u64::from(groups + 1);
        Pace {
            // The first group takes what the division left over, so the closing frames
            // leave at the latency exactly.
            first_ms: latency_ms - step * u64::from(groups),
            gap_ms: step,
            per_group,
            chunks,
        }
    }

    /// `frames` (`head` frames before the content, then the content, then the closing
    /// frames) as a stream that pauses `gap_ms` before each group of content after the first.
    fn paced(self, frames: Frames, head: u32) -> FrameStream {
        let pace = self;
        stream::unfold((frames, 0u64), move |(mut frames, i)| async move {
            let frame = frames.next()?;
            let content = i.checked_sub(u64::from(head));
            // A group of content after the first, or the first closing frame.
            let starts_group = content.is_some_and(|k| {
                k > 0
                    && (k == u64::from(pace.chunks)
                        || (k < u64::from(pace.chunks) && k % u64::from(pace.per_group) == 0))
            });
            if starts_group && pace.gap_ms > 0 {
                tokio::time::sleep(Duration::from_millis(pace.gap_ms)).await;
            }
            Some((Ok(frame), (frames, i + 1)))
        })
        .boxed()
    }
}

/// The wire format an answer is rendered in: the model decides once, each API's edge says
/// it its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// OpenAI's (chat completions, records, items); `include_usage`: a stream ends with a
    /// usage chunk (`stream_options.include_usage`).
    OpenAi { include_usage: bool },
    /// Anthropic Messages (see `anthropic`); `thinking`: the request turned extended
    /// thinking on (`thinking.type` `enabled` or `adaptive`), so a 200 opens with a
    /// `thinking` block, as the real API's does; `count`: a token count, whose 200 is the
    /// model's `{"input_tokens": N}` as it is.
    Anthropic { thinking: bool, count: bool },
    /// OpenAI Responses (see `responses`): a 200 is a `response`; errors are OpenAI's.
    Responses,
    /// OpenAI embeddings: a 200 is a list of vectors; errors are OpenAI's.
    Embeddings {
        /// How many inputs the request embeds: one vector each, as OpenAI answers.
        inputs: usize,
    },
}

impl Wire {
    /// Anthropic's wire for a request on `route` (`/v1/messages` or its token count),
    /// `thinking` or not.
    pub(crate) fn anthropic(route: &RequestRoute, thinking: bool) -> Wire {
        Wire::Anthropic {
            thinking,
            count: matches!(route, RequestRoute::CountTokens),
        }
    }
}

/// What the edge adds to a decision to write a completion's body, which the model leaves
/// to it (see `ProviderModel::set_lean_completions`).
#[derive(Debug, Clone)]
pub(crate) struct CompletionFacts {
    /// `ProviderModel::completion_created` at the attempt's arrival.
    pub(crate) created: u64,
    /// The attempt's `max_tokens`.
    pub(crate) max_tokens: u32,
    /// The attempt's prompt tokens, as the edge counted them: a broken stream's start
    /// says them (its answer has no usage of the model's).
    pub(crate) prompt_tokens: u32,
    /// The model the request named, which its answer names (as the real APIs echo it).
    pub(crate) model: Option<Arc<str>>,
    /// The request's settings its answer echoes (a Responses `response` does).
    pub(crate) echo: Option<Arc<Value>>,
}

impl CompletionFacts {
    /// The model the answer names: the request's, else [`UNNAMED_MODEL`].
    pub(crate) fn model_name(&self) -> &str {
        self.model.as_deref().unwrap_or(UNNAMED_MODEL)
    }
}

/// The model a completion's `body` (the value a 200 is rendered from) names as the one
/// that answered, else [`UNNAMED_MODEL`]: read by each wire's renderer.
pub(crate) fn answered_by(body: &Value) -> &str {
    body.get("model")
        .and_then(Value::as_str)
        .unwrap_or(UNNAMED_MODEL)
}

/// Plays a decision: sleeps its latency (real time), then answers, drops or hangs; a stream
/// starts after its first step and ends at the latency (see [`Pace`]).
pub(crate) async fn play(
    shared: Arc<Shared>,
    decision: Decision,
    real_latency_ms: u64,
    (wire, shape): (Wire, Option<Shape>),
    facts: CompletionFacts,
    mut stop: watch::Receiver<bool>,
) -> Response<Body> {
    let departure = Departure::new(shared, decision.seq);
    let seq = decision.seq;
    match decision.answer {
        Answer::Respond {
            status,
            signals,
            body,
            stream_chunks,
            usage,
            completion_id,
            ..
        } => {
            // A completion's body comes `Null` from the model: the numbers it says are here.
            let completion = match (&body, completion_id, usage) {
                (Value::Null, Some(id), Some((prompt_tokens, completion_tokens))) => {
                    Some(CompletionBody {
                        id_seq: id.seq(),
                        created: facts.created,
                        prompt_tokens,
                        completion_tokens,
                        max_tokens: facts.max_tokens,
                    })
                }
                _ => None,
            };
            // Only a completion has a shape (it changes what a 200 says, nothing else).
            let shape = shape.filter(|_| completion.is_some() && status == 200);
            // The ids an answer's body gives (its message's, its tool call's) are the
            // completion's: an idempotent replay says the same call again, not a new one.
            let id_seq = completion.as_ref().map_or(seq, |c| c.id_seq);
            // A stream starts when its first piece is ready and ends at the latency, as a
            // real API's does; anything else is whole at the latency.
            // A shaped answer streams its text in pieces of a token's worth, not the
            // model's drawn count (see `Shape::most_deltas`).
            let pace = match (stream_chunks, wire) {
                (Some(n), Wire::OpenAi { .. } | Wire::Anthropic { .. } | Wire::Responses)
                    if status == 200 =>
                {
                    let n = shape.as_ref().map_or(n, |s| n.min(s.most_deltas()));
                    Some(Pace::of(n, real_latency_ms))
                }
                _ => None,
            };
            let first_ms = pace.map_or(real_latency_ms, |p| p.first_ms);
            wait(first_ms, &mut stop).await;
            if let (Some(c), None, Wire::OpenAi { .. }, None) =
                (&completion, stream_chunks, wire, &shape)
            {
                // The hot path: a plain completion, written straight as JSON text.
                departure.delivered();
                let model = facts.model_name();
                return signals_response(status, &signals, JsonBody::Completion(c, model));
            }
            if let (None, Wire::OpenAi { .. }, None) = (stream_chunks, wire, &shape) {
                departure.delivered();
                return signals_response(status, &signals, JsonBody::Value(&body));
            }
            // Streams, shaped answers and Anthropic's messages are rendered from the value
            // (an embedding's 200 reads no body).
            let body = match &completion {
                Some(c) if !matches!(wire, Wire::Embeddings { .. }) => {
                    let mut value = c.to_value(facts.model_name());
                    if let Some(shape) = &shape {
                        shaped::apply(&mut value, shape, id_seq);
                    }
                    value
                }
                _ => body,
            };
            let shape = shape.as_ref();
            let headers = signals.headers();
            // `pace` is set for exactly the streams: a 200 streamed on any completion API.
            match (pace, wire) {
                (Some(pace), Wire::OpenAi { include_usage }) => {
                    let n = pace.chunks;
                    let usage = usage.filter(|_| include_usage);
                    let frames = sse_frames(id_seq, &body, (n, n), usage, shape);
                    sse_response(&headers, pace.paced(frames, 0), departure)
                }
                (Some(pace), Wire::Anthropic { thinking, .. }) => {
                    let n = pace.chunks;
                    let frames =
                        anthropic::sse_frames(id_seq, &body, usage, (n, true), (shape, thinking));
                    // The events before the first delta lead, unpaced.
                    sse_response(
                        &anthropic::headers(&headers),
                        pace.paced(frames, anthropic::lead_events(thinking)),
                        departure,
                    )
                }
                (Some(pace), Wire::Responses) => {
                    let n = pace.chunks;
                    let frames = responses::sse_frames(
                        id_seq,
                        &body,
                        (usage, facts.echo.as_deref()),
                        (n, true),
                        shape,
                    );
                    let head = responses::head_events(shape);
                    sse_response(&headers, pace.paced(frames, head), departure)
                }
                (_, Wire::Anthropic { count: true, .. }) if status == 200 => {
                    departure.delivered();
                    json_response(200, &anthropic::headers(&headers), &body)
                }
                (_, Wire::Anthropic { thinking, .. }) => {
                    departure.delivered();
                    anthropic::answer(id_seq, status, &headers, &body, (usage, shape, thinking))
                }
                (_, Wire::Responses) if status == 200 => {
                    departure.delivered();
                    let response =
                        responses::answer(id_seq, &body, (usage, facts.echo.as_deref()), shape);
                    json_response(200, &headers, &response)
                }
                (_, Wire::Embeddings { inputs }) if status == 200 => {
                    departure.delivered();
                    let (input, _) = usage.unwrap_or((0, 0));
                    let vector: Vec<f64> = (0..8).map(|i| f64::from(i) / 8.0).collect();
                    let data: Vec<Value> = (0..inputs.max(1))
                        .map(|index| json!({ "object": "embedding", "index": index, "embedding": vector }))
                        .collect();
                    let body = json!({
                        "object": "list",
                        "data": data,
                        "model": facts.model_name(),
                        "usage": { "prompt_tokens": input, "total_tokens": input },
                    });
                    json_response(200, &headers, &body)
                }
                (_, Wire::OpenAi { .. } | Wire::Embeddings { .. } | Wire::Responses) => {
                    departure.delivered();
                    json_response(status, &headers, &body)
                }
            }
        }
        Answer::Drop { .. } => {
            wait(real_latency_ms, &mut stop).await;
            departure.delivered();
            dropped()
        }
        Answer::Hang { .. } => {
            // Held until the client goes away (the connection future is dropped, and the
            // departure with it), the bound passes, or the server stops; then closed.
            tokio::select! {
                _ = tokio::time::sleep(HANG_LIMIT) => {}
                _ = stopped(&mut stop) => {}
            }
            departure.delivered();
            dropped()
        }
        Answer::StreamCut { after_chunks, .. } => {
            wait(real_latency_ms, &mut stop).await;
            let frames = broken_frames(seq, (wire, shape.as_ref()), after_chunks, &facts);
            let cut = stream::once(async {
                tokio::time::sleep(CUT_FLUSH).await;
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "stream cut by fault",
                ))
            });
            let s = stream::iter(frames.into_iter().map(Ok)).chain(cut).boxed();
            sse_response(&broken_headers(seq, wire), s, departure)
        }
        Answer::StreamError { after_chunks } => {
            wait(real_latency_ms, &mut stop).await;
            let frames = broken_frames(seq, (wire, shape.as_ref()), after_chunks, &facts);
            let last = match wire {
                Wire::OpenAi { .. } | Wire::Embeddings { .. } => {
                    let err = json!({ "error": { "message": "The stream was interrupted by a server error.", "type": "server_error", "param": null, "code": "stream_error" } });
                    Bytes::from(format!("event: error\ndata: {err}\n\n"))
                }
                Wire::Anthropic { .. } => anthropic::sse_error(),
                Wire::Responses => {
                    let (sent, _) = shaped::broken(after_chunks, shape.as_ref());
                    responses::sse_error(sent, shape.as_ref())
                }
            };
            let frames: Frames = Box::new(frames.chain(std::iter::once(last)));
            sse_response(
                &broken_headers(seq, wire),
                stream::iter(frames.into_iter().map(Ok)).boxed(),
                departure,
            )
        }
    }
}

/// The frames a stream broken off after `after_chunks` sends in `wire`'s format, before
/// its break (a cut or an error event): the head, then the deltas, of the shape the
/// request asked for, a piece short of its whole (see `shaped::broken`). It has no body of
/// its own: its id is the attempt's.
fn broken_frames(
    seq: u64,
    (wire, shape): (Wire, Option<&Shape>),
    after_chunks: u32,
    facts: &CompletionFacts,
) -> Frames {
    let body = json!({ "id": format!("chatcmpl-{seq}"), "model": facts.model_name(), "created": unix_now() });
    let (sent, pieces) = shaped::broken(after_chunks, shape);
    match wire {
        Wire::OpenAi { .. } | Wire::Embeddings { .. } => {
            Box::new(sse_frames(seq, &body, (pieces, u32::MAX), None, shape).take(sent as usize))
        }
        Wire::Anthropic { thinking, .. } => {
            let usage = Some((facts.prompt_tokens, pieces));
            let lead = anthropic::lead_events(thinking);
            Box::new(
                anthropic::sse_frames(seq, &body, usage, (pieces, false), (shape, thinking))
                    .take(lead as usize + sent as usize),
            )
        }
        Wire::Responses => Box::new(
            responses::sse_frames(
                seq,
                &body,
                (None, facts.echo.as_deref()),
                (pieces, false),
                shape,
            )
            .take(responses::head_events(shape) as usize + sent as usize),
        ),
    }
}

/// The headers of a broken stream: its seq, and its request id under the name its API
/// gives it (`request-id` on Anthropic's, `x-request-id` on OpenAI's), which the SDKs
/// read into their errors.
fn broken_headers(seq: u64, wire: Wire) -> Vec<(String, String)> {
    let headers = Signals::bare(seq).headers();
    match wire {
        Wire::Anthropic { .. } => anthropic::headers(&headers),
        _ => headers,
    }
}

/// The id of kind `prefix` (`msg`, `call`, `resp`, `toolu`, ...) an answer gives for `seq`:
/// the prefix, `_`, and the seq padded with zeros to 12 digits.
pub(crate) fn id(prefix: &str, seq: u64) -> String {
    format!("{prefix}_{seq:012}")
}

type FrameStream = futures_util::stream::BoxStream<'static, Result<Bytes, std::io::Error>>;

fn sse_response(
    headers: &[(String, String)],
    frames: FrameStream,
    departure: Departure,
) -> Response<Body> {
    // The departure rides along with the body: it fires when the stream ends or is dropped.
    let s = frames.chain(stream::once(async move {
        departure.delivered();
        Ok(Bytes::new())
    }));
    let mut resp = json_response(200, headers, &Value::Null);
    *resp.body_mut() = Body::from_stream(s);
    let h = resp.headers_mut();
    h.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert("cache-control", HeaderValue::from_static("no-cache"));
    resp
}

/// Seconds since the Unix epoch (the `created` of a chunk, or a response, whose body has
/// none).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `chunks` content chunks of one token each, shaped as OpenAI's `chat.completion.chunk`
/// (every chunk carries `id`, `object`, `created`, `model` and `choices`; the first delta
/// carries the role); when `total` is reached, a chunk with the finish reason, then, when
/// `usage` is given (the client asked with `stream_options.include_usage`), a last chunk
/// with empty `choices` and the usage, and `[DONE]`.
///
/// The content chunks are made as the client reads them, never all at once: a streamed
/// completion of `max_tokens = 4294967295` is billions of frames.
pub(crate) fn sse_frames(
    seq: u64,
    body: &Value,
    (chunks, total): (u32, u32),
    usage: Option<(u32, u32)>,
    shape: Option<&Shape>,
) -> Frames {
    let id = body
        .get("id")
        .cloned()
        .unwrap_or_else(|| json!(format!("chatcmpl-{seq}")));
    let created = body
        .get("created")
        .cloned()
        .unwrap_or_else(|| json!(unix_now()));
    let model = answered_by(body).to_string();
    let chunk = move |id: &Value, created: &Value, choices: Value| {
        json!({
            "id": id, "object": "chat.completion.chunk", "created": created,
            "model": model.clone(), "system_fingerprint": null, "choices": choices,
        })
    };
    let (head_id, head_created) = (id.clone(), created.clone());
    let content_chunk = chunk.clone();
    let shape = shape.cloned();
    let content = (0..chunks).map(move |i| {
        let delta = match &shape {
            None if i == 0 => json!({ "role": "assistant", "content": "tok" }),
            None => json!({ "content": " tok" }),
            // The JSON text in `chunks` pieces, as the model writes it token by token.
            Some(Shape::Json(text)) => {
                let piece = shaped::piece(text, i, chunks);
                if i == 0 {
                    json!({ "role": "assistant", "content": piece })
                } else {
                    json!({ "content": piece })
                }
            }
            // The call's id and name first, then its arguments in pieces.
            Some(Shape::Tool { name, arguments }) => {
                let piece = shaped::piece(arguments, i, chunks);
                if i == 0 {
                    json!({ "role": "assistant", "content": null, "tool_calls": [{ "index": 0, "id": self::id("call", seq), "type": "function", "function": { "name": name, "arguments": piece } }] })
                } else {
                    json!({ "tool_calls": [{ "index": 0, "function": { "arguments": piece } }] })
                }
            }
        };
        let c = content_chunk(
            &head_id,
            &head_created,
            json!([{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": null }]),
        );
        Bytes::from(format!("data: {c}\n\n"))
    });
    let chunk = |choices: Value| chunk(&id, &created, choices);
    let mut out = Vec::with_capacity(3);
    if chunks >= total {
        let finish = body
            .pointer("/choices/0/finish_reason")
            .cloned()
            .unwrap_or(json!("stop"));
        let c =
            chunk(json!([{ "index": 0, "delta": {}, "logprobs": null, "finish_reason": finish }]));
        out.push(Bytes::from(format!("data: {c}\n\n")));
        if let Some((p, c)) = usage {
            let mut last = chunk(json!([]));
            // In u64: both may be near u32::MAX.
            last["usage"] = json!({ "prompt_tokens": p, "completion_tokens": c, "total_tokens": u64::from(p) + u64::from(c) });
            out.push(Bytes::from(format!("data: {last}\n\n")));
        }
        out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    }
    Box::new(content.chain(out))
}

/// SSE frames, made as they are read.
pub(crate) type Frames = Box<dyn Iterator<Item = Bytes> + Send>;

/// Resolves once the server is stopping (or its stop channel is gone).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is dropped here, so callers' futures stay `Send`.
    let _ = stop.wait_for(|s| *s).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_of_billions_of_chunks_is_made_lazily() {
        // Building this once took an allocation of tens of GB and aborted the server.
        let mut frames = sse_frames(1, &json!({}), (u32::MAX, u32::MAX), None, None);
        let first = frames.next().unwrap();
        assert!(std::str::from_utf8(&first)
            .unwrap()
            .contains("\"role\":\"assistant\""));
        assert_eq!(frames.size_hint().0, (u32::MAX - 1) as usize + 2);
        let mut deltas =
            anthropic::sse_frames(1, &json!({}), None, (u32::MAX, true), (None, false));
        assert!(deltas.nth(3).is_some());
    }

    /// The headers and body of a response rendered from signals are those of the same
    /// answer rendered from its header strings, for every kind of header a signal writes.
    #[tokio::test]
    async fn signals_responses_are_the_string_headed_responses() {
        use crate::model::{RateFigures, RetryAfterSignal};
        use http_body_util::BodyExt;

        async fn parts(resp: Response<Body>) -> (u16, Vec<(String, Vec<u8>)>, Bytes) {
            let status = resp.status().as_u16();
            let headers = resp
                .headers()
                .iter()
                .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                .collect();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            (status, headers, body)
        }
        // Every limit but the tokens per minute: OpenAI's token figures come from the daily
        // limit, and the IETF lists skip an item.
        let figures = RateFigures {
            quotas: [Some(100), None, Some(9_000), Some(250_000)],
            used: [93, 0, 8_999, 12_345],
            reset_ms: [11_250, 59_250],
            window_s: [60, 86_400],
        };
        let mut cases = Vec::new();
        for seq in [1, 123_456_789_012_345] {
            cases.push(Signals::bare(seq));
            cases.push(Signals {
                rate: Some(figures),
                retry_after: Some(RetryAfterSignal {
                    delay_ms: 1_500,
                    http_date_unix_s: None,
                }),
                should_retry: Some(false),
                idempotent_replayed: true,
                ..Signals::bare(seq)
            });
            cases.push(Signals {
                retry_after: Some(RetryAfterSignal {
                    delay_ms: 20,
                    http_date_unix_s: Some(1_796_166_632),
                }),
                should_retry: Some(true),
                ..Signals::bare(seq)
            });
        }
        let error = crate::model::error_body("Rate limit reached.", "requests", "rate_limit");
        let completion = CompletionBody {
            id_seq: 42,
            created: 1_796_166_632,
            prompt_tokens: 7,
            completion_tokens: 16,
            max_tokens: 16,
        };
        for signals in &cases {
            let headers = signals.headers();
            assert_eq!(
                parts(signals_response(429, signals, JsonBody::Value(&error))).await,
                parts(json_response(429, &headers, &error)).await
            );
            assert_eq!(
                parts(signals_response(
                    200,
                    signals,
                    JsonBody::Completion(&completion, "gpt-4o")
                ))
                .await,
                parts(json_response(200, &headers, &completion.to_value("gpt-4o"))).await
            );
        }
    }

    #[test]
    fn usage_totals_do_not_overflow() {
        let frames: Vec<Bytes> =
            sse_frames(1, &json!({}), (0, 0), Some((u32::MAX, u32::MAX)), None).collect();
        let usage = std::str::from_utf8(&frames[1]).unwrap();
        assert!(usage.contains("\"total_tokens\":8589934590"), "{usage}");
    }

    /// A stream's pieces leave in at most `MAX_STREAM_GROUPS` groups, the last at the
    /// latency: the first wait and the gaps add up to it, whatever the chunk count.
    #[test]
    fn a_paced_stream_ends_at_its_latency() {
        for (chunks, latency) in [
            (1, 800),
            (3, 1_000),
            (16, 1_600),
            (17, 1_601),
            (5_000, 3),
            (u32::MAX, 90_000),
        ] {
            let p = Pace::of(chunks, latency);
            let groups = u64::from(chunks.div_ceil(p.per_group));
            assert!(groups <= u64::from(MAX_STREAM_GROUPS), "{chunks}: {p:?}");
            // The content frames k (from 0) before which it pauses: 0 < k < chunks, k a
            // multiple of per_group; and the first closing frame.
            let pauses = (u64::from(chunks) - 1) / u64::from(p.per_group) + 1;
            assert_eq!(pauses, groups, "{chunks}: {p:?}");
            assert!(
                p.gap_ms == 0 || p.first_ms <= latency / 2 + 1,
                "{chunks}: {p:?}"
            );
            assert_eq!(p.first_ms + pauses * p.gap_ms, latency, "{chunks}: {p:?}");
        }
    }
}
