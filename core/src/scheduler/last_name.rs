//! A small memo of the shared names last looked up and what they map to.
//!
//! A workload's actions share their tenant, class and scope names (`Arc<str>` made once
//! when the scenario loads), and the submits of a run name a handful of them, interleaved.
//! Comparing the pointers of the few names seen last skips the map's string search on a
//! hit. A hit is exact: the memo holds a clone of each name, so a pointer cannot be freed
//! and reused for other text while it is kept, and a `str` behind an `Arc` never changes.

use std::sync::Arc;

/// Names kept: a few tenants interleaved hit; past that, the oldest kept is replaced.
const KEPT: usize = 8;

/// The names last looked up and their values.
#[derive(Debug, Clone)]
pub(super) struct LastName<T> {
    kept: [Option<(Arc<str>, T)>; KEPT],
    /// Where the next name is kept (round robin: the oldest goes first).
    next: usize,
}

impl<T> Default for LastName<T> {
    fn default() -> Self {
        Self {
            kept: std::array::from_fn(|_| None),
            next: 0,
        }
    }
}

impl<T: Copy> LastName<T> {
    /// The value of `name` if it is the very name (the same allocation) of one kept.
    pub fn get(&self, name: &Arc<str>) -> Option<T> {
        self.kept.iter().find_map(|kept| match kept {
            Some((last, value)) if Arc::ptr_eq(last, name) => Some(*value),
            _ => None,
        })
    }

    /// Keeps `name` and its `value`, in place of the oldest kept when all are taken.
    pub fn keep(&mut self, name: &Arc<str>, value: T) {
        self.kept[self.next] = Some((Arc::clone(name), value));
        self.next = (self.next + 1) % KEPT;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_shared_name_hits() {
        let mut memo = LastName::default();
        let acme: Arc<str> = Arc::from("acme");
        assert_eq!(memo.get(&acme), None);
        memo.keep(&acme, 7u32);
        assert_eq!(memo.get(&Arc::clone(&acme)), Some(7));
        let same_text: Arc<str> = Arc::from("acme");
        assert_eq!(
            memo.get(&same_text),
            None,
            "equal text elsewhere is looked up"
        );
        memo.keep(&same_text, 8);
        assert_eq!((memo.get(&acme), memo.get(&same_text)), (Some(7), Some(8)));
        let others: Vec<Arc<str>> = (0..KEPT - 1).map(|i| Arc::from(format!("t{i}"))).collect();
        for (i, name) in others.iter().enumerate() {
            memo.keep(name, 100 + i as u32);
        }
        assert_eq!(memo.get(&acme), None, "the oldest kept went first");
        assert_eq!(memo.get(&same_text), Some(8));
        assert_eq!(memo.get(&others[KEPT - 2]), Some(100 + KEPT as u32 - 2));
    }
}
