//! The provider's id of an operation or record (`chatcmpl-123`, `rec_42`, `msg_01XF...`).
//!
//! An id travels from the answer that names it to the action's ledger entry and on to its
//! terminal: three copies of every successful action's id. Held as a `String` each copy was
//! a heap allocation; held here, an id of up to 24 bytes (every id the fake provider makes)
//! lives in place, in as many bytes as a `String`, and a longer one (a real provider's
//! 38-byte `chatcmpl-...`) falls back to the heap. Nothing is ever truncated.

use std::fmt;
use std::ops::Deref;

use compact_str::{CompactString, ToCompactString};
use serde::{Deserialize, Serialize};

/// A provider's id of an operation or record: text, compared and serialized as text.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OperationId(CompactString);

impl OperationId {
    /// The id `value` renders to (`Display`), without a heap allocation when it is at most
    /// 24 bytes long.
    #[must_use]
    pub fn rendered(value: &impl fmt::Display) -> Self {
        Self(value.to_compact_string())
    }

    /// `prefix` then `number` in decimal (`chatcmpl-42`): the text
    /// `rendered(&format_args!("{prefix}{number}"))` makes, written without the formatting
    /// machinery, which cost about 500 instructions an id where this costs about a tenth (a
    /// completion's id is made for every successful attempt). In place when at most 24
    /// bytes long, as `rendered`.
    #[must_use]
    pub fn numbered(prefix: &str, number: u64) -> Self {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(number);
        let mut text = CompactString::with_capacity(prefix.len() + digits.len());
        text.push_str(prefix);
        text.push_str(digits);
        Self(text)
    }

    /// The id as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl Deref for OperationId {
    type Target = str;

    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl AsRef<str> for OperationId {
    fn as_ref(&self) -> &str {
        self.0.as_str()
    }
}

impl From<&str> for OperationId {
    fn from(text: &str) -> Self {
        Self(CompactString::new(text))
    }
}

impl From<String> for OperationId {
    fn from(text: String) -> Self {
        Self(CompactString::from(text))
    }
}

impl From<OperationId> for String {
    fn from(id: OperationId) -> Self {
        id.0.into_string()
    }
}

impl PartialEq<str> for OperationId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for OperationId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ids_live_in_place_and_long_ones_are_kept_whole() {
        let short = OperationId::rendered(&format_args!("chatcmpl-{}", 123_456_789_012_345u64));
        assert_eq!(short.as_str(), "chatcmpl-123456789012345");
        assert!(!short.0.is_heap_allocated(), "24 bytes fit in place");
        let long = OperationId::from("chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012");
        assert_eq!(&*long, "chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012");
        assert!(long.0.is_heap_allocated());
        assert_eq!(std::mem::size_of::<Option<OperationId>>(), 24);
    }

    #[test]
    fn a_numbered_id_is_the_text_its_rendering_gives() {
        for number in [
            0,
            1,
            9,
            10,
            42,
            999_999,
            1_000_000,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let rendered = OperationId::rendered(&format_args!("chatcmpl-{number}"));
            let numbered = OperationId::numbered("chatcmpl-", number);
            assert_eq!(numbered, rendered);
            assert_eq!(
                numbered.0.is_heap_allocated(),
                rendered.0.is_heap_allocated()
            );
        }
        assert_eq!(OperationId::numbered("", 7).as_str(), "7");
        let long = OperationId::numbered("a-prefix-longer-than-24-bytes-", 12);
        assert_eq!(long.as_str(), "a-prefix-longer-than-24-bytes-12");
    }

    #[test]
    fn serializes_as_the_plain_text_it_holds() {
        let id = OperationId::from("rec_42");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"rec_42\"");
        let back: OperationId = serde_json::from_str("\"rec_42\"").unwrap();
        assert_eq!(back, id);
        assert_eq!(format!("{id} {id:?}"), "rec_42 \"rec_42\"");
    }
}
