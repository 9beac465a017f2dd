//! The server fills each attempt's model from the body (issue 16): listed models are served
//! and journaled by name, an unlisted one is 404 `model_not_found` on every completion route.

use serde_json::{json, Value};
use stampede_provider::config::{
    CredentialConfig, DurationMs, LatencyConfig, ModelConfig, Price, ProviderConfig, ScopeLimits,
};
use stampede_provider::spawn_ephemeral;
use std::time::Duration;

const KEY: &str = "sk-models-key1";

fn config() -> ProviderConfig {
    let model = |name: &str| ModelConfig {
        name: name.into(),
        context_window: None,
        max_output_tokens: None,
        latency: None,
        price: Some(Price {
            prompt_per_mtok: 1.0,
            completion_per_mtok: 0.0,
        }),
    };
    ProviderConfig {
        latency: LatencyConfig::fixed_ms(5),
        reject_latency: DurationMs(0),
        scopes: vec![ScopeLimits::unlimited("key")],
        credentials: vec![CredentialConfig {
            key: KEY.into(),
            scope: "key".into(),
            scopes: Vec::new(),
        }],
        models: vec![model("m-small"), model("m-embed")],
        ..ProviderConfig::default()
    }
}

#[tokio::test]
async fn the_body_names_the_model_on_every_completion_route() {
    let (addr, _handle) = spawn_ephemeral(config(), 7).await.expect("server starts");
    let base = format!("http://{addr}");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let post = |path: &str, body: Value| {
        client
            .post(format!("{base}{path}"))
            .bearer_auth(KEY)
            .header("x-api-key", KEY)
            .json(&body)
            .send()
    };
    let chat = |model: &str| json!({ "model": model, "messages": [{ "role": "user", "content": "hello" }], "max_tokens": 4 });
    let ok = post("/v1/chat/completions", chat("m-small")).await.unwrap();
    assert_eq!(ok.status(), 200);
    let missing = post("/v1/chat/completions", chat("gpt-nope"))
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["code"], "model_not_found");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let embed = post(
        "/v1/embeddings",
        json!({ "model": "m-embed", "input": "some text to embed" }),
    )
    .await
    .unwrap();
    assert_eq!(embed.status(), 200);
    let messages = post(
        "/v1/messages",
        json!({ "model": "claude-nope", "max_tokens": 4, "messages": [{ "role": "user", "content": "hi" }] }),
    )
    .await
    .unwrap();
    assert_eq!(messages.status(), 404);

    let text = client
        .get(format!("{base}/_stampede/journal"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let j: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let models: Vec<&str> = j.iter().map(|e| e["model"].as_str().unwrap()).collect();
    assert_eq!(models, ["m-small", "gpt-nope", "m-embed", "claude-nope"]);
    // One micro-dollar per prompt token at $1/M: "hello" is 2 tokens plus 4 for its message.
    assert_eq!(j[0]["billed_micro_usd"], 6);
    assert!(
        j[1].get("billed_micro_usd").is_none(),
        "a refusal bills nothing"
    );
    assert_eq!(j[2]["billed_micro_usd"], j[2]["tokens_used"]);
}
