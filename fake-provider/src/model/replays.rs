//! Completions remembered by `Idempotency-Key` (`provider.completion_idempotency`), so a
//! client unsure whether a completion went through can send it again and get the original
//! back instead of paying twice, before it falls back to another provider.
//!
//! Keys are per scope (the credential's own scope), as record keys are. Memory is bounded
//! like the record store's: a key is forgotten `retention_ms` after its commit, and at most
//! `max_keys` are kept, the oldest forgotten first.

use rustc_hash::FxHashMap;
use stampede_key::IdempotencyKey;
use std::collections::VecDeque;

/// What a completed key remembers: enough to answer the same completion again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Completed {
    /// The seq of the attempt that committed it (its id is `chatcmpl-<seq>`).
    pub(crate) seq: u64,
    /// Its usage: prompt and completion tokens.
    pub(crate) prompt_tokens: u32,
    pub(crate) completion_tokens: u32,
    body_hash: u64,
    /// The seq still holding the key (answer not yet departed), if any.
    in_flight: Option<u64>,
}

/// A keyed completion before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplayCheck {
    /// Not completed with this key (or forgotten): run it.
    Fresh,
    /// The completion with this key has not answered yet: 409.
    InUse,
    /// Same key, different body: 400.
    BodyMismatch,
    /// Same key and body, done: answer this completion again.
    Replay(Completed),
}

/// The completions remembered by key, per scope index.
#[derive(Debug, Clone)]
pub(crate) struct CompletionKeys {
    /// Per scope: key to what it completed (a derived key held in place: no allocation).
    by_scope: Vec<FxHashMap<IdempotencyKey, Completed>>,
    /// (committed at ms, scope, key, seq) in commit order, for eviction.
    order: VecDeque<(u64, usize, IdempotencyKey, u64)>,
    retention_ms: u64,
    max_keys: usize,
}

impl CompletionKeys {
    pub(crate) fn new(scopes: usize, retention_ms: u64, max_keys: usize) -> Self {
        CompletionKeys {
            by_scope: vec![FxHashMap::default(); scopes],
            order: VecDeque::new(),
            retention_ms: retention_ms.max(1),
            max_keys: max_keys.max(1),
        }
    }

    /// Changes the count cap (at least 1); the next `evict` applies it.
    pub(crate) fn set_max_keys(&mut self, max_keys: usize) {
        self.max_keys = max_keys.max(1);
    }

    /// Forgets keys committed `retention_ms` or longer before `now`, then the oldest until at
    /// most `keep` are left.
    fn evict_to(&mut self, now: u64, keep: usize) {
        while let Some((at, _, _, _)) = self.order.front() {
            let expired = at.saturating_add(self.retention_ms) <= now;
            if !expired && self.order.len() <= keep {
                break;
            }
            let Some((_, scope, key, seq)) = self.order.pop_front() else {
                break;
            };
            let map = &mut self.by_scope[scope];
            // A key committed anew after it was forgotten belongs to the newer commit.
            if map.get(&key).is_some_and(|c| c.seq == seq) {
                map.remove(&key);
            }
        }
    }

    /// Applies retention and the count cap at `now` (model ms).
    pub(crate) fn evict(&mut self, now: u64) {
        self.evict_to(now, self.max_keys);
    }

    pub(crate) fn check(&self, scope: usize, key: &IdempotencyKey, body_hash: u64) -> ReplayCheck {
        match self.by_scope[scope].get(key) {
            None => ReplayCheck::Fresh,
            Some(c) if c.in_flight.is_some() => ReplayCheck::InUse,
            Some(c) if c.body_hash != body_hash => ReplayCheck::BodyMismatch,
            Some(c) => ReplayCheck::Replay(*c),
        }
    }

    /// Remembers the completion `seq` committed at `now` under `key`, held by `seq` until it
    /// departs.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn remember(
        &mut self,
        scope: usize,
        key: &IdempotencyKey,
        body_hash: u64,
        seq: u64,
        usage: (u32, u32),
        now: u64,
    ) {
        self.evict_to(now, self.max_keys - 1);
        self.by_scope[scope].insert(
            key.clone(),
            Completed {
                seq,
                prompt_tokens: usage.0,
                completion_tokens: usage.1,
                body_hash,
                in_flight: Some(seq),
            },
        );
        self.order.push_back((now, scope, key.clone(), seq));
    }

    /// The attempt `seq` answered: its key may now be replayed.
    pub(crate) fn release(&mut self, scope: usize, key: &IdempotencyKey, seq: u64) {
        if let Some(c) = self.by_scope[scope].get_mut(key) {
            if c.in_flight == Some(seq) {
                c.in_flight = None;
            }
        }
    }

    /// Keys remembered now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_scope.iter().map(|m| m.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_forgotten_by_age_and_by_count() {
        let mut keys = CompletionKeys::new(1, 1_000, 2);
        for (n, key) in ["a", "b", "c"].iter().enumerate() {
            let seq = n as u64 + 1;
            keys.remember(0, &(*key).into(), 7, seq, (1, 1), n as u64);
            keys.release(0, &(*key).into(), seq);
        }
        assert_eq!(keys.len(), 2);
        assert_eq!(
            keys.check(0, &"a".into(), 7),
            ReplayCheck::Fresh,
            "oldest went first"
        );
        assert!(matches!(keys.check(0, &"c".into(), 7), ReplayCheck::Replay(c) if c.seq == 3));
        assert_eq!(keys.check(0, &"c".into(), 8), ReplayCheck::BodyMismatch);
        keys.evict(1_002);
        assert_eq!(
            keys.check(0, &"c".into(), 7),
            ReplayCheck::Fresh,
            "retention passed"
        );
        assert_eq!(keys.len(), 0);
    }

    #[test]
    fn a_key_is_in_use_until_its_attempt_departs() {
        let mut keys = CompletionKeys::new(2, 1_000, 10);
        keys.remember(1, &"k".into(), 7, 5, (1, 1), 0);
        assert_eq!(keys.check(1, &"k".into(), 7), ReplayCheck::InUse);
        assert_eq!(
            keys.check(0, &"k".into(), 7),
            ReplayCheck::Fresh,
            "per scope"
        );
        keys.release(1, &"k".into(), 4);
        assert_eq!(
            keys.check(1, &"k".into(), 7),
            ReplayCheck::InUse,
            "only its own seq frees it"
        );
        keys.release(1, &"k".into(), 5);
        assert!(matches!(
            keys.check(1, &"k".into(), 7),
            ReplayCheck::Replay(_)
        ));
    }
}
