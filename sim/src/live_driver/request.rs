//! A provider attempt as HTTP: the same `Request` the virtual driver hands the model, put
//! on the wire the way the server reads it back (route, `Authorization`, `Idempotency-Key`,
//! `x-stampede-*` attribution, and a body that the server prices and hashes the same way).

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, Uri};
use serde_json::json;
use stampede_provider::model::{FindBy, Request, RequestRoute};

/// Everything but the body and headers of an HTTP attempt: the method and path.
fn target(route: &RequestRoute) -> (Method, String) {
    match route {
        RequestRoute::ChatCompletions => (Method::POST, "/v1/chat/completions".into()),
        RequestRoute::Messages => (Method::POST, "/v1/messages".into()),
        RequestRoute::Embeddings => (Method::POST, "/v1/embeddings".into()),
        RequestRoute::CreateRecord => (Method::POST, "/v1/records".into()),
        RequestRoute::GetRecord { id } => (Method::GET, format!("/v1/records/{}", escape(id))),
        RequestRoute::FindRecords {
            by: FindBy::IdempotencyKey(k),
        } => (
            Method::GET,
            format!("/v1/records?idempotency_key={}", escape(k)),
        ),
        RequestRoute::FindRecords {
            by: FindBy::ExternalRef(r),
        } => (
            Method::GET,
            format!("/v1/records?external_ref={}", escape(r)),
        ),
        RequestRoute::GetItem { id } => (Method::GET, format!("/v1/items/{}", escape(id))),
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

/// The JSON body of an action's request (chat completions and record writes; `None` for
/// bodiless routes), as the live driver sends it and as `--client` workloads hand it out.
pub fn json_body(req: &Request) -> Option<serde_json::Value> {
    let hash = format!("{:016x}", req.body_hash);
    let v = match req.route {
        RequestRoute::ChatCompletions => json!({
            "model": "stampede-fake",
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
    http_request_with(base, req, super::body::render(req).map(Bytes::from))
}

/// [`http_request`] with the body already rendered (`body::render` of `req`). The body is
/// stable across the action's attempts, so a replay with the same `Idempotency-Key` carries
/// the same body, as a real client's would.
pub fn http_request_with(
    base: &str,
    req: &Request,
    body: Option<Bytes>,
) -> Result<hyper::Request<Full<Bytes>>, String> {
    let (method, path) = target(&req.route);
    let uri: Uri = format!("{}{path}", base.trim_end_matches('/'))
        .parse()
        .map_err(|e| format!("cannot form a URL from {base:?} and {path:?}: {e}"))?;
    // Straight into the request's header map, sized once: a builder re-checks each name
    // and grows its map as headers come.
    let mut http = hyper::Request::new(Full::new(Bytes::new()));
    *http.method_mut() = method;
    *http.uri_mut() = uri;
    let headers = http.headers_mut();
    headers.reserve(8);
    let mut header = |name: HeaderName, value: &str| match HeaderValue::from_str(value) {
        Ok(v) => {
            headers.append(name, v);
            Ok(())
        }
        Err(_) => Err(format!("header {name} cannot carry {value:?}")),
    };
    if let Some(key) = &req.credential {
        header(AUTHORIZATION, &format!("Bearer {key}"))?;
    }
    if let Some(key) = &req.idempotency_key {
        header(IDEMPOTENCY_KEY, key)?;
    }
    if let Some(t) = &req.tenant {
        header(TENANT, t)?;
    }
    if let Some(c) = &req.class {
        header(CLASS, c)?;
    }
    if let Some(a) = req.action {
        header(ACTION, &a.to_string())?;
    }
    if let Some(n) = req.attempt_no {
        header(ATTEMPT, &n.to_string())?;
    }
    if let Some(b) = body {
        header(CONTENT_TYPE, "application/json")?;
        *http.body_mut() = Full::new(b);
    }
    Ok(http)
}

const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
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
    }
}
