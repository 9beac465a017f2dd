//! Peers: other instances of the same client (replicas of one service) that share a scope
//! record through some store (Redis, a sidecar). What a peer learned reaches this instance
//! late, after the store's propagation delay, so it is an input like any other event: the
//! driver calls these entry points when the news arrives, with the time it arrives.
//!
//! Call order: like `on_outcome`, at any time between `poll`s; the next `poll` sees the
//! change (a wait pushes the scope's `next_allowed_at` back, spent capacity lowers its
//! buckets). Nothing here sends or finishes anything by itself.

use super::scope::ScopeSource;
use super::Scheduler;
use crate::ledger::Ledger;
use crate::time::Millis;

impl<L: Ledger> Scheduler<L> {
    /// A peer published "send nothing to `scope` before `until`" (ms since run start) for
    /// `source`. The record never moves earlier; a Retry-After also holds the request bucket
    /// until then, as it does when this instance hears the 429 itself.
    pub fn observe_peer_wait(
        &mut self,
        scope: &str,
        until: Millis,
        source: ScopeSource,
        now: Millis,
    ) {
        let now = self.observe(now);
        let i = self.scopes.intern(scope, &self.policy, now);
        let state = self.scopes.get_mut(i);
        state.publish_wait(until, source);
        if source == ScopeSource::RateLimitedRetryAfter {
            state.hold_requests_until(until, now);
        }
    }

    /// A peer spent `requests` (requests) and `tokens` (tokens) of `scope`'s rate: this
    /// instance's buckets for the scope are lowered by as much, below zero if need be, so
    /// the fleet together keeps to the scope's budget. Not debt of this instance.
    pub fn observe_peer_spend(&mut self, scope: &str, requests: u64, tokens: u64, now: Millis) {
        let now = self.observe(now);
        let i = self.scopes.intern(scope, &self.policy, now);
        self.scopes.get_mut(i).spent_by_peer(requests, tokens, now);
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::command::Command;
    use crate::job::Job;
    use crate::ledger::InMemoryLedger;
    use crate::policy::{Policy, ScopeBudget};

    fn scheduler(rpm: Option<u32>) -> Scheduler {
        let mut policy = Policy::default();
        if let Some(rpm) = rpm {
            policy.scopes.insert(
                "s".into(),
                ScopeBudget {
                    rpm: Some(rpm),
                    ..ScopeBudget::default()
                },
            );
        }
        Scheduler::new(policy, InMemoryLedger::new(), ChaCha8Rng::seed_from_u64(1)).unwrap()
    }

    fn job(id: u64) -> Job {
        Job {
            scope: Some("s".into()),
            prompt_tokens: 10,
            max_output_tokens: 10,
            ..Job::new(id, "t", format!("task-{id}"), "k")
        }
    }

    fn sends(core: &mut Scheduler, now: Millis) -> usize {
        let mut n = 0;
        while let Some(c) = core.poll(now) {
            if matches!(c, Command::Send(_)) {
                n += 1;
            }
        }
        n
    }

    #[test]
    fn a_peers_retry_after_holds_this_instance_off_the_scope_until_it_ends() {
        let mut core = scheduler(None);
        core.observe_peer_wait("s", 5_000, ScopeSource::RateLimitedRetryAfter, 0);
        core.submit(job(1), 10).unwrap();
        assert_eq!(sends(&mut core, 10), 0, "the scope is closed until 5 s");
        assert_eq!(core.next_wakeup(), Some(5_000));
        assert_eq!(sends(&mut core, 5_000), 1);
        let record = core.scope_record("s").unwrap();
        assert_eq!(record.next_allowed_at, 5_000);
        assert_eq!(record.source, Some(ScopeSource::RateLimitedRetryAfter));
        // An older, shorter wait does not reopen it early.
        core.observe_peer_wait("s", 9_000, ScopeSource::RateLimited, 6_000);
        core.observe_peer_wait("s", 7_000, ScopeSource::RateLimited, 6_000);
        assert_eq!(core.scope_record("s").unwrap().next_allowed_at, 9_000);
    }

    #[test]
    fn capacity_a_peer_spent_is_not_there_to_spend_again() {
        // 60 rpm: one request a second, a full minute's worth at the start.
        let mut core = scheduler(Some(60));
        core.observe_peer_spend("s", 60, 0, 0);
        core.submit(job(1), 0).unwrap();
        assert_eq!(sends(&mut core, 0), 0, "the peer took the whole minute");
        let wake = core.next_wakeup().expect("a rate wake-up");
        assert!(
            (1..=1_000).contains(&wake),
            "one request refills in 1 s: {wake}"
        );
        assert_eq!(sends(&mut core, wake), 1);
        assert_eq!(
            core.gauges().token_debt,
            0,
            "a peer's spending is not our debt"
        );
    }
}
