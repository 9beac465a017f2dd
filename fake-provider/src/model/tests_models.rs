//! Models, per-model limits, several scopes per key, billing and idempotent completions
//! (issue 16), in virtual time.

use super::*;
use crate::config::{CredentialConfig, DurationMs, LatencyConfig, ModelConfig, Price, ScopeLimits};

const EPOCH: u64 = 1_700_000_000_000;

fn scope(id: &str, f: impl FnOnce(&mut ScopeLimits)) -> ScopeLimits {
    let mut s = ScopeLimits::unlimited(id);
    f(&mut s);
    s
}

fn key(key: &str, scope: &str, also: &[&str]) -> CredentialConfig {
    CredentialConfig {
        key: key.into(),
        scope: scope.into(),
        scopes: also.iter().map(|s| s.to_string()).collect(),
    }
}

fn served(name: &str) -> ModelConfig {
    ModelConfig {
        name: name.into(),
        context_window: None,
        max_output_tokens: None,
        latency: None,
        price: None,
    }
}

fn model(c: ProviderConfig) -> ProviderModel {
    ProviderModel::new(c, 42, EPOCH).unwrap()
}

fn chat(key: &str, model: Option<&str>, body: u64) -> Request {
    Request {
        route: RequestRoute::ChatCompletions,
        credential: Some(key.into()),
        prompt_tokens: 100,
        max_tokens: 50,
        body_hash: body,
        model: model.map(Into::into),
        ..Request::default()
    }
}

fn status(d: &Decision) -> Option<u16> {
    d.answer.status()
}

/// One key `sk-key-0001` on scope `key`, which also counts against `also`.
fn one_key(scopes: Vec<ScopeLimits>, also: &[&str], models: Vec<ModelConfig>) -> ProviderConfig {
    ProviderConfig {
        credentials: vec![key("sk-key-0001", "key", also)],
        scopes,
        models,
        ..ProviderConfig::default()
    }
}

#[test]
fn a_per_model_scope_refuses_its_model_while_another_model_on_the_key_is_admitted() {
    let c = one_key(
        vec![
            scope("key", |_| {}),
            scope("key:large", |s| {
                s.rpm = Some(1);
                s.model = Some("large".into());
            }),
        ],
        &["key:large"],
        vec![served("small"), served("large")],
    );
    let mut m = model(c);
    assert_eq!(
        status(&m.arrive(&chat("sk-key-0001", Some("large"), 1), 1_000)),
        Some(200)
    );
    let refused = m.arrive(&chat("sk-key-0001", Some("large"), 2), 1_000);
    assert_eq!(status(&refused), Some(429));
    assert_eq!(
        refused
            .answer
            .header("x-ratelimit-limit-requests")
            .as_deref(),
        Some("1"),
        "the per-model scope's figures"
    );
    assert_eq!(refused.answer.retry_after_ms(), Some(59_000));
    assert_eq!(
        status(&m.arrive(&chat("sk-key-0001", Some("small"), 3), 1_000)),
        Some(200)
    );
    assert_eq!(
        status(&m.arrive(&chat("sk-key-0001", None, 4), 1_000)),
        Some(200),
        "no model named: the first listed, small"
    );
    let j = m.drain_journal();
    assert_eq!(j[0].scope.as_deref(), Some("key"));
    assert_eq!(j[0].model.as_deref(), Some("large"));
    assert_eq!(j[1].scope.as_deref(), Some("key:large"));
    assert_eq!(j[1].limit.as_deref(), Some("rpm"));
    assert_eq!(j[2].model.as_deref(), Some("small"));
    assert_eq!(j[3].model.as_deref(), Some("small"));
    assert!(j[2].limit.is_none() && j[3].limit.is_none());
    let stats = m.stats();
    assert_eq!(stats.scopes["key:large"].attempts, 2);
    assert_eq!(stats.scopes["key:large"].rate_limited, 1);
    assert_eq!(stats.scopes["key"].attempts, 4);
}

#[test]
fn an_account_above_the_key_refuses_while_the_key_has_room() {
    let c = ProviderConfig {
        scopes: vec![
            scope("key:a", |s| s.rpm = Some(10)),
            scope("key:b", |s| s.rpm = Some(10)),
            scope("account", |s| s.rpm = Some(1)),
        ],
        credentials: vec![
            key("sk-a-0000001", "key:a", &["account"]),
            key("sk-b-0000001", "key:b", &["account"]),
        ],
        ..ProviderConfig::default()
    };
    let mut m = model(c);
    assert_eq!(
        status(&m.arrive(&chat("sk-a-0000001", None, 1), 0)),
        Some(200)
    );
    let d = m.arrive(&chat("sk-b-0000001", None, 2), 0);
    assert_eq!(status(&d), Some(429));
    assert_eq!(d.answer.error_code(), Some("rate_limit_exceeded"));
    assert_eq!(
        d.answer.header("x-ratelimit-limit-requests").as_deref(),
        Some("1")
    );
    assert_eq!(
        d.answer.header("x-ratelimit-remaining-requests").as_deref(),
        Some("0")
    );
    assert_eq!(d.answer.retry_after_ms(), Some(60_000));
    let j = m.drain_journal();
    assert_eq!(j[1].scope.as_deref(), Some("account"));
    assert_eq!(j[1].limit.as_deref(), Some("rpm"));
    assert_eq!(j[1].model, None, "no models listed");
    // The account was told to wait, not the key: its Retry-After binds the account.
    assert_eq!(m.stats().scopes["account"].retry_after_until_ms, 60_005);
    assert_eq!(m.stats().scopes["key:b"].retry_after_until_ms, 0);
}

#[test]
fn a_refusal_by_a_later_scope_charges_the_earlier_ones_nothing() {
    let c = ProviderConfig {
        scopes: vec![
            scope("key", |s| s.rpm = Some(2)),
            scope("account", |s| {
                s.rpm = Some(1);
                s.concurrency = Some(1);
            }),
        ],
        credentials: vec![
            key("sk-both-0001", "key", &["account"]),
            key("sk-key-only1", "key", &[]),
        ],
        ..ProviderConfig::default()
    };
    let mut m = model(c);
    let first = m.arrive(&chat("sk-both-0001", None, 1), 0);
    assert_eq!(status(&first), Some(200));
    let d = m.arrive(&chat("sk-both-0001", None, 2), 0);
    assert_eq!(status(&d), Some(429));
    assert_eq!(m.drain_journal()[1].limit.as_deref(), Some("concurrency"));
    // Had the refusal charged the key, its second request of the minute would be gone.
    let last = m.arrive(&chat("sk-key-only1", None, 3), 0);
    assert_eq!(status(&last), Some(200));
    assert_eq!(
        last.answer
            .header("x-ratelimit-remaining-requests")
            .as_deref(),
        Some("0")
    );
    assert_eq!(m.stats().scopes["key"].in_flight, 2);
    assert_eq!(m.stats().scopes["account"].in_flight, 1);
    // Departing frees the slot on every scope it held.
    m.depart(first.seq, 100);
    assert_eq!(m.stats().scopes["account"].in_flight, 0);
    assert_eq!(m.stats().scopes["key"].in_flight, 1);
    // Both are full now: the key's own scope is checked first and names the refusal.
    let d = m.arrive(&chat("sk-both-0001", None, 4), 200);
    assert_eq!(status(&d), Some(429));
    let j = m.drain_journal();
    assert_eq!(j[1].scope.as_deref(), Some("key"));
    assert_eq!(j[1].limit.as_deref(), Some("rpm"));
}

/// A request asking a model for more output tokens than it gives is refused 400 in its
/// API's words before any limit counts it: it had been charged against the scope's token
/// limit and answered 429, which the SDKs retried for minutes where the real APIs refuse at
/// once.
#[test]
fn max_tokens_past_the_models_bound_is_a_400_before_any_limit() {
    let bounded = ModelConfig {
        max_output_tokens: Some(64_000),
        ..served("claude-sonnet-4-5")
    };
    let tight = scope("key", |s| s.tpm = Some(1_000));
    let mut m = model(one_key(vec![tight], &[], vec![bounded]));
    let mut asking = |route: RequestRoute, max_tokens: u32| {
        let mut req = chat(
            "sk-key-0001",
            Some("claude-sonnet-4-5"),
            u64::from(max_tokens),
        );
        req.route = route;
        req.max_tokens = max_tokens;
        m.arrive(&req, 0)
    };
    for (route, says) in [
        (
            RequestRoute::Messages,
            "max_tokens: 400000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5",
        ),
        (
            RequestRoute::ChatCompletions,
            "max_tokens is too large: 400000. This model supports at most 64000 completion tokens, whereas you provided 400000.",
        ),
        (
            RequestRoute::Responses,
            "Invalid 'max_output_tokens': 400000 is more than this model supports: at most 64000 output tokens.",
        ),
    ] {
        let d = asking(route.clone(), 400_000);
        assert_eq!(status(&d), Some(400), "{route:?}");
        let Answer::Respond { body, .. } = &d.answer else {
            panic!("{d:?}")
        };
        assert_eq!(body["error"]["code"], "invalid_value", "{route:?}");
        assert_eq!(body["error"]["message"], says, "{route:?}");
    }
    // At the bound it is taken to the limits, where this scope's 1,000 tokens a minute
    // refuse it.
    assert_eq!(status(&asking(RequestRoute::Messages, 64_000)), Some(429));
    assert_eq!(status(&asking(RequestRoute::Messages, 100)), Some(200));
    // A request naming no max_tokens is served, and answered within the model's bound:
    // the edge's assumed count is no ask, and no real model writes past its bound.
    let roomy = scope("key", |s| s.tpm = Some(10_000_000));
    let bounded = ModelConfig {
        max_output_tokens: Some(64),
        ..served("claude-sonnet-4-5")
    };
    let mut capped = model(one_key(vec![roomy], &[], vec![bounded]));
    for n in 0..20 {
        let mut unnamed = chat("sk-key-0001", Some("claude-sonnet-4-5"), n);
        (unnamed.max_tokens, unnamed.max_tokens_assumed) = (256, true);
        let d = capped.arrive(&unnamed, 0);
        let Answer::Respond {
            status: 200,
            usage: Some((_, out)),
            ..
        } = d.answer
        else {
            panic!("{d:?}")
        };
        assert!((1..=64).contains(&out), "{out} tokens");
    }
    let j = m.drain_journal();
    assert!(
        j[..3].iter().all(|e| e.limit.is_none() && !e.committed),
        "{j:?}"
    );
}

#[test]
fn an_unknown_model_is_404_model_not_found() {
    let mut m = model(one_key(vec![scope("key", |_| {})], &[], vec![served("m1")]));
    let d = m.arrive(&chat("sk-key-0001", Some("gpt-9"), 1), 0);
    assert_eq!(status(&d), Some(404));
    let Answer::Respond { body, .. } = &d.answer else {
        panic!("{d:?}")
    };
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["code"], "model_not_found");
    assert_eq!(
        body["error"]["message"],
        "The model `gpt-9` does not exist or you do not have access to it."
    );
    let j = m.drain_journal();
    assert_eq!(j[0].model.as_deref(), Some("gpt-9"));
    assert_eq!(j[0].scope.as_deref(), Some("key"));
    assert!(!j[0].committed && j[0].limit.is_none());
    assert_eq!(
        status(&m.arrive(&chat("sk-key-0001", Some("m1"), 1), 0)),
        Some(200)
    );
}

#[test]
fn a_model_context_window_overrides_the_providers() {
    let mut small = served("small");
    small.context_window = Some(120);
    let mut c = one_key(vec![scope("key", |_| {})], &[], vec![served("big"), small]);
    c.context_window = Some(100_000);
    let mut m = model(c);
    let d = m.arrive(&chat("sk-key-0001", Some("small"), 1), 0);
    assert_eq!(status(&d), Some(400));
    assert_eq!(d.answer.error_code(), Some("context_length_exceeded"));
    let Answer::Respond { body, .. } = &d.answer else {
        panic!("{d:?}")
    };
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("This model's maximum context length is 120 tokens."));
    assert_eq!(
        status(&m.arrive(&chat("sk-key-0001", Some("big"), 1), 0)),
        Some(200)
    );
}

#[test]
fn a_model_latency_overrides_the_providers_with_one_draw_per_completion() {
    let uniform = LatencyConfig {
        min: Some(DurationMs(10)),
        max: Some(DurationMs(1_000)),
        ..LatencyConfig::default()
    };
    let mut slow = served("slow");
    slow.latency = Some(LatencyConfig {
        min: Some(DurationMs(5_000)),
        max: Some(DurationMs(6_000)),
        ..LatencyConfig::default()
    });
    let mut with = one_key(vec![scope("key", |_| {})], &[], vec![served("fast"), slow]);
    with.latency = uniform.clone();
    let mut without = one_key(vec![scope("key", |_| {})], &[], vec![]);
    without.latency = uniform;
    let (mut a, mut b) = (model(with), model(without));
    for i in 0..20u64 {
        let name = if i % 3 == 0 { "slow" } else { "fast" };
        let da = a.arrive(&chat("sk-key-0001", Some(name), i), i * 10);
        let db = b.arrive(&chat("sk-key-0001", Some(name), i), i * 10);
        if name == "slow" {
            assert!(
                (5_000..=6_000).contains(&da.latency_ms),
                "{}",
                da.latency_ms
            );
        } else {
            // The provider's own latency, drawn as if no model were listed: the override
            // takes no extra draw from the stream.
            assert_eq!(da.latency_ms, db.latency_ms, "attempt {i}");
        }
    }
}

#[test]
fn billing_in_micro_dollars_and_a_duplicate_is_billed_again() {
    let mut priced = served("mini");
    priced.price = Some(Price {
        prompt_per_mtok: 0.15,
        completion_per_mtok: 0.6,
    });
    let mut m = model(one_key(vec![scope("key", |_| {})], &[], vec![priced]));
    // 1000 prompt tokens at $0.15/M = 150 micro-dollars; 1 completion token at $0.60/M = 0.6;
    // 150.6 rounds to 151.
    let req = Request {
        prompt_tokens: 1_000,
        max_tokens: 1,
        ..chat("sk-key-0001", Some("mini"), 9)
    };
    let first = m.arrive(&req, 0);
    m.depart(first.seq, 50);
    let again = m.arrive(&req, 1_000);
    assert_eq!(status(&again), Some(200));
    let j = m.drain_journal();
    assert_eq!(j[0].billed_micro_usd, 151);
    assert!(!j[0].duplicate);
    assert!(j[1].duplicate, "the same body again: a second completion");
    assert_eq!(
        j[1].billed_micro_usd, 151,
        "a duplicate is billed: that is the point"
    );
    // 100 prompt tokens + up to 50 completion tokens at these prices.
    let d = m.arrive(&chat("sk-key-0001", None, 3), 2_000);
    let Answer::Respond {
        usage: Some((p, c)),
        ..
    } = d.answer
    else {
        panic!()
    };
    let want = (f64::from(p) * 0.15 + f64::from(c) * 0.6).round() as u64;
    assert_eq!(m.drain_journal()[0].billed_micro_usd, want);
}

#[test]
fn without_models_nothing_is_billed_or_named_and_the_journal_reads_as_before() {
    let mut m = model(one_key(vec![scope("key", |_| {})], &[], vec![]));
    m.arrive(&chat("sk-key-0001", Some("gpt-4o"), 1), 0);
    let j = m.drain_journal();
    assert_eq!((j[0].model.as_ref(), j[0].billed_micro_usd), (None, 0));
    let json = serde_json::to_value(&j[0]).unwrap();
    for key in ["model", "billed_micro_usd", "limit"] {
        assert!(json.get(key).is_none(), "{key} written: {json}");
    }
    let config = serde_json::to_value(ProviderConfig::default()).unwrap();
    assert!(config.get("models").is_none() && config.get("completion_idempotency").is_none());
}

fn keyed(key: &str, body: u64) -> Request {
    Request {
        idempotency_key: Some(key.into()),
        ..chat("sk-key-0001", None, body)
    }
}

fn idempotent(on: bool) -> ProviderModel {
    let mut priced = served("mini");
    priced.price = Some(Price {
        prompt_per_mtok: 1.0,
        completion_per_mtok: 2.0,
    });
    let mut c = one_key(vec![scope("key", |_| {})], &[], vec![priced]);
    c.completion_idempotency = on;
    model(c)
}

#[test]
fn a_completed_key_is_answered_with_the_original_completion_unbilled() {
    let mut m = idempotent(true);
    let first = m.arrive(&keyed("k-1", 5), 0);
    m.depart(first.seq, 50);
    let again = m.arrive(&keyed("k-1", 5), 1_000);
    let (
        Answer::Respond {
            body: b1,
            usage: u1,
            ..
        },
        Answer::Respond {
            status,
            body: b2,
            usage: u2,
            signals,
            ..
        },
    ) = (&first.answer, &again.answer)
    else {
        panic!()
    };
    assert_eq!(*status, 200);
    assert_eq!(b2["id"], "chatcmpl-1");
    assert_eq!(b1["usage"], b2["usage"]);
    assert_eq!(u1, u2);
    assert!(signals.idempotent_replayed);
    let j = m.drain_journal();
    assert!(j[0].committed && j[0].billed_micro_usd > 0);
    let r = &j[1];
    assert!(r.replayed && !r.committed && !r.duplicate);
    assert_eq!((r.tokens_used, r.billed_micro_usd), (0, 0));
    assert_eq!(m.stats().duplicates, 0);
    // Another body with the same key is an error, as for records.
    let d = m.arrive(&keyed("k-1", 6), 2_000);
    assert_eq!(
        (d.answer.status(), d.answer.error_code()),
        (Some(400), Some("idempotency_error"))
    );
}

#[test]
fn without_completion_idempotency_the_same_key_completes_and_bills_again() {
    let mut m = idempotent(false);
    let first = m.arrive(&keyed("k-1", 5), 0);
    m.depart(first.seq, 50);
    let again = m.arrive(&keyed("k-1", 5), 1_000);
    assert_eq!(status(&again), Some(200));
    let j = m.drain_journal();
    assert!(j[1].committed && j[1].duplicate && !j[1].replayed);
    assert!(j[1].billed_micro_usd > 0);
}

#[test]
fn a_key_still_in_flight_is_409_and_forgotten_after_retention() {
    let mut m = idempotent(true);
    let first = m.arrive(&keyed("k-1", 5), 0);
    let d = m.arrive(&keyed("k-1", 5), 10);
    assert_eq!(status(&d), Some(409));
    assert_eq!(d.answer.error_code(), Some("idempotency_key_in_use"));
    m.depart(first.seq, 50);
    let retention = m.config().record_retention.ms();
    let late = m.arrive(&keyed("k-1", 5), retention + 1);
    assert_eq!(status(&late), Some(200));
    let j = m.drain_journal();
    assert!(!j[1].committed && !j[1].replayed);
    assert!(
        j[2].committed && !j[2].replayed,
        "the key was forgotten: a new completion"
    );
}
