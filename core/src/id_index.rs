//! Slot numbers by job id, looked up by position rather than by hash.
//!
//! Drivers hand out job ids in increasing order, and the ids live at one time sit in a band
//! that slides forward: a million-request run holds about 100,000 live actions whose ids
//! span a few hundred thousand. So the index is a ring over that band, one `u32` an id
//! (`ring[id - base]`, 0 for none), and a look-up is one load from a few MB that stay in
//! cache, where a hash table's probe reads a control group and a bucket at random places.
//!
//! Ids outside the band go to a hash map (`older`): ids below it (an action that outlived
//! many newer ones, or ids that arrive in no order), and the front of the band when it
//! grows sparse. The band holds at most four slots per id in it plus [`SLACK`], so memory
//! follows the live ids whatever their order.

use std::collections::HashMap;

use crate::id_hash::IdHash;
use crate::job::JobId;

/// Empty slots the band may hold beyond four per id in it.
pub const SLACK: usize = 4_096;

/// A queue of `u32` that is one vector and a start: indexing is an add and a bound check,
/// where a `VecDeque` wraps around (the index is read on every look-up of the hot path).
/// Popped slots at the front are reclaimed once they are half the vector.
#[derive(Debug, Clone, Default)]
struct Band {
    slots: Vec<u32>,
    /// Slots before `start` were popped.
    start: usize,
}

impl Band {
    fn len(&self) -> usize {
        self.slots.len() - self.start
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn front(&self) -> Option<&u32> {
        self.slots.get(self.start)
    }

    fn back(&self) -> Option<&u32> {
        self.slots[self.start..].last()
    }

    fn pop_front(&mut self) -> Option<u32> {
        let first = *self.front()?;
        self.start += 1;
        if self.start == self.slots.len() {
            self.slots.clear();
            self.start = 0;
        } else if self.start >= 1_024 && 2 * self.start >= self.slots.len() {
            // (`reclaims_next_pop` is this test, made before the pop.)
            self.slots.drain(..self.start);
            self.start = 0;
        }
        Some(first)
    }

    /// Whether the next `pop_front` of a band longer than one slot reclaims the popped
    /// slots (it does once they are at least 1,024 and half the vector).
    #[inline]
    fn reclaims_next_pop(&self) -> bool {
        let start = self.start + 1;
        start >= 1_024 && 2 * start >= self.slots.len()
    }

    fn pop_back(&mut self) -> Option<u32> {
        if self.is_empty() {
            return None;
        }
        let last = self.slots.pop();
        if self.is_empty() {
            self.slots.clear();
            self.start = 0;
        }
        last
    }

    fn resize(&mut self, len: usize, value: u32) {
        self.slots.resize(self.start + len, value);
    }

    fn iter(&self) -> std::slice::Iter<'_, u32> {
        self.slots[self.start..].iter()
    }
}

impl std::ops::Index<usize> for Band {
    type Output = u32;

    fn index(&self, i: usize) -> &u32 {
        &self.slots[self.start + i]
    }
}

impl std::ops::IndexMut<usize> for Band {
    fn index_mut(&mut self, i: usize) -> &mut u32 {
        &mut self.slots[self.start + i]
    }
}

/// Slot numbers by id.
#[derive(Debug, Clone, Default)]
pub struct IdIndex {
    /// Id of `ring[0]`.
    base: JobId,
    /// `slot + 1` of id `base + i` at `i`; 0 where the id is not held.
    ring: Band,
    /// Ids held in `ring`.
    in_ring: usize,
    /// Ids held below `base`.
    older: HashMap<JobId, u32, IdHash>,
}

impl IdIndex {
    /// The slot of `id`, if held.
    #[inline]
    pub fn get(&self, id: JobId) -> Option<u32> {
        match self.offset(id) {
            Some(i) => self.ring[i].checked_sub(1),
            None => self.older.get(&id).copied(),
        }
    }

    /// Where `id` sits in the ring, if within it.
    #[inline]
    fn offset(&self, id: JobId) -> Option<usize> {
        let i = usize::try_from(id.checked_sub(self.base)?).ok()?;
        (i < self.ring.len()).then_some(i)
    }

    /// Holds `slot` for `id`, which is not held.
    #[inline]
    pub fn insert(&mut self, id: JobId, slot: u32) {
        debug_assert_eq!(self.get(id), None, "{id} is held once");
        let stored = slot.checked_add(1).expect("fewer than 2^32 - 1 slots");
        // The base never moves back, so every id in `older` stays below it.
        let len = self.ring.len();
        if len == 0 && id >= self.base {
            self.base = id;
        }
        // The common case, inlined: the id after the band's last (ids are handed out
        // rising). It extends the band by one held slot, which keeps it dense.
        if id.checked_sub(self.base) == Some(len as u64) {
            self.ring.slots.push(stored);
            self.in_ring += 1;
            debug_assert!(self.ring.len() <= 4 * self.in_ring + SLACK);
            return;
        }
        self.insert_elsewhere(id, slot, stored);
    }

    /// [`IdIndex::insert`] of an id that is not the one after the band's last: below the
    /// base, inside the band, or past its end.
    fn insert_elsewhere(&mut self, id: JobId, slot: u32, stored: u32) {
        let Some(i) = id.checked_sub(self.base) else {
            self.older.insert(id, slot);
            return;
        };
        // An id far past the band starts a new band; what the old one held moves aside.
        let room = (4 * (self.in_ring + 1) + SLACK) as u64;
        if i >= room {
            self.retire(self.ring.len());
            self.base = id;
        }
        let i = (id - self.base) as usize;
        if i >= self.ring.len() {
            self.ring.resize(i + 1, 0);
        }
        self.ring[i] = stored;
        self.in_ring += 1;
        self.keep_dense();
    }

    /// Past four slots an id (and the slack), empty slots at the back go, then the oldest
    /// ids move aside. (Empty slots at the back are kept until then: the newest ids come
    /// and go, and dropping the slots of each only to add them back costs a loop per id.)
    fn keep_dense(&mut self) {
        while self.ring.len() > 4 * self.in_ring + SLACK {
            if self.ring.back() == Some(&0) {
                self.ring.pop_back();
            } else {
                self.retire(1);
            }
        }
    }

    /// Moves the first `n` ids of the ring to `older`.
    fn retire(&mut self, n: usize) {
        for _ in 0..n.min(self.ring.len()) {
            let stored = self.ring.pop_front().expect("within the ring");
            if stored != 0 {
                self.older.insert(self.base, stored - 1);
                self.in_ring -= 1;
            }
            self.base = self.base.saturating_add(1);
        }
        self.trim();
    }

    /// Drops empty slots at the front: the band starts at its oldest id held.
    fn trim(&mut self) {
        while self.ring.front() == Some(&0) {
            self.ring.pop_front();
            self.base = self.base.saturating_add(1);
        }
    }

    /// Forgets `id`; returns its slot if it was held.
    #[inline]
    pub fn remove(&mut self, id: JobId) -> Option<u32> {
        let Some(i) = self.offset(id) else {
            return self.older.remove(&id);
        };
        let slot = std::mem::take(&mut self.ring[i]).checked_sub(1)?;
        self.in_ring -= 1;
        // The band's first slot is never empty (`trim` after every change), so only
        // removing it leaves one to trim; and only a band now too sparse needs
        // `keep_dense`. The common case, kept inline: ids leave in the order they came,
        // so the first id goes and the next is held. It is `trim`'s first step, without
        // its call: everything else (more empty slots, a band to reclaim or to thin) goes
        // to `trim` and `keep_dense`, out of line.
        if i == 0 && self.ring.len() > 1 && self.ring[1] != 0 && !self.ring.reclaims_next_pop() {
            self.ring.start += 1;
            self.base = self.base.saturating_add(1);
            if self.ring.len() > 4 * self.in_ring + SLACK {
                self.keep_dense();
            }
        } else if i == 0 && self.ring.len() == 1 {
            // The band's only id went (an attempt table holding one attempt on the wire):
            // `trim`'s pop, which empties the band.
            self.ring.slots.clear();
            self.ring.start = 0;
            self.base = self.base.saturating_add(1);
        } else if i == 0 || self.ring.len() > 4 * self.in_ring + SLACK {
            self.settle();
        }
        debug_assert_ne!(
            self.ring.front(),
            Some(&0),
            "the band starts with a held id"
        );
        Some(slot)
    }

    /// `trim`, then `keep_dense`: after a removal that left the band's first slot empty
    /// or the band too sparse.
    #[inline(never)]
    fn settle(&mut self) {
        self.trim();
        self.keep_dense();
    }

    /// Ids held.
    pub fn len(&self) -> usize {
        self.in_ring + self.older.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every id held, in increasing order.
    pub fn ids(&self) -> Vec<JobId> {
        let mut ids: Vec<JobId> = self.older.keys().copied().collect();
        ids.extend(
            self.ring
                .iter()
                .enumerate()
                .filter(|&(_, &s)| s != 0)
                .map(|(i, _)| self.base + i as u64),
        );
        ids.sort_unstable();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the order of ids, the index answers as a map would, and its band stays
        /// within four slots an id plus the slack.
        #[test]
        fn answers_as_a_map_does(ops in proptest::collection::vec((0u8..3, 0u64..20_000), 1..600)) {
            let mut index = IdIndex::default();
            let mut map = std::collections::BTreeMap::new();
            let mut next_slot = 0u32;
            for (op, id) in ops {
                // Mostly rising ids, as drivers hand out, with jumps and stragglers.
                let id = match op {
                    0 => id,
                    _ => map.keys().next_back().map_or(id, |&last: &u64| last + id % 7),
                };
                if op == 2 || map.contains_key(&id) {
                    prop_assert_eq!(index.remove(id), map.remove(&id));
                } else {
                    index.insert(id, next_slot);
                    map.insert(id, next_slot);
                    next_slot += 1;
                }
                prop_assert_eq!(index.len(), map.len());
                prop_assert!(index.ring.len() <= 4 * index.in_ring + SLACK);
            }
            for (&id, &slot) in &map {
                prop_assert_eq!(index.get(id), Some(slot));
            }
            prop_assert_eq!(index.ids(), map.keys().copied().collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_sliding_band_of_rising_ids_stays_in_the_ring() {
        let mut index = IdIndex::default();
        for id in 1..100_000u64 {
            index.insert(id, id as u32);
            if id > 1_000 {
                assert_eq!(index.remove(id - 1_000), Some((id - 1_000) as u32));
            }
        }
        assert!(index.older.is_empty());
        assert_eq!(index.len(), 1_000);
        assert!(index.ring.len() <= 1_000);
        assert_eq!(index.get(99_999), Some(99_999));
        assert_eq!(index.get(98_999), None);
        // Every id of the band is still where it was put, across the reclaims of the
        // popped slots that removal in order makes (`Band::reclaims_next_pop`).
        for id in 99_000..100_000u64 {
            assert_eq!(index.get(id), Some(id as u32), "{id}");
        }
        assert_eq!(index.ids(), (99_000..100_000).collect::<Vec<_>>());
    }

    #[test]
    fn far_and_old_ids_are_held_aside() {
        let mut index = IdIndex::default();
        index.insert(u64::MAX, 1);
        index.insert(0, 2);
        index.insert(5, 3);
        index.insert(1 << 40, 4);
        assert_eq!(index.get(u64::MAX), Some(1));
        assert_eq!(index.get(0), Some(2));
        assert_eq!(index.get(5), Some(3));
        assert_eq!(index.get(1 << 40), Some(4));
        assert_eq!(index.ids(), vec![0, 5, 1 << 40, u64::MAX]);
        assert_eq!(index.remove(u64::MAX), Some(1));
        assert_eq!(index.remove(u64::MAX), None);
        assert_eq!(index.len(), 3);
    }
}
