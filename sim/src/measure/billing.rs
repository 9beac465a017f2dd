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
    limits: BTreeMap<&'static str, u64>,
}

impl Billing {
    /// One journal entry. `duplicate`: the harness counts this commit as a duplicate (the
    /// provider's own flag, or a second provider's commit of one logical request).
    pub fn observe(&mut self, e: &Decided<'_>, duplicate: bool) {
        self.billed_micro_usd += e.billed_micro_usd;
        if duplicate {
            self.duplicate_micro_usd += e.billed_micro_usd;
        }
        if let Some(model) = e.model {
            let (f, micro) = match self.models.get_mut(model) {
                Some(entry) => entry,
                None => self.models.entry(Arc::clone(model)).or_default(),
            };
            f.outbound_attempts += 1;
            if e.committed && !e.replayed {
                f.completions += 1;
                f.tokens_used += e.tokens_used;
            }
            *micro += e.billed_micro_usd;
        }
        if let Some(limit) = &e.limit {
            *self.limits.entry(limit_name(limit)).or_insert(0) += 1;
        }
    }

    /// Writes `billed_usd`, `duplicate_billed_usd`, `by_model` and `rate_limit_hits`.
    pub fn finish(self, s: &mut Summary) {
        s.billed_usd = super::usd(self.billed_micro_usd);
        s.duplicate_billed_usd = super::usd(self.duplicate_micro_usd);
        for (name, (mut f, micro)) in self.models {
            f.billed_usd = super::usd(micro);
            s.by_model.insert(name.to_string(), f);
        }
        for (limit, n) in self.limits {
            s.rate_limit_hits.insert(limit.to_string(), n);
        }
    }
}

/// The limit names the provider journals, as `'static` keys (an unknown one is `other`).
fn limit_name(limit: &str) -> &'static str {
    match limit {
        "rpm" => "rpm",
        "tpm" => "tpm",
        "rpd" => "rpd",
        "tpd" => "tpd",
        "concurrency" => "concurrency",
        _ => "other",
    }
}
