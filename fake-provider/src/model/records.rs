//! The record store behind `POST /v1/records`, with Stripe-style idempotency keys.
//!
//! Retention: a record is kept for `provider.record_retention` of model time after its commit
//! (24 hours by default, as Stripe keeps idempotency keys), and at most `max_records` are kept
//! (1,000,000 by default); the oldest go first. An evicted record leaves its indexes with it:
//! a look-up by id, `external_ref` or idempotency key no longer finds it ("not found"), its
//! idempotency key is forgotten (a later write with that key commits anew, as Stripe does
//! once a key has expired), and a later write with its `external_ref` is no longer flagged
//! as a duplicate of it. Ids keep counting: `rec_000001` is never reused.

use serde::{Deserialize, Serialize};
use serde_json::json;
use std::borrow::Borrow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use rustc_hash::FxHashMap;
use stampede_key::IdempotencyKey;

use super::decision::RecordId;

/// Default of `provider.record_retention`: 24 hours of model time.
pub const DEFAULT_RECORD_RETENTION_MS: u64 = 24 * 60 * 60_000;

/// Records kept at most by default; beyond it the oldest are evicted.
pub const DEFAULT_MAX_RECORDS: usize = 1_000_000;

/// A committed side effect of `POST /v1/records`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// `rec_000001`, in commit order.
    pub id: String,
    /// The `external_ref` field of the write.
    pub external_ref: Option<String>,
    /// The `Idempotency-Key` it was created with (shared with the request that sent it).
    pub idempotency_key: Option<IdempotencyKey>,
    /// Hash of the request body that created it.
    pub body_hash: u64,
    /// The scope whose credential created it (shared with the model's scope).
    pub scope: Arc<str>,
    /// `x-stampede-tenant` of the creating attempt (shared with its request).
    pub tenant: Option<Arc<str>>,
    /// Commit time, model ms.
    pub created_at_ms: u64,
    /// The journal seq of the attempt that committed it.
    pub created_by_seq: u64,
    /// Whether another record with the same `external_ref` existed already.
    pub duplicate: bool,
}

impl Record {
    /// The JSON the API returns for it.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "id": self.id,
            "object": "record",
            "status": "completed",
            "external_ref": self.external_ref,
            "idempotency_key": self.idempotency_key,
            "tenant": self.tenant,
            "created_at_ms": self.created_at_ms,
        })
    }
}

/// What an idempotency key remembers.
#[derive(Debug, Clone)]
struct KeyEntry {
    body_hash: u64,
    record: usize,
    /// The seq still holding the key (answer not yet departed), if any.
    in_flight: Option<u64>,
}

/// The outcome of a keyed write before any effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyCheck {
    /// New key (or no key): go ahead and commit.
    Fresh,
    /// The first attempt with this key has not answered yet.
    InUse,
    /// Same key, different body.
    BodyMismatch,
    /// Same key and body, done: replay this record.
    Replay(usize),
}

/// The records kept and the indexes the look-ups use. A record's index is global (its id's
/// number minus one) and never reused; `base` is the index of the oldest record kept.
#[derive(Debug, Clone)]
pub(crate) struct RecordStore {
    records: VecDeque<Record>,
    base: usize,
    by_ref: BTreeMap<String, VecDeque<usize>>,
    by_key: BTreeMap<IdempotencyKey, VecDeque<usize>>,
    /// Keys are scoped per provider scope (an account), as Stripe scopes them per account.
    /// The scope is the shared name the model holds and the key a value (a derived key in
    /// place), so a look-up or a release of a key copies no string.
    keys: FxHashMap<(Arc<str>, IdempotencyKey), KeyEntry>,
    retention_ms: u64,
    max_records: usize,
    evicted: u64,
    /// Whether `keys` was given its steady-state room (see `evict_to`).
    presized: bool,
}

impl Default for RecordStore {
    fn default() -> Self {
        RecordStore::new(DEFAULT_RECORD_RETENTION_MS, DEFAULT_MAX_RECORDS)
    }
}

/// Drops `idx` from the front of an index entry (eviction goes in commit order, so the
/// evicted record is the oldest of every list it is in) and the entry once empty.
fn unindex<K: Borrow<Q> + Ord, Q: Ord + ?Sized>(
    index: &mut BTreeMap<K, VecDeque<usize>>,
    name: &Q,
    idx: usize,
) {
    if let Some(list) = index.get_mut(name) {
        if list.front() == Some(&idx) {
            list.pop_front();
        } else {
            list.retain(|i| *i != idx);
        }
        if list.is_empty() {
            index.remove(name);
        }
    }
}

impl RecordStore {
    /// A store keeping records `retention_ms` of model time (at least 1 ms), and at most
    /// `max_records` (at least 1).
    pub(crate) fn new(retention_ms: u64, max_records: usize) -> Self {
        RecordStore {
            records: VecDeque::new(),
            base: 0,
            by_ref: BTreeMap::new(),
            by_key: BTreeMap::new(),
            keys: FxHashMap::default(),
            retention_ms: retention_ms.max(1),
            max_records: max_records.max(1),
            evicted: 0,
            presized: false,
        }
    }

    /// Changes the count cap (at least 1); the next `evict` applies it.
    pub(crate) fn set_max_records(&mut self, max_records: usize) {
        self.max_records = max_records.max(1);
    }

    /// Records evicted so far.
    pub(crate) fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Evicts records committed `retention_ms` or longer before `now`, then the oldest until
    /// at most `keep` are left, with their indexes and idempotency keys.
    fn evict_to(&mut self, now: u64, keep: usize) {
        while let Some(front) = self.records.front() {
            let expired = front.created_at_ms.saturating_add(self.retention_ms) <= now;
            if !expired && self.records.len() <= keep {
                break;
            }
            // At the cap, keys are forgotten and remembered continuously: a hash table under
            // such churn fills with tombstones and, holding more than half of what it can,
            // doubles. Reserving that room when the cap is first reached makes the step
            // happen then, not an unpredictable while later.
            if !expired && !self.presized {
                self.presized = true;
                self.keys.reserve(self.keys.len());
            }
            let Some(r) = self.records.pop_front() else {
                break;
            };
            let idx = self.base;
            self.base += 1;
            self.evicted += 1;
            if let Some(name) = &r.external_ref {
                unindex(&mut self.by_ref, name, idx);
            }
            if let Some(k) = &r.idempotency_key {
                unindex(&mut self.by_key, k, idx);
                let slot = (r.scope, k.clone());
                if self.keys.get(&slot).is_some_and(|e| e.record == idx) {
                    self.keys.remove(&slot);
                }
            }
        }
    }

    /// Applies retention and the count cap at `now` (model ms).
    ///
    /// Inlined: on nearly every attempt nothing is due (no record is kept, or the oldest is
    /// neither expired nor past the cap), which the oldest record and the count tell without
    /// a call.
    #[inline]
    pub(crate) fn evict(&mut self, now: u64) {
        let due = self.records.front().is_some_and(|front| {
            front.created_at_ms.saturating_add(self.retention_ms) <= now
                || self.records.len() > self.max_records
        });
        if due {
            self.evict_to(now, self.max_records);
        }
    }

    pub(crate) fn check_key(
        &self,
        scope: &Arc<str>,
        key: &IdempotencyKey,
        body_hash: u64,
    ) -> KeyCheck {
        match self.keys.get(&(Arc::clone(scope), key.clone())) {
            None => KeyCheck::Fresh,
            Some(e) if e.in_flight.is_some() => KeyCheck::InUse,
            Some(e) if e.body_hash != body_hash => KeyCheck::BodyMismatch,
            Some(e) => KeyCheck::Replay(e.record),
        }
    }

    /// Commits a record; `remember_key` stores the key for replays, held by `seq` until it
    /// departs. Returns the record's index.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn commit(
        &mut self,
        scope: &Arc<str>,
        key: Option<&IdempotencyKey>,
        remember_key: bool,
        external_ref: Option<&str>,
        body_hash: u64,
        tenant: Option<&Arc<str>>,
        now: u64,
        seq: u64,
    ) -> usize {
        // Room for this one within the cap.
        self.evict_to(now, self.max_records - 1);
        let idx = self.base + self.records.len();
        let duplicate = external_ref.is_some_and(|r| self.by_ref.contains_key(r));
        self.records.push_back(Record {
            id: RecordId::of_index(idx).to_string(),
            external_ref: external_ref.map(str::to_string),
            idempotency_key: key.cloned(),
            body_hash,
            scope: Arc::clone(scope),
            tenant: tenant.cloned(),
            created_at_ms: now,
            created_by_seq: seq,
            duplicate,
        });
        if let Some(r) = external_ref {
            self.by_ref.entry(r.to_string()).or_default().push_back(idx);
        }
        if let Some(k) = key {
            self.by_key.entry(k.clone()).or_default().push_back(idx);
            if remember_key {
                self.keys.insert(
                    (Arc::clone(scope), k.clone()),
                    KeyEntry {
                        body_hash,
                        record: idx,
                        in_flight: Some(seq),
                    },
                );
            }
        }
        idx
    }

    /// The attempt `seq` answered: its key may now be replayed.
    pub(crate) fn release_key(&mut self, scope: &Arc<str>, key: &IdempotencyKey, seq: u64) {
        if let Some(e) = self.keys.get_mut(&(Arc::clone(scope), key.clone())) {
            if e.in_flight == Some(seq) {
                e.in_flight = None;
            }
        }
    }

    /// The record with global index `idx`, if still kept.
    pub(crate) fn get(&self, idx: usize) -> Option<&Record> {
        self.records.get(idx.checked_sub(self.base)?)
    }

    pub(crate) fn by_id(&self, id: &str) -> Option<&Record> {
        self.get(RecordId::of(id)?.index()?).filter(|r| r.id == id)
    }

    pub(crate) fn by_external_ref(&self, r: &str) -> Vec<&Record> {
        self.by_ref
            .get(r)
            .map(|v| v.iter().filter_map(|i| self.get(*i)).collect())
            .unwrap_or_default()
    }

    pub(crate) fn by_idempotency_key(&self, k: &IdempotencyKey) -> Vec<&Record> {
        self.by_key
            .get(k)
            .map(|v| v.iter().filter_map(|i| self.get(*i)).collect())
            .unwrap_or_default()
    }

    /// A record by id, only when `scope` created it (another scope's is "no such record", as
    /// an account never sees another account's objects).
    pub(crate) fn by_id_in(&self, scope: &str, id: &str) -> Option<&Record> {
        self.by_id(id).filter(|r| &*r.scope == scope)
    }

    /// Records `scope` created with this external reference, in commit order.
    pub(crate) fn by_external_ref_in(&self, scope: &str, r: &str) -> Vec<&Record> {
        let mut v = self.by_external_ref(r);
        v.retain(|rec| &*rec.scope == scope);
        v
    }

    /// Records `scope` created with this idempotency key, in commit order.
    pub(crate) fn by_idempotency_key_in(&self, scope: &str, k: &IdempotencyKey) -> Vec<&Record> {
        let mut v = self.by_idempotency_key(k);
        v.retain(|rec| &*rec.scope == scope);
        v
    }

    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    /// The records kept, oldest first.
    pub(crate) fn all(&self) -> std::collections::vec_deque::Iter<'_, Record> {
        self.records.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_key_table_stops_growing() {
        let mut store = RecordStore::new(u64::MAX / 4, 1_000);
        let scope: Arc<str> = "s".into();
        let write = |store: &mut RecordStore, n: u64| {
            let key: IdempotencyKey = format!("k{n}").into();
            store.commit(&scope, Some(&key), true, None, n, None, n, n);
            store.release_key(&scope, &key, n);
        };
        for n in 0..=1_000 {
            write(&mut store, n);
        }
        let at_cap = store.keys.capacity();
        for n in 1_001..200_000 {
            write(&mut store, n);
            assert!(store.keys.capacity() <= at_cap, "grew at {n}");
            assert_eq!(store.len(), 1_000);
        }
        assert_eq!(store.evicted(), 199_000);
    }
}
