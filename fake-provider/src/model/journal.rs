//! The journal: every attempt that reached the edge, the ground truth of a run.

use serde::{Deserialize, Serialize};

use super::identity::IdentifiedBy;
use super::request::Fingerprint;
use std::borrow::Cow;
use std::sync::Arc;

use stampede_key::IdempotencyKey;

/// One attempt as the provider saw it.
///
/// Written when the attempt arrives (the model decides everything then). `done_ms` is the
/// planned end: `at_ms + latency_ms` for answers, drops and streams; 0 for hangs, whose end
/// only the client's timeout knows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// Attempt sequence number at the edge (1-based, gap-free).
    pub seq: u64,
    /// Arrival time, model ms since run start.
    pub at_ms: u64,
    /// Planned answer time, model ms (0 for hangs).
    pub done_ms: u64,
    /// The credential, masked (`sk-...1234`, see `mask_credential`); `None` when no key was sent. Shared: masked
    /// once per known credential, not per attempt.
    pub credential: Option<Arc<str>>,
    /// The scope the credential maps to (`None` for unknown keys), shared with the model.
    pub scope: Option<Arc<str>>,
    /// Route template, e.g. `/v1/records/{id}` (borrowed for the known routes).
    pub route: Cow<'static, str>,
    /// HTTP method (borrowed for the known routes).
    pub method: Cow<'static, str>,
    /// `Idempotency-Key` as sent.
    pub idempotency_key: Option<IdempotencyKey>,
    /// External reference of a record write.
    pub external_ref: Option<String>,
    /// What a record look-up asked for (`id=..`, `external_ref=..`, `idempotency_key=..`), so
    /// reconciliation by the original key can be read off the journal.
    #[serde(default)]
    pub lookup: Option<String>,
    /// Request fingerprint without secrets: method, route template and body hash.
    pub fingerprint: Fingerprint,
    /// `x-stampede-tenant`.
    pub tenant: Option<Arc<str>>,
    /// `x-stampede-action`.
    pub action: Option<u64>,
    /// `x-stampede-attempt`.
    pub attempt_no: Option<u32>,
    /// `x-stampede-class`.
    pub class: Option<Arc<str>>,
    /// HTTP status when one was sent (200 for streams).
    pub status: Option<u16>,
    /// Outcome label: "200", "429", "dropped", "hang", "stream_cut", "stream_error"
    /// (borrowed for the usual statuses).
    pub outcome: Cow<'static, str>,
    /// `error.code` of an error answer (borrowed for the codes the model writes).
    pub error_code: Option<Cow<'static, str>>,
    /// Whether this attempt committed a side effect (a completion or a record).
    pub committed: bool,
    /// Whether this commit is a second (or later) side effect for its logical request, as
    /// the provider identifies it (`logical`): a record created again, or a completion
    /// billed again. Idempotent replays are not commits.
    pub duplicate: bool,
    /// Whether its logical request had itself been told to wait (a Retry-After given to an
    /// earlier attempt of it) and this attempt came back before that wait had passed.
    pub retry_after_violation: bool,
    /// Retry-After given with this answer, model ms.
    pub retry_after_ms: Option<u64>,
    /// Whether an idempotent replay answered it (same key and body, no new effect).
    pub replayed: bool,
    /// Id of the record created or replayed.
    pub record_id: Option<String>,
    /// Tokens used (prompt + completion) by a committed completion.
    pub tokens_used: u64,
    /// The logical request the provider attached this attempt to (1-based, in order of
    /// first arrival; 0 for a look-up of a write it does not know). See `model::identity`.
    #[serde(default)]
    pub logical: u64,
    /// This attempt's ordinal within its logical request (1 = first; 0 for look-ups).
    #[serde(default)]
    pub logical_attempt: u32,
    /// How the provider attached it (`new`, `idempotency_key`, `external_ref`,
    /// `fingerprint`, `lookup`).
    #[serde(default)]
    pub identified_by: IdentifiedBy,
    /// Whether it reached its scope while a Retry-After told to another request there still
    /// bound it (from when that answer left, plus the transit allowance).
    #[serde(default)]
    pub scope_wait_violation: bool,
    /// Tokens billed by this commit because it is a duplicate (`tokens_used` when
    /// `duplicate`, else 0).
    #[serde(default)]
    pub duplicate_tokens: u64,
    /// Whether it committed but its answer never reached the client (dropped or hung after
    /// the commit, a stream cut or ended by an error event).
    #[serde(default)]
    pub undelivered: bool,
    /// Whether the client's `x-stampede-attempt` claim disagrees with the provider's own
    /// count (a first attempt claimed as a retry, or a retry claimed as a first).
    #[serde(default)]
    pub claim_mismatch: bool,
    /// `x-stainless-retry-count` as the client's SDK sent it (a claim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk_retry_count: Option<u32>,
    /// The model the provider served or refused: the resolved name when `provider.models`
    /// is listed (the first model for a request naming none; the name as sent, cut to 200
    /// bytes, for an unknown one), `None` when no models are listed. Shared with the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Arc<str>>,
    /// What this commit costs at its model's price, micro-dollars (US$ 1e-6), rounded to
    /// nearest; 0 without a price or a commit. A duplicate commit is billed too.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub billed_micro_usd: u64,
    /// Which of its scope's limits refused it (429 or `insufficient_quota`): `rpm`, `tpm`,
    /// `rpd`, `tpd` or `concurrency`; `None` otherwise (injected faults included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<Cow<'static, str>>,
    /// The workload item whose prompt the request carried ([`Request::workload_item`](
    /// crate::model::Request::workload_item)), read from its body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_item: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The journal's route of a model catalog list (`GET /v1/models`).
pub const CATALOG_LIST_ROUTE: &str = "/v1/models";

/// The journal's route of a catalog look-up: the template, as for a record's (the id
/// would make a route per model asked for).
pub const CATALOG_RETRIEVE_ROUTE: &str = "/v1/models/{id}";

impl JournalEntry {
    /// Whether this entry read the model catalog (answered or refused): journaled as no
    /// logical request ([`ProviderModel::arrive_catalog`](super::ProviderModel::arrive_catalog)),
    /// and no attempt at any work.
    pub fn is_catalog_read(&self) -> bool {
        self.logical == 0
            && self.method == "GET"
            && (self.route == CATALOG_LIST_ROUTE || self.route == CATALOG_RETRIEVE_ROUTE)
    }
}

/// Makes `slot` hold `value`, cloning the `Arc` only when `slot` does not already hold that
/// very name: a recycled journal entry or a rewritten request keeps the shared names it
/// had, with no reference count touched (an atomic increment to clone, a decrement to drop,
/// each a locked instruction on the hot path).
pub fn keep_shared(slot: &mut Option<Arc<str>>, value: Option<&Arc<str>>) {
    match (slot.as_ref(), value) {
        (Some(held), Some(new)) if Arc::ptr_eq(held, new) => {}
        _ => *slot = value.cloned(),
    }
}

/// A bounded buffer of entries not yet drained: the oldest are dropped (and counted) past
/// `capacity`, so a run that never drains cannot grow without bound.
///
/// A ring of slots that are written over, not pushed and dropped: a drained entry stays in
/// its slot until the next attempt's entry is written into it, field by field (see
/// `next_slot`). The simulator journals one entry per arrival and drains it
/// at once, so its entries are written in one slot, in cache, and the shared names they
/// hold (credential, scope, key, tenant, class) are kept when the next attempt has the
/// same ones. An entry is 456 bytes: built whole, it was moved into the buffer and dropped
/// out of it on every attempt.
#[derive(Debug, Clone)]
pub struct JournalBuffer {
    /// In ring order from `head`: `live` undrained entries, then drained ones kept to be
    /// written over. Never longer than `capacity`.
    slots: Vec<JournalEntry>,
    /// The slot of the oldest undrained entry.
    head: usize,
    /// Undrained entries.
    live: usize,
    capacity: usize,
    lost: u64,
    /// The slot last written by [`JournalBuffer::next_slot_kept`] and the kind of entry the
    /// caller said it wrote there, while nothing else has written that slot since; slot
    /// `usize::MAX` when there is none.
    kept: (usize, u64),
}

/// No slot kept (see `JournalBuffer::kept`).
const NONE_KEPT: (usize, u64) = (usize::MAX, 0);

/// The slots of a [`JournalBuffer`] lent out for one attempt, with the slot its entry is
/// written in.
#[derive(Debug)]
pub(crate) struct LentSlot {
    slots: Vec<JournalEntry>,
    at: usize,
}

impl LentSlot {
    /// The attempt's entry.
    pub(crate) fn entry(&mut self) -> &mut JournalEntry {
        &mut self.slots[self.at]
    }
}

impl JournalBuffer {
    /// A buffer holding at most `capacity` undrained entries.
    pub fn new(capacity: usize) -> Self {
        JournalBuffer {
            slots: Vec::new(),
            head: 0,
            live: 0,
            capacity: capacity.max(1),
            lost: 0,
            kept: NONE_KEPT,
        }
    }

    /// The slot `i` places after the oldest undrained entry, `i` at most the ring's length.
    /// One subtraction wraps it (a `%` is a division, tens of cycles, on every attempt).
    fn at(&self, i: usize) -> usize {
        let len = self.slots.len();
        debug_assert!(self.head < len && i <= len, "within the ring");
        let at = self.head + i;
        if at >= len {
            at - len
        } else {
            at
        }
    }

    /// Appends, evicting the oldest entry when full.
    pub fn push(&mut self, entry: JournalEntry) {
        *self.next_slot() = entry;
    }

    /// Appends a slot for the next entry and lends it out, evicting the oldest entry when
    /// full. It holds an earlier entry (drained, or evicted) or a default one: the caller
    /// writes every field (the model destructures it, so a field added later cannot be
    /// left stale).
    pub(crate) fn next_slot(&mut self) -> &mut JournalEntry {
        let at = self.next_at();
        self.forget_kept(at);
        &mut self.slots[at]
    }

    /// [`JournalBuffer::next_slot`] for an entry of kind `kind` (a caller's code for a set
    /// of fields every entry of the kind has alike), and whether the slot already holds an
    /// entry of that kind, written by this method and not written since: then the caller
    /// may write only the fields that differ between entries of the kind. The simulator
    /// drains each entry at once, so a storm of alike refusals is written in one slot.
    pub(crate) fn next_slot_kept(&mut self, kind: u64) -> (&mut JournalEntry, bool) {
        let at = self.next_at();
        let same = self.kept == (at, kind);
        self.kept = (at, kind);
        (&mut self.slots[at], same)
    }

    /// Slot `at` is written (or moved) by other means than `next_slot_kept`: it holds no
    /// kind of entry any more.
    #[inline]
    fn forget_kept(&mut self, at: usize) {
        if self.kept.0 == at {
            self.kept = NONE_KEPT;
        }
    }

    /// Appends a slot for the next entry, evicting the oldest entry when full, and says
    /// where it is (see [`JournalBuffer::next_slot`]).
    #[inline]
    fn next_at(&mut self) -> usize {
        if self.live == self.capacity {
            self.head = self.at(1);
            self.live -= 1;
            self.lost += 1;
        }
        if self.live == self.slots.len() {
            self.grow();
        }
        let at = self.at(self.live);
        self.live += 1;
        debug_assert!(self.live <= self.capacity && self.slots.len() <= self.capacity);
        at
    }

    /// No drained slot to write over: one more, with the ring unrolled so the new slot
    /// follows the newest entry.
    #[cold]
    fn grow(&mut self) {
        // The slots move: the kept one is no longer where `kept` says.
        self.kept = NONE_KEPT;
        self.slots.rotate_left(self.head);
        self.head = 0;
        self.slots.push(JournalEntry::default());
    }

    /// Appends a slot for the next entry (as [`JournalBuffer::next_slot`]) and lends it out
    /// with the ring's slots, leaving the buffer holding none while the attempt is decided
    /// (the model reads no journal meanwhile; see [`JournalBuffer::restore`]). Only the
    /// slots' `Vec` is taken, three words: the whole buffer, taken and given back, was some
    /// 30 instructions an attempt.
    pub(crate) fn lend(&mut self) -> LentSlot {
        let at = self.next_at();
        self.forget_kept(at);
        LentSlot {
            slots: std::mem::take(&mut self.slots),
            at,
        }
    }

    /// Takes back the slots [`JournalBuffer::lend`] lent out. Nothing journals while they
    /// are lent (the model holds `&mut self` for the whole attempt), so the stand-in they
    /// replace is the empty `Vec` `lend` left, which owns no memory.
    pub(crate) fn restore(&mut self, lent: LentSlot) {
        let stand_in = std::mem::replace(&mut self.slots, lent.slots);
        debug_assert!(
            stand_in.capacity() == 0,
            "an entry was journaled while the slots were lent"
        );
    }

    /// Hands each buffered entry, oldest first, to `read` where it lies, then forgets it
    /// (its slot is written over later: nothing is copied or dropped here). Stops at the
    /// first error, which is returned: the entries up to the one that failed are forgotten,
    /// the rest stay buffered.
    pub fn drain_with<E>(
        &mut self,
        mut read: impl FnMut(&JournalEntry) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut result = Ok(());
        let mut read_so_far = 0;
        while read_so_far < self.live {
            let entry = &self.slots[self.at(read_so_far)];
            read_so_far += 1;
            if let Err(e) = read(entry) {
                result = Err(e);
                break;
            }
        }
        if read_so_far > 0 {
            self.head = self.at(read_so_far);
            self.live -= read_so_far;
        }
        result
    }

    /// Takes everything buffered.
    pub fn drain(&mut self) -> Vec<JournalEntry> {
        let mut taken = Vec::with_capacity(self.live);
        while let Some(entry) = self.pop() {
            taken.push(entry);
        }
        taken
    }

    /// Takes the oldest entry buffered (its slot is left holding a default entry).
    pub fn pop(&mut self) -> Option<JournalEntry> {
        if self.live == 0 {
            return None;
        }
        let at = self.head;
        self.head = self.at(1);
        self.live -= 1;
        self.forget_kept(at);
        Some(std::mem::take(&mut self.slots[at]))
    }

    /// Entries evicted undrained since the start.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Most entries held undrained.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Entries buffered now.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64) -> JournalEntry {
        JournalEntry {
            seq,
            ..JournalEntry::default()
        }
    }

    fn seqs(buffer: &mut JournalBuffer) -> Vec<u64> {
        buffer.drain().iter().map(|e| e.seq).collect()
    }

    #[test]
    fn the_ring_keeps_order_across_wraps_growth_and_eviction() {
        let mut b = JournalBuffer::new(4);
        // Wrap the ring: three in, two drained, three more in (one written over each
        // drained slot, one grown with the ring unrolled).
        (1..=3).for_each(|s| b.push(entry(s)));
        let mut read = Vec::new();
        let stop: Result<(), ()> = b.drain_with(|e| {
            read.push(e.seq);
            if e.seq == 2 {
                Err(())
            } else {
                Ok(())
            }
        });
        assert_eq!(stop, Err(()));
        assert_eq!(read, [1, 2], "stops at the first error");
        assert_eq!(b.len(), 1, "the entry after the error stays");
        (4..=6).for_each(|s| b.push(entry(s)));
        assert_eq!(b.len(), 4);
        assert_eq!(b.lost(), 0);
        // Full: the oldest is evicted and counted.
        b.push(entry(7));
        assert_eq!(b.lost(), 1);
        assert_eq!(b.pop().map(|e| e.seq), Some(4));
        assert_eq!(seqs(&mut b), [5, 6, 7]);
        assert!(b.is_empty());
        assert_eq!(b.pop(), None);
        // Drained slots are written over, never grown past the capacity.
        for round in 0..10u64 {
            (0..3).for_each(|i| b.push(entry(100 * round + i)));
            let mut read = Vec::new();
            b.drain_with(|e| {
                read.push(e.seq);
                Ok::<(), ()>(())
            })
            .unwrap();
            assert_eq!(read, [100 * round, 100 * round + 1, 100 * round + 2]);
        }
        assert!(b.slots.len() <= b.capacity());
    }

    #[test]
    fn a_recycled_slot_keeps_a_name_it_already_shares() {
        let name: Arc<str> = Arc::from("tenant-a");
        let mut slot = Some(Arc::clone(&name));
        keep_shared(&mut slot, Some(&name));
        assert_eq!(Arc::strong_count(&name), 2, "the same name: no clone");
        let other: Arc<str> = Arc::from("tenant-a");
        keep_shared(&mut slot, Some(&other));
        assert!(slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, &other)));
        assert_eq!(Arc::strong_count(&name), 1, "the old name let go");
        keep_shared(&mut slot, None);
        assert_eq!(slot, None);
    }
}
