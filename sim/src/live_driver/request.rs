//! A provider attempt as HTTP: the same `Request` the virtual driver hands the model, put
//! on the wire the way the server reads it back (route, `Authorization`, `Idempotency-Key`,
//! `x-stampede-*` attribution, and a body that the server prices and hashes the same way).

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, Uri};
use rustc_hash::FxHashMap;
use serde_json::json;
use stampede_provider::model::{FindBy, Request, RequestRoute};

/// The method of a request to `route`, as the provider model reads the route.
fn method(route: &RequestRoute) -> Method {
    if route.method() == "GET" {
        Method::GET
    } else {
        Method::POST
    }
}

/// The path (and query) of a request to `route`: its template, or for a route that names a
/// record, an item or a look-up, that one.
fn path(route: &RequestRoute) -> Cow<'static, str> {
    match route {
        RequestRoute::GetRecord { id } => format!("/v1/records/{}", escape(id)).into(),
        RequestRoute::FindRecords {
            by: FindBy::IdempotencyKey(k),
        } => format!("/v1/records?idempotency_key={}", escape(&k.text())).into(),
        RequestRoute::FindRecords {
            by: FindBy::ExternalRef(r),
        } => format!("/v1/records?external_ref={}", escape(r)).into(),
        RequestRoute::GetItem { id } => format!("/v1/items/{}", escape(id)).into(),
        RequestRoute::ChatCompletions
        | RequestRoute::Messages
        | RequestRoute::Responses
        | RequestRoute::CountTokens
        | RequestRoute::Embeddings
        | RequestRoute::CreateRecord => route.template().into(),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A prompt the server counts as `prompt_tokens` tokens: it charges one token per 4
/// characters plus 4 per message, so `4 * (tokens - 4)` characters in one message (prompts
/// under 5 tokens are charged 4, the least one message costs).
fn prompt_text(prompt_tokens: u32) -> String {
    "a".repeat(prompt_chars(prompt_tokens))
}

/// Characters of the prompt [`prompt_text`] writes for `prompt_tokens`.
pub(crate) fn prompt_chars(prompt_tokens: u32) -> usize {
    4 * prompt_tokens.saturating_sub(4) as usize
}

/// The model a request with none names asks for when the provider lists none (any name
/// is served then).
pub const UNNAMED_MODEL: &str = stampede_provider::model::UNNAMED_MODEL;

/// The model `req` asks for on the wire: its own, else [`UNNAMED_MODEL`]. A driver whose
/// provider lists models names the one it means (see `HttpWire::send`): the wire always
/// carries a model, as the real API requires.
pub fn model_of(req: &Request) -> &str {
    req.model.as_deref().unwrap_or(UNNAMED_MODEL)
}

/// The JSON body of an action's request (chat completions and record writes; `None` for
/// bodiless routes), as the live driver sends it and as `--client` workloads hand it out.
pub fn json_body(req: &Request) -> Option<serde_json::Value> {
    let hash = format!("{:016x}", req.body_hash);
    let v = match req.route {
        RequestRoute::ChatCompletions => json!({
            "model": model_of(req),
            "messages": [{ "role": "user", "content": prompt_text(req.prompt_tokens) }],
            "max_tokens": req.max_tokens,
            "stream": req.stream,
            "user": hash,
        }),
        RequestRoute::CreateRecord => json!({
            "payload": hash,
            "external_ref": req.external_ref,
        }),
        _ => return None,
    };
    let mut v = v;
    if req.stream_usage {
        v["stream_options"] = json!({ "include_usage": true });
    }
    Some(v)
}

/// Builds the HTTP request for `req` against `base` (`http://127.0.0.1:PORT`).
pub fn http_request(base: &str, req: &Request) -> Result<hyper::Request<Full<Bytes>>, String> {
    RequestWriter::new(base).write(req, super::body::render(req).map(Bytes::from))
}

/// Most header values a [`RequestWriter`] keeps made, per kind (credentials; tenant and
/// class names): a scenario names a few of each, so the bound only matters for a client
/// that made up names per request, whose values are then made each time.
const KEPT_VALUES: usize = 1_024;

/// Writes a run's HTTP requests against one base URL. What repeats from one attempt to the
/// next is made once and shared: the URI of each route with a fixed path, the
/// `Authorization` value of each credential, the value of each tenant and class name, so
/// an attempt costs a few allocations of its own (its key, numbers and body) rather than a
/// URL, a formatted bearer string and a copy of every header value.
pub struct RequestWriter {
    /// The provider's base URL, without a trailing `/`.
    base: String,
    /// The URI of each fixed-path route ([`fixed_route`]), parsed at its first request.
    fixed: [Option<Uri>; FIXED_ROUTES],
    /// `Bearer <key>` by credential.
    bearers: FxHashMap<Arc<str>, HeaderValue>,
    /// Tenant and class names as header values.
    names: FxHashMap<Arc<str>, HeaderValue>,
}

/// Routes whose path does not depend on the request (see [`fixed_route`]).
const FIXED_ROUTES: usize = 6;

/// The slot of a route whose path is fixed, `None` for one that carries an id or query.
fn fixed_route(route: &RequestRoute) -> Option<usize> {
    match route {
        RequestRoute::ChatCompletions => Some(0),
        RequestRoute::Messages => Some(1),
        RequestRoute::Embeddings => Some(2),
        RequestRoute::CreateRecord => Some(3),
        RequestRoute::Responses => Some(4),
        RequestRoute::CountTokens => Some(5),
        RequestRoute::GetRecord { .. }
        | RequestRoute::FindRecords { .. }
        | RequestRoute::GetItem { .. } => None,
    }
}

impl RequestWriter {
    /// A writer for requests to `base` (`http://127.0.0.1:PORT`).
    pub fn new(base: &str) -> Self {
        RequestWriter {
            base: base.trim_end_matches('/').to_string(),
            fixed: Default::default(),
            bearers: FxHashMap::default(),
            names: FxHashMap::default(),
        }
    }

    /// The HTTP request for `req`, with its body already rendered (`body::render` of
    /// `req`). The body is stable across the action's attempts, so a replay with the same
    /// `Idempotency-Key` carries the same body, as a real client's would.
    pub fn write(
        &mut self,
        req: &Request,
        body: Option<Bytes>,
    ) -> Result<hyper::Request<Full<Bytes>>, String> {
        let (method, uri) = self.target(&req.route)?;
        // Straight into the request's header map, sized once: a builder re-checks each name
        // and grows its map as headers come.
        let mut http = hyper::Request::new(Full::new(Bytes::new()));
        *http.method_mut() = method;
        *http.uri_mut() = uri;
        let headers = http.headers_mut();
        headers.reserve(8);
        if let Some(key) = &req.credential {
            let value = kept(&mut self.bearers, key, |key| format!("Bearer {key}"))
                .map_err(|_| "header authorization cannot carry the credential".to_string())?;
            headers.append(AUTHORIZATION, value);
        }
        if let Some(key) = &req.idempotency_key {
            headers.append(IDEMPOTENCY_KEY, value_of(&IDEMPOTENCY_KEY, &key.text())?);
        }
        // Anthropic's routes refuse a request that names no API version, as the real API
        // does; every Anthropic client names one.
        if matches!(
            req.route,
            RequestRoute::Messages | RequestRoute::CountTokens
        ) {
            headers.append(
                ANTHROPIC_VERSION,
                HeaderValue::from_static(ANTHROPIC_API_VERSION),
            );
        }
        for (name, text) in [(TENANT, &req.tenant), (CLASS, &req.class)] {
            if let Some(text) = text {
                let value = kept(&mut self.names, text, |t| t.to_string())
                    .map_err(|_| format!("header {name} cannot carry {text:?}"))?;
                headers.append(name, value);
            }
        }
        if let Some(a) = req.action {
            headers.append(ACTION, HeaderValue::from(a));
        }
        if let Some(n) = req.attempt_no {
            headers.append(ATTEMPT, HeaderValue::from(n));
        }
        if let Some(b) = body {
            headers.append(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            *http.body_mut() = Full::new(b);
        }
        Ok(http)
    }

    /// The method and URI of a request to `route`.
    fn target(&mut self, route: &RequestRoute) -> Result<(Method, Uri), String> {
        let slot = fixed_route(route);
        if let Some(uri) = slot.and_then(|i| self.fixed[i].as_ref()) {
            return Ok((method(route), uri.clone()));
        }
        let path = path(route);
        let uri: Uri = format!("{}{path}", self.base)
            .parse()
            .map_err(|e| format!("cannot form a URL from {:?} and {path:?}: {e}", self.base))?;
        if let Some(i) = slot {
            self.fixed[i] = Some(uri.clone());
        }
        Ok((method(route), uri))
    }
}

/// `text` as header `name`'s value, or the reason it cannot be one.
fn value_of(name: &HeaderName, text: &str) -> Result<HeaderValue, String> {
    HeaderValue::from_str(text).map_err(|_| format!("header {name} cannot carry {text:?}"))
}

/// The header value `render` makes of `text`, made once and kept in `values` (up to
/// [`KEPT_VALUES`]); a clone shares its bytes.
fn kept(
    values: &mut FxHashMap<Arc<str>, HeaderValue>,
    text: &Arc<str>,
    render: impl FnOnce(&str) -> String,
) -> Result<HeaderValue, hyper::header::InvalidHeaderValue> {
    if let Some(value) = values.get(&**text) {
        return Ok(value.clone());
    }
    let value = HeaderValue::from_str(&render(text))?;
    if values.len() < KEPT_VALUES {
        values.insert(Arc::clone(text), value.clone());
    }
    Ok(value)
}

const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
const ANTHROPIC_VERSION: HeaderName = HeaderName::from_static("anthropic-version");
/// The `anthropic-version` a request to Anthropic's routes names: the one the official SDKs
/// sent until 2026-10-21 (their majors since send `2026-10-21`), which every API version
/// since still takes, and under which every field the driver sends is one.
const ANTHROPIC_API_VERSION: &str = "2023-06-01";
const TENANT: HeaderName = HeaderName::from_static("x-stampede-tenant");
const CLASS: HeaderName = HeaderName::from_static("x-stampede-class");
const ACTION: HeaderName = HeaderName::from_static("x-stampede-action");
const ATTEMPT: HeaderName = HeaderName::from_static("x-stampede-attempt");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_ups_escape_their_query() {
        let req = Request {
            route: RequestRoute::FindRecords {
                by: FindBy::IdempotencyKey("acme:t 1/#".into()),
            },
            ..Request::default()
        };
        let http = http_request("http://127.0.0.1:9", &req).unwrap();
        assert_eq!(
            http.uri().path_and_query().unwrap().as_str(),
            "/v1/records?idempotency_key=acme%3At%201%2F%23"
        );
        assert_eq!(http.method(), Method::GET);
    }

    #[test]
    fn a_prompt_is_priced_as_the_tokens_it_stands_for() {
        // The server's rule: ceil(chars / 4) + 4 per message.
        for tokens in [5u32, 200, 801] {
            let chars = prompt_text(tokens).len() as u32;
            assert_eq!(chars.div_ceil(4) + 4, tokens);
        }
    }

    #[test]
    fn attribution_rides_in_headers() {
        let req = Request {
            route: RequestRoute::CreateRecord,
            credential: Some("sk-1".into()),
            idempotency_key: Some("k1".into()),
            tenant: Some("acme".into()),
            class: Some("tool".into()),
            action: Some(7),
            attempt_no: Some(2),
            ..Request::default()
        };
        let http = http_request("http://127.0.0.1:9/", &req).unwrap();
        let h = http.headers();
        assert_eq!(h["authorization"], "Bearer sk-1");
        assert_eq!(h["idempotency-key"], "k1");
        assert_eq!(h["x-stampede-action"], "7");
        assert_eq!(h["x-stampede-attempt"], "2");
        assert_eq!(h["x-stampede-tenant"], "acme");
        assert_eq!(h["x-stampede-class"], "tool");
        assert!(
            !h.contains_key("anthropic-version"),
            "OpenAI's routes name none"
        );
    }

    #[test]
    fn anthropics_routes_name_the_api_version() {
        for route in [RequestRoute::Messages, RequestRoute::CountTokens] {
            let req = Request {
                route,
                credential: Some("sk-1".into()),
                ..Request::default()
            };
            let http = http_request("http://127.0.0.1:9", &req).unwrap();
            assert_eq!(http.headers()["anthropic-version"], ANTHROPIC_API_VERSION);
        }
    }
}
