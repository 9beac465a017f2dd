//! Tallies keyed by the labels the provider wrote from its static tables.
//!
//! A journal entry's usual outcome, route, method and error code are `&'static str`s out of
//! the provider model's tables (the entry's borrowed `Cow`s). A static never moves or dies,
//! so two with one address and length are one text, and a tally keyed by them is found by
//! comparing two words, where finding it by text compared the bytes: a `memcmp` call
//! apiece, about six an attempt in the naive backlog. A label made at run time (an unusual
//! outcome, an unknown route, an entry read back from JSON) has no static key and is found
//! by its text as before. The same text at two addresses gets two keys that lead to one
//! tally, so what is counted never depends on where a label lives.

use std::borrow::Cow;

use stampede_provider::model::JournalEntry;

/// The labels of one journal entry that are statics, where they are.
#[derive(Debug, Clone, Copy, Default)]
pub struct Statics {
    /// The outcome label (`"429"`, `"dropped"`, ...).
    pub outcome: Option<&'static str>,
    /// The route template.
    pub route: Option<&'static str>,
    /// The HTTP method.
    pub method: Option<&'static str>,
    /// The error code, `""` for an entry with none.
    pub error_code: Option<&'static str>,
    /// The limit that refused it; `None` for an entry with none, as for one made at run time.
    pub limit: Option<&'static str>,
}

impl Statics {
    /// The static labels of `e`.
    pub fn of(e: &JournalEntry) -> Self {
        Self {
            outcome: borrowed(&e.outcome),
            route: borrowed(&e.route),
            method: borrowed(&e.method),
            error_code: match &e.error_code {
                None => Some(""),
                Some(code) => borrowed(code),
            },
            limit: e.limit.as_ref().and_then(borrowed),
        }
    }
}

// The `Cow` itself is what tells a static from a text made at run time.
#[allow(clippy::ptr_arg)]
fn borrowed(label: &Cow<'static, str>) -> Option<&'static str> {
    match label {
        Cow::Borrowed(s) => Some(s),
        Cow::Owned(_) => None,
    }
}

/// A key made of static labels, compared by address and length.
pub trait StaticKey: Copy {
    /// Whether `self` and `other` are the same statics.
    fn same(self, other: Self) -> bool;
}

impl StaticKey for &'static str {
    fn same(self, other: Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl StaticKey for (&'static str, &'static str) {
    fn same(self, other: Self) -> bool {
        self.0.same(other.0) && self.1.same(other.1)
    }
}

/// Values by a key of static labels: a short list searched in order (a run meets a
/// handful of labels).
#[derive(Debug, Clone)]
pub struct ByStatic<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for ByStatic<K, V> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
        }
    }
}

impl<K: StaticKey, V> ByStatic<K, V> {
    /// The value under `key` to change, put there by `make` when there is none yet.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let at = match self.entries.iter().position(|(k, _)| k.same(key)) {
            Some(at) => at,
            None => {
                self.entries.push((key, make()));
                self.entries.len() - 1
            }
        };
        &mut self.entries[at].1
    }

    /// Every entry, in the order put.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (K, &mut V)> {
        self.entries.iter_mut().map(|(k, v)| (*k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statics_are_one_key_by_address_and_runtime_texts_have_none() {
        let e = JournalEntry {
            outcome: Cow::Borrowed("429"),
            route: Cow::Owned("/v1/unknown".to_string()),
            method: Cow::Borrowed("POST"),
            error_code: None,
            ..JournalEntry::default()
        };
        let s = Statics::of(&e);
        assert_eq!(s.outcome, Some("429"));
        assert_eq!(s.route, None, "a text made at run time has no static key");
        assert_eq!(s.error_code, Some(""), "no code is the empty static");
        let owned_code = JournalEntry {
            error_code: Some(Cow::Owned("odd_code".to_string())),
            ..JournalEntry::default()
        };
        assert_eq!(Statics::of(&owned_code).error_code, None);

        let label: &'static str = "429";
        let mut counts: ByStatic<&'static str, u64> = ByStatic::default();
        *counts.get_or_insert_with(label, || 0) += 1;
        *counts.get_or_insert_with(label, || unreachable!("the same static")) += 1;
        // The same text at another address is another key (its tally is then found by
        // text by the caller): a prefix of a longer static is not the same static.
        let longer: &'static str = "4290";
        let mut made = false;
        counts.get_or_insert_with(&longer[..3], || {
            made = true;
            0
        });
        assert!(made, "a prefix of a longer static is another key");
        assert_eq!(counts.iter_mut().map(|(_, n)| *n).sum::<u64>(), 2);
    }
}
