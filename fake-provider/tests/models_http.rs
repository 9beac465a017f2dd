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
            // Read by Anthropic's route alone (the catalog is not called here).
            .header("anthropic-version", "2023-06-01")
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

/// A GET of the model catalog (`path`), in OpenAI's words or, with `anthropic-version`,
/// in Anthropic's; with `key` as both APIs send it (none: no key at all).
fn catalog(
    client: &reqwest::Client,
    url: String,
    key: Option<&str>,
    anthropic: bool,
) -> reqwest::RequestBuilder {
    let mut r = client.get(url);
    if anthropic {
        r = r.header("anthropic-version", "2023-06-01");
    }
    match (key, anthropic) {
        (Some(k), true) => r.header("x-api-key", k),
        (Some(k), false) => r.bearer_auth(k),
        (None, _) => r,
    }
}

async fn journal(client: &reqwest::Client, base: &str) -> Vec<Value> {
    let text = client
        .get(format!("{base}/_stampede/journal"))
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

/// `GET /v1/models` and `/v1/models/{id}` answer the listed models, in OpenAI's shape
/// without `anthropic-version` and in Anthropic's (paged) with it; an unlisted id is 404
/// `model_not_found` in each API's envelope; every call is journaled as no logical request.
#[tokio::test]
async fn the_catalog_lists_the_configured_models_in_each_apis_words() {
    let (addr, _handle) = spawn_ephemeral(config(), 7).await.expect("server starts");
    let base = format!("http://{addr}");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let get = |path: &str, anthropic: bool| {
        catalog(&client, format!("{base}{path}"), Some(KEY), anthropic).send()
    };

    // OpenAI: every model, `object: list`, fixed `created`.
    let r = get("/v1/models", false).await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().contains_key("x-request-id"));
    assert!(
        !r.headers().contains_key("x-ratelimit-limit-requests"),
        "no limit counted it"
    );
    let list: Value = r.json().await.unwrap();
    assert_eq!(
        list,
        json!({ "object": "list", "data": [
            { "id": "m-small", "object": "model", "created": 1_704_067_200, "owned_by": "stampede" },
            { "id": "m-embed", "object": "model", "created": 1_704_067_200, "owned_by": "stampede" },
        ] })
    );
    let one: Value = get("/v1/models/m-embed", false)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(one, list["data"][1]);
    let missing = get("/v1/models/gpt-nope", false).await.unwrap();
    assert_eq!(missing.status(), 404);
    let e: Value = missing.json().await.unwrap();
    assert_eq!(e["error"]["code"], "model_not_found", "{e}");
    assert_eq!(e["error"]["type"], "invalid_request_error");

    // Anthropic: a page of `ModelInfo`, paged by limit, after_id and before_id.
    let r = get("/v1/models", true).await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().contains_key("request-id"));
    let page: Value = r.json().await.unwrap();
    assert_eq!(page["has_more"], false);
    assert_eq!(page["first_id"], "m-small");
    assert_eq!(page["last_id"], "m-embed");
    assert_eq!(
        page["data"][0],
        json!({ "type": "model", "id": "m-small", "display_name": "m-small",
                "created_at": "2024-01-01T00:00:00Z", "lifecycle": "active",
                "deprecated_at": null, "retires_at": null,
                "max_input_tokens": null, "max_tokens": null })
    );
    let ids = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    };
    let first: Value = get("/v1/models?limit=1", true)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (ids(&first), &first["has_more"]),
        (vec!["m-small".into()], &json!(true))
    );
    let next: Value = get("/v1/models?limit=1&after_id=m-small", true)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (ids(&next), &next["has_more"]),
        (vec!["m-embed".into()], &json!(false))
    );
    let back: Value = get("/v1/models?limit=1&before_id=m-embed", true)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (ids(&back), &back["has_more"]),
        (vec!["m-small".into()], &json!(false))
    );
    let one: Value = get("/v1/models/m-small", true)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(one, page["data"][0]);
    let bad = get("/v1/models?limit=0", true).await.unwrap();
    assert_eq!(bad.status(), 400);
    let e: Value = bad.json().await.unwrap();
    assert_eq!(e["type"], "error");
    assert_eq!(e["error"]["type"], "invalid_request_error", "{e}");
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("limit: "));
    // Anthropic's catalog takes only the versions its Messages route takes.
    let r = client
        .get(format!("{base}/v1/models"))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2024-10-22")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert_eq!(
        e["error"],
        json!({ "type": "invalid_request_error", "message": "anthropic-version: \"2024-10-22\" is not a valid version" })
    );
    // An id whose percent-encoding is no UTF-8 is an id not listed, in each API's words.
    for anthropic in [false, true] {
        let r = get("/v1/models/%FF", anthropic).await.unwrap();
        assert_eq!(r.status(), 404, "anthropic: {anthropic}");
        let e: Value = r.json().await.unwrap();
        let kind = if anthropic {
            "not_found_error"
        } else {
            "invalid_request_error"
        };
        assert_eq!(e["error"]["type"], kind, "{e}");
        assert!(
            e["error"]["message"].as_str().unwrap().contains("%FF"),
            "{e}"
        );
    }
    let missing = get("/v1/models/claude-nope", true).await.unwrap();
    assert_eq!(missing.status(), 404);
    let request_id = missing.headers()["request-id"]
        .to_str()
        .unwrap()
        .to_string();
    let e: Value = missing.json().await.unwrap();
    assert_eq!(e["type"], "error");
    assert_eq!(e["error"]["type"], "not_found_error", "{e}");
    assert_eq!(e["request_id"], request_id.as_str());

    // Journaled: each call once, as no logical request, naming no model.
    let j = journal(&client, &base).await;
    let seen: Vec<(String, u64)> = j
        .iter()
        .map(|e| {
            assert_eq!(e["logical"], 0, "{e}");
            assert!(e.get("model").is_none(), "{e}");
            (
                e["route"].as_str().unwrap().to_string(),
                e["status"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("/v1/models", 200),
        ("/v1/models/{id}", 200),
        ("/v1/models/{id}", 404),
        ("/v1/models", 200),
        ("/v1/models", 200),
        ("/v1/models", 200),
        ("/v1/models", 200),
        ("/v1/models/{id}", 200),
        ("/v1/models", 400),
        ("/v1/models", 400),
        ("/v1/models/{id}", 404),
        ("/v1/models/{id}", 404),
        ("/v1/models/{id}", 404),
    ]
    .map(|(r, s)| (r.to_string(), s));
    assert_eq!(seen, expected);
    assert_eq!(j[2]["error_code"], "model_not_found");
}

/// With no `[[provider.models]]` the provider serves any model name: the catalog lists the
/// name an answer gives a request that names none, and a look-up of any name finds it. A
/// catalog read is held to no limit: a scope of one request a minute still admits its
/// completion after three of them.
#[tokio::test]
async fn with_no_models_listed_the_catalog_is_the_unnamed_model_and_counts_against_no_limit() {
    let mut config = config();
    config.models.clear();
    config.scopes[0].rpm = Some(1);
    let (addr, _handle) = spawn_ephemeral(config, 7).await.expect("server starts");
    let base = format!("http://{addr}");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    for anthropic in [false, true] {
        let list: Value = catalog(&client, format!("{base}/v1/models"), Some(KEY), anthropic)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            list["data"][0]["id"],
            stampede_provider::model::UNNAMED_MODEL
        );
        assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");
    }
    let any = catalog(
        &client,
        format!("{base}/v1/models/gpt-4o"),
        Some(KEY),
        false,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(any.status(), 200);
    assert_eq!(any.json::<Value>().await.unwrap()["id"], "gpt-4o");
    let chat = || {
        client
            .post(format!("{base}/v1/chat/completions"))
            .bearer_auth(KEY)
            .json(&json!({ "model": "gpt-4o", "messages": [{ "role": "user", "content": "hi" }], "max_tokens": 4 }))
            .send()
    };
    assert_eq!(
        chat().await.unwrap().status(),
        200,
        "the catalog spent no rpm"
    );
    assert_eq!(
        chat().await.unwrap().status(),
        429,
        "the scope's one request is spent"
    );
}

/// The catalog checks the key as every route does: no key, or one the provider does not
/// know, gets the very 401 a completion gets on the same API (status, body, request id),
/// journaled as a refused key is, with no scope.
#[tokio::test]
async fn the_catalog_refuses_a_missing_or_unknown_key_as_the_other_routes_do() {
    let (addr, _handle) = spawn_ephemeral(config(), 7).await.expect("server starts");
    let base = format!("http://{addr}");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    // Each refusal's body without its request id, which names the attempt.
    let refused = |r: reqwest::Response, id_header: &'static str| async move {
        assert_eq!(r.status(), 401);
        assert!(r.headers().contains_key(id_header), "{:?}", r.headers());
        let mut body: Value = r.json().await.unwrap();
        body.as_object_mut().unwrap().remove("request_id");
        body
    };
    for key in [None, Some("sk-wrong-key-0001")] {
        // OpenAI's words, as `POST /v1/chat/completions` says them.
        let mut chat = client.post(format!("{base}/v1/chat/completions")).json(
            &json!({ "model": "m-small", "messages": [{ "role": "user", "content": "hi" }] }),
        );
        if let Some(k) = key {
            chat = chat.bearer_auth(k);
        }
        let expected = refused(chat.send().await.unwrap(), "x-request-id").await;
        for path in ["/v1/models", "/v1/models/m-small"] {
            let r = catalog(&client, format!("{base}{path}"), key, false)
                .send()
                .await
                .unwrap();
            assert_eq!(refused(r, "x-request-id").await, expected, "{path} {key:?}");
        }
        // Anthropic's, as `POST /v1/messages` says them.
        let mut messages = client
            .post(format!("{base}/v1/messages"))
            .header("anthropic-version", "2023-06-01")
            .json(&json!({ "model": "m-small", "max_tokens": 4, "messages": [{ "role": "user", "content": "hi" }] }));
        if let Some(k) = key {
            messages = messages.header("x-api-key", k);
        }
        let expected = refused(messages.send().await.unwrap(), "request-id").await;
        assert_eq!(
            expected["error"]["type"], "authentication_error",
            "{expected}"
        );
        for path in ["/v1/models", "/v1/models/m-small"] {
            let r = catalog(&client, format!("{base}{path}"), key, true)
                .send()
                .await
                .unwrap();
            assert_eq!(refused(r, "request-id").await, expected, "{path} {key:?}");
        }
    }
    let j = journal(&client, &base).await;
    let catalog_reads: Vec<&Value> = j
        .iter()
        .filter(|e| {
            e["route"].as_str().unwrap().starts_with("/v1/models/") || e["route"] == "/v1/models"
        })
        .collect();
    assert_eq!(catalog_reads.len(), 8);
    for e in catalog_reads {
        assert_eq!(e["status"], 401, "{e}");
        assert_eq!(e["error_code"], "invalid_api_key", "{e}");
        assert!(e["scope"].is_null(), "{e}");
    }
}
