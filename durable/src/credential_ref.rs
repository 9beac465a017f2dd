//! What the ledger stores instead of an API key: a reference that names the key without
//! holding it.
//!
//! `credref:v1:<masked>:<hash>`: the key masked as the provider's journal masks it (`sk-...`
//! and its last four characters) and the first 16 bytes of SHA-256 over a fixed domain tag
//! and the key, in hex. The same key always gives the same reference, so a restarted runner
//! that knows the scenario's credentials resolves it back ([`CredentialRefs::resolve`]).

use std::collections::HashMap;

use sha2::{Digest, Sha256};

/// How every reference starts.
pub const PREFIX: &str = "credref:v1:";

/// The key as it may be shown, as the provider's journal shows it (`stampede_secret::mask`).
pub use stampede_secret::mask;

/// The stable hash part of a key's reference (32 hex digits).
pub fn key_hash(key: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"stampede-credential-ref-v1\0");
    h.update(key.as_bytes());
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The reference stored for `key`. Masks and hashes hold no `:`, so the hash is the text
/// after the last one.
pub fn reference(key: &str) -> String {
    format!("{PREFIX}{}:{}", mask(key).replace(':', "_"), key_hash(key))
}

/// Whether `text` is a reference rather than a key.
pub fn is_reference(text: &str) -> bool {
    text.starts_with(PREFIX)
}

/// The keys a ledger can resolve references back to, by hash.
#[derive(Debug, Default, Clone)]
pub struct CredentialRefs {
    by_hash: HashMap<String, String>,
}

impl CredentialRefs {
    /// Makes `key` resolvable.
    pub fn add(&mut self, key: &str) {
        if !key.is_empty() && !is_reference(key) {
            self.by_hash.insert(key_hash(key), key.to_string());
        }
    }

    /// The key behind a reference, when known; anything that is not a reference as it is.
    /// An unknown reference stays a reference (a provider answers it 401, as it would a key
    /// the scenario no longer lists).
    pub fn resolve(&self, text: &str) -> String {
        if !is_reference(text) {
            return text.to_string();
        }
        text.rsplit(':')
            .next()
            .and_then(|hash| self.by_hash.get(hash))
            .cloned()
            .unwrap_or_else(|| text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_hides_the_key_and_resolves_back() {
        let key = "sk-live-0123456789abcdef";
        let r = reference(key);
        assert!(!r.contains(key));
        assert!(!r.contains("0123456789ab"));
        assert!(r.starts_with("credref:v1:sk-...cdef:"));
        let mut refs = CredentialRefs::default();
        assert_eq!(refs.resolve(&r), r, "unknown until added");
        refs.add(key);
        assert_eq!(refs.resolve(&r), key);
        assert_eq!(refs.resolve("sk-plain"), "sk-plain");
        assert_eq!(reference(key), r, "stable");
        assert_ne!(reference("sk-live-0123456789abcdeg"), r);
    }
}
