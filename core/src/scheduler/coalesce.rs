//! Single flight for coalescable reads: identical safe reads of an immutable resource
//! (same scope, route and resource) become one send; every waiter completes with it.
//! Freshness-sensitive reads are never marked coalescable by the driver, so never join.

use std::collections::BTreeMap;

use crate::job::{Job, JobId, Route};

#[derive(Debug, Clone)]
struct Group {
    scope: usize,
    route: Route,
    leader: JobId,
    followers: Vec<JobId>,
}

/// Open single-flight groups by resource id.
#[derive(Debug, Default)]
pub(super) struct Coalescing {
    by_resource: BTreeMap<String, Vec<Group>>,
    waiters: u64,
}

impl Coalescing {
    /// Reads waiting on a leader (actions).
    pub fn waiters(&self) -> u64 {
        self.waiters
    }

    /// The leader an identical read can wait on.
    pub fn leader_for(&self, job: &Job, scope: usize) -> Option<JobId> {
        let resource = job.resource.as_deref()?;
        let groups = self.by_resource.get(resource)?;
        groups
            .iter()
            .find(|g| g.scope == scope && g.route == job.route)
            .map(|g| g.leader)
    }

    /// `leader` sends for everyone reading the same resource until it is terminal.
    pub fn lead(&mut self, job: &Job, scope: usize) {
        if let Some(resource) = &job.resource {
            let group = Group {
                scope,
                route: job.route,
                leader: job.id,
                followers: Vec::new(),
            };
            self.by_resource
                .entry(resource.clone())
                .or_default()
                .push(group);
        }
    }

    /// `follower` waits on `leader`'s send.
    pub fn follow(&mut self, resource: &str, leader: JobId, follower: JobId) {
        if let Some(group) = self
            .by_resource
            .get_mut(resource)
            .and_then(|gs| gs.iter_mut().find(|g| g.leader == leader))
        {
            group.followers.push(follower);
            self.waiters += 1;
        }
    }

    /// The leader is terminal: its group closes and its followers are handed back.
    pub fn disband(&mut self, resource: &str, leader: JobId) -> Vec<JobId> {
        let Some(groups) = self.by_resource.get_mut(resource) else {
            return Vec::new();
        };
        let Some(at) = groups.iter().position(|g| g.leader == leader) else {
            return Vec::new();
        };
        let group = groups.swap_remove(at);
        if groups.is_empty() {
            self.by_resource.remove(resource);
        }
        self.waiters = super::state::held_less(
            self.waiters,
            group.followers.len() as u64,
            "coalesced readers",
        );
        group.followers
    }

    /// A follower left (cancelled) before its leader finished.
    pub fn unfollow(&mut self, resource: &str, leader: JobId, follower: JobId) {
        if let Some(group) = self
            .by_resource
            .get_mut(resource)
            .and_then(|gs| gs.iter_mut().find(|g| g.leader == leader))
        {
            if let Some(at) = group.followers.iter().position(|&f| f == follower) {
                group.followers.remove(at);
                self.waiters = super::state::held_less(self.waiters, 1, "coalesced readers");
            }
        }
    }
}

impl<L: crate::ledger::Ledger> super::Scheduler<L> {
    /// Parks a ready read behind the identical read `leader` is sending.
    pub(super) fn join_leader(&mut self, id: JobId, leader: JobId) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let old = std::mem::replace(&mut job.phase, super::state::Phase::Following(leader));
        let resource = job.entry.job.resource.clone().unwrap_or_default();
        let priority = job.entry.job.priority;
        self.leave_phase(id, old, priority);
        self.coalescing.follow(&resource, leader, id);
    }
}
