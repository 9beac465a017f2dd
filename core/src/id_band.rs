//! Values by job id (or attempt id) addressed by position: the value of id `base + i` sits
//! in the `i`-th slot of a band, with no index between the id and its value.
//!
//! [`IdSlab`] finds a value through an index (id to slot number) and then a page; this
//! drops the index for the ids of a sliding band. Ids handed out rising and leaving
//! roughly in the order they came (the live actions, attempts on the wire, a ledger's
//! entries) then cost one subtraction, a shift and a mask to find, a write at the band's
//! end to add and, for the oldest, a step of the band's start to remove: no free list and
//! no index to keep in step.
//!
//! Anything else goes to an [`IdSlab`] beside the band (`other`): an id below the band,
//! one far past its end, and the front of a band grown sparse (its oldest values move
//! there, once each). A value is in the band or in `other`, never both: an id's band slot
//! is looked at first, and `other` only when that slot is empty and `other` holds
//! something.
//!
//! Memory: the band grows to span at most [`SPREAD`] slots per value it holds then plus
//! [`SLACK`], each
//! `size_of::<Option<V>>()` bytes, in pages of [`PAGE`] slots that never move (the band's
//! first page, once behind it, is reused at its end). So it never holds two copies of its
//! slots, and holds at most twice the slots of its values plus two pages and the slack:
//! a million-request run's hundred thousand live actions (400 bytes each) had 41 MB in an
//! [`IdSlab`] and may take up to 82 MB here, less as their ids are denser.
//!
//! Never iterated into an output: [`IdBand::ids`] sorts (determinism rule).

use crate::id_slab::IdSlab;
use crate::job::JobId;

/// Slots in a page (a power of two).
pub const PAGE: usize = 1_024;

/// Empty slots the band may span beyond [`SPREAD`] per value in it.
pub const SLACK: usize = 1_024;

/// Slots the band may span per value in it (besides [`SLACK`]).
pub const SPREAD: usize = 2;

/// One page of slots, its length known to the compiler (no bound check of a slot in it).
type Page<V> = Box<[Option<V>; PAGE]>;

/// Values of type `V` by id, addressed by position in a sliding band.
#[derive(Debug, Clone)]
pub struct IdBand<V> {
    /// The id of the band's first slot.
    base: JobId,
    /// Where the band's first slot lies in the first page (below [`PAGE`]).
    head: usize,
    /// Slots in the band (ids `base..base + len`); the first holds a value (the last may
    /// not: empty slots at the end stay until the band's start passes them).
    len: usize,
    /// Band position `i` is slot `(head + i) % PAGE` of page `(head + i) / PAGE`; every
    /// slot outside the band is empty.
    pages: Vec<Page<V>>,
    /// Values in the band.
    held: usize,
    /// Values outside the band.
    other: IdSlab<V>,
}

impl<V> Default for IdBand<V> {
    fn default() -> Self {
        Self {
            base: 0,
            head: 0,
            len: 0,
            pages: Vec::new(),
            held: 0,
            other: IdSlab::default(),
        }
    }
}

/// A page of empty slots.
fn empty_page<V>() -> Page<V> {
    let slots: Box<[Option<V>]> = (0..PAGE).map(|_| None).collect();
    slots
        .try_into()
        .unwrap_or_else(|_| unreachable!("a page is PAGE slots"))
}

impl<V> IdBand<V> {
    /// The band position of `id`, if within the band.
    #[inline(always)]
    fn offset(&self, id: JobId) -> Option<usize> {
        let i = id.wrapping_sub(self.base);
        (i < self.len as u64).then_some(i as usize)
    }

    /// The slot of band position `i`.
    #[inline(always)]
    fn slot(&self, i: usize) -> &Option<V> {
        let at = self.head + i;
        &self.pages[at / PAGE][at % PAGE]
    }

    /// The slot of band position `i`, to change.
    #[inline(always)]
    fn slot_mut(&mut self, i: usize) -> &mut Option<V> {
        let at = self.head + i;
        &mut self.pages[at / PAGE][at % PAGE]
    }

    /// Slots the pages hold from the band's start on.
    #[inline]
    fn room_in_pages(&self) -> usize {
        self.pages.len() * PAGE - self.head
    }

    /// The value under `id`.
    #[inline(always)]
    pub fn get(&self, id: &JobId) -> Option<&V> {
        if let Some(i) = self.offset(*id) {
            if let Some(value) = self.slot(i).as_ref() {
                return Some(value);
            }
        }
        if self.other.is_empty() {
            return None;
        }
        self.other.get(id)
    }

    /// The value under `id`, to change.
    #[inline(always)]
    pub fn get_mut(&mut self, id: &JobId) -> Option<&mut V> {
        if let Some(i) = self.offset(*id) {
            if self.slot(i).is_some() {
                return self.slot_mut(i).as_mut();
            }
        }
        if self.other.is_empty() {
            return None;
        }
        self.other.get_mut(id)
    }

    /// Whether a value is held under `id`.
    #[inline]
    pub fn contains_key(&self, id: &JobId) -> bool {
        self.get(id).is_some()
    }

    /// Puts `value` under `id`, replacing what was there.
    pub fn insert(&mut self, id: JobId, value: V) {
        match self.get_mut(&id) {
            Some(held) => *held = value,
            None => {
                self.insert_new(id, || value);
            }
        }
    }

    /// Puts the value `make` returns under `id`, which is not held (the caller knows: it
    /// just looked), and lends it back where it now lies. The common case, inlined: the id
    /// after the band's last (ids are handed out rising), one write at the band's end.
    /// Always inlined, so that `make` is too and the value is written straight into its
    /// slot (called, a ledger entry was built on the stack and copied in, 272 bytes).
    #[inline(always)]
    pub fn insert_new(&mut self, id: JobId, make: impl FnOnce() -> V) -> &mut V {
        self.insert_new_from(id, (), |()| make())
    }

    /// [`IdBand::insert_new`] of the value `make` builds from `part`, a large part of it
    /// (an admitted action's job) handed over as an argument rather than captured: a
    /// closure that captured it by value copied it into the closure first.
    #[inline(always)]
    pub fn insert_new_from<P>(&mut self, id: JobId, part: P, make: impl FnOnce(P) -> V) -> &mut V {
        debug_assert!(self.get(&id).is_none(), "{id} is not held yet");
        if self.len == 0 {
            // An empty band starts at any id (an attempt table holding one attempt at a
            // time is empty at every send).
            self.base = id;
        }
        // One place the value is made and written, whichever way the slot is found: made
        // at two, `make` was called out of line.
        let place =
            if id.wrapping_sub(self.base) == self.len as u64 && self.len < self.room_in_pages() {
                let i = self.len;
                self.len += 1;
                self.held += 1;
                self.slot_mut(i)
            } else {
                self.vacant(id)
            };
        debug_assert!(
            place.is_none(),
            "a slot past the band, or a vacant one, is empty"
        );
        // Not `get_or_insert_with(|| make(part))`: that closure would capture `part` by
        // value, one more copy of it.
        if place.is_none() {
            *place = Some(make(part));
        }
        place.as_mut().expect("just filled")
    }

    /// [`IdBand::insert_new`] of an id that is not the one after the band's last, or that
    /// needs another page: the empty slot it takes, in the band (counted held) or in
    /// `other`, for the caller to fill at once.
    #[inline(never)]
    fn vacant(&mut self, id: JobId) -> &mut Option<V> {
        match self.band_place(id) {
            Some(i) => self.slot_mut(i),
            None => self.other.vacant(id),
        }
    }

    /// The band position `id` takes (now counted held), or `None` when it goes to `other`.
    fn band_place(&mut self, id: JobId) -> Option<usize> {
        if self.len == 0 {
            self.base = id;
            self.head = 0;
        }
        let i = id.checked_sub(self.base)?;
        if i >= self.room() {
            // Far past the band: its oldest values move aside until the id fits, or the band
            // is empty and starts again at this id.
            self.retire_until(id);
            if self.len == 0 {
                self.base = id;
                self.head = 0;
            }
        }
        // The band's start may have passed `id` (see `retire_until`): `id` goes aside.
        let i = usize::try_from(id.checked_sub(self.base)?).ok()?;
        if i as u64 >= self.room() {
            return None;
        }
        while i >= self.room_in_pages() {
            self.pages.push(empty_page());
        }
        debug_assert!(self.slot(i).is_none());
        self.len = self.len.max(i + 1);
        self.held += 1;
        Some(i)
    }

    /// The band positions the band may span with one more value.
    fn room(&self) -> u64 {
        (SPREAD * (self.held + 1) + SLACK) as u64
    }

    /// Moves the band's oldest values to `other` until `id` is within `room` of the band's
    /// start, or the band is empty, or its start has passed `id` (dropping the empty slots
    /// after a retired value can step past an empty `id` in the band: `id` then goes to
    /// `other`).
    fn retire_until(&mut self, id: JobId) {
        while self.len > 0 && id.checked_sub(self.base).is_some_and(|i| i >= self.room()) {
            if let Some(value) = self.slot_mut(0).take() {
                self.held -= 1;
                self.other.insert_new(self.base, || value);
            }
            self.pop_front_slot();
            self.trim_front();
        }
    }

    /// Drops the band's first slot (empty now). A first page left wholly behind the band
    /// goes to the end, to be filled again (its slots are all empty).
    #[inline]
    fn pop_front_slot(&mut self) {
        self.head += 1;
        self.base = self.base.wrapping_add(1);
        self.len -= 1;
        if self.head == PAGE {
            self.recycle_first_page();
        }
    }

    /// Moves the first page, wholly behind the band, to the end (a move of the pages'
    /// pointers, once every [`PAGE`] removals).
    #[inline(never)]
    fn recycle_first_page(&mut self) {
        self.pages.rotate_left(1);
        self.head = 0;
    }

    /// Drops empty slots at the band's start.
    fn trim_front(&mut self) {
        while self.len > 0 && self.slot(0).is_none() {
            self.pop_front_slot();
        }
    }

    /// After band position `i` was emptied: the band's first and last slots hold values
    /// again. The common case inline: the first goes, and the next is held.
    #[inline]
    fn settle_after_removal(&mut self, i: usize) {
        if i == 0 && self.len > 1 && self.slot(1).is_some() {
            self.pop_front_slot();
        } else if self.len == 1 {
            // The band's only value went: it starts again where the next id lands.
            self.len = 0;
            self.head = 0;
            self.base = self.base.wrapping_add(1);
        } else {
            self.settle_ends(i);
        }
    }

    /// [`IdBand::settle_after_removal`] out of line: more empty slots at the band's start.
    /// Empty slots at its end stay: the newest ids come and go (attempts answered out of
    /// order), and dropping the empty slots behind each only to span them again with the
    /// next id walked them all once per removal (each slot passed at the start is passed
    /// once, for good).
    #[inline(never)]
    fn settle_ends(&mut self, i: usize) {
        if i == 0 {
            self.trim_front();
        }
    }

    /// Takes the value under `id` out. The tests' reference: the scheduler reads what it
    /// needs where the value lies ([`IdBand::remove_with`]), since taking a value out copied
    /// it through the stack (an attempt's, padding and all, in overlapping pieces).
    #[cfg(test)]
    pub fn remove(&mut self, id: &JobId) -> Option<V> {
        if let Some(i) = self.offset(*id) {
            if let Some(value) = self.slot_mut(i).take() {
                self.held -= 1;
                self.settle_after_removal(i);
                return Some(value);
            }
        }
        if self.other.is_empty() {
            return None;
        }
        self.other.remove(id)
    }

    /// Lends the value under `id` to `f`, then drops it where it lies. `f`'s result, or
    /// `None` when no value was held: nothing is moved, for a caller that reads a few
    /// fields of a large value on its way out.
    #[inline]
    pub fn remove_with<R>(&mut self, id: &JobId, f: impl FnOnce(&mut V) -> R) -> Option<R> {
        if let Some(i) = self.offset(*id) {
            let place = self.slot_mut(i);
            if let Some(value) = place.as_mut() {
                let result = f(value);
                // Assigning drops the old value in place: no copy of it is made.
                *place = None;
                self.held -= 1;
                self.settle_after_removal(i);
                return Some(result);
            }
        }
        if self.other.is_empty() {
            return None;
        }
        self.other.remove_with(id, f)
    }

    /// Drops the value under `id` where it lies. Whether one was held.
    #[inline]
    pub fn delete(&mut self, id: &JobId) -> bool {
        self.remove_with(id, |_| ()).is_some()
    }

    /// Asks the CPU to bring the value under `id` into its cache (see
    /// [`IdSlab::prefetch`]). Changes nothing.
    #[inline]
    pub fn prefetch(&self, id: &JobId) {
        #[cfg(target_arch = "x86_64")]
        match self.offset(*id) {
            Some(i) => {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                let start = self.slot(i) as *const Option<V> as *const i8;
                for offset in (0..std::mem::size_of::<Option<V>>()).step_by(64) {
                    // SAFETY: a prefetch is a hint: it reads nothing the program sees and
                    // cannot fault, whatever the address; SSE is in every x86-64 CPU.
                    unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
                }
            }
            None => self.other.prefetch(id),
        }
    }

    /// Every id held, in increasing order.
    pub fn ids(&self) -> Vec<JobId> {
        let mut ids = self.other.ids();
        ids.extend((0..self.len).filter_map(|i| {
            self.slot(i)
                .is_some()
                .then_some(self.base.wrapping_add(i as u64))
        }));
        ids.sort_unstable();
        ids
    }

    /// Every value held, in no particular order (callers that output them sort).
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.pages
            .iter()
            .flat_map(|page| page.iter().flatten())
            .chain(self.other.values())
    }

    /// How many values are held.
    pub fn len(&self) -> usize {
        self.held + self.other.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<V> std::ops::Index<&JobId> for IdBand<V> {
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

    /// The band's own invariants: its first slot holds a value, it counts what it holds,
    /// nothing lies past it, and no id is both in the band and in `other`.
    fn check<V>(band: &IdBand<V>) -> Result<(), TestCaseError> {
        if band.len > 0 {
            prop_assert!(band.slot(0).is_some(), "the first slot holds a value");
        }
        prop_assert!(band.head < PAGE && band.len <= band.room_in_pages());
        let held = (0..band.len).filter(|&i| band.slot(i).is_some()).count();
        prop_assert_eq!(held, band.held);
        prop_assert_eq!(
            band.pages.iter().flat_map(|p| p.iter().flatten()).count(),
            held,
            "nothing past the band"
        );
        for id in band.other.ids() {
            if let Some(i) = band.offset(id) {
                prop_assert!(band.slot(i).is_none(), "{} is held once", id);
            }
        }
        Ok(())
    }

    proptest! {
        /// Whatever the order of puts, reads and removals, the band answers as a map does.
        #[test]
        fn answers_as_a_map_does(ops in proptest::collection::vec((0u8..8, 0u64..6_000), 1..500)) {
            let mut band = IdBand::default();
            let mut map = std::collections::BTreeMap::new();
            for (step, (op, n)) in ops.into_iter().enumerate() {
                // Mostly rising ids, as drivers hand out, with jumps and stragglers.
                let id = match op {
                    0 | 1 => n,
                    _ => map.keys().next_back().map_or(n, |&last: &u64| last + n % 5),
                };
                match op {
                    0 | 2 | 3 => {
                        use std::collections::btree_map::Entry;
                        match map.entry(id) {
                            Entry::Occupied(mut held) => {
                                band.insert(id, step);
                                held.insert(step);
                            }
                            Entry::Vacant(new) => {
                                *band.insert_new(id, || step) += 1;
                                new.insert(step + 1);
                            }
                        }
                    }
                    1 | 4 => prop_assert_eq!(band.remove(&id), map.remove(&id)),
                    5 => prop_assert_eq!(band.remove_with(&id, |v| *v), map.remove(&id)),
                    6 => {
                        // The oldest held goes, as attempts and ledger entries mostly do.
                        if let Some(&first) = map.keys().next() {
                            prop_assert!(band.delete(&first));
                            map.remove(&first);
                        }
                    }
                    _ => {
                        if let (Some(v), Some(w)) = (band.get_mut(&id), map.get_mut(&id)) {
                            *v += 1;
                            *w += 1;
                        }
                        band.prefetch(&id);
                    }
                }
                prop_assert_eq!(band.get(&id), map.get(&id));
                prop_assert_eq!(band.contains_key(&id), map.contains_key(&id));
                prop_assert_eq!(band.len(), map.len());
                check(&band)?;
            }
            for (id, value) in &map {
                prop_assert_eq!(band.get(id), Some(value));
            }
            prop_assert_eq!(band.ids(), map.keys().copied().collect::<Vec<_>>());
            let mut values: Vec<usize> = band.values().copied().collect();
            values.sort_unstable();
            let mut expected: Vec<usize> = map.values().copied().collect();
            expected.sort_unstable();
            prop_assert_eq!(values, expected);
        }
    }

    /// A band grown long and left sparse, then given an old id inside it on an empty slot
    /// (an action the queue turned away, offered again after newer ones were admitted):
    /// retiring the oldest value drops the empty slots after it and steps the band's start
    /// past that id, which then goes aside instead of the band's start being subtracted
    /// from it (an overflow in debug builds, every value moved aside in release ones).
    #[test]
    fn an_old_id_on_an_empty_slot_of_a_sparse_band_goes_aside() {
        let mut band = IdBand::default();
        for id in 0..=2_010u64 {
            band.insert_new(id, || id);
        }
        for id in 1..=2_000u64 {
            assert_eq!(band.remove(&id), Some(id));
        }
        band.insert_new(1_500, || 1_500);
        assert_eq!(band.get(&1_500), Some(&1_500));
        assert_eq!(band.get(&0), Some(&0));
        for id in 2_001..=2_010u64 {
            assert_eq!(band.get(&id), Some(&id), "{id} stays in the band");
            assert!(band.offset(id).is_some_and(|i| band.slot(i).is_some()));
        }
        assert_eq!(band.len(), 12);
        assert_eq!(
            band.other.len(),
            2,
            "only the retired 0 and the old 1,500 went aside"
        );
    }

    #[test]
    fn a_sliding_band_of_rising_ids_stays_in_the_ring() {
        let mut band = IdBand::default();
        for id in 1..100_000u64 {
            band.insert_new(id, || id);
            if id > 1_000 {
                assert_eq!(band.remove(&(id - 1_000)), Some(id - 1_000));
            }
        }
        assert!(band.other.is_empty());
        assert_eq!(band.len(), 1_000);
        assert!(band.pages.len() <= 2, "the ring did not grow past the band");
        assert_eq!(band.get(&99_999), Some(&99_999));
        assert_eq!(band.get(&98_999), None);
        assert_eq!(band.ids(), (99_000..100_000).collect::<Vec<_>>());
    }

    /// The newest ids coming and going behind an old one (attempts answered out of order)
    /// leave the band's end where it was: the next id extends it by one slot, with no walk
    /// back over the empty slots (which the band once made at every such removal).
    #[test]
    fn empty_slots_at_the_end_stay() {
        let mut band = IdBand::default();
        band.insert_new(0, || 0u64);
        for id in 1..500u64 {
            band.insert_new(id, || id);
            assert_eq!(band.remove(&id), Some(id));
            assert_eq!(band.len, id as usize + 1, "the end stays at {id}");
        }
        assert_eq!(band.len(), 1);
        assert_eq!(band.remove(&0), Some(0));
        assert_eq!(
            (band.len, band.len()),
            (0, 0),
            "the start passed the empty slots"
        );
    }

    #[test]
    fn a_straggler_far_behind_moves_aside_and_stays_found() {
        let mut band = IdBand::default();
        band.insert_new(0, || 0u64);
        for id in 1..20_000u64 {
            band.insert_new(id, || id);
            if id > 10 {
                assert_eq!(band.remove(&(id - 10)), Some(id - 10));
            }
        }
        // Id 0 outlived everything after it: it moved to `other`, the band went on.
        assert_eq!(band.other.ids(), vec![0]);
        assert_eq!(band.get(&0), Some(&0));
        assert!(
            band.pages.len() <= 3,
            "the band spans at most 2 slots a value and the slack"
        );
        assert_eq!(band.len(), 11);
        assert_eq!(band.remove(&0), Some(0));
        for id in 19_990..20_000u64 {
            assert_eq!(band.remove(&id), Some(id));
        }
        assert!(band.is_empty());
        // Far, old and repeated ids.
        band.insert_new(u64::MAX, || 1);
        band.insert_new(5, || 2);
        band.insert(5, 3);
        band.insert_new(1 << 40, || 4);
        assert_eq!(band.ids(), vec![5, 1 << 40, u64::MAX]);
        assert_eq!(band[&5], 3);
        assert_eq!(band.remove(&u64::MAX), Some(1));
        assert_eq!(band.remove(&u64::MAX), None);
        assert_eq!(band.len(), 2);
    }
}
