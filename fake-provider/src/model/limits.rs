//! Per-scope limits: requests and tokens per minute and per day, and concurrency.
//!
//! Windows are FIXED and aligned to model time 0 (minute k covers [60k s, 60(k+1) s)), the
//! way many providers reset counters, which also makes `x-ratelimit-reset-*` exact. Admitted
//! attempts count; tokens are charged at admission as `prompt_tokens + max_tokens` (the
//! provider's estimate, as OpenAI does), never reconciled. A scope with `count_rejected`
//! also counts each attempt it refuses for a rate limit as one request of the minute window
//! (OpenAI: "unsuccessful requests contribute to your per-minute limit"), so a client that
//! keeps re-sending into a refusal uses up the quota its own later requests needed.

use crate::config::ScopeLimits;
use std::collections::VecDeque;

/// Length of the per-minute window, ms.
pub(crate) const MINUTE_MS: u64 = 60_000;
/// Length of the per-day window, ms.
pub(crate) const DAY_MS: u64 = 86_400_000;
/// Retry-After given for a concurrency refusal, ms (no window to wait for).
pub(crate) const CONCURRENCY_RETRY_MS: u64 = 1_000;

/// One fixed window's counters.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    len_ms: u64,
    /// Where the current window starts and ends (model ms, end excluded), so an attempt in
    /// it is placed by two comparisons: a division per limit per attempt was tens of cycles
    /// each.
    start_ms: u64,
    end_ms: u64,
    pub(crate) requests: u64,
    pub(crate) tokens: u64,
}

impl Window {
    fn new(len_ms: u64) -> Self {
        Window {
            len_ms,
            start_ms: 0,
            end_ms: len_ms,
            requests: 0,
            tokens: 0,
        }
    }

    /// Moves to the window containing `now`, clearing counters when it changed. Inlined:
    /// nearly every call finds `now` in the current window, two comparisons; the move is
    /// out of line.
    #[inline]
    fn roll(&mut self, now: u64) {
        if !(self.start_ms..self.end_ms).contains(&now) {
            self.move_to(now);
        }
    }

    /// [`Window::roll`] to another window.
    #[inline(never)]
    fn move_to(&mut self, now: u64) {
        self.start_ms = now / self.len_ms * self.len_ms;
        self.end_ms = self.start_ms.saturating_add(self.len_ms);
        self.requests = 0;
        self.tokens = 0;
    }

    /// Which window it is (`now / len`, for any `now` in it).
    #[cfg(test)]
    fn index(&self) -> u64 {
        self.start_ms / self.len_ms
    }

    /// When the current window ends, model ms.
    pub(crate) fn reset_at(&self) -> u64 {
        self.end_ms
    }
}

/// Why a scope refused an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Too many attempts in flight.
    Concurrency,
    /// Requests per minute used up.
    RequestsPerMinute,
    /// Tokens per minute used up.
    TokensPerMinute,
    /// Requests per day used up (quota).
    RequestsPerDay,
    /// Tokens per day used up (quota).
    TokensPerDay,
}

impl Refusal {
    /// Whether this is the daily quota (`insufficient_quota`) rather than a rate limit.
    pub(crate) fn is_quota(self) -> bool {
        matches!(self, Refusal::RequestsPerDay | Refusal::TokensPerDay)
    }

    /// Whether a refusal of this kind uses up a request of the minute window on a scope with
    /// `count_rejected`: every rate-limit refusal does, concurrency included (it is an
    /// unsuccessful request like any other); the daily quota does not (a billing stop, not a
    /// per-minute limit). In a fixed window a refusal for requests per minute only comes once
    /// the window is full, so counting it changes nothing; the quota burns when refusals for
    /// concurrency or tokens land while the window still has requests to give.
    pub(crate) fn counts_when_rejected(self) -> bool {
        !self.is_quota()
    }

    /// The limit's key in `[[provider.scopes]]`, as the journal's `limit` names it.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Refusal::Concurrency => "concurrency",
            Refusal::RequestsPerMinute => "rpm",
            Refusal::TokensPerMinute => "tpm",
            Refusal::RequestsPerDay => "rpd",
            Refusal::TokensPerDay => "tpd",
        }
    }

    /// What the limit counts, as the provider's messages name it.
    fn what(self) -> &'static str {
        match self {
            Refusal::Concurrency => "concurrent requests",
            Refusal::RequestsPerMinute => "requests per min (RPM)",
            Refusal::TokensPerMinute => "tokens per min (TPM)",
            Refusal::RequestsPerDay => "requests per day (RPD)",
            Refusal::TokensPerDay => "tokens per day (TPD)",
        }
    }

    /// A message in the style of the provider's.
    pub(crate) fn describe(self, limit: u64, used: u64) -> String {
        format!(
            "Rate limit reached on {}: Limit {limit}, Used {used}.",
            self.what()
        )
    }

    /// OpenAI's message for a request larger than the whole token limit (`requested`
    /// tokens against `limit`), which no wait lets through.
    pub(crate) fn too_large(self, limit: u64, requested: u64) -> String {
        format!(
            "Request too large on {}: Limit {limit}, Requested {requested}. The input or output tokens must be reduced in order to run successfully.",
            self.what()
        )
    }

    /// OpenAI's error `type` and `code` for this refusal: the `type` names the limit,
    /// `tokens` for tokens per minute and `requests` otherwise; the daily quota is
    /// `insufficient_quota`.
    pub(crate) fn kind_and_code(self) -> (&'static str, &'static str) {
        match self {
            r if r.is_quota() => ("insufficient_quota", "insufficient_quota"),
            Refusal::TokensPerMinute => ("tokens", "rate_limit_exceeded"),
            _ => ("requests", "rate_limit_exceeded"),
        }
    }

    /// The refusal's message for a request charging `charge` tokens against `limit` with
    /// `used` used, told to wait `client_wait_ms` (client ms). A request the token limit
    /// could never hold is told so, as OpenAI tells it, rather than to try again in a while
    /// (it would be refused again, for ever).
    pub(crate) fn message(self, limit: u64, used: u64, charge: u64, client_wait_ms: u64) -> String {
        let never_fits =
            matches!(self, Refusal::TokensPerMinute | Refusal::TokensPerDay) && charge > limit;
        if never_fits {
            self.too_large(limit, charge)
        } else {
            format!(
                "{} Please try again in {}.",
                self.describe(limit, used),
                super::headers::go_duration(client_wait_ms)
            )
        }
    }
}

/// A scope's limits and live counters.
#[derive(Debug, Clone)]
pub(crate) struct ScopeState {
    pub(crate) limits: ScopeLimits,
    pub(crate) minute: Window,
    pub(crate) day: Window,
    /// Admitted attempts not yet departed.
    pub(crate) in_flight: u64,
    /// Until when (model ms) a Retry-After whose answer has already left binds the scope.
    retry_after_until: u64,
    /// Retry-Afters whose answers have not left yet, as `(leaves at, binds until)` model ms,
    /// sorted, soonest departure first. They hold only for an answer's latency, so few are
    /// kept. A sorted queue, not a heap: answers are told in time order and mostly leave in
    /// it (a refusal's latency is a constant), so one goes on at the back and comes off the
    /// front, where a heap sifted on every push and pop, nearly every attempt of a storm.
    retry_after_pending: VecDeque<(u64, u64)>,
    /// Model ms after an answer left during which arrivals are taken as already on the wire.
    transit_allowance: u64,
}

impl ScopeState {
    pub(crate) fn new(limits: ScopeLimits) -> Self {
        ScopeState {
            limits,
            minute: Window::new(MINUTE_MS),
            day: Window::new(DAY_MS),
            in_flight: 0,
            retry_after_until: 0,
            retry_after_pending: VecDeque::new(),
            transit_allowance: 0,
        }
    }

    /// Remembers a Retry-After whose answer leaves at `leaves_ms` and binds the scope until
    /// `until_ms` (model ms). Before the answer left no client could know of it, so the span
    /// starts then.
    ///
    /// One that binds no longer than a span already folded in, or than the last pending one,
    /// which leaves no later, is not kept: by the time it would be folded in, that one has
    /// been, with an `until` as late. In a storm on a full window every refusal is told to
    /// wait for the same reset, so nearly all are such, and the queue stays near empty.
    // Inlined: it is on every refusal's path, and its common case is a push at the back.
    #[inline]
    pub(crate) fn told_retry_after(&mut self, leaves_ms: u64, until_ms: u64) {
        if until_ms > leaves_ms && until_ms > self.retry_after_until {
            let told = (leaves_ms, until_ms);
            let pending = &mut self.retry_after_pending;
            let back = pending.back().copied();
            if back.is_some_and(|(leaves, until)| leaves <= leaves_ms && until >= until_ms) {
                return;
            }
            if back.map_or(true, |last| last <= told) {
                pending.push_back(told);
            } else {
                let at = pending.partition_point(|&p| p <= told);
                pending.insert(at, told);
            }
        }
    }

    /// Model ms after a Retry-After's answer left during which arrivals are excused.
    pub(crate) fn set_transit_allowance(&mut self, model_ms: u64) {
        self.transit_allowance = model_ms;
    }

    /// Whether an attempt arriving at `now` comes back before a Retry-After already
    /// delivered on this scope has passed. Arrivals come in time order, so every span that
    /// has started by `now` is folded into one `until`. A span starts when its answer left
    /// plus the transit allowance: an attempt arriving sooner may have been on the wire.
    pub(crate) fn violates_retry_after(&mut self, now: u64) -> bool {
        while let Some(&(leaves, until)) = self.retry_after_pending.front() {
            if leaves.saturating_add(self.transit_allowance) > now {
                break;
            }
            self.retry_after_pending.pop_front();
            self.retry_after_until = self.retry_after_until.max(until);
        }
        now < self.retry_after_until
    }

    /// The latest time (model ms) a Retry-After given on this scope binds it until, whether
    /// or not its answer has left yet.
    pub(crate) fn retry_after_latest(&self) -> u64 {
        self.retry_after_pending
            .iter()
            .map(|&(_, until)| until)
            .fold(self.retry_after_until, u64::max)
    }

    /// Admits an attempt charging `tokens`, or says which limit refuses it (with the limit
    /// and the amount used before this attempt). Admission counts the request and tokens and
    /// takes a slot; a rate-limit refusal counts one request of the minute window when the
    /// scope has `count_rejected`. (The model admits over several scopes with `check_at`,
    /// then `charge` or `refused`; this is the same for one.)
    #[cfg(test)]
    pub(crate) fn admit(&mut self, now: u64, tokens: u64) -> Result<(), (Refusal, u64, u64)> {
        let refused = self.check_at(now, tokens);
        match refused {
            Ok(()) => self.charge(tokens),
            Err((refusal, _, _)) => self.refused(refusal),
        }
        refused
    }

    /// Which limit, if any, refuses an attempt charging `tokens` at `now`, charging nothing:
    /// an attempt counted against several scopes is checked on all before any is charged.
    // Always inlined: it is on every attempt's path, and mostly compares a few counters
    // (with `roll` and `check` inlined into it, it was no longer inlined itself).
    #[inline(always)]
    pub(crate) fn check_at(&mut self, now: u64, tokens: u64) -> Result<(), (Refusal, u64, u64)> {
        self.minute.roll(now);
        self.day.roll(now);
        self.check(tokens)
    }

    /// Charges an admitted attempt (windows rolled by `check_at`): its request, its tokens
    /// and a concurrency slot until `release`.
    pub(crate) fn charge(&mut self, tokens: u64) {
        self.minute.requests += 1;
        self.minute.tokens += tokens;
        self.day.requests += 1;
        self.day.tokens += tokens;
        self.in_flight += 1;
    }

    /// This scope refused an attempt: with `count_rejected`, the refusal uses up a request
    /// of the minute window.
    pub(crate) fn refused(&mut self, refusal: Refusal) {
        if self.limits.count_rejected && refusal.counts_when_rejected() {
            self.minute.requests += 1;
        }
    }

    /// Which limit, if any, refuses an attempt charging `tokens` (windows already rolled).
    /// Always inlined into `check_at`: a few comparisons, where the call cost as many
    /// again, and its refusal came back through the stack, read back wider than it was
    /// written (a stalled store forwarding, perf showed, on every refused attempt).
    #[inline(always)]
    pub(crate) fn check(&self, tokens: u64) -> Result<(), (Refusal, u64, u64)> {
        let l = &self.limits;
        if let Some(c) = l.concurrency {
            if self.in_flight >= c {
                return Err((Refusal::Concurrency, c, self.in_flight));
            }
        }
        if let Some(rpd) = l.rpd {
            if self.day.requests >= rpd {
                return Err((Refusal::RequestsPerDay, rpd, self.day.requests));
            }
        }
        if let Some(tpd) = l.tpd {
            if self.day.tokens + tokens > tpd {
                return Err((Refusal::TokensPerDay, tpd, self.day.tokens));
            }
        }
        if let Some(rpm) = l.rpm {
            if self.minute.requests >= rpm {
                return Err((Refusal::RequestsPerMinute, rpm, self.minute.requests));
            }
        }
        if let Some(tpm) = l.tpm {
            if self.minute.tokens + tokens > tpm {
                return Err((Refusal::TokensPerMinute, tpm, self.minute.tokens));
            }
        }
        Ok(())
    }

    /// Frees the concurrency slot of a departed attempt.
    pub(crate) fn release(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// How long a refused attempt should wait, model ms from `now`.
    pub(crate) fn wait_ms(&self, refusal: Refusal, now: u64) -> u64 {
        match refusal {
            Refusal::Concurrency => CONCURRENCY_RETRY_MS,
            Refusal::RequestsPerMinute | Refusal::TokensPerMinute => {
                self.minute.reset_at().saturating_sub(now).max(1)
            }
            Refusal::RequestsPerDay | Refusal::TokensPerDay => {
                self.day.reset_at().saturating_sub(now).max(1)
            }
        }
    }

    /// Rolls the windows to `now` so headers read current counters.
    pub(crate) fn refresh(&mut self, now: u64) {
        self.minute.roll(now);
        self.day.roll(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_rolls_exactly_where_dividing_the_time_would() {
        let mut w = Window::new(MINUTE_MS);
        // Forward, across boundaries, standing still and (a restarted clock) backwards.
        let times = [
            0, 1, 59_999, 60_000, 60_001, 119_999, 500_000, 500_000, 61_000, 0,
        ];
        let mut index = 0;
        for now in times {
            w.requests += 1;
            let before = w.requests;
            w.roll(now);
            let expected = now / MINUTE_MS;
            assert_eq!(w.index(), expected, "at {now}");
            assert_eq!(w.reset_at(), (expected + 1) * MINUTE_MS);
            let kept = if expected == index { before } else { 0 };
            assert_eq!(
                w.requests, kept,
                "counters kept within a window, cleared across"
            );
            index = expected;
        }
    }

    fn scope(f: impl FnOnce(&mut ScopeLimits)) -> ScopeState {
        let mut l = ScopeLimits::unlimited("s");
        f(&mut l);
        ScopeState::new(l)
    }

    #[test]
    fn rpm_refuses_until_the_fixed_window_resets() {
        let mut s = scope(|l| l.rpm = Some(2));
        assert!(s.admit(1_000, 0).is_ok());
        assert!(s.admit(2_000, 0).is_ok());
        let (r, limit, used) = s.admit(3_000, 0).unwrap_err();
        assert_eq!((r, limit, used), (Refusal::RequestsPerMinute, 2, 2));
        assert_eq!(s.wait_ms(r, 3_000), 57_000);
        assert!(s.admit(60_000, 0).is_ok(), "new window");
    }

    #[test]
    fn tpm_counts_tokens_and_refuses_what_does_not_fit() {
        let mut s = scope(|l| l.tpm = Some(1_000));
        assert!(s.admit(0, 600).is_ok());
        assert_eq!(s.admit(0, 500).unwrap_err().0, Refusal::TokensPerMinute);
        assert!(s.admit(0, 400).is_ok());
    }

    #[test]
    fn daily_quota_is_quota_and_waits_for_the_day() {
        let mut s = scope(|l| {
            l.rpd = Some(1);
            l.tpd = Some(10);
        });
        assert!(s.admit(0, 5).is_ok());
        let (r, _, _) = s.admit(1_000, 1).unwrap_err();
        assert!(r.is_quota());
        assert_eq!(s.wait_ms(r, 1_000), DAY_MS - 1_000);
        let mut t = scope(|l| l.tpd = Some(10));
        assert!(t.admit(0, 8).is_ok());
        assert_eq!(t.admit(0, 3).unwrap_err().0, Refusal::TokensPerDay);
    }

    #[test]
    fn refusals_cost_nothing_without_count_rejected() {
        let mut s = scope(|l| {
            l.rpm = Some(2);
            l.tpm = Some(100);
            l.concurrency = Some(1);
        });
        assert!(s.admit(0, 80).is_ok());
        assert_eq!(s.admit(0, 10).unwrap_err().0, Refusal::Concurrency);
        s.release();
        assert_eq!(s.admit(0, 50).unwrap_err().0, Refusal::TokensPerMinute);
        assert_eq!((s.minute.requests, s.minute.tokens), (1, 80));
        assert!(s.admit(0, 10).is_ok(), "the second request is still there");
    }

    #[test]
    fn count_rejected_charges_a_request_but_not_tokens_for_each_refusal() {
        let mut s = scope(|l| {
            l.rpm = Some(3);
            l.tpm = Some(100);
            l.concurrency = Some(1);
            l.count_rejected = true;
        });
        assert!(s.admit(0, 80).is_ok());
        assert_eq!(s.admit(0, 10).unwrap_err().0, Refusal::Concurrency);
        s.release();
        let (r, _, used) = s.admit(0, 50).unwrap_err();
        assert_eq!((r, used), (Refusal::TokensPerMinute, 80), "used before it");
        assert_eq!((s.minute.requests, s.minute.tokens), (3, 80));
        // 10 tokens fit the TPM, but the refusals took the window's requests.
        let (r, limit, used) = s.admit(1_000, 10).unwrap_err();
        assert_eq!((r, limit, used), (Refusal::RequestsPerMinute, 3, 3));
        assert_eq!(s.minute.requests, 4, "an RPM refusal counts too");
        assert_eq!(s.day.requests, 1, "only the per-minute window pays");
        assert!(s.admit(60_000, 10).is_ok(), "new window");
    }

    #[test]
    fn count_rejected_leaves_the_daily_quota_alone() {
        let mut s = scope(|l| {
            l.rpm = Some(5);
            l.rpd = Some(1);
            l.count_rejected = true;
        });
        assert!(s.admit(0, 0).is_ok());
        for t in 1..4 {
            assert!(s.admit(t, 0).unwrap_err().0.is_quota());
        }
        assert_eq!(s.minute.requests, 1);
    }

    #[test]
    fn a_retry_after_binds_from_when_its_answer_leaves() {
        let mut s = scope(|_| {});
        s.told_retry_after(100, 1_100);
        assert!(!s.violates_retry_after(50), "answer not out yet");
        assert!(s.violates_retry_after(100));
        assert!(s.violates_retry_after(1_099));
        assert!(!s.violates_retry_after(1_100));
        s.told_retry_after(2_000, 2_500);
        s.told_retry_after(1_500, 1_600);
        assert_eq!(s.retry_after_latest(), 2_500);
        assert!(s.violates_retry_after(1_550));
        assert!(!s.violates_retry_after(1_700));
        assert!(s.violates_retry_after(2_000));
    }

    /// The Retry-Afters kept pending before this module left out the ones a kept span
    /// covers: every one, in order of telling.
    #[derive(Default)]
    struct EveryRetryAfter {
        until: u64,
        pending: Vec<(u64, u64)>,
        transit: u64,
    }

    impl EveryRetryAfter {
        fn told(&mut self, leaves: u64, until: u64) {
            if until > leaves {
                self.pending.push((leaves, until));
                self.pending.sort_unstable();
            }
        }

        fn violates(&mut self, now: u64) -> bool {
            let transit = self.transit;
            let (started, waiting) = self
                .pending
                .iter()
                .partition(|&&(leaves, _)| leaves.saturating_add(transit) <= now);
            self.pending = waiting;
            let started: Vec<(u64, u64)> = started;
            self.until = started.iter().map(|&(_, u)| u).fold(self.until, u64::max);
            now < self.until
        }

        fn latest(&self) -> u64 {
            self.pending
                .iter()
                .map(|&(_, u)| u)
                .fold(self.until, u64::max)
        }
    }

    proptest::proptest! {
        /// Leaving out a Retry-After a kept span covers changes no answer: for any order of
        /// tellings (mostly in time, some out of it) and arrivals, which arrivals violate one
        /// and the latest binding are those of a queue that keeps every one.
        #[test]
        fn pending_retry_afters_covered_by_another_change_nothing(
            steps in proptest::collection::vec(
                (0u64..8, proptest::bool::ANY, 0u64..6, 0u64..3_000, 0u64..10),
                1..200,
            ),
            transit in 0u64..6,
        ) {
            let mut s = scope(|_| {});
            s.set_transit_allowance(transit);
            let mut every = EveryRetryAfter { transit, ..EveryRetryAfter::default() };
            let mut now = 0;
            for (gap, tell, back, wait, latency) in steps {
                now += gap;
                if tell {
                    // Mostly leaving after `now`, sometimes told out of order; mostly told
                    // to wait for the window's reset, as a storm on a full window is.
                    let leaves = (now + latency).saturating_sub(back);
                    let until = match wait % 3 {
                        0 => leaves + wait % 40,
                        _ => (now / 100 + 1) * 100,
                    };
                    s.told_retry_after(leaves, until);
                    every.told(leaves, until);
                }
                let violates = s.violates_retry_after(now);
                proptest::prop_assert_eq!(violates, every.violates(now), "at {}", now);
                proptest::prop_assert_eq!(s.retry_after_latest(), every.latest());
            }
        }
    }

    #[test]
    fn concurrency_holds_slots_until_release() {
        let mut s = scope(|l| l.concurrency = Some(1));
        assert!(s.admit(0, 0).is_ok());
        assert_eq!(s.admit(0, 0).unwrap_err().0, Refusal::Concurrency);
        s.release();
        assert!(s.admit(0, 0).is_ok());
    }
}
