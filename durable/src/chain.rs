//! The hash chain's bytes: how a record is hashed and how it is laid out on a line. The
//! writer and the verifier both go through here, so they cannot drift apart.
//!
//! # Record line
//!
//! One record per line, terminated by `\n`, exactly:
//!
//! ```text
//! {"seq":N,"prev":"<64 hex>","event":<canonical event JSON>,"hash":"<64 hex>"}
//! ```
//!
//! - `seq` counts records from 1 (so a fresh trail has record N on line N).
//! - `prev` is the `hash` of the record before, or 64 zeros ([`GENESIS_PREV`]) for seq 1.
//! - `hash` is the lowercase hex SHA-256 of the record's canonical bytes (below).
//!
//! # Canonical bytes
//!
//! ```text
//! "stampede-audit-v1\n" ++ decimal(seq) ++ "\n" ++ prev ++ "\n" ++ canonical_json(event)
//! ```
//!
//! `canonical_json` is JSON with no whitespace, object keys sorted by their UTF-8 bytes at
//! every depth, arrays in order, strings escaped as serde_json escapes them (`"`, `\`, control
//! characters; other characters as UTF-8), integers in decimal and other numbers as serde_json
//! prints them. The verifier re-derives these bytes from the parsed line, so what is checked
//! is the record's content: re-indenting a line does not break it, changing any value does.
//!
//! A chain without a secret key proves order and completeness only against someone who does
//! not recompute every later hash; keeping the head ([`ChainHead`]) somewhere else (the
//! ledger, a CI log) and checking against it closes that gap and also catches a tail cut at
//! a line boundary. The writer keeps it beside the trail too (`FILE.head`, see
//! [`crate::head_file`]).
//!
//! # Keyed mode
//!
//! With `STAMPEDE_AUDIT_KEY` set ([`ChainKey::from_env`]), `hash` is the HMAC-SHA256 of
//! `"stampede-audit-hmac-v1\n" ++ decimal(seq) ++ "\n" ++ prev ++ "\n" ++ canonical_json(event)`
//! under that key: a rewritten chain cannot be recomputed without the key, and the head file
//! carries a MAC too, so it cannot be moved back to match a cut trail.

use std::fmt;
use std::str::FromStr;

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// `prev` of the first record: 64 zeros.
pub const GENESIS_PREV: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Prefix of the canonical bytes: names the format so a future version cannot collide.
const DOMAIN: &str = "stampede-audit-v1\n";

/// Prefix of the canonical bytes under a key: a keyed hash never equals an unkeyed one.
const DOMAIN_KEYED: &str = "stampede-audit-hmac-v1\n";

/// The environment variable whose value, when set and not empty, keys the chain.
pub const AUDIT_KEY_ENV: &str = "STAMPEDE_AUDIT_KEY";

/// How record hashes are computed: SHA-256 of the canonical bytes, or HMAC-SHA256 of them
/// under a secret key (then nobody without the key can recompute a rewritten chain).
#[derive(Clone, Default, PartialEq, Eq)]
pub enum ChainKey {
    /// Plain SHA-256 (the default).
    #[default]
    Unkeyed,
    /// HMAC-SHA256 under these key bytes.
    Hmac(Vec<u8>),
}

impl fmt::Debug for ChainKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unkeyed => f.write_str("Unkeyed"),
            Self::Hmac(_) => f.write_str("Hmac(..)"),
        }
    }
}

impl ChainKey {
    /// The key in `STAMPEDE_AUDIT_KEY`, or unkeyed when it is unset or empty.
    pub fn from_env() -> Self {
        match std::env::var_os(AUDIT_KEY_ENV) {
            Some(v) if !v.is_empty() => Self::Hmac(v.as_encoded_bytes().to_vec()),
            _ => Self::Unkeyed,
        }
    }

    /// Whether hashes are HMACs.
    pub fn is_keyed(&self) -> bool {
        matches!(self, Self::Hmac(_))
    }

    /// A record's hash under this key (see [`record_hash`] for the unkeyed one).
    pub fn record_hash(&self, seq: u64, prev: &str, canonical_event: &str) -> String {
        match self {
            Self::Unkeyed => record_hash(seq, prev, canonical_event),
            Self::Hmac(key) => {
                let mut mac = hmac_sha256(key);
                mac.update(DOMAIN_KEYED.as_bytes());
                mac.update(seq.to_string().as_bytes());
                mac.update(b"\n");
                mac.update(prev.as_bytes());
                mac.update(b"\n");
                mac.update(canonical_event.as_bytes());
                hex(&mac.finalize().into_bytes())
            }
        }
    }

    /// HMAC-SHA256 of `bytes` under the key, hex; `None` when unkeyed.
    pub fn mac(&self, bytes: &[u8]) -> Option<String> {
        match self {
            Self::Unkeyed => None,
            Self::Hmac(key) => {
                let mut mac = hmac_sha256(key);
                mac.update(bytes);
                Some(hex(&mac.finalize().into_bytes()))
            }
        }
    }
}

fn hmac_sha256(key: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length; this cannot fail.
    <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!())
}

/// Where a chain ends: the last record's seq and hash (seq 0 and [`GENESIS_PREV`] when empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// Number of the last record (records count from 1).
    pub seq: u64,
    /// Its hash, 64 lowercase hex digits.
    pub hash: String,
}

impl ChainHead {
    /// The head of an empty trail.
    pub fn genesis() -> Self {
        Self {
            seq: 0,
            hash: GENESIS_PREV.to_string(),
        }
    }
}

impl fmt::Display for ChainHead {
    /// `SEQ:HASH`, the form [`ChainHead::from_str`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.seq, self.hash)
    }
}

impl FromStr for ChainHead {
    type Err = String;

    /// Reads `SEQ:HASH` (as printed by `audit verify`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (seq, hash) = text
            .split_once(':')
            .ok_or_else(|| format!("{text:?} is not SEQ:HASH (e.g. 12:ab34...)"))?;
        let seq = seq
            .parse()
            .map_err(|_| format!("{seq:?} in {text:?} is not a record number"))?;
        if !is_hash(hash) {
            return Err(format!(
                "{hash:?} in {text:?} is not 64 lowercase hex digits"
            ));
        }
        Ok(Self {
            seq,
            hash: hash.to_string(),
        })
    }
}

/// Whether `text` is 64 lowercase hex digits.
pub(crate) fn is_hash(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The canonical JSON text of `value` (see the module docs).
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sorted explicitly: serde_json's map order depends on a cargo feature another
            // crate in the build could switch on.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    // serde_json's string escaping cannot fail for a &str.
    match serde_json::to_string(s) {
        Ok(quoted) => out.push_str(&quoted),
        Err(_) => out.push_str("\"\""),
    }
}

/// The record hash: lowercase hex SHA-256 of the canonical bytes.
pub fn record_hash(seq: u64, prev: &str, canonical_event: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(DOMAIN.as_bytes());
    hasher.update(seq.to_string().as_bytes());
    hasher.update(b"\n");
    hasher.update(prev.as_bytes());
    hasher.update(b"\n");
    hasher.update(canonical_event.as_bytes());
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 0x0f) as usize] as char);
    }
    out
}

/// The full line for a record, with its trailing `\n`.
pub(crate) fn format_line(seq: u64, prev: &str, canonical_event: &str, hash: &str) -> String {
    format!(
        "{{\"seq\":{seq},\"prev\":\"{prev}\",\"event\":{canonical_event},\"hash\":\"{hash}\"}}\n"
    )
}

/// A line that has the record shape; not yet checked against the chain.
#[derive(Debug, Clone)]
pub(crate) struct ParsedRecord {
    pub seq: u64,
    pub prev: String,
    pub stored_hash: String,
    /// Hash recomputed from seq, prev and the event as found.
    pub computed_hash: String,
}

/// Parses one line (without its `\n`) into a record, or says why it is not one.
pub(crate) fn parse_line(line: &[u8], key: &ChainKey) -> Result<ParsedRecord, String> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Err("the line is empty: a trail holds one record on every line".into());
    }
    let value: Value = serde_json::from_slice(line).map_err(|e| format!("not JSON ({e})"))?;
    let Value::Object(map) = value else {
        return Err("not a JSON object".into());
    };
    let mut extra: Vec<&String> = map
        .keys()
        .filter(|k| !matches!(k.as_str(), "seq" | "prev" | "event" | "hash"))
        .collect();
    if !extra.is_empty() {
        extra.sort();
        return Err(format!("unexpected field(s) {extra:?}"));
    }
    let seq = map
        .get("seq")
        .and_then(Value::as_u64)
        .ok_or("`seq` is missing or not a non-negative integer")?;
    let prev = hash_field(&map, "prev")?;
    let stored_hash = hash_field(&map, "hash")?;
    let event = map.get("event").ok_or("`event` is missing")?;
    if !event.is_object() {
        return Err("`event` is not an object".into());
    }
    let computed_hash = key.record_hash(seq, &prev, &canonical_json(event));
    Ok(ParsedRecord {
        seq,
        prev,
        stored_hash,
        computed_hash,
    })
}

fn hash_field(map: &serde_json::Map<String, Value>, name: &str) -> Result<String, String> {
    match map.get(name).and_then(Value::as_str) {
        Some(text) if is_hash(text) => Ok(text.to_string()),
        Some(_) => Err(format!("`{name}` is not 64 lowercase hex digits")),
        None => Err(format!("`{name}` is missing or not a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth_and_drops_whitespace() {
        let value = json!({"b": 1, "a": {"z": [true, null], "y": "q\"\n"}});
        assert_eq!(
            canonical_json(&value),
            r#"{"a":{"y":"q\"\n","z":[true,null]},"b":1}"#
        );
    }

    #[test]
    fn record_hash_matches_sha256_of_the_documented_bytes() {
        let event = r#"{"a":1}"#;
        let expected = hex(&Sha256::digest(
            format!("stampede-audit-v1\n7\n{GENESIS_PREV}\n{event}").as_bytes(),
        ));
        assert_eq!(record_hash(7, GENESIS_PREV, event), expected);
        assert!(is_hash(&expected));
    }

    #[test]
    fn a_formatted_line_parses_back_with_a_matching_hash() {
        let event = r#"{"a":1}"#;
        let hash = record_hash(1, GENESIS_PREV, event);
        let line = format_line(1, GENESIS_PREV, event, &hash);
        let parsed = parse_line(line.trim_end().as_bytes(), &ChainKey::Unkeyed).unwrap();
        assert_eq!((parsed.seq, parsed.prev.as_str()), (1, GENESIS_PREV));
        assert_eq!(parsed.stored_hash, parsed.computed_hash);
    }

    #[test]
    fn chain_head_round_trips_through_its_text_form() {
        let head = ChainHead {
            seq: 12,
            hash: record_hash(12, GENESIS_PREV, "{}"),
        };
        assert_eq!(head.to_string().parse::<ChainHead>().unwrap(), head);
        assert!("12".parse::<ChainHead>().is_err());
        assert!("x:00".parse::<ChainHead>().is_err());
    }
}
