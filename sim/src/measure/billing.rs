//! What the providers billed and for which model, and which limit refused each 429: read
//! off the journal, where the provider wrote what it charged (`billed_micro_usd`, from the
//! model's price) and what refused (`limit`).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::decided::Decided;
use stampede_reports::{ModelFigures, Summary};

/// Billing, per-model figures and refusals by limit, summed exactly in micro-dollars.
#[derive(Debug, Default)]
pub struct Billing {
    billed_micro_usd: u64,
    duplicate_micro_usd: u64,
    /// Per model: figures, and what it billed in micro-dollars. A handful of models per run:
    /// a sorted map keyed by the journal's shared name.
    models: BTreeMap<Arc<str>, (ModelFigures, u64)>,
    /// Refusals by limit, at the limit's index in [`LIMITS`]: counted at every 429, so by
    /// position rather than in a map searched by name.
    limits: [u64; LIMITS.len()],
}

impl Billing {
    /// One journal entry. `duplicate`: the harness counts this commit as a duplicate (the
    /// provider's own flag, or a second provider's commit of one logical request).
    /// `limit` is the index of `e`'s limit, `e.limit().map(limit_index)`, worked out before.
    #[inline]
    pub fn observe(&mut self, e: &Decided<'_>, duplicate: bool, limit: Option<u8>) {
        self.billed_micro_usd += e.billed_micro_usd();
        if duplicate {
            self.duplicate_micro_usd += e.billed_micro_usd();
        }
        if let Some(model) = e.model() {
            self.observe_model(e, model);
        }
        if let Some(limit) = limit {
            self.limits[usize::from(limit)] += 1;
        }
    }

    /// [`Billing::observe`] of an entry billed as `model`: a search of the models by name,
    /// out of line (an entry refused before a model was named has none).
    #[inline(never)]
    fn observe_model(&mut self, e: &Decided<'_>, model: &Arc<str>) {
        let (f, micro) = match self.models.get_mut(model) {
            Some(entry) => entry,
            None => self.models.entry(Arc::clone(model)).or_default(),
        };
        f.outbound_attempts += 1;
        if e.committed() && !e.replayed() {
            f.completions += 1;
            f.tokens_used += e.tokens_used();
        }
        *micro += e.billed_micro_usd();
    }

    /// Writes `billed_usd`, `duplicate_billed_usd`, `by_model` and `rate_limit_hits`.
    pub fn finish(self, s: &mut Summary) {
        s.billed_usd = super::usd(self.billed_micro_usd);
        s.duplicate_billed_usd = super::usd(self.duplicate_micro_usd);
        for (name, (mut f, micro)) in self.models {
            f.billed_usd = super::usd(micro);
            s.by_model.insert(name.to_string(), f);
        }
        for (limit, n) in LIMITS.iter().zip(self.limits) {
            if n > 0 {
                s.rate_limit_hits.insert(limit.to_string(), n);
            }
        }
    }
}

/// The limit names the provider journals, and `other` for a name it does not.
pub(crate) const LIMITS: [&str; 6] = ["rpm", "tpm", "rpd", "tpd", "concurrency", "other"];

/// The index in [`LIMITS`] of a journaled limit name (an unknown one is `other`).
pub(crate) fn limit_index(limit: &str) -> u8 {
    // Literal patterns: compared as a few bytes in place, not by a call per name.
    match limit {
        "rpm" => 0,
        "tpm" => 1,
        "rpd" => 2,
        "tpd" => 3,
        "concurrency" => 4,
        _ => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_limit_name_counts_at_its_own_place_and_unknown_names_as_other() {
        for (i, name) in LIMITS.iter().enumerate().take(LIMITS.len() - 1) {
            assert_eq!(usize::from(limit_index(name)), i, "{name}");
        }
        assert_eq!(LIMITS[usize::from(limit_index("rph"))], "other");
        assert_eq!(LIMITS[usize::from(limit_index(""))], "other");
    }
}
