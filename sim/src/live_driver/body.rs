//! An attempt's JSON body, rendered straight to the bytes that go on the wire.
//!
//! [`json_body`](super::request::json_body) builds the body as a `serde_json::Value`; the
//! driver needs it once per send as bytes and once as the hash the provider's journal shows
//! it by. Rendering a `Value` costs a map node and a string per key, and the prompt (4
//! characters a token) is copied into it; these structs serialize the same body without
//! either. Their fields are declared in sorted order, as a `Value`'s map keeps its keys, so
//! the bytes are exactly `serde_json::to_vec(&json_body(req))` (a test holds them to it) and
//! their FNV hash is the provider's canonical body hash.

use serde::ser::{Serialize, SerializeSeq, Serializer};
use stampede_provider::model::{Request, RequestRoute};

/// `{"max_tokens", "messages", "model", "stream", "stream_options"?, "user"}`.
#[derive(serde::Serialize)]
struct Chat<'a> {
    max_tokens: u32,
    messages: OneMessage,
    model: &'a str,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    user: &'a str,
}

/// `{"external_ref", "payload", "stream_options"?}`.
#[derive(serde::Serialize)]
struct Record<'a> {
    external_ref: Option<&'a str>,
    payload: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(serde::Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// `[{"content": "aaaa…", "role": "user"}]` with a prompt of `chars` characters, written
/// without building the prompt string.
struct OneMessage {
    chars: usize,
}

struct Message {
    chars: usize,
}

/// The prompt: `chars` times `a`, written in pieces of a fixed run of them.
struct Prompt {
    chars: usize,
}

impl Serialize for OneMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(1))?;
        seq.serialize_element(&Message { chars: self.chars })?;
        seq.end()
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut m = s.serialize_struct("Message", 2)?;
        m.serialize_field("content", &Prompt { chars: self.chars })?;
        m.serialize_field("role", "user")?;
        m.end()
    }
}

impl Serialize for Prompt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Prompts are short (hundreds of characters): one shared run of `a`s serves most,
        // a longer one is built for itself.
        static RUN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        let run = RUN.get_or_init(|| "a".repeat(4_096));
        match run.get(..self.chars) {
            Some(text) => s.serialize_str(text),
            None => s.serialize_str(&"a".repeat(self.chars)),
        }
    }
}

/// Bytes of a body besides its prompt or external reference, rounded up (a chat body's
/// keys, model, hash and options are about 150).
const BODY_AROUND_PROMPT: usize = 192;

/// The body of `req` as it goes on the wire (`None` for bodiless routes), byte for byte
/// `serde_json::to_vec(&json_body(req))`.
pub fn render(req: &Request) -> Option<Vec<u8>> {
    let hash = format!("{:016x}", req.body_hash);
    let stream_options = req.stream_usage.then_some(StreamOptions {
        include_usage: true,
    });
    // Sized for the whole body up front: grown from empty, the prompt alone is copied four
    // times over.
    let written = match req.route {
        RequestRoute::ChatCompletions => {
            let chars = super::request::prompt_chars(req.prompt_tokens);
            let mut out = Vec::with_capacity(chars + BODY_AROUND_PROMPT);
            let chat = Chat {
                max_tokens: req.max_tokens,
                messages: OneMessage { chars },
                model: super::request::model_of(req),
                stream: req.stream,
                stream_options,
                user: &hash,
            };
            serde_json::to_writer(&mut out, &chat).map(|()| out)
        }
        RequestRoute::CreateRecord => {
            let around = req.external_ref.as_ref().map_or(0, String::len);
            let mut out = Vec::with_capacity(around + BODY_AROUND_PROMPT);
            let record = Record {
                external_ref: req.external_ref.as_deref(),
                payload: &hash,
                stream_options,
            };
            serde_json::to_writer(&mut out, &record).map(|()| out)
        }
        _ => return None,
    };
    written.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rendered_body_is_the_json_bodys_bytes() {
        let routes = [
            RequestRoute::ChatCompletions,
            RequestRoute::CreateRecord,
            RequestRoute::Embeddings,
            RequestRoute::GetItem { id: "i1".into() },
        ];
        for route in routes {
            for prompt_tokens in [0u32, 4, 5, 100, 260, 261, 1_000] {
                for (stream, stream_usage) in [(false, false), (true, false), (true, true)] {
                    for external_ref in [None, Some("ref \"1\"\n".to_string())] {
                        let req = Request {
                            route: route.clone(),
                            prompt_tokens,
                            max_tokens: 20,
                            stream,
                            stream_usage,
                            external_ref,
                            body_hash: 0x0123_4567_89ab_cdef,
                            ..Request::default()
                        };
                        let expected = super::super::request::json_body(&req)
                            .map(|v| serde_json::to_vec(&v).unwrap());
                        assert_eq!(render(&req), expected, "{req:?}");
                    }
                }
            }
        }
    }
}
