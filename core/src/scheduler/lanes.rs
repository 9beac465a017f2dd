//! Ready lanes: one FIFO per tenant, scope and priority, dequeued critical first and round
//! robin across lanes within a priority, so one tenant's backlog cannot starve another's and
//! a scope waiting for rate capacity does not block the same tenant's work on other scopes.
//! Admission is bounded per tenant and priority.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;

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

/// Every tenant's lanes.
#[derive(Debug, Default)]
pub(super) struct Lanes {
    tenants: BTreeMap<String, u32>,
    /// Lane id of each (tenant, scope) pair, in order of first sight.
    lane_ids: BTreeMap<(u32, usize), u32>,
    /// (job, ticket) in arrival order per lane; stale tickets are skipped when met.
    queues: [BTreeMap<u32, VecDeque<(JobId, u64)>>; PRIORITIES],
    /// Lanes with ready entries at each priority.
    nonempty: [BTreeSet<u32>; PRIORITIES],
    /// The lane served last at each priority (round robin resumes after it).
    cursor: [Option<u32>; PRIORITIES],
    /// Actions admitted and not yet terminal per (tenant, priority): the admission bound.
    live: BTreeMap<(u32, usize), u32>,
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

    /// The tenant's id if it was ever seen.
    pub fn tenant(&self, tenant: &str) -> Option<u32> {
        self.tenants.get(tenant).copied()
    }

    /// The lane of a (tenant, scope) pair.
    pub fn lane(&mut self, tenant: u32, scope: usize) -> u32 {
        let next = u32::try_from(self.lane_ids.len()).expect("fewer than 2^32 lanes");
        *self.lane_ids.entry((tenant, scope)).or_insert(next)
    }

    /// Live actions of one tenant at one priority.
    pub fn live(&self, tenant: u32, rank: usize) -> u32 {
        self.live.get(&(tenant, rank)).copied().unwrap_or(0)
    }

    /// Counts an admitted action against its tenant's bound at its priority.
    pub fn admit(&mut self, tenant: u32, rank: usize) {
        *self.live.entry((tenant, rank)).or_default() += 1;
    }

    /// An action of this tenant and priority reached a terminal outcome.
    pub fn release(&mut self, tenant: u32, rank: usize) {
        let known = self.live.get_mut(&(tenant, rank));
        debug_assert!(
            known.as_ref().is_some_and(|live| **live > 0),
            "a terminal for tenant {tenant} at rank {rank}, which has no live action"
        );
        if let Some(live) = known {
            *live = live.saturating_sub(1);
            if *live == 0 {
                self.live.remove(&(tenant, rank));
            }
        }
    }

    /// Queues an action at the back (or, when it had already reached the head, the front).
    pub fn push(&mut self, lane: u32, rank: usize, job: JobId, ticket: u64, front: bool) {
        let queue = self.queues[rank].entry(lane).or_default();
        if front {
            queue.push_front((job, ticket));
        } else {
            queue.push_back((job, ticket));
        }
        self.nonempty[rank].insert(lane);
    }

    /// The head of one lane.
    pub fn head(&self, lane: u32, rank: usize) -> Option<(JobId, u64)> {
        self.queues[rank]
            .get(&lane)
            .and_then(|queue| queue.front().copied())
    }

    /// Drops the head of one lane.
    pub fn pop(&mut self, lane: u32, rank: usize) {
        if let Some(queue) = self.queues[rank].get_mut(&lane) {
            queue.pop_front();
            if queue.is_empty() {
                self.nonempty[rank].remove(&lane);
            }
        }
    }

    /// The lane with ready work that round robin serves first at this priority.
    pub fn first(&self, rank: usize) -> Option<u32> {
        let set = &self.nonempty[rank];
        self.cursor[rank]
            .and_then(|c| {
                set.range((Bound::Excluded(c), Bound::Unbounded))
                    .next()
                    .copied()
            })
            .or_else(|| set.first().copied())
    }

    /// The lane after `lane` in round-robin order, or `None` once back at `start`.
    pub fn after(&self, rank: usize, lane: u32, start: u32) -> Option<u32> {
        let set = &self.nonempty[rank];
        let next = set
            .range((Bound::Excluded(lane), Bound::Unbounded))
            .next()
            .copied()
            .or_else(|| set.first().copied())?;
        (next != start).then_some(next)
    }

    /// How many lanes have ready work at this priority (bounds a round-robin scan).
    pub fn ready_lanes(&self, rank: usize) -> usize {
        self.nonempty[rank].len()
    }

    /// Records that `lane` was just served at this priority.
    pub fn served(&mut self, rank: usize, lane: u32) {
        self.cursor[rank] = Some(lane);
    }
}
