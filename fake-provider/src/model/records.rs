//! The record store behind `POST /v1/records`, with Stripe-style idempotency keys.

use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};

/// A committed side effect of `POST /v1/records`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// `rec_000001`, in commit order.
    pub id: String,
    /// The `external_ref` field of the write.
    pub external_ref: Option<String>,
    /// The `Idempotency-Key` it was created with.
    pub idempotency_key: Option<String>,
    /// Hash of the request body that created it.
    pub body_hash: u64,
    /// The scope whose credential created it.
    pub scope: String,
    /// `x-stampede-tenant` of the creating attempt.
    pub tenant: Option<String>,
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

/// All records and the indexes the look-ups use.
#[derive(Debug, Clone, Default)]
pub(crate) struct RecordStore {
    records: Vec<Record>,
    by_ref: BTreeMap<String, Vec<usize>>,
    by_key: BTreeMap<String, Vec<usize>>,
    /// Keys are scoped per provider scope (an account), as Stripe scopes them per account.
    keys: HashMap<(String, String), KeyEntry>,
}

impl RecordStore {
    pub(crate) fn check_key(&self, scope: &str, key: &str, body_hash: u64) -> KeyCheck {
        match self.keys.get(&(scope.to_string(), key.to_string())) {
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
        scope: &str,
        key: Option<&str>,
        remember_key: bool,
        external_ref: Option<&str>,
        body_hash: u64,
        tenant: Option<&str>,
        now: u64,
        seq: u64,
    ) -> usize {
        let idx = self.records.len();
        let duplicate = external_ref.is_some_and(|r| self.by_ref.contains_key(r));
        self.records.push(Record {
            id: format!("rec_{:06}", idx + 1),
            external_ref: external_ref.map(str::to_string),
            idempotency_key: key.map(str::to_string),
            body_hash,
            scope: scope.to_string(),
            tenant: tenant.map(str::to_string),
            created_at_ms: now,
            created_by_seq: seq,
            duplicate,
        });
        if let Some(r) = external_ref {
            self.by_ref.entry(r.to_string()).or_default().push(idx);
        }
        if let Some(k) = key {
            self.by_key.entry(k.to_string()).or_default().push(idx);
            if remember_key {
                self.keys.insert(
                    (scope.to_string(), k.to_string()),
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
    pub(crate) fn release_key(&mut self, scope: &str, key: &str, seq: u64) {
        if let Some(e) = self.keys.get_mut(&(scope.to_string(), key.to_string())) {
            if e.in_flight == Some(seq) {
                e.in_flight = None;
            }
        }
    }

    pub(crate) fn get(&self, idx: usize) -> Option<&Record> {
        self.records.get(idx)
    }

    pub(crate) fn by_id(&self, id: &str) -> Option<&Record> {
        let n: usize = id.strip_prefix("rec_")?.parse().ok()?;
        self.records.get(n.checked_sub(1)?).filter(|r| r.id == id)
    }

    pub(crate) fn by_external_ref(&self, r: &str) -> Vec<&Record> {
        self.by_ref
            .get(r)
            .map(|v| v.iter().filter_map(|i| self.records.get(*i)).collect())
            .unwrap_or_default()
    }

    pub(crate) fn by_idempotency_key(&self, k: &str) -> Vec<&Record> {
        self.by_key
            .get(k)
            .map(|v| v.iter().filter_map(|i| self.records.get(*i)).collect())
            .unwrap_or_default()
    }

    /// A record by id, only when `scope` created it (another scope's is "no such record", as
    /// an account never sees another account's objects).
    pub(crate) fn by_id_in(&self, scope: &str, id: &str) -> Option<&Record> {
        self.by_id(id).filter(|r| r.scope == scope)
    }

    /// Records `scope` created with this external reference, in commit order.
    pub(crate) fn by_external_ref_in(&self, scope: &str, r: &str) -> Vec<&Record> {
        let mut v = self.by_external_ref(r);
        v.retain(|rec| rec.scope == scope);
        v
    }

    /// Records `scope` created with this idempotency key, in commit order.
    pub(crate) fn by_idempotency_key_in(&self, scope: &str, k: &str) -> Vec<&Record> {
        let mut v = self.by_idempotency_key(k);
        v.retain(|rec| rec.scope == scope);
        v
    }

    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    pub(crate) fn all(&self) -> &[Record] {
        &self.records
    }
}
