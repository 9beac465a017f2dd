//! The provider's API routes: chat completions, records and items.

use super::parse::{self, BadRequest};
use super::respond::{self, json_response};
use super::shaped::Shape;
use super::{App, ServerOptions};
use crate::model::{error_body, error_body_at, Request, RequestRoute};
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Request as HttpRequest, Response};
use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use std::collections::BTreeMap;

/// The size of a request's head as it came (its request line and header lines), bytes.
pub(crate) fn head_bytes<B>(req: &HttpRequest<B>) -> usize {
    let line = req.method().as_str().len()
        + req.uri().path_and_query().map_or(1, |p| p.as_str().len())
        + " HTTP/1.1\r\n ".len();
    req.headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + ": \r\n".len())
        .sum::<usize>()
        + line
        + "\r\n".len()
}

/// The 431 of a head past `limit` bytes (the connection then closes).
pub(crate) fn head_too_large(limit: usize) -> Response<Body> {
    json_response(
        431,
        &[("connection".to_string(), "close".to_string())],
        &error_body(
            &format!("the request's headers are larger than the limit of {limit} bytes"),
            "invalid_request_error",
            "request_header_fields_too_large",
        ),
    )
}

/// A body the edge would not read whole: why, in words each wire renders as its own error
/// (see [`BodyRefusal::render`]).
#[derive(Debug)]
pub(crate) struct BodyRefusal {
    /// 413 past the limit, 400 when the client broke off, 408 when it came too slowly.
    status: u16,
    message: String,
    /// OpenAI's `code`; Anthropic's errors carry a type for the status instead.
    code: &'static str,
    /// The body was left unread, so the connection closes after the answer.
    closes: bool,
}

impl BodyRefusal {
    /// The refusal as `wire` words its errors: Anthropic's `{type: "error", error: {type,
    /// message}}` on its routes (its SDK reads `error.type`), OpenAI's on every other.
    pub(crate) fn render(&self, wire: &respond::Wire) -> Response<Body> {
        let connection = [("connection".to_string(), "close".to_string())];
        let headers: &[(String, String)] = if self.closes { &connection } else { &[] };
        let body = match wire {
            respond::Wire::Anthropic { .. } => {
                super::anthropic::error_body(self.status, &self.message)
            }
            _ => error_body(&self.message, "invalid_request_error", self.code),
        };
        json_response(self.status, headers, &body)
    }

    /// The status: 400, 408 or 413.
    pub(crate) fn status(&self) -> u16 {
        self.status
    }
}

/// Reads a body up to the limit: 413 past it, 400 if the client broke off, 408 (and the
/// connection closes) when it is not whole within the body-read timeout.
pub(crate) async fn read_body<B>(body: B, options: &ServerOptions) -> Result<Bytes, BodyRefusal>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let limit = options.body_limit;
    let too_large = |closes| BodyRefusal {
        status: 413,
        message: format!("request body is larger than the limit of {limit} bytes"),
        code: "payload_too_large",
        closes,
    };
    // A Content-Length past the limit is refused before any of the body is read (and the
    // connection then closes: the body is left unread), rather than after reading up to
    // the limit of a body that may never come whole.
    if body.size_hint().lower() > limit as u64 {
        return Err(too_large(true));
    }
    let timeout = options.body_read_timeout;
    let Ok(read) = tokio::time::timeout(timeout, collect(Limited::new(body, limit))).await else {
        return Err(BodyRefusal {
            status: 408,
            message: format!(
                "the request body was not received within {} ms",
                timeout.as_millis()
            ),
            code: "request_timeout",
            closes: true,
        });
    };
    match read {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large(false)),
        Err(e) => Err(BodyRefusal {
            status: 400,
            message: format!("could not read the request body: {}", with_causes(&*e)),
            code: "invalid_request",
            closes: false,
        }),
    }
}

/// An error and what caused it, `: `-separated: hyper's "error reading a body from
/// connection" says what went wrong only in its cause (a body shorter than its
/// Content-Length, a bad chunk size).
fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// A body's data frames joined, as `BodyExt::collect` and `Collected::to_bytes` join them,
/// without their queue: a body that comes in one frame (nearly all) is that frame's bytes.
async fn collect<B>(mut body: B) -> Result<Bytes, B::Error>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
{
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        if data.is_empty() {
            continue;
        }
        match (&mut joined, first.take()) {
            (Some(all), _) => all.extend_from_slice(&data),
            (None, None) => first = Some(data),
            (None, Some(head)) => {
                let mut all = BytesMut::with_capacity(head.len() + data.len());
                all.extend_from_slice(&head);
                all.extend_from_slice(&data);
                joined = Some(all);
            }
        }
    }
    Ok(match joined {
        Some(all) => all.freeze(),
        None => first.unwrap_or_default(),
    })
}

pub(crate) fn bad_request(e: &BadRequest) -> Response<Body> {
    json_response(
        400,
        &[],
        &error_body_at(
            &e.message,
            "invalid_request_error",
            e.param.as_deref(),
            e.code,
        ),
    )
}

/// A body the edge refuses (`refusal`, a 400), sent with a key the provider does not know
/// or with none: the real APIs check the key before they read the body, so the client is
/// told 401, as for any other request with that key, and the model journals the attempt as
/// it journals every refused key. With a known key, the 400 stands, journaled as an attempt
/// with its request id (a client that sends the same bad body again and again shows in the
/// figures; it had been left out of them). `req` is what the request's head said (its key,
/// route and claims); nothing of the body is needed for a 401.
pub(crate) async fn key_first(
    app: &App,
    req: Request,
    wire: respond::Wire,
    mut refusal: Response<Body>,
) -> Response<Body> {
    let journaled = {
        let mut inner = app.shared.lock();
        inner
            .model
            .knows_credential(req.credential.as_deref())
            .then(|| {
                let status = refusal.status().as_u16();
                let edge = crate::model::EdgeRefusal {
                    status,
                    code: if status == 413 {
                        "request_too_large"
                    } else {
                        "invalid_request"
                    },
                    workload_item: req.workload_item,
                };
                let (method, route) = (req.route.method(), req.route.template());
                inner.arrive_refused(method, route, req.credential.as_deref(), edge)
            })
    };
    let Some(seq) = journaled else {
        return attempt_as(app, req, wire).await;
    };
    let id_header = match wire {
        respond::Wire::Anthropic { .. } => "request-id",
        _ => "x-request-id",
    };
    let h = refusal.headers_mut();
    for (name, value) in [
        ("x-stampede-seq", seq.to_string()),
        (id_header, format!("req_{seq:012}")),
    ] {
        if let Ok(v) = axum::http::HeaderValue::from_str(&value) {
            h.insert(name, v);
        }
    }
    refusal
}

/// A body refused before it was read whole (`refusal`, from [`read_body`]): past the body
/// limit (413) it is an attempt like any refused body, journaled when its key is known (a
/// client that sends it again and again shows in the figures, where it had been left out)
/// and answered 401 when it is not, as the real APIs check the key first. A body cut off
/// or too slow (400, 408) is no request the provider saw whole: answered as it is.
pub(crate) async fn body_refused(
    app: &App,
    headers: &HeaderMap,
    route: RequestRoute,
    refusal: BodyRefusal,
) -> Response<Body> {
    let wire = match route {
        RequestRoute::Messages | RequestRoute::CountTokens => {
            respond::Wire::anthropic(&route, false)
        }
        RequestRoute::Responses => respond::Wire::Responses,
        _ => respond::Wire::OpenAi {
            include_usage: false,
        },
    };
    let rendered = refusal.render(&wire);
    if refusal.status() != 413 {
        return rendered;
    }
    let Ok(req) = parse::base_request(headers, app.options.max_field_bytes, route) else {
        return rendered;
    };
    key_first(app, req, wire, rendered).await
}

/// Runs one attempt through the model and plays the decision in OpenAI's wire format.
async fn attempt(app: &App, req: Request) -> Response<Body> {
    let wire = respond::Wire::OpenAi {
        include_usage: req.stream_usage,
    };
    attempt_as(app, req, wire).await
}

/// Runs one attempt through the model and plays the decision in `wire`'s format.
pub(crate) async fn attempt_as(app: &App, req: Request, wire: respond::Wire) -> Response<Body> {
    attempt_shaped(app, req, wire, None).await
}

/// [`attempt_as`], a 200 of which has `shape` (see `shaped`).
pub(crate) async fn attempt_shaped(
    app: &App,
    req: Request,
    wire: respond::Wire,
    shape: Option<Shape>,
) -> Response<Body> {
    attempt_echoing(app, req, wire, shape, None).await
}

/// [`attempt_shaped`], whose answer also echoes `echo`, the request's settings (a
/// Responses `response` does; see `responses::echo`).
pub(crate) async fn attempt_echoing(
    app: &App,
    req: Request,
    wire: respond::Wire,
    shape: Option<Shape>,
    echo: Option<std::sync::Arc<serde_json::Value>>,
) -> Response<Body> {
    let (decision, real_ms, created) = {
        let mut inner = app.shared.lock();
        let (d, created) = inner.arrive(&req);
        let real = inner.real_ms(d.latency_ms);
        (d, real, created)
    };
    let facts = respond::CompletionFacts {
        created,
        max_tokens: req.max_tokens,
        prompt_tokens: req.prompt_tokens,
        // Moved, not cloned: the model has read `req`, which nothing reads after.
        model: req.model,
        echo,
    };
    respond::play(
        app.shared.clone(),
        decision,
        real_ms,
        (wire, shape),
        facts,
        app.stop.clone(),
    )
    .await
}

/// Whether `req` is `POST /v1/chat/completions`, the route the router would give to
/// [`chat_completions`] (its path exactly; the query is no part of the match).
pub(crate) fn is_chat_completion<B>(req: &HttpRequest<B>) -> bool {
    req.method() == axum::http::Method::POST && req.uri().path() == "/v1/chat/completions"
}

pub(crate) async fn chat_completions(
    State(app): State<App>,
    req: HttpRequest<Body>,
) -> Response<Body> {
    chat_completion(app, req).await
}

/// `POST /v1/chat/completions` with any body: the connection's own, unboxed, when the
/// request comes straight from the connection (a read error says the same either way:
/// axum's body error writes the one it wraps).
pub(crate) async fn chat_completion<B>(app: App, req: HttpRequest<B>) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    // The head is taken apart, not extracted: axum's `HeaderMap` extractor clones the map.
    let (head, body) = req.into_parts();
    let headers = &head.headers;
    let bytes = match read_body(body, &app.options).await {
        Ok(b) => b,
        Err(r) => return body_refused(&app, headers, RequestRoute::ChatCompletions, r).await,
    };
    let mut req = match parse::base_request(
        headers,
        app.options.max_field_bytes,
        RequestRoute::ChatCompletions,
    ) {
        Ok(r) => r,
        Err(e) => return bad_request(&e),
    };
    let accept_unknown = app.shared.accepts_unknown_fields();
    let shape = match parse::chat(&mut req, &bytes, accept_unknown) {
        Ok(shape) => shape,
        Err(e) => {
            let wire = respond::Wire::OpenAi {
                include_usage: false,
            };
            req.workload_item = req
                .workload_item
                .or_else(|| parse::workload_item_in(&bytes));
            return key_first(&app, req, wire, bad_request(&e)).await;
        }
    };
    let wire = respond::Wire::OpenAi {
        include_usage: req.stream_usage,
    };
    attempt_shaped(&app, req, wire, shape).await
}

pub(crate) async fn embeddings(State(app): State<App>, req: HttpRequest<Body>) -> Response<Body> {
    // The head is taken apart, not extracted: axum's `HeaderMap` extractor clones the map.
    let (head, body) = req.into_parts();
    let headers = &head.headers;
    let bytes = match read_body(body, &app.options).await {
        Ok(b) => b,
        Err(r) => return body_refused(&app, headers, RequestRoute::Embeddings, r).await,
    };
    let mut req = match parse::base_request(
        headers,
        app.options.max_field_bytes,
        RequestRoute::Embeddings,
    ) {
        Ok(r) => r,
        Err(e) => return bad_request(&e),
    };
    let accept_unknown = app.shared.accepts_unknown_fields();
    let inputs = match parse::embeddings(&mut req, &bytes, accept_unknown) {
        Ok(inputs) => inputs,
        Err(e) => {
            let wire = respond::Wire::Embeddings { inputs: 0 };
            return key_first(&app, req, wire, bad_request(&e)).await;
        }
    };
    attempt_as(&app, req, respond::Wire::Embeddings { inputs }).await
}

pub(crate) async fn create_record(
    State(app): State<App>,
    req: HttpRequest<Body>,
) -> Response<Body> {
    // The head is taken apart, not extracted: axum's `HeaderMap` extractor clones the map.
    let (head, body) = req.into_parts();
    let headers = &head.headers;
    let bytes = match read_body(body, &app.options).await {
        Ok(b) => b,
        Err(r) => return body_refused(&app, headers, RequestRoute::CreateRecord, r).await,
    };
    let mut req = match parse::base_request(
        headers,
        app.options.max_field_bytes,
        RequestRoute::CreateRecord,
    ) {
        Ok(r) => r,
        Err(e) => return bad_request(&e),
    };
    if let Err(e) = parse::record(&mut req, &bytes, app.options.max_field_bytes) {
        let wire = respond::Wire::OpenAi {
            include_usage: false,
        };
        return key_first(&app, req, wire, bad_request(&e)).await;
    }
    attempt(&app, req).await
}

/// The `{id}` of a path, or the API's 400, in its JSON, for one whose percent-encoding
/// decodes to no UTF-8 (axum's own answer is plain text, which no SDK's error parser reads)
/// or that is longer than the field cap.
fn path_id(id: Result<Path<String>, PathRejection>, max: usize) -> Result<String, BadRequest> {
    let id = id.map(|Path(id)| id).map_err(|e| {
        BadRequest::new(format!(
            "the path cannot be read ({}): percent-encode the UTF-8 bytes of the id",
            e.body_text()
        ))
    })?;
    parse::capped("the id", &id, max)?;
    Ok(id)
}

/// A read by id (`route` of the id): an id the path cannot give is refused as a body the
/// API refuses is, after the key (`key_first`: an unknown key is told 401 and journaled, a
/// known one the 400, journaled too).
async fn read_by_id(
    app: &App,
    headers: &HeaderMap,
    id: Result<Path<String>, PathRejection>,
    route: fn(String) -> RequestRoute,
) -> Response<Body> {
    let max = app.options.max_field_bytes;
    let (id, refused) = match path_id(id, max) {
        Ok(id) => (id, None),
        Err(e) => (String::new(), Some(e)),
    };
    let req = match parse::base_request(headers, max, route(id)) {
        Ok(req) => req,
        Err(e) => return bad_request(&e),
    };
    match refused {
        None => attempt(app, req).await,
        Some(e) => {
            let wire = respond::Wire::OpenAi {
                include_usage: false,
            };
            key_first(app, req, wire, bad_request(&e)).await
        }
    }
}

pub(crate) async fn get_record(
    State(app): State<App>,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
) -> Response<Body> {
    read_by_id(&app, &headers, id, |id| RequestRoute::GetRecord { id }).await
}

pub(crate) async fn find_records(
    State(app): State<App>,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response<Body> {
    let by = match parse::find_by(&query, app.options.max_field_bytes) {
        Ok(b) => b,
        Err(e) => return bad_request(&e),
    };
    match parse::base_request(
        &headers,
        app.options.max_field_bytes,
        RequestRoute::FindRecords { by },
    ) {
        Ok(req) => attempt(&app, req).await,
        Err(e) => bad_request(&e),
    }
}

pub(crate) async fn get_item(
    State(app): State<App>,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
) -> Response<Body> {
    read_by_id(&app, &headers, id, |id| RequestRoute::GetItem { id }).await
}

pub(crate) async fn not_found(
    State(app): State<App>,
    method: axum::http::Method,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response<Body> {
    // Journaled like any attempt: a client calling a path the provider lacks (a wrong base
    // URL, an API version it does not serve) shows in the figures instead of vanishing.
    // The key as the route of the path would read it (Anthropic's, under its path or with
    // its version header); on any other path a lone `x-api-key` is still the key sent.
    let anthropic = uri.path().starts_with("/v1/messages")
        || super::anthropic_version::names_a_version(&headers);
    let credential = parse::credential(&headers, anthropic)
        .ok()
        .flatten()
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
        .map(|key| key.trim().to_string());
    let refusal = crate::model::EdgeRefusal {
        status: 404,
        code: "unknown_route",
        workload_item: None,
    };
    let seq = app.shared.lock().arrive_refused(
        method.as_str(),
        uri.path(),
        credential.as_deref(),
        refusal,
    );
    // Under Anthropic's path (`/v1/messages/batches`), in
    // Anthropic's words, with its `request-id`, which its SDK reads.
    if uri.path().starts_with("/v1/messages/") {
        return json_response(
            404,
            &[
                ("x-stampede-seq".to_string(), seq.to_string()),
                ("request-id".to_string(), format!("req_{seq:012}")),
            ],
            &super::anthropic::error_body(404, &format!("no route for {method} {}", uri.path())),
        );
    }
    json_response(
        404,
        &[
            ("x-stampede-seq".to_string(), seq.to_string()),
            ("x-request-id".to_string(), format!("req_{seq:012}")),
        ],
        &error_body(
            &format!(
                "no route for {method} {}: see /v1/chat/completions, /v1/responses, /v1/messages, /v1/embeddings, /v1/models, /v1/records, /v1/items/{{id}}, /_stampede/*",
                if uri.path().is_empty() { uri.to_string() } else { uri.path().to_string() }
            ),
            "invalid_request_error",
            "unknown_route",
        ),
    )
}

pub(crate) async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> Response<Body> {
    let message = format!("{method} is not allowed on {}", uri.path());
    // Under Anthropic's paths in Anthropic's words, which its SDK reads.
    if uri.path().starts_with("/v1/messages") {
        return json_response(405, &[], &super::anthropic::error_body(405, &message));
    }
    json_response(
        405,
        &[],
        &error_body(&message, "invalid_request_error", "method_not_allowed"),
    )
}
