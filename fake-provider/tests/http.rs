//! The server over loopback with a real client (reqwest, which does not retry).

use serde_json::{json, Value};
use stampede_provider::config::{
    ConnectionFault, CredentialConfig, DurationMs, FaultRule, LatencyConfig, ProviderConfig,
    RetryAfterFormat, RouteName, ScopeLimits,
};
use stampede_provider::server::ServerHandle;
use stampede_provider::spawn_ephemeral;
use std::time::Duration;

/// An `anthropic-version` Anthropic's routes take: the one the official SDKs sent until
/// 2026-10-21 (their majors since send `2026-10-21`), under which every body field is taken.
const ANTHROPIC_VERSION: &str = "2023-06-01";

fn scope(id: &str, rpm: Option<u64>) -> ScopeLimits {
    ScopeLimits {
        rpm,
        ..ScopeLimits::unlimited(id)
    }
}

fn cred(key: &str, scope: &str) -> CredentialConfig {
    CredentialConfig {
        key: key.into(),
        scope: scope.into(),
        scopes: Vec::new(),
    }
}

/// One scope `a` (key `sk-a-test-key`) with `rpm`, fast answers, and these faults.
fn config(rpm: Option<u64>, faults: Vec<FaultRule>) -> ProviderConfig {
    ProviderConfig {
        latency: LatencyConfig::fixed_ms(5),
        tool_latency: LatencyConfig::fixed_ms(5),
        reject_latency: DurationMs(0),
        scopes: vec![scope("a", rpm)],
        credentials: vec![cred("sk-a-test-key", "a")],
        faults,
        ..ProviderConfig::default()
    }
}

fn fault(f: impl FnOnce(&mut FaultRule)) -> FaultRule {
    let mut r = FaultRule::default();
    f(&mut r);
    r
}

struct Server {
    base: String,
    client: reqwest::Client,
    _handle: ServerHandle,
}

async fn start(config: ProviderConfig) -> Server {
    let (addr, handle) = spawn_ephemeral(config, 7).await.expect("server starts");
    Server {
        base: format!("http://{addr}"),
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap(),
        _handle: handle,
    }
}

impl Server {
    /// A POST of `body` to Anthropic's `path` with the test key as `x-api-key` and the
    /// `anthropic-version` every Anthropic client sends.
    fn anthropic(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.client
            .post(format!("{}{path}", self.base))
            .header("x-api-key", "sk-a-test-key")
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(body)
    }

    fn chat(&self, key: &str) -> reqwest::RequestBuilder {
        self.client
            .post(format!("{}/v1/chat/completions", self.base))
            .bearer_auth(key)
            .json(&json!({ "model": "m", "messages": [{ "role": "user", "content": "hello" }], "max_tokens": 8 }))
    }

    fn record(&self, key: Option<&str>, external_ref: &str, note: &str) -> reqwest::RequestBuilder {
        let mut b = self
            .client
            .post(format!("{}/v1/records", self.base))
            .bearer_auth("sk-a-test-key")
            .json(&json!({ "external_ref": external_ref, "note": note }));
        if let Some(k) = key {
            b = b.header("idempotency-key", k);
        }
        b
    }

    async fn find_by_key(&self, key: &str) -> Vec<Value> {
        let v: Value = self
            .client
            .get(format!("{}/v1/records?idempotency_key={key}", self.base))
            .bearer_auth("sk-a-test-key")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        v["data"].as_array().cloned().unwrap_or_default()
    }

    async fn journal(&self) -> Vec<Value> {
        let text = self
            .client
            .get(format!("{}/_stampede/journal", self.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    async fn stats(&self) -> Value {
        self.client
            .get(format!("{}/_stampede/stats", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn rate_limit_429_with_retry_after_seconds_and_an_early_retry_is_a_violation() {
    let s = start(config(Some(1), vec![])).await;
    let ok = s.chat("sk-a-test-key").send().await.unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.headers()["x-ratelimit-limit-requests"], "1");
    let body: Value = ok.json().await.unwrap();
    assert!(body["usage"]["completion_tokens"].as_u64().unwrap() <= 8);

    let limited = s.chat("sk-a-test-key").send().await.unwrap();
    assert_eq!(limited.status(), 429);
    let h = limited.headers().clone();
    let secs: u64 = h["retry-after"].to_str().unwrap().parse().unwrap();
    let ms: u64 = h["retry-after-ms"].to_str().unwrap().parse().unwrap();
    assert!(
        (1..=60).contains(&secs) && ms <= secs * 1_000,
        "{secs} {ms}"
    );
    assert_eq!(h["x-ratelimit-remaining-requests"], "0");
    assert!(h["ratelimit-policy"]
        .to_str()
        .unwrap()
        .contains("\"rpm\";q=1;w=60"));
    assert!(h.contains_key("ratelimit"));
    let body: Value = limited.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");

    // Retried at once, long before the Retry-After passed.
    assert_eq!(s.chat("sk-a-test-key").send().await.unwrap().status(), 429);
    let j = s.journal().await;
    let flags: Vec<bool> = j
        .iter()
        .map(|e| e["retry_after_violation"].as_bool().unwrap())
        .collect();
    assert_eq!(flags, vec![false, false, true]);
    assert_eq!(j[1]["outcome"], "429");
    assert_eq!(s.stats().await["retry_after_violations"], 1);
}

#[tokio::test]
async fn rate_limit_429_with_retry_after_as_http_date() {
    let mut c = config(Some(1), vec![]);
    c.retry_after_format = RetryAfterFormat::HttpDate;
    let s = start(c).await;
    s.chat("sk-a-test-key").send().await.unwrap();
    let limited = s.chat("sk-a-test-key").send().await.unwrap();
    assert_eq!(limited.status(), 429);
    let date = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .to_string();
    let when = httpdate::parse_http_date(&date).expect("an HTTP-date");
    let wait = when
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default();
    assert!(wait <= Duration::from_secs(61), "{date}");
    assert!(limited.headers().contains_key("retry-after-ms"));
}

#[tokio::test]
async fn service_unavailable_503_with_retry_after() {
    let s = start(config(
        None,
        vec![fault(|f| {
            f.status = Some(503);
            f.nth = Some(1);
            f.retry_after = Some(DurationMs(3_000));
        })],
    ))
    .await;
    let r = s.chat("sk-a-test-key").send().await.unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "3");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "service_unavailable");
    assert_eq!(s.chat("sk-a-test-key").send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn drop_after_commit_closes_the_connection_but_the_record_exists() {
    let s = start(config(
        None,
        vec![fault(|f| {
            f.fault = Some(ConnectionFault::DropAfterCommit);
            f.nth = Some(1);
        })],
    ))
    .await;
    let err = s
        .record(Some("key-1"), "order-1", "x")
        .send()
        .await
        .unwrap_err();
    assert!(!err.is_status() && !err.is_timeout(), "{err:?}");
    let found = s.find_by_key("key-1").await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["external_ref"], "order-1");
    // The keyed retry replays the original: no second effect.
    let retry = s
        .record(Some("key-1"), "order-1", "x")
        .send()
        .await
        .unwrap();
    assert_eq!(retry.status(), 200);
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    let j = s.journal().await;
    assert_eq!(j[0]["outcome"], "dropped");
    assert_eq!(j[0]["committed"], true);
    assert_eq!(s.stats().await["duplicates"], 0);
}

#[tokio::test]
async fn drop_before_commit_leaves_no_record() {
    let s = start(config(
        None,
        vec![fault(|f| {
            f.fault = Some(ConnectionFault::DropBeforeCommit);
            f.route = Some(RouteName::CreateRecord);
        })],
    ))
    .await;
    assert!(s
        .record(Some("key-2"), "order-2", "x")
        .send()
        .await
        .is_err());
    assert!(s.find_by_key("key-2").await.is_empty());
    let j = s.journal().await;
    assert_eq!(
        (j[0]["outcome"].as_str(), j[0]["committed"].as_bool()),
        (Some("dropped"), Some(false))
    );
}

#[tokio::test]
async fn idempotency_in_flight_409_mismatch_400_and_replay() {
    let mut c = config(None, vec![]);
    c.tool_latency = LatencyConfig::fixed_ms(400);
    let s = start(c).await;
    let first = tokio::spawn(s.record(Some("key-3"), "order-3", "x").send());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let busy = s
        .record(Some("key-3"), "order-3", "x")
        .send()
        .await
        .unwrap();
    assert_eq!(busy.status(), 409);
    let body: Value = busy.json().await.unwrap();
    assert_eq!(body["error"]["code"], "idempotency_key_in_use");
    let first = first.await.unwrap().unwrap();
    assert_eq!(first.status(), 200);
    let original: Value = first.json().await.unwrap();

    let mismatch = s
        .record(Some("key-3"), "order-3", "different")
        .send()
        .await
        .unwrap();
    assert_eq!(mismatch.status(), 400);
    let body: Value = mismatch.json().await.unwrap();
    assert_eq!(body["error"]["code"], "idempotency_error");

    let replay = s
        .record(Some("key-3"), "order-3", "x")
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 200);
    let again: Value = replay.json().await.unwrap();
    assert_eq!(again["id"], original["id"]);
    assert_eq!(s.find_by_key("key-3").await.len(), 1);
}

#[tokio::test]
async fn sse_stream_cut_after_k_chunks() {
    let s = start(config(
        None,
        vec![fault(|f| {
            f.fault = Some(ConnectionFault::StreamCut);
            f.after_chunks = Some(3);
        })],
    ))
    .await;
    let resp = s
        .client
        .post(format!("{}/v1/chat/completions", s.base))
        .bearer_auth("sk-a-test-key")
        .json(&json!({ "model": "m", "messages": [{ "role": "user", "content": "hi" }], "max_tokens": 500, "stream": true }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let (body, failed) = sse_text(resp).await;
    assert!(failed, "the stream must end in an error, got {body:?}");
    assert_eq!(body.matches("data: ").count(), 3, "{body}");
    assert!(!body.contains("[DONE]"));
    assert_eq!(s.journal().await[0]["outcome"], "stream_cut");
}

#[tokio::test]
async fn two_keys_share_a_scope_while_a_third_scope_is_unaffected() {
    let mut c = config(Some(2), vec![]);
    c.scopes.push(scope("b", Some(2)));
    c.credentials.push(cred("sk-a-second-key", "a"));
    c.credentials.push(cred("sk-b-own-key", "b"));
    let s = start(c).await;
    assert_eq!(s.chat("sk-a-test-key").send().await.unwrap().status(), 200);
    assert_eq!(
        s.chat("sk-a-second-key").send().await.unwrap().status(),
        200
    );
    assert_eq!(
        s.chat("sk-a-second-key").send().await.unwrap().status(),
        429
    );
    assert_eq!(s.chat("sk-a-test-key").send().await.unwrap().status(), 429);
    let b = s.chat("sk-b-own-key").send().await.unwrap();
    assert_eq!(b.status(), 200);
    assert_eq!(b.headers()["x-ratelimit-remaining-requests"], "1");
    let st = s.stats().await;
    assert_eq!(st["scopes"]["a"]["rate_limited"], 2);
    assert_eq!(st["scopes"]["b"]["rate_limited"], 0);
}

#[tokio::test]
async fn bad_input_gets_json_errors_401_400_413_404() {
    let s = start(config(None, vec![])).await;
    let r = s.chat("sk-wrong").send().await.unwrap();
    assert_eq!(r.status(), 401);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_api_key");
    // The refused attempt reached the edge: journaled, key masked.
    assert_eq!(s.journal().await[0]["credential"], "****");

    let url = format!("{}/v1/chat/completions", s.base);
    let r = s
        .client
        .post(&url)
        .bearer_auth("sk-a-test-key")
        .body("{\"messages\": [")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("malformed JSON"));
    let r = s
        .client
        .post(&url)
        .bearer_auth("sk-a-test-key")
        .json(&json!({ "model": "m" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("messages"),
        "{body}"
    );

    // A 2 MiB prompt (a long context) is taken, as the real APIs take it.
    let long = "x".repeat(2 << 20);
    let r = s
        .client
        .post(&url)
        .bearer_auth("sk-a-test-key")
        .json(&json!({ "model": "m", "messages": [{ "role": "user", "content": long }] }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let big = "x".repeat(stampede_provider::server::DEFAULT_BODY_LIMIT + 1);
    let r = s
        .client
        .post(&url)
        .bearer_auth("sk-a-test-key")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    let seq: u64 = r.headers()["x-stampede-seq"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "payload_too_large");
    // Sent with a known key, it is an attempt the provider saw: journaled (a client that
    // re-sends it shows in the figures), where it had been left out.
    let journal = s.journal().await;
    let entry = journal
        .iter()
        .find(|e| e["seq"] == seq)
        .unwrap_or_else(|| panic!("seq {seq} in {journal:?}"));
    assert_eq!(entry["status"], 413, "{entry}");
    assert_eq!(entry["error_code"], "request_too_large", "{entry}");
    assert_eq!(entry["scope"], "a", "the key's scope: {entry}");
    // With a key the provider does not know, the key is refused first, as by the APIs.
    let r = s
        .client
        .post(&url)
        .bearer_auth("sk-wrong")
        .body("x".repeat(stampede_provider::server::DEFAULT_BODY_LIMIT + 1))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    let r = s
        .client
        .get(format!("{}/v2/nothing", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unknown_route");
    // A path whose percent-encoding decodes to no UTF-8 is refused in the API's JSON
    // (axum's own answer is plain text, which no SDK's error parser reads).
    for path in ["/v1/items/%FF", "/v1/records/%C3%28"] {
        // After the key, as any refused body: an unknown key is told 401.
        let r = s
            .client
            .get(format!("{}{path}", s.base))
            .bearer_auth("sk-wrong")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "{path}");
        let r = s
            .client
            .get(format!("{}{path}", s.base))
            .bearer_auth("sk-a-test-key")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{path}");
        assert!(
            r.headers().contains_key("x-stampede-seq"),
            "journaled: {path}"
        );
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid_request", "{path}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("percent-encode the UTF-8 bytes of the id"),
            "{path}: {body}"
        );
    }

    // Under Anthropic's path, Anthropic's 404 with the request-id its SDK reads.
    // The key is read as Anthropic's routes read it: `x-api-key` before a `Bearer` beside it.
    let r = s
        .client
        .post(format!("{}/v1/messages/batches", s.base))
        .header("x-api-key", "sk-a-test-key")
        .bearer_auth("sk-wrong-key-0001")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert!(r.headers().contains_key("request-id"));
    let seq: u64 = r.headers()["x-stampede-seq"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], "not_found_error", "{body}");
    let journal = s.journal().await;
    let entry = journal.iter().find(|e| e["seq"] == seq).unwrap();
    assert_eq!(entry["scope"], "a", "the x-api-key's scope: {entry}");
    // And a lower-case `bearer` is no part of the key on any path.
    let r = s
        .client
        .get(format!("{}/v2/nothing", s.base))
        .header("authorization", "bearer sk-a-test-key")
        .send()
        .await
        .unwrap();
    let seq: u64 = r.headers()["x-stampede-seq"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let journal = s.journal().await;
    let entry = journal.iter().find(|e| e["seq"] == seq).unwrap();
    assert_eq!(entry["scope"], "a", "the key's scope: {entry}");
}

/// A body or method Anthropic's routes refuse before reading the request is refused in
/// Anthropic's words (`{type: "error", error: {type, message}}`, which its SDK reads), not
/// OpenAI's; OpenAI's routes keep theirs.
#[tokio::test]
async fn anthropic_routes_refuse_bodies_and_methods_in_anthropic_words() {
    let s = start(config(None, vec![])).await;
    let big = "x".repeat(stampede_provider::server::DEFAULT_BODY_LIMIT + 1);
    for path in ["/v1/messages", "/v1/messages/count_tokens"] {
        let r = s
            .client
            .post(format!("{}{path}", s.base))
            .header("x-api-key", "sk-a-test-key")
            .header("anthropic-version", ANTHROPIC_VERSION)
            .body(big.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 413, "{path}");
        assert!(r.headers().contains_key("request-id"), "{path}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["type"], "error", "{path}: {body}");
        assert_eq!(body["error"]["type"], "request_too_large", "{path}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("limit")),
            "{path}: {body}"
        );
        let r = s
            .client
            .get(format!("{}{path}", s.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 405, "{path}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(
            body["error"]["type"], "invalid_request_error",
            "{path}: {body}"
        );
        assert!(body["error"].get("code").is_none(), "{path}: {body}");
    }
    let r = s
        .client
        .get(format!("{}/v1/chat/completions", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed", "{body}");
}

#[tokio::test]
async fn hang_until_the_client_gives_up_then_the_slot_is_released() {
    let mut c = config(
        None,
        vec![fault(|f| {
            f.fault = Some(ConnectionFault::Hang);
            f.nth = Some(1);
        })],
    );
    c.scopes[0].concurrency = Some(1);
    let s = start(c).await;
    let err = s
        .chat("sk-a-test-key")
        .timeout(Duration::from_millis(300))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert_eq!(s.journal().await[0]["outcome"], "hang");
    // The client went away: the server notices the closed connection and frees the slot.
    let mut in_flight = Value::Null;
    for _ in 0..100 {
        in_flight = s.stats().await["in_flight"].clone();
        if in_flight == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(in_flight, 0);
    assert_eq!(s.chat("sk-a-test-key").send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn control_plane_scenario_reset_and_metrics() {
    let s = start(config(None, vec![])).await;
    let toml = r#"
name = "other"
[provider]
[[provider.scopes]]
id = "z"
rpm = 1
[[provider.credentials]]
key = "sk-z-new-key"
scope = "z"
[client]
preset = "naive"
"#;
    let r = s
        .client
        .put(format!("{}/_stampede/scenario", s.base))
        .header("content-type", "application/toml")
        .body(toml)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(s.chat("sk-z-new-key").send().await.unwrap().status(), 200);
    assert_eq!(s.chat("sk-a-test-key").send().await.unwrap().status(), 401);
    let bad = s
        .client
        .put(format!("{}/_stampede/scenario", s.base))
        .header("content-type", "application/toml")
        .body("[provider]\n[[provider.scopes]]\nid = \"z\"\nrpm = 0\n")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body: Value = bad.json().await.unwrap();
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("provider.scopes.0.rpm"));
    // A body its Content-Type says is JSON is read as JSON whatever it starts with, so
    // what is wrong with it is said in JSON's terms, not TOML's.
    let bad = s
        .client
        .put(format!("{}/_stampede/scenario", s.base))
        .header("content-type", "application/json")
        .body("[{\"id\": \"z\"}]")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body: Value = bad.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("request body: ") && !message.contains("TOML"),
        "{message}"
    );

    let metrics = s
        .client
        .get(format!("{}/metrics", s.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("stampede_provider_attempts_total{outcome=\"200\"} 1"),
        "{metrics}"
    );
    let r = s
        .client
        .post(format!("{}/_stampede/reset", s.base))
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(s.journal().await.is_empty());
    assert_eq!(
        s.chat("sk-z-new-key").send().await.unwrap().status(),
        200,
        "quota reset"
    );
}

#[tokio::test]
async fn embeddings_are_a_cheap_call_charged_their_input() {
    let s = start(config(Some(100), vec![])).await;
    let r = s
        .client
        .post(format!("{}/v1/embeddings", s.base))
        .bearer_auth("sk-a-test-key")
        .json(&json!({ "model": "e", "input": "a sentence of some forty characters...." }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().contains_key("x-request-id"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["object"], "embedding");
    assert!(v["data"][0]["embedding"].as_array().unwrap().len() > 1);
    assert_eq!(v["usage"]["prompt_tokens"], 10);
    let j = s.journal().await;
    assert_eq!(j[0]["route"], "/v1/embeddings");
    assert_eq!(j[0]["tokens_used"], 10);
    // One vector for each input of a list, as OpenAI answers; a model is required.
    let r = s
        .client
        .post(format!("{}/v1/embeddings", s.base))
        .bearer_auth("sk-a-test-key")
        .json(&json!({ "model": "e", "input": ["a", "b", "c"] }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let indexes: Vec<&Value> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["index"])
        .collect();
    assert_eq!(indexes, [&json!(0), &json!(1), &json!(2)]);
    let r = s
        .client
        .post(format!("{}/v1/embeddings", s.base))
        .bearer_auth("sk-a-test-key")
        .json(&json!({ "input": "a" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["message"], "you must provide a model parameter");
}

#[tokio::test]
async fn unknown_routes_are_answered_404_and_journaled_and_sdk_claims_are_kept() {
    let s = start(config(None, vec![])).await;
    let r = s
        .client
        .post(format!("{}/v2/chat/completions", s.base))
        .bearer_auth("sk-a-test-key")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let e: Value = r.json().await.unwrap();
    let message = e["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("no route for POST /v2/chat/completions: see "),
        "{message}"
    );
    let sent = s
        .chat("sk-a-test-key")
        .header("x-stainless-retry-count", "2")
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 200);
    let j = s.journal().await;
    assert_eq!(j.len(), 2, "{j:?}");
    assert_eq!(
        (j[0]["route"].as_str(), j[0]["outcome"].as_str()),
        (Some("/v2/chat/completions"), Some("404"))
    );
    assert_eq!(j[0]["credential"], "sk-...", "masked");
    assert_eq!(j[1]["sdk_retry_count"], 2, "the SDK's claim, journaled");
    assert_eq!(j[1]["logical_attempt"], 1, "and not believed");
}

#[tokio::test]
async fn a_fault_can_say_x_should_retry_and_a_tpm_refusal_says_tokens() {
    let mut c = config(
        None,
        vec![fault(|f| {
            f.status = Some(503);
            f.nth = Some(1);
            f.should_retry = Some(false);
        })],
    );
    c.scopes[0].tpm = Some(20);
    let s = start(c).await;
    let first = s.chat("sk-a-test-key").send().await.unwrap();
    assert_eq!(first.status(), 503);
    assert_eq!(first.headers()["x-should-retry"], "false");
    // hello = 2 + 4 tokens and 8 out: 14 of 20; the next one does not fit.
    assert_eq!(s.chat("sk-a-test-key").send().await.unwrap().status(), 200);
    let refused = s.chat("sk-a-test-key").send().await.unwrap();
    assert_eq!(refused.status(), 429);
    let v: Value = refused.json().await.unwrap();
    assert_eq!(v["error"]["type"], "tokens", "{v}");
    assert_eq!(v["error"]["code"], "rate_limit_exceeded");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("Limit 20, Used 14. Please try again in"),
        "{message}"
    );
    // A request larger than the whole limit is told so, not to try again: no wait lets it
    // through.
    let huge = s
        .client
        .post(format!("{}/v1/chat/completions", s.base))
        .bearer_auth("sk-a-test-key")
        .json(&json!({ "model": "m", "messages": [{ "role": "user", "content": "hello" }], "max_tokens": 100 }))
        .send()
        .await
        .unwrap();
    assert_eq!(huge.status(), 429);
    let v: Value = huge.json().await.unwrap();
    assert_eq!(
        v["error"]["message"],
        "Request too large on tokens per min (TPM): Limit 20, Requested 106. The input or output tokens must be reduced in order to run successfully.",
        "{v}"
    );
}

/// A body the real APIs refuse is refused in their words, so a client that sends one learns
/// it here: OpenAI's with the parameter at fault and its code, Anthropic's with the field's
/// dotted path; and a request with no key on `/v1/messages` is told Anthropic's header.
#[tokio::test]
async fn bodies_the_real_apis_refuse_are_refused_in_their_words() {
    let s = start(config(None, vec![])).await;
    let openai = |body: Value| {
        s.client
            .post(format!("{}/v1/chat/completions", s.base))
            .bearer_auth("sk-a-test-key")
            .json(&body)
            .send()
    };
    let hi = json!([{ "role": "user", "content": "hi" }]);
    for (body, param, code, says) in [
        (json!({ "messages": hi }), Value::Null, Value::Null, "you must provide a model parameter"),
        (json!({ "model": 5, "messages": hi }), json!("model"), json!("invalid_type"), "expected a string, but got an integer instead"),
        (json!({ "model": "m" }), json!("messages"), json!("missing_required_parameter"), "Missing required parameter: 'messages'."),
        (
            json!({ "model": "m", "messages": [{ "role": "wizard", "content": "hi" }] }),
            json!("messages[0].role"),
            json!("invalid_value"),
            "Invalid value: 'wizard'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.",
        ),
        (
            json!({ "model": "m", "messages": [{ "role": "user", "content": 5 }] }),
            json!("messages[0].content"),
            json!("invalid_type"),
            "expected one of a string or array of objects, but got an integer instead",
        ),
        (json!({ "model": "m", "messages": hi, "temperature": "hot" }), json!("temperature"), json!("invalid_type"), "expected a decimal, but got a string"),
        (json!({ "model": "m", "messages": hi, "temperature": 3 }), json!("temperature"), json!("decimal_above_max_value"), "Expected a value <= 2, but got 3 instead."),
        // A misspelt parameter: production refuses it, so the fake does (it had answered 200).
        (json!({ "model": "m", "messages": hi, "max_token": 8 }), Value::Null, Value::Null, "Unrecognized request argument supplied: max_token"),
        // An agent that dropped a tool's answer, one that answered a call never made, and a
        // tool message naming no call: production refuses all three (they had answered 200).
        (
            json!({ "model": "m", "messages": [
                { "role": "user", "content": "weather?" },
                { "role": "assistant", "content": null, "tool_calls": [{ "id": "call_1", "type": "function", "function": { "name": "get", "arguments": "{}" } }] },
                { "role": "user", "content": "and?" },
            ] }),
            json!("messages.[1].role"),
            Value::Null,
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
        ),
        (
            json!({ "model": "m", "messages": [
                { "role": "user", "content": "weather?" },
                { "role": "tool", "tool_call_id": "call_9", "content": "sunny" },
            ] }),
            json!("messages.[1].role"),
            Value::Null,
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        ),
        (
            json!({ "model": "m", "messages": [{ "role": "user", "content": "weather?" }, { "role": "tool", "content": "sunny" }] }),
            json!("messages.[1].tool_call_id"),
            Value::Null,
            "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
        ),
    ] {
        let r = openai(body.clone()).await.unwrap();
        assert_eq!(r.status(), 400, "{body}");
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"]["type"], "invalid_request_error", "{body}: {e}");
        assert_eq!((&e["error"]["param"], &e["error"]["code"]), (&param, &code), "{body}: {e}");
        let message = e["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    // What the SDKs send is still answered.
    let ok = openai(json!({ "model": "m", "messages": [{ "role": "developer", "content": "be brief" }, { "role": "user", "content": [{ "type": "text", "text": "hi" }] }], "temperature": 0.2 }))
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    // A tool round trip, two calls answered in either order, is taken.
    let call = |id: &str| json!({ "id": id, "type": "function", "function": { "name": "get", "arguments": "{}" } });
    let ok = openai(json!({ "model": "m", "messages": [
        { "role": "user", "content": "weather in Paris and Rome?" },
        { "role": "assistant", "content": null, "tool_calls": [call("call_1"), call("call_2")] },
        { "role": "tool", "tool_call_id": "call_2", "content": "sunny" },
        { "role": "tool", "tool_call_id": "call_1", "content": "rain" },
    ] }))
    .await
    .unwrap();
    assert_eq!(ok.status(), 200);

    let anthropic = |body: Value, key: Option<&str>| {
        let mut r = s
            .client
            .post(format!("{}/v1/messages", s.base))
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(&body);
        if let Some(key) = key {
            r = r.header("x-api-key", key);
        }
        r.send()
    };
    let hi = json!([{ "role": "user", "content": "hi" }]);
    for (body, says) in [
        (
            json!({ "max_tokens": 16, "messages": hi }),
            "model: Field required",
        ),
        (
            json!({ "model": "m", "messages": hi }),
            "max_tokens: Field required",
        ),
        (
            json!({ "model": "m", "max_tokens": 0, "messages": hi }),
            "max_tokens: Input should be greater than or equal to 1",
        ),
        (
            json!({ "model": "m", "max_tokens": 16, "messages": [{ "role": "wizard", "content": "hi" }] }),
            "messages.0.role: Input should be 'user' or 'assistant'",
        ),
        (
            json!({ "model": "m", "max_tokens": 16, "messages": [{ "role": "user", "content": 5 }] }),
            "messages.0.content: Input should be a valid string or a list of content blocks",
        ),
        (
            json!({ "model": "m", "max_tokens": 16, "system": 5, "messages": hi }),
            "system: Input should be a valid string or a list of text blocks",
        ),
        (
            json!({ "model": "m", "max_tokens": 16, "messages": hi, "temprature": 1 }),
            "temprature: Extra inputs are not permitted",
        ),
        (
            json!({ "model": "m", "max_tokens": 16, "messages": hi, "temperature": 1.5 }),
            "temperature: Input should be less than or equal to 1",
        ),
        (
            json!({ "model": "m", "max_tokens": 16, "messages": hi, "stop_sequences": "END" }),
            "stop_sequences: Input should be a valid list",
        ),
        (
            json!({ "model": "m", "max_tokens": 16, "messages": hi, "metadata": { "foo": 1 } }),
            "metadata.foo: Extra inputs are not permitted",
        ),
        (
            json!({ "model": "m", "max_tokens": 16, "messages": [{ "role": "user", "content": "" }] }),
            "messages.0: all messages must have non-empty content except for the optional final assistant message",
        ),
        // An agent that dropped a tool's result, and one that answered a call never made:
        // production refuses both, so the fake does (it had answered 200).
        (
            json!({ "model": "m", "max_tokens": 16, "messages": [
                { "role": "user", "content": "weather?" },
                { "role": "assistant", "content": [{ "type": "tool_use", "id": "toolu_1", "name": "get", "input": {} }] },
                { "role": "user", "content": "and?" },
            ] }),
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        ),
        (
            json!({ "model": "m", "max_tokens": 16, "messages": [
                { "role": "user", "content": "weather?" },
                { "role": "assistant", "content": "let me see" },
                { "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "toolu_9", "content": "sunny" }] },
            ] }),
            "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
        ),
        (
            json!({ "model": "m", "max_tokens": 16, "messages": hi, "tools": [{ "name": "get" }] }),
            "tools.0.custom.input_schema: Field required",
        ),
        (
            json!({ "model": "m", "max_tokens": 2048, "messages": hi, "thinking": { "type": "enabled", "budget_tokens": 512 } }),
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        ),
        (
            json!({ "model": "m", "max_tokens": 2048, "messages": hi, "thinking": { "type": "enabled", "budget_tokens": 1024 }, "temperature": 0.5 }),
            "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode",
        ),
    ] {
        let r = anthropic(body.clone(), Some("sk-a-test-key"))
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{body}");
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["type"], "error", "{body}: {e}");
        assert_eq!(e["error"]["type"], "invalid_request_error", "{body}: {e}");
        assert_eq!(e["error"]["message"], says, "{body}: {e}");
    }
    let r = anthropic(
        json!({ "model": "m", "max_tokens": 16, "messages": hi }),
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 401);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["type"], "authentication_error", "{e}");
    assert_eq!(e["error"]["message"], "x-api-key header is required", "{e}");
    let r = anthropic(
        json!({ "model": "m", "max_tokens": 16, "messages": hi }),
        Some("sk-a-test-key"),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    // With both `x-api-key` and `Authorization`, the API reads `x-api-key` (the key a
    // gateway adds beside the SDK's `Bearer`): it is the key checked, and billed. An empty
    // `x-api-key` is none.
    for (x_api_key, bearer, status) in [
        ("sk-a-test-key", "sk-wrong-key-0001", 200),
        ("sk-wrong-key-0001", "sk-a-test-key", 401),
        ("", "sk-a-test-key", 200),
    ] {
        let r = s
            .client
            .post(format!("{}/v1/messages", s.base))
            .header("x-api-key", x_api_key)
            .bearer_auth(bearer)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(&json!({ "model": "m", "max_tokens": 16, "messages": hi }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "x-api-key {x_api_key}, Bearer {bearer}");
    }
    // A tool round trip with thinking, a server tool and the SDK's sampling fields is taken.
    let r = anthropic(
        json!({ "model": "m", "max_tokens": 2048, "temperature": 1.0, "stop_sequences": ["END"],
            "metadata": { "user_id": "u-1" },
            "thinking": { "type": "enabled", "budget_tokens": 1024 },
            "tools": [
                { "name": "get", "input_schema": { "type": "object" } },
                { "type": "web_search_20250305", "name": "web_search" },
            ],
            "messages": [
                { "role": "user", "content": "weather?" },
                { "role": "assistant", "content": [
                    { "type": "thinking", "thinking": "look it up", "signature": "sig" },
                    { "type": "tool_use", "id": "toolu_1", "name": "get", "input": {} },
                ] },
                { "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny" }] },
            ] }),
        Some("sk-a-test-key"),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
}

/// The real APIs check the key before they read the body: a body they would refuse, sent
/// with a key they do not know or with none, is told 401 (journaled as every refused key
/// is), and only a known key hears what is wrong with the body.
#[tokio::test]
async fn the_key_is_checked_before_the_body() {
    let s = start(config(None, vec![])).await;
    let post = |path: &str, key: Option<(&str, &str)>, body: &'static str| {
        let mut r = s
            .client
            .post(format!("{}{path}", s.base))
            .header("content-type", "application/json")
            .body(body);
        if let Some((header, value)) = key {
            r = r.header(header, value);
        }
        if path.starts_with("/v1/messages") {
            r = r.header("anthropic-version", ANTHROPIC_VERSION);
        }
        r.send()
    };
    let bearer = |key: &'static str| Some(("authorization", key));
    for (path, key, body, status, says) in [
        (
            "/v1/chat/completions",
            bearer("Bearer sk-wrong"),
            "{\"messages\": [",
            401,
            "Incorrect API key provided.",
        ),
        (
            "/v1/chat/completions",
            None,
            "{\"model\": 5}",
            401,
            "No API key provided",
        ),
        (
            "/v1/chat/completions",
            bearer("Bearer sk-a-test-key"),
            "{\"messages\": [",
            400,
            "malformed JSON",
        ),
        (
            "/v1/embeddings",
            bearer("Bearer sk-wrong"),
            "{}",
            401,
            "Incorrect API key provided.",
        ),
        (
            "/v1/embeddings",
            bearer("Bearer sk-a-test-key"),
            "{}",
            400,
            "model",
        ),
        (
            "/v1/records",
            bearer("Bearer sk-wrong"),
            "[]",
            401,
            "Incorrect API key provided.",
        ),
        (
            "/v1/messages",
            Some(("x-api-key", "sk-wrong")),
            "{",
            401,
            "invalid x-api-key",
        ),
        (
            "/v1/messages",
            None,
            "{\"model\": \"m\"}",
            401,
            "x-api-key header is required",
        ),
        (
            "/v1/messages",
            Some(("x-api-key", "sk-a-test-key")),
            "{\"model\": \"m\"}",
            400,
            "max_tokens",
        ),
    ] {
        let r = post(path, key, body).await.unwrap();
        assert_eq!(r.status(), status, "{path} {key:?} {body}");
        // Every answer names its attempt, as the real APIs' do (Anthropic's as request-id).
        let id = if path == "/v1/messages" {
            "request-id"
        } else {
            "x-request-id"
        };
        assert!(r.headers().contains_key(id), "{path} {key:?} {body}");
        let e: Value = r.json().await.unwrap();
        let message = e["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{path} {key:?} {body}: {e}");
    }
    // Every request is in the journal: each 401 as the model refused it, each 400 as the
    // edge did (a client sending the same bad body again had been left out of the figures).
    let journal = s.journal().await;
    let statuses: Vec<u64> = journal
        .iter()
        .filter_map(|e| e["status"].as_u64())
        .collect();
    assert_eq!(
        statuses,
        [401, 401, 400, 401, 400, 401, 401, 401, 400],
        "{journal:?}"
    );
    for e in journal.iter().filter(|e| e["status"] == 400) {
        assert_eq!(e["error_code"], "invalid_request", "{e}");
        assert_eq!(e["credential"], "sk-...", "{e}");
    }
}

/// A 200 the client gave up on before it was sent (its timeout shorter than the latency)
/// is marked undelivered in the journal once the client goes away, and listed by
/// `GET /_stampede/abandoned` for a reader that took the entry while it was pending; an
/// answer delivered is not.
#[tokio::test]
async fn an_answer_the_client_gave_up_on_is_marked_undelivered() {
    let mut c = config(None, vec![]);
    c.latency = LatencyConfig::fixed_ms(2_000);
    let s = start(c).await;
    let pending = s.journal().await;
    assert!(pending.is_empty());
    let err = s
        .chat("sk-a-test-key")
        .timeout(Duration::from_millis(200))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    let abandoned = |s: &Server| {
        let url = format!("{}/_stampede/abandoned", s.base);
        let client = s.client.clone();
        async move {
            let v: Value = client.get(url).send().await.unwrap().json().await.unwrap();
            v
        }
    };
    let mut seen = Value::Null;
    for _ in 0..250 {
        seen = abandoned(&s).await;
        if seen["in_flight"] == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen["abandoned"], json!([1]), "{seen}");
    assert_eq!(seen["in_flight"], 0, "{seen}");
    let journal = s.journal().await;
    assert_eq!(journal[0]["status"], 200);
    assert_eq!(journal[0]["undelivered"], true, "{journal:?}");
    assert!(s.stats().await["undelivered_tokens"].as_u64() > Some(0));
    // One waited for is delivered, and not listed.
    assert_eq!(s.chat("sk-a-test-key").send().await.unwrap().status(), 200);
    assert_eq!(abandoned(&s).await["abandoned"], json!([1]));
    let journal = s.journal().await;
    assert_ne!(journal[1]["undelivered"], true, "{journal:?}");
}

/// A stream starts at its first piece and ends at the latency, as a real API's does: its
/// headers come long before the latency and its pieces keep coming, so a client whose read
/// timeout is shorter than the latency (but not than a gap) reads it whole. It had spent
/// its whole latency before its headers, and such a client timed out and retried.
#[tokio::test]
async fn a_stream_starts_early_and_ends_at_the_latency() {
    let mut c = config(None, vec![]);
    c.latency = LatencyConfig::fixed_ms(1_600);
    let s = start(c).await;
    let started = std::time::Instant::now();
    let r = s
        .client
        .post(format!("{}/v1/chat/completions", s.base))
        .bearer_auth("sk-a-test-key")
        .json(&json!({ "model": "m", "messages": [{ "role": "user", "content": "hello" }], "max_tokens": 64, "stream": true }))
        .send()
        .await
        .unwrap();
    let headers_at = started.elapsed();
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    let done_at = started.elapsed();
    assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");
    // The first group leaves at a seventeenth of the latency (94 ms): allow a busy machine
    // most of the rest, still well short of the 1,600 ms the headers had waited for.
    assert!(headers_at < Duration::from_millis(1_000), "{headers_at:?}");
    // The pauses are timers: never shorter, whatever the machine's load.
    assert!(done_at >= Duration::from_millis(1_500), "{done_at:?}");
}

/// A body field the real API does not take is refused in its words on every route, and
/// counted: the attempt is journaled under its key's scope. `accept_unknown_fields` (for a
/// client that sends a parameter newer than the SDKs the fake knows) takes it, and a new
/// scenario given over the control plane sets it.
#[tokio::test]
async fn unknown_body_fields_are_refused_unless_the_provider_accepts_them() {
    let s = start(config(None, vec![])).await;
    let hi = json!([{ "role": "user", "content": "hi" }]);
    let send = |route: &'static str, body: Value| {
        s.client
            .post(format!("{}{route}", s.base))
            .bearer_auth("sk-a-test-key")
            .header("x-api-key", "sk-a-test-key")
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(&body)
            .send()
    };
    let bodies = [
        (
            "/v1/chat/completions",
            json!({ "model": "m", "messages": hi, "reasoning_effort": "low", "top_k": 3 }),
        ),
        (
            "/v1/embeddings",
            json!({ "model": "m", "input": "hi", "dimensions": 8, "max_tokens": 3 }),
        ),
        (
            "/v1/messages",
            json!({ "model": "m", "max_tokens": 16, "messages": hi, "top_k": 3, "n": 2 }),
        ),
    ];
    let says = [
        "Unrecognized request argument supplied: top_k",
        "Unrecognized request argument supplied: max_tokens",
        "n: Extra inputs are not permitted",
    ];
    for ((route, body), says) in bodies.iter().zip(says) {
        let r = send(route, body.clone()).await.unwrap();
        assert_eq!(r.status(), 400, "{route}");
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"]["message"], says, "{route}: {e}");
    }
    let journal = s.journal().await;
    let refused: Vec<&Value> = journal.iter().filter(|e| e["status"] == 400).collect();
    assert_eq!(refused.len(), 3, "{journal:?}");
    assert!(refused.iter().all(|e| e["scope"] == "a"), "{journal:?}");

    let mut accepting = config(None, vec![]);
    accepting.accept_unknown_fields = true;
    let put = s
        .client
        .put(format!("{}/_stampede/scenario", s.base))
        .json(&accepting)
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200, "{}", put.text().await.unwrap());
    for (route, body) in &bodies {
        let r = send(route, body.clone()).await.unwrap();
        assert_eq!(r.status(), 200, "{route}: {}", r.text().await.unwrap());
    }
}

/// `POST /v1/responses`: a `response` object with its usage and the scope's limits in the
/// headers, a stream of numbered events whose deltas make the closing text, a 429 in
/// OpenAI's words under a fault rule that names the route, and the API's refusals; each
/// attempt journaled under `/v1/responses`.
#[tokio::test]
async fn the_responses_api_answers_streams_and_refuses_in_its_own_format() {
    let rule = fault(|r| {
        r.route = Some(RouteName::Responses);
        r.nth = Some(3);
        r.status = Some(429);
    });
    let s = start(config(Some(100), vec![rule])).await;
    let post = |body: Value| {
        s.client
            .post(format!("{}/v1/responses", s.base))
            .bearer_auth("sk-a-test-key")
            .json(&body)
            .send()
    };
    let r = post(
        json!({ "model": "m", "input": "a question of some twenty", "max_output_tokens": 16 }),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().contains_key("x-ratelimit-remaining-requests"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "response");
    assert!(v["id"].as_str().unwrap().starts_with("resp_"), "{v}");
    let output = &v["output"][0];
    assert_eq!(
        (&output["type"], &output["role"]),
        (&json!("message"), &json!("assistant"))
    );
    assert_eq!(output["content"][0]["type"], "output_text");
    let (input, out) = (&v["usage"]["input_tokens"], &v["usage"]["output_tokens"]);
    assert_eq!(input, 11, "{v}");
    assert!((1..=16).contains(&out.as_u64().unwrap()), "{v}");
    let r = post(
        json!({ "model": "m", "input": [{ "role": "user", "content": "hi" }], "stream": true }),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let text = r.text().await.unwrap();
    let events: Vec<Value> = text
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| serde_json::from_str(e.split_once("\ndata: ").unwrap().1).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "response.created");
    let last = events.last().unwrap();
    assert!(
        matches!(
            last["type"].as_str(),
            Some("response.completed" | "response.incomplete")
        ),
        "{last}"
    );
    let deltas: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(last["response"]["output"][0]["content"][0]["text"], deltas);
    let numbers: Vec<u64> = events
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, (0..events.len() as u64).collect::<Vec<_>>());
    // The third attempt on the route meets the rule.
    let r = post(json!({ "model": "m", "input": "x" })).await.unwrap();
    assert_eq!(r.status(), 429);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["type"], "requests", "{e}");
    for (body, message) in [
        (
            json!({ "model": "m", "input": "x", "max_tokens": 20 }),
            "Unknown parameter: 'max_tokens'.",
        ),
        (
            json!({ "model": "m", "input": "x", "max_output_tokens": 8 }),
            "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 8 instead.",
        ),
    ] {
        let r = post(body).await.unwrap();
        assert_eq!(r.status(), 400);
        let e: Value = r.json().await.unwrap();
        assert_eq!(e["error"]["message"], message);
    }
    let j = s.journal().await;
    let routes: Vec<&Value> = j.iter().map(|e| &e["route"]).collect();
    assert_eq!(routes, vec![&json!("/v1/responses"); 5]);
}

/// The body of `resp` as text, read until it ends or breaks (`true` when it broke).
async fn sse_text(resp: reqwest::Response) -> (String, bool) {
    use futures_util::StreamExt;
    let mut text = String::new();
    let mut stream = resp.bytes_stream();
    while let Some(item) = stream.next().await {
        match item {
            Ok(b) => text.push_str(&String::from_utf8_lossy(&b)),
            Err(_) => return (text, true),
        }
    }
    (text, false)
}

/// The data of every SSE event of `resp`, read until it ends or breaks (`true` when it
/// broke).
async fn sse_events(resp: reqwest::Response) -> (Vec<Value>, bool) {
    let (text, broke) = sse_text(resp).await;
    // Named events (`event: ...\ndata: ...`) and bare ones (`data: ...`, chat's) alike.
    let events = text
        .split("\n\n")
        .filter_map(|e| e.split_once("data: ").map(|(_, data)| data))
        .filter(|data| *data != "[DONE]")
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    (events, broke)
}

/// A forced call on `/v1/responses` keeps its shape when its stream is cut or errs (a
/// `function_call` item, its arguments' pieces short of the whole, then the break or a
/// numbered `error` event), and an idempotent replay of it says the same response and the
/// same call ids: a client that reconciles by replaying gets the call it had.
#[tokio::test]
async fn responses_broken_streams_keep_their_shape_and_replays_keep_their_ids() {
    let cut = |nth: u64, kind: ConnectionFault| {
        fault(move |r| {
            r.route = Some(RouteName::Responses);
            r.nth = Some(nth);
            r.fault = Some(kind);
            r.after_chunks = Some(2);
        })
    };
    let mut c = config(
        None,
        // A rule counts the attempts that reach it: the first rule takes the first.
        vec![
            cut(1, ConnectionFault::StreamCut),
            cut(1, ConnectionFault::StreamError),
        ],
    );
    c.completion_idempotency = true;
    let s = start(c).await;
    let body = |stream: bool| {
        json!({ "model": "m", "input": "plan it", "stream": stream, "max_output_tokens": 64,
                "tools": [{ "type": "function", "name": "make_plan",
                            "parameters": { "type": "object", "properties": { "title": { "type": "string" } }, "required": ["title"] } }],
                "tool_choice": "required" })
    };
    let post = |body: Value, key: Option<&'static str>| {
        let mut b = s
            .client
            .post(format!("{}/v1/responses", s.base))
            .bearer_auth("sk-a-test-key")
            .json(&body);
        if let Some(k) = key {
            b = b.header("idempotency-key", k);
        }
        b.send()
    };
    for broken in ["stream_cut", "stream_error"] {
        let (events, broke) = sse_events(post(body(true), None).await.unwrap()).await;
        assert_eq!(
            events[2]["item"]["type"], "function_call",
            "{broken}: {events:?}"
        );
        let pieces: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "response.function_call_arguments.delta")
            .map(|e| &e["delta"])
            .collect();
        assert_eq!(pieces.len(), 2, "{broken}: {events:?}");
        let sent: String = pieces.iter().filter_map(|p| p.as_str()).collect();
        assert!(
            sent.len() < r#"{"title":""}"#.len(),
            "{broken}: short of the whole: {sent}"
        );
        let numbers: Vec<u64> = events
            .iter()
            .map(|e| e["sequence_number"].as_u64().unwrap())
            .collect();
        assert_eq!(
            numbers,
            (0..events.len() as u64).collect::<Vec<_>>(),
            "{broken}"
        );
        let last = events.last().unwrap();
        match broken {
            "stream_cut" => assert!(broke && last["type"] != "error", "{last}"),
            _ => assert_eq!(last["type"], "error", "{last}"),
        }
    }
    // Whole, the call's arguments come in non-empty pieces of about a token each, however
    // many tokens the model drew for it (up to 64 here, for 12 bytes).
    let (events, broke) = sse_events(post(body(true), None).await.unwrap()).await;
    assert!(!broke);
    let pieces: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "response.function_call_arguments.delta")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert!(
        pieces.iter().all(|p| !p.is_empty()) && pieces.len() <= 3,
        "{pieces:?}"
    );
    assert_eq!(pieces.concat(), r#"{"title":""}"#);
    // A response and its replay under one key: the same ids.
    let first: Value = post(body(false), Some("k1"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let again = post(body(false), Some("k1")).await.unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    for pointer in ["/id", "/output/0/id", "/output/0/call_id"] {
        assert_eq!(
            first.pointer(pointer),
            again.pointer(pointer),
            "{pointer}: {first} {again}"
        );
    }
    assert_eq!(first["output"][0]["type"], "function_call");
    let j = s.journal().await;
    let outcomes: Vec<&Value> = j.iter().map(|e| &e["outcome"]).collect();
    assert_eq!(
        outcomes,
        [
            &json!("stream_cut"),
            &json!("stream_error"),
            &json!("200"),
            &json!("200"),
            &json!("200")
        ]
    );
}

/// `POST /v1/messages/count_tokens`: the input tokens of a Messages body without
/// `max_tokens`, journaled under its own route, billed nothing and held to none of the
/// scope's limits (a scope of 1 request a minute still counts after its request is spent);
/// refused in Anthropic's words as a Messages body is.
#[tokio::test]
async fn token_counts_are_answered_journaled_and_held_to_no_limit() {
    let s = start(config(Some(1), vec![])).await;
    let post = |path: &str, body: Value| s.anthropic(path, &body).send();
    let prompt = json!([{ "role": "user", "content": "a prompt of some twenty" }]);
    let message = json!({ "model": "m", "max_tokens": 8, "messages": prompt });
    assert_eq!(
        post("/v1/messages", message.clone())
            .await
            .unwrap()
            .status(),
        200
    );
    for _ in 0..3 {
        let r = post(
            "/v1/messages/count_tokens",
            json!({ "model": "m", "messages": prompt }),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 200);
        assert!(r.headers().contains_key("request-id"));
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            v,
            json!({ "input_tokens": 10 }),
            "6 tokens of text, 4 of the message"
        );
    }
    assert_eq!(
        post("/v1/messages", message).await.unwrap().status(),
        429,
        "the limit holds"
    );
    // Nor does the Retry-After that 429 told the scope: a count in it is no violation.
    let during = post(
        "/v1/messages/count_tokens",
        json!({ "model": "m", "messages": prompt }),
    );
    assert_eq!(during.await.unwrap().status(), 200);
    let r = post(
        "/v1/messages/count_tokens",
        json!({ "model": "m", "messages": prompt, "stream": true }),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert_eq!(
        e["error"]["message"],
        "stream: Extra inputs are not permitted"
    );
    let j = s.journal().await;
    let routes: Vec<&str> = j.iter().filter_map(|e| e["route"].as_str()).collect();
    assert_eq!(
        routes,
        [
            "/v1/messages",
            "/v1/messages/count_tokens",
            "/v1/messages/count_tokens",
            "/v1/messages/count_tokens",
            "/v1/messages",
            "/v1/messages/count_tokens",
            "/v1/messages/count_tokens"
        ]
    );
    let counted = &j[1];
    assert_eq!(
        (&counted["committed"], &counted["tokens_used"]),
        (&json!(false), &json!(0))
    );
    assert_eq!(j[5]["scope_wait_violation"], false, "{}", j[5]);

    // A wait told to a count (a fault's 429) binds the count, not the scope's Messages.
    let rule = fault(|r| {
        r.route = Some(RouteName::CountTokens);
        r.status = Some(429);
        r.retry_after = Some(DurationMs(30_000));
    });
    let s = start(config(None, vec![rule])).await;
    let post = |path: &str, body: Value| s.anthropic(path, &body).send();
    let counted = post(
        "/v1/messages/count_tokens",
        json!({ "model": "m", "messages": prompt }),
    );
    assert_eq!(counted.await.unwrap().status(), 429);
    let sent = post(
        "/v1/messages",
        json!({ "model": "m", "max_tokens": 8, "messages": prompt }),
    );
    assert_eq!(sent.await.unwrap().status(), 200);
    let j = s.journal().await;
    assert_eq!(j[1]["scope_wait_violation"], false, "{}", j[1]);
}

/// A forced tool call broken off on the chat and Messages routes keeps its shape, as on the
/// Responses route: the chat stream's chunks carry the call's `tool_calls`, Messages' a
/// `tool_use` block with `input_json_delta`s, each a piece short of the arguments (they had
/// streamed plain text, which the SDKs' partial parsers then choked on), and the break
/// carries the request id the SDKs read.
#[tokio::test]
async fn chat_and_messages_broken_streams_keep_a_forced_calls_shape() {
    let breaks = |route: RouteName, kind: ConnectionFault| {
        fault(move |r| {
            r.route = Some(route);
            r.fault = Some(kind);
            r.after_chunks = Some(10);
        })
    };
    let s = start(config(
        None,
        vec![
            breaks(RouteName::ChatCompletions, ConnectionFault::StreamCut),
            breaks(RouteName::Messages, ConnectionFault::StreamError),
        ],
    ))
    .await;
    let schema = json!({ "type": "object", "properties": { "title": { "type": "string" } }, "required": ["title"] });
    let chat = s
        .client
        .post(format!("{}/v1/chat/completions", s.base))
        .bearer_auth("sk-a-test-key")
        .json(&json!({ "model": "m", "max_tokens": 64, "stream": true,
            "messages": [{ "role": "user", "content": "plan" }], "tool_choice": "required",
            "tools": [{ "type": "function", "function": { "name": "make_plan", "parameters": schema } }] }))
        .send()
        .await
        .unwrap();
    assert!(chat.headers().contains_key("x-request-id"));
    let (chunks, broke) = sse_events(chat).await;
    assert!(broke);
    let pieces: String = chunks
        .iter()
        .map(|c| {
            assert!(
                c["choices"][0]["delta"]
                    .get("content")
                    .map_or(true, Value::is_null),
                "{c}"
            );
            c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(!pieces.is_empty() && r#"{"title":""}"#.starts_with(&pieces) && pieces.len() < 12);
    let messages = s
        .client
        .post(format!("{}/v1/messages", s.base))
        .header("x-api-key", "sk-a-test-key")
        .header("anthropic-version", ANTHROPIC_VERSION)
        .json(&json!({ "model": "m", "max_tokens": 64, "stream": true,
            "messages": [{ "role": "user", "content": "plan" }], "tool_choice": { "type": "any" },
            "tools": [{ "name": "make_plan", "input_schema": schema }] }))
        .send()
        .await
        .unwrap();
    assert!(messages.headers().contains_key("request-id"));
    let (events, _) = sse_events(messages).await;
    assert_eq!(events[1]["content_block"]["type"], "tool_use", "{events:?}");
    let deltas: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "content_block_delta")
        .collect();
    assert!(
        deltas
            .iter()
            .all(|d| d["delta"]["type"] == "input_json_delta"),
        "{deltas:?}"
    );
    assert!(deltas.len() < 3, "a piece short of three: {deltas:?}");
    assert_eq!(events.last().unwrap()["type"], "error");
    // Its start says the prompt it was sent (it had said 0), as a whole stream's does: the
    // message's 4 characters and its tool's definition, a token a 4 characters, and 4
    // tokens a message.
    let usage = &events[0]["message"]["usage"];
    let tools = json!([{ "name": "make_plan", "input_schema": schema }]).to_string();
    let expected = ("plan".len() + tools.len()).div_ceil(4) + 4;
    assert_eq!(usage["input_tokens"], expected, "{usage}");
    assert_eq!(usage["cache_read_input_tokens"], 0, "{usage}");
}

/// An answer names the model its request named, as the real APIs echo it (the fake had
/// said `stampede-fake` to every request): cost trackers (LiteLLM's among them) and logs
/// read the model from the answer. Chat plain and streamed, Messages plain and streamed,
/// Responses, embeddings.
#[tokio::test]
async fn every_answer_names_the_model_its_request_named() {
    let s = start(config(None, vec![])).await;
    let post = |path: &str, body: Value| {
        s.client
            .post(format!("{}{path}", s.base))
            .bearer_auth("sk-a-test-key")
            // Read by Anthropic's route alone.
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(&body)
            .send()
    };
    let hi = json!([{ "role": "user", "content": "hi" }]);
    for (path, body) in [
        (
            "/v1/chat/completions",
            json!({ "model": "gpt-4o-mini", "messages": hi, "max_tokens": 8 }),
        ),
        (
            "/v1/messages",
            json!({ "model": "gpt-4o-mini", "messages": hi, "max_tokens": 8 }),
        ),
        (
            "/v1/responses",
            json!({ "model": "gpt-4o-mini", "input": "hi", "max_output_tokens": 16 }),
        ),
        (
            "/v1/embeddings",
            json!({ "model": "gpt-4o-mini", "input": "hi" }),
        ),
    ] {
        let r = post(path, body).await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["model"], "gpt-4o-mini", "{path}: {v}");
    }
    for (path, body) in [
        (
            "/v1/chat/completions",
            json!({ "model": "a \"quoted\" model", "messages": hi, "max_tokens": 8, "stream": true }),
        ),
        (
            "/v1/messages",
            json!({ "model": "a \"quoted\" model", "messages": hi, "max_tokens": 8, "stream": true }),
        ),
    ] {
        let r = post(path, body).await.unwrap();
        let (events, broke) = sse_events(r).await;
        assert!(!broke, "{path}");
        let named = |e: &Value| {
            e.get("model")
                .or_else(|| e.pointer("/message/model"))
                .cloned()
        };
        let models: Vec<Value> = events.iter().filter_map(named).collect();
        assert!(!models.is_empty(), "{path}: {events:?}");
        assert!(
            models.iter().all(|m| m == "a \"quoted\" model"),
            "{path}: {models:?}"
        );
    }
}

/// `/v1/messages` and its token count refuse a request without `anthropic-version` as the
/// real API does (400 `invalid_request_error`, "anthropic-version: header is required"),
/// after the key (an unknown one is told 401 first) and before any limit counts it: a
/// scope of one request a minute still admits the request that names its version, and
/// each refusal is journaled as an edge refusal (with the item its prompt names).
#[tokio::test]
async fn anthropic_routes_require_the_anthropic_version_header_before_any_limit() {
    let s = start(config(Some(1), vec![])).await;
    let message = json!({ "model": "m", "max_tokens": 8,
        "messages": [{ "role": "user", "content": "request 7: hi" }] });
    let count = json!({ "model": "m", "messages": [{ "role": "user", "content": "hi" }] });
    let without = |path: &str, body: &Value, key: &str, version: Option<&str>| {
        let mut r = s
            .client
            .post(format!("{}{path}", s.base))
            .header("x-api-key", key)
            .json(body);
        if let Some(v) = version {
            r = r.header("anthropic-version", v);
        }
        r.send()
    };
    for (path, body) in [
        ("/v1/messages", &message),
        ("/v1/messages/count_tokens", &count),
        ("/v1/messages", &message),
    ] {
        for version in [None, Some(""), Some("  ")] {
            let r = without(path, body, "sk-a-test-key", version).await.unwrap();
            assert_eq!(r.status(), 400, "{path} {version:?}");
            assert!(r.headers().contains_key("request-id"), "{path}");
            let e: Value = r.json().await.unwrap();
            assert_eq!(e["type"], "error", "{e}");
            assert_eq!(
                e["error"],
                json!({ "type": "invalid_request_error", "message": "anthropic-version: header is required" }),
                "{path}: {e}"
            );
            assert_eq!(
                e["error"]["message"],
                stampede_provider::server::ANTHROPIC_VERSION_REQUIRED
            );
        }
    }
    // A version the API does not take is refused in its words; a header sent twice is
    // read as its values joined, as a gateway that adds its own makes it.
    for path in ["/v1/messages", "/v1/messages/count_tokens"] {
        let body = if path == "/v1/messages" {
            &message
        } else {
            &count
        };
        for (versions, shown) in [
            (&["2024-10-22"][..], "2024-10-22"),
            (&["2023-06-01", "2023-06-01"][..], "2023-06-01, 2023-06-01"),
        ] {
            let mut r = s
                .client
                .post(format!("{}{path}", s.base))
                .header("x-api-key", "sk-a-test-key")
                .json(body);
            for v in versions {
                r = r.header("anthropic-version", *v);
            }
            let r = r.send().await.unwrap();
            assert_eq!(r.status(), 400, "{path} {versions:?}");
            let e: Value = r.json().await.unwrap();
            assert_eq!(
                e["error"],
                json!({ "type": "invalid_request_error",
                        "message": format!("anthropic-version: \"{shown}\" is not a valid version") }),
                "{path}: {e}"
            );
        }
    }
    // Under 2026-10-21 (what the SDK majors since send) a sampling parameter is refused in
    // the API's words; 2023-06-01 took it, and takes it still (below).
    let mut sampled = message.clone();
    sampled["temperature"] = json!(0.2);
    let r = without(
        "/v1/messages",
        &sampled,
        "sk-a-test-key",
        Some("2026-10-21"),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert_eq!(
        e["error"],
        json!({ "type": "invalid_request_error", "message": "temperature: Extra inputs are not permitted" })
    );
    // The key is checked first, as for any body the API refuses.
    let r = without("/v1/messages", &message, "sk-wrong-key-0001", None)
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["type"], "authentication_error", "{e}");
    // No limit counted the refusals: the scope's one request a minute is still there.
    // (Under 2023-06-01, with the temperature 2026-10-21 refused.)
    let ok = s.anthropic("/v1/messages", &sampled).send().await.unwrap();
    assert_eq!(ok.status(), 200);
    let again = s.anthropic("/v1/messages", &message).send().await.unwrap();
    assert_eq!(
        again.status(),
        429,
        "the one request was spent by the one that named its version"
    );
    let journal = s.journal().await;
    let statuses: Vec<u64> = journal
        .iter()
        .map(|e| e["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [[400; 14].as_slice(), &[401, 200, 429]].concat());
    for e in &journal[..14] {
        assert_eq!(e["error_code"], "invalid_request", "{e}");
        assert_eq!(e["scope"], "a", "{e}");
    }
    // A refused request of a workload item counts for the item (a token count never does).
    assert_eq!(journal[0]["workload_item"], 7, "{}", journal[0]);
    assert!(journal[3].get("workload_item").is_none(), "{}", journal[3]);
}
