//! Record look-ups see only the caller's scope: another tenant's record is "not found", so
//! reconciliation never concludes "found" from someone else's write.

use serde_json::Value;
use stampede_provider::config::{
    CredentialConfig, DurationMs, LatencyConfig, ProviderConfig, ScopeLimits,
};
use stampede_provider::model::{Answer, FindBy, ProviderModel, Request, RequestRoute};
use stampede_provider::spawn_ephemeral;

fn scope(id: &str) -> ScopeLimits {
    ScopeLimits::unlimited(id)
}

/// Scopes `a` and `b`, keys `sk-a-key-0001` and `sk-b-key-0001`.
fn config() -> ProviderConfig {
    ProviderConfig {
        latency: LatencyConfig::fixed_ms(0),
        tool_latency: LatencyConfig::fixed_ms(0),
        reject_latency: DurationMs(0),
        scopes: vec![scope("a"), scope("b")],
        credentials: ["a", "b"]
            .iter()
            .map(|s| CredentialConfig {
                key: format!("sk-{s}-key-0001"),
                scope: (*s).into(),
                scopes: Vec::new(),
            })
            .collect(),
        ..ProviderConfig::default()
    }
}

fn as_scope(s: &str, route: RequestRoute) -> Request {
    Request {
        route,
        credential: Some(format!("sk-{s}-key-0001").into()),
        ..Request::default()
    }
}

fn answer(m: &mut ProviderModel, req: &Request, now: u64) -> (u16, Value) {
    let d = m.arrive(req, now);
    m.depart(d.seq, now);
    match d.answer {
        Answer::Respond { status, body, .. } => (status, body),
        other => panic!("not an answer: {other:?}"),
    }
}

#[test]
fn the_model_answers_look_ups_from_the_callers_scope_only() {
    let mut m = ProviderModel::new(config(), 1, 0).unwrap();
    let mut write = as_scope("a", RequestRoute::CreateRecord);
    write.idempotency_key = Some("key-1".into());
    write.external_ref = Some("ref-1".into());
    write.body_hash = 5;
    let (status, body) = answer(&mut m, &write, 0);
    assert_eq!(status, 200);
    let id = body["id"].as_str().unwrap().to_string();
    let lookups = [
        RequestRoute::GetRecord { id: id.clone() },
        RequestRoute::FindRecords {
            by: FindBy::ExternalRef("ref-1".into()),
        },
        RequestRoute::FindRecords {
            by: FindBy::IdempotencyKey("key-1".into()),
        },
    ];
    for (i, route) in lookups.iter().enumerate() {
        let now = 10 + i as u64;
        let (status, body) = answer(&mut m, &as_scope("a", route.clone()), now);
        assert_eq!(status, 200, "{route:?}");
        if let Some(data) = body["data"].as_array() {
            assert_eq!(data.len(), 1, "{route:?}");
        }
        let (status, body) = answer(&mut m, &as_scope("b", route.clone()), now);
        match route {
            RequestRoute::GetRecord { .. } => assert_eq!(status, 404, "{body}"),
            _ => {
                assert_eq!(status, 200);
                assert!(
                    body["data"].as_array().unwrap().is_empty(),
                    "{route:?}: {body}"
                );
            }
        }
    }
    // The same key in scope b is b's own: a fresh write, not a replay of a's.
    let mut write_b = write.clone();
    write_b.credential = Some("sk-b-key-0001".into());
    let (status, body) = answer(&mut m, &write_b, 20);
    assert_eq!(status, 200);
    assert_ne!(body["id"].as_str().unwrap(), id);
    let find_b = as_scope(
        "b",
        RequestRoute::FindRecords {
            by: FindBy::IdempotencyKey("key-1".into()),
        },
    );
    let (_, body) = answer(&mut m, &find_b, 21);
    let data = body["data"].as_array().unwrap();
    assert_eq!(data.len(), 1);
    assert_ne!(data[0]["id"].as_str().unwrap(), id);
}

#[tokio::test]
async fn over_http_another_scopes_record_is_not_found() {
    let (addr, _h) = spawn_ephemeral(config(), 1).await.unwrap();
    let base = format!("http://{addr}");
    let c = reqwest::Client::new();
    let created: Value = c
        .post(format!("{base}/v1/records"))
        .bearer_auth("sk-a-key-0001")
        .header("idempotency-key", "key-7")
        .json(&serde_json::json!({ "external_ref": "ref-7" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap();
    for (key, want) in [("sk-a-key-0001", 200), ("sk-b-key-0001", 404)] {
        let r = c
            .get(format!("{base}/v1/records/{id}"))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), want, "{key}");
    }
    for q in ["external_ref=ref-7", "idempotency_key=key-7"] {
        for (key, want) in [("sk-a-key-0001", 1), ("sk-b-key-0001", 0)] {
            let v: Value = c
                .get(format!("{base}/v1/records?{q}"))
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(v["data"].as_array().unwrap().len(), want, "{q} as {key}");
        }
    }
}
