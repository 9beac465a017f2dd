//! Model rules in virtual time: every limit and fault.

use super::*;
use crate::config::{
    CredentialConfig, DurationMs, FaultRule, RetryAfterFormat, ScopeLimits, SequenceKey,
    SequenceStep,
};

const EPOCH: u64 = 1_700_000_000_000;

fn scope(id: &str) -> ScopeLimits {
    ScopeLimits::unlimited(id)
}

fn config(scopes: Vec<ScopeLimits>, faults: Vec<FaultRule>) -> ProviderConfig {
    ProviderConfig {
        credentials: scopes
            .iter()
            .map(|s| CredentialConfig {
                key: format!("sk-{}-key1", s.id),
                scope: s.id.clone(),
                scopes: Vec::new(),
            })
            .collect(),
        scopes,
        faults,
        ..ProviderConfig::default()
    }
}

fn model(c: ProviderConfig) -> ProviderModel {
    ProviderModel::new(c, 42, EPOCH).unwrap()
}

fn chat(scope: &str) -> Request {
    Request {
        route: RequestRoute::ChatCompletions,
        credential: Some(format!("sk-{scope}-key1").into()),
        prompt_tokens: 100,
        max_tokens: 50,
        body_hash: 7,
        ..Request::default()
    }
}

/// A chat completion with its own body: another logical request than `chat_body(scope, b')`.
fn chat_body(scope: &str, body: u64) -> Request {
    Request {
        body_hash: body,
        ..chat(scope)
    }
}

fn write(scope: &str, key: Option<&str>, external_ref: &str, body_hash: u64) -> Request {
    Request {
        route: RequestRoute::CreateRecord,
        credential: Some(format!("sk-{scope}-key1").into()),
        idempotency_key: key.map(Into::into),
        external_ref: Some(external_ref.into()),
        body_hash,
        ..Request::default()
    }
}

fn status(d: &Decision) -> Option<u16> {
    d.answer.status()
}

#[test]
fn unknown_or_missing_key_is_401_and_journaled_without_scope() {
    let mut m = model(config(vec![scope("a")], vec![]));
    let mut r = chat("a");
    r.credential = Some("sk-nope-000000".into());
    let d = m.arrive(&r, 0);
    assert_eq!(status(&d), Some(401));
    assert_eq!(d.answer.error_code(), Some("invalid_api_key"));
    r.credential = None;
    assert_eq!(status(&m.arrive(&r, 0)), Some(401));
    let j = m.drain_journal();
    assert_eq!(j.len(), 2);
    assert_eq!(j[0].scope, None);
    assert_eq!(j[0].credential.as_deref(), Some("sk-..."));
    assert!(!j[0].committed);
}

/// A catalog read (`GET /v1/models`) is journaled with its status, under its key's scope,
/// as no logical request, and no limit counts it: a scope of 1 rpm still admits a
/// completion after any number of them.
#[test]
fn a_catalog_read_is_journaled_and_counted_by_no_limit() {
    let mut s = scope("a");
    s.rpm = Some(1);
    let mut m = model(config(vec![s], vec![]));
    let key = Some("sk-a-key1");
    for now in 0..3 {
        m.arrive_catalog("/v1/models", key, (200, None), now);
    }
    m.arrive_catalog("/v1/models/{id}", key, (404, Some("model_not_found")), 3);
    m.arrive_catalog(
        "/v1/models",
        Some("sk-nope-000000"),
        (401, Some("invalid_api_key")),
        4,
    );
    assert_eq!(status(&m.arrive(&chat("a"), 5)), Some(200));
    assert_eq!(status(&m.arrive(&chat("a"), 6)), Some(429));
    let j = m.drain_journal();
    let seen: Vec<(&str, Option<u16>, Option<&str>)> = j
        .iter()
        .map(|e| (&*e.route, e.status, e.error_code.as_deref()))
        .collect();
    assert_eq!(
        seen[..5],
        [
            ("/v1/models", Some(200), None),
            ("/v1/models", Some(200), None),
            ("/v1/models", Some(200), None),
            ("/v1/models/{id}", Some(404), Some("model_not_found")),
            ("/v1/models", Some(401), Some("invalid_api_key")),
        ]
    );
    assert!(j[..5].iter().all(|e| e.logical == 0 && e.method == "GET"));
    assert_eq!(j[0].scope.as_deref(), Some("a"));
    assert_eq!(j[4].scope, None);
    assert_eq!(m.stats().attempts, 7);
    assert_eq!(m.stats().status_counts.get("200"), Some(&4));
}

#[test]
fn the_journal_read_in_place_comes_oldest_first_and_an_error_keeps_the_rest() {
    let mut m = model(config(vec![scope("a")], vec![]));
    for now in 0..3 {
        let _ = m.arrive(&chat("a"), now);
    }
    let mut seen = Vec::new();
    let stopped = m.drain_journal_with(|e| {
        seen.push(e.seq);
        if seen.len() == 2 {
            Err("the sink failed")
        } else {
            Ok(())
        }
    });
    assert_eq!(stopped, Err("the sink failed"));
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "oldest first: {seen:?}"
    );
    let rest = m.drain_journal();
    assert_eq!(rest.len(), 1, "the entry after the failed one stays");
    assert!(rest[0].seq > seen[1]);
    let read: Result<(), ()> = m.drain_journal_with(|_| panic!("nothing is left to read"));
    assert_eq!(read, Ok(()));
}

/// Entries are written over drained ones in place (`JournalBuffer::next_slot`): an entry
/// written into a slot that held another kind of attempt (a record write with its
/// reference, key and record id; an unknown key; a 401 with no key; a refusal naming its
/// limit) must come out as it does in a fresh slot, with nothing of the earlier one left.
#[test]
fn an_entry_written_over_a_drained_one_keeps_nothing_of_it() {
    let mut limited = scope("b");
    limited.rpm = Some(1);
    let c = config(vec![scope("a"), limited], vec![]);
    let mut unknown = chat("a");
    unknown.credential = Some("sk-nope-000000".into());
    let mut keyless = chat("a");
    keyless.credential = None;
    let mut tagged = chat("a");
    tagged.tenant = Some("acme".into());
    tagged.class = Some("llm".into());
    tagged.action = Some(9);
    tagged.attempt_no = Some(2);
    let requests = [
        write("a", Some("k-1"), "ref-1", 1),
        chat("a"),
        write("a", Some("k-1"), "ref-1", 1),
        unknown,
        tagged,
        keyless,
        chat("b"),
        chat("b"),
        chat_body("a", 3),
        write("a", None, "ref-2", 2),
    ];
    // One slot, written over by every attempt: drained after each.
    let mut recycled = model(c.clone());
    let mut one_at_a_time = Vec::new();
    for (now, r) in (0..).zip(&requests) {
        let _ = recycled.arrive(r, now);
        // Read in place, as the simulator does: the slot keeps the entry to be written
        // over (`drain_journal` would take it out, leaving a fresh one).
        let read: Result<(), ()> = recycled.drain_journal_with(|e| {
            one_at_a_time.push(e.clone());
            Ok(())
        });
        assert_eq!(read, Ok(()));
    }
    // A fresh slot for every attempt: nothing drained until the end.
    let mut fresh = model(c);
    for (now, r) in (0..).zip(&requests) {
        let _ = fresh.arrive(r, now);
    }
    let all_at_once = fresh.drain_journal();
    assert_eq!(all_at_once.len(), requests.len());
    assert_eq!(one_at_a_time, all_at_once);
    // The mix did exercise what a slot could carry over.
    assert!(all_at_once.iter().any(|e| e.record_id.is_some()));
    assert!(all_at_once.iter().any(|e| e.limit.is_some()));
    assert!(all_at_once.iter().any(|e| e.scope.is_none()));
    assert!(all_at_once.iter().any(|e| e.tenant.is_some()));
}

#[test]
fn completion_reports_usage_within_max_tokens_and_commits() {
    let mut m = model(config(vec![scope("a")], vec![]));
    let d = m.arrive(&chat("a"), 0);
    let Answer::Respond {
        status,
        usage,
        body,
        ..
    } = &d.answer
    else {
        panic!("{d:?}")
    };
    assert_eq!(*status, 200);
    let (p, c) = usage.unwrap();
    assert_eq!(p, 100);
    assert!((1..=50).contains(&c));
    assert_eq!(body["usage"]["total_tokens"], u64::from(p + c));
    assert_eq!(d.latency_ms, 50, "default fixed latency");
    let j = m.drain_journal();
    assert!(j[0].committed && !j[0].duplicate);
    assert_eq!(j[0].tokens_used, u64::from(p + c));
    assert_eq!(j[0].done_ms, 50);
    assert!(m.drain_journal().is_empty(), "drain empties");
}

#[test]
fn rpm_limit_gives_429_with_retry_after_until_the_window_resets() {
    let mut s = scope("a");
    s.rpm = Some(2);
    let mut m = model(config(vec![s], vec![]));
    assert_eq!(status(&m.arrive(&chat("a"), 10_000)), Some(200));
    assert_eq!(status(&m.arrive(&chat("a"), 10_000)), Some(200));
    let d = m.arrive(&chat("a"), 10_000);
    assert_eq!(status(&d), Some(429));
    assert_eq!(d.answer.error_code(), Some("rate_limit_exceeded"));
    assert_eq!(d.answer.header("retry-after").as_deref(), Some("50"));
    assert_eq!(d.answer.retry_after_ms(), Some(50_000));
    assert_eq!(
        d.answer.header("x-ratelimit-remaining-requests").as_deref(),
        Some("0")
    );
    assert_eq!(
        d.answer.header("x-ratelimit-reset-requests").as_deref(),
        Some("50s")
    );
    assert_eq!(
        d.answer.header("ratelimit-policy").as_deref(),
        Some("\"rpm\";q=2;w=60")
    );
    assert_eq!(
        d.answer.header("ratelimit").as_deref(),
        Some("\"rpm\";r=0;t=50")
    );
    assert_eq!(
        status(&m.arrive(&chat("a"), 60_000)),
        Some(200),
        "next window"
    );
}

#[test]
fn tpm_charges_prompt_plus_max_tokens() {
    let mut s = scope("a");
    s.tpm = Some(300);
    let mut m = model(config(vec![s], vec![]));
    assert_eq!(status(&m.arrive(&chat("a"), 0)), Some(200)); // 150
    assert_eq!(status(&m.arrive(&chat("a"), 0)), Some(200)); // 300
    let d = m.arrive(&chat("a"), 0);
    assert_eq!(status(&d), Some(429));
    assert_eq!(
        d.answer.header("x-ratelimit-remaining-tokens").as_deref(),
        Some("0")
    );
}

#[test]
fn daily_quota_is_insufficient_quota() {
    let mut s = scope("a");
    s.rpd = Some(1);
    let mut m = model(config(vec![s], vec![]));
    assert_eq!(status(&m.arrive(&chat("a"), 0)), Some(200));
    let d = m.arrive(&chat("a"), 120_000);
    assert_eq!(status(&d), Some(429));
    assert_eq!(d.answer.error_code(), Some("insufficient_quota"));
    assert_eq!(d.answer.retry_after_ms(), Some(86_400_000 - 120_000));
    let mut t = scope("b");
    t.tpd = Some(200);
    let mut m = model(config(vec![t], vec![]));
    assert_eq!(status(&m.arrive(&chat("b"), 0)), Some(200));
    assert_eq!(
        m.arrive(&chat("b"), 0).answer.error_code(),
        Some("insufficient_quota")
    );
}

#[test]
fn concurrency_is_held_until_depart() {
    let mut s = scope("a");
    s.concurrency = Some(1);
    let mut m = model(config(vec![s], vec![]));
    let first = m.arrive(&chat("a"), 0);
    assert_eq!(status(&first), Some(200));
    assert_eq!(status(&m.arrive(&chat("a"), 1)), Some(429));
    m.depart(first.seq, 50);
    assert_eq!(status(&m.arrive(&chat("a"), 2_000)), Some(200));
    assert_eq!(m.stats().in_flight, 1);
}

#[test]
fn two_keys_on_one_scope_share_its_quota_and_a_third_scope_is_unaffected() {
    let mut a = scope("shared");
    a.rpm = Some(3);
    let mut b = scope("other");
    b.rpm = Some(3);
    let mut c = config(vec![a, b], vec![]);
    c.credentials.push(CredentialConfig {
        key: "sk-second-key".into(),
        scope: "shared".into(),
        scopes: Vec::new(),
    });
    let mut m = model(c);
    let mut second = chat("shared");
    second.credential = Some("sk-second-key".into());
    assert_eq!(status(&m.arrive(&chat("shared"), 0)), Some(200));
    assert_eq!(status(&m.arrive(&second, 0)), Some(200));
    assert_eq!(status(&m.arrive(&chat("shared"), 0)), Some(200));
    assert_eq!(status(&m.arrive(&second, 0)), Some(429));
    assert_eq!(status(&m.arrive(&chat("other"), 0)), Some(200));
}

#[test]
fn retry_before_retry_after_is_a_violation_and_after_is_not() {
    let mut s = scope("a");
    s.rpm = Some(1);
    let mut m = model(config(vec![s], vec![]));
    m.arrive(&chat_body("a", 1), 59_000);
    let d = m.arrive(&chat_body("a", 2), 59_000);
    assert_eq!(d.answer.retry_after_ms(), Some(1_000));
    // The 429 leaves after the default reject latency (5 ms): at 59_005, binding to 60_005.
    m.arrive(&chat_body("a", 2), 59_500); // the request told to wait, too early
    m.arrive(&chat_body("a", 3), 59_600); // another request on the bound scope
    m.arrive(&chat_body("a", 2), 60_005); // on time
    let j = m.drain_journal();
    let own: Vec<bool> = j.iter().map(|e| e.retry_after_violation).collect();
    let scope: Vec<bool> = j.iter().map(|e| e.scope_wait_violation).collect();
    assert_eq!(own, vec![false, false, true, false, false]);
    assert_eq!(scope, vec![false, false, false, true, false]);
    assert_eq!(m.stats().retry_after_violations, 1);
    assert_eq!(m.stats().scope_wait_violations, 1);
}

#[test]
fn retry_after_binds_from_when_the_answer_left_not_from_the_decision() {
    let mut s = scope("a");
    s.rpm = Some(1);
    let mut c = config(vec![s], vec![]);
    c.reject_latency = DurationMs(100);
    let mut m = model(c);
    m.arrive(&chat_body("a", 1), 0);
    let d = m.arrive(&chat_body("a", 2), 10_000);
    assert_eq!(d.answer.retry_after_ms(), Some(50_000));
    assert_eq!(d.latency_ms, 100, "the 429 leaves at 10_100");
    assert_eq!(m.stats().scopes["a"].retry_after_until_ms, 60_100);
    m.arrive(&chat_body("a", 3), 10_050); // sent before anyone could know: no violation
    m.arrive(&chat_body("a", 2), 60_050); // 49.95 s after its answer arrived: too early
    m.arrive(&chat_body("a", 2), 60_100); // 50 s after it arrived: on time
    let j = m.drain_journal();
    let own: Vec<bool> = j.iter().map(|e| e.retry_after_violation).collect();
    let scope: Vec<bool> = j.iter().map(|e| e.scope_wait_violation).collect();
    assert_eq!(own, vec![false, false, false, true, false]);
    assert_eq!(scope, vec![false; 5]);
    assert_eq!(j[1].done_ms, 10_100);
    assert_eq!(m.stats().retry_after_violations, 1);
}

#[test]
fn an_http_date_retry_after_binds_until_the_date_itself() {
    let mut s = scope("a");
    s.rpm = Some(1);
    let mut c = config(vec![s], vec![]);
    c.reject_latency = DurationMs(100);
    c.retry_after_format = RetryAfterFormat::HttpDate;
    let mut m = model(c);
    m.arrive(&chat("a"), 0);
    let d = m.arrive(&chat("a"), 10_000);
    let date = httpdate::parse_http_date(&d.answer.header("retry-after").unwrap()).unwrap();
    let date_ms = date
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert_eq!(date_ms, EPOCH + 60_000);
    m.arrive(&chat("a"), 59_999); // before the date
    m.arrive(&chat("a"), 60_000); // at the date: honoured, though the answer left at 10_100
    let flags: Vec<bool> = m
        .drain_journal()
        .iter()
        .map(|e| e.retry_after_violation)
        .collect();
    assert_eq!(flags, vec![false, false, true, false]);
}

/// Attempts at 0 (admitted), 1 and 2 (refused: one slot, still held), then the slot frees
/// and attempts come at 10 s and 20 s: returns the statuses.
fn concurrency_storm(count_rejected: bool) -> Vec<Option<u16>> {
    let mut s = scope("a");
    s.rpm = Some(3);
    s.concurrency = Some(1);
    s.count_rejected = count_rejected;
    let mut m = model(config(vec![s], vec![]));
    let first = m.arrive(&chat("a"), 0);
    let mut out = vec![status(&first)];
    out.push(status(&m.arrive(&chat("a"), 1)));
    out.push(status(&m.arrive(&chat("a"), 2)));
    m.depart(first.seq, 50);
    let d = m.arrive(&chat("a"), 10_000);
    out.push(status(&d));
    m.depart(d.seq, 10_050);
    out.push(status(&m.arrive(&chat("a"), 20_000)));
    out
}

#[test]
fn refused_attempts_use_up_the_minute_only_with_count_rejected() {
    let ok = Some(200);
    let limited = Some(429);
    // Only admitted attempts count: three of the window's three requests are served.
    assert_eq!(concurrency_storm(false), vec![ok, limited, limited, ok, ok]);
    // The two refusals used two of the three requests: the window is spent after one answer.
    assert_eq!(
        concurrency_storm(true),
        vec![ok, limited, limited, limited, limited]
    );
}

#[test]
fn with_count_rejected_the_refusal_says_the_window_is_spent_until_it_resets() {
    let mut s = scope("a");
    s.rpm = Some(2);
    s.concurrency = Some(1);
    s.count_rejected = true;
    let mut m = model(config(vec![s], vec![]));
    let first = m.arrive(&chat("a"), 0);
    let refused = m.arrive(&chat("a"), 1);
    assert_eq!(
        refused
            .answer
            .header("x-ratelimit-remaining-requests")
            .as_deref(),
        Some("0"),
        "the refused attempt counted"
    );
    m.depart(first.seq, 50);
    let d = m.arrive(&chat("a"), 30_000);
    let Answer::Respond { body, .. } = &d.answer else {
        panic!("{d:?}")
    };
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("requests per min (RPM): Limit 2, Used 2"),
        "{body}"
    );
    assert_eq!(d.answer.retry_after_ms(), Some(30_000));
    assert_eq!(
        status(&m.arrive(&chat("a"), 60_000)),
        Some(200),
        "new window"
    );
}

#[test]
fn context_length_is_400() {
    let mut c = config(vec![scope("a")], vec![]);
    c.context_window = Some(120);
    let mut m = model(c);
    let d = m.arrive(&chat("a"), 0);
    assert_eq!(status(&d), Some(400));
    assert_eq!(d.answer.error_code(), Some("context_length_exceeded"));
}

fn rule(f: impl FnOnce(&mut FaultRule)) -> FaultRule {
    let mut r = FaultRule::default();
    f(&mut r);
    r
}

#[test]
fn injected_503_within_window_with_and_without_retry_after() {
    let mut c = config(
        vec![scope("a")],
        vec![rule(|r| {
            r.status = Some(503);
            r.from = Some(DurationMs(1_000));
            r.until = Some(DurationMs(2_000));
        })],
    );
    let mut m = model(c.clone());
    assert_eq!(status(&m.arrive(&chat("a"), 999)), Some(200));
    let d = m.arrive(&chat("a"), 1_000);
    assert_eq!(status(&d), Some(503));
    assert_eq!(d.answer.error_code(), Some("service_unavailable"));
    assert_eq!(d.answer.header("retry-after").as_deref(), Some("1"));
    assert_eq!(status(&m.arrive(&chat("a"), 2_000)), Some(200));
    c.retry_after_on_503 = false;
    let mut m = model(c);
    let d = m.arrive(&chat("a"), 1_500);
    assert_eq!(d.answer.header("retry-after").as_deref(), None);
    assert!(!m.drain_journal()[0].committed);
}

#[test]
fn injected_statuses_500_502_504_400() {
    for (st, code) in [
        (500, "internal_error"),
        (502, "bad_gateway"),
        (504, "gateway_timeout"),
        (400, "content_policy_violation"),
    ] {
        let mut m = model(config(
            vec![scope("a")],
            vec![rule(|r| r.status = Some(st))],
        ));
        let d = m.arrive(&chat("a"), 0);
        assert_eq!(status(&d), Some(st));
        assert_eq!(d.answer.error_code(), Some(code));
    }
}

#[test]
fn injected_429_http_date_retry_after_and_both_alternates() {
    let mut c = config(
        vec![scope("a")],
        vec![rule(|r| {
            r.status = Some(429);
            r.retry_after = Some(DurationMs(10_000));
        })],
    );
    c.retry_after_format = RetryAfterFormat::Both;
    let mut m = model(c);
    let d1 = m.arrive(&chat("a"), 0); // seq 1: date
    let d2 = m.arrive(&chat("a"), 0); // seq 2: seconds
    let date = d1.answer.header("retry-after").unwrap();
    let at = httpdate::parse_http_date(&date).unwrap();
    let unix = at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(unix, (EPOCH + 10_000) / 1_000);
    assert_eq!(d2.answer.header("retry-after").as_deref(), Some("10"));
}

#[test]
fn nth_every_and_filters_pick_attempts() {
    let mut m = model(config(
        vec![scope("a")],
        vec![
            rule(|r| {
                r.status = Some(502);
                r.nth = Some(2);
                r.class = Some("llm".into());
            }),
            rule(|r| {
                r.status = Some(504);
                r.every = Some(3);
                r.route = Some(crate::config::RouteName::GetItem);
            }),
        ],
    ));
    let mut llm = chat("a");
    llm.class = Some("llm".into());
    let got: Vec<_> = (0..3).map(|t| status(&m.arrive(&llm, t))).collect();
    assert_eq!(got, vec![Some(200), Some(502), Some(200)]);
    assert_eq!(status(&m.arrive(&chat("a"), 5)), Some(200), "class filter");
    let item = Request {
        route: RequestRoute::GetItem { id: "x".into() },
        credential: Some("sk-a-key1".into()),
        ..Request::default()
    };
    let got: Vec<_> = (0..6).map(|t| status(&m.arrive(&item, t))).collect();
    assert_eq!(
        got,
        vec![
            Some(200),
            Some(200),
            Some(504),
            Some(200),
            Some(200),
            Some(504)
        ]
    );
}

#[test]
fn probability_is_seeded_and_roughly_right() {
    let c = config(
        vec![scope("a")],
        vec![rule(|r| {
            r.status = Some(503);
            r.probability = Some(0.3);
        })],
    );
    let run = |seed| {
        let mut m = ProviderModel::new(c.clone(), seed, EPOCH).unwrap();
        (0..2_000)
            .map(|t| status(&m.arrive(&chat("a"), t)) == Some(503))
            .collect::<Vec<_>>()
    };
    let a = run(1);
    assert_eq!(a, run(1), "same seed, same faults");
    assert_ne!(a, run(2));
    let hits = a.iter().filter(|b| **b).count();
    assert!((500..700).contains(&hits), "{hits}");
}

#[test]
fn scripted_sequence_per_action_429_then_success() {
    let mut m = model(config(
        vec![scope("a")],
        vec![rule(|r| {
            r.sequence = vec![
                SequenceStep {
                    status: Some(429),
                    retry_after: Some(DurationMs(10_000)),
                    ..SequenceStep::default()
                },
                SequenceStep::default(),
            ];
            r.per = SequenceKey::Action;
        })],
    ));
    // Two logical requests as the provider tells them apart (by body); the client's
    // `x-stampede-action` claims play no part (a2 even claims a1's id).
    let mut a1 = chat_body("a", 1);
    a1.action = Some(1);
    let mut a2 = chat_body("a", 2);
    a2.action = Some(1);
    let d = m.arrive(&a1, 0);
    assert_eq!(status(&d), Some(429));
    assert_eq!(d.answer.header("retry-after").as_deref(), Some("10"));
    assert_eq!(status(&m.arrive(&a1, 10_000)), Some(200));
    assert_eq!(status(&m.arrive(&a2, 10_000)), Some(429), "own sequence");
    assert_eq!(status(&m.arrive(&a1, 20_000)), Some(200), "past the end");
}

#[test]
fn drop_before_commit_never_arrived_and_leaves_no_record() {
    let mut m = model(config(
        vec![scope("a")],
        vec![rule(|r| r.fault = Some(ConnectionFault::DropBeforeCommit))],
    ));
    let d = m.arrive(&write("a", Some("k1"), "ref-1", 1), 0);
    assert_eq!(d.answer, Answer::Drop { committed: false });
    assert!(m.records_by_idempotency_key("k1").is_empty());
    let j = m.drain_journal();
    assert_eq!(j[0].outcome, "dropped");
    assert!(!j[0].committed);
}

#[test]
fn drop_after_commit_leaves_the_record_and_a_keyed_retry_replays_it() {
    let mut m = model(config(
        vec![scope("a")],
        vec![rule(|r| {
            r.fault = Some(ConnectionFault::DropAfterCommit);
            r.nth = Some(1);
        })],
    ));
    let d = m.arrive(&write("a", Some("k1"), "ref-1", 1), 0);
    assert_eq!(d.answer, Answer::Drop { committed: true });
    assert_eq!(m.records_by_idempotency_key("k1").len(), 1);
    m.depart(d.seq, d.latency_ms);
    let retry = m.arrive(&write("a", Some("k1"), "ref-1", 1), 1_000);
    assert_eq!(status(&retry), Some(200));
    assert_eq!(
        retry.answer.header("idempotent-replayed").as_deref(),
        Some("true")
    );
    assert_eq!(m.records().len(), 1, "no new effect");
    let j = m.drain_journal();
    assert!(j[0].committed && !j[1].committed && j[1].replayed);
    assert_eq!(m.stats().duplicates, 0);
}

#[test]
fn idempotency_in_flight_409_and_body_mismatch_400() {
    let mut m = model(config(vec![scope("a")], vec![]));
    let first = m.arrive(&write("a", Some("k1"), "ref-1", 1), 0);
    assert_eq!(status(&first), Some(200));
    let busy = m.arrive(&write("a", Some("k1"), "ref-1", 1), 5);
    assert_eq!(status(&busy), Some(409));
    assert_eq!(busy.answer.error_code(), Some("idempotency_key_in_use"));
    m.depart(first.seq, 20);
    let other = m.arrive(&write("a", Some("k1"), "ref-1", 2), 30);
    assert_eq!(status(&other), Some(400));
    assert_eq!(other.answer.error_code(), Some("idempotency_error"));
    assert_eq!(m.records().len(), 1);
}

#[test]
fn without_idempotency_a_blind_resend_duplicates() {
    let mut c = config(vec![scope("a")], vec![]);
    c.idempotency = false;
    let mut m = model(c);
    let a = m.arrive(&write("a", Some("k1"), "ref-1", 1), 0);
    m.depart(a.seq, 20);
    m.arrive(&write("a", Some("k1"), "ref-1", 1), 100);
    let j = m.drain_journal();
    assert!(j[0].committed && !j[0].duplicate);
    assert!(j[1].committed && j[1].duplicate);
    assert_eq!(m.stats().duplicates, 1);
    assert_eq!(m.records_by_external_ref("ref-1").len(), 2);
}

#[test]
fn hang_with_and_without_commit() {
    let mut m = model(config(
        vec![scope("a")],
        vec![
            rule(|r| {
                r.fault = Some(ConnectionFault::Hang);
                r.nth = Some(1);
            }),
            rule(|r| {
                r.fault = Some(ConnectionFault::HangAfterCommit);
                r.nth = Some(1);
            }),
        ],
    ));
    let d1 = m.arrive(&write("a", None, "r1", 1), 0);
    assert_eq!(d1.answer, Answer::Hang { committed: false });
    let d2 = m.arrive(&write("a", None, "r2", 2), 0);
    assert_eq!(d2.answer, Answer::Hang { committed: true });
    assert_eq!(m.records().len(), 1);
    let j = m.drain_journal();
    assert_eq!((&*j[0].outcome, j[0].done_ms), ("hang", 0));
}

#[test]
fn stream_cut_and_stream_error_after_k_chunks() {
    let mut m = model(config(
        vec![scope("a")],
        vec![
            rule(|r| {
                r.fault = Some(ConnectionFault::StreamCut);
                r.after_chunks = Some(3);
                r.nth = Some(1);
            }),
            rule(|r| {
                r.fault = Some(ConnectionFault::StreamError);
                r.after_chunks = Some(2);
                r.nth = Some(1);
            }),
        ],
    ));
    let mut req = chat("a");
    req.stream = true;
    req.max_tokens = 1_000;
    let d = m.arrive(&req, 0);
    assert_eq!(
        d.answer,
        Answer::StreamCut {
            after_chunks: 3,
            committed: true
        }
    );
    let d = m.arrive(&req, 0);
    assert_eq!(d.answer, Answer::StreamError { after_chunks: 2 });
    let d = m.arrive(&req, 0);
    let Answer::Respond {
        stream_chunks,
        usage,
        ..
    } = d.answer
    else {
        panic!()
    };
    assert_eq!(stream_chunks, usage.map(|u| u.1.max(1)));
}

#[test]
fn latency_is_seeded_and_separate_from_faults() {
    let mut c = config(vec![scope("a")], vec![]);
    c.latency = crate::config::LatencyConfig {
        median: Some(DurationMs(2_800)),
        p99: Some(DurationMs(9_000)),
        ..Default::default()
    };
    let lat = |c: &ProviderConfig| {
        let mut m = ProviderModel::new(c.clone(), 9, EPOCH).unwrap();
        let mut r = chat("a");
        r.max_tokens = 0; // no usage draw variation
        (0..50)
            .map(|t| m.arrive(&r, t).latency_ms)
            .collect::<Vec<_>>()
    };
    let before = lat(&c);
    // Adding a probabilistic fault that never fires on these attempts' latency must not
    // shift the latency stream.
    c.faults.push(rule(|r| {
        r.status = Some(503);
        r.probability = Some(0.0);
    }));
    assert_eq!(before, lat(&c));
}

#[test]
fn time_scale_shrinks_emitted_retry_after_but_not_model_state() {
    let mut s = scope("a");
    s.rpm = Some(1);
    let mut m = model(config(vec![s], vec![]));
    m.set_emit_time_scale(60.0);
    m.arrive(&chat("a"), 0);
    let d = m.arrive(&chat("a"), 0);
    assert_eq!(d.answer.retry_after_ms(), Some(1_000));
    // Model state stays in model ms: the window resets at 60_000 and the answer left 5 ms
    // after the decision.
    assert_eq!(m.stats().scopes["a"].retry_after_until_ms, 60_005);
}

#[test]
fn lookups_and_duplicates_by_external_ref() {
    let mut m = model(config(vec![scope("a")], vec![]));
    let a = m.arrive(&write("a", None, "ref-9", 1), 0);
    m.depart(a.seq, 1);
    let b = m.arrive(&write("a", None, "ref-9", 2), 1);
    let get = Request {
        route: RequestRoute::GetRecord {
            id: "rec_000002".into(),
        },
        credential: Some("sk-a-key1".into()),
        ..Request::default()
    };
    let got = m.arrive(&get, 2);
    let Answer::Respond { body, .. } = &got.answer else {
        panic!()
    };
    assert_eq!(body["external_ref"], "ref-9");
    let find = Request {
        route: RequestRoute::FindRecords {
            by: FindBy::ExternalRef("ref-9".into()),
        },
        credential: Some("sk-a-key1".into()),
        ..Request::default()
    };
    let Answer::Respond { body, .. } = m.arrive(&find, 3).answer else {
        panic!()
    };
    assert_eq!(body["data"].as_array().unwrap().len(), 2);
    let missing = Request {
        route: RequestRoute::GetRecord { id: "rec_9".into() },
        credential: Some("sk-a-key1".into()),
        ..Request::default()
    };
    assert_eq!(status(&m.arrive(&missing, 4)), Some(404));
    assert!(m.record("rec_000002").unwrap().duplicate);
    assert_eq!(b.seq, 2);
}

#[test]
fn journal_is_bounded_and_reset_restarts() {
    let mut m = model(config(vec![scope("a")], vec![]));
    m.set_journal_capacity(3);
    for t in 0..5 {
        m.arrive(&chat("a"), t);
    }
    assert_eq!(m.stats().journal_lost, 2);
    let j = m.drain_journal();
    assert_eq!(j.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![3, 4, 5]);
    m.reset();
    assert_eq!(m.stats().attempts, 0);
    for t in 0..4 {
        m.arrive(&chat("a"), t);
    }
    assert_eq!(m.stats().journal_lost, 1, "capacity kept across reset");
    m.reset();
    assert_eq!(m.arrive(&chat("a"), 0).seq, 1);
}

#[test]
fn lean_bodies_keep_the_typed_id_and_error_code_and_change_nothing_else() {
    let mut s = scope("a");
    s.rpm = Some(3);
    let c = config(vec![s], vec![]);
    let (mut full, mut lean) = (model(c.clone()), model(c));
    lean.set_lean_bodies(true);
    lean.reset();
    for i in 0..5 {
        let (f, l) = (
            full.arrive(&chat("a"), i * 10),
            lean.arrive(&chat("a"), i * 10),
        );
        assert_eq!((f.seq, f.latency_ms), (l.seq, l.latency_ms));
        match (f.answer, l.answer) {
            (
                Answer::Respond {
                    status: fs,
                    signals: fh,
                    body: fb,
                    error: fe,
                    usage: fu,
                    completion_id: fc,
                    ..
                },
                Answer::Respond {
                    status: ls,
                    signals: lh,
                    body: lb,
                    error: le,
                    usage: lu,
                    completion_id: lc,
                    ..
                },
            ) => {
                assert_eq!((fs, &fh, &fe, fu, fc), (ls, &lh, &le, lu, lc));
                if fs == 200 {
                    // The id the body says is the answer's typed one; the lean body is empty.
                    let id = fc.expect("a completion says its id");
                    assert_eq!(fb["id"], json!(id.to_string()));
                    assert_eq!(fb["id"], json!(format!("chatcmpl-{}", id.seq())));
                    assert!(fb.get("choices").is_some());
                    assert_eq!(lb, Value::Null);
                } else {
                    assert_eq!(fc, None);
                    // The error's type and code are the body's; the lean body is empty.
                    let fe = fe.expect("an error answer says its error");
                    assert_eq!(fb["error"]["type"], json!(&*fe.kind));
                    assert_eq!(fb["error"]["code"], json!(&*fe.code));
                    assert_eq!(lb, Value::Null);
                }
            }
            other => panic!("both answer: {other:?}"),
        }
    }
    assert_eq!(full.drain_journal(), lean.drain_journal());
}

fn find(scope: &str, by: FindBy) -> Request {
    Request {
        route: RequestRoute::FindRecords { by },
        credential: Some(format!("sk-{scope}-key1").into()),
        ..Request::default()
    }
}

fn get_record(scope: &str, id: &str) -> Request {
    Request {
        route: RequestRoute::GetRecord { id: id.into() },
        credential: Some(format!("sk-{scope}-key1").into()),
        ..Request::default()
    }
}

fn found(d: &Decision) -> usize {
    match &d.answer {
        Answer::Respond { body, .. } => body["data"].as_array().map_or(0, Vec::len),
        other => panic!("an answer: {other:?}"),
    }
}

#[test]
fn records_older_than_the_retention_are_forgotten_with_their_keys() {
    let mut c = config(vec![scope("a")], vec![]);
    c.record_retention = DurationMs(60_000);
    let mut m = model(c);
    let first = m.arrive(&write("a", Some("k1"), "ref-1", 1), 0);
    m.depart(first.seq, 20);
    let second = m.arrive(&write("a", Some("k2"), "ref-2", 2), 30_000);
    m.depart(second.seq, 30_020);
    // Within the retention: everything is found and the key replays.
    let replay = m.arrive(&write("a", Some("k1"), "ref-1", 1), 59_999);
    assert_eq!(
        replay.answer.header("idempotent-replayed").as_deref(),
        Some("true")
    );
    m.depart(replay.seq, 60_000);
    assert_eq!(
        status(&m.arrive(&get_record("a", "rec_000001"), 59_999)),
        Some(200)
    );
    // At 60 s the first record is gone: look-ups by id, key and reference say "not found".
    assert_eq!(
        status(&m.arrive(&get_record("a", "rec_000001"), 60_000)),
        Some(404)
    );
    let by_key = m.arrive(&find("a", FindBy::IdempotencyKey("k1".into())), 60_000);
    assert_eq!(found(&by_key), 0);
    let by_ref = m.arrive(&find("a", FindBy::ExternalRef("ref-1".into())), 60_000);
    assert_eq!(found(&by_ref), 0);
    assert!(m.record("rec_000001").is_none());
    assert_eq!(
        status(&m.arrive(&get_record("a", "rec_000002"), 60_000)),
        Some(200)
    );
    assert_eq!(m.records().len(), 1);
    assert_eq!(m.stats().records, 1);
    assert_eq!(m.stats().records_evicted, 1);
    // Its key is forgotten: the same key and body commit a new record (a new id; ids are
    // never reused), not a replay.
    let again = m.arrive(&write("a", Some("k1"), "ref-1", 1), 61_000);
    assert_eq!(status(&again), Some(200));
    assert_eq!(again.answer.header("idempotent-replayed").as_deref(), None);
    let j = m.drain_journal();
    let last = j.last().unwrap();
    assert!(last.committed && !last.replayed);
    assert_eq!(last.record_id.as_deref(), Some("rec_000003"));
    // The second record goes at 90 s.
    m.arrive(&get_record("a", "rec_000002"), 90_000);
    assert_eq!(m.stats().records_evicted, 2);
    assert_eq!(
        m.records().next().map(|r| r.id.as_str()),
        Some("rec_000003")
    );
}

#[test]
fn the_count_cap_evicts_the_oldest_records_first() {
    let mut m = model(config(vec![scope("a")], vec![]));
    m.set_max_records(3);
    for i in 0..5u64 {
        let d = m.arrive(&write("a", Some(&format!("k{i}")), "shared-ref", i), i * 10);
        assert_eq!(status(&d), Some(200));
        m.depart(d.seq, i * 10 + 5);
    }
    let ids: Vec<&str> = m.records().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["rec_000003", "rec_000004", "rec_000005"]);
    assert_eq!(m.stats().records, 3);
    assert_eq!(m.stats().records_evicted, 2);
    assert_eq!(m.records_by_external_ref("shared-ref").len(), 3);
    assert!(m.records_by_idempotency_key("k0").is_empty());
    assert_eq!(m.records_by_idempotency_key("k4").len(), 1);
    // An evicted key commits anew; a kept one replays.
    let kept = m.arrive(&write("a", Some("k4"), "shared-ref", 4), 100);
    assert_eq!(
        kept.answer.header("idempotent-replayed").as_deref(),
        Some("true")
    );
    m.depart(kept.seq, 105);
    let forgotten = m.arrive(&write("a", Some("k0"), "shared-ref", 0), 110);
    assert_eq!(
        forgotten.answer.header("idempotent-replayed").as_deref(),
        None
    );
    assert_eq!(m.stats().records_evicted, 3);
    // The cap survives a reset.
    m.reset();
    for i in 0..5u64 {
        m.arrive(&write("a", None, &format!("r{i}"), i), i);
    }
    assert_eq!(m.records().len(), 3);
}

#[test]
fn record_retention_must_be_positive_and_is_named() {
    let mut c = config(vec![scope("a")], vec![]);
    c.record_retention = DurationMs(0);
    let e = c.validate().unwrap_err().to_string();
    assert!(e.starts_with("provider.record_retention:"), "{e}");
    assert_eq!(
        ProviderConfig::default().record_retention,
        DurationMs(24 * 3_600_000)
    );
}
