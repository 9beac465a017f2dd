//! One attempt over HTTP, and whatever happened to it as an `Outcome` the core can classify.
//!
//! The client is hyper-util's legacy client with `retry_canceled_requests(false)`: when a
//! pooled connection turns out closed, it hands the error back instead of sending the
//! request again on a fresh connection, so the core stays the only retry layer (the live
//! tests count the journal's arrivals against the core's `Send`s to prove it).
//!
//! Failures below HTTP, and what they tell about the request:
//! - connect refused / DNS / connect timeout, and a pooled connection found closed before
//!   the request was handed to it: nothing left the client (never arrived);
//! - hyper reporting the request *canceled* (the connection closed before hyper started
//!   writing it): never arrived, `ResetBeforeWrite`;
//! - any other connection error once the request was handed to the connection — closed
//!   before a complete response, reset while writing or reading: hyper cannot say how much
//!   of the request the provider read, so it is taken as may-have-executed
//!   (`ResetAfterWrite`), the safe side. A provider that reads the whole request and then
//!   drops it without committing is therefore seen as an uncertain attempt here, where the
//!   virtual driver (which knows) reports `ResetBeforeWrite`;
//! - no complete answer within the attempt's timeout: `ReadTimeout`;
//! - a server-sent-events stream that ends without `[DONE]` (cut, or an `error` event):
//!   `StreamCut { tokens_delivered }` with the content chunks that arrived.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use stampede_core::{Outcome, Response, SendAttempt, SendKind, TransportFailure};

use super::dilate::Dilation;
use crate::driver_common::translate;

/// The HTTP client of a live run: no retries, no idle-connection expiry.
#[derive(Clone)]
pub struct Transport {
    client: Client<HttpConnector, Full<Bytes>>,
    dilation: Dilation,
}

impl Transport {
    /// A client with this connect timeout (real ms) that rewrites answers with `dilation`.
    pub fn new(connect_timeout_ms: u64, dilation: Dilation) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(Duration::from_millis(connect_timeout_ms.max(1))));
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .retry_canceled_requests(false)
            // An idle pooled connection is dropped after 30 s, before the provider's own idle
            // timeout (60 s) closes it under us: reusing a socket the server already closed
            // would fail an attempt that never left. Expiry is checked at checkout, so no
            // request is ever re-sent because of it (retries stay off).
            .pool_idle_timeout(std::time::Duration::from_secs(30))
            .build(connector);
        Self { client, dilation }
    }

    /// Sends `request` for `send` and waits at most `timeout` (real) for the whole answer.
    pub async fn attempt(
        &self,
        send: &SendAttempt,
        request: hyper::Request<Full<Bytes>>,
        stream: bool,
        timeout: Duration,
    ) -> Outcome {
        match tokio::time::timeout(timeout, self.exchange(send, request, stream)).await {
            Ok(outcome) => outcome,
            Err(_) => Outcome::Transport(TransportFailure::ReadTimeout),
        }
    }

    async fn exchange(
        &self,
        send: &SendAttempt,
        request: hyper::Request<Full<Bytes>>,
        stream: bool,
    ) -> Outcome {
        let response = match self.client.request(request).await {
            Ok(r) => r,
            Err(e) => return Outcome::Transport(classify(&e)),
        };
        let status = response.status().as_u16();
        // Only what the core reads (Retry-After, the rate-limit families) is copied out: the
        // rest of an answer's headers (date, length, ids) were two strings each per attempt.
        let mut headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .filter(|(n, _)| Response::reads_header(n.as_str()))
            .filter_map(|(n, v)| Some((n.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect();
        self.dilation.apply(&mut headers);
        let is_sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let body = response.into_body();
        if stream && status == 200 && is_sse {
            return read_stream(send, status, headers, body).await;
        }
        match Limited::new(body, MAX_ANSWER_BYTES).collect().await {
            // Past the cap the body is not read: the status and headers say what happened,
            // as for an answer whose body says nothing the core reads (a huge body held
            // in memory once per attempt in flight took 1.7 GB).
            Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
                translate::answered(send, status, headers, &Value::Null, None)
            }
            Ok(collected) => {
                let bytes = collected.to_bytes();
                if matches!(send.kind, SendKind::Action) {
                    if let Ok(heard) = serde_json::from_slice::<Heard<'_>>(&bytes) {
                        return heard.answer(send, status, headers);
                    }
                }
                let json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let usage = usage_of(&json);
                translate::answered(send, status, headers, &json, usage)
            }
            // Status and headers came, the body did not: the request was read, so it may
            // have executed.
            Err(_) => Outcome::Transport(TransportFailure::ResetAfterWrite),
        }
    }
}

/// Largest answer body read (bytes): real answers are a few KB, an embeddings answer of
/// a full batch tens of MB.
pub const MAX_ANSWER_BYTES: usize = 64 << 20;

/// What an action's answer body says that the core reads: the provider's id of the
/// operation, the usage of a completion, and an error's code. Read straight off the body:
/// the rest (a completion's choices and text) is skipped, where a `Value` of the whole body
/// cost a map node and a string per key. A body this shape does not fit (not an object,
/// an id or code that is not a string, a usage that is not an object of numbers, a
/// repeated key) is read as a `Value` instead, so both readings give the same answer.
#[derive(serde::Deserialize)]
struct Heard<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<HeardUsage>,
    #[serde(borrow, default)]
    error: Option<HeardError<'a>>,
}

/// `usage`: either count missing or not a whole number means no usage, as in [`usage_of`].
#[derive(serde::Deserialize)]
struct HeardUsage {
    #[serde(default)]
    prompt_tokens: Option<serde_json::Number>,
    #[serde(default)]
    completion_tokens: Option<serde_json::Number>,
}

/// `error`: its `code`, when it is a string.
#[derive(serde::Deserialize)]
struct HeardError<'a> {
    #[serde(borrow, default)]
    code: Option<Cow<'a, str>>,
}

impl Heard<'_> {
    /// The outcome [`translate::answered`] gives for the same body.
    fn answer(self, send: &SendAttempt, status: u16, headers: Vec<(String, String)>) -> Outcome {
        let usage = self.usage.and_then(|u| {
            let n = |n: Option<serde_json::Number>| n?.as_u64().map(|x| x as u32);
            Some((n(u.prompt_tokens)?, n(u.completion_tokens)?))
        });
        let error_code = self.error.and_then(|e| e.code).map(Cow::into_owned);
        translate::answered_parts(send, status, headers, self.id.as_deref(), error_code, usage)
    }
}

/// `usage` of a completion body or final stream chunk: (prompt, completion) tokens.
fn usage_of(v: &Value) -> Option<(u32, u32)> {
    let u = v.get("usage")?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64).map(|x| x as u32);
    Some((n("prompt_tokens")?, n("completion_tokens")?))
}

/// Reads a server-sent-events completion to its end, counting content chunks (tokens).
async fn read_stream(
    send: &SendAttempt,
    status: u16,
    headers: Vec<(String, String)>,
    mut body: Incoming,
) -> Outcome {
    let mut buf = BytesMut::new();
    let mut tokens: u32 = 0;
    let mut usage = None;
    let mut id = None;
    loop {
        let frame = match body.frame().await {
            None => break,
            Some(Ok(f)) => f,
            Some(Err(_)) => break,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buf.extend_from_slice(&data);
        while let Some(end) = find(&buf, b"\n\n") {
            let event = buf.split_to(end + 2);
            let text = String::from_utf8_lossy(&event);
            if text.lines().any(|l| l.trim() == "event: error") {
                return Outcome::Transport(TransportFailure::StreamCut {
                    tokens_delivered: tokens,
                });
            }
            for line in text.lines() {
                let Some(data) = line.strip_prefix("data:").map(str::trim) else {
                    continue;
                };
                if data == "[DONE]" {
                    let body = serde_json::json!({ "id": id, "usage": null });
                    return translate::answered(send, status, headers, &body, usage);
                }
                let Ok(chunk) = serde_json::from_str::<Value>(data) else {
                    continue;
                };
                if id.is_none() {
                    id = chunk.get("id").and_then(Value::as_str).map(str::to_string);
                }
                let content = chunk
                    .pointer("/choices/0/delta/content")
                    .and_then(Value::as_str);
                if content.is_some_and(|c| !c.is_empty()) {
                    tokens += 1;
                }
                if let Some(u) = usage_of(&chunk) {
                    usage = Some(u);
                }
            }
        }
    }
    // The stream ended (cut or closed) before `[DONE]`.
    Outcome::Transport(TransportFailure::StreamCut {
        tokens_delivered: tokens,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// What a client error says about whether the request reached the provider.
fn classify(e: &hyper_util::client::legacy::Error) -> TransportFailure {
    let mut io_kind = None;
    let mut hyper_canceled = false;
    let mut text = String::new();
    let mut source: Option<&(dyn StdError + 'static)> = e.source();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            io_kind.get_or_insert(io.kind());
        }
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            hyper_canceled |= h.is_canceled();
        }
        text.push_str(&s.to_string().to_ascii_lowercase());
        text.push(' ');
        source = s.source();
    }
    if e.is_connect() {
        return match io_kind {
            Some(std::io::ErrorKind::TimedOut) => TransportFailure::ConnectTimeout,
            _ if text.contains("timed out") || text.contains("timeout") => {
                TransportFailure::ConnectTimeout
            }
            _ if text.contains("dns") || text.contains("resolve") => TransportFailure::Dns,
            // Refused, or a pooled connection found closed before anything was written.
            _ => TransportFailure::ConnectRefused,
        };
    }
    if hyper_canceled {
        TransportFailure::ResetBeforeWrite
    } else {
        TransportFailure::ResetAfterWrite
    }
}

#[cfg(test)]
mod tests {

    use stampede_core::Route;

    use super::*;

    fn action() -> SendAttempt {
        SendAttempt {
            attempt: 1,
            job: 1,
            attempt_no: 1,
            kind: SendKind::Action,
            credential: "sk-1".into(),
            scope: "account".into(),
            route: Route::ChatCompletion,
            idempotency_key: None,
            reserved_tokens: 0,
            timeout_ms: 1_000,
            model: None,
            fallback: None,
            degraded: None,
            trimmed: None,
        }
    }

    /// An answer whose body is past the cap is read by its status and headers alone, and
    /// the body is not held: a 200 of 100 MB is a success, not 100 MB per attempt.
    #[tokio::test]
    async fn a_body_past_the_cap_is_not_read() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 4096];
            let _ = socket.read(&mut request).await;
            let length = MAX_ANSWER_BYTES + (1 << 20);
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nretry-after: 7\r\ncontent-length: {length}\r\n\r\n"
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let block = vec![b' '; 1 << 20];
            for _ in 0..=MAX_ANSWER_BYTES >> 20 {
                if socket.write_all(&block).await.is_err() {
                    return;
                }
            }
        });
        let transport = Transport::new(
            1_000,
            Dilation {
                scale: 1.0,
                real_start_unix_ms: 0,
                scenario_epoch_unix_ms: 0,
            },
        );
        let request = hyper::Request::post(format!("http://{addr}/v1/chat/completions"))
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        let outcome = transport
            .attempt(&action(), request, false, Duration::from_secs(60))
            .await;
        match outcome {
            Outcome::Response(r) => {
                assert_eq!(r.status, 200);
                assert_eq!(r.usage, None);
                assert!(r
                    .headers
                    .iter()
                    .any(|(n, v)| n == "retry-after" && v == "7"));
            }
            other => panic!("a 200 past the cap read as {other:?}"),
        }
    }

    /// The answer read off an action's body by `Heard` (when it fits) is the answer read
    /// from the body as a `Value`, for the bodies a provider sends and for odd ones.
    #[test]
    fn reading_the_fields_the_core_needs_gives_what_reading_the_whole_body_gives() {
        let bodies: [&str; 16] = [
            r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"aaaa"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}"#,
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
            r#"{"error":{"message":"x","code":null}}"#,
            r#"{"error":"overloaded"}"#,
            r#"{"id":"rec_\u0031","status":"committed"}"#,
            r#"{"id":42,"usage":{"prompt_tokens":1,"completion_tokens":2}}"#,
            r#"{"id":"a","usage":{"prompt_tokens":1.5,"completion_tokens":2}}"#,
            r#"{"id":"a","usage":{"prompt_tokens":-1,"completion_tokens":2}}"#,
            r#"{"id":"a","usage":{"prompt_tokens":7}}"#,
            r#"{"id":"a","usage":null,"error":null}"#,
            r#"{"id":"a","id":"b"}"#,
            r#"{"usage":"lots"}"#,
            r#"[1,2,3]"#,
            "",
            "<html>bad gateway</html>",
            r#"{"id":"a","usage":{"prompt_tokens":4294967296,"completion_tokens":1}}"#,
        ];
        let send = action();
        let mut typed = 0;
        for body in bodies {
            for status in [200, 201, 400, 429, 503] {
                let json: Value = serde_json::from_str(body).unwrap_or(Value::Null);
                let whole = translate::answered(&send, status, Vec::new(), &json, usage_of(&json));
                if let Ok(heard) = serde_json::from_str::<Heard<'_>>(body) {
                    typed += 1;
                    assert_eq!(
                        heard.answer(&send, status, Vec::new()),
                        whole,
                        "{status} {body}"
                    );
                }
            }
        }
        // Most bodies fit the typed reading; the rest fall back to the `Value` one.
        assert!(typed >= 40, "{typed} of 80 read typed");
    }
}
