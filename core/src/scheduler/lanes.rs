//! Ready lanes: one FIFO per tenant, scope and priority, dequeued critical first and round
//! robin across lanes within a priority, so one tenant's backlog cannot starve another's and
//! a scope waiting for rate capacity does not block the same tenant's work on other scopes.
//! Admission is bounded per tenant and priority.

use stampede_name::Name;
use std::collections::{BTreeMap, VecDeque};

use super::last_name::LastName;

use crate::job::{JobId, Priority};

/// Number of priorities (critical, normal, bulk).
pub(super) const PRIORITIES: usize = 3;

/// Lane index of a priority: critical drains first.
pub(super) fn rank(priority: Priority) -> usize {
    match priority {
        Priority::Critical => 0,
        Priority::Normal => 1,
        Priority::Bulk => 2,
    }
}

/// Every tenant's lanes. Tenants and lanes get dense ids in order of first sight, so the
/// per-lane state sits in vectors indexed by lane id: the hot path (push, head, pop, the
/// round-robin scan) never searches a map.
#[derive(Debug, Default)]
pub(super) struct Lanes {
    tenants: BTreeMap<String, u32>,
    /// The tenant name last interned or found.
    last_tenant: LastName<u32>,
    /// Lane id of each (tenant, scope) pair, in order of first sight: per tenant id, its
    /// scopes' lanes as `(scope, lane)` (a tenant sends on a few scopes: one scan).
    lane_ids: Vec<Vec<(usize, u32)>>,
    /// Lanes made so far (the next lane's id).
    lane_count: u32,
    /// (job, ticket) in arrival order per lane, indexed by lane id; stale tickets are
    /// skipped when met.
    queues: [Vec<VecDeque<(JobId, u64)>>; PRIORITIES],
    /// Lanes with ready entries at each priority.
    nonempty: [ReadySet; PRIORITIES],
    /// The lane served last at each priority (round robin resumes after it).
    cursor: [Option<u32>; PRIORITIES],
    /// Actions admitted and not yet terminal, at `tenant * PRIORITIES + rank`: the
    /// admission bound.
    live: Vec<u32>,
}

/// A set of lane ids as a bitset, with its size: the round-robin scan finds the next ready
/// lane after a cursor in a word or two, where a `BTreeSet` walked its nodes.
#[derive(Debug, Default)]
struct ReadySet {
    words: Vec<u64>,
    len: usize,
}

impl ReadySet {
    /// Adds `lane`. Inline unless the set must grow: a lane already ready (an action
    /// joining a lane with others waiting, as every admission to a backlog does) is one test
    /// of a bit, and a lane that had emptied (a naive client's retry, woken into a lane it
    /// left) one more write.
    #[inline]
    fn insert(&mut self, lane: u32) {
        let (word, bit) = (lane as usize / 64, lane % 64);
        let Some(w) = self.words.get_mut(word) else {
            return self.insert_grown(lane);
        };
        let mask = 1u64 << bit;
        if *w & mask == 0 {
            *w |= mask;
            self.len += 1;
        }
    }

    /// [`ReadySet::insert`] of a lane past the words held: they grow to hold it.
    #[inline(never)]
    fn insert_grown(&mut self, lane: u32) {
        let word = lane as usize / 64;
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        self.insert(lane);
    }

    fn remove(&mut self, lane: u32) {
        let (word, bit) = (lane as usize / 64, lane % 64);
        let Some(w) = self.words.get_mut(word) else {
            return;
        };
        let mask = 1u64 << bit;
        if *w & mask != 0 {
            *w &= !mask;
            self.len -= 1;
        }
    }

    /// The smallest lane in the set at or after `from`.
    fn at_or_after(&self, from: u64) -> Option<u32> {
        let mut word = usize::try_from(from / 64).ok()?;
        let mut bits = *self.words.get(word)? & (u64::MAX << (from % 64));
        loop {
            if bits != 0 {
                let lane = word as u64 * 64 + u64::from(bits.trailing_zeros());
                return u32::try_from(lane).ok();
            }
            word += 1;
            bits = *self.words.get(word)?;
        }
    }

    /// The smallest lane in the set after `lane`, wrapping round to the smallest of all.
    fn after_wrapping(&self, lane: Option<u32>) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        lane.and_then(|l| self.at_or_after(u64::from(l) + 1))
            .or_else(|| self.at_or_after(0))
    }
}

impl Lanes {
    /// The tenant's dense id, interning the name on first sight.
    pub fn intern(&mut self, tenant: &str) -> u32 {
        if let Some(id) = self.tenants.get(tenant) {
            return *id;
        }
        let id = u32::try_from(self.tenants.len()).expect("fewer than 2^32 tenants");
        self.tenants.insert(tenant.to_owned(), id);
        id
    }

    /// [`Lanes::intern`] for a shared name: the name last seen is not searched again.
    pub fn intern_shared(&mut self, tenant: Name) -> u32 {
        if let Some(id) = self.last_tenant.get(tenant) {
            return id;
        }
        let id = self.intern(&tenant);
        self.last_tenant.keep(tenant, id);
        id
    }

    /// The tenant's id if it was ever seen.
    pub fn tenant(&self, tenant: &str) -> Option<u32> {
        self.tenants.get(tenant).copied()
    }

    /// [`Lanes::tenant`] for a shared name (the name last interned is not searched again).
    pub fn tenant_shared(&self, tenant: Name) -> Option<u32> {
        self.last_tenant
            .get(tenant)
            .or_else(|| self.tenant(&tenant))
    }

    /// The lane of a (tenant, scope) pair.
    #[inline]
    pub fn lane(&mut self, tenant: u32, scope: usize) -> u32 {
        let t = tenant as usize;
        if t >= self.lane_ids.len() {
            self.lane_ids.resize_with(t + 1, Vec::new);
        }
        let scopes = &mut self.lane_ids[t];
        if let Some(&(_, lane)) = scopes.iter().find(|(s, _)| *s == scope) {
            return lane;
        }
        let lane = self.lane_count;
        self.lane_count = lane.checked_add(1).expect("fewer than 2^32 lanes");
        scopes.push((scope, lane));
        lane
    }

    /// Live actions of one tenant at one priority.
    pub fn live(&self, tenant: u32, rank: usize) -> u32 {
        self.live
            .get(tenant as usize * PRIORITIES + rank)
            .copied()
            .unwrap_or(0)
    }

    /// Counts an admitted action against its tenant's bound at its priority.
    #[inline]
    pub fn admit(&mut self, tenant: u32, rank: usize) {
        let at = tenant as usize * PRIORITIES + rank;
        if at >= self.live.len() {
            self.live.resize(at + 1, 0);
        }
        self.live[at] += 1;
    }

    /// An action of this tenant and priority reached a terminal outcome.
    pub fn release(&mut self, tenant: u32, rank: usize) {
        let known = self.live.get_mut(tenant as usize * PRIORITIES + rank);
        debug_assert!(
            known.as_ref().is_some_and(|live| **live > 0),
            "a terminal for tenant {tenant} at rank {rank}, which has no live action"
        );
        if let Some(live) = known {
            *live = live.saturating_sub(1);
        }
    }

    /// Queues an action at the back (or, when it had already reached the head, the front).
    #[inline]
    pub fn push(&mut self, lane: u32, rank: usize, job: JobId, ticket: u64, front: bool) {
        let queues = &mut self.queues[rank];
        if lane as usize >= queues.len() {
            queues.resize_with(lane as usize + 1, VecDeque::new);
        }
        let queue = &mut queues[lane as usize];
        if front {
            queue.push_front((job, ticket));
        } else {
            queue.push_back((job, ticket));
        }
        self.nonempty[rank].insert(lane);
    }

    /// The head of one lane.
    #[inline]
    pub fn head(&self, lane: u32, rank: usize) -> Option<(JobId, u64)> {
        self.queues[rank]
            .get(lane as usize)
            .and_then(|queue| queue.front().copied())
    }

    /// Drops the head of one lane.
    pub fn pop(&mut self, lane: u32, rank: usize) {
        if let Some(queue) = self.queues[rank].get_mut(lane as usize) {
            queue.pop_front();
            if queue.is_empty() {
                self.nonempty[rank].remove(lane);
            }
        }
    }

    /// The lane with ready work that round robin serves first at this priority.
    #[inline]
    pub fn first(&self, rank: usize) -> Option<u32> {
        self.nonempty[rank].after_wrapping(self.cursor[rank])
    }

    /// The lane after `lane` in round-robin order, or `None` once back at `start`.
    #[inline]
    pub fn after(&self, rank: usize, lane: u32, start: u32) -> Option<u32> {
        let next = self.nonempty[rank].after_wrapping(Some(lane))?;
        (next != start).then_some(next)
    }

    /// Whether no lane holds an entry at any priority (stale ones included): a dispatch
    /// round then finds nothing to serve and changes nothing.
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.nonempty.iter().all(|lanes| lanes.len == 0)
    }

    /// How many lanes have ready work at this priority (bounds a round-robin scan).
    #[inline]
    pub fn ready_lanes(&self, rank: usize) -> usize {
        self.nonempty[rank].len
    }

    /// Records that `lane` was just served at this priority.
    pub fn served(&mut self, rank: usize, lane: u32) {
        self.cursor[rank] = Some(lane);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    /// The round-robin order a `BTreeSet` gave: the next lane after `lane`, wrapping.
    fn after_in(set: &BTreeSet<u32>, lane: Option<u32>) -> Option<u32> {
        lane.and_then(|l| set.range(l + 1..).next().copied())
            .or_else(|| set.first().copied())
    }

    proptest! {
        /// The bitset answers every round-robin question as the ordered set it replaced,
        /// across word boundaries and after removals.
        #[test]
        fn ready_set_orders_lanes_as_an_ordered_set(
            ops in prop::collection::vec((any::<bool>(), 0u32..200), 0..300),
            probes in prop::collection::vec(prop::option::of(0u32..260), 1..20),
        ) {
            let (mut bits, mut set) = (ReadySet::default(), BTreeSet::new());
            for (insert, lane) in ops {
                if insert {
                    bits.insert(lane);
                    set.insert(lane);
                } else {
                    bits.remove(lane);
                    set.remove(&lane);
                }
                prop_assert_eq!(bits.len, set.len());
                for &probe in &probes {
                    prop_assert_eq!(bits.after_wrapping(probe), after_in(&set, probe));
                }
            }
        }
    }

    #[test]
    fn lanes_serve_round_robin_and_count_live_actions() {
        let mut lanes = Lanes::default();
        let (a, b) = (lanes.intern("a"), lanes.intern("b"));
        let (la, lb) = (lanes.lane(a, 0), lanes.lane(b, 0));
        lanes.push(la, 1, 10, 1, false);
        lanes.push(lb, 1, 20, 2, false);
        lanes.push(la, 1, 11, 3, false);
        assert_eq!(lanes.first(1), Some(la));
        lanes.served(1, la);
        assert_eq!(
            lanes.first(1),
            Some(lb),
            "round robin moves past the lane served"
        );
        assert_eq!(lanes.after(1, lb, lb), Some(la));
        assert_eq!(lanes.after(1, la, lb), None, "back at the start");
        assert_eq!(lanes.first(0), None);
        lanes.pop(lb, 1);
        assert_eq!(lanes.ready_lanes(1), 1);
        assert_eq!(lanes.head(la, 1), Some((10, 1)));
        lanes.admit(b, 2);
        lanes.admit(b, 2);
        assert_eq!(
            (lanes.live(b, 2), lanes.live(a, 2), lanes.live(9, 0)),
            (2, 0, 0)
        );
        lanes.release(b, 2);
        assert_eq!(lanes.live(b, 2), 1);
    }
}
