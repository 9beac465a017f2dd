//! Figures of a run with several providers: each provider's own counts, and the one thing
//! no single provider can see, a logical request billed at two of them.
//!
//! Each provider identifies logical requests from what reaches its edge: the
//! Idempotency-Key, else the request's fingerprint (method, route template, hash of the
//! canonical payload). A fallback sends the same payload, with the same key when the
//! client sends keys, so the same identity read off two providers' journals is one logical
//! request committed twice. Nothing the client says about itself (`x-stampede-*`) and
//! nothing the harness numbered enters it.

use std::hash::Hash;

use super::decided::Decided;
use rustc_hash::FxHashMap;
use stampede_provider::model::Fnv;
use stampede_reports::{ProviderFigures, Summary};

/// Per-provider counts and cross-provider commits, kept only when a run has several
/// providers.
#[derive(Debug, Default)]
pub struct ProviderTally {
    names: Vec<String>,
    figures: Vec<ProviderFigures>,
    /// What each provider billed, micro-dollars (summed exactly, rounded once at the end).
    billed_micro_usd: Vec<u64>,
    /// Providers (bit per index) that committed each identity (a 64-bit hash of its key or
    /// fingerprint): one entry per logical request committed anywhere.
    committed_at: FxHashMap<u64, u8>,
}

/// What a journal entry adds to the run's duplicates beyond what its provider counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CrossDuplicate {
    /// Whether this commit is of a request another provider already committed.
    pub duplicate: bool,
}

/// The identity the providers give `e`: its Idempotency-Key, else its fingerprint, hashed.
/// A key goes in as `IdempotencyKey` hashes (a derived key as its 16 bytes, equal keys
/// hashing equal), with no text rendered to be hashed; the hash only tells identities apart
/// and is never written out.
fn identity(e: &Decided<'_>) -> u64 {
    match &e.idempotency_key() {
        Some(key) => {
            let mut fnv = Fnv::new().bytes(b"key:");
            key.hash(&mut fnv);
            fnv
        }
        None => e.fingerprint().feed(Fnv::new().bytes(b"fingerprint:")),
    }
    .finish()
}

impl ProviderTally {
    /// Keeps figures for the providers `names` (in index order).
    pub fn new(names: &[String]) -> Self {
        ProviderTally {
            names: names.to_vec(),
            figures: vec![ProviderFigures::default(); names.len()],
            billed_micro_usd: vec![0; names.len()],
            committed_at: FxHashMap::default(),
        }
    }

    /// Whether figures are kept (a run with several providers).
    pub fn active(&self) -> bool {
        !self.names.is_empty()
    }

    /// Entry `e` of provider `ix`'s journal. Returns whether the commit is a cross-provider
    /// duplicate.
    pub fn observe(&mut self, ix: u8, e: &Decided<'_>) -> CrossDuplicate {
        let Some(f) = self.figures.get_mut(usize::from(ix)) else {
            return CrossDuplicate::default();
        };
        f.outbound_attempts += 1;
        f.retries += u64::from(e.logical_attempt() > 1);
        f.provider_logical_requests += u64::from(e.logical_attempt() == 1);
        super::count_by_name(&mut f.status_counts, e.outcome(), 1);
        f.tokens_used += e.tokens_used();
        f.duplicates += u64::from(e.duplicate());
        let mut cross = CrossDuplicate::default();
        if e.committed() && !e.replayed() {
            let bit = 1u8 << ix.min(7);
            let seen = self.committed_at.entry(identity(e)).or_insert(0);
            // A second commit at the same provider is that provider's own duplicate
            // (`e.duplicate()`); only a commit where another provider already committed is
            // new here.
            if *seen & !bit != 0 && *seen & bit == 0 && !e.duplicate() {
                cross.duplicate = true;
                f.cross_provider_duplicates += 1;
            }
            *seen |= bit;
        }
        cross
    }

    /// Adds what provider `ix` billed for one commit (micro-dollars).
    pub fn billed(&mut self, ix: u8, micro_usd: u64) {
        if let Some(b) = self.billed_micro_usd.get_mut(usize::from(ix)) {
            *b += micro_usd;
        }
    }

    /// Writes `by_provider` into the summary.
    pub fn finish(self, summary: &mut Summary) {
        let billed = self.billed_micro_usd;
        for ((name, mut f), micro) in self.names.into_iter().zip(self.figures).zip(billed) {
            f.billed_usd = super::usd(micro);
            summary.by_provider.insert(name, f);
        }
    }
}
