//! The `anthropic-version` header of Anthropic's routes, and what the one version that
//! changed the Messages body refuses.
//!
//! The real API requires the header and takes the versions it publishes: `2023-01-01`, the
//! initial release; `2023-06-01`, which every SDK sent for three years; and `2026-10-21`,
//! which the SDK majors released with it (Python 2.0.0, TypeScript 1.0.0 and later) send by
//! default. Under `2026-10-21` a Messages body (or a token count's) may no longer carry
//! `temperature`, `top_p` or `top_k`, at any value, and two kinds of content are refused: a
//! `document` block in an assistant message, and a text block with citations in a user
//! message. A team that bumps its SDK across that major meets these 400s on every request
//! that carries them, which no SDK retries: here too, before production.
//!
//! The sampling parameters are refused in the API's words (`temperature: Extra inputs are
//! not permitted`, its validation's for a field the version does not have, even `null`);
//! the two content refusals' sentences are the fake's own.

use super::parse::{shown, BadRequest};
use axum::http::HeaderMap;
use serde_json::Value;

/// What the real API says of a Messages request (or a token count) sent without an
/// `anthropic-version` header, as an `invalid_request_error`. Every official SDK sends the
/// header; a hand-written client that forgets it is refused in production, so here too.
pub const VERSION_REQUIRED: &str = "anthropic-version: header is required";

/// The API versions the real API takes in `anthropic-version` (see the module's doc). Any
/// other value is refused there, and so here: a gateway that sends the header twice
/// (`2023-06-01, 2023-06-01`) or a version made up is refused on every request.
pub const VERSIONS: [&str; 3] = ["2023-01-01", "2023-06-01", "2026-10-21"];

/// The version whose Messages body has no sampling parameters (see the module's doc).
const SAMPLING_REMOVED: &str = "2026-10-21";

/// The sampling parameters [`SAMPLING_REMOVED`] removed, in the order they are told: key
/// order, as a field the API does not know is told (`known_fields`).
const SAMPLING: [&str; 3] = ["temperature", "top_k", "top_p"];

/// Whether a request names the API version it speaks (`anthropic-version`, not empty),
/// whichever version it names.
pub(crate) fn names_a_version(headers: &HeaderMap) -> bool {
    headers
        .get("anthropic-version")
        .is_some_and(|v| !v.as_bytes().trim_ascii().is_empty())
}

/// The version a request names, one of [`VERSIONS`], or the real API's 400 for one that
/// names none ([`VERSION_REQUIRED`]) or one it does not take (`anthropic-version: "V" is
/// not a valid version`, the header's values as the API reads them: joined by `, ` when
/// sent more than once).
pub(crate) fn version(headers: &HeaderMap) -> Result<&'static str, BadRequest> {
    if !names_a_version(headers) {
        return Err(BadRequest::new(VERSION_REQUIRED.to_string()));
    }
    let named = headers
        .get_all("anthropic-version")
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    VERSIONS.into_iter().find(|v| *v == named).ok_or_else(|| {
        BadRequest::new(format!(
            "anthropic-version: {:?} is not a valid version",
            shown(&named)
        ))
    })
}

/// What `version` refuses of the Messages body `v` that every version before it took (see
/// the module's doc), or `Ok`. Read before the body's own checks: a field the version does
/// not have is told before the value it holds.
pub(super) fn check_body(v: &Value, version: &str) -> Result<(), String> {
    if version != SAMPLING_REMOVED {
        return Ok(());
    }
    let Value::Object(body) = v else {
        return Ok(());
    };
    if let Some(key) = SAMPLING.into_iter().find(|k| body.contains_key(*k)) {
        return Err(format!("{key}: Extra inputs are not permitted"));
    }
    let Some(Value::Array(messages)) = body.get("messages") else {
        return Ok(());
    };
    for (i, m) in messages.iter().enumerate() {
        let Some(Value::Array(blocks)) = m.get("content") else {
            continue;
        };
        let role = m.get("role").and_then(Value::as_str);
        for (j, block) in blocks.iter().enumerate() {
            let kind = block.get("type").and_then(Value::as_str);
            if role == Some("assistant") && kind == Some("document") {
                return Err(format!(
                    "messages.{i}.content.{j}: `document` blocks are not permitted in \
                     `assistant` messages in API version {SAMPLING_REMOVED}"
                ));
            }
            if role != Some("user") {
                continue;
            }
            let cited = match kind {
                Some("text") => cites(block).then(|| format!("messages.{i}.content.{j}")),
                // A search result's text blocks, and a tool result's (its own, or a search
                // result's inside it), are the user's too.
                Some("search_result") | Some("tool_result") => {
                    cited_within(block).map(|at| format!("messages.{i}.content.{j}.{at}"))
                }
                _ => None,
            };
            if let Some(at) = cited {
                return Err(format!(
                    "{at}.citations: citations may not be sent on `text` blocks in `user` \
                     messages in API version {SAMPLING_REMOVED}"
                ));
            }
        }
    }
    Ok(())
}

/// Where in the `content` blocks of `block` (a search or tool result) a text block with
/// citations lies (`content.K`, or `content.K.content.L` in a search result a tool result
/// holds), if any.
fn cited_within(block: &Value) -> Option<String> {
    let inner = block.get("content").and_then(Value::as_array)?;
    inner.iter().enumerate().find_map(|(k, b)| {
        if cites(b) {
            return Some(format!("content.{k}"));
        }
        let nested = b.get("type").and_then(Value::as_str) == Some("search_result");
        nested
            .then(|| {
                let held = b.get("content").and_then(Value::as_array)?;
                held.iter()
                    .position(cites)
                    .map(|l| format!("content.{k}.content.{l}"))
            })
            .flatten()
    })
}

/// Whether `block` is a text block with a non-empty `citations` list.
fn cites(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("text")
        && block
            .get("citations")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every version the API takes is taken; a missing or empty header, a version made up
    /// and a header sent twice are each refused in the API's words.
    #[test]
    fn the_versions_the_api_takes_and_the_words_for_the_rest() {
        let with = |values: &[&str]| {
            let mut h = HeaderMap::new();
            for v in values {
                h.append("anthropic-version", v.parse().unwrap());
            }
            version(&h).map_err(|e| e.message)
        };
        for v in VERSIONS {
            assert_eq!(with(&[v]), Ok(v));
        }
        assert_eq!(
            with(&[" 2023-06-01 "]),
            Ok("2023-06-01"),
            "spaces are no part of it"
        );
        for missing in [&[][..], &[""], &["  "]] {
            assert_eq!(with(missing), Err(VERSION_REQUIRED.to_string()));
        }
        assert_eq!(
            with(&["2024-10-22"]),
            Err(r#"anthropic-version: "2024-10-22" is not a valid version"#.to_string())
        );
        assert_eq!(
            with(&["2023-06-01", "2023-06-01"]),
            Err(
                r#"anthropic-version: "2023-06-01, 2023-06-01" is not a valid version"#.to_string()
            )
        );
        let long = "9".repeat(10_000);
        let told = with(&[&long]).unwrap_err();
        assert!(
            told.len() < 1_000,
            "a long value is shown cut: {} bytes",
            told.len()
        );
    }

    /// Under 2026-10-21 the sampling parameters are refused at any value, `null` included,
    /// and the two kinds of content; under 2023-06-01 each is taken.
    #[test]
    fn the_newest_version_refuses_sampling_and_two_kinds_of_content() {
        let hi = json!([{ "role": "user", "content": "hi" }]);
        let with = |extra: Value, messages: &Value| {
            let mut b = json!({ "model": "m", "max_tokens": 8, "messages": messages });
            for (k, v) in extra.as_object().unwrap() {
                b[k] = v.clone();
            }
            b
        };
        for (extra, told) in [
            (json!({ "temperature": 1.0 }), "temperature"),
            (json!({ "temperature": null }), "temperature"),
            (json!({ "top_p": 0.9, "top_k": 5 }), "top_k"),
            (json!({ "top_p": 0.9 }), "top_p"),
        ] {
            let b = with(extra, &hi);
            assert_eq!(
                check_body(&b, "2026-10-21"),
                Err(format!("{told}: Extra inputs are not permitted")),
                "{b}"
            );
            assert_eq!(check_body(&b, "2023-06-01"), Ok(()), "{b}");
        }
        let document = json!([
            { "role": "user", "content": "read it" },
            { "role": "assistant", "content": [{ "type": "text", "text": "ok" },
              { "type": "document", "source": { "type": "text", "media_type": "text/plain", "data": "x" } }] },
            { "role": "user", "content": "and?" },
        ]);
        let cited = |block: Value| json!([{ "role": "user", "content": [block] }]);
        let citation = json!([{ "type": "char_location", "cited_text": "x", "document_index": 0,
                                "start_char_index": 0, "end_char_index": 1 }]);
        let text = cited(json!({ "type": "text", "text": "x", "citations": citation }));
        let search = cited(
            json!({ "type": "search_result", "source": "s", "title": "t",
            "content": [{ "type": "text", "text": "a" },
                        { "type": "text", "text": "b", "citations": citation }] }),
        );
        let tool = json!([
            { "role": "user", "content": "look it up" },
            { "role": "assistant", "content": [{ "type": "tool_use", "id": "t1", "name": "find", "input": {} }] },
            { "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "t1",
                "content": [{ "type": "text", "text": "b", "citations": citation }] }] },
        ]);
        let tool_search = json!([
            { "role": "user", "content": "look it up" },
            { "role": "assistant", "content": [{ "type": "tool_use", "id": "t1", "name": "find", "input": {} }] },
            { "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "t1",
                "content": [{ "type": "search_result", "source": "s", "title": "t",
                    "content": [{ "type": "text", "text": "b", "citations": citation }] }] }] },
        ]);
        for (messages, at) in [
            (&document, "messages.1.content.1: `document` blocks"),
            (&text, "messages.0.content.0.citations: "),
            (&search, "messages.0.content.0.content.1.citations: "),
            (&tool, "messages.2.content.0.content.0.citations: "),
            (
                &tool_search,
                "messages.2.content.0.content.0.content.0.citations: ",
            ),
        ] {
            let b = with(json!({}), messages);
            let told = check_body(&b, "2026-10-21").unwrap_err();
            assert!(told.starts_with(at), "{told}");
            assert_eq!(check_body(&b, "2023-06-01"), Ok(()));
        }
        // Empty citations, and an assistant's cited text (the API's own answer sent back),
        // are taken.
        let uncited = cited(json!({ "type": "text", "text": "x", "citations": [] }));
        let answered = json!([{ "role": "user", "content": "q" },
            { "role": "assistant", "content": [{ "type": "text", "text": "x", "citations": citation }] },
            { "role": "user", "content": "more" }]);
        for messages in [&hi, &uncited, &answered] {
            assert_eq!(check_body(&with(json!({}), messages), "2026-10-21"), Ok(()));
        }
    }
}
