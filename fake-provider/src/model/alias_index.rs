//! The index from alias hashes to the logical requests that own them.
//!
//! A remembered request has one or two aliases (its key, its fingerprint), kept inline in its
//! record, and the index holds a million requests' worth of them. A map from alias to id
//! stores 16 bytes an entry; this index stores 8: a tag naming the request and which of its
//! inline aliases the entry is for (`id << 1 | position`), hashed by the alias itself. A
//! look-up compares an entry's alias by reading it back from the request's record, which the
//! caller lends as `alias_of`. At the million-request benchmark's two million aliases the
//! table is 38 MB instead of 71 MB. It is split in [`SHARDS`] tables by the hash, each
//! growing on its own, so a doubling step holds the old and the new copy of one shard at
//! once (about 40 MB at that run's peak, where one map held 107 MB while it doubled).
//!
//! The tag is exact, so removing an alias removes its own entry and no other: two aliases of
//! one request never share a tag. Aliases past a request's inline two are rare (a write's
//! external reference and record id, a body changed under one key) and sit in a plain map.
//!
//! Invariant (the caller's): an entry is in the index exactly while its request is
//! remembered and its record holds the alias at the tagged position. Rehashing reads the
//! alias back through `alias_of`, so an entry whose request was forgotten is a bug; it is
//! asserted.

use std::cell::Cell;

use hashbrown::HashTable;
use rustc_hash::FxHashMap;

/// Where a request keeps one of its aliases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    /// Its inline alias number 0 or 1.
    Inline(u8),
    /// Past the inline two.
    Spilled,
}

/// Tables the inline aliases are split into.
pub(super) const SHARDS: usize = 16;

/// Entries in the memo of recent look-ups (a power of two): 16 KB, which stays in cache.
const RECENT: usize = 1_024;

/// A memo entry: `owner` is the request id + 1, 0 for none (ids fit 63 bits: `tag`).
#[derive(Debug, Clone, Copy, Default)]
struct Recent {
    alias: u64,
    owner: u64,
}

impl Recent {
    /// `alias` is owned by request `id`.
    fn of(alias: u64, id: u64) -> Recent {
        Recent {
            alias,
            owner: id + 1,
        }
    }

    /// The owner of `alias`, if this entry is for it.
    fn owner_of(self, alias: u64) -> Option<u64> {
        (self.owner != 0 && self.alias == alias).then(|| self.owner - 1)
    }
}

/// Alias hashes to logical request ids.
#[derive(Debug, Clone, Default)]
pub(super) struct AliasIndex {
    /// Tags `id << 1 | position` of inline aliases, hashed by the alias, in the shard that
    /// bits 32 to 35 of the hash name (bits no table of under 2^32 buckets probes by, and
    /// not the top 7 that hashbrown keeps as each entry's tag byte).
    inline: [HashTable<u64>; SHARDS],
    /// Spilled aliases: alias to id.
    spilled: FxHashMap<u64, u64>,
    /// The owners of aliases inserted or found lately, direct-mapped by the alias's hash
    /// (empty until the first insert). The attempts of a storm are mostly re-sends of the
    /// few requests in flight: their aliases are found here with one load, where the table
    /// reads a control group, a tag and the request's record, three dependent reads that
    /// perf showed as the provider's costliest misses. Invariant: an entry names the request
    /// the index maps its alias to; `remove` clears an entry of the alias it removes.
    recent: Vec<Cell<Recent>>,
}

/// An alias's hash in the tables and the memo: the alias itself, which is already the
/// output of a 64-bit finalizer (see `identity::AliasHash::finish`), so every bit of it is
/// as good as a hasher's; hashing it again was a multiply and a rotate at every look-up.
fn hash(alias: u64) -> u64 {
    alias
}

fn shard(hash: u64) -> usize {
    (hash >> 32) as usize % SHARDS
}

/// The memo entry an alias of hash `hash` may sit in.
fn recent_slot(hash: u64) -> usize {
    hash as usize % RECENT
}

fn tag(id: u64, position: u8) -> u64 {
    debug_assert!(position < 2);
    debug_assert!(id < 1 << 63, "ids fit beside the position bit");
    id << 1 | u64::from(position)
}

/// The alias a tag names, read back from the request's record.
fn untag(tag: u64, alias_of: &impl Fn(u64, u8) -> Option<u64>) -> Option<u64> {
    alias_of(tag >> 1, (tag & 1) as u8)
}

/// An entry's hash when a table grows or rehashes: its alias's, read back.
fn rehash(alias_of: &impl Fn(u64, u8) -> Option<u64>) -> impl Fn(&u64) -> u64 + '_ {
    move |&t| hash(untag(t, alias_of).expect("an indexed request is remembered"))
}

impl AliasIndex {
    /// The request owning `alias`. `alias_of(id, position)` is request `id`'s inline alias
    /// number `position`, if it is remembered.
    ///
    /// Inlined as far as the memo: most look-ups of a storm end there, a load and two
    /// comparisons, where the call cost as much again; the tables are searched out of line.
    #[inline]
    pub fn get(&self, alias: u64, alias_of: impl Fn(u64, u8) -> Option<u64>) -> Option<u64> {
        let hash = hash(alias);
        let memo = self.recent.get(recent_slot(hash));
        if let Some(id) = memo.and_then(|m| m.get().owner_of(alias)) {
            debug_assert_eq!(
                self.find(alias, hash, &alias_of),
                Some(id),
                "a memo entry names the alias's owner"
            );
            return Some(id);
        }
        self.get_from_tables(alias, alias_of)
    }

    /// [`AliasIndex::get`] of an alias the memo does not answer for, remembered in the memo
    /// when found.
    #[inline(never)]
    fn get_from_tables(
        &self,
        alias: u64,
        alias_of: impl Fn(u64, u8) -> Option<u64>,
    ) -> Option<u64> {
        let hash = hash(alias);
        let memo = self.recent.get(recent_slot(hash));
        let found = self.find(alias, hash, &alias_of);
        if let (Some(memo), Some(id)) = (memo, found) {
            memo.set(Recent::of(alias, id));
        }
        found
    }

    /// The request owning `alias` (whose hash is `hash`), by the tables.
    fn find(
        &self,
        alias: u64,
        hash: u64,
        alias_of: &impl Fn(u64, u8) -> Option<u64>,
    ) -> Option<u64> {
        self.inline[shard(hash)]
            .find(hash, |&t| untag(t, alias_of) == Some(alias))
            .map(|&t| t >> 1)
            .or_else(|| self.spilled.get(&alias).copied())
    }

    /// Indexes `alias` of request `id`, kept at `slot` in its record (which already holds
    /// it: rehashing may read it back). The alias must not be indexed yet.
    pub fn insert(
        &mut self,
        alias: u64,
        id: u64,
        slot: Slot,
        alias_of: impl Fn(u64, u8) -> Option<u64>,
    ) {
        debug_assert_eq!(
            self.get(alias, &alias_of),
            None,
            "an alias names one request"
        );
        if self.recent.is_empty() {
            self.recent = vec![Cell::new(Recent::default()); RECENT];
        }
        let hashed = hash(alias);
        self.recent[recent_slot(hashed)].set(Recent::of(alias, id));
        match slot {
            Slot::Inline(position) => {
                debug_assert_eq!(alias_of(id, position), Some(alias));
                self.inline[shard(hashed)].insert_unique(
                    hashed,
                    tag(id, position),
                    rehash(&alias_of),
                );
            }
            Slot::Spilled => {
                self.spilled.insert(alias, id);
            }
        }
    }

    /// Removes `alias` of request `id`, kept at `slot`.
    pub fn remove(&mut self, alias: u64, id: u64, slot: Slot) {
        let hash = hash(alias);
        if let Some(memo) = self.recent.get(recent_slot(hash)) {
            if memo.get().owner_of(alias) == Some(id) {
                memo.set(Recent::default());
            }
        }
        match slot {
            Slot::Inline(position) => {
                let wanted = tag(id, position);
                let found = self.inline[shard(hash)].find_entry(hash, |&t| t == wanted);
                debug_assert!(found.is_ok(), "alias {alias:x} of {id} was indexed");
                if let Ok(entry) = found {
                    entry.remove();
                }
            }
            Slot::Spilled => {
                if self.spilled.get(&alias) == Some(&id) {
                    self.spilled.remove(&alias);
                }
            }
        }
    }

    /// Room for `additional` more inline aliases, spread evenly, without growing.
    pub fn reserve(&mut self, additional: usize, alias_of: impl Fn(u64, u8) -> Option<u64>) {
        for table in &mut self.inline {
            // A shard holds a sixteenth, give or take a few percent: room for an eighth
            // more than its share.
            let share = additional / SHARDS;
            table.reserve(share + share / 8, rehash(&alias_of));
        }
    }

    /// Aliases indexed.
    pub fn len(&self) -> usize {
        self.inline.iter().map(HashTable::len).sum::<usize>() + self.spilled.len()
    }

    /// Entries held before the inline tables must rehash or grow.
    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.inline.iter().map(HashTable::capacity).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the records: request `id` holds aliases `[10 * id, 10 * id + 1]`.
    fn record(id: u64, position: u8) -> Option<u64> {
        (id != 0).then_some(10 * id + u64::from(position))
    }

    #[test]
    fn the_memo_never_outlives_its_alias() {
        let mut index = AliasIndex::default();
        assert_eq!(
            index.get(10, record),
            None,
            "no memo before the first insert"
        );
        index.insert(10, 1, Slot::Inline(0), record);
        // Another alias in the same memo entry: it takes the entry over, and both are
        // still found (the first by the tables).
        let rival = (2..)
            .map(|id| 10 * id)
            .find(|&a| recent_slot(hash(a)) == recent_slot(hash(10)))
            .expect("some alias shares the entry");
        let rival_id = rival / 10;
        index.insert(rival, rival_id, Slot::Inline(0), record);
        assert_eq!(index.get(10, record), Some(1));
        assert_eq!(index.get(rival, record), Some(rival_id));
        assert_eq!(index.get(10, record), Some(1), "found again, and memoized");
        // Removed while memoized: gone, and the memo does not answer for it.
        index.remove(10, 1, Slot::Inline(0));
        assert_eq!(index.get(10, record), None);
        assert_eq!(index.get(rival, record), Some(rival_id));
        // A spilled alias is memoized and forgotten the same way.
        index.insert(7, 3, Slot::Spilled, record);
        assert_eq!(index.get(7, record), Some(3));
        index.remove(7, 3, Slot::Spilled);
        assert_eq!(index.get(7, record), None);
        index.insert(7, 4, Slot::Spilled, record);
        assert_eq!(index.get(7, record), Some(4), "the alias's new owner");
    }

    #[test]
    fn finds_removes_and_rehashes_by_the_alias_read_back() {
        let mut index = AliasIndex::default();
        for id in 1..=5_000u64 {
            index.insert(10 * id, id, Slot::Inline(0), record);
            index.insert(10 * id + 1, id, Slot::Inline(1), record);
        }
        index.insert(7, 3, Slot::Spilled, record);
        assert_eq!(index.len(), 10_001);
        assert_eq!(index.get(40, record), Some(4));
        assert_eq!(index.get(41, record), Some(4));
        assert_eq!(index.get(7, record), Some(3));
        assert_eq!(index.get(42, record), None);
        // Removing one alias of a request leaves its other alias and every other request.
        index.remove(41, 4, Slot::Inline(1));
        assert_eq!(index.get(41, record), None);
        assert_eq!(index.get(40, record), Some(4));
        index.remove(40, 4, Slot::Inline(0));
        index.remove(7, 3, Slot::Spilled);
        assert_eq!(index.get(40, record), None);
        assert_eq!(index.get(7, record), None);
        assert_eq!(index.len(), 9_998);
        for id in (1..=5_000u64).filter(|&id| id != 4) {
            assert_eq!(index.get(10 * id + 1, record), Some(id));
        }
    }
}
