//! What the scheduler keeps about each live action, attempt on the wire and task.

use stampede_name::Name;
use std::time::Duration;

use crate::command::LookupBy;
use crate::degradation::RungKind;
use crate::job::JobId;
use crate::ledger::LedgerEntry;
use crate::policy::{ClassPolicy, FailureGroup};
use crate::routing::FallbackWhen;
use crate::time::Millis;

/// Whole milliseconds of a policy duration, saturating.
pub(super) fn millis(duration: Duration) -> Millis {
    Millis::try_from(duration.as_millis()).unwrap_or(Millis::MAX)
}

/// `held - released` for a count of things the scheduler holds (slots, reservations,
/// queued or reconciling actions): it never goes below zero, because nothing is released
/// that was not taken. Debug builds assert it; release builds stop at zero instead of
/// wrapping to a count that would block dispatch for ever.
pub(super) fn held_less<T>(held: T, released: T, what: &str) -> T
where
    T: Copy + PartialOrd + std::fmt::Display + std::ops::Sub<Output = T> + Default,
{
    debug_assert!(
        released <= held,
        "{what}: releasing {released} of {held} held; a count of held things went negative"
    );
    if released <= held {
        held - released
    } else {
        T::default()
    }
}

/// A class policy with its durations converted once, so the hot path does no conversions.
#[derive(Debug, Clone)]
pub(super) struct ClassRules {
    pub max_attempts: u32,
    pub max_wait_ms: Millis,
    pub timeout_ms: Millis,
    pub reconcile: bool,
    /// Bit set of the retryable failure groups.
    retry_on: u8,
    /// The statuses retried when the class lists them (`ClassPolicy::retry_statuses`).
    retry_statuses: Option<Box<[u16]>>,
}

impl ClassRules {
    pub fn from_policy(class: &ClassPolicy) -> Self {
        Self {
            max_attempts: class.max_attempts,
            max_wait_ms: millis(class.max_wait),
            timeout_ms: millis(class.timeout),
            reconcile: class.reconcile,
            retry_on: class
                .retry_on
                .iter()
                .fold(0, |bits, group| bits | group_bit(*group)),
            retry_statuses: class.retry_statuses.as_deref().map(Box::from),
        }
    }

    /// Whether this class may retry `failure`: by its status when the class lists
    /// statuses and the failure was answered, else by its group.
    #[inline]
    pub fn retries_failure(&self, failure: crate::classify::Failure) -> bool {
        match (&self.retry_statuses, failure.kind.status()) {
            (Some(statuses), Some(status)) => statuses.contains(&status),
            _ => self.retries(failure.group),
        }
    }

    /// Whether this class may retry a failure of `group`.
    pub fn retries(&self, group: FailureGroup) -> bool {
        self.retry_on & group_bit(group) != 0
    }
}

fn group_bit(group: FailureGroup) -> u8 {
    match group {
        FailureGroup::NeverArrived => 1,
        FailureGroup::MayHaveExecuted => 2,
        FailureGroup::WontImprove => 4,
        FailureGroup::Conflict => 8,
        FailureGroup::QuotaExhausted => 16,
    }
}

/// Where a live action is in the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Admitted or restored, not yet in any queue.
    New,
    /// In a ready lane, waiting for rate capacity and a slot.
    Ready,
    /// Waiting on a timer until this time (ms).
    Delayed(Millis),
    /// An attempt is on the wire.
    InFlight(crate::command::AttemptId),
    /// Its attempt was answered (the flight is gone) and the decision after the answer has
    /// not placed it yet: it holds no slot, reservation, queue place or timer.
    Answered,
    /// A coalesced read waiting on the leader's send.
    Following(JobId),
}

/// What the next send of an action asks. A look-up's subject is boxed: few actions ever
/// reconcile, and the record of every live action carries this field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum NextSend {
    Action,
    Lookup(Box<LookupBy>),
}

/// The breaker fingerprints of an action's last failures, kept until a success on the
/// path clears them; boxed, since most actions never fail on a breaker path.
#[derive(Debug, Clone, Default)]
pub(super) struct BreakerMarks {
    /// Fingerprint of the action's last failure on its own path.
    pub path: Option<String>,
    /// Fingerprint of the action's last failure on a wide path (its key or its task, see
    /// `breaker::wide_path`).
    pub wide: Option<String>,
}

/// One live action.
#[derive(Debug, Clone)]
pub(super) struct Tracked {
    /// What the ledger holds for it (job with its key, state, attempts, wait, operation id).
    pub entry: LedgerEntry,
    pub scope: usize,
    pub class: usize,
    pub tenant: u32,
    /// Its task's slot in the scheduler's live tasks.
    pub task: super::tasks::TaskSlot,
    /// Ready lane (tenant and scope).
    pub lane: u32,
    pub phase: Phase,
    /// Current queue/timer ticket: entries carrying another ticket are stale.
    pub ticket: u64,
    pub next_send: NextSend,
    /// Action sends made (look-ups excluded), counting those before a restart.
    pub action_attempts: u32,
    /// Retries scheduled (the backoff exponent).
    pub retries: u32,
    pub lookups: u32,
    /// Re-sends granted after a look-up said the action is absent.
    pub resends: u32,
    /// The previous backoff delay (ms), for decorrelated jitter.
    pub prev_delay: Millis,
    /// Some attempt reached the wire.
    pub sent: bool,
    /// Some attempt may have executed at the provider.
    pub uncertain: bool,
    pub last_status: Option<u16>,
    /// Breaker fingerprints of the action's last failures, cleared by a success on that
    /// path (`None` when it has none).
    pub breaker_marks: Option<Box<BreakerMarks>>,
    /// Index of the routing plan the action follows (`Policy::routing.plans`), if any.
    pub plan: Option<u32>,
    /// Its current route: 0 the primary (the job's own), `k` the plan's fallback `k - 1`.
    pub route: u16,
    /// `action_attempts` when the current route began (each route gets `max_attempts`).
    pub route_start: u32,
    /// `retries` when the current route began (the backoff exponent restarts per route).
    pub route_retry_start: u32,
    /// An attempt on the current route may have executed and no answer settled it.
    pub route_uncertain: bool,
    /// A fallback was withheld because the current route was uncertain: the terminal
    /// must offer a status query and never claim the action did not execute.
    pub withheld: bool,
    /// The condition that moved the action to its current route, for its next send.
    pub pending_fallback: Option<FallbackWhen>,
    /// What the degradation ladder gave its first attempt (kept for its retries).
    pub shape: Option<Box<Shape>>,
    /// Its timer is a retry's, counted in its scope's `delayed_retries` until it leaves.
    pub retry_waiting: bool,
}

/// An action's shape from the degradation ladder, fixed at its first dispatch.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Shape {
    /// The most severe rung applied (the highest `at_queued` among those applied).
    pub kind: RungKind,
    /// Prompt tokens after trimming (tokens).
    pub prompt_tokens: u32,
    /// Maximum output tokens after trimming (tokens).
    pub max_output_tokens: u32,
    /// The model a `smaller_model` rung asks for (shared with the policy's rung).
    pub model: Option<Name>,
}

impl Tracked {
    /// A freshly admitted (or restored) action, ready to be queued.
    pub fn new(
        entry: LedgerEntry,
        scope: usize,
        class: usize,
        (tenant, task): (u32, super::tasks::TaskSlot),
        lane: u32,
    ) -> Self {
        let attempts = entry.attempts;
        Self {
            entry,
            scope,
            class,
            tenant,
            task,
            lane,
            phase: Phase::New,
            ticket: 0,
            next_send: NextSend::Action,
            action_attempts: attempts,
            retries: attempts.saturating_sub(1),
            lookups: 0,
            resends: 0,
            prev_delay: 0,
            sent: attempts > 0,
            uncertain: false,
            last_status: None,
            breaker_marks: None,
            plan: None,
            route: 0,
            route_start: 0,
            route_retry_start: 0,
            route_uncertain: false,
            withheld: false,
            pending_fallback: None,
            shape: None,
            retry_waiting: false,
        }
    }
}

/// An attempt on the wire.
#[derive(Debug, Clone, Copy)]
pub(super) struct Flight {
    pub job: JobId,
    pub scope: usize,
    /// Tokens reserved in the scope's token bucket (tokens).
    pub reserved_tokens: u64,
    pub lookup: bool,
}

/// Per task: how many of its actions are live and the retries they used (task budget).
#[derive(Debug, Clone, Default)]
pub(super) struct TaskState {
    pub live: u32,
    pub retries: u32,
}

/// Counters kept in step with phase changes, so `gauges()` is O(1).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Counts {
    pub ready: u64,
    /// The bulk actions among `ready` (a `pause_bulk` rung's pressure leaves them out).
    pub ready_bulk: u64,
    pub delayed: u64,
    pub reconciling: u64,
    pub tokens_reserved: u64,
    pub ledger_errors: u64,
}

#[cfg(test)]
mod sizes {
    /// The README quotes the bytes a live action costs the core; this holds it to them (400
    /// since the job's task name is held inline: 24 bytes where a shared string's pointer
    /// took 16, and no allocation of its own).
    #[test]
    fn a_live_action_record_is_at_most_400_bytes() {
        let size = std::mem::size_of::<Option<super::Tracked>>();
        assert!(size <= 400, "Option<Tracked> is {size} bytes");
    }
}
