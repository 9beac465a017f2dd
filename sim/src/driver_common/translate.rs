//! Between the core's words and the provider model's: a `Send` becomes a provider `Request`,
//! and the model's `Decision` becomes the `Outcome` the core hears, at the time it hears it.

use std::borrow::Cow;
use std::sync::Arc;

use stampede_core::rate_headers::RateHint;
use stampede_core::{
    Job, LookupBy, LookupResult, Millis, Name, OperationId, Outcome, Priority, Response, Route,
    SendAttempt, SendKind, TaskName, TransportFailure, Usage,
};
use stampede_provider::model::{
    Answer, CompletionId, Decision, FindBy, RateFigures, RecordId, RecordsGiven, Request,
    RequestRoute, Signals,
};

/// What the driver knows about a live action beyond what a `Send` carries.
#[derive(Debug, Clone)]
pub struct ActionFacts {
    /// Tenant that owns the action; shared with the requests of its attempts.
    pub tenant: Name,
    /// Task (goal) it belongs to; for its dead letter or case file.
    pub task: TaskName,
    /// Request class name (`read`, `llm`, ... or a user-defined one); shared like `tenant`.
    pub class: Name,
    /// Credential its attempts are sent with (never written out whole) and its scope, if
    /// known; for its case file.
    pub credential: Name,
    /// The provider scope its credential is limited on (`None`: unknown, the account's).
    pub scope: Option<Name>,
    /// Endpoint family of the action.
    pub route: Route,
    /// Admission priority it was submitted at.
    pub priority: Priority,
    /// Resource id of a read (`GET /v1/items/{id}`).
    pub resource: Option<String>,
    /// Estimated prompt tokens (tokens), sent with a chat completion unless a degradation
    /// rung cut the attempt.
    pub prompt_tokens: u32,
    /// Maximum output tokens asked for (tokens), sent with a chat completion unless a
    /// degradation rung cut the attempt.
    pub max_output_tokens: u32,
    /// External reference of the side effect, sent with the action (not with look-ups).
    pub external_ref: Option<String>,
    /// Whether a chat completion is streamed (SSE).
    pub stream: bool,
    /// Hash of the canonical payload, sent as the action's body hash (0 for look-ups).
    pub payload_hash: u64,
}

impl ActionFacts {
    /// The facts of `job`, copied (an action restored from a ledger).
    pub fn of(job: &Job) -> Self {
        Self::from_job(job.clone())
    }

    /// The facts of `job`, taken over when it is admitted: its names are shared, not copied.
    pub fn from_job(job: Job) -> Self {
        Self {
            tenant: job.tenant,
            task: job.task,
            class: job.class,
            credential: job.credential,
            scope: job.scope,
            route: job.route,
            priority: job.priority,
            resource: job.resource,
            prompt_tokens: job.prompt_tokens,
            max_output_tokens: job.max_output_tokens,
            external_ref: job.external_ref,
            stream: job.stream,
            payload_hash: job.payload_hash,
        }
    }
}

/// Writes the provider request for one attempt, with `x-stampede-*` attribution, into
/// `request` (the previous attempt's), field by field: a shared name (credential, key,
/// class, tenant, model) that is the one already there is kept, not cloned again. A clone
/// of an `Arc` is an atomic increment and its drop an atomic decrement; building a fresh
/// request per attempt made eight of them, the costliest instructions on the loop's hot
/// path.
pub fn fill_request(request: &mut Request, send: &SendAttempt, facts: &ActionFacts) {
    let action = matches!(send.kind, SendKind::Action);
    set_route(&mut request.route, send, facts);
    let chat = action && send.route == Route::ChatCompletion;
    keep_name(&mut request.credential, Some(send.credential));
    request
        .idempotency_key
        .clone_from(if action { &send.idempotency_key } else { &None });
    request.body_hash = if action { facts.payload_hash } else { 0 };
    request
        .external_ref
        .clone_from(if action { &facts.external_ref } else { &None });
    // A degradation rung's cut, when one trimmed the attempt.
    (request.prompt_tokens, request.max_tokens) = match (chat, send.trimmed) {
        (false, _) => (0, 0),
        (true, Some(cut)) => cut,
        (true, None) => (facts.prompt_tokens, facts.max_output_tokens),
    };
    request.stream = chat && facts.stream;
    // Our client asks for the usage chunk of a stream (it reconciles reservations).
    request.stream_usage = chat && facts.stream;
    keep_name(&mut request.class, Some(facts.class));
    keep_name(&mut request.tenant, Some(facts.tenant));
    request.action = Some(send.job);
    request.attempt_no = Some(send.attempt_no);
    request.sdk_retry_count = None;
    keep_name(&mut request.model, send.model);
}

/// Sets `slot` (the previous request's) to `name`, as the provider's shared text: a slot
/// that already holds this name's own allocation is left alone (no atomic increment and
/// decrement per attempt).
fn keep_name(slot: &mut Option<Arc<str>>, name: Option<Name>) {
    match (slot.as_ref(), name) {
        (Some(kept), Some(name)) if name.is(kept) => {}
        (None, None) => {}
        _ => *slot = name.map(Name::shared),
    }
}

/// Sets `route` (the previous attempt's) to the route of `send`.
fn set_route(route: &mut RequestRoute, send: &SendAttempt, facts: &ActionFacts) {
    if let (RequestRoute::ChatCompletions, SendKind::Action, Route::ChatCompletion) =
        (&*route, &send.kind, send.route)
    {
        // A completion after a completion (nearly every attempt): nothing to drop or write.
        return;
    }
    *route = match &send.kind {
        SendKind::Action => match send.route {
            Route::ChatCompletion => RequestRoute::ChatCompletions,
            Route::CreateRecord => RequestRoute::CreateRecord,
            Route::GetItem => {
                let item = facts.resource.as_deref().unwrap_or_default();
                // The previous read's id is written over, not freed and made again.
                if let RequestRoute::GetItem { id } = route {
                    id.clear();
                    id.push_str(item);
                    return;
                }
                RequestRoute::GetItem {
                    id: item.to_owned(),
                }
            }
        },
        SendKind::Lookup(by) => match &**by {
            LookupBy::IdempotencyKey(k) => RequestRoute::FindRecords {
                by: FindBy::IdempotencyKey(k.clone()),
            },
            LookupBy::ExternalRef(r) => RequestRoute::FindRecords {
                by: FindBy::ExternalRef(r.clone()),
            },
            LookupBy::OperationId(id) => RequestRoute::GetRecord { id: id.to_string() },
        },
    };
}

/// Whether a retry layer under the client re-sends after this outcome: a connection
/// dropped (before or after the write) or a read that timed out, the failures HTTP libraries
/// and SDKs retry on their own.
pub fn hidden_layer_retries(outcome: &Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Transport(
            TransportFailure::ResetBeforeWrite
                | TransportFailure::ResetAfterWrite
                | TransportFailure::ReadTimeout
        )
    )
}

/// When (ms after arrival) the client hears about the attempt, and what it hears. The
/// decision is read in place: it is a few hundred bytes, and only its error code is taken.
/// The tests' pair of [`heard_after`] and [`heard`], which the wire calls apart.
#[cfg(test)]
pub fn outcome(send: &SendAttempt, decision: &Decision) -> (Millis, Outcome) {
    (heard_after(send, decision), heard(send, decision))
}

/// When (ms after arrival) the client hears about the attempt: [`outcome`]'s time alone,
/// so a caller can use it before it builds the outcome where the outcome will lie.
#[inline]
pub fn heard_after(send: &SendAttempt, decision: &Decision) -> Millis {
    match decision.answer {
        // Nothing comes back: the client gives up at its own timeout.
        Answer::Hang { .. } => send.timeout_ms,
        // An answer slower than the client's timeout is heard at the timeout.
        _ => decision.latency_ms.min(send.timeout_ms),
    }
}

/// What the client hears of the attempt: [`outcome`]'s outcome alone (see
/// [`heard_after`] for when).
#[inline]
pub fn heard(send: &SendAttempt, decision: &Decision) -> Outcome {
    let latency = decision.latency_ms;
    if latency > send.timeout_ms && !matches!(decision.answer, Answer::Hang { .. }) {
        // The client stops waiting at its own timeout, whatever the provider does after:
        // an answer slower than the timeout is a read timeout to the client (the live
        // driver's HTTP client does the same), and may have executed.
        return Outcome::Transport(TransportFailure::ReadTimeout);
    }
    match &decision.answer {
        Answer::Respond {
            status,
            signals,
            body,
            error,
            usage,
            completion_id,
            records,
            ..
        } => answered_typed(
            send,
            *status,
            signals,
            // The model's codes are static text: a borrowed Cow clones without allocating.
            error.as_ref().map(|e| e.code.clone()),
            GivenIds {
                completion: *completion_id,
                records: *records,
            },
            body,
            *usage,
        ),
        Answer::Drop { committed: false } => Outcome::Transport(TransportFailure::ResetBeforeWrite),
        Answer::Drop { committed: true } => Outcome::Transport(TransportFailure::ResetAfterWrite),
        // Nothing comes back: the client gives up at its own timeout.
        Answer::Hang { .. } => Outcome::Transport(TransportFailure::ReadTimeout),
        Answer::StreamCut { after_chunks, .. } | Answer::StreamError { after_chunks } => {
            Outcome::Transport(TransportFailure::StreamCut {
                tokens_delivered: *after_chunks,
            })
        }
    }
}

/// [`heard`] written over `place`, an outcome an earlier answer left there: an action's HTTP
/// answer over an HTTP answer is written field by field where it lies (the virtual wire's
/// event slots keep their last outcome), so no outcome (about 200 bytes) is built elsewhere
/// and copied in; anything else is [`heard`] moved in. The same outcome as [`heard`] (held to
/// it by a property test).
#[inline]
pub fn hear_into(place: &mut Outcome, send: &SendAttempt, decision: &Decision) {
    if let (
        Outcome::Response(r),
        Answer::Respond {
            status,
            signals,
            body,
            error,
            usage,
            completion_id,
            records: None,
            ..
        },
        SendKind::Action,
    ) = (&mut *place, &decision.answer, &send.kind)
    {
        if decision.latency_ms <= send.timeout_ms {
            // `answered_typed` and `answered_with` for an action answered with no records.
            r.status = *status;
            r.headers.clear();
            r.retry_after_ms = signals.retry_after.map(|r| r.delay_ms);
            rate_hint_into(&mut r.rate, signals.rate.as_ref());
            r.error_code = error.as_ref().map(|e| e.code.clone());
            r.usage = usage_of(*usage);
            r.operation_id = operation_id_of(*status, || completion_id.map(completion_op), body);
            return;
        }
    }
    *place = heard(send, decision);
}

/// The outcome of an attempt the provider answered with `status`, its headers (names
/// lower-case) and JSON `body`; `usage` is (prompt, completion) tokens when reported. The
/// live driver's, which gets these over HTTP: the core reads the Retry-After and rate-limit
/// headers itself (an HTTP-date against its own clock).
pub fn answered(
    send: &SendAttempt,
    status: u16,
    headers: Vec<(String, String)>,
    body: &serde_json::Value,
    usage: Option<(u32, u32)>,
) -> Outcome {
    let error_code = body
        .get("error")
        .and_then(|e| e.get("code"))
        .and_then(|c| c.as_str())
        .map(str::to_string);
    answered_with(
        send,
        status,
        headers,
        None,
        None,
        error_code.map(Cow::Owned),
        (None, None),
        body,
        usage,
    )
}

/// [`answered`] for an action's answer whose body was read for just what this takes: the
/// provider's `id`, the `error.code` and the usage. For a body whose `id` and `error.code`
/// are those strings, the same outcome as [`answered`].
pub fn answered_parts(
    send: &SendAttempt,
    status: u16,
    headers: Vec<(String, String)>,
    id: Option<&str>,
    error_code: Option<String>,
    usage: Option<(u32, u32)>,
) -> Outcome {
    answered_with(
        send,
        status,
        headers,
        None,
        None,
        error_code.map(Cow::Owned),
        (id.map(OperationId::from), None),
        &serde_json::Value::Null,
        usage,
    )
}

/// The ids an in-process answer gives typed, as its body says them (the body may be lean,
/// `Null`): the completion's, and the records a record answer gives.
#[derive(Debug, Clone, Copy, Default)]
pub struct GivenIds {
    /// The completion a completion answer gives.
    pub completion: Option<CompletionId>,
    /// The records a record answer gives.
    pub records: Option<RecordsGiven>,
}

/// [`answered`] for the in-process provider: its Retry-After and rate-limit figures go to
/// the core as numbers ([`rate_hint_of`]), with no header text written or parsed, and the
/// error code and the ids as the model typed them (its bodies may be lean, `Null`): what
/// [`answered`] reads from the body for the same answer.
pub fn answered_typed(
    send: &SendAttempt,
    status: u16,
    signals: &Signals,
    error_code: Option<Cow<'static, str>>,
    ids: GivenIds,
    body: &serde_json::Value,
    usage: Option<(u32, u32)>,
) -> Outcome {
    let retry_after_ms = signals.retry_after.map(|r| r.delay_ms);
    let rate = signals.rate.as_ref().and_then(rate_hint_of);
    let record = |id: RecordId| OperationId::rendered(&id);
    let typed = match ids.records {
        None => (ids.completion.map(completion_op), None),
        // One record: the body's `id`, and what a look-up found.
        Some(RecordsGiven::One(id)) => (
            Some(record(id)),
            Some(LookupResult::Found {
                operation_id: Some(record(id)),
            }),
        ),
        // A list has no `id`; a look-up found its first record, if any.
        Some(RecordsGiven::List(first)) => (
            None,
            Some(match first {
                Some(id) => LookupResult::Found {
                    operation_id: Some(record(id)),
                },
                None => LookupResult::Absent,
            }),
        ),
    };
    answered_with(
        send,
        status,
        Vec::new(),
        retry_after_ms,
        rate,
        error_code,
        typed,
        body,
        usage,
    )
}

/// What the core's header parser (`stampede_core::rate_headers::rate_hint`) reads from the
/// headers these figures are written as: OpenAI's request and token figures; where the
/// request ones are absent, the first IETF item (whatever it counts) fills them, since the
/// parser takes the IETF headers' first item as the request figures. `None` when nothing is
/// said.
#[inline]
pub fn rate_hint_of(figures: &RateFigures) -> Option<RateHint> {
    let mut hint = RateHint::default();
    // Whether a figure was set: the hint is then not the default one (every figure set is
    // `Some`), which comparing all six figures with the default's found at every answer.
    let mut said = false;
    if let Some(r) = figures.requests() {
        hint.limit_requests = Some(r.limit);
        hint.remaining_requests = Some(r.remaining);
        hint.reset_requests_ms = Some(r.reset_ms);
        said = true;
    } else if let Some(w) = figures.windows().into_iter().flatten().next() {
        hint.limit_requests = Some(w.quota);
        hint.remaining_requests = Some(w.remaining);
        hint.reset_requests_ms = Some(w.reset_s.saturating_mul(1_000));
        said = true;
    }
    if let Some(t) = figures.tokens() {
        hint.limit_tokens = Some(t.limit);
        hint.remaining_tokens = Some(t.remaining);
        hint.reset_tokens_ms = Some(t.reset_ms);
        said = true;
    }
    debug_assert_eq!(said, hint != RateHint::default());
    said.then_some(hint)
}

/// [`rate_hint_of`] the `figures` (none: no hint) written over `place`, the hint an earlier
/// answer left there, figure by figure where it lies: the same hint (held to it by a
/// property test), with none built elsewhere and copied in (six optional figures, 100
/// bytes), and no call at every answer of a storm.
#[inline(always)]
pub fn rate_hint_into(place: &mut Option<RateHint>, figures: Option<&RateFigures>) {
    let Some(figures) = figures else {
        *place = None;
        return;
    };
    let hint = place.get_or_insert_with(RateHint::default);
    // Every field is written below over the last answer's: a field added to `RateHint`
    // must be written here too, and this pattern (no `..`) stops compiling until it is.
    let RateHint {
        remaining_requests: _,
        reset_requests_ms: _,
        remaining_tokens: _,
        reset_tokens_ms: _,
        limit_requests: _,
        limit_tokens: _,
    } = *hint;
    let mut said = true;
    if let Some(r) = figures.requests() {
        hint.limit_requests = Some(r.limit);
        hint.remaining_requests = Some(r.remaining);
        hint.reset_requests_ms = Some(r.reset_ms);
    } else if let Some(w) = figures.windows().into_iter().flatten().next() {
        hint.limit_requests = Some(w.quota);
        hint.remaining_requests = Some(w.remaining);
        hint.reset_requests_ms = Some(w.reset_s.saturating_mul(1_000));
    } else {
        hint.limit_requests = None;
        hint.remaining_requests = None;
        hint.reset_requests_ms = None;
        said = false;
    }
    if let Some(t) = figures.tokens() {
        hint.limit_tokens = Some(t.limit);
        hint.remaining_tokens = Some(t.remaining);
        hint.reset_tokens_ms = Some(t.reset_ms);
    } else {
        hint.limit_tokens = None;
        hint.remaining_tokens = None;
        hint.reset_tokens_ms = None;
        if !said {
            *place = None;
        }
    }
}

/// The outcome of an answer; `typed` holds the operation id and the look-up result the
/// model gave typed, read instead of the body where given.
#[allow(clippy::too_many_arguments)]
fn answered_with(
    send: &SendAttempt,
    status: u16,
    headers: Vec<(String, String)>,
    retry_after_ms: Option<Millis>,
    rate: Option<RateHint>,
    error_code: Option<Cow<'static, str>>,
    (typed_id, typed_lookup): (Option<OperationId>, Option<LookupResult>),
    body: &serde_json::Value,
    usage: Option<(u32, u32)>,
) -> Outcome {
    let lookup = matches!(send.kind, SendKind::Lookup(_));
    if lookup && (status == 200 || status == 404) {
        return Outcome::Lookup(match typed_lookup {
            Some(found) if status == 200 => found,
            _ => lookup_result(status, body),
        });
    }
    Outcome::Response(Response {
        status,
        headers,
        retry_after_ms,
        rate,
        error_code,
        usage: usage_of(usage),
        operation_id: operation_id_of(status, || typed_id, body),
    })
}

/// A completion's operation id, its text `CompletionId`'s display, written without `fmt`
/// (once per success).
#[inline]
fn completion_op(id: CompletionId) -> OperationId {
    OperationId::numbered(CompletionId::PREFIX, id.seq())
}

/// The operation id a success names: the one the model gave typed (`typed`, asked only for
/// a success), else the body's `id`; none for any other status.
#[inline]
fn operation_id_of(
    status: u16,
    typed: impl FnOnce() -> Option<OperationId>,
    body: &serde_json::Value,
) -> Option<OperationId> {
    if !(200..300).contains(&status) {
        return None;
    }
    typed().or_else(|| {
        body.get("id")
            .and_then(|v| v.as_str())
            .map(OperationId::from)
    })
}

/// The token counts an answer reported, as the core's `Usage`.
#[inline]
fn usage_of(usage: Option<(u32, u32)>) -> Option<Usage> {
    usage.map(|(prompt_tokens, completion_tokens)| Usage {
        prompt_tokens,
        completion_tokens,
    })
}

/// A look-up's answer: a record (by id) or a list of records (by key or reference).
fn lookup_result(status: u16, body: &serde_json::Value) -> LookupResult {
    if status == 404 {
        return LookupResult::Absent;
    }
    let first = match body.get("data") {
        Some(serde_json::Value::Array(items)) => items.first(),
        _ => Some(body),
    };
    match first {
        Some(record) => LookupResult::Found {
            operation_id: record
                .get("id")
                .and_then(|v| v.as_str())
                .map(OperationId::from),
        },
        None => LookupResult::Absent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stampede_core::rate_headers::rate_hint;
    use stampede_core::retry_after::retry_after_delay;
    use stampede_core::IdempotencyKey;
    use stampede_provider::config::{
        CredentialConfig, DurationMs, FaultRule, RetryAfterFormat, ScopeLimits,
    };
    use stampede_provider::{ProviderConfig, ProviderModel};

    /// A request slot holds the name's own allocation (what lets the next attempt with the
    /// same name skip touching it), takes it in place of the same text held elsewhere, and
    /// takes the new name when it changes. That a kept name costs no atomic is perf's to
    /// show, not a test's: a replaced and a kept slot end with the same count.
    #[test]
    fn keep_name_holds_the_names_own_allocation() {
        let (acme, beta) = (Name::new("tenant-keep-a"), Name::new("tenant-keep-b"));
        let mut slot: Option<Arc<str>> = None;
        keep_name(&mut slot, Some(acme));
        let first = slot.clone().expect("set");
        assert!(acme.is(&first));
        keep_name(&mut slot, Some(acme));
        assert!(Arc::ptr_eq(slot.as_ref().unwrap(), &first));
        // The same text elsewhere is replaced by the name's own allocation.
        slot = Some(Arc::from("tenant-keep-a"));
        keep_name(&mut slot, Some(acme));
        assert!(acme.is(slot.as_ref().unwrap()));
        keep_name(&mut slot, Some(beta));
        assert_eq!(slot.as_deref(), Some("tenant-keep-b"));
        assert!(beta.is(slot.as_ref().unwrap()));
        keep_name(&mut slot, None);
        assert_eq!(slot, None);
    }

    /// The numbers the model hands the core are exactly what the core read from the headers
    /// the HTTP edge writes for the same answer: every mix of limits, every Retry-After form,
    /// fault statuses with and without `x-should-retry`.
    #[test]
    fn typed_signals_say_what_the_rendered_headers_say() {
        let mut answers = 0;
        for mask in 0u8..16 {
            for format in [
                RetryAfterFormat::Seconds,
                RetryAfterFormat::HttpDate,
                RetryAfterFormat::Both,
            ] {
                let limit = |bit: u8, q: u64| (mask & bit != 0).then_some(q);
                let scope = ScopeLimits {
                    id: "org".into(),
                    rpm: limit(1, 3),
                    tpm: limit(2, 1_000),
                    rpd: limit(4, 5),
                    tpd: limit(8, 3_000),
                    concurrency: None,
                    count_rejected: false,
                    model: None,
                };
                let config = ProviderConfig {
                    credentials: vec![CredentialConfig {
                        key: "sk-org-key1".into(),
                        scope: "org".into(),
                        scopes: Vec::new(),
                    }],
                    scopes: vec![scope],
                    faults: vec![
                        FaultRule {
                            status: Some(503),
                            nth: Some(2),
                            should_retry: Some(false),
                            retry_after: Some(DurationMs(1_500)),
                            ..FaultRule::default()
                        },
                        FaultRule {
                            status: Some(500),
                            nth: Some(4),
                            should_retry: Some(true),
                            ..FaultRule::default()
                        },
                    ],
                    retry_after_format: format,
                    ..ProviderConfig::default()
                };
                let mut model = ProviderModel::new(config, 7, 1_767_225_600_000).unwrap();
                for i in 0..12u64 {
                    let mut req = Request {
                        route: RequestRoute::ChatCompletions,
                        credential: Some(if i == 5 { "sk-unknown" } else { "sk-org-key1" }.into()),
                        prompt_tokens: 300,
                        max_tokens: 100,
                        body_hash: i,
                        ..Request::default()
                    };
                    if i == 9 {
                        req.route = RequestRoute::CreateRecord;
                    }
                    let now = i * 7_321;
                    let decision = model.arrive(&req, now);
                    let Some(signals) = decision.answer.signals() else {
                        continue;
                    };
                    answers += 1;
                    let headers = signals.headers();
                    let typed = signals.rate.as_ref().and_then(rate_hint_of);
                    assert_eq!(typed, rate_hint(&headers), "mask {mask} {format:?} #{i}");
                    // `retry-after-ms` always comes with `retry-after`, so the clock the
                    // core would read an HTTP-date against does not matter.
                    for wall in [0, 1_767_225_600_000 + now, u64::MAX / 2] {
                        assert_eq!(
                            signals.retry_after.map(|r| r.delay_ms),
                            retry_after_delay(&headers, wall, 1_000).map(|r| r.delay_ms),
                            "mask {mask} {format:?} #{i}"
                        );
                    }
                    let should_retry = headers
                        .iter()
                        .find(|(n, _)| n == "x-should-retry")
                        .map(|(_, v)| v == "true");
                    assert_eq!(signals.should_retry, should_retry);
                }
            }
        }
        assert!(answers > 16 * 3 * 8, "{answers}");
    }

    proptest::proptest! {
        /// A rate hint written over the one an earlier answer left ([`rate_hint_into`]) is
        /// the hint [`rate_hint_of`] builds: every mix of OpenAI and IETF figures, or none,
        /// over no hint, a full one or a partial one.
        #[test]
        fn a_rate_hint_written_in_place_is_the_one_built(
            quotas in proptest::array::uniform4(proptest::option::of(0u64..100)),
            used in proptest::array::uniform4(0u64..120),
            reset_ms in proptest::array::uniform2(0u64..90_000),
            window_s in proptest::array::uniform2(1u64..90_000),
            said in proptest::bool::ANY,
            before in 0u8..3,
            figures in proptest::array::uniform6(proptest::option::of(0u64..1_000)),
        ) {
            let figures_given = RateFigures { quotas, used, reset_ms, window_s };
            let mut place = match before {
                0 => None,
                _ => Some(RateHint {
                    remaining_requests: figures[0],
                    reset_requests_ms: figures[1],
                    remaining_tokens: figures[2],
                    reset_tokens_ms: figures[3],
                    limit_requests: figures[4],
                    limit_tokens: if before == 1 { Some(7) } else { figures[5] },
                }),
            };
            let given = said.then_some(&figures_given);
            rate_hint_into(&mut place, given);
            proptest::prop_assert_eq!(place, given.and_then(rate_hint_of));
        }

        /// An outcome written over the one a slot held last ([`hear_into`]) is the outcome
        /// [`heard`] builds: storms of completions, writes and look-ups on a tight scope with
        /// faults, answers slower than a short timeout, lean and whole bodies, each written
        /// over the outcome before it.
        #[test]
        fn an_outcome_heard_in_place_is_the_one_heard(
            seed in 0u64..1_000,
            lean in proptest::bool::ANY,
            steps in proptest::collection::vec((0u8..5, 0u64..3, 0u64..900), 1..60),
        ) {
            let config = ProviderConfig {
                credentials: vec![CredentialConfig {
                    key: "sk-org-key1".into(),
                    scope: "org".into(),
                    scopes: Vec::new(),
                }],
                scopes: vec![ScopeLimits {
                    id: "org".into(),
                    rpm: Some(6),
                    tpm: Some(5_000),
                    rpd: None,
                    tpd: None,
                    concurrency: Some(2),
                    count_rejected: true,
                    model: None,
                }],
                faults: vec![FaultRule {
                    status: Some(503),
                    nth: Some(3),
                    retry_after: Some(DurationMs(1_500)),
                    ..FaultRule::default()
                }],
                ..ProviderConfig::default()
            };
            let mut model = ProviderModel::new(config, seed, 1_767_225_600_000).unwrap();
            model.set_lean_bodies(lean);
            let key: IdempotencyKey = "key-1".into();
            let mut place = Outcome::Transport(TransportFailure::ReadTimeout);
            let mut now = 0;
            for (i, (what, timeout, gap)) in steps.into_iter().enumerate() {
                now += gap;
                let (route, kind, request_route) = match what {
                    0 | 1 => (Route::ChatCompletion, SendKind::Action, RequestRoute::ChatCompletions),
                    2 => (Route::CreateRecord, SendKind::Action, RequestRoute::CreateRecord),
                    3 => (
                        Route::CreateRecord,
                        SendKind::Lookup(Box::new(LookupBy::IdempotencyKey(key.clone()))),
                        RequestRoute::FindRecords { by: FindBy::IdempotencyKey(key.clone()) },
                    ),
                    _ => (
                        Route::GetItem,
                        SendKind::Action,
                        RequestRoute::GetItem { id: "item-1".into() },
                    ),
                };
                let req = Request {
                    route: request_route,
                    credential: Some("sk-org-key1".into()),
                    idempotency_key: (what == 2).then(|| key.clone()),
                    prompt_tokens: if what < 2 { 300 } else { 0 },
                    max_tokens: if what < 2 { 100 } else { 0 },
                    body_hash: i as u64,
                    ..Request::default()
                };
                let send = SendAttempt {
                    attempt: i as u64 + 1,
                    kind,
                    timeout_ms: [600_000, 3_000, 10][timeout as usize],
                    ..org_send(route)
                };
                let decision = model.arrive(&req, now);
                if i % 3 == 0 {
                    model.depart(decision.seq, now + decision.latency_ms);
                }
                let heard = heard(&send, &decision);
                hear_into(&mut place, &send, &decision);
                proptest::prop_assert_eq!(&place, &heard, "#{}", i);
                proptest::prop_assert_eq!(outcome(&send, &decision), (heard_after(&send, &decision), heard));
            }
        }
    }

    /// One credential, `sk-org-key1`, on one scope, `org`, with no limits.
    fn unlimited_org() -> ProviderConfig {
        ProviderConfig {
            credentials: vec![CredentialConfig {
                key: "sk-org-key1".into(),
                scope: "org".into(),
                scopes: Vec::new(),
            }],
            scopes: vec![ScopeLimits::unlimited("org")],
            ..ProviderConfig::default()
        }
    }

    /// Attempt 1, the first of action 1, on `route` with `sk-org-key1`, with nothing else.
    fn org_send(route: Route) -> SendAttempt {
        SendAttempt {
            attempt: 1,
            job: 1,
            attempt_no: 1,
            kind: SendKind::Action,
            credential: "sk-org-key1".into(),
            scope: "org".into(),
            route,
            idempotency_key: None,
            reserved_tokens: 0,
            timeout_ms: 600_000,
            model: None,
            fallback: None,
            degraded: None,
            trimmed: None,
        }
    }

    /// A record answer's typed ids tell the core what its body would: two models, one with
    /// lean bodies (the simulator's) and one with whole bodies (the HTTP server's), answer
    /// the same writes and look-ups; the core hears the same outcome from both, and the
    /// lean one builds no body.
    #[test]
    fn lean_record_answers_say_what_their_bodies_say() {
        let config = unlimited_org();
        let mut lean = ProviderModel::new(config.clone(), 7, 1_767_225_600_000).unwrap();
        lean.set_lean_bodies(true);
        let mut whole = ProviderModel::new(config, 7, 1_767_225_600_000).unwrap();
        let key: IdempotencyKey = "key-1".into();
        let write = |key: Option<&IdempotencyKey>, external_ref: Option<&str>, body_hash| Request {
            route: RequestRoute::CreateRecord,
            idempotency_key: key.cloned(),
            external_ref: external_ref.map(str::to_owned),
            body_hash,
            ..Request::default()
        };
        let find = |by| Request {
            route: RequestRoute::FindRecords { by },
            ..Request::default()
        };
        let get = |id: &str| Request {
            route: RequestRoute::GetRecord { id: id.into() },
            ..Request::default()
        };
        let action = SendKind::Action;
        let lookup = SendKind::Lookup(Box::new(LookupBy::IdempotencyKey(key.clone())));
        let cases = [
            (write(Some(&key), None, 1), &action, true),
            (write(Some(&key), None, 1), &action, true), // replayed
            (write(None, Some("order-9"), 2), &action, true),
            (get("rec_000002"), &lookup, true),
            (get("rec_000009"), &lookup, false), // 404
            (find(FindBy::IdempotencyKey(key.clone())), &lookup, true),
            (find(FindBy::IdempotencyKey("key-2".into())), &lookup, true), // empty list
            (find(FindBy::ExternalRef("order-9".into())), &lookup, true),
            (find(FindBy::ExternalRef("order-0".into())), &lookup, true), // empty list
        ];
        let mut found = 0;
        for (i, (mut req, kind, records)) in cases.into_iter().enumerate() {
            req.credential = Some("sk-org-key1".into());
            let send = SendAttempt {
                attempt: i as u64 + 1,
                kind: kind.clone(),
                ..org_send(Route::CreateRecord)
            };
            let now = i as u64 * 1_000;
            let (thin, full) = (lean.arrive(&req, now), whole.arrive(&req, now));
            // Answered before the next arrives (a key in flight would refuse its replay).
            lean.depart(thin.seq, now + thin.latency_ms);
            whole.depart(full.seq, now + full.latency_ms);
            let heard = outcome(&send, &thin);
            assert_eq!(heard, outcome(&send, &full), "#{i}");
            let Answer::Respond {
                body,
                records: given,
                ..
            } = &thin.answer
            else {
                panic!("#{i}: {:?}", thin.answer)
            };
            assert_eq!(given.is_some(), records, "#{i}: {given:?}");
            if records {
                assert_eq!(body, &serde_json::Value::Null, "#{i}: no body built");
            }
            found += u32::from(matches!(
                heard.1,
                Outcome::Lookup(LookupResult::Found { .. })
            ));
        }
        assert_eq!(
            found, 3,
            "a look-up by id, by key and by reference found its record"
        );
    }

    /// A completion's typed id, which a virtual run keeps as the action's operation id, is
    /// the text the body's `id` says over HTTP (`chatcmpl-<seq>`), for seqs of every width.
    #[test]
    fn completion_ids_say_what_their_bodies_say() {
        let config = unlimited_org();
        let mut whole = ProviderModel::new(config, 7, 1_767_225_600_000).unwrap();
        let send = org_send(Route::ChatCompletion);
        let mut checked = 0;
        for i in 0..120u64 {
            let req = Request {
                route: RequestRoute::ChatCompletions,
                credential: Some("sk-org-key1".into()),
                prompt_tokens: 10,
                max_tokens: 10,
                body_hash: i,
                ..Request::default()
            };
            let now = i * 1_000;
            let decision = whole.arrive(&req, now);
            whole.depart(decision.seq, now + decision.latency_ms);
            let Answer::Respond { body, .. } = &decision.answer else {
                panic!("#{i}: {:?}", decision.answer)
            };
            let (_, Outcome::Response(heard)) = outcome(&send, &decision) else {
                panic!("#{i}: not an HTTP answer")
            };
            let said = body["id"].as_str().expect("a completion's body has an id");
            assert_eq!(heard.operation_id.as_deref(), Some(said), "#{i}");
            checked += 1;
        }
        assert_eq!(checked, 120, "seqs 1 to 120: one, two and three digits");
    }

    /// Only the text a record id displays as is read as one.
    #[test]
    fn record_ids_read_back_what_they_display() {
        for n in [1, 42, 999_999, 1_000_000, 123_456_789] {
            let id = RecordId::of(&format!("rec_{n:06}")).expect("displayed form");
            assert_eq!(id.to_string(), format!("rec_{n:06}"));
        }
        for text in [
            "rec_1",
            "rec_000000",
            "rec_0000001",
            "rec_+00001",
            "rec_00001a",
            "x_000001",
        ] {
            assert_eq!(RecordId::of(text), None, "{text}");
        }
    }
}
