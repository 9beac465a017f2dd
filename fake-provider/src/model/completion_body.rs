//! A chat completion's body as numbers, and the two ways it is written: as a JSON value
//! (what the model's answer carries) and straight as JSON text (what the HTTP server sends
//! for a plain completion, with no value built, serialized and dropped for it).

use super::headers::number_str;
use serde_json::{json, Value};

/// The model an answer names when its request named none: a provider that lists no models
/// serves any name, and an answer names the one it was asked for, as the real APIs do.
pub const UNNAMED_MODEL: &str = "stampede-fake";

/// Everything a chat completion's body says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletionBody {
    /// The seq of the attempt that committed it: the body's `id` is `chatcmpl-<id_seq>`.
    pub id_seq: u64,
    /// `created`: Unix seconds (see `ProviderModel::completion_created`).
    pub created: u64,
    /// `usage.prompt_tokens`.
    pub prompt_tokens: u32,
    /// `usage.completion_tokens`.
    pub completion_tokens: u32,
    /// The attempt's `max_tokens`: a completion that long finished for `length`, any
    /// shorter one for `stop`.
    pub max_tokens: u32,
}

impl CompletionBody {
    /// `finish_reason`.
    fn finish_reason(&self) -> &'static str {
        if self.completion_tokens == self.max_tokens {
            "length"
        } else {
            "stop"
        }
    }

    /// The body as a JSON value (OpenAI's `chat.completion`), answered by `model` (the
    /// model the request named, as the real API echoes it).
    pub fn to_value(&self, model: &str) -> Value {
        let (id_seq, completion) = (self.id_seq, self.completion_tokens);
        json!({
            "id": format!("chatcmpl-{id_seq}"),
            "object": "chat.completion",
            "created": self.created,
            "model": model,
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": format!("stampede fake completion #{id_seq} ({completion} tokens)") },
                "finish_reason": self.finish_reason(),
            }],
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": completion,
                "total_tokens": u64::from(self.prompt_tokens) + u64::from(completion),
            },
        })
    }

    /// Appends the body as `serde_json::to_writer(out, &self.to_value(model))` writes it,
    /// byte for byte: keys in the value's (sorted) order, no whitespace, and the model's
    /// name escaped as serde_json escapes it (no other string in it needs escaping).
    pub fn write_json(&self, out: &mut Vec<u8>, model: &str) {
        let mut digits = [0u8; 20];
        let mut number = |out: &mut Vec<u8>, v: u64| {
            out.extend_from_slice(number_str(&mut digits, v).as_bytes());
        };
        out.extend_from_slice(b"{\"choices\":[{\"finish_reason\":\"");
        out.extend_from_slice(self.finish_reason().as_bytes());
        out.extend_from_slice(
            b"\",\"index\":0,\"message\":{\"content\":\"stampede fake completion #",
        );
        number(out, self.id_seq);
        out.extend_from_slice(b" (");
        number(out, u64::from(self.completion_tokens));
        out.extend_from_slice(b" tokens)\",\"role\":\"assistant\"}}],\"created\":");
        number(out, self.created);
        out.extend_from_slice(b",\"id\":\"chatcmpl-");
        number(out, self.id_seq);
        out.extend_from_slice(b"\",\"model\":");
        // A `String`'s serialization cannot fail into a `Vec`.
        let _ = serde_json::to_writer(&mut *out, model);
        out.extend_from_slice(b",\"object\":\"chat.completion\",\"usage\":{\"completion_tokens\":");
        number(out, u64::from(self.completion_tokens));
        out.extend_from_slice(b",\"prompt_tokens\":");
        number(out, u64::from(self.prompt_tokens));
        out.extend_from_slice(b",\"total_tokens\":");
        number(
            out,
            u64::from(self.prompt_tokens) + u64::from(self.completion_tokens),
        );
        out.extend_from_slice(b"}}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text written directly is what serializing the value writes, for numbers of every
    /// width and both finish reasons.
    #[test]
    fn written_json_is_the_serialized_value() {
        let widths = [0, 1, 9, 10, 4_294, 65_536, 999_999_999, u64::from(u32::MAX)];
        let mut compared = 0;
        for &id_seq in &[1, 7, 10, 12_345, u64::MAX] {
            for &created in &[0, 1_796_166_632, u64::MAX] {
                for &p in &widths {
                    for &c in &widths {
                        let (p, c) = (p as u32, c as u32);
                        for max_tokens in [c, c.wrapping_add(1)] {
                            let body = CompletionBody {
                                id_seq,
                                created,
                                prompt_tokens: p,
                                completion_tokens: c,
                                max_tokens,
                            };
                            for model in ["stampede-fake", "gpt-4o", "a \"quoted\"\\ name\u{1}"] {
                                let mut written = Vec::new();
                                body.write_json(&mut written, model);
                                let serialized = serde_json::to_vec(&body.to_value(model)).unwrap();
                                assert_eq!(
                                    String::from_utf8_lossy(&written),
                                    String::from_utf8_lossy(&serialized)
                                );
                                compared += 1;
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(compared, 5 * 3 * 8 * 8 * 2 * 3);
    }
}
