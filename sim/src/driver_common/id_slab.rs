//! Values by job id in a slab: the values sit in a vector that grows in place and reuses
//! freed slots, and only a small index (id to slot) is hashed. A hash map of the values
//! themselves would, at each doubling, hold the old and the new table of large values at
//! once (tens of MB at the million-request run's hundred thousand live actions).

use rustc_hash::FxHashMap;

use stampede_core::JobId;

/// Values of type `V` by job id.
#[derive(Debug)]
pub struct IdSlab<V> {
    index: FxHashMap<JobId, u32>,
    slots: Vec<Option<V>>,
    free: Vec<u32>,
}

impl<V> Default for IdSlab<V> {
    fn default() -> Self {
        Self {
            index: FxHashMap::default(),
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
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 live actions")
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

    /// Every id held, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = JobId> + '_ {
        self.index.keys().copied()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.index.len()
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
        let mut ids: Vec<_> = s.ids().collect();
        ids.sort_unstable();
        assert_eq!(ids, vec![0, 1, 2, 4, 5, 6, 7, 8, 9, 42]);
    }
}
