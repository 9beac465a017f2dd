//! A name a run repeats across its actions (tenant, credential, scope, class, model),
//! interned once and then handled as a copyable value.
//!
//! Every action, its ledger entry and each of its attempts carry the same few names. Held as
//! `Arc<str>`, each copy of an action's record cost an atomic increment per name and each
//! drop an atomic decrement: about thirty locked instructions per action on the core's
//! submit-to-terminal cycle, a third of its time. A [`Name`] is a `&'static str` into a
//! process-wide table: copying it is copying two words, equality is one address comparison,
//! and no count is kept.
//!
//! # Bounds
//!
//! An interned text lives until the process ends. Names come from scenarios and policies
//! (a run has a handful) and from ledger rows and case files written by runs of those
//! scenarios, so the table holds what the process's scenarios name, not what its actions do.
//! Per-action texts (a task per action, a resource id, an external reference) are not names
//! and must not be interned; nor is anything read off the network.
//!
//! # Sharing with `Arc<str>`
//!
//! The table keeps each text as an `Arc<str>` whose one reference it never gives back, so
//! [`Name::shared`] hands out an `Arc<str>` of the same allocation (one increment) to an API
//! that wants one (the provider model's request), and [`Name::is`] tells whether such an
//! `Arc` is already this name without a comparison of text.

#![deny(missing_docs)]

use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::{Arc, Mutex, OnceLock};

/// An interned name: `Copy`, 16 bytes, compared by address, ordered and hashed by its text
/// (so maps and sorted lists keyed by names come out in the same order in every run).
#[derive(Clone, Copy)]
pub struct Name(&'static str);

/// The texts interned so far; each points into an `Arc<str>` leaked on purpose (see the
/// crate docs).
fn table() -> &'static Mutex<HashSet<&'static str>> {
    static TABLE: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    TABLE.get_or_init(Default::default)
}

impl Name {
    /// The name spelled `text`, interned on first use. Takes a lock: call it where a
    /// scenario, a policy or a stored row is read, not per attempt.
    pub fn new(text: &str) -> Name {
        // A poisoned lock only means another thread panicked while inserting; the set is
        // still a set of valid texts.
        let mut table = table().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&known) = table.get(text) {
            return Name(known);
        }
        let arc: Arc<str> = Arc::from(text);
        // SAFETY: the reference taken by `into_raw` is never released, so the allocation
        // outlives every `Name` and every `Arc` made from it by `shared`.
        let interned: &'static str = unsafe { &*Arc::into_raw(arc) };
        table.insert(interned);
        Name(interned)
    }

    /// The text.
    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// The name as an `Arc<str>` sharing the interned allocation (one atomic increment, no
    /// copy of the text).
    pub fn shared(self) -> Arc<str> {
        let ptr: *const str = self.0;
        // SAFETY: every `Name` points at the data of an `Arc<str>` made by `Arc::into_raw`
        // in `new`, whose own reference is never released; taking one more and rebuilding
        // an `Arc` from the same pointer is what `Arc::from_raw` documents.
        unsafe {
            Arc::increment_strong_count(ptr);
            Arc::from_raw(ptr)
        }
    }

    /// Whether `shared` is this name's own allocation (made by [`Name::shared`]). An `Arc`
    /// of the same text made elsewhere is not.
    pub fn is(self, shared: &Arc<str>) -> bool {
        std::ptr::eq(Arc::as_ptr(shared), self.0)
    }
}

impl PartialEq for Name {
    /// One address comparison: a text is interned once, so equal texts share an address.
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Name {}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.0
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.0
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    /// By text, never by address: addresses differ from run to run.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if self == other {
            return std::cmp::Ordering::Equal;
        }
        self.0.cmp(other.0)
    }
}

impl Hash for Name {
    /// As its text hashes, so a map keyed by names can be asked with a `&str`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.0
    }
}

impl Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl Default for Name {
    /// The empty name.
    fn default() -> Self {
        Name::new("")
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0, f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl From<&str> for Name {
    fn from(text: &str) -> Self {
        Name::new(text)
    }
}

impl From<String> for Name {
    fn from(text: String) -> Self {
        Name::new(&text)
    }
}

impl serde::Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Name {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Name;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a name (a string)")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Name, E> {
                Ok(Name::new(text))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
        let mut h = DefaultHasher::new();
        value.hash(&mut h);
        h.finish()
    }

    #[test]
    fn one_text_one_address() {
        let a = Name::new("tenant-a");
        let b = Name::from(String::from("tenant-a"));
        assert_eq!(a, b);
        assert!(std::ptr::eq(a.as_str(), b.as_str()));
        assert_ne!(a, Name::new("tenant-b"));
        assert_eq!(a, "tenant-a");
        assert_eq!("tenant-a", a);
        assert_eq!(&*a, "tenant-a");
    }

    #[test]
    fn order_and_hash_follow_the_text() {
        let mut names: Vec<Name> = ["zeta", "alpha", "mid", "", "alpha2"]
            .into_iter()
            .map(Name::new)
            .collect();
        names.sort();
        let texts: Vec<&str> = names.iter().map(|n| n.as_str()).collect();
        assert_eq!(texts, ["", "alpha", "alpha2", "mid", "zeta"]);
        for n in names {
            assert_eq!(hash_of(&n), hash_of(n.as_str()));
        }
        let mut map = std::collections::HashMap::new();
        map.insert(Name::new("scope:a"), 1);
        assert_eq!(map.get("scope:a"), Some(&1));
    }

    #[test]
    fn shared_is_the_interned_allocation() {
        let name = Name::new("sk-shared");
        let arc = name.shared();
        assert_eq!(&*arc, "sk-shared");
        assert!(name.is(&arc));
        assert!(name.is(&name.shared()));
        let elsewhere: Arc<str> = Arc::from("sk-shared");
        assert!(!name.is(&elsewhere));
        assert_eq!(Name::new(&elsewhere), name);
        // Handing out and dropping many never frees the interned text.
        for _ in 0..1_000 {
            drop(name.shared());
        }
        assert_eq!(name.as_str(), "sk-shared");
        assert_eq!(&*arc, "sk-shared");
    }

    #[test]
    fn serde_as_a_string() {
        let name = Name::new("llm");
        let json = serde_json::to_string(&name).unwrap();
        assert_eq!(json, "\"llm\"");
        let back: Name = serde_json::from_str(&json).unwrap();
        assert_eq!(back, name);
        let err = serde_json::from_str::<Name>("3").unwrap_err().to_string();
        assert!(err.contains("a name"), "{err}");
        let owned: Name = serde_json::from_value(serde_json::json!("from-owned")).unwrap();
        assert_eq!(owned, "from-owned");
    }

    #[test]
    fn interning_from_threads_agrees() {
        let handles: Vec<_> = (0..4)
            .map(|_| std::thread::spawn(|| Name::new("raced").as_str().as_ptr() as usize))
            .collect();
        let addresses: HashSet<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(addresses.len(), 1);
    }

    #[test]
    fn size() {
        assert_eq!(std::mem::size_of::<Name>(), 16);
        assert_eq!(std::mem::size_of::<Option<Name>>(), 16);
    }
}
