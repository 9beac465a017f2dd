//! Live tasks: each (tenant, task name) with live actions has a slot, and each action keeps
//! its task's slot, so the hot path (a retry counted against its task's budget, an action's
//! end) reads the task by position. Only joining a task and cancelling one look a name up.
//!
//! A workload can have a task per action (a hundred thousand live names in the
//! million-request run); hashing the name at every retry and terminal was a random probe
//! into that table each time. And only the per-task retry budget reads a task's state: with
//! that budget off, no task is kept at all (joining and forgetting a task per action, with
//! the table's rehashes under that churn, was a tenth of the million-request run), and a
//! cancellation finds its task's actions by scanning the live actions, as it does anyway.
//!
//! The name table holds bare slot numbers hashed by the task's (tenant, name), and each slot
//! keeps that hash: a join hashes the name once (a map's `get` then `insert` hashed it
//! twice), forgetting a task finds its entry by the kept hash and the slot number (no name
//! hashed or compared), and the table rehashes by the kept hashes. With a task per action,
//! hashing names was about 5% of the million-request run.
//!
//! An action the driver says is alone in its task ([`crate::Job::sole_task`]) joins no
//! record at all: its task's retries are its own, which its job counts anyway. With a task
//! per action the name table held every live action, and its look-ups at each start and
//! end, a random probe into a table of a hundred thousand each, were a fifth of the
//! million-request run. The sole actions live are counted, so a cancellation still scans.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use slab::Slab;

use super::state::{held_less, TaskState};
use crate::id_hash::IdHash;
use crate::job::TaskName;

/// A task's slot (see [`Tasks`]).
pub(super) type TaskSlot = u32;

/// The slot of no task: what an action gets when tasks are not kept.
pub(super) const NO_TASK: TaskSlot = TaskSlot::MAX;

/// The slot of an action alone in its task: kept, but in no record (its retries are its
/// own; see the module doc).
pub(super) const SOLE_TASK: TaskSlot = TaskSlot::MAX - 1;

/// A live task: who it belongs to, the hash of that in the name table, and its state.
#[derive(Debug)]
struct Task {
    tenant: u32,
    name: TaskName,
    hash: u64,
    state: TaskState,
}

/// Live tasks by tenant and name, their states in slots.
#[derive(Debug, Default)]
pub(super) struct Tasks {
    /// Whether tasks are kept at all (the per-task retry budget is on).
    kept: bool,
    /// Slots hashed by their task's tenant and name (see the module doc). Only looked up,
    /// never iterated, so no hash order can reach an output.
    by_name: HashTable<TaskSlot>,
    /// Each slot's task (its tenant and name, to forget it by) and state; a freed slot is
    /// reused first.
    slots: Slab<Task>,
    /// Live actions in [`SOLE_TASK`].
    sole_live: u64,
    /// The slot each tenant (by index) last joined: actions of one task tend to arrive
    /// together, and checking this slot's tenant and name first spares the join hashing
    /// the name. A stale slot (forgotten, or reused by another task) fails the check.
    last_joined: Vec<TaskSlot>,
}

/// The name table's hash of task `name` of `tenant` (FxHash: fixed, so the same on every run).
fn task_hash(tenant: u32, name: &str) -> u64 {
    IdHash::default().hash_one((tenant, name))
}

impl Tasks {
    /// Live tasks, kept only when `kept` (the per-task retry budget is on): otherwise every
    /// action joins [`NO_TASK`], whose retries are always 0.
    pub fn new(kept: bool) -> Self {
        Tasks {
            kept,
            ..Tasks::default()
        }
    }

    /// The slot of the live task `name` of `tenant`, whose hash is `hash`.
    fn find(&self, tenant: u32, name: &str, hash: u64) -> Option<TaskSlot> {
        let slots = &self.slots;
        self.by_name
            .find(hash, |&s| {
                let task = &slots[s as usize];
                task.tenant == tenant && *task.name == *name
            })
            .copied()
    }

    /// Adds a live action to the task `name` of `tenant`; returns the task's slot.
    /// [`SOLE_TASK`] when `sole` (the action is alone in its task: no record is kept).
    /// Inlined into admission up to the tenant's last task; a task found by its name is
    /// out of line (`join_by_name`).
    #[inline]
    pub fn join(&mut self, tenant: u32, name: &TaskName, sole: bool) -> TaskSlot {
        if !self.kept {
            return NO_TASK;
        }
        if sole {
            // Bounded by the live actions, which memory bounds long before 2^64.
            self.sole_live += 1;
            return SOLE_TASK;
        }
        if let Some(&slot) = self.last_joined.get(tenant as usize) {
            if let Some(task) = self.slots.get_mut(slot as usize) {
                if task.tenant == tenant && task.name == *name {
                    // Bounded by the live actions, which memory bounds long before 2^32.
                    task.state.live += 1;
                    return slot;
                }
            }
        }
        self.join_by_name(tenant, name)
    }

    /// [`Tasks::join`] of a task that is not its tenant's last: found (or made) by name.
    #[inline(never)]
    fn join_by_name(&mut self, tenant: u32, name: &TaskName) -> TaskSlot {
        let hash = task_hash(tenant, name);
        let slot = match self.find(tenant, name, hash) {
            Some(slot) => {
                // Bounded by the live actions, as above.
                self.slots[slot as usize].state.live += 1;
                slot
            }
            None => self.insert(tenant, name, hash),
        };
        // Tenants are the lanes' dense indexes: this holds one slot per tenant seen.
        let at = tenant as usize;
        if at >= self.last_joined.len() {
            self.last_joined.resize(at + 1, NO_TASK);
        }
        self.last_joined[at] = slot;
        slot
    }

    /// Records a new live task `name` of `tenant`, whose hash is `hash`, with one live
    /// action; returns its slot.
    fn insert(&mut self, tenant: u32, name: &TaskName, hash: u64) -> TaskSlot {
        // The job's own name: inline, or shared (no copy per task).
        let slot = self.slots.insert(Task {
            tenant,
            name: name.clone(),
            hash,
            state: TaskState {
                live: 1,
                retries: 0,
            },
        });
        // NO_TASK and SOLE_TASK are never a live slot: memory bounds the tasks long before.
        let slot = TaskSlot::try_from(slot)
            .ok()
            .filter(|&s| s < SOLE_TASK)
            .expect("fewer than 2^32 - 2 live tasks");
        let slots = &self.slots;
        self.by_name
            .insert_unique(hash, slot, |&s| slots[s as usize].hash);
        slot
    }

    /// Whether `tenant` may have a live task named `name`: `false` only when tasks are
    /// kept, it has none on record and no sole action is live.
    pub fn may_have(&self, tenant: u32, name: &str) -> bool {
        !self.kept
            || self.sole_live > 0
            || self.find(tenant, name, task_hash(tenant, name)).is_some()
    }

    /// Retries the task in `slot` has used: `own` (the action's own retries) for
    /// [`SOLE_TASK`], 0 for a slot not live.
    pub fn retries(&self, slot: TaskSlot, own: u32) -> u32 {
        if slot == SOLE_TASK {
            return own;
        }
        self.slots
            .get(slot as usize)
            .map_or(0, |task| task.state.retries)
    }

    /// Counts one retry against the task in `slot` (a sole action's job counts its own).
    pub fn add_retry(&mut self, slot: TaskSlot) {
        if let Some(task) = self.slots.get_mut(slot as usize) {
            task.state.retries = task.state.retries.saturating_add(1);
        }
    }

    /// A live action of the task in `slot` ended; the task is forgotten with its last one.
    pub fn leave(&mut self, slot: TaskSlot) {
        if slot == NO_TASK {
            return;
        }
        if slot == SOLE_TASK {
            self.sole_live = held_less(self.sole_live, 1, "live sole actions");
            return;
        }
        let Some(task) = self.slots.get_mut(slot as usize) else {
            debug_assert!(false, "an action left task slot {slot}, which is not live");
            return;
        };
        task.state.live = held_less(task.state.live, 1, "live actions of a task");
        if task.state.live > 0 {
            return;
        }
        let hash = task.hash;
        // The entry is found by its slot number: no name compared.
        match self.by_name.find_entry(hash, |&s| s == slot) {
            Ok(entry) => {
                entry.remove();
            }
            Err(_) => debug_assert!(false, "live task slot {slot} is in the name table"),
        }
        self.slots.remove(slot as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_lives_while_any_of_its_actions_does_and_its_slot_is_reused() {
        let mut tasks = Tasks::new(true);
        let (a, b): (TaskName, TaskName) = ("a".into(), "b".into());
        let first = tasks.join(0, &a, false);
        assert_eq!(
            tasks.join(0, &TaskName::new("a"), false),
            first,
            "same name, same task"
        );
        let other_tenant = tasks.join(3, &a, false);
        assert_ne!(other_tenant, first, "tasks are per tenant");
        tasks.add_retry(first);
        tasks.add_retry(first);
        assert_eq!(
            (tasks.retries(first, 9), tasks.retries(other_tenant, 9)),
            (2, 0)
        );
        tasks.leave(first);
        assert!(tasks.may_have(0, "a"), "one action of it is still live");
        tasks.leave(first);
        assert!(!tasks.may_have(0, "a") && tasks.may_have(3, "a"));
        assert_eq!(
            tasks.retries(first, 9),
            0,
            "a forgotten task has no retries"
        );
        let reused = tasks.join(0, &b, false);
        assert_eq!(reused, first, "the freed slot is reused");
        assert!(!tasks.may_have(1, "b") && !tasks.may_have(9, "b"));
    }

    #[test]
    fn a_tenants_last_task_is_checked_before_it_is_trusted() {
        let mut tasks = Tasks::new(true);
        let (a, b): (TaskName, TaskName) = ("a".into(), "b".into());
        let first = tasks.join(0, &a, false);
        tasks.leave(first);
        // Tenant 1's task of the same name takes the slot tenant 0 last joined.
        let other = tasks.join(1, &a, false);
        assert_eq!(other, first, "the freed slot is reused");
        let again = tasks.join(0, &a, false);
        assert_ne!(
            again, other,
            "tenant 0's last slot now holds tenant 1's task"
        );
        let named_b = tasks.join(0, &b, false);
        assert!(
            named_b != again && named_b != other,
            "another name, another task"
        );
        tasks.add_retry(again);
        let joined = tasks.join(0, &a, false);
        assert_eq!(
            (joined, tasks.retries(joined, 9)),
            (again, 1),
            "the same task"
        );
        assert_eq!(tasks.retries(other, 9), 0);
    }

    #[test]
    fn without_the_budget_no_task_is_kept() {
        let mut tasks = Tasks::new(false);
        let slot = tasks.join(0, &TaskName::new("a"), false);
        assert_eq!(slot, NO_TASK);
        tasks.add_retry(slot);
        assert_eq!(tasks.retries(slot, 9), 0);
        assert!(
            tasks.may_have(0, "a") && tasks.may_have(7, "z"),
            "a cancel scans"
        );
        tasks.leave(slot);
        assert!(tasks.slots.is_empty() && tasks.by_name.is_empty());
        assert_eq!(
            tasks.join(0, &TaskName::new("a"), true),
            NO_TASK,
            "not kept, even sole"
        );
    }

    #[test]
    fn a_sole_action_keeps_no_record_and_counts_its_own_retries() {
        let mut tasks = Tasks::new(true);
        let a: TaskName = "a".into();
        assert!(!tasks.may_have(0, "a"));
        let sole = tasks.join(0, &a, true);
        assert_eq!(sole, SOLE_TASK);
        assert!(
            tasks.slots.is_empty() && tasks.by_name.is_empty(),
            "no record"
        );
        tasks.add_retry(sole);
        assert_eq!(tasks.retries(sole, 3), 3, "its own retries");
        assert!(
            tasks.may_have(0, "a") && tasks.may_have(5, "z"),
            "a cancel scans"
        );
        let shared = tasks.join(0, &a, false);
        assert_eq!(tasks.retries(shared, 3), 0, "a recorded task counts apart");
        tasks.leave(sole);
        assert!(!tasks.may_have(0, "z") && tasks.may_have(0, "a"));
        tasks.leave(shared);
        assert!(!tasks.may_have(0, "a"));
    }
}
