//! Tool calls and their answers, paired as OpenAI's APIs pair them.
//!
//! - Chat completions ([`tool_pairing`]): each `tool` message answers a call of the
//!   assistant message just before the run of tool messages it stands in, and every call of
//!   an assistant message is answered before any other message (or the end of the
//!   conversation) comes.
//! - The Responses API ([`function_call_pairing`]): each `function_call` item of the input
//!   has its `function_call_output`, and each output answers a call of the input (or, with
//!   `previous_response_id`, a `conversation` or an `item_reference` in the input, possibly
//!   one stored with an earlier turn, which is not kept here, so it is taken).
//!
//! An agent that loses an answer (a history trimmed between a call and its answer, a retry
//! that re-sends half a turn, a parallel call whose answer was dropped) gets a 400 on every
//! request from the real API, which never retries it. Served here, it ran cleanly. The
//! messages are the APIs', their spelling included ("preceeding").

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::parse::shown;
use super::parse::{invalid_type, missing, BadRequest};

/// Unanswered calls a refusal names at most; it says how many more there are. A body of
/// 32 MiB can hold a million calls, and the refusal would have been as large.
const NAMED_AT_MOST: usize = 100;

/// The calls of the last assistant message that made some, while tool messages answer it.
struct OpenCalls<'m> {
    /// Its index in `messages`.
    at: usize,
    /// Every call's id, in the order the message lists them (for the refusal's words).
    order: Vec<&'m str>,
    /// The same ids, each with whether a tool message answered it: looked up by each tool
    /// message, where a scan of `order` made a body of many calls and many answers cost
    /// their product.
    answered: HashMap<&'m str, bool>,
    /// How many of `answered` are not yet.
    left: usize,
}

impl OpenCalls<'_> {
    /// The API's 400 when calls are left unanswered, naming them in the message's order.
    fn settle(self) -> Result<(), BadRequest> {
        if self.left == 0 {
            return Ok(());
        }
        let left: Vec<&str> = self
            .order
            .iter()
            .filter(|id| self.answered.get(*id) == Some(&false))
            .take(NAMED_AT_MOST)
            .map(|id| shown(id))
            .collect();
        let more = match self.left.saturating_sub(left.len()) {
            0 => String::new(),
            n => format!(" (and {n} more)"),
        };
        Err(BadRequest::at(
            format!("messages.[{}].role", self.at),
            None,
            format!(
                "An assistant message with 'tool_calls' must be followed by tool messages \
                 responding to each 'tool_call_id'. The following tool_call_ids did not have \
                 response messages: {}{more}",
                left.join(", ")
            ),
        ))
    }
}

/// Checks the pairing of `messages`' tool calls and tool messages (see the module's doc).
/// Roles were checked before; a message without one is passed over here.
pub(crate) fn tool_pairing(messages: &[Value]) -> Result<(), BadRequest> {
    let mut open: Option<OpenCalls<'_>> = None;
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str);
        if role == Some("tool") {
            let id = tool_call_id(m, i)?;
            let Some(calls) = open.as_mut() else {
                return Err(BadRequest::at(
                    format!("messages.[{i}].role"),
                    None,
                    "Invalid parameter: messages with role 'tool' must be a response to a \
                     preceeding message with 'tool_calls'.",
                ));
            };
            let Some(answered) = calls.answered.get_mut(id) else {
                return Err(BadRequest::at(
                    format!("messages.[{i}].tool_call_id"),
                    None,
                    format!(
                        "Invalid parameter: 'tool_call_id' of '{}' not found in 'tool_calls' \
                         of previous message.",
                        shown(id)
                    ),
                ));
            };
            if !*answered {
                *answered = true;
                calls.left -= 1;
            }
            continue;
        }
        if let Some(calls) = open.take() {
            calls.settle()?;
        }
        if role == Some("assistant") {
            open = calls_of(m, i)?;
        }
    }
    open.map_or(Ok(()), OpenCalls::settle)
}

/// A tool message's `tool_call_id`: required, and a string.
fn tool_call_id(m: &Value, i: usize) -> Result<&str, BadRequest> {
    match m.get("tool_call_id") {
        Some(Value::String(id)) => Ok(id),
        None | Some(Value::Null) => Err(no_tool_call_id(i)),
        Some(other) => Err(invalid_type(
            &format!("messages[{i}].tool_call_id"),
            "a string",
            other,
        )),
    }
}

/// The API's 400 for tool message `i` without a `tool_call_id` (its own words, not those
/// of a missing parameter elsewhere).
pub(crate) fn no_tool_call_id(i: usize) -> BadRequest {
    BadRequest::at(
        format!("messages.[{i}].tool_call_id"),
        None,
        "Missing parameter 'tool_call_id': messages with role 'tool' must have a \
         'tool_call_id'.",
    )
}

/// The calls an assistant message makes (`tool_calls`, each with an `id`), or `None` when
/// it makes none.
fn calls_of(m: &Value, i: usize) -> Result<Option<OpenCalls<'_>>, BadRequest> {
    let calls = match m.get("tool_calls") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(calls)) if calls.is_empty() => return Ok(None),
        Some(Value::Array(calls)) => calls,
        Some(other) => {
            return Err(invalid_type(
                &format!("messages[{i}].tool_calls"),
                "an array",
                other,
            ))
        }
    };
    let mut order = Vec::with_capacity(calls.len());
    for (j, call) in calls.iter().enumerate() {
        let param = || format!("messages[{i}].tool_calls[{j}].id");
        match call.get("id") {
            Some(Value::String(id)) => order.push(id.as_str()),
            None | Some(Value::Null) => return Err(missing(&param())),
            Some(other) => return Err(invalid_type(&param(), "a string", other)),
        }
    }
    let answered: HashMap<&str, bool> = order.iter().map(|&id| (id, false)).collect();
    Ok(Some(OpenCalls {
        at: i,
        order,
        left: answered.len(),
        answered,
    }))
}

/// Checks the pairing of the `function_call` and `function_call_output` items of a
/// Responses `input` (see the module's doc); `earlier_turns` when the request continues a
/// stored response or conversation, or refers to stored items. Item shapes were checked before; an item without a
/// string `call_id` is passed over here.
pub(crate) fn function_call_pairing(
    input: &[Value],
    earlier_turns: bool,
) -> Result<(), BadRequest> {
    let ids = |kind: &'static str| {
        input
            .iter()
            .filter(move |item| item.get("type").and_then(Value::as_str) == Some(kind))
            .filter_map(|item| item.get("call_id").and_then(Value::as_str))
    };
    let answered: HashSet<&str> = ids("function_call_output").collect();
    if let Some(call) = ids("function_call").find(|id| !answered.contains(id)) {
        return Err(BadRequest::at(
            "input",
            None,
            format!("No tool output found for function call {}.", shown(call)),
        ));
    }
    if earlier_turns {
        return Ok(());
    }
    let asked: HashSet<&str> = ids("function_call").collect();
    match ids("function_call_output").find(|id| !asked.contains(id)) {
        Some(output) => Err(BadRequest::at(
            "input",
            None,
            format!(
                "No tool call found for function call output with call_id {}.",
                shown(output)
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "weather", "arguments": "{}"}})
    }

    fn asks(ids: &[&str]) -> Value {
        let calls: Vec<Value> = ids.iter().map(|id| call(id)).collect();
        json!({"role": "assistant", "content": null, "tool_calls": calls})
    }

    fn answer(id: &str) -> Value {
        json!({"role": "tool", "tool_call_id": id, "content": "sunny"})
    }

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": text})
    }

    fn refusal(messages: &[Value]) -> (String, Option<String>, Option<&'static str>) {
        let e = tool_pairing(messages).expect_err("refused");
        (e.message, e.param, e.code)
    }

    #[test]
    fn an_agents_turns_pass() {
        let messages = [
            user("weather in Paris and Rome?"),
            asks(&["call_1", "call_2"]),
            // Answered in any order, and a call's answer may be sent twice.
            answer("call_2"),
            answer("call_1"),
            answer("call_1"),
            json!({"role": "assistant", "content": "sunny in both"}),
            user("and Oslo?"),
            asks(&["call_3"]),
            answer("call_3"),
        ];
        assert_eq!(tool_pairing(&messages), Ok(()));
        // No calls at all, and calls written as null or empty.
        let plain = [
            user("hi"),
            json!({"role": "assistant", "content": "hello", "tool_calls": null}),
            json!({"role": "assistant", "content": "hello", "tool_calls": []}),
            user("bye"),
        ];
        assert_eq!(tool_pairing(&plain), Ok(()));
    }

    #[test]
    fn a_tool_message_answers_the_calls_just_before_it() {
        // First, or after a user's message: nothing it could answer.
        let (message, param, code) = refusal(&[user("hi"), answer("call_1")]);
        assert_eq!(
            message,
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding \
             message with 'tool_calls'."
        );
        assert_eq!(param.as_deref(), Some("messages.[1].role"));
        assert_eq!(code, None);
        let (_, param, _) = refusal(&[
            user("hi"),
            asks(&["call_1"]),
            answer("call_1"),
            user("again"),
            answer("call_1"),
        ]);
        assert_eq!(param.as_deref(), Some("messages.[4].role"));
        // An id the calls do not hold.
        let (message, param, _) = refusal(&[user("hi"), asks(&["call_1"]), answer("call_9")]);
        assert_eq!(
            message,
            "Invalid parameter: 'tool_call_id' of 'call_9' not found in 'tool_calls' of \
             previous message."
        );
        assert_eq!(param.as_deref(), Some("messages.[2].tool_call_id"));
    }

    #[test]
    fn every_call_is_answered_before_the_conversation_goes_on() {
        let unanswered = "An assistant message with 'tool_calls' must be followed by tool \
                          messages responding to each 'tool_call_id'. The following \
                          tool_call_ids did not have response messages: ";
        // A user's message comes first; the ids are listed in the calls' order.
        let (message, param, code) = refusal(&[
            user("hi"),
            asks(&["call_1", "call_2", "call_3"]),
            answer("call_2"),
            user("well?"),
        ]);
        assert_eq!(message, format!("{unanswered}call_1, call_3"));
        assert_eq!(param.as_deref(), Some("messages.[1].role"));
        assert_eq!(code, None);
        // The conversation ends on the calls.
        let (message, param, _) = refusal(&[user("hi"), asks(&["call_1"])]);
        assert_eq!(message, format!("{unanswered}call_1"));
        assert_eq!(param.as_deref(), Some("messages.[1].role"));
        // Another assistant message comes first.
        let (_, param, _) = refusal(&[
            user("hi"),
            asks(&["call_1"]),
            json!({"role": "assistant", "content": "never mind"}),
        ]);
        assert_eq!(param.as_deref(), Some("messages.[1].role"));
    }

    #[test]
    fn ids_are_required_strings() {
        let (message, param, code) = refusal(&[
            user("hi"),
            asks(&["call_1"]),
            json!({"role": "tool", "content": "sunny"}),
        ]);
        assert_eq!(
            message,
            "Missing parameter 'tool_call_id': messages with role 'tool' must have a \
             'tool_call_id'."
        );
        assert_eq!(param.as_deref(), Some("messages.[2].tool_call_id"));
        assert_eq!(code, None);
        let (_, param, code) = refusal(&[
            user("hi"),
            json!({"role": "assistant", "tool_calls": [{"type": "function"}]}),
        ]);
        assert_eq!(param.as_deref(), Some("messages[1].tool_calls[0].id"));
        assert_eq!(code, Some("missing_required_parameter"));
        let (_, param, code) = refusal(&[
            user("hi"),
            json!({"role": "assistant", "tool_calls": {"id": "call_1"}}),
        ]);
        assert_eq!(param.as_deref(), Some("messages[1].tool_calls"));
        assert_eq!(code, Some("invalid_type"));
    }

    #[test]
    fn a_function_calls_output_comes_with_it() {
        let call = |id: &str| json!({"type": "function_call", "call_id": id, "name": "get", "arguments": "{}"});
        let output =
            |id: &str| json!({"type": "function_call_output", "call_id": id, "output": "sunny"});
        let said = json!({"role": "user", "content": "weather?"});
        let both = [said.clone(), call("call_1"), output("call_1")];
        assert_eq!(function_call_pairing(&both, false), Ok(()));
        // A call the input makes and does not answer, with or without earlier turns.
        for earlier in [false, true] {
            let e = function_call_pairing(&[said.clone(), call("call_1")], earlier).unwrap_err();
            assert_eq!(e.message, "No tool output found for function call call_1.");
            assert_eq!((e.param.as_deref(), e.code), (Some("input"), None));
        }
        // An output of no call: refused alone, taken when the call may be in an earlier turn.
        let alone = [output("call_9")];
        let e = function_call_pairing(&alone, false).unwrap_err();
        assert_eq!(
            e.message,
            "No tool call found for function call output with call_id call_9."
        );
        assert_eq!((e.param.as_deref(), e.code), (Some("input"), None));
        assert_eq!(function_call_pairing(&alone, true), Ok(()));
    }

    #[test]
    fn a_long_id_is_echoed_cut() {
        let long = "c".repeat(10_000);
        let (message, _, _) = refusal(&[user("hi"), asks(&["call_1"]), answer(&long)]);
        assert!(message.len() < 1_000, "{} bytes", message.len());
    }

    /// Many calls and many answers are looked up, not scanned (a scan costs their
    /// product: here 10^10 comparisons, minutes of a core), and a refusal names the first
    /// hundred unanswered and counts the rest.
    #[test]
    fn many_calls_and_answers_cost_their_sum() {
        let ids: Vec<String> = (0..100_000).map(|k| format!("call_{k}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut messages = vec![user("hi"), asks(&refs)];
        messages.extend(refs.iter().map(|id| answer(id)));
        assert_eq!(tool_pairing(&messages), Ok(()));
        messages.truncate(2);
        messages.push(answer("call_5"));
        let (message, _, _) = refusal(&messages);
        assert!(
            message.ends_with(", call_100 (and 99899 more)"),
            "{message}"
        );
        assert!(message.contains("call_0, call_1, call_2, call_3, call_4, call_6"));
    }
}
