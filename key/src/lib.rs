//! The `Idempotency-Key` of one logical action, as a value both sides hold.
//!
//! A key the client derives is `"stk_"` and 32 lower-case hex digits: 16 bytes of a hash.
//! Held as text, each action's key was a shared string on the heap (an allocation and a
//! free per action, and a cache miss on its reference count whenever an attempt, a journal
//! entry or a ledger entry took a copy). [`IdempotencyKey`] holds such a key as its 16
//! bytes, in place and copied without touching the heap, and renders the text only where
//! it is read: on the wire, in a report, in a ledger row.
//!
//! Any other text (a key a caller or an SDK chose) is kept as it is, shared. The text a
//! key renders is always the text it was made from, and two keys are equal exactly when
//! their texts are: a derived key's text is parsed back to its 16 bytes wherever it
//! arrives (an HTTP header, a ledger row, a JSON file), so the two forms never both stand
//! for one key.
//!
//! Both the client's core and the provider depend on this crate and on nothing else of
//! each other's.
#![deny(missing_docs)]

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What every derived key's text starts with.
pub const DERIVED_PREFIX: &str = "stk_";

/// Bytes of a derived key's text: the prefix and two hex digits per byte.
pub const DERIVED_LEN: usize = DERIVED_PREFIX.len() + 2 * 16;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// An idempotency key: 24 bytes, a derived key held in place, any other text shared.
#[derive(Clone)]
pub struct IdempotencyKey(Repr);

#[derive(Clone)]
enum Repr {
    /// `"stk_"` and these 16 bytes in lower-case hex.
    Derived(Digest),
    /// Any other text.
    Text(Arc<str>),
}

/// A derived key's 16 bytes, aligned to 8 so they sit after the tag as two words. Unaligned
/// (at offset 1, after a one-byte tag), a copy of the key was moved in odd-sized pieces that
/// the next read could not take from the store buffer: perf put one such stall at 2% of
/// the core's cycle, in the copy of an attempt's key.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(align(8))]
struct Digest([u8; 16]);

impl IdempotencyKey {
    /// The key whose text is `"stk_"` and `bytes` in lower-case hex.
    #[must_use]
    pub const fn derived(bytes: [u8; 16]) -> Self {
        IdempotencyKey(Repr::Derived(Digest(bytes)))
    }

    /// The key whose text is `text`. A derived key's text (`"stk_"` and 32 lower-case hex
    /// digits) is held as its 16 bytes; any other is shared as it is.
    #[must_use]
    pub fn new(text: &str) -> Self {
        match parse_derived(text) {
            Some(bytes) => Self::derived(bytes),
            None => IdempotencyKey(Repr::Text(Arc::from(text))),
        }
    }

    /// The 16 bytes of a derived key; `None` for any other text.
    #[must_use]
    pub fn derived_bytes(&self) -> Option<&[u8; 16]> {
        match &self.0 {
            Repr::Derived(Digest(bytes)) => Some(bytes),
            Repr::Text(_) => None,
        }
    }

    /// The key's text: rendered on the stack for a derived key, borrowed for any other.
    #[must_use]
    pub fn text(&self) -> KeyText<'_> {
        match &self.0 {
            Repr::Derived(Digest(bytes)) => {
                let mut text = [0u8; DERIVED_LEN];
                text[..DERIVED_PREFIX.len()].copy_from_slice(DERIVED_PREFIX.as_bytes());
                for (i, byte) in bytes.iter().enumerate() {
                    let at = DERIVED_PREFIX.len() + 2 * i;
                    text[at] = HEX[usize::from(byte >> 4)];
                    text[at + 1] = HEX[usize::from(byte & 0x0f)];
                }
                KeyText(TextRepr::Derived(text))
            }
            Repr::Text(text) => KeyText(TextRepr::Borrowed(text)),
        }
    }

    /// Bytes of its text.
    #[must_use]
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Derived(_) => DERIVED_LEN,
            Repr::Text(text) => text.len(),
        }
    }

    /// Whether its text is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The 16 bytes of `text` if it is a derived key's text.
fn parse_derived(text: &str) -> Option<[u8; 16]> {
    let hex = text.strip_prefix(DERIVED_PREFIX)?.as_bytes();
    if hex.len() != 32 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        // Upper case is another text: it would not render back as it came.
        _ => None,
    };
    let mut bytes = [0u8; 16];
    for (byte, pair) in bytes.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(bytes)
}

/// A key's text, rendered where it is read; dereferences to `str`.
#[derive(Clone, Copy)]
pub struct KeyText<'a>(TextRepr<'a>);

#[derive(Clone, Copy)]
enum TextRepr<'a> {
    Derived([u8; DERIVED_LEN]),
    Borrowed(&'a str),
}

impl Deref for KeyText<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match &self.0 {
            // The prefix and hex digits are ASCII, so this never falls back.
            TextRepr::Derived(text) => std::str::from_utf8(text).unwrap_or_default(),
            TextRepr::Borrowed(text) => text,
        }
    }
}

impl fmt::Display for KeyText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl fmt::Debug for KeyText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.text(), f)
    }
}

// Equal exactly when the texts are: a derived key's text is always held as its bytes (see
// `new`), so the two forms never stand for one key and comparing forms first is exact.
impl PartialEq for IdempotencyKey {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Derived(a), Repr::Derived(b)) => a == b,
            (Repr::Text(a), Repr::Text(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for IdempotencyKey {}

impl PartialEq<str> for IdempotencyKey {
    fn eq(&self, other: &str) -> bool {
        match &self.0 {
            Repr::Derived(Digest(bytes)) => parse_derived(other).as_ref() == Some(bytes),
            Repr::Text(text) => &**text == other,
        }
    }
}

impl PartialEq<&str> for IdempotencyKey {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl Hash for IdempotencyKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match &self.0 {
            Repr::Derived(Digest(bytes)) => {
                state.write_u8(0);
                bytes.hash(state);
            }
            Repr::Text(text) => {
                state.write_u8(1);
                text.hash(state);
            }
        }
    }
}

/// In the order of their texts, as keys held as text sorted before.
impl Ord for IdempotencyKey {
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.0, &other.0) {
            // Same prefix, and lower-case hex sorts as the bytes it spells.
            (Repr::Derived(a), Repr::Derived(b)) => a.cmp(b),
            _ => (*self.text()).cmp(&*other.text()),
        }
    }
}

impl PartialOrd for IdempotencyKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl From<&str> for IdempotencyKey {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl From<String> for IdempotencyKey {
    fn from(text: String) -> Self {
        Self::new(&text)
    }
}

impl From<Arc<str>> for IdempotencyKey {
    fn from(text: Arc<str>) -> Self {
        match parse_derived(&text) {
            Some(bytes) => Self::derived(bytes),
            None => IdempotencyKey(Repr::Text(text)),
        }
    }
}

impl From<&IdempotencyKey> for String {
    fn from(key: &IdempotencyKey) -> Self {
        (*key.text()).to_owned()
    }
}

/// Serialized as its text, as a key held as a string was.
impl Serialize for IdempotencyKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for IdempotencyKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = IdempotencyKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an idempotency key (a string)")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<IdempotencyKey, E> {
                Ok(IdempotencyKey::new(text))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DERIVED: &str = "stk_bf0be76b261c30fff6490f34c5ab91c6";

    #[test]
    fn a_derived_key_is_held_as_its_bytes_and_renders_back_as_it_came() {
        let key = IdempotencyKey::new(DERIVED);
        let bytes = *key.derived_bytes().expect("held as bytes");
        assert_eq!(bytes[0], 0xbf);
        assert_eq!(bytes[15], 0xc6);
        assert_eq!(&*key.text(), DERIVED);
        assert_eq!(key.to_string(), DERIVED);
        assert_eq!(key.len(), DERIVED.len());
        assert_eq!(IdempotencyKey::derived(bytes), key);
        assert_eq!(key, *DERIVED);
    }

    #[test]
    fn any_other_text_is_kept_as_it_is() {
        for text in [
            "",
            "k1",
            "stk_",
            "stk_BF0BE76B261C30FFF6490F34C5AB91C6",
            "stk_bf0be76b261c30fff6490f34c5ab91c",
            "stk_bf0be76b261c30fff6490f34c5ab91c6a",
            "stk_bf0be76b261c30fff6490f34c5ab91cg",
            "STK_bf0be76b261c30fff6490f34c5ab91c6",
            "clé-ü",
        ] {
            let key = IdempotencyKey::new(text);
            assert!(key.derived_bytes().is_none(), "{text}");
            assert_eq!(&*key.text(), text);
            assert_eq!(key.len(), text.len());
            assert_eq!(key, *text);
            assert_ne!(key, IdempotencyKey::new(DERIVED));
        }
    }

    #[test]
    fn keys_are_equal_hashed_and_ordered_as_their_texts() {
        let texts = [
            "a",
            "stk_00000000000000000000000000000000",
            "stk_0000000000000000000000000000000f",
            "stk_0",
            "stk_f0000000000000000000000000000000",
            "stk_g",
            "z",
        ];
        let hash = |k: &IdempotencyKey| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            k.hash(&mut h);
            h.finish()
        };
        for a in texts {
            for b in texts {
                let (ka, kb) = (IdempotencyKey::new(a), IdempotencyKey::new(b));
                assert_eq!(ka.cmp(&kb), a.cmp(b), "{a} {b}");
                assert_eq!(ka == kb, a == b, "{a} {b}");
                if a == b {
                    assert_eq!(hash(&ka), hash(&kb));
                }
            }
        }
        let shared: Arc<str> = Arc::from(DERIVED);
        assert_eq!(IdempotencyKey::from(shared), IdempotencyKey::new(DERIVED));
    }

    #[test]
    fn serialized_as_its_text() {
        for text in [DERIVED, "k1"] {
            let key = IdempotencyKey::new(text);
            let json = serde_json::to_string(&key).expect("serializes");
            assert_eq!(json, serde_json::to_string(text).expect("serializes"));
            let back: IdempotencyKey = serde_json::from_str(&json).expect("deserializes");
            assert_eq!(back, key);
            assert_eq!(back.derived_bytes().is_some(), text == DERIVED);
        }
        let err = serde_json::from_str::<IdempotencyKey>("7").expect_err("not a string");
        assert!(err.to_string().contains("an idempotency key"), "{err}");
    }

    #[test]
    fn a_key_is_as_large_as_three_words() {
        assert_eq!(std::mem::size_of::<IdempotencyKey>(), 24);
        assert_eq!(std::mem::size_of::<Option<IdempotencyKey>>(), 24);
    }
}
