//! Independent seeded random streams, one per model component.
//!
//! Each stream's key is SHA-256 of a label and the scenario seed, so adding draws to one
//! component (say, a new fault rule) never shifts another component's draws (latency).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

/// The fault schedule's stream (probabilities).
pub(crate) const FAULTS: &str = "stampede-provider/faults";
/// The latency stream.
pub(crate) const LATENCY: &str = "stampede-provider/latency";
/// The stream of completion sizes.
pub(crate) const USAGE: &str = "stampede-provider/usage";

/// A ChaCha stream derived from `seed` for the component named `label`.
pub(crate) fn derive(seed: u64, label: &str) -> ChaCha8Rng {
    let mut h = Sha256::new();
    h.update(label.as_bytes());
    h.update(seed.to_le_bytes());
    ChaCha8Rng::from_seed(h.finalize().into())
}
