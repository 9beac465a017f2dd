//! Values by job id in a slab: the values sit in a vector that grows in place and reuses
//! freed slots, and only a small index (id to slot, an `IdIndex`) is searched.
//! A hash map of the values themselves would move hundreds of bytes on every insert and
//! removal and, at each doubling, hold the old and the new table of large values at once
//! (tens of MB at the million-request run's hundred thousand live actions). A driver's
//! per-action records sit in one, and so do the values an `IdBand` (the core's live actions,
//! attempts and in-memory ledger, by position) holds outside its band.
//!
//! The slots are kept in pages of [`PAGE`] that never move once full: growing adds a page
//! rather than doubling one vector, so a slab holds at most one page more than its peak
//! number of values and never the old and the new copy of its slots at once (a doubling
//! vector of the core's records, 464 bytes each then, at the million-request run's
//! 103,000 live actions held 131,072 slots, 61 MB, and 91 MB while it copied).
//!
//! The index is never iterated into an output: [`IdSlab::ids`] sorts (determinism rule).
//!
//! The slab remembers the last id it found and that id's slot: the core reads one action
//! several times in a row while it dispatches or settles it (its ticket, its deadline, its
//! scope, its class, then its record to change), and each of those reads is then a compare
//! rather than a search of the index.

use std::cell::Cell;
use std::ops::Index;

use crate::id_index::IdIndex;
use crate::job::JobId;

/// Slots in a page. The first page grows from small as a vector does (a slab that holds a
/// few values costs a few slots); every later page is allocated whole.
pub const PAGE: usize = 1_024;

/// Values of type `V` by job id.
#[derive(Debug, Clone)]
pub struct IdSlab<V> {
    index: IdIndex,
    /// Slot `n` is `pages[n / PAGE][n % PAGE]`; every page but the last is full.
    pages: Vec<Vec<Option<V>>>,
    /// Slots freed by removals, reused first.
    free: Vec<u32>,
    /// The id last found and its slot; forgotten when that id is removed. An id keeps its
    /// slot while it is held, so nothing else can make it wrong.
    last: Cell<Option<(JobId, u32)>>,
}

impl<V> Default for IdSlab<V> {
    fn default() -> Self {
        Self {
            index: IdIndex::default(),
            pages: Vec::new(),
            free: Vec::new(),
            last: Cell::new(None),
        }
    }
}

impl<V> IdSlab<V> {
    /// Puts `value` under `id`, replacing what was there.
    pub fn insert(&mut self, id: JobId, value: V) {
        if let Some(slot) = self.find(id) {
            *self.slot_mut(slot) = Some(value);
            return;
        }
        let slot = match self.free.pop() {
            Some(slot) => {
                *self.slot_mut(slot) = Some(value);
                slot
            }
            None => self.push(Some(value)),
        };
        self.index.insert(id, slot);
        debug_assert_eq!(self.index.len() + self.free.len(), self.slots());
    }

    /// Puts the value `make` returns under `id`, which is not held (the caller knows: it
    /// just looked), and lends it back where it now lies. [`IdSlab::insert`] first searches
    /// for `id` to replace its value; this skips that search, builds the value in its slot
    /// (a value built first and then moved in was a copy of its hundreds of bytes), and
    /// remembers the id as the last found, so the caller's next reads of it are a compare.
    #[inline]
    pub fn insert_new(&mut self, id: JobId, make: impl FnOnce() -> V) -> &mut V {
        self.insert_new_from(id, (), |()| make())
    }

    /// [`IdSlab::insert_new`] of the value `make` builds from `part`, a large part of it
    /// (an admitted action's job) handed over as an argument rather than captured: a
    /// closure that captured it by value copied it into the closure first.
    #[inline(always)]
    pub fn insert_new_from<P>(&mut self, id: JobId, part: P, make: impl FnOnce(P) -> V) -> &mut V {
        debug_assert!(self.index.get(id).is_none(), "{id} is not held yet");
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => self.push(None),
        };
        self.index.insert(id, slot);
        self.last.set(Some((id, slot)));
        debug_assert_eq!(self.index.len() + self.free.len(), self.slots());
        let place = self.slot_mut(slot);
        // A free slot holds nothing (`remove_with` empties it): nothing is dropped here.
        debug_assert!(place.is_none(), "a free slot is empty");
        // Not `get_or_insert_with(|| make(part))`: that closure would capture `part` by
        // value, one more copy of it.
        if place.is_none() {
            *place = Some(make(part));
        }
        place.as_mut().expect("just filled")
    }

    /// The empty slot `id`, which is not held, now owns, for the caller to fill at once
    /// (with `Some`): [`IdSlab::insert_new_from`] without the value, for a caller that
    /// writes the value itself (`IdBand`, whose band and this slab share one write).
    pub(crate) fn vacant(&mut self, id: JobId) -> &mut Option<V> {
        debug_assert!(self.index.get(id).is_none(), "{id} is not held yet");
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => self.push(None),
        };
        self.index.insert(id, slot);
        self.last.set(Some((id, slot)));
        self.slot_mut(slot)
    }

    /// Appends a slot holding `value`; returns its number.
    fn push(&mut self, value: Option<V>) -> u32 {
        let slot = u32::try_from(self.slots()).expect("fewer than 2^32 values");
        match self.pages.last_mut() {
            Some(page) if page.len() < PAGE => {
                if page.len() == page.capacity() {
                    // The first page doubles up to a whole page, never past it.
                    let grown = (2 * page.len()).clamp(4, PAGE);
                    page.reserve_exact(grown - page.len());
                }
                page.push(value);
            }
            _ => {
                let mut page = Vec::with_capacity(if self.pages.is_empty() { 4 } else { PAGE });
                page.push(value);
                self.pages.push(page);
            }
        }
        slot
    }

    /// Slots in use or free.
    fn slots(&self) -> usize {
        match self.pages.last() {
            Some(last) => (self.pages.len() - 1) * PAGE + last.len(),
            None => 0,
        }
    }

    #[inline]
    fn slot(&self, slot: u32) -> &Option<V> {
        let slot = slot as usize;
        &self.pages[slot / PAGE][slot % PAGE]
    }

    #[inline]
    fn slot_mut(&mut self, slot: u32) -> &mut Option<V> {
        let slot = slot as usize;
        &mut self.pages[slot / PAGE][slot % PAGE]
    }

    /// The slot of `id`, if held: the remembered one when `id` was the last found.
    #[inline]
    fn find(&self, id: JobId) -> Option<u32> {
        if let Some((last, slot)) = self.last.get() {
            if last == id {
                debug_assert_eq!(self.index.get(id), Some(slot), "{id} kept its slot");
                return Some(slot);
            }
        }
        let slot = self.index.get(id)?;
        self.last.set(Some((id, slot)));
        Some(slot)
    }

    /// Forgets the remembered slot if it is `id`'s (which is being removed).
    fn forget(&self, id: JobId) {
        if matches!(self.last.get(), Some((last, _)) if last == id) {
            self.last.set(None);
        }
    }

    /// The value under `id`.
    #[inline]
    pub fn get(&self, id: &JobId) -> Option<&V> {
        let slot = self.find(*id)?;
        self.slot(slot).as_ref()
    }

    /// The value under `id`, to change.
    #[inline]
    pub fn get_mut(&mut self, id: &JobId) -> Option<&mut V> {
        let slot = self.find(*id)?;
        self.slot_mut(slot).as_mut()
    }

    /// Takes the value under `id` out; its slot is reused.
    pub fn remove(&mut self, id: &JobId) -> Option<V> {
        self.forget(*id);
        let slot = self.index.remove(*id)?;
        self.free.push(slot);
        self.slot_mut(slot).take()
    }

    /// Drops the value under `id` where it lies; its slot is reused. Whether one was held.
    /// Unlike [`IdSlab::remove`], nothing is moved out: a caller that only wants the value
    /// gone saves copying hundreds of bytes (a ledger entry, a live action) per removal.
    pub fn delete(&mut self, id: &JobId) -> bool {
        self.remove_with(id, |_| ()).is_some()
    }

    /// Asks the CPU to bring the value under `id` into its cache, for a caller that will
    /// read it soon but has other work to do first: a record last touched long ago (a
    /// driver's record of an action whose answer just arrived, read again when its
    /// terminal comes out of the core) is then not a stall when it is read. Changes nothing
    /// and costs a few instructions; does nothing off x86-64 or when `id` is not held.
    #[inline]
    pub fn prefetch(&self, id: &JobId) {
        #[cfg(target_arch = "x86_64")]
        if let Some(slot) = self.index.get(*id) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let start = self.slot(slot) as *const Option<V> as *const i8;
            // Every cache line the value spans (64 bytes each).
            for offset in (0..std::mem::size_of::<Option<V>>()).step_by(64) {
                // SAFETY: a prefetch is a hint: it reads nothing the program sees and cannot
                // fault, whatever the address; SSE, which it needs, is in every x86-64 CPU.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
            }
        }
    }

    /// Lends the value under `id` to `f`, then drops it where it lies; its slot is reused.
    /// `f`'s result, or `None` when no value was held. For a caller that reads a few fields
    /// of a large value, or takes a small part of it, on its way out: nothing else is moved.
    pub fn remove_with<R>(&mut self, id: &JobId, f: impl FnOnce(&mut V) -> R) -> Option<R> {
        self.forget(*id);
        let slot = self.index.remove(*id)?;
        self.free.push(slot);
        let place = self.slot_mut(slot);
        let result = f(place.as_mut()?);
        // Assigning drops the old value in place: no copy of it is made.
        *place = None;
        Some(result)
    }

    /// Whether a value is held under `id`.
    pub fn contains_key(&self, id: &JobId) -> bool {
        self.find(*id).is_some()
    }

    /// Every id held, in increasing order.
    pub fn ids(&self) -> Vec<JobId> {
        self.index.ids()
    }

    /// Every value held, in no particular order (callers that output them sort).
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.pages.iter().flat_map(|page| page.iter().flatten())
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
    #[inline]
    fn index(&self, id: &JobId) -> &V {
        self.get(id).expect("a value under this id")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the order of puts, reads, removals and prefetches, the slab answers as a
        /// map does: the remembered slot never outlives its id.
        #[test]
        fn answers_as_a_map_does(ops in proptest::collection::vec((0u8..7, 0u64..64), 1..400)) {
            let mut slab = IdSlab::default();
            let mut map = std::collections::BTreeMap::new();
            for (step, (op, id)) in ops.into_iter().enumerate() {
                match op {
                    0 => {
                        slab.insert(id, step);
                        map.insert(id, step);
                    }
                    1 => prop_assert_eq!(slab.remove(&id), map.remove(&id)),
                    2 => prop_assert_eq!(slab.remove_with(&id, |v| *v), map.remove(&id)),
                    3 => {
                        if let (Some(v), Some(w)) = (slab.get_mut(&id), map.get_mut(&id)) {
                            *v += 1;
                            *w += 1;
                        }
                    }
                    // A new id is built in place and lent back.
                    4 if !map.contains_key(&id) => {
                        *slab.insert_new(id, || step) += 1;
                        map.insert(id, step + 1);
                    }
                    // Or built from a part handed over.
                    5 if !map.contains_key(&id) => {
                        *slab.insert_new_from(id, step, |part| part * 2) += 1;
                        map.insert(id, step * 2 + 1);
                    }
                    // A hint, held or not: it must change nothing.
                    _ => slab.prefetch(&id),
                }
                prop_assert_eq!(slab.get(&id), map.get(&id));
                prop_assert_eq!(slab.contains_key(&id), map.contains_key(&id));
                prop_assert_eq!(slab.len(), map.len());
            }
            prop_assert_eq!(slab.ids(), map.keys().copied().collect::<Vec<_>>());
        }
    }

    #[test]
    fn values_come_back_by_id_and_freed_slots_are_reused() {
        let mut s = IdSlab::default();
        for id in 0..10u64 {
            s.insert(id, id * 10);
        }
        assert_eq!(s.remove(&3), Some(30));
        assert_eq!(s.remove(&3), None);
        assert!(s.delete(&4) && !s.delete(&4), "deleted once");
        assert_eq!(s.remove_with(&5, |v| *v + 1), Some(51));
        assert_eq!(s.remove_with(&5, |v| *v + 1), None);
        assert_eq!((s.get(&4), s.get(&5)), (None, None));
        s.insert(4, 40);
        s.insert(5, 50);
        assert_eq!(s.get(&3), None);
        s.insert(42, 420);
        assert_eq!(s.slots(), 10, "the freed slot was reused");
        *s.get_mut(&42).unwrap() += 1;
        assert_eq!(s.get(&42), Some(&421));
        s.insert(42, 7);
        assert_eq!(s.get(&42), Some(&7));
        assert_eq!(s.len(), 10);
        assert_eq!(s.ids(), vec![0, 1, 2, 4, 5, 6, 7, 8, 9, 42]);
        assert_eq!(s.values().count(), 10);
    }

    /// Pages fill in order and are never reallocated once whole; a small slab stays small.
    #[test]
    fn slots_grow_by_whole_pages() {
        let mut s = IdSlab::default();
        s.insert(0, 0u64);
        assert!(s.pages[0].capacity() < 16, "a slab of one value is small");
        let n = 3 * PAGE as u64 + 5;
        for id in 1..n {
            s.insert(id, id);
        }
        assert_eq!(s.pages.len(), 4);
        assert!(s.pages.iter().all(|p| p.capacity() == PAGE));
        let first_full_page = s.pages[1].as_ptr();
        for id in 0..n {
            assert_eq!(s.get(&id), Some(&id));
        }
        let removed = (0..n).step_by(3).count() as u64;
        for id in (0..n).step_by(3) {
            assert_eq!(s.remove(&id), Some(id));
        }
        for id in n..n + removed {
            s.insert(id, id);
        }
        assert_eq!(s.slots(), n as usize, "freed slots were reused");
        assert_eq!(
            s.pages[1].as_ptr(),
            first_full_page,
            "a full page never moves"
        );
        assert_eq!(s.values().count(), s.len());
        assert_eq!(s.get(&(n + 7)), Some(&(n + 7)));
    }
}
