//! The scope record: what every job sending to one provider scope shares. A 429's
//! Retry-After, a quota reset or exhausted rate-limit headers are published here before any
//! retry is scheduled, and every dispatch reads it, together with the scope's RPM and TPM
//! token buckets (reserve, then reconcile with actual usage) and its concurrency budget.

use stampede_name::Name;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::admission::DEFAULT_SCOPE;
use super::last_name::LastName;
use super::retry_window::RetryWindow;
use crate::bucket::TokenBucket;
use crate::policy::Policy;
use crate::rate_headers::RateHint;
use crate::time::{Millis, MINUTE};

/// Why a scope's `next_allowed_at` was last pushed back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeSource {
    /// A 429 with `Retry-After` / `retry-after-ms`.
    RateLimitedRetryAfter,
    /// A 429 without any wait: the scope pauses for one backoff base.
    RateLimited,
    /// A 503 with `Retry-After`.
    UnavailableRetryAfter,
    /// Rate-limit headers said nothing is left until the reset.
    RateLimitHeaders,
    /// A daily or billing quota is exhausted until its reset.
    QuotaReset,
}

/// The shared record of one scope, as `Scheduler::scope_record` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeRecord {
    /// Nothing is sent to the scope before this time (ms since run start).
    pub next_allowed_at: Millis,
    /// Requests the provider last said were left (requests).
    pub remaining_requests: Option<u64>,
    /// When the request window resets (ms since run start).
    pub reset_requests_at: Option<Millis>,
    /// Tokens the provider last said were left (tokens).
    pub remaining_tokens: Option<u64>,
    /// When the token window resets (ms since run start).
    pub reset_tokens_at: Option<Millis>,
    /// What set `next_allowed_at` last.
    pub source: Option<ScopeSource>,
    /// Attempts on the wire to this scope (requests).
    pub in_flight: u32,
    /// Tokens used beyond reservations on this scope (tokens).
    pub token_debt: u64,
    /// Attempts whose token usage stayed unknown (their upper estimate was kept) (attempts).
    pub uncertain_usage: u64,
}

/// Why a send cannot go to a scope now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Blocked {
    /// Rate capacity returns at this time (ms).
    Until(Millis),
    /// The scope's concurrency budget is full: an outcome must free it.
    Concurrency,
    /// The send needs more tokens than the scope grants in a whole window (`capacity`,
    /// tokens): no wait makes it fit.
    NeverFits {
        /// The scope's tokens per window (tokens).
        capacity: u64,
    },
}

/// One scope's live state.
#[derive(Debug)]
pub(super) struct ScopeState {
    pub id: Name,
    pub record: ScopeRecord,
    pub requests: Option<TokenBucket>,
    pub tokens: Option<TokenBucket>,
    pub concurrency: Option<u32>,
    /// Fraction of each bucket bulk sends must leave for critical and normal work
    /// (`ScopeBudget::reserve`); `None`: bulk may use all of it.
    pub reserve: Option<f64>,
    pub in_flight: u32,
    pub retries: RetryWindow,
    /// Retries that may wait on the scope at once (`ScopeBudget::max_delayed_requests`).
    pub max_delayed: Option<u32>,
    /// Retries waiting on the scope now: actions whose timer `schedule_retry` set, until
    /// they leave that wait (woken, ended, cancelled). Never above `max_delayed`; counted
    /// only when some scope has a cap (`Scheduler::caps_waiting_retries`).
    pub delayed_retries: u32,
}

impl ScopeState {
    fn new(id: &str, policy: &Policy, now: Millis) -> Self {
        let budget = policy.scope_budget(id);
        let shaped = policy.token_budget;
        let bucket = |limit: Option<u32>| {
            limit
                .filter(|_| shaped)
                .map(|l| TokenBucket::new(u64::from(l), MINUTE, now))
        };
        Self {
            id: Name::new(id),
            record: ScopeRecord::default(),
            requests: bucket(budget.rpm),
            tokens: bucket(budget.tpm),
            concurrency: budget.concurrency.filter(|_| shaped),
            reserve: budget.reserve,
            in_flight: 0,
            retries: RetryWindow::new(&policy.retry_budgets.per_scope),
            max_delayed: budget.max_delayed_requests,
            delayed_retries: 0,
        }
    }

    /// Reserves rate capacity for one send of `tokens` (tokens), reading the shared record
    /// first. A `bulk` send must leave the scope's reservation in both buckets; when it
    /// would not, it is blocked until refill restores it. Nothing is held when it fails.
    pub fn try_admit(
        &mut self,
        tokens: u64,
        now: Millis,
        shared: bool,
        bulk: bool,
    ) -> Result<(), Blocked> {
        if shared && self.record.next_allowed_at > now {
            return Err(Blocked::Until(self.record.next_allowed_at));
        }
        if self
            .concurrency
            .is_some_and(|limit| self.in_flight >= limit)
        {
            return Err(Blocked::Concurrency);
        }
        if let Some(bucket) = self.tokens.as_ref().filter(|b| b.capacity() > 0) {
            if tokens > bucket.capacity() {
                return Err(Blocked::NeverFits {
                    capacity: bucket.capacity(),
                });
            }
        }
        let keep = match self.reserve {
            Some(reserve) if bulk => reserve,
            _ => 0.0,
        };
        if let Some(requests) = &mut self.requests {
            requests
                .try_reserve_keeping(1, keep, now)
                .map_err(|at| Blocked::Until(at.max(now + 1)))?;
        }
        if let (Some(bucket), true) = (&mut self.tokens, tokens > 0) {
            if let Err(at) = bucket.try_reserve_keeping(tokens, keep, now) {
                if let Some(requests) = &mut self.requests {
                    requests.release(1, now);
                }
                return Err(Blocked::Until(at.max(now + 1)));
            }
        }
        Ok(())
    }

    /// Reconciles a token reservation with what the attempt really used: the difference is
    /// released, extra usage becomes debt, unknown usage keeps the reservation (uncertain).
    pub fn settle_tokens(&mut self, reserved: u64, actual: Option<u64>, now: Millis) {
        if let (Some(bucket), true) = (
            &mut self.tokens,
            reserved > 0 || actual.is_some_and(|a| a > 0),
        ) {
            bucket.reconcile(reserved, actual, now);
        }
    }

    /// Undoes a successful `try_admit` whose send did not happen.
    pub fn unreserve(&mut self, tokens: u64, now: Millis) {
        if let Some(requests) = &mut self.requests {
            requests.release(1, now);
        }
        self.release_tokens(tokens, now);
    }

    /// Gives a reservation back whole (the attempt was cancelled).
    pub fn release_tokens(&mut self, reserved: u64, now: Millis) {
        if let (Some(bucket), true) = (&mut self.tokens, reserved > 0) {
            bucket.release(reserved, now);
        }
    }

    /// Publishes "send nothing before `until`" on the record (never moves it earlier).
    pub fn publish_wait(&mut self, until: Millis, source: ScopeSource) {
        if until > self.record.next_allowed_at {
            self.record.next_allowed_at = until;
            self.record.source = Some(source);
        }
    }

    /// A peer spent `requests` and `tokens` of the scope's rate (see `peers`).
    pub fn spent_by_peer(&mut self, requests: u64, tokens: u64, now: Millis) {
        if let (Some(bucket), true) = (&mut self.requests, requests > 0) {
            bucket.spend_elsewhere(requests, now);
        }
        if let (Some(bucket), true) = (&mut self.tokens, tokens > 0) {
            bucket.spend_elsewhere(tokens, now);
        }
    }

    /// A 429 closed the scope until `until`: the request budget that would have built up
    /// meanwhile is not there to spend when it reopens (the provider just said there is
    /// none), so the queue drains at the paced rate instead of as one burst the moment the
    /// wait ends.
    pub fn hold_requests_until(&mut self, until: Millis, now: Millis) {
        if let Some(bucket) = &mut self.requests {
            bucket.pace(0, until.saturating_sub(now), now);
        }
    }

    /// Takes in what rate-limit headers said: the record's remaining and reset, the buckets'
    /// pace (learning a bucket from the advertised limit when none is configured), and a
    /// pause until the reset when nothing is left.
    pub fn learn(&mut self, hint: &RateHint, now: Millis, shaped: bool) {
        let record = &mut self.record;
        if let Some(remaining) = hint.remaining_requests {
            record.remaining_requests = Some(remaining);
            record.reset_requests_at = hint.reset_requests_ms.map(|ms| now.saturating_add(ms));
        }
        if let Some(remaining) = hint.remaining_tokens {
            record.remaining_tokens = Some(remaining);
            record.reset_tokens_at = hint.reset_tokens_ms.map(|ms| now.saturating_add(ms));
        }
        if shaped {
            pace(
                &mut self.requests,
                hint.limit_requests,
                hint.remaining_requests,
                hint.reset_requests_ms,
                now,
            );
            pace(
                &mut self.tokens,
                hint.limit_tokens,
                hint.remaining_tokens,
                hint.reset_tokens_ms,
                now,
            );
        }
        if let (Some(0), Some(reset)) = (hint.remaining_requests, hint.reset_requests_ms) {
            self.publish_wait(now.saturating_add(reset), ScopeSource::RateLimitHeaders);
        }
    }

    /// The record as reported outside, with live figures filled in.
    pub fn snapshot(&self) -> ScopeRecord {
        ScopeRecord {
            in_flight: self.in_flight,
            token_debt: self.tokens.as_ref().map_or(0, TokenBucket::debt),
            uncertain_usage: self.tokens.as_ref().map_or(0, TokenBucket::uncertain),
            ..self.record
        }
    }
}

fn pace(
    bucket: &mut Option<TokenBucket>,
    limit: Option<u64>,
    remaining: Option<u64>,
    reset: Option<Millis>,
    now: Millis,
) {
    if bucket.is_none() {
        // No configured budget: learn one from the advertised per-minute limit.
        if let Some(limit) = limit.filter(|&l| l > 0) {
            *bucket = Some(TokenBucket::new(limit, MINUTE, now));
        }
    }
    if let (Some(bucket), Some(remaining)) = (bucket, remaining) {
        bucket.pace(remaining, reset.unwrap_or(0), now);
    }
}

/// Every scope seen, by dense index.
#[derive(Debug, Default)]
pub(super) struct Scopes {
    index: BTreeMap<String, usize>,
    list: Vec<ScopeState>,
    /// The shared scope name last interned.
    last: LastName<usize>,
    /// The index of [`DEFAULT_SCOPE`], once interned.
    default_scope: Option<usize>,
}

impl Scopes {
    /// The scope's index, creating its state (and buckets) on first sight.
    pub fn intern(&mut self, id: &str, policy: &Policy, now: Millis) -> usize {
        if let Some(i) = self.index.get(id) {
            return *i;
        }
        let i = self.list.len();
        self.list.push(ScopeState::new(id, policy, now));
        self.index.insert(id.to_owned(), i);
        i
    }

    /// [`Scopes::intern`] for a job's shared scope name (`None`: [`DEFAULT_SCOPE`]): the
    /// name last seen is not searched again.
    pub fn intern_shared(&mut self, id: Option<Name>, policy: &Policy, now: Millis) -> usize {
        let Some(id) = id else {
            if let Some(i) = self.default_scope {
                return i;
            }
            let i = self.intern(DEFAULT_SCOPE, policy, now);
            self.default_scope = Some(i);
            return i;
        };
        if let Some(i) = self.last.get(id) {
            return i;
        }
        let i = self.intern(&id, policy, now);
        self.last.keep(id, i);
        i
    }

    pub fn get(&self, i: usize) -> &ScopeState {
        &self.list[i]
    }

    /// Every scope's state, in index order (read by debug builds' invariant checks only).
    #[cfg(debug_assertions)]
    pub fn all(&self) -> impl Iterator<Item = &ScopeState> {
        self.list.iter()
    }

    pub fn get_mut(&mut self, i: usize) -> &mut ScopeState {
        &mut self.list[i]
    }

    pub fn record(&self, id: &str) -> Option<ScopeRecord> {
        self.index.get(id).map(|&i| self.list[i].snapshot())
    }

    /// Every scope's record, ordered by scope id.
    pub fn records(&self) -> Vec<(String, ScopeRecord)> {
        self.index
            .iter()
            .map(|(id, &i)| (id.clone(), self.list[i].snapshot()))
            .collect()
    }

    /// Token debt summed over scopes (tokens).
    pub fn token_debt(&self) -> u64 {
        self.list
            .iter()
            .filter_map(|s| s.tokens.as_ref())
            .map(TokenBucket::debt)
            .sum()
    }
}
