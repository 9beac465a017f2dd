//! The live actions, stored in a slab indexed by job id. A `BTreeMap` of whole actions would
//! move hundreds of bytes per insert and removal on the hot path; the slab keeps each action
//! in place and the ordered index (small entries) keeps iteration deterministic.

use std::collections::BTreeMap;
use std::ops::Index;

use super::state::Tracked;
use crate::job::JobId;

#[derive(Debug, Default)]
pub(super) struct JobTable {
    index: BTreeMap<JobId, u32>,
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
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(id, slot);
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

    /// Job ids in increasing order.
    pub fn keys(&self) -> impl Iterator<Item = &JobId> {
        self.index.keys()
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
