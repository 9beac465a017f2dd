//! Values by job id in a slab: the values sit in a vector that grows in place and reuses
//! freed slots, and only a small index (id to slot) is hashed, for one probe per look-up.
//! A hash map of the values themselves would move hundreds of bytes on every insert and
//! removal and, at each doubling, hold the old and the new table of large values at once
//! (tens of MB at the million-request run's hundred thousand live actions). The core's live
//! actions, its in-memory ledger and a driver's per-action records all sit in one.
//!
//! The index is never iterated into an output: [`IdSlab::ids`] sorts (determinism rule).

use std::ops::Index;

use crate::id_hash::IdHash;
use crate::job::JobId;

/// Values of type `V` by job id.
#[derive(Debug, Clone)]
pub struct IdSlab<V> {
    index: std::collections::HashMap<JobId, u32, IdHash>,
    slots: Vec<Option<V>>,
    /// Slots freed by removals, reused first.
    free: Vec<u32>,
}

impl<V> Default for IdSlab<V> {
    fn default() -> Self {
        Self {
            index: std::collections::HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<V> IdSlab<V> {
    /// Puts `value` under `id`, replacing what was there.
    pub fn insert(&mut self, id: JobId, value: V) {
        if let Some(&slot) = self.index.get(&id) {
            self.slots[slot as usize] = Some(value);
            return;
        }
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(value);
                slot
            }
            None => {
                self.slots.push(Some(value));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 values")
            }
        };
        self.index.insert(id, slot);
        debug_assert_eq!(self.index.len() + self.free.len(), self.slots.len());
    }

    /// The value under `id`.
    pub fn get(&self, id: &JobId) -> Option<&V> {
        let slot = *self.index.get(id)?;
        self.slots[slot as usize].as_ref()
    }

    /// The value under `id`, to change.
    pub fn get_mut(&mut self, id: &JobId) -> Option<&mut V> {
        let slot = *self.index.get(id)?;
        self.slots[slot as usize].as_mut()
    }

    /// Takes the value under `id` out; its slot is reused.
    pub fn remove(&mut self, id: &JobId) -> Option<V> {
        let slot = self.index.remove(id)?;
        self.free.push(slot);
        self.slots[slot as usize].take()
    }

    /// Whether a value is held under `id`.
    pub fn contains_key(&self, id: &JobId) -> bool {
        self.index.contains_key(id)
    }

    /// Every id held, in increasing order.
    pub fn ids(&self) -> Vec<JobId> {
        let mut ids: Vec<JobId> = self.index.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Every value held, in no particular order (callers that output them sort).
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.slots.iter().flatten()
    }

    /// How many values are held.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

impl<V> Index<&JobId> for IdSlab<V> {
    type Output = V;

    /// The value under `id`; panics when there is none (a caller's broken invariant).
    fn index(&self, id: &JobId) -> &V {
        self.get(id).expect("a value under this id")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_by_id_and_freed_slots_are_reused() {
        let mut s = IdSlab::default();
        for id in 0..10u64 {
            s.insert(id, id * 10);
        }
        assert_eq!(s.remove(&3), Some(30));
        assert_eq!(s.remove(&3), None);
        assert_eq!(s.get(&3), None);
        s.insert(42, 420);
        assert_eq!(s.slots.len(), 10, "the freed slot was reused");
        *s.get_mut(&42).unwrap() += 1;
        assert_eq!(s.get(&42), Some(&421));
        s.insert(42, 7);
        assert_eq!(s.get(&42), Some(&7));
        assert_eq!(s.len(), 10);
        assert_eq!(s.ids(), vec![0, 1, 2, 4, 5, 6, 7, 8, 9, 42]);
        assert_eq!(s.values().count(), 10);
    }
}
