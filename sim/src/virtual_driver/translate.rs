//! Between the core's words and the provider model's: a `Send` becomes a provider `Request`,
//! and the model's `Decision` becomes the `Outcome` the core hears, at the time it hears it.

use stampede_core::{
    Job, LookupBy, LookupResult, Millis, Outcome, Response, Route, Send, SendKind,
    TransportFailure, Usage,
};
use stampede_provider::model::{Answer, Decision, FindBy, Request, RequestRoute};

/// What the driver knows about a live action beyond what a `Send` carries.
#[derive(Debug, Clone)]
pub struct ActionFacts {
    pub tenant: String,
    pub class: String,
    pub resource: Option<String>,
    pub prompt_tokens: u32,
    pub max_output_tokens: u32,
    pub external_ref: Option<String>,
    pub stream: bool,
    pub payload_hash: u64,
}

impl ActionFacts {
    /// The facts of `job`, taken when it is admitted (or restored from a ledger).
    pub fn of(job: &Job) -> Self {
        Self {
            tenant: job.tenant.clone(),
            class: job.class.clone(),
            resource: job.resource.clone(),
            prompt_tokens: job.prompt_tokens,
            max_output_tokens: job.max_output_tokens,
            external_ref: job.external_ref.clone(),
            stream: job.stream,
            payload_hash: job.payload_hash,
        }
    }
}

/// The provider request for one attempt, with `x-stampede-*` attribution.
pub fn request(send: &Send, facts: &ActionFacts) -> Request {
    let route = match &send.kind {
        SendKind::Action => match send.route {
            Route::ChatCompletion => RequestRoute::ChatCompletions,
            Route::CreateRecord => RequestRoute::CreateRecord,
            Route::GetItem => RequestRoute::GetItem {
                id: facts.resource.clone().unwrap_or_default(),
            },
        },
        SendKind::Lookup(LookupBy::IdempotencyKey(k)) => RequestRoute::FindRecords {
            by: FindBy::IdempotencyKey(k.clone()),
        },
        SendKind::Lookup(LookupBy::ExternalRef(r)) => RequestRoute::FindRecords {
            by: FindBy::ExternalRef(r.clone()),
        },
        SendKind::Lookup(LookupBy::OperationId(id)) => RequestRoute::GetRecord { id: id.clone() },
    };
    let action = matches!(send.kind, SendKind::Action);
    let chat = action && send.route == Route::ChatCompletion;
    Request {
        route,
        credential: Some(send.credential.clone()),
        idempotency_key: if action {
            send.idempotency_key.clone()
        } else {
            None
        },
        body_hash: if action { facts.payload_hash } else { 0 },
        external_ref: if action {
            facts.external_ref.clone()
        } else {
            None
        },
        prompt_tokens: if chat { facts.prompt_tokens } else { 0 },
        max_tokens: if chat { facts.max_output_tokens } else { 0 },
        stream: chat && facts.stream,
        // Our client asks for the usage chunk of a stream (it reconciles reservations).
        stream_usage: chat && facts.stream,
        class: Some(facts.class.clone()),
        tenant: Some(facts.tenant.clone()),
        action: Some(send.job),
        attempt_no: Some(send.attempt_no),
        sdk_retry_count: None,
    }
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

/// When (ms after arrival) the client hears about the attempt, and what it hears.
pub fn outcome(send: &Send, decision: Decision) -> (Millis, Outcome) {
    let latency = decision.latency_ms;
    match decision.answer {
        Answer::Respond {
            status,
            headers,
            body,
            usage,
            ..
        } => (latency, answered(send, status, headers, &body, usage)),
        Answer::Drop { committed: false } => (
            latency,
            Outcome::Transport(TransportFailure::ResetBeforeWrite),
        ),
        Answer::Drop { committed: true } => (
            latency,
            Outcome::Transport(TransportFailure::ResetAfterWrite),
        ),
        // Nothing comes back: the client gives up at its own timeout.
        Answer::Hang { .. } => (
            send.timeout_ms,
            Outcome::Transport(TransportFailure::ReadTimeout),
        ),
        Answer::StreamCut { after_chunks, .. } | Answer::StreamError { after_chunks } => (
            latency,
            Outcome::Transport(TransportFailure::StreamCut {
                tokens_delivered: after_chunks,
            }),
        ),
    }
}

/// The outcome of an attempt the provider answered with `status`, its headers (names
/// lower-case) and JSON `body`; `usage` is (prompt, completion) tokens when reported. Shared
/// with the live driver, which gets the same three things over HTTP.
pub fn answered(
    send: &Send,
    status: u16,
    headers: Vec<(String, String)>,
    body: &serde_json::Value,
    usage: Option<(u32, u32)>,
) -> Outcome {
    let lookup = matches!(send.kind, SendKind::Lookup(_));
    if lookup && (status == 200 || status == 404) {
        return Outcome::Lookup(lookup_result(status, body));
    }
    let error_code = body
        .get("error")
        .and_then(|e| e.get("code"))
        .and_then(|c| c.as_str())
        .map(str::to_string);
    let operation_id = if (200..300).contains(&status) {
        body.get("id").and_then(|v| v.as_str()).map(str::to_string)
    } else {
        None
    };
    let usage = usage.map(|(prompt_tokens, completion_tokens)| Usage {
        prompt_tokens,
        completion_tokens,
    });
    Outcome::Response(Response {
        status,
        headers,
        error_code,
        usage,
        operation_id,
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
                .map(str::to_string),
        },
        None => LookupResult::Absent,
    }
}
