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
    /// `""` for an entry with none.
    error_code: &'static str,
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
            error_code: s.error_code?,
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
            && self.error_code.same(other.error_code)
            && self.route.same(other.route)
            && self.method.same(other.method)
            && match (self.limit, other.limit) {
                (None, None) => true,
                (Some(a), Some(b)) => a.same(b),
                _ => false,
            }
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
}

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
    /// The facts of kind `key` when it is the kind found last, the attempt counted in its
    /// pending attempts; `None` otherwise (then [`Kinds::count_other`]).
    #[inline]
    pub(crate) fn count_last(&mut self, key: &KindKey) -> Option<Facts> {
        let (k, facts) = self.kinds.get(self.last)?;
        if !k.same(key) {
            return None;
        }
        let facts = *facts;
        self.pending[self.last] += 1;
        Some(facts)
    }

    /// [`Kinds::count_last`] for a kind met before but not last; `None` for a new one
    /// (then [`Kinds::count_new`]).
    pub(crate) fn count_other(&mut self, key: &KindKey) -> Option<Facts> {
        let at = self.kinds.iter().position(|(k, _)| k.same(key))?;
        self.last = at;
        self.pending[at] += 1;
        Some(self.kinds[at].1)
    }

    /// Keeps new kind `key` with its `facts`, the attempt counted in its pending attempts.
    pub(crate) fn count_new(&mut self, key: KindKey, facts: Facts) {
        self.kinds.push((key, facts));
        self.pending.push(1);
        self.last = self.kinds.len() - 1;
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
        /// come from its kind (the kind found last, another met before, or a new one) or
        /// from looking at the entry afresh: a kind's facts are a fresh look's.
        #[test]
        fn kinds_decide_what_a_fresh_look_decides(
            runs in proptest::collection::vec((drawn(), 1usize..6), 1..60),
        ) {
            let mut by_kind = Measurement::new(1_000, 60_000);
            let mut afresh = Measurement::new(1_000, 60_000);
            afresh.no_kinds = true;
            let by = SentBy { tenant: "t", class: "c", ..SentBy::default() };
            for (drawn, repeats) in runs {
                // Runs of one kind, as a storm's refusals come.
                for _ in 0..repeats {
                    let e = entry(drawn);
                    by_kind.on_journal(&e, Some(e.at_ms + 9), &by);
                    afresh.on_journal(&e, Some(e.at_ms + 9), &by);
                    prop_assert_eq!(
                        format!("{:?}", by_kind.running()),
                        format!("{:?}", afresh.running())
                    );
                }
            }
            prop_assert_eq!(
                format!("{:?}", by_kind.finish(5_000)),
                format!("{:?}", afresh.finish(5_000))
            );
        }
    }
}
