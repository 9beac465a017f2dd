//! The model catalog: `GET /v1/models` and `GET /v1/models/{id}`, which the official SDKs
//! call as `client.models.list()` and `client.models.retrieve(id)`. Both APIs share the
//! path, so the request says which one it speaks: one with an `anthropic-version` header
//! (the anthropic SDK always sends it) is answered in Anthropic's words (a page of
//! `ModelInfo`: `{data, has_more, first_id, last_id}`, paged by `limit`, `after_id` and
//! `before_id`), any other in OpenAI's (`{object: "list", data}` of `model` objects).
//!
//! The catalog is the configured `[[provider.models]]`, in listed order. With none listed
//! the provider serves any model name, so the catalog lists the one name an answer gives a
//! request that names none ([`UNNAMED_MODEL`]), and a look-up of any id finds it.
//!
//! The key is checked first, as on every route (a key the provider does not know, or none,
//! gets the same 401 in the same words), then, in Anthropic's words, the version
//! (`anthropic_version`: one the API does not take is a 400). A catalog read is no logical request and does no
//! work: it is journaled (see `ProviderModel::arrive_catalog`), held to no limit, fault or
//! wait, billed nothing, and answered at once with the request id alone (no rate-limit
//! headers: no limit counted it). Its timestamps are fixed ([`MODEL_CREATED_UNIX_S`]), never
//! the wall clock, so the same config answers the same bytes.

use super::parse::shown;
use super::parse::{self, BadRequest};
use super::respond::{self, json_response};
use super::App;
use crate::config::{ModelConfig, ProviderConfig};
use crate::model::{
    error_body_at, key_refusal_message, model_not_found_message, CATALOG_LIST_ROUTE,
    CATALOG_RETRIEVE_ROUTE, UNNAMED_MODEL,
};
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Response, Uri};
use serde_json::{json, Value};

/// When every model of the catalog was made, Unix seconds: 2024-01-01T00:00:00Z. A fake
/// model has no release date; a fixed one keeps answers deterministic, and a nonzero one
/// keeps clients that read 0 as "missing" (Anthropic documents an epoch value for an
/// unknown date) from stumbling.
pub const MODEL_CREATED_UNIX_S: u64 = 1_704_067_200;

/// [`MODEL_CREATED_UNIX_S`] as RFC 3339, Anthropic's `created_at`.
const MODEL_CREATED_RFC3339: &str = "2024-01-01T00:00:00Z";

/// OpenAI's `owned_by` of every model of the catalog.
pub const MODEL_OWNER: &str = "stampede";

/// Models in one Anthropic page when the request sets no `limit` (Anthropic's default).
pub const DEFAULT_PAGE_LIMIT: usize = 20;

/// Most models one Anthropic page may ask for (`limit`), as Anthropic bounds it.
pub const MAX_PAGE_LIMIT: usize = 1_000;

/// One model as the catalog shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    id: String,
    /// Its context window (Anthropic's `max_input_tokens`), tokens: the model's own, else
    /// the provider's, else none.
    max_input_tokens: Option<u32>,
    /// The most output tokens a request may ask of it (Anthropic's `max_tokens`), tokens.
    max_tokens: Option<u32>,
}

/// Every model the catalog lists, in listed order (see the module's doc for none listed).
fn entries(config: &ProviderConfig) -> Vec<Entry> {
    if config.models.is_empty() {
        return vec![unlisted(config, UNNAMED_MODEL)];
    }
    config.models.iter().map(|m| listed(config, m)).collect()
}

/// The catalog's entry of `m`, a model `config` lists.
fn listed(config: &ProviderConfig, m: &ModelConfig) -> Entry {
    Entry {
        id: m.name.clone(),
        max_input_tokens: m.context_window.or(config.context_window),
        max_tokens: m.max_output_tokens,
    }
}

/// The model listed as `id`; with none listed, any `id`, which the provider serves.
fn find(config: &ProviderConfig, id: &str) -> Option<Entry> {
    if config.models.is_empty() {
        return Some(unlisted(config, id));
    }
    let m = config.models.iter().find(|m| *m.name == *id)?;
    Some(listed(config, m))
}

/// A model of a provider that lists none: any name, served with the provider's window.
fn unlisted(config: &ProviderConfig, id: &str) -> Entry {
    Entry {
        id: id.to_string(),
        max_input_tokens: config.context_window,
        max_tokens: None,
    }
}

/// Which API a catalog request speaks (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    OpenAi,
    Anthropic,
}

impl Dialect {
    fn of(headers: &HeaderMap) -> Dialect {
        // As Anthropic's routes read the header: an empty one names no version.
        if super::anthropic_version::names_a_version(headers) {
            Dialect::Anthropic
        } else {
            Dialect::OpenAi
        }
    }

    /// `m` as this API's model object.
    fn model(self, m: &Entry) -> Value {
        match self {
            Dialect::OpenAi => json!({
                "id": m.id,
                "object": "model",
                "created": MODEL_CREATED_UNIX_S,
                "owned_by": MODEL_OWNER,
            }),
            // `lifecycle` is required by the pinned SDK's `ModelInfo` (strict validation
            // refuses a model without it); every model served here is active.
            Dialect::Anthropic => json!({
                "type": "model",
                "id": m.id,
                "display_name": m.id,
                "created_at": MODEL_CREATED_RFC3339,
                "lifecycle": "active",
                "deprecated_at": null,
                "retires_at": null,
                "max_input_tokens": m.max_input_tokens,
                "max_tokens": m.max_tokens,
            }),
        }
    }

    /// The header that names the request's id in this API.
    fn id_header(self) -> &'static str {
        match self {
            Dialect::OpenAi => "x-request-id",
            Dialect::Anthropic => "request-id",
        }
    }
}

/// Why an Anthropic list's query cannot be paged by: a 400 naming the parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum PageError {
    /// `limit` is no whole number from 1 to [`MAX_PAGE_LIMIT`].
    #[error("limit: Input should be a whole number from 1 to {MAX_PAGE_LIMIT} (got {0:?})")]
    Limit(String),
    /// `after_id` and `before_id` both given: a page is after one model or before one.
    #[error("after_id and before_id cannot both be given: page forward or back, not both")]
    BothCursors,
    /// A cursor names no model of the catalog.
    #[error("{param}: {id:?} is not the id of a model this provider lists")]
    UnknownCursor {
        /// `after_id` or `before_id`.
        param: &'static str,
        /// What it named.
        id: String,
    },
    /// A `lifecycle` value Anthropic does not know.
    #[error("lifecycle: Input should be 'active', 'deprecated' or 'retired' (got {0:?})")]
    Lifecycle(String),
}

/// An Anthropic list's query.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PageQuery {
    limit: usize,
    after_id: Option<String>,
    before_id: Option<String>,
    /// Whether the page may hold active models (every model here is): `lifecycle` absent,
    /// or naming `active`.
    active: bool,
}

impl PageQuery {
    /// Reads the query's pairs; parameters the API does not take are left alone.
    fn read(pairs: &[(String, String)]) -> Result<PageQuery, PageError> {
        let mut q = PageQuery {
            limit: DEFAULT_PAGE_LIMIT,
            after_id: None,
            before_id: None,
            active: true,
        };
        let mut lifecycles = Vec::new();
        for (name, value) in pairs {
            match name.as_str() {
                "limit" => {
                    q.limit = value
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=MAX_PAGE_LIMIT).contains(n))
                        .ok_or_else(|| PageError::Limit(shown(value).to_string()))?;
                }
                "after_id" => q.after_id = Some(value.clone()),
                "before_id" => q.before_id = Some(value.clone()),
                // The SDK writes a list as `lifecycle[]=active&lifecycle[]=deprecated`.
                "lifecycle" | "lifecycle[]" => {
                    if !matches!(value.as_str(), "active" | "deprecated" | "retired") {
                        return Err(PageError::Lifecycle(shown(value).to_string()));
                    }
                    lifecycles.push(value.as_str());
                }
                _ => {}
            }
        }
        if q.after_id.is_some() && q.before_id.is_some() {
            return Err(PageError::BothCursors);
        }
        q.active = lifecycles.is_empty() || lifecycles.contains(&"active");
        Ok(q)
    }

    /// The page of `models` this query asks for, and whether more lie beyond it in the
    /// direction it pages (`has_more`): after `after_id`, before `before_id`, else from
    /// the first.
    fn page<'a>(&self, models: &'a [Entry]) -> Result<(&'a [Entry], bool), PageError> {
        let at = |param: &'static str, id: &str| {
            models
                .iter()
                .position(|m| m.id == id)
                .ok_or_else(|| PageError::UnknownCursor {
                    param,
                    id: shown(id).to_string(),
                })
        };
        let (start, end) = match (&self.after_id, &self.before_id) {
            (Some(after), _) => {
                let start = at("after_id", after)? + 1;
                (start, (start + self.limit).min(models.len()))
            }
            (None, Some(before)) => {
                let end = at("before_id", before)?;
                (end.saturating_sub(self.limit), end)
            }
            (None, None) => (0, self.limit.min(models.len())),
        };
        if !self.active {
            // Every model here is active: a page of others is empty, wherever its cursor
            // (a model of the catalog) puts it.
            return Ok((&[], false));
        }
        let has_more = if self.before_id.is_some() {
            start > 0
        } else {
            end < models.len()
        };
        Ok((&models[start..end], has_more))
    }
}

/// What the catalog answers a request, decided under the lock and rendered after it.
enum Answer {
    /// 200 with this body.
    Ok(Value),
    /// 401: a key the provider does not know (`true`), or none.
    KeyRefused(bool),
    /// 404 `model_not_found`: the provider lists no model of this id.
    NotFound(String),
    /// 400: a query the list cannot be paged by.
    BadQuery(PageError),
    /// 400: an `anthropic-version` the API does not take (the words of
    /// `anthropic_version::version`).
    BadVersion(String),
}

impl Answer {
    /// The status and the journal's error code.
    fn journaled(&self) -> (u16, Option<&'static str>) {
        match self {
            Answer::Ok(_) => (200, None),
            Answer::KeyRefused(_) => (401, Some("invalid_api_key")),
            Answer::NotFound(_) => (404, Some("model_not_found")),
            Answer::BadQuery(_) | Answer::BadVersion(_) => (400, Some("invalid_request")),
        }
    }

    /// The answer to attempt `seq` in `dialect`'s words.
    fn render(&self, dialect: Dialect, seq: u64) -> Response<Body> {
        let (status, _) = self.journaled();
        let headers = [
            ("x-stampede-seq".to_string(), seq.to_string()),
            (dialect.id_header().to_string(), respond::id("req", seq)),
        ];
        let anthropic = dialect == Dialect::Anthropic;
        let (message, code) = match self {
            Answer::Ok(body) => return json_response(200, &headers, body),
            Answer::KeyRefused(given) => (
                key_refusal_message(*given, anthropic).to_string(),
                "invalid_api_key",
            ),
            Answer::NotFound(id) => (model_not_found_message(id), "model_not_found"),
            Answer::BadQuery(e) => (e.to_string(), "invalid_request"),
            Answer::BadVersion(message) => (message.clone(), "invalid_request"),
        };
        let body = match dialect {
            Dialect::OpenAi => error_body_at(&message, "invalid_request_error", None, Some(code)),
            Dialect::Anthropic => {
                let mut body = super::anthropic::error_body(status, &message);
                // The body names its request as the `request-id` header does, as the
                // Messages route's errors do.
                body["request_id"] = Value::String(respond::id("req", seq));
                body
            }
        };
        json_response(status, &headers, &body)
    }
}

/// A header the key cannot be read from: the 400 every route answers it with, in the
/// request's words, unjournaled as theirs are.
fn bad_header(dialect: Dialect, e: &BadRequest) -> Response<Body> {
    match dialect {
        Dialect::OpenAi => super::routes::bad_request(e),
        Dialect::Anthropic => {
            json_response(400, &[], &super::anthropic::error_body(400, &e.message))
        }
    }
}

/// Checks the key, then answers with `decide` (given the config) under the lock, journals
/// the answer as a catalog read of `route`, and renders it.
fn answer(
    app: &App,
    (headers, dialect): (&HeaderMap, Dialect),
    route: &str,
    decide: impl FnOnce(&ProviderConfig) -> Answer,
) -> Response<Body> {
    let key = match parse::credential(headers, dialect == Dialect::Anthropic) {
        Ok(key) => key,
        Err(e) => return bad_header(dialect, &e),
    };
    // Anthropic's catalog holds the version to the list its Messages route takes (an
    // OpenAI request names none); told after the key, as there.
    let bad_version = match dialect {
        Dialect::Anthropic => super::anthropic_version::version(headers).err(),
        Dialect::OpenAi => None,
    };
    let (seq, answer) = {
        let mut inner = app.shared.lock();
        let answer = match (inner.model.knows_credential(key), bad_version) {
            (false, _) => Answer::KeyRefused(key.is_some()),
            (true, Some(e)) => Answer::BadVersion(e.message),
            (true, None) => decide(inner.model.config()),
        };
        let seq = inner.arrive_catalog(route, key, answer.journaled());
        (seq, answer)
    };
    answer.render(dialect, seq)
}

/// `GET /v1/models`: every model of the catalog (OpenAI), or one page of it (Anthropic).
pub(crate) async fn list(State(app): State<App>, headers: HeaderMap, uri: Uri) -> Response<Body> {
    let dialect = Dialect::of(&headers);
    // OpenAI's list takes no parameters; Anthropic's pages. A query that is no form
    // (bytes that are no UTF-8) pages by nothing.
    let pairs = Query::<Vec<(String, String)>>::try_from_uri(&uri)
        .map(|Query(pairs)| pairs)
        .unwrap_or_default();
    answer(&app, (&headers, dialect), CATALOG_LIST_ROUTE, |config| {
        let models = entries(config);
        match dialect {
            Dialect::OpenAi => Answer::Ok(json!({
                "object": "list",
                "data": models.iter().map(|m| dialect.model(m)).collect::<Vec<_>>(),
            })),
            Dialect::Anthropic => match PageQuery::read(&pairs).and_then(|q| q.page(&models)) {
                Ok((page, has_more)) => Answer::Ok(json!({
                    "data": page.iter().map(|m| dialect.model(m)).collect::<Vec<_>>(),
                    "has_more": has_more,
                    "first_id": page.first().map(|m| m.id.as_str()),
                    "last_id": page.last().map(|m| m.id.as_str()),
                })),
                Err(e) => Answer::BadQuery(e),
            },
        }
    })
}

/// `GET /v1/models/{id}`: one model of the catalog, or 404 `model_not_found`.
pub(crate) async fn retrieve(
    State(app): State<App>,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
    uri: Uri,
) -> Response<Body> {
    // An id whose percent-encoding decodes to no UTF-8 names no model: 404, in the
    // request's dialect, as any id not listed, named as it was sent. (axum's own answer was
    // a 400 in plain text, which neither SDK's error parser reads.)
    let id = match id {
        Ok(Path(id)) => id,
        Err(_) => uri
            .path()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string(),
    };
    let dialect = Dialect::of(&headers);
    answer(
        &app,
        (&headers, dialect),
        CATALOG_RETRIEVE_ROUTE,
        |config| match find(config, &id) {
            Some(m) => Answer::Ok(dialect.model(&m)),
            None => Answer::NotFound(shown(&id).to_string()),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn models(names: &[&str]) -> Vec<Entry> {
        names
            .iter()
            .map(|n| Entry {
                id: n.to_string(),
                max_input_tokens: None,
                max_tokens: None,
            })
            .collect()
    }

    fn query(pairs: &[(&str, &str)]) -> Result<PageQuery, PageError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        PageQuery::read(&pairs)
    }

    fn ids(page: &[Entry]) -> Vec<&str> {
        page.iter().map(|m| m.id.as_str()).collect()
    }

    #[test]
    fn the_fixed_creation_time_is_one_instant_in_both_forms() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(MODEL_CREATED_UNIX_S);
        assert_eq!(
            humantime::format_rfc3339_seconds(at).to_string(),
            MODEL_CREATED_RFC3339
        );
    }

    /// Pages forward from the first, after a cursor and back before one, with
    /// `has_more` saying whether more lie the way the pages go, as the SDK's paging reads it.
    #[test]
    fn pages_go_forward_after_and_back_before_a_cursor() {
        let all = models(&["a", "b", "c", "d", "e"]);
        let page = |pairs: &[(&str, &str)]| {
            let (p, more) = query(pairs).unwrap().page(&all).unwrap();
            (ids(p), more)
        };
        assert_eq!(page(&[]), (vec!["a", "b", "c", "d", "e"], false));
        assert_eq!(page(&[("limit", "2")]), (vec!["a", "b"], true));
        assert_eq!(
            page(&[("limit", "2"), ("after_id", "b")]),
            (vec!["c", "d"], true)
        );
        assert_eq!(
            page(&[("limit", "2"), ("after_id", "d")]),
            (vec!["e"], false)
        );
        assert_eq!(page(&[("after_id", "e")]), (vec![], false));
        assert_eq!(
            page(&[("limit", "2"), ("before_id", "e")]),
            (vec!["c", "d"], true)
        );
        assert_eq!(
            page(&[("limit", "2"), ("before_id", "c")]),
            (vec!["a", "b"], false)
        );
        assert_eq!(page(&[("before_id", "a")]), (vec![], false));
        // Every model here is active: a list of other lifecycles holds none, wherever a
        // cursor of the catalog puts it.
        assert_eq!(page(&[("lifecycle[]", "retired")]), (vec![], false));
        assert_eq!(
            page(&[("lifecycle[]", "deprecated"), ("after_id", "b")]),
            (vec![], false)
        );
        assert_eq!(
            page(&[
                ("lifecycle[]", "deprecated"),
                ("lifecycle[]", "active"),
                ("limit", "1")
            ]),
            (vec!["a"], true)
        );
        assert_eq!(page(&[("unknown", "x"), ("limit", "5")]).0.len(), 5);
    }

    #[test]
    fn a_query_that_cannot_page_names_its_parameter() {
        for bad in ["0", "1001", "-1", "ten", ""] {
            let e = query(&[("limit", bad)]).unwrap_err();
            assert_eq!(e, PageError::Limit(bad.to_string()));
            assert!(e.to_string().starts_with("limit: "), "{e}");
        }
        assert_eq!(query(&[("limit", "1000")]).unwrap().limit, MAX_PAGE_LIMIT);
        assert_eq!(query(&[]).unwrap().limit, DEFAULT_PAGE_LIMIT);
        assert_eq!(
            query(&[("after_id", "a"), ("before_id", "b")]),
            Err(PageError::BothCursors)
        );
        assert!(matches!(
            query(&[("lifecycle", "old")]),
            Err(PageError::Lifecycle(_))
        ));
        let e = query(&[("after_id", "zz")])
            .unwrap()
            .page(&models(&["a"]))
            .unwrap_err();
        assert!(e.to_string().starts_with("after_id: \"zz\""), "{e}");
        // What a client sent is echoed cut, as every refusal of the provider echoes it.
        let long = "z".repeat(100_000);
        let e = query(&[("limit", long.as_str())]).unwrap_err().to_string();
        assert!(e.len() < 1_000, "{} bytes", e.len());
        let e = query(&[("before_id", long.as_str())])
            .unwrap()
            .page(&models(&["a"]))
            .unwrap_err()
            .to_string();
        assert!(e.len() < 1_000, "{} bytes", e.len());
    }

    /// Listed models, with their own windows or the provider's; with none listed, the
    /// unnamed model, and any name found (the provider serves any).
    #[test]
    fn the_catalog_is_the_listed_models_else_any_name() {
        let mut config = ProviderConfig {
            context_window: Some(8_000),
            ..ProviderConfig::default()
        };
        assert_eq!(ids(&entries(&config)), [UNNAMED_MODEL]);
        let any = find(&config, "gpt-anything").unwrap();
        assert_eq!(any.id, "gpt-anything");
        assert_eq!(any.max_input_tokens, Some(8_000));
        let model = |name: &str, window: Option<u32>| ModelConfig {
            name: name.into(),
            context_window: window,
            max_output_tokens: Some(4_096),
            latency: None,
            price: None,
        };
        config.models = vec![model("small", Some(128_000)), model("large", None)];
        let listed = entries(&config);
        assert_eq!(ids(&listed), ["small", "large"]);
        assert_eq!(listed[0].max_input_tokens, Some(128_000));
        assert_eq!(listed[1].max_input_tokens, Some(8_000));
        assert_eq!(listed[1].max_tokens, Some(4_096));
        assert_eq!(find(&config, "large"), Some(listed[1].clone()));
        assert_eq!(find(&config, "gpt-anything"), None);
    }

    #[test]
    fn each_api_has_its_model_object() {
        let m = &models(&["m1"])[0];
        let openai = Dialect::OpenAi.model(m);
        assert_eq!(
            openai,
            json!({ "id": "m1", "object": "model", "created": MODEL_CREATED_UNIX_S, "owned_by": MODEL_OWNER })
        );
        let anthropic = Dialect::Anthropic.model(m);
        assert_eq!(anthropic["type"], "model");
        assert_eq!(anthropic["display_name"], "m1");
        assert_eq!(anthropic["created_at"], MODEL_CREATED_RFC3339);
        assert_eq!(anthropic["lifecycle"], "active");
    }
}
