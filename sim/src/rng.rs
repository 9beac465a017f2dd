//! Independent random streams per component, derived from the scenario seed.
//!
//! Each component (a workload entry, the provider, the client's jitter) draws from its own
//! ChaCha stream keyed by the seed and the component's name, so adding a workload entry or
//! changing the provider's faults does not reshuffle the other components' draws.

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use sha2::{Digest, Sha256};

/// The 32-byte ChaCha seed of one component's stream.
pub fn stream_seed(seed: u64, component: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"stampede/sim-stream/v1");
    hasher.update(seed.to_be_bytes());
    hasher.update((component.len() as u64).to_be_bytes());
    hasher.update(component.as_bytes());
    hasher.finalize().into()
}

/// The ChaCha stream of one component.
pub fn stream(seed: u64, component: &str) -> ChaCha8Rng {
    ChaCha8Rng::from_seed(stream_seed(seed, component))
}

/// A 64-bit seed for a component that takes a plain integer seed (the provider model).
pub fn stream_u64(seed: u64, component: &str) -> u64 {
    let bytes = stream_seed(seed, component);
    let mut first = [0u8; 8];
    first.copy_from_slice(&bytes[..8]);
    u64::from_be_bytes(first)
}

/// Mixes two integers into a well-spread 64-bit value (splitmix64); stable everywhere.
pub fn mix(a: u64, b: u64) -> u64 {
    let mut z = a
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(b)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::RngCore;

    #[test]
    fn streams_are_independent_per_component_and_repeatable() {
        let a1 = stream(7, "workload/0").next_u64();
        let a2 = stream(7, "workload/0").next_u64();
        let b = stream(7, "workload/1").next_u64();
        let c = stream(8, "workload/0").next_u64();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        assert_ne!(a1, c);
    }
}
