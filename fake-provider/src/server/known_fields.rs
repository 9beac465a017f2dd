//! The top-level body fields each route's real API takes, so a body with another one is
//! refused as production refuses it: OpenAI answers 400 `Unrecognized request argument
//! supplied: NAME`, Anthropic 400 `NAME: Extra inputs are not permitted`. A client with a
//! misspelt parameter (`max_token`), or one its model's API does not have, learns it here.
//!
//! The lists are the request parameters of the SDKs CI pins (openai 3.57.0's
//! `CompletionCreateParams`, `ResponseCreateParams` and `EmbeddingCreateParams`, anthropic 2.14.0's
//! `MessageCreateParams` and its beta's), and older ones the APIs still take (Anthropic's
//! sampling numbers). A client that sends a parameter newer than these sets the provider's
//! `accept_unknown_fields`.

use serde_json::{Map, Value};

use super::parse::shown;
use crate::RequestRoute;

/// `POST /v1/chat/completions`, sorted.
const CHAT: &[&str] = &[
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "messages",
    "metadata",
    "modalities",
    "model",
    "moderation",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "service_tier",
    "stop",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
];

/// `POST /v1/responses`, sorted: openai 3.57.0's `ResponseCreateParams`.
const RESPONSES: &[&str] = &[
    "access_programs",
    "background",
    "background_options",
    "context_management",
    "conversation",
    "image",
    "include",
    "input",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "model",
    "moderation",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning",
    "safety_identifier",
    "service_tier",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
];

/// `POST /v1/messages/count_tokens`, sorted: anthropic 2.14.0's `MessageCountTokensParams`
/// and its beta's (`betas` travels as the `anthropic-beta` header).
const COUNT_TOKENS: &[&str] = &[
    "billing_policy",
    "cache_control",
    "compaction",
    "context_management",
    "mcp_servers",
    "messages",
    "model",
    "output_config",
    "speed",
    "system",
    "thinking",
    "tool_choice",
    "tools",
    "user_profile_id",
    "workspace_id",
];

/// `POST /v1/embeddings`, sorted.
const EMBEDDINGS: &[&str] = &["dimensions", "encoding_format", "input", "model", "user"];

/// `POST /v1/messages`, sorted: the SDK's and its beta's body parameters (`betas` travels
/// as the `anthropic-beta` header), `stream`, and the sampling numbers older clients send.
const MESSAGES: &[&str] = &[
    "billing_policy",
    "cache_control",
    "compaction",
    "container",
    "context_management",
    "diagnostics",
    "fallback_credit_token",
    "fallbacks",
    "inference_geo",
    "max_tokens",
    "mcp_servers",
    "messages",
    "metadata",
    "model",
    "output_config",
    "service_tier",
    "speed",
    "stop_sequences",
    "stream",
    "system",
    "temperature",
    "thinking",
    "thread",
    "tool_choice",
    "tools",
    "top_k",
    "top_p",
    "user_profile_id",
    "workspace_id",
];

/// The top-level body fields the real API of `route` takes, sorted (`None` for a route
/// whose body is the fake's own, or that has none).
pub fn of(route: &RequestRoute) -> Option<&'static [&'static str]> {
    match route {
        RequestRoute::ChatCompletions => Some(CHAT),
        RequestRoute::Embeddings => Some(EMBEDDINGS),
        RequestRoute::Messages => Some(MESSAGES),
        RequestRoute::Responses => Some(RESPONSES),
        RequestRoute::CountTokens => Some(COUNT_TOKENS),
        _ => None,
    }
}

/// The fields of `body` that `known` (sorted) lacks, in key order (serde_json's map is
/// sorted, so the message is the same whatever order the client wrote them in).
fn unknown<'v>(
    body: &'v Map<String, Value>,
    known: &'v [&str],
) -> impl Iterator<Item = &'v str> + 'v {
    body.keys()
        .map(String::as_str)
        .filter(|key| known.binary_search(key).is_err())
        .map(shown)
}

/// Chat completions' and embeddings' words for the fields of a body of `route` they do not
/// take, or `None` when they take them all (or the body is no object, which is refused for
/// that). The Responses API says it its own way (see `responses::unknown_parameter`).
pub(crate) fn openai_refusal(body: &Value, route: &RequestRoute) -> Option<String> {
    let extra: Vec<&str> = unknown(body.as_object()?, of(route)?).collect();
    match extra.as_slice() {
        [] => None,
        [one] => Some(format!("Unrecognized request argument supplied: {one}")),
        several => Some(format!(
            "Unrecognized request arguments supplied: {}",
            several.join(", ")
        )),
    }
}

/// The first field (in key order, cut as an error repeats it) of a body of `route` its API
/// does not take; `None` when it takes them all, or the body is no object.
pub(crate) fn first_unknown<'v>(body: &'v Value, route: &RequestRoute) -> Option<&'v str> {
    unknown(body.as_object()?, of(route)?).next()
}

/// Anthropic's words for the first field (in key order) of a Messages (or token count,
/// `route`) body it does not take.
pub(crate) fn anthropic_refusal(body: &Value, route: &RequestRoute) -> Option<String> {
    first_unknown(body, route).map(|first| format!("{first}: Extra inputs are not permitted"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_lists_are_sorted_for_their_search() {
        for list in [CHAT, EMBEDDINGS, MESSAGES, RESPONSES, COUNT_TOKENS] {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{list:?}");
        }
    }

    #[test]
    fn unknown_fields_are_named_in_each_apis_words() {
        let chat = json!({"model": "m", "messages": [], "max_token": 5});
        assert_eq!(
            openai_refusal(&chat, &RequestRoute::ChatCompletions).as_deref(),
            Some("Unrecognized request argument supplied: max_token")
        );
        let two = json!({"model": "m", "messages": [], "b": 1, "a": 2});
        assert_eq!(
            openai_refusal(&two, &RequestRoute::ChatCompletions).as_deref(),
            Some("Unrecognized request arguments supplied: a, b")
        );
        assert_eq!(
            openai_refusal(
                &json!({"model": "m", "input": "x", "n": 1}),
                &RequestRoute::Embeddings
            )
            .as_deref(),
            Some("Unrecognized request argument supplied: n")
        );
        let messages = json!({"model": "m", "max_tokens": 5, "messages": [], "temprature": 1});
        assert_eq!(
            anthropic_refusal(&messages, &RequestRoute::Messages).as_deref(),
            Some("temprature: Extra inputs are not permitted")
        );
    }

    #[test]
    fn a_long_name_is_repeated_cut() {
        let name = "é".repeat(1_000);
        let refusal =
            anthropic_refusal(&json!({ name.clone(): 1 }), &RequestRoute::Messages).unwrap();
        assert!(refusal.len() < 300, "{} bytes", refusal.len());
        assert!(refusal.starts_with(&name[..256]), "{refusal}");
    }

    #[test]
    fn what_the_sdks_send_is_known() {
        let chat = json!({"model": "m", "messages": [], "stream": true,
            "stream_options": {"include_usage": true}, "temperature": 0.2, "tools": [],
            "response_format": {"type": "json_object"}, "max_completion_tokens": 9});
        assert_eq!(openai_refusal(&chat, &RequestRoute::ChatCompletions), None);
        let messages = json!({"model": "m", "max_tokens": 5, "messages": [], "stream": true,
            "system": "s", "temperature": 0.5, "top_k": 3, "metadata": {}});
        assert_eq!(anthropic_refusal(&messages, &RequestRoute::Messages), None);
        assert_eq!(
            openai_refusal(&json!([1]), &RequestRoute::ChatCompletions),
            None
        );
    }
}
