//! A fast hasher for integer ids (job ids) and short names, for maps that are only looked up, never iterated
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

    /// Bytes (names such as task names) are mixed eight at a time; the length goes into the
    /// last word so `"a"` and `"a\0"` differ.
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut eight = [0u8; 8];
            eight.copy_from_slice(word);
            self.write_u64(u64::from_le_bytes(eight));
        }
        let rest = words.remainder();
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        self.write_u64(u64::from_le_bytes(last) ^ ((bytes.len() as u64) << 56));
    }

    /// `str` hashing ends with one `0xff` byte: mixed as a word, not as a byte slice.
    fn write_u8(&mut self, byte: u8) {
        self.write_u64(u64::from(byte) | 1 << 8);
    }

    fn write_u64(&mut self, id: u64) {
        let mixed = (self.0 ^ id).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = mixed ^ (mixed >> 32);
    }
}

/// `HashMap<JobId, V, IdHash>`: a map keyed by ids.
pub(crate) type IdHash = BuildHasherDefault<IdHasher>;

#[cfg(test)]
mod tests {
    use super::IdHash;
    use std::hash::BuildHasher;

    #[test]
    fn names_hash_apart_by_content_and_length() {
        let hash = |name: &str| IdHash::default().hash_one(name);
        assert_eq!(hash("task-1"), hash("task-1"));
        let names = [
            "",
            "a",
            "a\0",
            "task-1",
            "task-2",
            "task-10",
            "tenant-acme-task-123456",
        ];
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                assert_ne!(hash(a), hash(b), "{a:?} vs {b:?}");
            }
        }
    }
}
