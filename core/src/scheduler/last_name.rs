//! A small memo of the shared names last looked up and what they map to.
//!
//! A workload's actions share their tenant, class and scope names (interned [`Name`]s),
//! and the submits of a run name a handful of them, interleaved. Comparing the few names
//! seen last (one address comparison each) skips the map's string search on a hit.

use stampede_name::Name;

/// Names kept: a few tenants interleaved hit; past that, the oldest kept is replaced.
const KEPT: usize = 8;

/// The names last looked up and their values.
#[derive(Debug, Clone)]
pub(super) struct LastName<T> {
    kept: [Option<(Name, T)>; KEPT],
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
    pub fn get(&self, name: Name) -> Option<T> {
        self.kept.iter().find_map(|kept| match kept {
            Some((last, value)) if *last == name => Some(*value),
            _ => None,
        })
    }

    /// Keeps `name` and its `value`, in place of the oldest kept when all are taken.
    pub fn keep(&mut self, name: Name, value: T) {
        self.kept[self.next] = Some((name, value));
        self.next = (self.next + 1) % KEPT;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_name_hits_until_it_is_the_oldest_replaced() {
        let mut memo = LastName::default();
        let acme = Name::new("acme");
        assert_eq!(memo.get(acme), None);
        memo.keep(acme, 7u32);
        assert_eq!(memo.get(acme), Some(7));
        assert_eq!(
            memo.get(Name::from(String::from("acme"))),
            Some(7),
            "the same text is the same name"
        );
        assert_eq!(memo.get(Name::new("acme2")), None);
        let others: Vec<Name> = (0..KEPT).map(|i| Name::new(&format!("t{i}"))).collect();
        for (i, name) in others.iter().enumerate() {
            memo.keep(*name, 100 + i as u32);
        }
        assert_eq!(memo.get(acme), None, "the oldest kept went first");
        assert_eq!(memo.get(others[KEPT - 1]), Some(100 + KEPT as u32 - 1));
        assert_eq!(memo.get(others[0]), Some(100));
    }
}
