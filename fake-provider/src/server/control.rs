//! The control plane: `/_stampede/*` and `/metrics`.

use super::parse::BadRequest;
use super::respond::json_response;
use super::routes::{bad_request, read_body};
use super::state::Inner;
use super::App;
use crate::config::ProviderConfig;
use crate::model::mask_credential;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, Response};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Entries per page of `GET /_stampede/journal?after_seq=N` when no `limit` is given.
pub const DEFAULT_JOURNAL_PAGE: usize = 10_000;

/// Entries cloned per lock while a journal answer streams (the lock is held microseconds).
const JOURNAL_CHUNK: usize = 512;

/// `GET /_stampede/journal`: entries in seq order, one JSON per line, streamed in chunks taken
/// under the lock a few hundred at a time and serialized outside it.
///
/// - `?after_seq=N[&limit=M]`: one page, the first `M` (default [`DEFAULT_JOURNAL_PAGE`])
///   entries with seq above `N`; `x-stampede-journal-more: true` when more follow (ask again
///   with `after_seq` = the last seq received).
/// - no parameters, or `?since=N` alone: every entry after `N` present when the request
///   arrived (the original behaviour, still streamed).
pub(crate) async fn journal(
    State(app): State<App>,
    Query(q): Query<BTreeMap<String, String>>,
) -> Response<Body> {
    let number = |name: &str| -> Result<Option<u64>, BadRequest> {
        match q.get(name).map(|s| s.parse::<u64>()) {
            None => Ok(None),
            Some(Ok(n)) => Ok(Some(n)),
            Some(Err(_)) => Err(BadRequest::new(format!("`{name}` must be a whole number"))),
        }
    };
    let (since, after_seq, limit) = match (number("since"), number("after_seq"), number("limit")) {
        (Ok(s), Ok(a), Ok(l)) => (s, a, l),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return bad_request(&e),
    };
    if since.is_some() && after_seq.is_some() {
        return bad_request(&BadRequest::new(
            "give `after_seq` (paged) or `since` (everything after it), not both".into(),
        ));
    }
    if limit == Some(0) {
        return bad_request(&BadRequest::new("`limit` must be at least 1".into()));
    }
    let paged = after_seq.is_some() || limit.is_some();
    let after = after_seq.or(since).unwrap_or(0);
    let limit = match (paged, limit) {
        (false, _) => usize::MAX,
        (true, Some(l)) => usize::try_from(l).unwrap_or(usize::MAX),
        (true, None) => DEFAULT_JOURNAL_PAGE,
    };
    // What is there now bounds the answer: entries arriving while it streams wait for the
    // next call.
    let (upto, available) = {
        let inner = app.shared.lock();
        let start = inner.ring.partition_point(|e| e.seq <= after);
        (
            inner.ring.back().map_or(0, |e| e.seq),
            inner.ring.len() - start,
        )
    };
    let more = available > limit;
    let shared = app.shared.clone();
    let chunks = futures_util::stream::unfold((after, limit), move |(after, remaining)| {
        let shared = shared.clone();
        async move {
            if remaining == 0 {
                return None;
            }
            let entries: Vec<_> = {
                let inner = shared.lock();
                let start = inner.ring.partition_point(|e| e.seq <= after);
                inner
                    .ring
                    .range(start..)
                    .take_while(|e| e.seq <= upto)
                    .take(remaining.min(JOURNAL_CHUNK))
                    .cloned()
                    .collect()
            };
            let last = entries.last()?.seq;
            let mut out = Vec::with_capacity(entries.len() * 320);
            for e in &entries {
                if serde_json::to_writer(&mut out, e).is_ok() {
                    out.push(b'\n');
                }
            }
            let left = remaining - entries.len();
            Some((
                Ok::<_, std::convert::Infallible>(bytes::Bytes::from(out)),
                (last, left),
            ))
        }
    });
    let mut resp = Response::new(Body::from_stream(chunks));
    let h = resp.headers_mut();
    h.insert(
        "content-type",
        HeaderValue::from_static("application/x-ndjson"),
    );
    if paged {
        h.insert(
            "x-stampede-journal-more",
            HeaderValue::from_static(if more { "true" } else { "false" }),
        );
    }
    resp
}

fn stats_json(inner: &Inner, seed: u64) -> serde_json::Value {
    let mut v = serde_json::to_value(inner.model.stats()).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        m.insert("journal_ring_lost".into(), json!(inner.ring_lost));
        m.insert("journal_ring_len".into(), json!(inner.ring.len()));
        m.insert("model_time_ms".into(), json!(inner.now()));
        m.insert("time_scale".into(), json!(inner.time_scale));
        m.insert("seed".into(), json!(seed));
        m.insert(
            "journal_id".into(),
            json!(format!("{:016x}", inner.journal_id)),
        );
    }
    v
}

/// `GET /_stampede/stats`
pub(crate) async fn stats(State(app): State<App>) -> Response<Body> {
    let v = stats_json(&app.shared.lock(), app.shared.seed);
    json_response(200, &[], &v)
}

/// `GET /_stampede/abandoned`: the seqs of 2xx answers journaled and then abandoned by
/// their client (it went away before the answer was handed over; the ring's entry now says
/// `undelivered`), in the order abandoned; the seqs whose answer has not departed yet
/// (`pending`, rising) and their count (`in_flight`); and how many abandonments went
/// unlisted past the cap: `{"abandoned": [..], "pending": [..], "in_flight": N,
/// "abandoned_lost": N}`. A reader that took an entry while its answer was pending marks
/// it from here; one that must stop reading marks what is still pending.
pub(crate) async fn abandoned(State(app): State<App>) -> Response<Body> {
    let v = {
        let inner = app.shared.lock();
        json!({
            "abandoned": inner.abandoned,
            "pending": inner.pending.seqs(),
            "in_flight": inner.pending.count(),
            "abandoned_lost": inner.abandoned_lost,
        })
    };
    json_response(200, &[], &v)
}

/// `POST /_stampede/reset`: fresh model (same config and seed), empty journal, time 0.
pub(crate) async fn reset(State(app): State<App>) -> Response<Body> {
    let mut inner = app.shared.lock();
    let capacity = inner.ring_capacity;
    let config = inner.model.config().clone();
    match Inner::build(config, app.shared.seed, capacity) {
        Ok(fresh) => {
            app.shared.replace(&mut inner, fresh);
            json_response(200, &[], &json!({ "reset": true }))
        }
        Err(e) => bad_request(&BadRequest::new(e.to_string())),
    }
}

/// `PUT /_stampede/scenario`: a TOML scenario (its `[provider]` table) or JSON provider
/// config (bare or under `provider`) replaces the running one; time restarts at 0. A body
/// is read as JSON when its `Content-Type` says JSON or it starts with `{`, else as TOML.
pub(crate) async fn scenario(
    State(app): State<App>,
    headers: HeaderMap,
    body: Body,
) -> Response<Body> {
    let says_json = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("json"));
    let bytes = match read_body(body, &app.options).await {
        Ok(b) => b,
        Err(r) => {
            return r.render(&super::respond::Wire::OpenAi {
                include_usage: false,
            })
        }
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return bad_request(&BadRequest::new("the scenario body is not UTF-8".into()));
    };
    if text.trim().is_empty() {
        return bad_request(&BadRequest::new(
            "the scenario body is empty: send a scenario's TOML or a provider config as JSON"
                .into(),
        ));
    }
    let parsed = if says_json || text.trim_start().starts_with('{') {
        serde_json::from_str::<serde_json::Value>(text)
            .map_err(|e| format!("request body: {e}"))
            .and_then(|v| {
                let table = v.get("provider").cloned().unwrap_or(v);
                serde_json::from_value::<ProviderConfig>(table)
                    .map_err(|e| format!("request body: {e}"))
            })
            .and_then(|c| c.validate().map(|()| c).map_err(|e| e.to_string()))
    } else {
        ProviderConfig::from_scenario_toml(text, "request body")
            .map_err(|e| e.to_string())
            .and_then(|c| {
                // A whole scenario (more than a provider table) is checked as
                // `stampede validate` checks it, when the server was given that check.
                let whole = toml::from_str::<toml::Table>(text)
                    .is_ok_and(|t| t.keys().any(|k| k != "provider"));
                match (&app.options.scenario_check, whole) {
                    (Some(check), true) => (check.0)(text).map(|()| c),
                    _ => Ok(c),
                }
            })
    }
    .and_then(|c| {
        if c.credentials.is_empty() {
            Err(
                "provider.credentials: the provider has no credentials, so it would answer \
                 every request 401: give at least one [[provider.credentials]]"
                    .to_string(),
            )
        } else {
            Ok(c)
        }
    });
    let config = match parsed {
        Ok(c) => c,
        Err(m) => return bad_request(&BadRequest::new(m)),
    };
    let mut inner = app.shared.lock();
    match Inner::build(config, app.shared.seed, inner.ring_capacity) {
        Ok(fresh) => {
            app.shared.replace(&mut inner, fresh);
            let credentials: Vec<_> = inner
                .model
                .config()
                .credentials
                .iter()
                .map(|c| json!({ "key": mask_credential(&c.key), "scope": c.scope }))
                .collect();
            json_response(
                200,
                &[],
                &json!({ "replaced": true, "credentials": credentials }),
            )
        }
        Err(e) => bad_request(&BadRequest::new(e.to_string())),
    }
}

/// `GET /metrics`: Prometheus text.
pub(crate) async fn metrics(State(app): State<App>) -> Response<Body> {
    let (s, ring_lost) = {
        let inner = app.shared.lock();
        (inner.model.stats(), inner.ring_lost)
    };
    let mut out = String::with_capacity(2_048);
    let mut metric = |name: &str, kind: &str, help: &str, rows: &[(String, u64)]| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in rows {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    let outcomes: Vec<_> = s
        .status_counts
        .iter()
        .map(|(k, v)| (format!("{{outcome=\"{k}\"}}"), *v))
        .collect();
    metric(
        "stampede_provider_attempts_total",
        "counter",
        "Attempts that reached the edge, by outcome.",
        &outcomes,
    );
    metric(
        "stampede_provider_committed_total",
        "counter",
        "Attempts that committed a side effect.",
        &[(String::new(), s.committed)],
    );
    metric(
        "stampede_provider_duplicates_total",
        "counter",
        "Commits duplicating an earlier one (same external_ref).",
        &[(String::new(), s.duplicates)],
    );
    metric(
        "stampede_provider_retry_after_violations_total",
        "counter",
        "Attempts arriving before their scope's Retry-After.",
        &[(String::new(), s.retry_after_violations)],
    );
    metric(
        "stampede_provider_tokens_used_total",
        "counter",
        "Tokens used by committed completions.",
        &[(String::new(), s.tokens_used)],
    );
    metric(
        "stampede_provider_in_flight",
        "gauge",
        "Admitted attempts not yet answered.",
        &[(String::new(), s.in_flight)],
    );
    metric(
        "stampede_provider_records",
        "gauge",
        "Records in the store.",
        &[(String::new(), s.records)],
    );
    metric(
        "stampede_provider_records_evicted_total",
        "counter",
        "Records evicted from the store (retention or count cap).",
        &[(String::new(), s.records_evicted)],
    );
    metric(
        "stampede_provider_journal_lost_total",
        "counter",
        "Journal entries evicted from the ring unread.",
        &[(String::new(), ring_lost)],
    );
    let per = |f: fn(&crate::model::ScopeStats) -> u64| -> Vec<(String, u64)> {
        s.scopes
            .iter()
            .map(|(id, st)| (format!("{{scope=\"{}\"}}", id.replace('"', "'")), f(st)))
            .collect()
    };
    metric(
        "stampede_provider_scope_attempts_total",
        "counter",
        "Attempts per scope.",
        &per(|s| s.attempts),
    );
    metric(
        "stampede_provider_scope_admitted_total",
        "counter",
        "Attempts the scope's limits admitted.",
        &per(|s| s.admitted),
    );
    metric(
        "stampede_provider_scope_rate_limited_total",
        "counter",
        "429 answers per scope.",
        &per(|s| s.rate_limited),
    );
    metric(
        "stampede_provider_scope_in_flight",
        "gauge",
        "Admitted attempts in flight per scope.",
        &per(|s| s.in_flight),
    );
    let mut resp = Response::new(Body::from(out));
    resp.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    resp
}

/// The CLI banner's credential lines, keys masked (`sk-...1234`).
pub(crate) fn banner(config: &ProviderConfig) -> String {
    let mut s = String::new();
    for c in &config.credentials {
        let _ = writeln!(
            s,
            "  credential {} -> scope {}",
            mask_credential(&c.key),
            c.scope
        );
    }
    s
}
