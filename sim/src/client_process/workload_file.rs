//! The scenario's workload as a JSON-lines file a client under test replays: one logical
//! request a line, in arrival order.
//!
//! ```json
//! {"id":1,"at_ms":0,"tenant":"acme","credential":"sk-acme","class":"llm","method":"POST",
//!  "path":"/v1/chat/completions","model":"stampede-fake","max_tokens":300,
//!  "messages":[{"role":"user","content":"request 1: aaaa"}],"prompt_tokens":212,
//!  "deadline_ms":300000,"body":{...}}
//! ```
//!
//! `at_ms` and `deadline_ms` are scenario ms since the run's start (divide by
//! `STAMPEDE_TIME_SCALE` for real ms); `body` is the request as an OpenAI-compatible client
//! would send it; `messages`, `model` and `max_tokens` are there for clients of another API
//! (Anthropic Messages takes the same three). Every body is distinct, so the provider tells
//! the requests apart by fingerprint even when the client sends no Idempotency-Key.
//! `credential_index` is the credential's place in `STAMPEDE_CREDENTIALS` (from 0).
//!
//! The client reads its lines, keys whole, from a private file outside the run directory,
//! removed when the run ends; the run directory keeps the same lines with each key masked
//! (`sk-...abcd`), as every file a run writes shows keys: a run directory is a CI artifact.

use std::io::Write;

use serde_json::{json, Value};
use stampede_core::Route;
use stampede_provider::model::{Request, RequestRoute};

use crate::scenario::Scenario;
use crate::workload::Arrivals;

/// One line of the workload file. `default_model` is the model a call that names none
/// asks for: the provider's first listed model (the one a virtual run serves it), else
/// any name.
pub fn line(id: u64, at_ms: u64, job: &stampede_core::Job, default_model: &str) -> Value {
    let route = match job.route {
        Route::ChatCompletion => RequestRoute::ChatCompletions,
        Route::CreateRecord => RequestRoute::CreateRecord,
        Route::GetItem => RequestRoute::GetItem {
            id: job.resource.clone().unwrap_or_default(),
        },
    };
    let (method, path) = match &route {
        RequestRoute::ChatCompletions => ("POST", "/v1/chat/completions".to_string()),
        RequestRoute::CreateRecord => ("POST", "/v1/records".to_string()),
        RequestRoute::GetItem { id } => ("GET", format!("/v1/items/{id}")),
        _ => ("GET", String::new()),
    };
    let request = Request {
        route,
        body_hash: job.payload_hash,
        external_ref: job.external_ref.clone(),
        prompt_tokens: job.prompt_tokens,
        max_tokens: job.max_output_tokens,
        stream: job.stream,
        model: Some(
            job.model
                .map_or_else(|| default_model.into(), stampede_core::Name::shared),
        ),
        ..Request::default()
    };
    let mut body = crate::live_driver::request::json_body(&request);
    // A marker in the prompt keeps bodies distinct for clients that rebuild them (an
    // Anthropic client sends no `user` field).
    let content = format!(
        "request {id}: {}",
        "a".repeat(4 * job.prompt_tokens.saturating_sub(8) as usize)
    );
    let messages = json!([{ "role": "user", "content": content }]);
    if let Some(Value::Object(b)) = &mut body {
        if b.contains_key("messages") {
            b.insert("messages".into(), messages.clone());
        }
    }
    let mut v = json!({
        "id": id,
        "at_ms": at_ms,
        "tenant": job.tenant,
        "credential": job.credential,
        "class": job.class,
        "method": method,
        "path": path,
        "stream": job.stream,
    });
    if let Value::Object(o) = &mut v {
        if job.route == Route::ChatCompletion {
            o.insert(
                "model".into(),
                json!(crate::live_driver::request::model_of(&request)),
            );
            o.insert("max_tokens".into(), json!(job.max_output_tokens));
            o.insert("prompt_tokens".into(), json!(job.prompt_tokens));
            o.insert("messages".into(), messages);
        }
        if let Some(d) = job.deadline {
            o.insert("deadline_ms".into(), json!(d));
        }
        if let Some(r) = &job.external_ref {
            o.insert("external_ref".into(), json!(r));
        }
        if let Some(b) = body {
            o.insert("body".into(), b);
        }
    }
    v
}

/// `line` as the run directory keeps it: the credential masked.
fn masked(mut line: Value) -> Value {
    if let Some(Value::String(key)) = line.get_mut("credential") {
        *key = stampede_secret::mask(key);
    }
    line
}

/// Writes the workload split across `outs`, one per replica: each line goes to the replica
/// its task runs in (`virtual_driver::fleet::replica_of`), as the simulator spreads it. With
/// `kept` (one per replica too, or none), each line goes there as well with its key masked:
/// the run directory's copy. Returns the arrivals written, in file order (each line's `id`
/// is its job's id).
pub fn write_split<W: Write>(
    scenario: &Scenario,
    outs: &mut [W],
    kept: &mut [W],
) -> std::io::Result<Vec<crate::workload::Arrival>> {
    assert!(!outs.is_empty(), "at least one replica");
    assert!(
        kept.is_empty() || kept.len() == outs.len(),
        "a kept copy per replica"
    );
    let default_model = scenario
        .provider
        .default_model()
        .unwrap_or(crate::live_driver::request::UNNAMED_MODEL);
    let mut written = Vec::new();
    for arrival in Arrivals::new(scenario) {
        if arrival.at > scenario.duration_ms {
            break;
        }
        let r = crate::virtual_driver::fleet::replica_of(&arrival.job, outs.len());
        let mut v = line(arrival.job.id, arrival.at, &arrival.job, default_model);
        let index = scenario
            .provider
            .credentials
            .iter()
            .position(|c| c.key.as_str() == arrival.job.credential.as_str());
        if let (Some(i), Value::Object(o)) = (index, &mut v) {
            o.insert("credential_index".into(), json!(i));
        }
        serde_json::to_writer(&mut outs[r], &v)?;
        outs[r].write_all(b"\n")?;
        if let Some(out) = kept.get_mut(r) {
            serde_json::to_writer(&mut *out, &masked(v))?;
            out.write_all(b"\n")?;
        }
        written.push(arrival);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_line(text: &str) -> Value {
        let scenario = crate::scenario::parse(text, "t.toml", &[]).expect("scenario parses");
        let mut out = vec![Vec::new()];
        write_split(&scenario, &mut out, &mut []).unwrap();
        let first = String::from_utf8(out.remove(0)).unwrap();
        serde_json::from_str(first.lines().next().unwrap()).unwrap()
    }

    const SCENARIO: &str = r#"
name = "w"
duration = "1m"
[provider]
[[provider.scopes]]
id = "a"
[[provider.credentials]]
key = "sk-a-workload"
scope = "a"
[[workload]]
tenant = "t"
credential = "sk-a-workload"
class = "llm"
count = 1
"#;

    /// A call that names no model asks for the provider's first listed one, which a
    /// virtual run serves it (every line said `stampede-fake`, which such a provider
    /// refuses 404); with none listed, any name does.
    #[test]
    fn a_line_asks_for_the_model_the_provider_serves() {
        let unlisted = first_line(SCENARIO);
        assert_eq!(unlisted["model"], "stampede-fake");
        assert_eq!(unlisted["body"]["model"], "stampede-fake");
        let listed = SCENARIO.replace(
            "[[provider.scopes]]",
            "[[provider.models]]\nname = \"chat\"\n[[provider.models]]\nname = \"big\"\n[[provider.scopes]]",
        );
        let line = first_line(&listed);
        assert_eq!(line["model"], "chat");
        assert_eq!(line["body"]["model"], "chat");
    }
}
