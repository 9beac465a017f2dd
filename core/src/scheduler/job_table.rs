//! The live actions, stored in a slab indexed by job id. A `BTreeMap` of whole actions would
//! move hundreds of bytes per insert and removal on the hot path; the slab keeps each action
//! in place, and a hashed index finds it in one probe. The index is never iterated into an
//! output: `ids()` sorts.

use std::collections::HashMap;
use std::ops::Index;

use crate::id_hash::IdHash;

use super::state::Tracked;
use crate::job::JobId;

#[derive(Debug, Default)]
pub(super) struct JobTable {
    index: HashMap<JobId, u32, IdHash>,
    slots: Vec<Option<Tracked>>,
    free: Vec<u32>,
}

impl JobTable {
    pub fn insert(&mut self, id: JobId, job: Tracked) {
        if let Some(old) = self.index.get(&id) {
            self.slots[*old as usize] = Some(job);
            return;
        }
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(job);
                slot
            }
            None => {
                self.slots.push(Some(job));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 live actions")
            }
        };
        self.index.insert(id, slot);
        debug_assert!(self.index.len() + self.free.len() == self.slots.len());
    }

    pub fn remove(&mut self, id: &JobId) -> Option<Tracked> {
        let slot = self.index.remove(id)?;
        self.free.push(slot);
        self.slots[slot as usize].take()
    }

    pub fn get(&self, id: &JobId) -> Option<&Tracked> {
        self.index
            .get(id)
            .and_then(|&slot| self.slots[slot as usize].as_ref())
    }

    pub fn get_mut(&mut self, id: &JobId) -> Option<&mut Tracked> {
        self.index
            .get(id)
            .and_then(|&slot| self.slots[slot as usize].as_mut())
    }

    pub fn contains_key(&self, id: &JobId) -> bool {
        self.index.contains_key(id)
    }

    /// Every live job id, in increasing order.
    pub fn ids(&self) -> Vec<JobId> {
        let mut ids: Vec<JobId> = self.index.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

impl Index<&JobId> for JobTable {
    type Output = Tracked;

    fn index(&self, id: &JobId) -> &Tracked {
        self.get(id).expect("a live action")
    }
}
