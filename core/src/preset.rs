//! Named client presets: the comparison clients a scenario picks with `client.preset`.
//!
//! Presets are policy values, not code paths: the scheduler runs every one of them with the
//! same state machine, so a difference in a report is a difference in the knobs below.

use std::time::Duration;

use crate::policy::{FailureGroup, Jitter, Policy};

/// Every preset name, in the order reports list them.
pub const PRESETS: &[&str] = &["naive", "exponential", "full-jitter", "stampede"];

/// The policy a preset name stands for, or `None` for an unknown name (see [`PRESETS`]).
///
/// - `naive`: every worker retries any failure (writes that may have executed included)
///   after a fixed 1 s sleep, up to 10 attempts; nothing shared, no token budget,
///   `Retry-After` ignored, no reconciliation (blind re-send), no breaker, no keys; a
///   routing plan crosses to a fallback at once, even after an attempt that may have
///   executed (`routing.reconcile_before_fallback = false`).
/// - `exponential`: exponential backoff without jitter, each job on its own, `Retry-After`
///   ignored.
/// - `full-jitter`: capped full-jitter backoff, each job on its own: `Retry-After` ignored (the
///   client computes its own delays, as the classic full-jitter recipe does), no shared scope
///   record and no scope budgets. Its retries are spread out, so it shows no retry waves, but
///   it keeps knocking on a scope the provider asked it to leave alone.
/// - `stampede`: every rule on ([`Policy::default`]).
#[must_use]
pub fn preset(name: &str) -> Option<Policy> {
    match name {
        "naive" => Some(naive()),
        "exponential" => Some(exponential()),
        "full-jitter" => Some(full_jitter()),
        "stampede" => Some(Policy::default()),
        _ => None,
    }
}

/// Everything a per-job client lacks: no shared scope record, no local rate shaping, no
/// retry budgets, no breaker, no coalescing.
fn isolated(mut policy: Policy) -> Policy {
    policy.share_scope_state = false;
    policy.token_budget = false;
    policy.rate_header_pacing = false;
    policy.retry_budgets.per_task.enabled = false;
    policy.retry_budgets.per_scope.enabled = false;
    policy.breaker.enabled = false;
    policy.coalesce_reads = false;
    policy
}

fn naive() -> Policy {
    use FailureGroup::*;
    let mut policy = isolated(Policy::default());
    policy.backoff.jitter = Jitter::Fixed;
    policy.backoff.base = Duration::from_secs(1);
    policy.retry_after.honour = false;
    policy.send_idempotency_keys = false;
    policy.resend_cut_streams = true;
    policy.quota.wait_for_reset = false;
    policy.routing.reconcile_before_fallback = false;
    for class in policy.classes.values_mut() {
        class.max_attempts = 10;
        class.max_wait = Duration::from_secs(600);
        class.retry_on = vec![
            NeverArrived,
            MayHaveExecuted,
            WontImprove,
            Conflict,
            QuotaExhausted,
        ];
        class.reconcile = false;
    }
    policy
}

fn exponential() -> Policy {
    let mut policy = isolated(Policy::default());
    policy.backoff.jitter = Jitter::None;
    policy.retry_after.honour = false;
    policy
}

fn full_jitter() -> Policy {
    let mut policy = isolated(Policy::default());
    policy.backoff.jitter = Jitter::Full;
    // Honouring one identical Retry-After per window would bring every job back at the same
    // instant; without the shared scope record that is a wave, not a spread.
    policy.retry_after.honour = false;
    policy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_preset_exists_and_is_valid() {
        for name in PRESETS {
            let policy = preset(name).unwrap_or_else(|| panic!("preset {name} missing"));
            policy
                .validate()
                .unwrap_or_else(|e| panic!("preset {name} invalid: {e}"));
        }
        assert!(preset("careful").is_none());
    }

    #[test]
    fn stampede_preset_is_the_default_policy() {
        assert_eq!(preset("stampede"), Some(Policy::default()));
    }

    #[test]
    fn naive_preset_retries_everything_blindly_after_a_fixed_sleep() {
        let policy = preset("naive").unwrap();
        assert_eq!(policy.backoff.jitter, Jitter::Fixed);
        assert!(
            !policy.retry_after.honour
                && !policy.share_scope_state
                && !policy.send_idempotency_keys
        );
        let write = &policy.classes["uncertain_write"];
        assert!(!write.reconcile && write.retry_on.contains(&FailureGroup::MayHaveExecuted));
        // Streams cut after tokens too; every other preset ends them interrupted.
        assert!(policy.resend_cut_streams);
        for name in PRESETS.iter().filter(|n| **n != "naive") {
            assert!(!preset(name).unwrap().resend_cut_streams, "{name}");
        }
    }

    #[test]
    fn full_jitter_preset_draws_its_own_spread_delays_and_shares_nothing() {
        let policy = preset("full-jitter").unwrap();
        assert_eq!(policy.backoff.jitter, Jitter::Full);
        assert!(!policy.retry_after.honour && !policy.share_scope_state && !policy.token_budget);
        // Writes keep the safe classification: jitter is the only thing it lacks in sharing.
        assert!(policy.classes["uncertain_write"].reconcile);
    }

    #[test]
    fn only_naive_falls_back_without_reconciling_and_no_preset_routes_or_degrades() {
        for name in PRESETS {
            let policy = preset(name).unwrap();
            assert!(policy.routing.plans.is_empty() && policy.degradation.is_empty());
            assert_eq!(policy.routing.reconcile_before_fallback, *name != "naive");
        }
    }

    #[test]
    fn presets_without_routing_serialize_as_before() {
        // Default routing and an empty ladder leave no trace in a serialized policy.
        for name in ["exponential", "full-jitter", "stampede"] {
            let text = toml::to_string(&preset(name).unwrap()).expect("serializes");
            assert!(
                !text.contains("routing") && !text.contains("degradation"),
                "{name}"
            );
        }
        let naive = toml::to_string(&preset("naive").unwrap()).expect("serializes");
        assert!(
            naive.contains("reconcile_before_fallback = false"),
            "{naive}"
        );
        assert!(!naive.contains("degradation"), "{naive}");
    }

    #[test]
    fn policy_round_trips_through_toml() {
        for name in PRESETS {
            let policy = preset(name).unwrap();
            let text = toml::to_string(&policy).expect("serializes");
            let back: Policy = toml::from_str(&text).expect("deserializes");
            assert_eq!(back, policy, "preset {name}");
        }
    }

    #[test]
    fn unknown_policy_keys_are_rejected() {
        let err = toml::from_str::<Policy>("wrokers = 3")
            .unwrap_err()
            .to_string();
        assert!(err.contains("wrokers"), "{err}");
    }
}
