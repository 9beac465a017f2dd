//! A fast hasher for integer ids (job ids), for maps that are only looked up, never iterated
//! into an output: where order matters, callers sort (determinism rule). SipHash's DoS
//! resistance buys nothing for ids the driver assigns, and costs on every lookup.

use std::hash::{BuildHasherDefault, Hasher};

/// Fibonacci hashing of a `u64` (multiply by 2^64 / golden ratio), folded so the high bits,
/// which carry the mixing, reach the bucket index.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, id: u64) {
        let mixed = (self.0 ^ id).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = mixed ^ (mixed >> 32);
    }
}

/// `HashMap<JobId, V, IdHash>`: a map keyed by ids.
pub(crate) type IdHash = BuildHasherDefault<IdHasher>;
