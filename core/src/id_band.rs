//! Values by job id (or attempt id) addressed by position: the value of id `base + i` sits
//! in the `i`-th slot of a ring, with no index between the id and its value.
//!
//! [`IdSlab`] finds a value through an index (id to slot number) and then a page; this
//! drops both steps for the ids of a sliding band. Ids handed out rising and leaving
//! roughly in the order they came (attempts on the wire, a ledger's live entries) then cost
//! one subtraction, one mask and one load to find, a push to add and, for the oldest, a
//! step of the ring's start to remove: no free list, no index to keep in step.
//!
//! Anything else goes to an [`IdSlab`] beside the ring (`other`): an id below the band, one
//! far past its end, and the front of a band grown sparse (its oldest values move there,
//! once each). A value is in the ring or in `other`, never both: an id's ring slot is
//! looked at first, and `other` only when that slot is empty and `other` holds something.
//!
//! Memory: the ring spans at most [`SPREAD`] slots per value in it plus [`SLACK`], each slot
//! `size_of::<Option<V>>()` bytes, in a vector of a power of two slots that doubles as the
//! band grows (holding the old and the new vector while it copies) and never shrinks. So
//! it suits small values, or tables whose peak is small; the core's live actions, at a
//! million-request run's hundred thousand, stay in an [`IdSlab`], whose pages never move.
//!
//! Never iterated into an output: [`IdBand::ids`] sorts (determinism rule).

use crate::id_slab::IdSlab;
use crate::job::JobId;

/// Empty slots the ring may span beyond [`SPREAD`] per value in it.
pub const SLACK: usize = 1_024;

/// Slots the ring may span per value in it (besides [`SLACK`]).
pub const SPREAD: usize = 2;

/// Values of type `V` by id, addressed by position in a sliding band.
#[derive(Debug, Clone)]
pub struct IdBand<V> {
    /// The id of the band's first slot.
    base: JobId,
    /// Where the band's first slot lies in `slots`.
    head: usize,
    /// Slots in the band (ids `base..base + len`); the first and the last hold a value.
    len: usize,
    /// The ring: slot `i` of the band is `slots[(head + i) & (slots.len() - 1)]`; a power
    /// of two long (or empty).
    slots: Vec<Option<V>>,
    /// Values in the ring.
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
            slots: Vec::new(),
            held: 0,
            other: IdSlab::default(),
        }
    }
}

impl<V> IdBand<V> {
    /// The band position of `id`, if within the band.
    #[inline]
    fn offset(&self, id: JobId) -> Option<usize> {
        let i = id.wrapping_sub(self.base);
        (i < self.len as u64).then_some(i as usize)
    }

    /// Where band position `i` lies in `slots`.
    #[inline]
    fn at(&self, i: usize) -> usize {
        (self.head + i) & (self.slots.len().wrapping_sub(1))
    }

    /// The value under `id`.
    #[inline]
    pub fn get(&self, id: &JobId) -> Option<&V> {
        if let Some(i) = self.offset(*id) {
            if let Some(value) = self.slots[self.at(i)].as_ref() {
                return Some(value);
            }
        }
        if self.other.is_empty() {
            return None;
        }
        self.other.get(id)
    }

    /// The value under `id`, to change.
    #[inline]
    pub fn get_mut(&mut self, id: &JobId) -> Option<&mut V> {
        if let Some(i) = self.offset(*id) {
            let at = self.at(i);
            if self.slots[at].is_some() {
                return self.slots[at].as_mut();
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

    /// Puts `value` under `id`, replacing what was there. (For the tests: the tables in a
    /// band add only ids not held, with `insert_new`.)
    #[cfg(test)]
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
    /// after the band's last (ids are handed out rising), one push at the ring's end.
    /// Always inlined, so that `make` is too and the value is written straight into its
    /// slot (called, a ledger entry was built on the stack and copied in, 272 bytes).
    #[inline(always)]
    pub fn insert_new(&mut self, id: JobId, make: impl FnOnce() -> V) -> &mut V {
        debug_assert!(self.get(&id).is_none(), "{id} is not held yet");
        if self.len == 0 {
            // An empty band starts at any id (an attempt table holding one attempt at a
            // time is empty at every send).
            self.base = id;
        }
        // One place the value is made and written, whichever way the slot is found: made
        // at two, `make` was called out of line.
        let place = if id.wrapping_sub(self.base) == self.len as u64 && self.len < self.slots.len()
        {
            let at = self.at(self.len);
            self.len += 1;
            self.held += 1;
            &mut self.slots[at]
        } else {
            self.vacant(id)
        };
        debug_assert!(
            place.is_none(),
            "a slot past the band, or a vacant one, is empty"
        );
        *place = Some(make());
        place.as_mut().expect("just filled")
    }

    /// [`IdBand::insert_new`] of an id that is not the one after the band's last, or that
    /// needs the ring to grow: the empty slot it takes, in the ring (counted held) or in
    /// `other`, for the caller to fill at once.
    #[inline(never)]
    fn vacant(&mut self, id: JobId) -> &mut Option<V> {
        match self.ring_place(id) {
            Some(at) => &mut self.slots[at],
            None => self.other.vacant(id),
        }
    }

    /// The ring slot `id` takes (now counted held), or `None` when it goes to `other`.
    fn ring_place(&mut self, id: JobId) -> Option<usize> {
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
        let i = usize::try_from(id - self.base).ok()?;
        if i as u64 >= self.room() {
            return None;
        }
        if i >= self.slots.len() {
            self.grow(i + 1);
        }
        let at = self.at(i);
        debug_assert!(self.slots[at].is_none());
        self.len = self.len.max(i + 1);
        self.held += 1;
        Some(at)
    }

    /// The band positions the ring may span with one more value.
    fn room(&self) -> u64 {
        (SPREAD * (self.held + 1) + SLACK) as u64
    }

    /// Moves the band's oldest values to `other` until `id` is within `room` of the band's
    /// start, or the band is empty.
    fn retire_until(&mut self, id: JobId) {
        while self.len > 0 && id - self.base >= self.room() {
            let at = self.at(0);
            if let Some(value) = self.slots[at].take() {
                self.held -= 1;
                self.other.insert_new(self.base, || value);
            }
            self.pop_front_slot();
            self.trim_front();
        }
    }

    /// Drops the band's first slot (empty now).
    #[inline]
    fn pop_front_slot(&mut self) {
        self.head = self.at(1);
        self.base = self.base.wrapping_add(1);
        self.len -= 1;
    }

    /// Drops empty slots at the band's start.
    fn trim_front(&mut self) {
        while self.len > 0 && self.slots[self.at(0)].is_none() {
            self.pop_front_slot();
        }
    }

    /// Drops empty slots at the band's end.
    fn trim_back(&mut self) {
        while self.len > 0 && self.slots[self.at(self.len - 1)].is_none() {
            self.len -= 1;
        }
    }

    /// Makes the ring at least `needed` slots long (a power of two), the band's slots
    /// moved to its start in order.
    fn grow(&mut self, needed: usize) {
        let size = needed.next_power_of_two().max(8);
        let mut slots = Vec::with_capacity(size);
        for i in 0..self.len {
            let at = self.at(i);
            slots.push(self.slots[at].take());
        }
        slots.resize_with(size, || None);
        self.slots = slots;
        self.head = 0;
    }

    /// Takes the value under `id` out of the ring, given its band position: settles the
    /// band's ends.
    #[inline]
    fn take_at(&mut self, i: usize) -> Option<V> {
        let at = self.at(i);
        let value = self.slots[at].take()?;
        self.held -= 1;
        self.settle_after_removal(i);
        Some(value)
    }

    /// After band position `i` was emptied: the band's first and last slots hold values
    /// again. The common case inline: the first goes, and the next is held.
    #[inline]
    fn settle_after_removal(&mut self, i: usize) {
        if i == 0 && self.len > 1 && self.slots[self.at(1)].is_some() {
            self.pop_front_slot();
        } else if self.len == 1 {
            self.len = 0;
            self.head = 0;
            self.base = self.base.wrapping_add(1);
        } else {
            self.settle_ends(i);
        }
    }

    /// [`IdBand::settle_after_removal`] out of line: more empty slots at either end.
    #[inline(never)]
    fn settle_ends(&mut self, i: usize) {
        // The band's other end still holds a value: it spanned more than this slot.
        if i == 0 {
            self.trim_front();
        } else if i + 1 == self.len {
            self.trim_back();
        }
    }

    /// Takes the value under `id` out.
    #[inline]
    pub fn remove(&mut self, id: &JobId) -> Option<V> {
        if let Some(i) = self.offset(*id) {
            if let Some(value) = self.take_at(i) {
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
            let at = self.at(i);
            if let Some(value) = self.slots[at].as_mut() {
                let result = f(value);
                // Assigning drops the old value in place: no copy of it is made.
                self.slots[at] = None;
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
                let start = &self.slots[self.at(i)] as *const Option<V> as *const i8;
                for offset in (0..std::mem::size_of::<Option<V>>()).step_by(64) {
                    // SAFETY: a prefetch is a hint: it reads nothing the program sees and
                    // cannot fault, whatever the address; SSE is in every x86-64 CPU.
                    unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
                }
            }
            None => self.other.prefetch(id),
        }
    }

    /// Every id held, in increasing order (for the tests: no table in a band lists its ids).
    #[cfg(test)]
    pub fn ids(&self) -> Vec<JobId> {
        let mut ids = self.other.ids();
        ids.extend((0..self.len).filter_map(|i| {
            self.slots[self.at(i)]
                .is_some()
                .then_some(self.base.wrapping_add(i as u64))
        }));
        ids.sort_unstable();
        ids
    }

    /// Every value held, in no particular order (callers that output them sort).
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.slots.iter().flatten().chain(self.other.values())
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

    /// The band's own invariants: its ends hold values, it counts what it holds, it spans
    /// no more than its rule allows, and no id is both in the ring and in `other`.
    fn check<V>(band: &IdBand<V>) -> Result<(), TestCaseError> {
        if band.len > 0 {
            prop_assert!(
                band.slots[band.at(0)].is_some(),
                "the first slot holds a value"
            );
            prop_assert!(
                band.slots[band.at(band.len - 1)].is_some(),
                "so does the last"
            );
        }
        prop_assert!(band.len <= band.slots.len());
        let held = (0..band.len)
            .filter(|&i| band.slots[band.at(i)].is_some())
            .count();
        prop_assert_eq!(held, band.held);
        prop_assert_eq!(
            band.slots.iter().flatten().count(),
            held,
            "nothing past the band"
        );
        prop_assert!(band.len <= SPREAD * band.held + SLACK);
        for id in band.other.ids() {
            if let Some(i) = band.offset(id) {
                prop_assert!(band.slots[band.at(i)].is_none(), "{} is held once", id);
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
        assert!(
            band.slots.len() <= 1_024,
            "the ring did not grow past the band"
        );
        assert_eq!(band.get(&99_999), Some(&99_999));
        assert_eq!(band.get(&98_999), None);
        assert_eq!(band.ids(), (99_000..100_000).collect::<Vec<_>>());
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
        assert!(band.slots.len() <= 2 * (SPREAD * 12 + SLACK));
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
