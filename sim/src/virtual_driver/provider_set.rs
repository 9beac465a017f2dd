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
            let expected = remembered_at_once(
                requests,
                scenario.provider.identity_window.ms(),
                scenario.duration_ms,
            );
            set.models[0].expect_requests(usize::try_from(expected).unwrap_or(usize::MAX));
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
    #[inline]
    pub fn of(&self, credential: Option<&str>) -> ProviderIx {
        if self.models.len() == 1 {
            return 0;
        }
        credential
            .and_then(|c| self.by_key.get(c).copied())
            .unwrap_or(0)
    }

    /// The provider `request` goes to: the one that issued its credential.
    #[inline]
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

/// How many of a run's `requests` its provider's identity index is sized for up front. A
/// window (`window_ms`) as long as the run (`duration_ms`) remembers them all; a shorter
/// one forgets as it goes, so it is sized for twice the share one window would hold were
/// the requests spread evenly over the run, and never for fewer than [`SIZED_ANYWAY`] (a
/// backlog that arrives at once, or a burst past the even share, grows the index as an
/// unsized one grows). Sizing a ten-second window for every request of the
/// million-request run held 75 MiB it never used.
fn remembered_at_once(requests: u64, window_ms: u64, duration_ms: u64) -> u64 {
    if window_ms >= duration_ms {
        return requests;
    }
    let share = u128::from(requests) * 2 * u128::from(window_ms) / u128::from(duration_ms.max(1));
    let share = u64::try_from(share).unwrap_or(u64::MAX);
    share.max(SIZED_ANYWAY).min(requests)
}

/// Requests the identity index is sized for whatever the window: a few MB, and the whole of
/// most scenarios (a 38,000-request backlog arrives within one window of its two hours).
const SIZED_ANYWAY: u64 = 65_536;

#[cfg(test)]
mod tests {
    use super::{remembered_at_once, ProviderSet};
    use stampede_provider::model::Request;

    /// An attempt one of its scope's limits refused (its journal entry names the `limit`)
    /// holds nothing at its provider, so the virtual wire skips its departure
    /// (`AnswerHead::holds`); an admitted one holds its slot until it departs. Requests and
    /// concurrency both refuse here, with slots departing at random.
    #[test]
    fn a_limits_refusal_holds_nothing_until_it_departs() {
        let scenario = crate::scenario::parse(
            r#"
name = "holds"
seed = 5
duration = "10m"

[[provider.scopes]]
id = "s"
rpm = 120
concurrency = 3

[[provider.credentials]]
key = "sk-s-key-0123456789"
scope = "s"

[[workload]]
tenant = "t"
credential = "sk-s-key-0123456789"
count = 10
arrival = "backlog"
"#,
            "holds.toml",
            &[],
        )
        .unwrap();
        let mut set = ProviderSet::new(&scenario, 0).unwrap();
        let mut request = Request {
            credential: Some("sk-s-key-0123456789".into()),
            prompt_tokens: 10,
            max_tokens: 10,
            ..Request::default()
        };
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        let (mut held, mut refused, mut admitted) = (Vec::new(), 0, 0);
        for i in 0..2_000_u64 {
            let now = i * 40;
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            if rng % 3 == 0 && !held.is_empty() {
                let seq = held.swap_remove(rng as usize % held.len());
                set.depart(0, seq, now);
            }
            request.action = Some(i);
            let before = set.models[0].stats().in_flight;
            let decision = set.arrive(0, &request, now);
            let mut limit = None;
            set.drain_journal_with(0, |entry| {
                if entry.seq == decision.seq {
                    limit = Some(entry.limit.is_some());
                }
                Ok::<(), ()>(())
            })
            .unwrap();
            let after = set.models[0].stats().in_flight;
            if limit.expect("the attempt is journaled") {
                refused += 1;
                assert_eq!(after, before, "a limit's refusal holds nothing");
            } else {
                admitted += 1;
                assert_eq!(after, before + 1, "an admitted attempt holds its slot");
                held.push(decision.seq);
            }
        }
        assert!(
            refused > 100 && admitted > 100,
            "{refused} refused, {admitted} admitted"
        );
    }

    #[test]
    fn the_identity_index_is_sized_for_what_one_window_remembers() {
        // A window as long as the run: every request.
        assert_eq!(remembered_at_once(1_000_000, 900_000, 900_000), 1_000_000);
        assert_eq!(remembered_at_once(1_000_000, 900_000, 600_000), 1_000_000);
        // Ten seconds of a twenty-minute run: twice an even share, at least SIZED_ANYWAY.
        assert_eq!(remembered_at_once(1_000_000, 10_000, 1_200_000), 65_536);
        assert_eq!(remembered_at_once(10_000_000, 10_000, 1_200_000), 166_666);
        assert_eq!(remembered_at_once(38_000, 900_000, 7_200_000), 38_000);
        // Never more than the run's requests, whatever the ratio.
        assert_eq!(remembered_at_once(10, 900_000, 1_000_000), 10);
        assert_eq!(remembered_at_once(u64::MAX, 1, 2), u64::MAX);
        assert_eq!(remembered_at_once(5, 1, 0), 5);
    }
}
