//! What Anthropic's API refuses of a Messages body (or of a token count's, which is the same
//! body without `max_tokens`), in its words: a 400 `invalid_request_error` whose message names
//! the field by a dotted path (`messages.0.role: Input should be 'user' or 'assistant'`), as
//! its pydantic-style validation does, or says in a sentence what is wrong with the
//! conversation (a `tool_result` with no `tool_use` before it).
//!
//! Shapes are checked first (every field), then what the fields say together (empty
//! messages, tool pairing, unique tool names, thinking against `max_tokens`, `temperature`
//! and `tool_choice`). Content block types the fake does not know are let through: beta
//! features send many, and a refusal production would not give breaks a working client.
//!
//! A `null` optional field (`temperature`, `top_p`, `top_k`, `stop_sequences`, `metadata`,
//! `tools`, `thinking`) is taken as absent: the SDK never sends one, and refusing what
//! production may take breaks a client, where letting it through only misses a check.
//! (Under API version 2026-10-21 the sampling fields are no fields at all, and refused
//! first, `null` too: see `anthropic_version`.)

use super::parse::shown;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// What Anthropic refuses of the Messages body `v`, in its words, or `Ok` when it would take
/// it; `max_tokens_required` for a Messages request (a token count has no `max_tokens`).
/// `interleaved_thinking`: the request's `anthropic-beta` asks for interleaved thinking,
/// under which a thinking budget may pass `max_tokens` (it spans the whole turn of calls).
pub(super) fn check_messages_body(
    v: &Value,
    max_tokens_required: bool,
    interleaved_thinking: bool,
) -> Result<(), String> {
    let Value::Object(body) = v else {
        return Err("Input should be a valid dictionary or object to extract fields from".into());
    };
    match body.get("model") {
        None => return Err("model: Field required".into()),
        Some(Value::String(name)) if !name.is_empty() => {}
        Some(Value::String(_)) => {
            return Err("model: String should have at least 1 character".into())
        }
        Some(_) => return Err("model: Input should be a valid string".into()),
    }
    let max_tokens = match body.get("max_tokens") {
        None if !max_tokens_required => None,
        None => return Err("max_tokens: Field required".into()),
        Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n >= 1) => n.as_u64(),
        Some(Value::Number(n)) if n.as_i64().is_some_and(|n| n < 1) => {
            return Err("max_tokens: Input should be greater than or equal to 1".into())
        }
        Some(_) => return Err("max_tokens: Input should be a valid integer".into()),
    };
    let temperature = unit_interval(body, "temperature")?;
    unit_interval(body, "top_p")?;
    if let Some(k) = present(body, "top_k") {
        match integer(k) {
            Some(k) if k >= 0 => {}
            Some(_) => return Err("top_k: Input should be greater than or equal to 0".into()),
            None => return Err("top_k: Input should be a valid integer".into()),
        }
    }
    stop_sequences(body)?;
    metadata(body)?;
    if let Some(system) = body.get("system") {
        blocks("system", system, "text blocks")?;
    }
    let messages = match body.get("messages") {
        Some(Value::Array(messages)) => messages.as_slice(),
        // Its absence or shape is told by the body's deserialization after this.
        _ => &[],
    };
    for (i, m) in messages.iter().enumerate() {
        match m.get("role") {
            Some(Value::String(role)) if role == "user" || role == "assistant" => {}
            None => return Err(format!("messages.{i}.role: Field required")),
            Some(_) => {
                return Err(format!(
                    "messages.{i}.role: Input should be 'user' or 'assistant'"
                ))
            }
        }
        match m.get("content") {
            None => return Err(format!("messages.{i}.content: Field required")),
            Some(content) => blocks(&format!("messages.{i}.content"), content, "content blocks")?,
        }
    }
    let tool_names = tools(body)?;
    let thinking = thinking(body)?;

    for (i, m) in messages.iter().enumerate() {
        let empty = match m.get("content") {
            Some(Value::String(s)) => s.is_empty(),
            Some(Value::Array(items)) => items.is_empty(),
            _ => false,
        };
        // An empty final assistant message is a prefill the answer starts from.
        let final_assistant = i + 1 == messages.len() && role(m) == Some("assistant");
        if empty && !final_assistant {
            return Err(format!(
                "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
            ));
        }
    }
    tool_pairing(messages)?;
    unique_tool_use_ids(messages)?;
    if has_duplicate(&tool_names) {
        return Err("tools: Tool names must be unique.".into());
    }
    let breakpoints = cache_breakpoints(body, messages);
    if breakpoints > MAX_CACHE_BREAKPOINTS {
        return Err(format!(
            "A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        ));
    }
    if let Some(Thinking { budget_tokens, on }) = thinking {
        if let (Some(budget), Some(max), false) = (budget_tokens, max_tokens, interleaved_thinking)
        {
            if max <= budget {
                return Err("`max_tokens` must be greater than `thinking.budget_tokens`".into());
            }
        }
        if on && temperature.is_some_and(|t| t != 1.0) {
            return Err(
                "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode"
                    .into(),
            );
        }
        let forced = body
            .get("tool_choice")
            .and_then(|c| c.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|t| t == "any" || t == "tool");
        if on && forced {
            return Err("Thinking may not be enabled when tool_choice forces tool use.".into());
        }
        // The sampling the API leaves a thinking model (its documentation: no `top_k`,
        // `top_p` from 0.95); these two sentences are the fake's own.
        if on && present(body, "top_k").is_some() {
            return Err("`top_k` may not be set when thinking is enabled".into());
        }
        if on
            && present(body, "top_p")
                .and_then(Value::as_f64)
                .is_some_and(|p| p < MIN_THINKING_TOP_P)
        {
            return Err(format!(
                "`top_p` must be at least {MIN_THINKING_TOP_P} when thinking is enabled"
            ));
        }
        // In adaptive mode the model may answer without thinking, so a turn of calls sent
        // back without a thinking block may be just what it answered.
        if on && budget_tokens.is_some() {
            thought_before_tools(messages)?;
        }
    }
    Ok(())
}

/// Most blocks (system, message and tool entries) one request may mark with
/// `cache_control`.
pub const MAX_CACHE_BREAKPOINTS: usize = 4;

/// The blocks marked with `cache_control`: `system`'s, every message's (the blocks a
/// `tool_result` holds too) and the tools'.
fn cache_breakpoints(body: &Map<String, Value>, messages: &[Value]) -> usize {
    let marked = |b: &Value| usize::from(b.get("cache_control").is_some_and(|c| !c.is_null()));
    let listed = |v: Option<&Value>| -> usize {
        v.and_then(Value::as_array).map_or(0, |items| {
            items
                .iter()
                .map(|b| {
                    let held = b.get("content").and_then(Value::as_array);
                    marked(b) + held.map_or(0, |inner| inner.iter().map(marked).sum())
                })
                .sum()
        })
    };
    listed(body.get("system"))
        + listed(body.get("tools"))
        + messages
            .iter()
            .map(|m| listed(m.get("content")))
            .sum::<usize>()
}

/// Every `tool_use` id once in the conversation: a result answers one call. A set, as the
/// pairing's: a long agent's conversation holds many calls.
fn unique_tool_use_ids(messages: &[Value]) -> Result<(), String> {
    let mut seen = HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        for (j, block) in blocks_of(m, "tool_use") {
            if let Some(id) = block.get("id").and_then(Value::as_str) {
                if !seen.insert(id) {
                    return Err(format!(
                        "messages.{i}.content.{j}: `tool_use` ids must be unique"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// With thinking enabled (not adaptive, where the model may skip thinking: see the caller),
/// the last assistant turn that calls tools opens with the thinking that
/// led to the calls (`thinking` or `redacted_thinking`), which the client must send back:
/// the API's most met refusal of agents that drop the block between turns.
fn thought_before_tools(messages: &[Value]) -> Result<(), String> {
    let Some(last) = messages.iter().rposition(|m| role(m) == Some("assistant")) else {
        return Ok(());
    };
    // The turn: the run of assistant messages ending at `last` (the API joins them).
    let first = messages[..last]
        .iter()
        .rposition(|m| role(m) != Some("assistant"))
        .map_or(0, |user| user + 1);
    let turn = &messages[first..=last];
    if !turn
        .iter()
        .any(|m| blocks_of(m, "tool_use").next().is_some())
    {
        return Ok(());
    }
    let opening = match turn[0].get("content") {
        Some(Value::Array(items)) => items
            .first()
            .and_then(|b| b.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("text"),
        _ => "text",
    };
    if matches!(opening, "thinking" | "redacted_thinking") {
        return Ok(());
    }
    Err(format!(
        "messages.{first}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`.",
        shown(opening)
    ))
}

/// `body[key]` unless it is absent or `null` (taken as absent; see the module's doc).
fn present<'v>(body: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    body.get(key).filter(|v| !v.is_null())
}

/// An integer as pydantic reads one: a JSON integer, or a float with no fraction (`5.0`).
fn integer(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    })
}

/// `body[key]`, a number in [0, 1] (`temperature`, `top_p`), or its refusal.
fn unit_interval(body: &Map<String, Value>, key: &str) -> Result<Option<f64>, String> {
    let Some(v) = present(body, key) else {
        return Ok(None);
    };
    match v.as_f64() {
        Some(x) if x < 0.0 => Err(format!("{key}: Input should be greater than or equal to 0")),
        Some(x) if x > 1.0 => Err(format!("{key}: Input should be less than or equal to 1")),
        Some(x) => Ok(Some(x)),
        None => Err(format!("{key}: Input should be a valid number")),
    }
}

/// `stop_sequences`: a list of strings, none empty or whitespace only (the API's own
/// sentences for those two).
fn stop_sequences(body: &Map<String, Value>) -> Result<(), String> {
    let Some(v) = present(body, "stop_sequences") else {
        return Ok(());
    };
    let Value::Array(items) = v else {
        return Err("stop_sequences: Input should be a valid list".into());
    };
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::String(s) if s.is_empty() => {
                return Err("stop_sequences: each stop sequence must be non-empty".into())
            }
            Value::String(s) if s.trim().is_empty() => {
                return Err("stop_sequences: each stop sequence must contain non-whitespace".into())
            }
            Value::String(_) => {}
            _ => {
                return Err(format!(
                    "stop_sequences.{i}: Input should be a valid string"
                ))
            }
        }
    }
    Ok(())
}

/// `metadata`: an object whose one key, `user_id`, is a string or `null`.
fn metadata(body: &Map<String, Value>) -> Result<(), String> {
    let Some(v) = present(body, "metadata") else {
        return Ok(());
    };
    let Value::Object(fields) = v else {
        return Err("metadata: Input should be a valid dictionary".into());
    };
    for (key, value) in fields {
        if key != "user_id" {
            return Err(format!("metadata.{key}: Extra inputs are not permitted"));
        }
        if !(value.is_string() || value.is_null()) {
            return Err("metadata.user_id: Input should be a valid string".into());
        }
    }
    Ok(())
}

/// Content at `at` (a message's or `system`): text, or a list of blocks each with a `type`,
/// a `text` block holding its `text`; `what` names the list in the refusal.
fn blocks(at: &str, content: &Value, what: &str) -> Result<(), String> {
    let items = match content {
        Value::String(_) => return Ok(()),
        Value::Array(items) => items,
        _ => {
            return Err(format!(
                "{at}: Input should be a valid string or a list of {what}"
            ))
        }
    };
    for (i, item) in items.iter().enumerate() {
        match item.get("type").and_then(Value::as_str) {
            None => {
                return Err(format!(
                    "{at}.{i}: Input should be a content block, an object with a `type`"
                ))
            }
            Some("text") => match item.get("text") {
                Some(Value::String(_)) => {}
                None => return Err(format!("{at}.{i}.text: Field required")),
                Some(_) => return Err(format!("{at}.{i}.text: Input should be a valid string")),
            },
            // Any other type is let through: beta features send many the fake does not know.
            Some(_) => {}
        }
    }
    Ok(())
}

fn role(m: &Value) -> Option<&str> {
    m.get("role").and_then(Value::as_str)
}

/// The blocks of message `m` (none when its content is text), with their indices.
fn content_blocks(m: &Value) -> impl Iterator<Item = (usize, &Value)> {
    m.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// The blocks of `m` of type `kind`, with their indices.
fn blocks_of<'m>(m: &'m Value, kind: &'m str) -> impl Iterator<Item = (usize, &'m Value)> {
    content_blocks(m).filter(move |(_, b)| b.get("type").and_then(Value::as_str) == Some(kind))
}

/// Each `tool_use` of an assistant turn answered by a `tool_result` in the next turn, and
/// each `tool_result` answering a `tool_use` of the turn before. A turn is a run of
/// messages of one role: the API combines consecutive messages of a role into one turn, so
/// results split over two user messages answer one assistant turn. A `tool_use` in the
/// last turn (nothing after it) is the answer being asked for, and needs no result. Ids are
/// looked up in sets: a long agent's turn can hold many calls, and a body many turns.
fn tool_pairing(messages: &[Value]) -> Result<(), String> {
    // Turns as [start, end) ranges of message indices.
    let mut turns: Vec<(usize, usize)> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match turns.last_mut() {
            Some((start, end)) if role(&messages[*start]) == role(m) => *end = i + 1,
            _ => turns.push((i, i + 1)),
        }
    }
    let ids = |key: &'static str, kind: &'static str, i: usize| {
        let m = &messages[i];
        blocks_of(m, kind).map(move |(j, b)| (i, j, b.get(key).and_then(Value::as_str)))
    };
    for (t, &(start, end)) in turns.iter().enumerate() {
        let assistant = role(&messages[start]) == Some("assistant");
        if assistant {
            let next = turns.get(t + 1).map_or(0..0, |&(s, e)| s..e);
            if next.is_empty() {
                continue;
            }
            let answered: HashSet<&str> = next
                .flat_map(|k| ids("tool_use_id", "tool_result", k))
                .filter_map(|(_, _, id)| id)
                .collect();
            let mut unanswered: Vec<(usize, &str)> = Vec::new();
            for (i, j, id) in (start..end).flat_map(|i| ids("id", "tool_use", i)) {
                let Some(id) = id else {
                    return Err(id_refusal(&messages[i], i, j, "id"));
                };
                if !answered.contains(id) {
                    unanswered.push((i, id));
                }
            }
            if let Some(&(i, _)) = unanswered.first() {
                // Ids are echoed cut, as field names are: a client's megabyte-long id gets
                // its first part back.
                let list: Vec<&str> = unanswered.iter().map(|&(_, id)| shown(id)).collect();
                return Err(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    list.join(", ")
                ));
            }
        } else {
            let asked: HashSet<&str> = match t.checked_sub(1).map(|p| turns[p]) {
                Some((s, e)) => (s..e)
                    .flat_map(|k| ids("id", "tool_use", k))
                    .filter_map(|(_, _, id)| id)
                    .collect(),
                None => HashSet::new(),
            };
            for (i, j, id) in (start..end).flat_map(|i| ids("tool_use_id", "tool_result", i)) {
                let Some(id) = id else {
                    return Err(id_refusal(&messages[i], i, j, "tool_use_id"));
                };
                if !asked.contains(id) {
                    return Err(format!(
                        "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
                        shown(id)
                    ));
                }
            }
            // The answers open the turn: one result per call before any other block (a
            // client that puts its own text first, or a result after it, is refused).
            let calls = t.checked_sub(1).map_or(0, |p| {
                let (s, e) = turns[p];
                (s..e)
                    .map(|k| blocks_of(&messages[k], "tool_use").count())
                    .sum()
            });
            if calls > 0 && leading_results(&messages[start..end]) < calls {
                return Err(format!(
                    "messages.{start}: Did not find {calls} `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks."
                ));
            }
        }
    }
    Ok(())
}

/// How many `tool_result` blocks open a turn (`turn`: its messages, joined as the API joins
/// them), before its first block of another kind; text content is one text block.
fn leading_results(turn: &[Value]) -> usize {
    let mut results = 0;
    for m in turn {
        let Some(Value::Array(blocks)) = m.get("content") else {
            return results;
        };
        for b in blocks {
            if b.get("type").and_then(Value::as_str) != Some("tool_result") {
                return results;
            }
            results += 1;
        }
    }
    results
}

/// The refusal of block `j` of message `m` (at `i`), whose `key` is not a string.
fn id_refusal(m: &Value, i: usize, j: usize, key: &str) -> String {
    let found = m
        .pointer(&format!("/content/{j}/{key}"))
        .is_some_and(|v| !v.is_null());
    if found {
        format!("messages.{i}.content.{j}.{key}: Input should be a valid string")
    } else {
        format!("messages.{i}.content.{j}.{key}: Field required")
    }
}

/// `tools`: a list of tools; a custom one (no `type`, or `custom`) has a string `name` and
/// an object `input_schema`, the API's own (`web_search_20250305`, ...) need no schema.
/// Answers the names the tools have, for the check that they are unique.
fn tools(body: &Map<String, Value>) -> Result<Vec<&str>, String> {
    let Some(v) = present(body, "tools") else {
        return Ok(Vec::new());
    };
    let Value::Array(tools) = v else {
        return Err("tools: Input should be a valid list".into());
    };
    let mut names = Vec::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        let Value::Object(tool) = tool else {
            return Err(format!(
                "tools.{i}: Input should be a valid dictionary or object to extract fields from"
            ));
        };
        let custom = match present(tool, "type") {
            None => true,
            Some(Value::String(t)) => t == "custom",
            Some(_) => return Err(format!("tools.{i}.type: Input should be a valid string")),
        };
        if custom {
            match tool.get("name") {
                Some(Value::String(_)) => {}
                None => return Err(format!("tools.{i}.custom.name: Field required")),
                Some(_) => {
                    return Err(format!(
                        "tools.{i}.custom.name: Input should be a valid string"
                    ))
                }
            }
            match tool.get("input_schema") {
                Some(Value::Object(_)) => {}
                None => return Err(format!("tools.{i}.custom.input_schema: Field required")),
                Some(_) => {
                    return Err(format!(
                        "tools.{i}.custom.input_schema: Input should be a valid dictionary"
                    ))
                }
            }
        }
        if let Some(Value::String(name)) = tool.get("name") {
            names.push(name.as_str());
        }
    }
    Ok(names)
}

/// Whether a name occurs twice in `names`. A set, not a scan of pairs: a 32 MiB body can
/// hold hundreds of thousands of tools.
fn has_duplicate(names: &[&str]) -> bool {
    let mut seen = HashSet::with_capacity(names.len());
    !names.iter().all(|n| seen.insert(*n))
}

/// What `thinking` asks for, once its shape is checked.
struct Thinking {
    /// Tokens of thinking allowed (`enabled` only).
    budget_tokens: Option<u64>,
    /// Whether the model thinks (`enabled` or `adaptive`), which rules out a `temperature`
    /// other than 1 and a `tool_choice` that forces a tool. `between_tools` is held to
    /// neither: what the API asks of it is not known here, and a wrong refusal breaks a
    /// client.
    on: bool,
}

/// Whether a `thinking.type` of `kind` has the model think before it answers (`enabled`,
/// `adaptive`): its answer opens with a `thinking` block, and the checks that rule out a
/// `temperature` other than 1 and a forced tool hold.
pub(super) fn thinks(kind: &str) -> bool {
    matches!(kind, "enabled" | "adaptive")
}

/// The smallest `thinking.budget_tokens` the API takes, tokens.
pub const MIN_THINKING_BUDGET: i64 = 1_024;

/// The least `top_p` a thinking model takes.
pub const MIN_THINKING_TOP_P: f64 = 0.95;

/// `thinking`: an object whose `type` is one anthropic 2.14.0's `ThinkingConfigParam`
/// names (`between_tools` too, which the SDK sends); `enabled` needs a `budget_tokens` of at
/// least [`MIN_THINKING_BUDGET`].
fn thinking(body: &Map<String, Value>) -> Result<Option<Thinking>, String> {
    let Some(v) = present(body, "thinking") else {
        return Ok(None);
    };
    let Value::Object(config) = v else {
        return Err(
            "thinking: Input should be a valid dictionary or object to extract fields from".into(),
        );
    };
    let kind = match config.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        _ => return Err("thinking: Unable to extract tag using discriminator 'type'".into()),
    };
    match kind {
        "enabled" => {
            let budget = match config.get("budget_tokens") {
                None => return Err("thinking.enabled.budget_tokens: Field required".into()),
                Some(b) => integer(b).ok_or_else(|| {
                    "thinking.enabled.budget_tokens: Input should be a valid integer".to_string()
                })?,
            };
            if budget < MIN_THINKING_BUDGET {
                return Err(format!(
                    "thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_THINKING_BUDGET}"
                ));
            }
            Ok(Some(Thinking {
                budget_tokens: u64::try_from(budget).ok(),
                on: thinks(kind),
            }))
        }
        "adaptive" => Ok(Some(Thinking {
            budget_tokens: None,
            on: thinks(kind),
        })),
        "disabled" | "between_tools" => Ok(Some(Thinking {
            budget_tokens: None,
            on: false,
        })),
        other => Err(format!(
            "thinking: Input tag '{}' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'between_tools', 'adaptive'",
            shown(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A Messages body of `messages` with `extra` fields merged in.
    fn body(messages: Value, extra: Value) -> Value {
        let mut b = json!({ "model": "m", "max_tokens": 2048, "messages": messages });
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    }

    fn hi() -> Value {
        json!([{ "role": "user", "content": "hi" }])
    }

    fn refusal(b: &Value) -> String {
        check_messages_body(b, true, false).expect_err(&b.to_string())
    }

    #[test]
    fn sampling_numbers_are_held_to_their_ranges() {
        for (extra, says) in [
            (
                json!({"temperature": 1.5}),
                "temperature: Input should be less than or equal to 1",
            ),
            (
                json!({"temperature": -0.1}),
                "temperature: Input should be greater than or equal to 0",
            ),
            (
                json!({"temperature": "hot"}),
                "temperature: Input should be a valid number",
            ),
            (
                json!({"top_p": 2}),
                "top_p: Input should be less than or equal to 1",
            ),
            (
                json!({"top_p": true}),
                "top_p: Input should be a valid number",
            ),
            (
                json!({"top_k": 1.5}),
                "top_k: Input should be a valid integer",
            ),
            (
                json!({"top_k": "5"}),
                "top_k: Input should be a valid integer",
            ),
            (
                json!({"top_k": -1}),
                "top_k: Input should be greater than or equal to 0",
            ),
        ] {
            assert_eq!(refusal(&body(hi(), extra)), says);
        }
        let fine = json!({"temperature": 0, "top_p": 1.0, "top_k": 40});
        assert_eq!(check_messages_body(&body(hi(), fine), true, false), Ok(()));
        // pydantic reads an integral float as an integer.
        assert_eq!(
            check_messages_body(&body(hi(), json!({"top_k": 5.0})), true, false),
            Ok(())
        );
    }

    #[test]
    fn stop_sequences_are_a_list_of_real_strings() {
        for (extra, says) in [
            (
                json!({"stop_sequences": "END"}),
                "stop_sequences: Input should be a valid list",
            ),
            (
                json!({"stop_sequences": ["END", 5]}),
                "stop_sequences.1: Input should be a valid string",
            ),
            (
                json!({"stop_sequences": ["\n"]}),
                "stop_sequences: each stop sequence must contain non-whitespace",
            ),
            (
                json!({"stop_sequences": [""]}),
                "stop_sequences: each stop sequence must be non-empty",
            ),
        ] {
            assert_eq!(refusal(&body(hi(), extra)), says);
        }
        let fine = json!({"stop_sequences": ["\n\nHuman:", "END"]});
        assert_eq!(check_messages_body(&body(hi(), fine), true, false), Ok(()));
    }

    #[test]
    fn metadata_holds_a_user_id_and_nothing_else() {
        for (extra, says) in [
            (
                json!({"metadata": "u1"}),
                "metadata: Input should be a valid dictionary",
            ),
            (
                json!({"metadata": {"user_id": 7}}),
                "metadata.user_id: Input should be a valid string",
            ),
            (
                json!({"metadata": {"user_id": "u1", "foo": 1}}),
                "metadata.foo: Extra inputs are not permitted",
            ),
        ] {
            assert_eq!(refusal(&body(hi(), extra)), says);
        }
        for fine in [
            json!({"user_id": "u1"}),
            json!({"user_id": null}),
            json!({}),
        ] {
            let b = body(hi(), json!({ "metadata": fine }));
            assert_eq!(check_messages_body(&b, true, false), Ok(()));
        }
    }

    #[test]
    fn only_a_final_assistant_message_may_be_empty() {
        let empty_user = json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}, {"role": "user", "content": ""}]);
        assert_eq!(
            refusal(&body(empty_user, json!({}))),
            "messages.2: all messages must have non-empty content except for the optional final assistant message"
        );
        let empty_middle = json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": []}, {"role": "user", "content": "go"}]);
        assert_eq!(
            refusal(&body(empty_middle, json!({}))),
            "messages.1: all messages must have non-empty content except for the optional final assistant message"
        );
        for prefill in [json!(""), json!([])] {
            let m = json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": prefill}]);
            assert_eq!(
                check_messages_body(&body(m, json!({})), true, false),
                Ok(())
            );
        }
    }

    #[test]
    fn a_text_block_holds_its_text_and_other_blocks_pass() {
        let m =
            json!([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text"}]}]);
        assert_eq!(
            refusal(&body(m, json!({}))),
            "messages.0.content.1.text: Field required"
        );
        let m = json!([{"role": "user", "content": [{"type": "text", "text": 5}]}]);
        assert_eq!(
            refusal(&body(m, json!({}))),
            "messages.0.content.0.text: Input should be a valid string"
        );
        let system = json!({"system": [{"type": "text"}]});
        assert_eq!(
            refusal(&body(hi(), system)),
            "system.0.text: Field required"
        );
        // Block types the fake does not know (beta features) are let through.
        let m = json!([{"role": "user", "content": [
            {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}},
            {"type": "container_upload", "file_id": "f1"}
        ]}]);
        assert_eq!(
            check_messages_body(&body(m, json!({})), true, false),
            Ok(())
        );
    }

    /// The assistant calling `ids`, then (if `results` is some) the user answering those.
    fn round(ids: &[&str], results: Option<&[&str]>) -> Value {
        let mut calls = vec![json!({"type": "text", "text": "checking"})];
        calls.extend(
            ids.iter()
                .map(|id| json!({"type": "tool_use", "id": id, "name": "get", "input": {}})),
        );
        let mut m = vec![
            json!({"role": "user", "content": "weather?"}),
            json!({"role": "assistant", "content": calls}),
        ];
        if let Some(results) = results {
            let r: Vec<Value> = results
                .iter()
                .map(|id| json!({"type": "tool_result", "tool_use_id": id, "content": "sunny"}))
                .collect();
            m.push(json!({"role": "user", "content": r}));
        }
        Value::Array(m)
    }

    #[test]
    fn tool_results_answer_the_tool_uses_just_before() {
        let ok = |m: Value| check_messages_body(&body(m, json!({})), true, false);
        assert_eq!(
            ok(round(
                &["toolu_1", "toolu_2"],
                Some(&["toolu_2", "toolu_1"])
            )),
            Ok(())
        );
        // A call in the last message is the answer being asked for.
        assert_eq!(ok(round(&["toolu_1"], None)), Ok(()));
        assert_eq!(
            refusal(&body(round(&["toolu_1", "toolu_2"], Some(&["toolu_1"])), json!({}))),
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_2. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
        );
        assert_eq!(
            refusal(&body(round(&[], Some(&["toolu_9"])), json!({}))),
            "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
        );
        // A result for a call two turns back is not an answer to the turn just before.
        let mut stale = round(&["toolu_1"], Some(&["toolu_1"]))
            .as_array()
            .unwrap()
            .clone();
        stale.push(json!({"role": "assistant", "content": "done"}));
        stale.push(
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}),
        );
        assert_eq!(
            refusal(&body(Value::Array(stale), json!({}))),
            "messages.4.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
        );
        // A first message cannot answer anything.
        let first =
            json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]);
        assert!(refusal(&body(first, json!({}))).starts_with("messages.0.content.0: unexpected"));
        // The API combines consecutive messages of a role: results split over two user
        // messages answer one assistant turn.
        let mut split = round(&["a", "b"], Some(&["a"])).as_array().unwrap().clone();
        split.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b"}, {"type": "text", "text": "go on"}]}));
        assert_eq!(ok(Value::Array(split)), Ok(()));
        // The results open the turn that answers: text before them, or between them, is
        // refused in the API's words, naming the turn's first message and the calls.
        let result =
            |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": "sunny"});
        let text = json!({"type": "text", "text": "here you go"});
        for answer in [
            json!([text, result("a"), result("b")]),
            json!([result("a"), text, result("b")]),
        ] {
            let mut m = round(&["a", "b"], None).as_array().unwrap().clone();
            m.push(json!({"role": "user", "content": answer}));
            assert_eq!(
                refusal(&body(Value::Array(m), json!({}))),
                "messages.2: Did not find 2 `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks."
            );
        }
        let mut late = round(&["a"], None).as_array().unwrap().clone();
        late.push(json!({"role": "user", "content": "thinking about it"}));
        late.push(json!({"role": "user", "content": [result("a")]}));
        assert!(refusal(&body(Value::Array(late), json!({})))
            .starts_with("messages.2: Did not find 1 "));
        let mut after = round(&["a"], None).as_array().unwrap().clone();
        after.push(json!({"role": "user", "content": [result("a"), text]}));
        assert_eq!(
            ok(Value::Array(after)),
            Ok(()),
            "text after the results is taken"
        );
        let no_id = json!([{"role": "user", "content": "x"}, {"role": "assistant", "content": [{"type": "tool_use", "name": "get", "input": {}}]}, {"role": "user", "content": "y"}]);
        assert_eq!(
            refusal(&body(no_id, json!({}))),
            "messages.1.content.0.id: Field required"
        );
    }

    #[test]
    fn tools_are_a_list_of_named_schemas_with_unique_names() {
        let get = json!({"name": "get", "input_schema": {"type": "object"}});
        for (tools, says) in [
            (
                json!({"name": "get"}),
                "tools: Input should be a valid list",
            ),
            (
                json!([{"name": "get"}]),
                "tools.0.custom.input_schema: Field required",
            ),
            (
                json!([get, {"type": "custom", "input_schema": {}}]),
                "tools.1.custom.name: Field required",
            ),
            (
                json!([{"name": "get", "input_schema": "{}"}]),
                "tools.0.custom.input_schema: Input should be a valid dictionary",
            ),
            (json!([get, get]), "tools: Tool names must be unique."),
            (
                json!([5]),
                "tools.0: Input should be a valid dictionary or object to extract fields from",
            ),
        ] {
            assert_eq!(refusal(&body(hi(), json!({ "tools": tools }))), says);
        }
        // The API's own tools need no schema.
        let server = json!({"tools": [get, {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}, {"type": "bash_20250124", "name": "bash"}]});
        assert_eq!(
            check_messages_body(&body(hi(), server), true, false),
            Ok(())
        );
    }

    #[test]
    fn thinking_is_held_to_its_budget_and_its_company() {
        let enabled = |budget: Value| json!({"type": "enabled", "budget_tokens": budget});
        for (extra, says) in [
            (json!({"thinking": {"type": "on"}}), "thinking: Input tag 'on' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'between_tools', 'adaptive'"),
            (json!({"thinking": {}}), "thinking: Unable to extract tag using discriminator 'type'"),
            (json!({"thinking": {"type": "enabled"}}), "thinking.enabled.budget_tokens: Field required"),
            (json!({"thinking": enabled(json!(1023))}), "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"),
            (json!({"thinking": enabled(json!("lots"))}), "thinking.enabled.budget_tokens: Input should be a valid integer"),
            (json!({"thinking": enabled(json!(2048))}), "`max_tokens` must be greater than `thinking.budget_tokens`"),
            (json!({"thinking": enabled(json!(1024)), "temperature": 0.5}), "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode"),
            (json!({"thinking": {"type": "adaptive"}, "temperature": 0}), "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode"),
            (
                json!({"thinking": enabled(json!(1024)), "tools": [{"name": "get", "input_schema": {}}], "tool_choice": {"type": "any"}}),
                "Thinking may not be enabled when tool_choice forces tool use.",
            ),
            (
                json!({"thinking": {"type": "adaptive"}, "tools": [{"name": "get", "input_schema": {}}], "tool_choice": {"type": "tool", "name": "get"}}),
                "Thinking may not be enabled when tool_choice forces tool use.",
            ),
        ] {
            assert_eq!(refusal(&body(hi(), extra)), says);
        }
        let tools = json!([{"name": "get", "input_schema": {}}]);
        for fine in [
            json!({"thinking": enabled(json!(1024))}),
            json!({"thinking": enabled(json!(1024)), "temperature": 1.0}),
            json!({"thinking": {"type": "adaptive"}, "temperature": 1}),
            json!({"thinking": enabled(json!(1024)), "tools": tools, "tool_choice": {"type": "auto"}}),
            json!({"thinking": {"type": "disabled"}, "temperature": 0.2, "tools": tools, "tool_choice": {"type": "any"}}),
            json!({"thinking": {"type": "between_tools"}}),
        ] {
            assert_eq!(
                check_messages_body(&body(hi(), fine.clone()), true, false),
                Ok(()),
                "{fine}"
            );
        }
        // Under interleaved thinking (a beta) the budget spans the whole turn of calls, and
        // may pass one call's `max_tokens`.
        let past_max = body(hi(), json!({"thinking": enabled(json!(4096))}));
        assert_eq!(check_messages_body(&past_max, true, true), Ok(()));
        // A token count has no `max_tokens` to hold the budget under.
        let count = json!({"model": "m", "messages": hi(), "thinking": enabled(json!(50_000))});
        assert_eq!(check_messages_body(&count, false, false), Ok(()));
    }

    /// With thinking on, the last assistant turn that calls tools must open with its
    /// thinking (sent back by the client); two calls may not share an id; at most four
    /// blocks carry `cache_control`; a thinking model takes no `top_k` and a `top_p` of
    /// 0.95 or more.
    #[test]
    fn thinking_agents_send_their_thinking_back_and_ids_and_breakpoints_are_bounded() {
        let on = json!({"thinking": {"type": "enabled", "budget_tokens": 1024}});
        let call = json!({"type": "tool_use", "id": "toolu_1", "name": "get", "input": {}});
        let result = json!([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]);
        let turn = |opening: Option<Value>| {
            let mut content: Vec<Value> = opening.into_iter().collect();
            content.push(call.clone());
            json!([
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": content},
                {"role": "user", "content": result},
            ])
        };
        let dropped = refusal(&body(turn(None), on.clone()));
        assert!(
            dropped.starts_with("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."),
            "{dropped}"
        );
        let text_first = refusal(&body(
            turn(Some(json!({"type": "text", "text": "Let me look."}))),
            on.clone(),
        ));
        assert!(text_first.contains("but found `text`"), "{text_first}");
        for opening in [
            json!({"type": "thinking", "thinking": "t", "signature": "s"}),
            json!({"type": "redacted_thinking", "data": "d"}),
        ] {
            let b = body(turn(Some(opening)), on.clone());
            assert_eq!(check_messages_body(&b, true, false), Ok(()), "{b}");
        }
        // Without thinking, or with no call in the last assistant turn, nothing is asked; nor
        // in adaptive mode, where the model may have called the tools without thinking.
        assert_eq!(
            check_messages_body(&body(turn(None), json!({})), true, false),
            Ok(())
        );
        let adaptive = json!({"thinking": {"type": "adaptive"}});
        assert_eq!(
            check_messages_body(&body(turn(None), adaptive), true, false),
            Ok(())
        );
        let chat = json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "and?"}]);
        assert_eq!(
            check_messages_body(&body(chat, on.clone()), true, false),
            Ok(())
        );

        let twice = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [call.clone()]},
            {"role": "user", "content": result.clone()},
            {"role": "assistant", "content": [call.clone()]},
            {"role": "user", "content": result.clone()},
        ]);
        assert_eq!(
            refusal(&body(twice, json!({}))),
            "messages.3.content.0: `tool_use` ids must be unique"
        );

        let marked = |n: usize| {
            let blocks: Vec<Value> = (0..n)
                .map(|i| json!({"type": "text", "text": format!("part {i}"), "cache_control": {"type": "ephemeral"}}))
                .collect();
            body(json!([{"role": "user", "content": blocks}]), json!({}))
        };
        assert_eq!(check_messages_body(&marked(4), true, false), Ok(()));
        // A block a tool result holds counts too.
        let mut nested = marked(4);
        nested["messages"] = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [call.clone()]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "ok", "cache_control": {"type": "ephemeral"}}]}]},
        ]);
        nested["system"] = marked(4)["messages"][0]["content"].clone();
        assert!(refusal(&nested).contains("Found 5."), "{nested}");
        assert_eq!(
            refusal(&marked(5)),
            "A maximum of 4 blocks with cache_control may be provided. Found 5."
        );

        let with = |extra: Value| {
            let mut fields = on.clone();
            for (k, v) in extra.as_object().unwrap() {
                fields[k] = v.clone();
            }
            body(hi(), fields)
        };
        assert!(refusal(&with(json!({"top_k": 5}))).contains("top_k"));
        assert!(refusal(&with(json!({"top_p": 0.5}))).contains("0.95"));
        assert_eq!(
            check_messages_body(&with(json!({"top_p": 0.95})), true, false),
            Ok(())
        );
    }

    #[test]
    fn null_optional_fields_are_taken_as_absent() {
        let nulls = json!({"temperature": null, "top_p": null, "top_k": null, "stop_sequences": null, "metadata": null, "tools": null, "thinking": null});
        assert_eq!(check_messages_body(&body(hi(), nulls), true, false), Ok(()));
    }

    #[test]
    fn a_long_id_is_echoed_cut() {
        let long = "t".repeat(10_000);
        let m =
            json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": long}]}]);
        assert!(refusal(&body(m, json!({}))).len() < 600);
    }
}
