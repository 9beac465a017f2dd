//! Matching attempts against the fault schedule.

use crate::config::{ConnectionFault, FaultRule, RouteName, SequenceKey, SequenceStep};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;

/// What the schedule injects into one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Injection {
    /// Answer with an error status.
    Status {
        status: u16,
        code: Option<String>,
        retry_after_ms: Option<u64>,
        should_retry: Option<bool>,
    },
    /// A connection-level fault.
    Connection {
        fault: ConnectionFault,
        after_chunks: Option<u32>,
    },
}

/// The facts about an attempt that rules filter on.
pub(crate) struct AttemptFacts<'a> {
    pub(crate) now: u64,
    pub(crate) route: RouteName,
    pub(crate) credential: &'a str,
    pub(crate) scope: &'a str,
    pub(crate) class: Option<&'a str>,
    pub(crate) tenant: Option<&'a str>,
    /// The logical request the provider attached the attempt to (0: none).
    pub(crate) logical: u64,
    /// Its `Idempotency-Key`.
    pub(crate) key: Option<&'a str>,
    /// Its `external_ref`.
    pub(crate) external_ref: Option<&'a str>,
    /// Hash of its canonical body.
    pub(crate) body_hash: u64,
}

impl AttemptFacts<'_> {
    /// Identity of the logical action (for `per = "action"` sequences), written only for a
    /// rule that counts per action.
    fn action_key(&self) -> String {
        match (self.logical, self.key, self.external_ref) {
            (l, _, _) if l != 0 => format!("l:{l}"),
            (_, Some(k), _) => format!("k:{k}"),
            (_, None, Some(r)) => format!("r:{r}"),
            (_, None, None) => format!("b:{:016x}", self.body_hash),
        }
    }

    /// Identity of the idempotency key (for `per = "key"` sequences).
    fn key_identity(&self) -> String {
        self.key.map_or_else(
            || format!("b:{:016x}", self.body_hash),
            |k| format!("k:{k}"),
        )
    }
}

#[derive(Debug, Clone)]
struct RuleState {
    rule: FaultRule,
    /// Attempts that passed this rule's filters and window.
    matched: u64,
    /// Attempts seen per sequence identity (action or key); bounded by the actions of the run.
    per_identity: FxHashMap<String, usize>,
}

/// The schedule with its counters and its own seeded stream.
#[derive(Debug, Clone)]
pub(crate) struct FaultSchedule {
    rules: Vec<RuleState>,
    rng: ChaCha8Rng,
}

impl FaultSchedule {
    /// Whether the schedule has no rules: then no attempt is picked, and the model need not
    /// gather an attempt's facts (most runs inject no faults).
    pub(crate) fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub(crate) fn new(rules: &[FaultRule], rng: ChaCha8Rng) -> Self {
        FaultSchedule {
            rules: rules
                .iter()
                .map(|r| RuleState {
                    rule: r.clone(),
                    matched: 0,
                    per_identity: FxHashMap::default(),
                })
                .collect(),
            rng,
        }
    }

    /// The first rule (in file order) that fires for this attempt decides it. A rule whose
    /// filters match counts the attempt even when `nth`/`every`/`probability` or a pass step
    /// of its sequence lets it through; later rules then get their chance.
    pub(crate) fn pick(&mut self, facts: &AttemptFacts<'_>) -> Option<Injection> {
        for state in &mut self.rules {
            let rule = &state.rule;
            if !filters_match(rule, facts) {
                continue;
            }
            state.matched += 1;
            if !rule.sequence.is_empty() {
                let identity = match rule.per {
                    SequenceKey::Action => facts.action_key(),
                    SequenceKey::Key => facts.key_identity(),
                    SequenceKey::Rule => String::new(),
                };
                let n = state.per_identity.entry(identity).or_insert(0);
                let step = rule.sequence.get(*n);
                *n += 1;
                if let Some(inj) = step.and_then(step_injection) {
                    return Some(inj);
                }
                continue;
            }
            if let Some(nth) = rule.nth {
                if state.matched != nth {
                    continue;
                }
            }
            if let Some(every) = rule.every {
                if state.matched % every != 0 {
                    continue;
                }
            }
            if let Some(p) = rule.probability {
                // Drawn only for attempts that reached this point, so the draws depend on
                // the schedule and the arrivals, never on other components.
                if self.rng.gen::<f64>() >= p {
                    continue;
                }
            }
            return Some(match (rule.status, rule.fault) {
                (Some(status), _) => Injection::Status {
                    status,
                    code: rule.code.clone(),
                    retry_after_ms: rule.retry_after.map(|d| d.ms()),
                    should_retry: rule.should_retry,
                },
                (None, Some(fault)) => Injection::Connection {
                    fault,
                    after_chunks: rule.after_chunks,
                },
                // Validation guarantees one kind; a rule without one injects nothing.
                (None, None) => continue,
            });
        }
        None
    }
}

fn filters_match(rule: &FaultRule, f: &AttemptFacts<'_>) -> bool {
    if rule.from.is_some_and(|from| f.now < from.ms()) {
        return false;
    }
    if rule.until.is_some_and(|until| f.now >= until.ms()) {
        return false;
    }
    if rule.route.is_some_and(|r| r != f.route) {
        return false;
    }
    if rule
        .credential
        .as_deref()
        .is_some_and(|c| c != f.credential)
    {
        return false;
    }
    if rule.scope.as_deref().is_some_and(|s| s != f.scope) {
        return false;
    }
    if rule.class.is_some() && rule.class.as_deref() != f.class {
        return false;
    }
    if rule.tenant.is_some() && rule.tenant.as_deref() != f.tenant {
        return false;
    }
    true
}

fn step_injection(step: &SequenceStep) -> Option<Injection> {
    if let Some(fault) = step.fault {
        return Some(Injection::Connection {
            fault,
            after_chunks: step.after_chunks,
        });
    }
    match step.status {
        Some(status) if status != 200 => Some(Injection::Status {
            status,
            code: step.code.clone(),
            retry_after_ms: step.retry_after.map(|d| d.ms()),
            should_retry: step.should_retry,
        }),
        _ => None,
    }
}
