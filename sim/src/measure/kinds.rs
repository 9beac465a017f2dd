//! Kinds of journal entries: what an entry's labels decide, worked out once per kind.
//!
//! Much of what an attempt moves follows from its labels alone (outcome, route, method,
//! error code, limit) with its status and two flags: its route's tally, whether it was a
//! success, its place in the errors table, whether it is a record write or a look-up,
//! whether it leaves a write uncertain, its retry group and its limit. Finding those by
//! comparing texts was a good part of measuring an attempt. An entry whose labels the
//! provider wrote from its static tables (see `labels`) has a [`KindKey`] made of their
//! addresses, and the run's kinds are kept with their [`Facts`]: consecutive attempts are
//! nearly always of the kind before, found by comparing a few words. Facts are a pure
//! function of the key's labels, status and flags (the tallies they point at are made on
//! first sight and never move), so a kind's facts are those a fresh look would find; an
//! entry with a label made at run time is looked at afresh each time.

use super::decided::Decided;
use super::labels::StaticKey;

/// The labels, status and flags that decide an entry's [`Facts`], the labels by address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KindKey {
    outcome: &'static str,
    route: &'static str,
    method: &'static str,
    /// The error code, if it has one.
    error_code: Option<&'static str>,
    /// The limit that refused it, if one did.
    limit: Option<&'static str>,
    status: Option<u16>,
    committed: bool,
    undelivered: bool,
}

impl KindKey {
    /// The key of `e`, when every label it reads is a static.
    pub(crate) fn of(e: &Decided<'_>) -> Option<Self> {
        let s = e.statics();
        Some(Self {
            outcome: s.outcome?,
            route: s.route?,
            method: s.method?,
            error_code: match e.error_code() {
                None => None,
                Some(_) => Some(s.error_code?),
            },
            limit: match e.limit() {
                None => None,
                Some(_) => Some(s.limit?),
            },
            status: e.status(),
            committed: e.committed(),
            undelivered: e.undelivered(),
        })
    }

    fn same(&self, other: &Self) -> bool {
        self.status == other.status
            && self.committed == other.committed
            && self.undelivered == other.undelivered
            && self.outcome.same(other.outcome)
            && same_option(self.error_code, other.error_code)
            && self.route.same(other.route)
            && self.method.same(other.method)
            && same_option(self.limit, other.limit)
    }

    /// Whether `e` is of this kind, compared with the entry where it lies (no key made).
    ///
    /// A label is compared by where its text is and its length, whether the provider
    /// wrote it from its tables or made it at run time: a key's labels are statics, and a
    /// text at a static's address with its length is that static (a text made at run time
    /// lives elsewhere, but for an empty one, whose text is then the same). So a label
    /// that compares the same is the same text, and the entry's facts are the kind's.
    #[inline]
    fn is_of(&self, e: &Decided<'_>) -> bool {
        let labels = e.labels();
        self.status == e.status()
            && self.committed == e.committed()
            && self.undelivered == e.undelivered()
            && at(labels.outcome, self.outcome)
            && at_option(labels.error_code, self.error_code)
            && at(labels.route, self.route)
            && at(labels.method, self.method)
            && at_option(labels.limit, self.limit)
    }
}

/// Whether two optional statics are both absent or the same static.
fn same_option(a: Option<&'static str>, b: Option<&'static str>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same(b),
        _ => false,
    }
}

/// Whether `label` is the text at `key`'s address, with its length.
#[inline]
fn at(label: &str, key: &'static str) -> bool {
    std::ptr::eq(label, key)
}

/// [`at`] for an optional label and key: both absent, or the same.
#[inline]
fn at_option(label: Option<&str>, key: Option<&'static str>) -> bool {
    match (label, key) {
        (None, None) => true,
        (Some(label), Some(key)) => at(label, key),
        _ => false,
    }
}

/// What an entry's labels, status and flags decide (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Facts {
    /// The position of its `METHOD /template` in the route grouping.
    pub route: u32,
    /// Answered with success and the answer taken (`answered_success` and not
    /// `undelivered`).
    pub success: bool,
    /// Its place in the errors table, when not a success.
    pub error_at: usize,
    /// A record create (`POST /v1/records`).
    pub create: bool,
    /// A record look-up (`GET /v1/records...`): a reconciliation.
    pub lookup: bool,
    /// A create that leaves the client unable to know whether it executed (or that
    /// committed): see `blind_resends`.
    pub unsure: bool,
    /// Its answer's retry group (`retry_groups::group_of`).
    pub group: u8,
    /// The index of the limit that refused it (`billing::LIMITS`), if one did.
    pub limit: Option<u8>,
    /// A duplicate of it is a duplicate write (its route is `/v1/records`).
    pub duplicate_write: bool,
    /// Committed with its answer never taken: its tokens are undelivered tokens.
    pub undelivered: bool,
    /// Its column of the timeseries row's statuses ([`super::Column`]).
    pub column: super::Column,
    /// Its kind's place among the kinds met ([`Kinds::facts_at`]); [`NO_KIND`] for an
    /// entry looked at afresh.
    pub kind: u32,
}

/// [`Facts::kind`] of an entry looked at afresh, which has no kind.
pub(crate) const NO_KIND: u32 = u32::MAX;

/// The kinds a run has met, with their facts and the attempts of each not yet added to the
/// summary's counts by status.
#[derive(Debug, Default)]
pub(crate) struct Kinds {
    kinds: Vec<(KindKey, Facts)>,
    /// Attempts by kind (the index of `kinds`) not yet added to `summary.status_counts`.
    pending: Vec<u64>,
    /// The kind found last.
    last: usize,
}

impl Kinds {
    /// The facts of entry `e` when it is of the kind found last, the attempt counted in
    /// its pending attempts; `None` otherwise (then [`KindKey::of`] and
    /// [`Kinds::count_other`]).
    #[inline]
    pub(crate) fn count_last(&mut self, e: &Decided<'_>) -> Option<&Facts> {
        let (k, facts) = self.kinds.get(self.last)?;
        if !k.is_of(e) {
            return None;
        }
        // Lent, not copied: the caller copies it once, where it keeps it.
        if let Some(n) = self.pending.get_mut(self.last) {
            *n += 1;
        }
        Some(facts)
    }

    /// [`Kinds::count_last`] for a kind met before but not last, by its key; `None` for a new one
    /// (then [`Kinds::count_new`]).
    pub(crate) fn count_other(&mut self, key: &KindKey) -> Option<Facts> {
        let at = self.kinds.iter().position(|(k, _)| k.same(key))?;
        self.last = at;
        self.pending[at] += 1;
        Some(self.kinds[at].1)
    }

    /// Keeps new kind `key` with its `facts`, the attempt counted in its pending attempts;
    /// returns the facts with their kind's place.
    pub(crate) fn count_new(&mut self, key: KindKey, facts: Facts) -> Facts {
        let facts = Facts {
            kind: u32::try_from(self.kinds.len()).expect("fewer than 2^32 kinds"),
            ..facts
        };
        self.kinds.push((key, facts));
        self.pending.push(1);
        self.last = self.kinds.len() - 1;
        facts
    }

    /// The facts of the kind at place `kind` ([`Facts::kind`]).
    pub(crate) fn facts_at(&self, kind: u32) -> Facts {
        self.kinds[kind as usize].1
    }

    /// Each kind's outcome label and its attempts not yet added to the summary, taken
    /// (left at zero).
    pub(crate) fn take_pending(&mut self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.kinds
            .iter()
            .zip(self.pending.iter_mut())
            .map(|((k, _), n)| (k.outcome, std::mem::take(n)))
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use proptest::prelude::*;
    use stampede_provider::model::JournalEntry;

    use super::super::{Measurement, SentBy};

    /// A label as the provider writes it: from its static tables, or the same text made
    /// at run time.
    fn label(text: &'static str, made: bool) -> Cow<'static, str> {
        if made {
            Cow::Owned(text.to_string())
        } else {
            Cow::Borrowed(text)
        }
    }

    const OUTCOMES: [(&str, Option<u16>); 9] = [
        ("429", Some(429)),
        ("200", Some(200)),
        ("503", Some(503)),
        ("500", Some(500)),
        ("409", Some(409)),
        ("400", Some(400)),
        ("dropped", None),
        ("hang", None),
        ("stream_cut", Some(200)),
    ];
    const ROUTES: [(&str, &str); 4] = [
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/records"),
        ("GET", "/v1/records/{id}"),
        ("GET", "/v1/records?external_ref"),
    ];
    const CODES: [Option<&str>; 5] = [
        None,
        Some("rate_limit_exceeded"),
        Some("insufficient_quota"),
        Some("idempotency_key_in_use"),
        Some("context_length_exceeded"),
    ];
    const LIMITS: [Option<&str>; 4] = [None, Some("rpm"), Some("tpm"), Some("odd")];

    /// One entry: indices into the tables above, which labels are made at run time, flags.
    type Drawn = (
        (usize, usize, usize, usize),
        (u8, bool, bool, bool),
        (u64, u32, u64),
    );

    fn entry(
        ((o, r, c, l), (made, committed, undelivered, duplicate), (logical, n, at)): Drawn,
    ) -> JournalEntry {
        let (outcome, status) = OUTCOMES[o];
        let (method, route) = ROUTES[r];
        JournalEntry {
            at_ms: at,
            done_ms: at + 5,
            outcome: label(outcome, made & 1 != 0),
            status,
            method: label(method, made & 2 != 0),
            route: label(route, made & 4 != 0),
            error_code: CODES[c].map(|code| label(code, made & 8 != 0)),
            limit: LIMITS[l].map(|limit| label(limit, made & 16 != 0)),
            committed,
            undelivered,
            duplicate,
            duplicate_tokens: if duplicate { 7 } else { 0 },
            tokens_used: 7,
            logical,
            logical_attempt: n,
            ..JournalEntry::default()
        }
    }

    fn drawn() -> impl Strategy<Value = Drawn> {
        (
            (
                0..OUTCOMES.len(),
                0..ROUTES.len(),
                0..CODES.len(),
                0..LIMITS.len(),
            ),
            // Mostly static labels, as the provider writes them.
            (
                prop_oneof![4 => Just(0u8), 1 => 0u8..32],
                any::<bool>(),
                any::<bool>(),
                any::<bool>(),
            ),
            (0u64..6, 0u32..4, 0u64..5_000),
        )
    }

    proptest! {
        /// Every figure of a run of random entries is the same whether each entry's facts
        /// come from its kind (the kind found last, another met before, or a new one) and
        /// its attempt is counted in a run of like attempts (see `runs`), or the entry is
        /// looked at afresh and its attempt counted alone: a kind's facts are a fresh
        /// look's, and a run's figures the sum of its attempts'. Entries come in runs of
        /// one kind, as a storm's refusals come, for two tenants, with or without the key
        /// of their groups, across buckets, the figures read at random points.
        #[test]
        fn kinds_decide_what_a_fresh_look_decides(
            runs in proptest::collection::vec(
                (drawn(), 1usize..6, (any::<bool>(), 0u8..4), 0u64..400),
                1..60,
            ),
            reads in proptest::collection::vec(any::<bool>(), 8),
        ) {
            let mut by_kind = Measurement::new(1_000, 60_000);
            let mut afresh = Measurement::new(1_000, 60_000);
            afresh.no_kinds = true;
            let mut read = reads.iter().cycle();
            for (drawn, repeats, (other_tenant, keyed), step) in runs {
                let tenant = if other_tenant { "u" } else { "t" };
                let by = |m: &mut Measurement| SentBy {
                    tenant,
                    class: "c",
                    // Mostly keyed, as the virtual driver sends.
                    group: (keyed > 0)
                        .then(|| m.group_key(tenant, "c", stampede_core::Priority::Normal)),
                    ..SentBy::default()
                };
                for k in 0..repeats as u64 {
                    let mut e = entry(drawn);
                    // Attempts of one run differ in what a run adds up, and arrive out of
                    // order when a step wraps (an error's first and last are a minimum and
                    // a maximum, not the run's first and last).
                    e.at_ms += (k * step) % 1_100;
                    e.done_ms = e.at_ms + 5;
                    e.logical_attempt += (k % 3) as u32;
                    e.tokens_used += k;
                    e.retry_after_violation = k % 2 == 1;
                    e.scope_wait_violation = k % 3 == 2;
                    e.replayed = k % 4 == 3;
                    let sent = by(&mut by_kind);
                    by_kind.on_journal(&e, Some(e.at_ms + 9), &sent);
                    let sent = by(&mut afresh);
                    afresh.on_journal(&e, Some(e.at_ms + 9), &sent);
                    if *read.next().unwrap() && *read.next().unwrap() {
                        prop_assert_eq!(
                            format!("{:?}", by_kind.running()),
                            format!("{:?}", afresh.running())
                        );
                    }
                }
            }
            prop_assert_eq!(
                format!("{:?}", by_kind.finish(5_000)),
                format!("{:?}", afresh.finish(5_000))
            );
        }
    }
}
