//! A token bucket for shaping the rate before the provider has to refuse anything: one per
//! scope for requests and one for tokens.
//!
//! The bucket refills `capacity` per `window_ms`, continuously. To keep fractional refills
//! exact with integer arithmetic, the level is kept in *units* of `1 / window_ms` token: one
//! token is `window_ms` units and every millisecond adds `capacity` units. The level may go
//! below zero: that is debt (a reservation larger than the bucket, or usage above what was
//! reserved), paid back by refill before anything else is granted.

use crate::time::Millis;

/// A continuously refilling token bucket with reservations, reconciliation and debt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBucket {
    /// Tokens per window (tokens).
    capacity: u64,
    /// Refill window (ms), at least 1.
    window_ms: Millis,
    /// A full bucket in units (`capacity * window_ms`, saturating): read at every refill
    /// and reservation, so kept rather than multiplied again each time.
    full: i128,
    /// Current level in units (`window_ms` units per token); negative is debt.
    level: i128,
    /// Time of the last refill (ms).
    last: Millis,
    /// No refill before this time (ms): the provider said nothing remains until its reset.
    hold_until: Millis,
    /// Units taken beyond what was available, over the bucket's life.
    debt_units: u128,
    /// Reconciliations whose actual usage was unknown.
    uncertain: u64,
}

impl TokenBucket {
    /// A full bucket of `capacity` tokens refilling `capacity` per `window_ms` ms.
    /// A window of 0 is taken as 1 ms. A capacity of 0 grants nothing, ever.
    pub fn new(capacity: u64, window_ms: Millis, now: Millis) -> TokenBucket {
        let window_ms = window_ms.max(1);
        TokenBucket {
            capacity,
            window_ms,
            full: full_units(capacity, window_ms),
            level: full_units(capacity, window_ms),
            last: now,
            hold_until: 0,
            debt_units: 0,
            uncertain: 0,
        }
    }

    /// Tokens granted per window (tokens).
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    #[inline]
    fn full(&self) -> i128 {
        self.full
    }

    fn units(&self, tokens: u64) -> i128 {
        product(tokens, self.window_ms)
    }

    /// Credits the refill since the last call. Time going backwards refills nothing.
    #[inline]
    fn refill(&mut self, now: Millis) {
        if now <= self.last {
            return;
        }
        let start = self.last.max(self.hold_until);
        if now > start {
            let credit = product(now - start, self.capacity);
            self.level = self.level.saturating_add(credit).min(self.full());
        }
        self.last = now;
    }

    /// Takes `units` from the level, recording whatever goes below zero as debt.
    fn take(&mut self, units: i128) {
        if units <= self.level && units >= 0 {
            // The level stays at or above zero: no debt before or after.
            self.level -= units;
            return;
        }
        let before_debt = (-self.level).max(0);
        self.level = self.level.saturating_sub(units);
        let after_debt = (-self.level).max(0);
        self.debt_units = self
            .debt_units
            .saturating_add((after_debt - before_debt).unsigned_abs());
    }

    /// Gives `units` back, never above a full bucket.
    fn give(&mut self, units: i128) {
        self.level = self.level.saturating_add(units).min(self.full());
    }

    /// Whole tokens available now (fractions of a token are not available yet). The
    /// scheduler only ever asks `try_reserve`; the tests read the level through this.
    #[cfg(test)]
    pub fn available(&mut self, now: Millis) -> u64 {
        self.refill(now);
        let tokens = self.level.max(0) / i128::from(self.window_ms);
        u64::try_from(tokens).unwrap_or(u64::MAX)
    }

    /// Reserves `amount` tokens now, or says when (ms) they will be available.
    ///
    /// An amount larger than the capacity is granted when the bucket is full, taking the
    /// level below zero as recorded debt, so a huge request waits for a full bucket instead
    /// of starving forever. Zero is always granted. With a capacity of 0 nothing else is
    /// ever granted (`Err(Millis::MAX)`). The scheduler asks `try_reserve_keeping` (a keep
    /// of 0 is this); the tests ask this.
    #[cfg(test)]
    pub fn try_reserve(&mut self, amount: u64, now: Millis) -> Result<(), Millis> {
        self.try_reserve_keeping(amount, 0.0, now)
    }

    /// Like `try_reserve`, but grants only when `keep` (a fraction of the
    /// capacity, 0 to 1) is still left in the bucket afterwards; otherwise says when (ms)
    /// refill will have brought the level that high. An amount that cannot fit above the
    /// kept part waits for a full bucket, like an oversized one, so it is never starved.
    /// A `keep` of 0 (or less, or NaN) is exactly `try_reserve`.
    #[inline]
    pub fn try_reserve_keeping(
        &mut self,
        amount: u64,
        keep: f64,
        now: Millis,
    ) -> Result<(), Millis> {
        self.refill(now);
        if amount == 0 {
            return Ok(());
        }
        // The common case, inline: nothing kept and the amount on hand. It is what the
        // general path does then (its target, `need` capped at a full bucket, is at most
        // `need`, and taking `need` from a level at least as high records no debt), without
        // the float arithmetic of `keep` and the wait of a refusal, which stay out of line.
        // Something is kept only for a `keep` above 0 (NaN keeps nothing, as in `kept_units`).
        let keeps = keep > 0.0;
        if !keeps && self.capacity > 0 {
            let need = self.units(amount);
            if need <= self.level {
                self.level -= need;
                return Ok(());
            }
        }
        self.reserve_or_wait(amount, keep, now)
    }

    /// [`TokenBucket::try_reserve_keeping`] of a non-zero `amount` once refilled at `now`,
    /// for every case but a plain grant: a part kept, debt, or a refusal.
    #[inline(never)]
    fn reserve_or_wait(&mut self, amount: u64, keep: f64, now: Millis) -> Result<(), Millis> {
        if self.capacity == 0 {
            return Err(Millis::MAX);
        }
        let need = self.units(amount);
        // An oversized request needs a full bucket, a normal one just its own amount (plus
        // what must stay in the bucket).
        let target = need.saturating_add(self.kept_units(keep)).min(self.full());
        if self.level >= target {
            self.take(need);
            return Ok(());
        }
        let deficit = target - self.level;
        let ready_from = now.max(self.hold_until);
        Err(ready_from.saturating_add(refill_ms(deficit, self.capacity)))
    }

    /// `keep` of the capacity in units, rounded to the nearest unit (a unit is a
    /// `1 / window_ms` token, so rounding never moves a whole token).
    fn kept_units(&self, keep: f64) -> i128 {
        if keep > 0.0 {
            let full = self.full();
            // `as` saturates on floats; the product is at most `full` for keep <= 1.
            ((keep.min(1.0) * full as f64).round() as i128).clamp(0, full)
        } else {
            0
        }
    }

    /// Settles a reservation of `reserved` tokens against what was really used.
    ///
    /// - `Some(actual)` below the reservation releases the difference;
    /// - `Some(actual)` above it takes the extra, into recorded debt if need be;
    /// - `None` (usage unknown, e.g. a cut connection) keeps the whole reservation as the
    ///   upper estimate and counts one uncertain reconciliation.
    pub fn reconcile(&mut self, reserved: u64, actual: Option<u64>, now: Millis) {
        self.refill(now);
        match actual {
            None => self.uncertain = self.uncertain.saturating_add(1),
            Some(actual) if actual < reserved => self.give(self.units(reserved - actual)),
            Some(actual) => self.take(self.units(actual - reserved)),
        }
    }

    /// Gives back a reservation that was never used (a cancelled or unsent attempt).
    pub fn release(&mut self, amount: u64, now: Millis) {
        self.refill(now);
        self.give(self.units(amount));
    }

    /// Lowers the level by `amount` tokens someone else spent from the same budget (a peer
    /// instance), below zero if need be. Unlike a reservation it is not this bucket's debt:
    /// the level just has further to refill before anything is granted.
    pub fn spend_elsewhere(&mut self, amount: u64, now: Millis) {
        self.refill(now);
        self.level = self.level.saturating_sub(self.units(amount));
    }

    /// Tokens taken beyond what was available, over the bucket's life (tokens, rounded up).
    pub fn debt(&self) -> u64 {
        let tokens = self.debt_units.div_ceil(u128::from(self.window_ms));
        u64::try_from(tokens).unwrap_or(u64::MAX)
    }

    /// How far below zero the level is right now, as of the last event (tokens, rounded up).
    #[cfg(test)]
    pub fn outstanding_debt(&self) -> u64 {
        let units = (-self.level).max(0).unsigned_abs();
        u64::try_from(units.div_ceil(u128::from(self.window_ms))).unwrap_or(u64::MAX)
    }

    /// Reconciliations whose actual usage was unknown.
    pub fn uncertain(&self) -> u64 {
        self.uncertain
    }

    /// Aligns the bucket with the provider's rate-limit headers: `remaining` tokens left,
    /// full again in `reset_ms`. Local availability is lowered to `remaining`, never raised;
    /// when nothing remains, refill is held until the reset so the bucket does not trickle
    /// requests into a window the provider has closed.
    pub fn pace(&mut self, remaining: u64, reset_ms: Millis, now: Millis) {
        self.refill(now);
        self.level = self.level.min(self.units(remaining));
        if remaining == 0 {
            self.hold_until = self.hold_until.max(now.saturating_add(reset_ms));
        }
    }
}

fn full_units(capacity: u64, window_ms: Millis) -> i128 {
    product(capacity, window_ms)
}

/// `a * b` as units, saturating at `i128::MAX`: exactly
/// `i128::from(a).saturating_mul(i128::from(b))`, but one 64-by-64-bit multiply, since
/// the product of two `u64` always fits a `u128` (a signed 128-bit saturating multiply is
/// a few dozen instructions, and the bucket makes several at every reservation).
#[inline]
fn product(a: u64, b: u64) -> i128 {
    i128::try_from(u128::from(a) * u128::from(b)).unwrap_or(i128::MAX)
}

/// Milliseconds of refill at `capacity` units a millisecond until a `deficit` (units, more
/// than 0) is made up, rounded up and saturating at `u64::MAX`. A deficit that fits a `u64`
/// (every one but a bucket's of more than about 10^19 units) is divided in 64 bits, any
/// other in 128.
#[inline]
fn refill_ms(deficit: i128, capacity: u64) -> u64 {
    debug_assert!(deficit > 0 && capacity > 0);
    match u64::try_from(deficit) {
        Ok(deficit) => deficit.div_ceil(capacity),
        Err(_) => {
            let deficit = u128::try_from(deficit).unwrap_or(0);
            u64::try_from(deficit.div_ceil(u128::from(capacity))).unwrap_or(u64::MAX)
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn new_bucket_is_full() {
        let mut bucket = TokenBucket::new(600, 60_000, 5);
        assert_eq!(bucket.available(5), 600);
    }

    #[test]
    fn refill_is_continuous_and_keeps_fractions_exactly() {
        // 600 per minute: one token every 100 ms, and a third of a token is not lost.
        let mut bucket = TokenBucket::new(600, 60_000, 0);
        assert!(bucket.try_reserve(600, 0).is_ok());
        assert_eq!(bucket.available(99), 0);
        assert_eq!(bucket.available(100), 1);
        // 7 per 3 ms: fractional per-ms refill, summed over many small steps.
        let mut odd = TokenBucket::new(7, 3, 0);
        assert!(odd.try_reserve(7, 0).is_ok());
        for t in 1..=300 {
            let _ = odd.available(t);
        }
        let mut direct = TokenBucket::new(7, 3, 0);
        assert!(direct.try_reserve(7, 0).is_ok());
        assert_eq!(odd.available(300), direct.available(300));
        assert_eq!(bucket.available(1_000_000), 600, "refill stops at capacity");
    }

    #[test]
    fn reservation_fails_with_the_time_tokens_will_be_available() {
        let mut bucket = TokenBucket::new(10, 1_000, 0);
        assert!(bucket.try_reserve(10, 0).is_ok());
        // 3 tokens at 10/s: 300 ms.
        assert_eq!(bucket.try_reserve(3, 0), Err(300));
        assert_eq!(bucket.try_reserve(3, 299), Err(300));
        assert_eq!(bucket.try_reserve(3, 300), Ok(()));
    }

    #[test]
    fn oversized_reservation_waits_for_a_full_bucket_then_goes_into_debt() {
        let mut bucket = TokenBucket::new(10, 1_000, 0);
        assert!(bucket.try_reserve(4, 0).is_ok());
        assert_eq!(
            bucket.try_reserve(25, 0),
            Err(400),
            "needs a full bucket, not 25 tokens"
        );
        assert_eq!(bucket.try_reserve(25, 400), Ok(()));
        assert_eq!(bucket.debt(), 15);
        assert_eq!(bucket.outstanding_debt(), 15);
        assert_eq!(bucket.available(400), 0);
        // The debt is paid back before anything is granted: 15 tokens of debt + 1 token.
        assert_eq!(bucket.try_reserve(1, 400), Err(400 + 1_600));
    }

    #[test]
    fn token_bucket_records_debt_when_usage_exceeds_reservation() {
        let mut bucket = TokenBucket::new(100, 1_000, 0);
        assert!(bucket.try_reserve(90, 0).is_ok());
        bucket.reconcile(90, Some(130), 0);
        assert_eq!(bucket.debt(), 30, "10 were left, 40 extra taken");
        assert_eq!(bucket.outstanding_debt(), 30);
        assert_eq!(bucket.available(0), 0);
        assert_eq!(bucket.available(400), 10);
    }

    #[test]
    fn usage_below_reservation_releases_the_difference() {
        let mut bucket = TokenBucket::new(100, 1_000, 0);
        assert!(bucket.try_reserve(80, 0).is_ok());
        bucket.reconcile(80, Some(30), 0);
        assert_eq!(bucket.available(0), 70);
        assert_eq!(bucket.debt(), 0);
    }

    #[test]
    fn unknown_usage_keeps_upper_estimate_and_is_marked_uncertain() {
        let mut bucket = TokenBucket::new(100, 1_000, 0);
        assert!(bucket.try_reserve(80, 0).is_ok());
        bucket.reconcile(80, None, 0);
        assert_eq!(bucket.available(0), 20, "the reservation stays taken");
        assert_eq!(bucket.uncertain(), 1);
    }

    #[test]
    fn cancelled_reservation_gives_its_tokens_back() {
        let mut bucket = TokenBucket::new(100, 1_000, 0);
        assert!(bucket.try_reserve(60, 0).is_ok());
        bucket.release(60, 0);
        assert_eq!(bucket.available(0), 100);
        bucket.release(60, 0);
        assert_eq!(
            bucket.available(0),
            100,
            "a release never fills beyond capacity"
        );
    }

    #[test]
    fn provider_headers_lower_availability_but_never_raise_it() {
        let mut bucket = TokenBucket::new(100, 1_000, 0);
        bucket.pace(40, 600, 0);
        assert_eq!(bucket.available(0), 40);
        assert!(bucket.try_reserve(30, 0).is_ok());
        bucket.pace(90, 100, 0);
        assert_eq!(
            bucket.available(0),
            10,
            "remaining above local level does not raise it"
        );
    }

    #[test]
    fn nothing_remaining_holds_refill_until_the_provider_reset() {
        let mut bucket = TokenBucket::new(100, 1_000, 0);
        bucket.pace(0, 5_000, 0);
        assert_eq!(bucket.available(4_999), 0);
        assert_eq!(bucket.try_reserve(10, 1_000), Err(5_100));
        assert_eq!(bucket.available(5_100), 10);
    }

    #[test]
    fn keeping_a_fraction_grants_only_above_it_and_says_when() {
        // 10 per second, 30 % kept: 7 single grants out of a full bucket, then a wait for
        // the level to reach 3 + 1 tokens (100 ms a token).
        let mut bucket = TokenBucket::new(10, 1_000, 0);
        for _ in 0..7 {
            assert_eq!(bucket.try_reserve_keeping(1, 0.3, 0), Ok(()));
        }
        assert_eq!(bucket.try_reserve_keeping(1, 0.3, 0), Err(100));
        assert_eq!(bucket.available(0), 3, "the kept part is untouched");
        // Work that keeps nothing still takes the rest.
        assert_eq!(bucket.try_reserve(3, 0), Ok(()));
        assert_eq!(bucket.try_reserve_keeping(1, 0.3, 0), Err(400));
        assert_eq!(bucket.try_reserve_keeping(1, 0.3, 399), Err(400));
        assert_eq!(bucket.try_reserve_keeping(1, 0.3, 400), Ok(()));
        // Too big to fit above the kept part: waits for a full bucket, never starves.
        let mut big = TokenBucket::new(10, 1_000, 0);
        assert!(big.try_reserve(1, 0).is_ok());
        assert_eq!(big.try_reserve_keeping(8, 0.3, 0), Err(100));
        assert_eq!(big.try_reserve_keeping(8, 0.3, 100), Ok(()));
        assert_eq!(big.available(100), 2);
        // Keeping nothing is plain `try_reserve`.
        let (mut a, mut b) = (
            TokenBucket::new(10, 1_000, 0),
            TokenBucket::new(10, 1_000, 0),
        );
        for t in [0, 0, 50, 50, 300] {
            assert_eq!(a.try_reserve_keeping(4, 0.0, t), b.try_reserve(4, t));
        }
    }

    #[test]
    fn zero_capacity_grants_nothing_and_time_going_back_refills_nothing() {
        let mut empty = TokenBucket::new(0, 1_000, 0);
        assert_eq!(empty.try_reserve(1, 10), Err(Millis::MAX));
        assert_eq!(empty.try_reserve(0, 10), Ok(()));
        let mut bucket = TokenBucket::new(10, 1_000, 1_000);
        assert!(bucket.try_reserve(10, 1_000).is_ok());
        assert_eq!(bucket.available(500), 0);
        assert_eq!(bucket.available(1_100), 1);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Reserve(u64),
        Reconcile(u64, Option<u64>),
        Release(u64),
        Pace(u64, u64),
    }

    fn op() -> impl Strategy<Value = (u64, Op)> {
        let op = prop_oneof![
            (0u64..300).prop_map(Op::Reserve),
            (0u64..200, proptest::option::of(0u64..300)).prop_map(|(r, a)| Op::Reconcile(r, a)),
            (0u64..100).prop_map(Op::Release),
            (0u64..150, 0u64..5_000).prop_map(|(r, t)| Op::Pace(r, t)),
        ];
        (0u64..2_000, op)
    }

    proptest! {
        /// The bucket's fast arithmetic gives what the signed 128-bit reference gives, at
        /// the edges of `u64` too.
        #[test]
        fn product_and_refill_time_match_the_128_bit_reference(
            a in prop_oneof![any::<u64>(), 0u64..1_000_000, Just(u64::MAX)],
            b in prop_oneof![any::<u64>(), 1u64..1_000_000, Just(u64::MAX)],
            deficit in prop_oneof![1i128..1_000_000_000, 1i128..=i128::MAX, Just(i128::MAX)],
        ) {
            prop_assert_eq!(product(a, b), i128::from(a).saturating_mul(i128::from(b)));
            let capacity = b.max(1);
            let reference = deficit.div_euclid(i128::from(capacity))
                + i128::from(deficit.rem_euclid(i128::from(capacity)) != 0);
            prop_assert_eq!(
                refill_ms(deficit, capacity),
                u64::try_from(reference).unwrap_or(u64::MAX)
            );
        }

        #[test]
        fn bucket_never_exceeds_capacity_and_grants_only_when_tokens_or_full(
            capacity in 1u64..200,
            window in 1u64..10_000,
            ops in proptest::collection::vec(op(), 1..60),
        ) {
            let mut bucket = TokenBucket::new(capacity, window, 0);
            let mut now = 0;
            for (step, op) in ops {
                now += step;
                let before = bucket.available(now);
                prop_assert!(before <= capacity);
                match op {
                    Op::Reserve(amount) => {
                        let granted = bucket.try_reserve(amount, now);
                        if granted.is_ok() {
                            prop_assert!(amount <= before || before == capacity,
                                "granted {} with {} available of {}", amount, before, capacity);
                        } else {
                            prop_assert!(amount > before);
                            let at = granted.unwrap_err();
                            prop_assert!(at > now);
                            // The promised time is honoured (absent other events).
                            let mut probe = bucket.clone();
                            prop_assert!(probe.try_reserve(amount, at).is_ok());
                        }
                    }
                    Op::Reconcile(reserved, actual) => bucket.reconcile(reserved, actual, now),
                    Op::Release(amount) => bucket.release(amount, now),
                    Op::Pace(remaining, reset) => {
                        bucket.pace(remaining, reset, now);
                        prop_assert!(bucket.available(now) <= before.min(remaining));
                    }
                }
                prop_assert!(bucket.available(now) <= capacity);
            }
        }

        /// The inline grant of `try_reserve_keeping` changes the bucket and answers exactly
        /// as its general path (`reserve_or_wait`, which alone is what every reservation
        /// took before) does, whatever the keep, the debt or the capacity (0 included).
        #[test]
        fn the_inline_grant_is_the_general_path(
            capacity in prop_oneof![Just(0u64), 1u64..200, Just(u64::MAX)],
            window in prop_oneof![1u64..10_000, Just(u64::MAX)],
            keep in prop_oneof![Just(0.0f64), Just(-1.0), Just(f64::NAN), 0.0f64..=1.0],
            ops in proptest::collection::vec(op(), 1..60),
        ) {
            let mut fast = TokenBucket::new(capacity, window, 0);
            let mut general = fast.clone();
            let mut now = 0;
            for (step, op) in ops {
                now += step;
                match op {
                    Op::Reserve(amount) => {
                        let granted = fast.try_reserve_keeping(amount, keep, now);
                        general.refill(now);
                        let expected = if amount == 0 {
                            Ok(())
                        } else {
                            general.reserve_or_wait(amount, keep, now)
                        };
                        prop_assert_eq!(granted, expected);
                    }
                    // Usage above the reservation puts the level in debt.
                    Op::Reconcile(reserved, actual) => {
                        fast.reconcile(reserved, actual, now);
                        general.reconcile(reserved, actual, now);
                    }
                    Op::Release(amount) => {
                        fast.release(amount, now);
                        general.release(amount, now);
                    }
                    Op::Pace(remaining, reset) => {
                        fast.pace(remaining, reset, now);
                        general.pace(remaining, reset, now);
                    }
                }
                prop_assert_eq!(&fast, &general);
            }
        }

        #[test]
        fn keeping_leaves_the_kept_part_or_waits_for_a_full_bucket(
            capacity in 1u64..200,
            window in 1u64..10_000,
            keep in 0.01f64..0.99,
            ops in proptest::collection::vec((0u64..2_000, 0u64..300, any::<bool>()), 1..60),
        ) {
            let mut bucket = TokenBucket::new(capacity, window, 0);
            let kept = bucket.kept_units(keep);
            let mut now = 0;
            for (step, amount, bulk) in ops {
                now += step;
                if !bulk {
                    let _ = bucket.try_reserve(amount, now);
                    continue;
                }
                bucket.refill(now);
                let (before, full) = (bucket.level, bucket.level == bucket.full());
                match bucket.try_reserve_keeping(amount, keep, now) {
                    Ok(()) => prop_assert!(
                        amount == 0 || bucket.level >= kept || full,
                        "granted {} at level {} of {} keeping {}", amount, before,
                        bucket.full(), kept
                    ),
                    Err(at) => {
                        prop_assert!(at > now);
                        let mut probe = bucket.clone();
                        prop_assert!(probe.try_reserve_keeping(amount, keep, at).is_ok());
                        if at > now + 1 {
                            let mut early = bucket.clone();
                            prop_assert!(early.try_reserve_keeping(amount, keep, at - 1).is_err());
                        }
                    }
                }
            }
        }
    }
}
