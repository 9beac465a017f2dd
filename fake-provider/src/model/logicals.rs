//! The logical requests the identity index remembers, by id. Ids are handed out in order
//! (1, 2, 3, ...) and are mostly forgotten in about that order, so the table is a ring of
//! slots indexed by `id - base` rather than a hash table: a hash table of a million entries
//! sits in 2^21 buckets (half empty, about 136 MB at 64 bytes an entry), where the ring
//! holds one slot per id between the oldest remembered request and the newest.
//!
//! A request that stays remembered while many newer ones come and go would stretch the
//! ring without bound (one empty slot per id since). Past `max_span` slots, the oldest
//! still remembered moves to a small side table (`elders`), so memory stays bounded by the
//! requests remembered, whatever the order they are forgotten in.

use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Values by sequential id (ids from 1, handed out in increasing order).
#[derive(Debug, Clone)]
pub(super) struct Logicals<V> {
    /// Id of `ring[0]`.
    base: u64,
    ring: VecDeque<Option<V>>,
    /// Remembered values older than `base`.
    elders: FxHashMap<u64, V>,
    /// Values remembered (ring and elders).
    live: usize,
    /// Most slots the ring may span before its front moves to `elders`.
    max_span: usize,
}

impl<V> Logicals<V> {
    /// An empty table whose ring spans at most `max_span` (at least 1) ids.
    pub fn new(max_span: usize) -> Self {
        Self {
            base: 1,
            ring: VecDeque::new(),
            elders: FxHashMap::default(),
            live: 0,
            max_span: max_span.max(1),
        }
    }

    /// Values remembered.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Slots held without reallocating (ring and side table).
    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.ring.capacity() + self.elders.capacity()
    }

    /// Room for `additional` more values without reallocating the ring.
    pub fn reserve(&mut self, additional: usize) {
        self.ring.reserve(additional);
    }

    /// The value of `id`, if remembered.
    pub fn get(&self, id: u64) -> Option<&V> {
        match id.checked_sub(self.base) {
            Some(i) => self.ring.get(usize::try_from(i).ok()?)?.as_ref(),
            None => self.elders.get(&id),
        }
    }

    /// The value of `id`, if remembered.
    pub fn get_mut(&mut self, id: u64) -> Option<&mut V> {
        match id.checked_sub(self.base) {
            Some(i) => self.ring.get_mut(usize::try_from(i).ok()?)?.as_mut(),
            None => self.elders.get_mut(&id),
        }
    }

    /// Remembers `value` under `id`, which is newer than every id inserted before.
    pub fn insert(&mut self, id: u64, value: V) {
        let next = self.base + self.ring.len() as u64;
        assert!(id >= next, "ids are inserted in increasing order");
        // Ids skipped (never inserted) hold empty slots.
        while self.base + (self.ring.len() as u64) < id {
            self.ring.push_back(None);
        }
        self.ring.push_back(Some(value));
        self.live += 1;
        while self.ring.len() > self.max_span {
            if let Some(Some(elder)) = self.ring.pop_front() {
                self.elders.insert(self.base, elder);
            }
            self.base += 1;
        }
        self.trim_front();
    }

    /// Forgets `id`, returning its value if it was remembered.
    pub fn remove(&mut self, id: u64) -> Option<V> {
        let value = match id.checked_sub(self.base) {
            Some(i) => self.ring.get_mut(usize::try_from(i).ok()?)?.take(),
            None => self.elders.remove(&id),
        }?;
        self.live -= 1;
        self.trim_front();
        Some(value)
    }

    /// Drops the empty slots at the front, so the ring starts at the oldest remembered id.
    fn trim_front(&mut self) {
        while matches!(self.ring.front(), Some(None)) {
            self.ring.pop_front();
            self.base += 1;
        }
        debug_assert!(self.live >= self.elders.len());
        debug_assert!(self.ring.len() <= self.max_span);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_it_holds_and_forgets_in_any_order() {
        let mut t = Logicals::new(100);
        for id in 1..=10u64 {
            t.insert(id, id * 10);
        }
        assert_eq!(t.get(3), Some(&30));
        assert_eq!(t.remove(1), Some(10));
        assert_eq!(t.remove(5), Some(50));
        assert_eq!(t.remove(5), None);
        assert_eq!(t.get(1), None);
        assert_eq!(t.get(5), None);
        assert_eq!(t.get(11), None);
        assert_eq!(t.len(), 8);
        *t.get_mut(10).unwrap() += 1;
        assert_eq!(t.get(10), Some(&101));
        // Skipped ids are empty.
        t.insert(20, 200);
        assert_eq!(t.get(15), None);
        assert_eq!(t.get(20), Some(&200));
    }

    #[test]
    fn an_old_value_outliving_newer_ones_moves_aside_and_memory_stays_bounded() {
        let mut t = Logicals::new(8);
        t.insert(1, 1u64);
        for id in 2..10_000u64 {
            t.insert(id, id);
            t.remove(id);
        }
        assert_eq!(t.get(1), Some(&1), "still remembered, from the side table");
        assert_eq!(t.len(), 1);
        assert!(t.ring.len() <= 8, "{}", t.ring.len());
        assert_eq!(t.remove(1), Some(1));
        assert_eq!(t.len(), 0);
    }
}
