//! Keeping secrets and bodies out of audit records.
//!
//! An audit `detail` is meant to be a short sanitized note (status, reason, delay). The writer
//! does not trust that: before a record is hashed it passes the detail through
//! [`sanitize_detail`], which replaces what looks like a credential or a raw body and cuts an
//! over-long note. It redacts rather than refuses because an audit trail with a hole where
//! an event should be is worse than one with a marked redaction; the caller learns what was
//! redacted from [`Appended::redactions`](crate::Appended::redactions) and can treat it as a bug.

use serde::{Deserialize, Serialize};

/// Longest detail kept (bytes); longer ones are cut at a character boundary.
pub const MAX_DETAIL_BYTES: usize = 256;

/// Text that replaces an API key.
pub const REDACTED_KEY: &str = "[redacted key]";
/// Text that replaces a bearer token (after the `Bearer ` word, which stays).
pub const REDACTED_TOKEN: &str = "[redacted]";
/// Text that replaces a JSON body and everything after it.
pub const REDACTED_BODY: &str = "[redacted body]";

/// What [`sanitize_detail`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Redaction {
    /// An `sk-...` API key.
    ApiKey,
    /// The token after `Bearer `.
    BearerToken,
    /// A JSON object (a request or response body).
    Body,
    /// The detail was longer than [`MAX_DETAIL_BYTES`]; the rest was cut.
    TooLong,
}

/// A detail made safe to record, and what was taken out of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sanitized {
    /// The detail with secrets and bodies replaced by markers, cut to
    /// [`MAX_DETAIL_BYTES`] bytes (then marked `...[cut N bytes]`) when longer.
    pub text: String,
    /// Each kind of redaction applied, in the order applied (no repeats).
    pub redactions: Vec<Redaction>,
}

/// Replaces API keys (`sk-` followed by key characters, not inside a longer word), bearer
/// tokens (`Bearer <token>`, any case), JSON bodies (from the first `{"` on) and cuts the
/// result to [`MAX_DETAIL_BYTES`].
pub fn sanitize_detail(detail: &str) -> Sanitized {
    let mut redactions = Vec::new();
    let mut note = |r: Redaction| {
        if !redactions.contains(&r) {
            redactions.push(r);
        }
    };

    let mut text = detail.to_string();
    if let Some(start) = text.find("{\"") {
        text.truncate(start);
        text.push_str(REDACTED_BODY);
        note(Redaction::Body);
    }
    // Bearer first: `Bearer sk-...` is then one bearer redaction, not a key redaction whose
    // marker the bearer pass would mangle.
    let (text, found) = redact_bearer_tokens(&text);
    if found {
        note(Redaction::BearerToken);
    }
    let (mut text, found) = redact_api_keys(&text);
    if found {
        note(Redaction::ApiKey);
    }
    if text.len() > MAX_DETAIL_BYTES {
        let mut cut = MAX_DETAIL_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let dropped = text.len() - cut;
        text.truncate(cut);
        text.push_str(&format!("...[cut {dropped} bytes]"));
        note(Redaction::TooLong);
    }
    Sanitized { text, redactions }
}

/// Characters an API key is made of.
fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn redact_api_keys(text: &str) -> (String, bool) {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut found = false;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        // `sk-` starts a key only at a word start ("task-1" is not a key) and only when at
        // least one key character follows.
        let at_word_start = i == 0 || !is_key_byte(bytes[i - 1]);
        if at_word_start
            && bytes[i..].starts_with(b"sk-")
            && bytes.get(i + 3).is_some_and(|&b| is_key_byte(b))
        {
            let mut end = i + 3;
            while end < bytes.len() && is_key_byte(bytes[end]) {
                end += 1;
            }
            // i and end sit next to ASCII bytes, so they are char boundaries.
            out.push_str(&text[copied..i]);
            out.push_str(REDACTED_KEY);
            copied = end;
            i = end;
            found = true;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    (out, found)
}

fn redact_bearer_tokens(text: &str) -> (String, bool) {
    const WORD: &[u8] = b"bearer";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut found = false;
    let mut copied = 0;
    let mut i = 0;
    while i + WORD.len() <= bytes.len() {
        let at_word_start = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if at_word_start && bytes[i..i + WORD.len()].eq_ignore_ascii_case(WORD) {
            let mut start = i + WORD.len();
            let spaces_from = start;
            while start < bytes.len() && (bytes[start] == b' ' || bytes[start] == b'\t') {
                start += 1;
            }
            let mut end = start;
            while end < bytes.len() && !bytes[end].is_ascii_whitespace() {
                end += 1;
            }
            if start > spaces_from && end > start {
                // start follows an ASCII space and end is at ASCII whitespace or the end.
                out.push_str(&text[copied..start]);
                out.push_str(REDACTED_TOKEN);
                copied = end;
                i = end;
                found = true;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    (out, found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ordinary_detail_is_kept_as_is() {
        let s = sanitize_detail("status 429, retry in 1200 ms (task-1, risk-free)");
        assert_eq!(s.text, "status 429, retry in 1200 ms (task-1, risk-free)");
        assert!(s.redactions.is_empty());
    }

    #[test]
    fn api_keys_are_replaced_wherever_they_start_a_word() {
        let s = sanitize_detail("sk-acme-shared failed; key=sk-proj_ABC123 again");
        assert_eq!(s.text, "[redacted key] failed; key=[redacted key] again");
        assert_eq!(s.redactions, vec![Redaction::ApiKey]);
    }

    #[test]
    fn bearer_tokens_are_replaced_in_any_case() {
        let s = sanitize_detail("Authorization: Bearer abc.def/ghi= then bearer   xyz");
        assert_eq!(
            s.text,
            "Authorization: Bearer [redacted] then bearer   [redacted]"
        );
        assert_eq!(s.redactions, vec![Redaction::BearerToken]);
    }

    #[test]
    fn a_json_body_is_dropped_from_its_start() {
        let s = sanitize_detail(r#"400 body {"error":{"message":"secret prompt"}}"#);
        assert_eq!(s.text, "400 body [redacted body]");
        assert_eq!(s.redactions, vec![Redaction::Body]);
    }

    #[test]
    fn a_long_detail_is_cut_at_a_char_boundary() {
        let long = "é".repeat(200); // 400 bytes
        let s = sanitize_detail(&long);
        assert!(s.text.starts_with(&"é".repeat(128)));
        assert!(s.text.ends_with("...[cut 144 bytes]"));
        assert_eq!(s.redactions, vec![Redaction::TooLong]);
    }

    #[test]
    fn a_bare_sk_prefix_or_bearer_word_is_not_a_secret() {
        assert!(sanitize_detail("sk- alone; Bearer").redactions.is_empty());
    }

    #[test]
    fn a_bearer_api_key_is_one_clean_redaction() {
        let s = sanitize_detail("Bearer sk-live-1 and sk-live-2");
        assert_eq!(s.text, "Bearer [redacted] and [redacted key]");
        assert_eq!(
            s.redactions,
            vec![Redaction::BearerToken, Redaction::ApiKey]
        );
    }
}
