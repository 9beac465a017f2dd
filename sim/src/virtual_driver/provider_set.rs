//! The providers of a virtual run: one pure provider model each, and the key that picks
//! one. A scenario with one `[provider]` table has one model, seeded as it always was, so
//! its runs are byte for byte what they were before several providers existed.

use rustc_hash::FxHashMap;
use stampede_core::Millis;
use stampede_provider::config::ConfigError;
use stampede_provider::model::{Decision, JournalEntry, ProviderModel, Request};

use crate::rng;
use crate::scenario::Scenario;

/// Index of a provider in its [`ProviderSet`] (in name order; 0 for a lone `[provider]`).
pub type ProviderIx = u8;

/// The run's provider models, found by the credential an attempt carries.
pub struct ProviderSet {
    models: Vec<ProviderModel>,
    names: Vec<String>,
    /// Which provider issued each key. A key none issued goes to the first, which answers
    /// it 401 as any provider would.
    by_key: FxHashMap<String, ProviderIx>,
}

impl ProviderSet {
    /// The providers of `scenario`, at `epoch_unix_ms` wall time for virtual t = 0.
    pub fn new(scenario: &Scenario, epoch_unix_ms: u64) -> Result<Self, ConfigError> {
        let mut set = ProviderSet {
            models: Vec::new(),
            names: Vec::new(),
            by_key: FxHashMap::default(),
        };
        if scenario.providers.is_empty() {
            set.push(
                crate::scenario::providers::SINGLE,
                scenario.provider.clone(),
                rng::stream_u64(scenario.seed, "provider"),
                epoch_unix_ms,
            )?;
            // The lone provider sees every request of the workload: its identity index is
            // sized for them once (follow-ups past the count grow it as before). With
            // several providers the split is not known up front, so none is sized.
            let requests = scenario.workloads.iter().map(|w| w.count).sum::<u64>();
            set.models[0].expect_requests(usize::try_from(requests).unwrap_or(usize::MAX));
        } else {
            for p in &scenario.providers {
                let seed = rng::stream_u64(scenario.seed, &format!("provider/{}", p.name));
                set.push(&p.name, p.config.clone(), seed, epoch_unix_ms)?;
            }
        }
        Ok(set)
    }

    fn push(
        &mut self,
        name: &str,
        config: stampede_provider::config::ProviderConfig,
        seed: u64,
        epoch_unix_ms: u64,
    ) -> Result<(), ConfigError> {
        let ix = ProviderIx::try_from(self.models.len()).map_err(|_| ConfigError::Invalid {
            key: "providers".into(),
            message: "too many providers".into(),
        })?;
        for c in &config.credentials {
            self.by_key.entry(c.key.clone()).or_insert(ix);
        }
        let mut model = ProviderModel::new(config, seed, epoch_unix_ms)?;
        // The driver reads only a completion's id from its body (translate::answered).
        model.set_lean_bodies(true);
        self.models.push(model);
        self.names.push(name.to_string());
        Ok(())
    }

    /// Whether the run has more than one provider (figures per provider are kept then).
    pub fn several(&self) -> bool {
        self.models.len() > 1
    }

    /// Provider names, in index order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The provider that issued `credential`.
    pub fn of(&self, credential: Option<&str>) -> ProviderIx {
        if self.models.len() == 1 {
            return 0;
        }
        credential
            .and_then(|c| self.by_key.get(c).copied())
            .unwrap_or(0)
    }

    /// The provider `request` goes to: the one that issued its credential.
    pub fn of_request(&self, request: &Request) -> ProviderIx {
        self.of(request.credential.as_deref())
    }

    /// An attempt reaches the edge of provider `ix` (see [`ProviderSet::of_request`]) at
    /// `now` (ms): see [`ProviderModel::arrive`]. The decision is returned alone, not in a
    /// tuple with the index, so it is written once where the caller keeps it.
    pub fn arrive(&mut self, ix: ProviderIx, request: &Request, now: Millis) -> Decision {
        self.models[usize::from(ix)].arrive(request, now)
    }

    /// The answer to attempt `seq` at provider `ix` left at `now` (ms): release what it held.
    pub fn depart(&mut self, ix: ProviderIx, seq: u64, now: Millis) {
        self.models[usize::from(ix)].depart(seq, now);
    }

    /// Provider `ix`'s journal entries not yet read, each handed to `read` in place (see
    /// `ProviderModel::drain_journal_with`).
    pub fn drain_journal_with<E>(
        &mut self,
        ix: ProviderIx,
        read: impl FnMut(&JournalEntry) -> Result<(), E>,
    ) -> Result<(), E> {
        self.models[usize::from(ix)].drain_journal_with(read)
    }
}
