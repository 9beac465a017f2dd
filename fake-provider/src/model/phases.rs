//! Which `[[provider.phases]]` are active at an arrival, and what they put in force: the
//! completion latency and each scope's limits.
//!
//! The limits in force live in each scope's `ScopeState::limits` (what admission checks and
//! the rate-limit headers show); when the set of active phases changes they are rebuilt from
//! the configured limits with every active phase's overrides applied in listed order.
//! Counters are kept as they are: the new limit applies to what the current window already
//! counted (see `config::ScopeOverride`).

use super::latency::LatencySampler;
use super::limits::ScopeState;
use crate::config::{Phase, ScopeLimits};
use std::collections::BTreeMap;

/// One phase, resolved to scope indices and a sampler.
#[derive(Debug, Clone)]
struct Resolved {
    /// Its `from` and `until`, model ms.
    from: u64,
    until: Option<u64>,
    /// The latency it puts in force, if any.
    latency: Option<LatencySampler>,
    /// Per scope index, the overriding limits `[rpm, tpm, rpd, tpd, concurrency]`.
    scopes: Vec<(usize, [Option<u64>; 5])>,
}

/// The phases of a provider and which of them are active.
#[derive(Debug, Clone)]
pub(crate) struct Phases {
    list: Vec<Resolved>,
    /// Per phase, whether it was active at the last arrival.
    active: Vec<bool>,
    /// The phase whose latency is in force (the last active one that has a latency).
    latency_from: Option<usize>,
}

impl Phases {
    /// Resolves validated phases against scope ids (`scope_index`: id to index).
    pub(crate) fn new(phases: &[Phase], scope_index: &BTreeMap<&str, usize>) -> Self {
        let list = phases
            .iter()
            .map(|p| Resolved {
                from: p.from.ms(),
                until: p.until.map(|u| u.ms()),
                latency: p.latency.as_ref().map(LatencySampler::new),
                scopes: p
                    .scopes
                    .iter()
                    .filter_map(|s| {
                        let i = *scope_index.get(s.id.as_str())?;
                        Some((i, s.limits().map(|(_, v)| v)))
                    })
                    .collect(),
            })
            .collect::<Vec<_>>();
        let active = vec![false; list.len()];
        Phases {
            list,
            active,
            latency_from: None,
        }
    }

    /// Whether there are no phases (then nothing ever changes).
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Brings what is in force to model time `now`: when the set of active phases changed
    /// since the last call, each scope's limits are rebuilt from `configured` (the scopes'
    /// own limits, by index) with the active phases' overrides applied in listed order.
    pub(crate) fn apply(
        &mut self,
        now: u64,
        configured: &[ScopeLimits],
        scopes: &mut [ScopeState],
    ) {
        let mut changed = false;
        for (p, active) in self.list.iter().zip(self.active.iter_mut()) {
            let is = now >= p.from && p.until.map_or(true, |u| now < u);
            if is != *active {
                *active = is;
                changed = true;
            }
        }
        if !changed {
            return;
        }
        for (scope, limits) in scopes.iter_mut().zip(configured) {
            scope.limits.clone_from(limits);
        }
        self.latency_from = None;
        for (i, p) in self.list.iter().enumerate() {
            if !self.active[i] {
                continue;
            }
            if p.latency.is_some() {
                self.latency_from = Some(i);
            }
            for (s, [rpm, tpm, rpd, tpd, concurrency]) in &p.scopes {
                let Some(scope) = scopes.get_mut(*s) else {
                    continue;
                };
                let l = &mut scope.limits;
                l.rpm = rpm.or(l.rpm);
                l.tpm = tpm.or(l.tpm);
                l.rpd = rpd.or(l.rpd);
                l.tpd = tpd.or(l.tpd);
                l.concurrency = concurrency.or(l.concurrency);
            }
        }
    }

    /// The completion latency an active phase puts in force, if any.
    pub(crate) fn latency(&self) -> Option<&LatencySampler> {
        self.latency_from
            .and_then(|i| self.list.get(i))
            .and_then(|p| p.latency.as_ref())
    }
}
