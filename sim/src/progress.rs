//! Progress while a run plays, for a display on a terminal. The library never prints: a
//! driver hands a [`Snapshot`] to the [`Progress`] it was given (the command draws it), and
//! only now and then, so the virtual loop stays cheap: [`Pacer`] looks at the wall clock
//! once every [`Pacer::EVERY_EVENTS`] loop events and reports at most every
//! [`Pacer::EVERY_MS`] real ms.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stampede_reports::Summary;

/// Where a run stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Run time reached (ms since run start; scenario ms for a live run).
    pub at_ms: u64,
    /// The scenario's duration cap (ms).
    pub cap_ms: u64,
    /// Logical requests the workload holds in all.
    pub requests: u64,
    /// Of those, finished (completed, failed, cancelled or escalated).
    pub finished: u64,
    /// Attempts sent so far (counted at the provider in a virtual run; the client's sends
    /// in a live run, whose journal is read at the end).
    pub attempts: u64,
    /// 429 answers so far.
    pub throttled: u64,
}

impl Snapshot {
    /// The counts of `so_far` (a measurement's running summary) at `at_ms`.
    pub fn of(so_far: &Summary, at_ms: u64, cap_ms: u64, requests: u64) -> Self {
        Snapshot {
            at_ms,
            cap_ms,
            requests,
            finished: so_far.completed + so_far.failed + so_far.cancelled + so_far.escalations,
            attempts: so_far.outbound_attempts,
            throttled: so_far.status_counts.get("429").copied().unwrap_or(0),
        }
    }
}

/// What receives a run's progress (a terminal display). Called from the run's thread.
pub trait Progress: Send + Sync {
    /// Where the run stands now.
    fn update(&self, snapshot: &Snapshot);
}

/// A shared [`Progress`], to hand through run options.
#[derive(Clone)]
pub struct ProgressHandle(pub Arc<dyn Progress>);

impl ProgressHandle {
    /// The display as a trait object.
    pub fn get(&self) -> &dyn Progress {
        &*self.0
    }
}

impl std::fmt::Debug for ProgressHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressHandle")
    }
}

/// Decides cheaply when a loop reports: a counter most of the time, the wall clock once
/// every [`Pacer::EVERY_EVENTS`] events.
#[derive(Debug)]
pub struct Pacer {
    next_check: u64,
    last: Instant,
}

impl Pacer {
    /// Loop events between two looks at the wall clock.
    pub const EVERY_EVENTS: u64 = 2_048;
    /// Least real time between two reports (ms); the first comes after as long, so a
    /// quick run shows nothing.
    pub const EVERY_MS: u64 = 100;

    /// A pacer that first looks at the wall clock [`Pacer::EVERY_EVENTS`] events from now,
    /// and reports no sooner than [`Pacer::EVERY_MS`] real ms from now.
    pub fn new() -> Self {
        Pacer {
            next_check: Self::EVERY_EVENTS,
            last: Instant::now(),
        }
    }

    /// Whether to report now, `events` loop events into the run.
    #[inline]
    pub fn due(&mut self, events: u64) -> bool {
        if events < self.next_check {
            return false;
        }
        self.next_check = events + Self::EVERY_EVENTS;
        self.due_by_clock()
    }

    /// Whether [`Pacer::EVERY_MS`] have passed since the last report (for a loop that
    /// sleeps, where a look at the clock is free).
    pub fn due_by_clock(&mut self) -> bool {
        let now = Instant::now();
        if now.duration_since(self.last) >= Duration::from_millis(Self::EVERY_MS) {
            self.last = now;
            true
        } else {
            false
        }
    }
}

impl Default for Pacer {
    fn default() -> Self {
        Self::new()
    }
}

/// Logical requests `scenario`'s workload holds.
pub fn requests_of(scenario: &crate::scenario::Scenario) -> u64 {
    scenario.workloads.iter().map(|w| w.count).sum()
}
