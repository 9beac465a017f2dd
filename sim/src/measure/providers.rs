//! Figures of a run with several providers: each provider's own counts, and the one thing
//! no single provider can see, a logical request billed at two of them.
//!
//! Each provider identifies logical requests from what reaches *its* edge; across providers
//! only the harness knows that two attempts are one logical request, because it sent both
//! for one action. That knowledge is the harness's own record of what it sent, never a
//! header the client wrote about itself.

use rustc_hash::FxHashMap;
use stampede_provider::model::JournalEntry;
use stampede_reports::{ProviderFigures, Summary};

/// Per-provider counts and cross-provider commits, kept only when a run has several
/// providers.
#[derive(Debug, Default)]
pub struct ProviderTally {
    names: Vec<String>,
    figures: Vec<ProviderFigures>,
    /// What each provider billed, micro-dollars (summed exactly, rounded once at the end).
    billed_micro_usd: Vec<u64>,
    /// Providers (bit per index) that committed each action that committed anywhere: at
    /// most one entry per action that completed, so memory grows with the run's actions.
    committed_at: FxHashMap<u64, u8>,
}

/// What a journal entry adds to the run's duplicates beyond what its provider counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CrossDuplicate {
    /// Whether this commit is of an action another provider already committed.
    pub duplicate: bool,
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

    /// Entry `e` of provider `ix`'s journal, sent by the harness for `action` (0 when it
    /// cannot know). Returns whether the commit is a cross-provider duplicate.
    pub fn observe(&mut self, ix: u8, action: u64, e: &JournalEntry) -> CrossDuplicate {
        let Some(f) = self.figures.get_mut(usize::from(ix)) else {
            return CrossDuplicate::default();
        };
        f.outbound_attempts += 1;
        f.retries += u64::from(e.logical_attempt > 1);
        f.provider_logical_requests += u64::from(e.logical_attempt == 1);
        match f.status_counts.get_mut(&*e.outcome) {
            Some(n) => *n += 1,
            None => {
                f.status_counts.insert(e.outcome.to_string(), 1);
            }
        }
        f.tokens_used += e.tokens_used;
        f.duplicates += u64::from(e.duplicate);
        let mut cross = CrossDuplicate::default();
        if e.committed && !e.replayed && action != 0 {
            let bit = 1u8 << ix.min(7);
            let seen = self.committed_at.entry(action).or_insert(0);
            // A second commit at the same provider is that provider's own duplicate
            // (`e.duplicate`); only a commit where another provider already committed is
            // new here.
            if *seen & !bit != 0 && *seen & bit == 0 && !e.duplicate {
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
