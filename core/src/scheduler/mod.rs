//! The scheduler: the state machine drivers feed with events and time.
//!
//! Each file below holds one idea of the policy: admission and fair lanes, the scope record
//! and its buckets, dispatch, the decision after an outcome, reconciliation, coalescing,
//! cancellation, terminal outcomes and restoring from a ledger. This hub only holds the
//! state and the public entry points.

mod admission;
mod audit_log;
mod cancel;
mod coalesce;
mod decide;
mod degrade;
mod dispatch;
mod fallback;
mod job_table;
mod lanes;
mod last_name;
mod outbox;
mod peers;
mod queueing;
mod reconcile;
mod rejection_reason;
mod restore;
mod retry_window;
mod scope;
mod state;
mod tasks;
mod terminal;
mod timers;

#[cfg(test)]
mod tests_short_turn;

use std::borrow::Borrow;
use std::collections::BTreeMap;

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::audit::AuditEvent;
use crate::breaker::Breaker;
use crate::command::{AttemptId, Command};
use crate::job::{Job, JobId, Route};
use crate::ledger::{InMemoryLedger, Ledger, LedgerEntry, LedgerError};
use crate::outcome::Outcome;
use crate::policy::Policy;
use crate::time::Millis;

pub use admission::DEFAULT_SCOPE;
pub use rejection_reason::RejectionReason;
pub use scope::{ScopeRecord, ScopeSource};

/// Why `submit` refused a job (admission with backpressure). The job was not admitted and
/// nothing was persisted: offer it again after `retry_after_ms`, or report it as refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[must_use = "a rejected job was not admitted: offer it again after retry_after_ms or report it"]
pub struct Rejection {
    /// Why, in one word the caller can branch on.
    pub cause: RejectionCause,
    /// What was full or wrong, for the caller and the report: rendered when displayed.
    pub reason: RejectionReason,
    /// When it makes sense to submit again (ms from now).
    pub retry_after_ms: Millis,
}

/// Why a submit was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectionCause {
    /// The tenant's queue at this priority is full (`admission.queue_capacity`):
    /// backpressure; offer it again after `retry_after_ms`.
    QueueFull,
    /// The run's execution budget is spent: nothing new is admitted.
    ExecutionBudgetSpent,
    /// The action's deadline had already passed: refused for good, never offer it again.
    DeadlinePassed,
    /// The ledger could not persist the action; offering it again may succeed.
    LedgerRefused,
    /// The action itself is wrong (an unknown class, an id already live).
    InvalidAction,
}

impl RejectionCause {
    crate::labels::kinds_and_labels!(
        RejectionCause,
        [
            QueueFull,
            ExecutionBudgetSpent,
            DeadlinePassed,
            LedgerRefused,
            InvalidAction
        ]
    );

    /// A short stable label for reports (`queue_full`, `deadline_passed`, ...).
    pub const fn label(self) -> &'static str {
        match self {
            RejectionCause::QueueFull => "queue_full",
            RejectionCause::ExecutionBudgetSpent => "execution_budget_spent",
            RejectionCause::DeadlinePassed => "deadline_passed",
            RejectionCause::LedgerRefused => "ledger_refused",
            RejectionCause::InvalidAction => "invalid_action",
        }
    }

    /// Whether offering the same action again can never succeed.
    pub fn is_final(self) -> bool {
        self == RejectionCause::DeadlinePassed
    }
}

/// The scheduler could not be built or restored.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// The policy is inconsistent (zero workers, no class, a zero timeout, a class a ledger
    /// entry names but the policy lacks...). The message names the field and a value that
    /// works: fix the policy and build again.
    #[error("invalid policy: {0}")]
    Policy(String),
    /// The ledger could not be read (or a restored entry could not be rewritten) while
    /// restoring; see [`LedgerError`] for what each kind means.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// Instantaneous figures a driver samples for time series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gauges {
    /// Jobs in the ready queues: admitted (or due again) and waiting for rate capacity or a
    /// concurrency slot (actions).
    pub queued: u64,
    /// Jobs waiting on a backoff, Retry-After or quota-reset timer (actions).
    pub delayed: u64,
    /// Attempts on the wire (requests).
    pub in_flight: u64,
    /// Tokens currently reserved by attempts on the wire (tokens).
    pub tokens_reserved: u64,
    /// Uncertain writes waiting for or running a reconciliation look-up (actions).
    pub reconciling: u64,
    /// Reads waiting on an identical read in flight (actions).
    pub coalesced: u64,
    /// Actions admitted and not yet terminal (actions).
    pub live: u64,
    /// Tokens used beyond reservations, summed over every scope's token bucket (tokens).
    pub token_debt: u64,
    /// Ledger writes that failed (the action was held back, not sent) (writes).
    pub ledger_errors: u64,
}

/// The client scheduling policy as a state machine.
pub struct Scheduler<L: Ledger = InMemoryLedger> {
    policy: Policy,
    /// Class policies with durations in ms, indexed by `class_index`.
    classes: Vec<state::ClassRules>,
    class_index: BTreeMap<String, usize>,
    /// The class name last found in `class_index`.
    last_class: last_name::LastName<usize>,
    ledger: L,
    rng: ChaCha8Rng,
    /// Every live (admitted, not terminal) action.
    jobs: job_table::JobTable,
    lanes: lanes::Lanes,
    /// Timers of delayed actions. Entries whose ticket is stale are skipped.
    delayed: timers::Timers,
    /// Attempts on the wire by attempt id: ids rise and mostly end in order, so each is
    /// found by its position in a sliding band, with no index (`id_band`).
    in_flight: crate::id_band::IdBand<state::Flight>,
    scopes: scope::Scopes,
    /// Live tasks, each action's by the slot it keeps.
    tasks: tasks::Tasks,
    coalescing: coalesce::Coalescing,
    breaker: Breaker,
    /// Breaker paths (route, class, payload hash) that opened, with the fingerprint that
    /// opened them: dispatch checks them before sending.
    open_paths: BTreeMap<(Route, usize, u64), String>,
    /// Wide breaker paths (a key, or a task's endpoint; `breaker::wide_path`) that opened,
    /// with the fingerprint that opened them.
    open_wide: BTreeMap<String, String>,
    /// Commands waiting for the driver, in order (see `outbox`).
    outbox: outbox::Outbox,
    /// `peek` lent the outbox's front and `consume` has not taken it yet.
    lent: bool,
    /// The lane head behind the last action sent: most often the next one sent.
    next_head: Option<JobId>,
    audit: Vec<AuditEvent>,
    next_attempt: AttemptId,
    /// Sequence for timer tie-breaks and queue tickets.
    seq: u64,
    /// Global concurrency slots in use.
    slots_used: u32,
    counts: state::Counts,
    /// Earliest time a rate-blocked ready job can go, found by the last dispatch scan.
    rate_wakeup: Option<Millis>,
    /// The latest `now` seen (ms).
    last_now: Millis,
    /// The policy's backoff in whole ms (converted once: a delay is drawn at every retry).
    backoff: crate::backoff::BackoffMs,
    /// End of the run's execution budget (ms since run start), if the policy sets one:
    /// the policy's duration converted once (`execution_end`).
    execution_end: Option<Millis>,
    execution_spent: bool,
    /// Tests only: every `fill_outbox` takes the whole turn, never its short way out (a
    /// property test plays the same runs both ways).
    #[cfg(test)]
    full_turns: bool,
    /// Some scope (or the default scope) caps its waiting retries
    /// (`ScopeBudget::max_delayed_requests`): without one, retries are not counted per scope
    /// at all, and the hot path of a retry storm pays nothing for the cap.
    caps_waiting_retries: bool,
}

impl<L: Ledger> Scheduler<L> {
    /// A fresh scheduler. Entries already in `ledger` are ignored (use [`Scheduler::restore`]).
    pub fn new(policy: Policy, ledger: L, rng: ChaCha8Rng) -> Result<Self, CoreError> {
        policy.validate().map_err(CoreError::Policy)?;
        let classes: Vec<state::ClassRules> = policy
            .classes
            .values()
            .map(state::ClassRules::from_policy)
            .collect();
        let class_index = policy
            .classes
            .keys()
            .enumerate()
            .map(|(i, name)| (name.clone(), i))
            .collect();
        let breaker = Breaker::new(
            policy.breaker.threshold,
            state::millis(policy.breaker.open_for),
        );
        Ok(Self {
            classes,
            class_index,
            last_class: last_name::LastName::default(),
            ledger,
            rng,
            jobs: job_table::JobTable::default(),
            lanes: lanes::Lanes::default(),
            delayed: timers::Timers::default(),
            in_flight: crate::id_band::IdBand::default(),
            scopes: scope::Scopes::default(),
            tasks: tasks::Tasks::new(policy.retry_budgets.per_task.enabled),
            coalescing: coalesce::Coalescing::default(),
            breaker,
            open_paths: BTreeMap::new(),
            open_wide: BTreeMap::new(),
            outbox: outbox::Outbox::default(),
            lent: false,
            next_head: None,
            audit: Vec::new(),
            next_attempt: 1,
            seq: 0,
            slots_used: 0,
            counts: state::Counts::default(),
            rate_wakeup: None,
            last_now: 0,
            backoff: crate::backoff::BackoffMs::of(&policy.backoff),
            execution_end: Self::execution_end_of(&policy),
            execution_spent: false,
            #[cfg(test)]
            full_turns: false,
            caps_waiting_retries: policy.default_scope.max_delayed_requests.is_some()
                || policy
                    .scopes
                    .values()
                    .any(|b| b.max_delayed_requests.is_some()),
            policy,
        })
    }

    /// Rebuilds a scheduler after a crash from what the ledger persisted: planned actions are
    /// queued again, in-flight uncertain writes go to reconciliation with their original key,
    /// in-flight safe actions are queued again with their attempts counted, and terminal
    /// actions stay terminal. Attempt ids start afresh: answers to attempts made before the
    /// crash must not be fed to the restored scheduler (they died with the process).
    pub fn restore(
        policy: Policy,
        ledger: L,
        rng: ChaCha8Rng,
        now: Millis,
    ) -> Result<Self, CoreError> {
        let mut scheduler = Self::new(policy, ledger, rng)?;
        let now = scheduler.observe(now);
        scheduler.restore_from_ledger(now)?;
        Ok(scheduler)
    }

    /// Admits a logical action, or refuses it with a reason and a retry-after. The action is
    /// persisted (with its idempotency key) before this returns.
    // Always inlined: a call to this wrapper copied the job (200 bytes) once more, into
    // `admit`'s argument, on every admission.
    #[inline(always)]
    pub fn submit(&mut self, job: Job, now: Millis) -> Result<(), Rejection> {
        let now = self.observe(now);
        self.admit(job, None, now)
    }

    /// Like `submit`, but the action is delayed work: admitted and persisted now, first
    /// dispatched no earlier than `not_before` (ms since run start).
    pub fn submit_not_before(
        &mut self,
        job: Job,
        not_before: Millis,
        now: Millis,
    ) -> Result<(), Rejection> {
        let now = self.observe(now);
        self.admit(job, Some(not_before), now)
    }

    /// Reports how an attempt from a `Command::Send` ended. Outcomes of unknown or cancelled
    /// attempts are ignored. Takes the outcome or a reference to it: the core keeps none of
    /// it but an operation id (cloned), so a driver can lend it where it lies (an answer is
    /// 200 bytes).
    // Out of line, with `settle` in it: inlined into a driver's loop, `settle` alone was
    // left out of line, and a call is taken either way.
    #[inline(never)]
    pub fn on_outcome(&mut self, attempt: AttemptId, outcome: impl Borrow<Outcome>, now: Millis) {
        let now = self.observe(now);
        self.settle(attempt, outcome.borrow(), now);
    }

    /// Cancels every action of a task: delayed work is dropped before it wakes, slots and
    /// reservations are released; each action ends `Cancelled`.
    pub fn cancel_task(&mut self, tenant: &str, task: &str, now: Millis) {
        let now = self.observe(now);
        self.cancel(tenant, task, now);
    }

    /// The next command due at `now`, if any. Call until `None` after every batch of
    /// events, and whenever `next_wakeup` comes due; see the crate docs for the call order.
    #[must_use = "a dropped Send leaves its slot and reservation held forever; a dropped Finish loses a terminal outcome"]
    pub fn poll(&mut self, now: Millis) -> Option<Command> {
        let now = self.observe(now);
        self.fill_outbox(now);
        // A command `peek` lent is taken by this `poll`, not lost.
        self.lent = false;
        self.outbox.pop_front()
    }

    /// The next command due at `now`, if any, lent where it lies: the same command `poll`
    /// would return, without moving it out (a send is 160 bytes, and a driver that reads it
    /// in place copies none of it). Carry it out, then call [`Scheduler::consume`]; until
    /// then, `peek` lends the same command again. Drain `peek` and `consume` until `peek`
    /// gives `None`, exactly as `poll`; the two can be mixed only between commands.
    pub fn peek(&mut self, now: Millis) -> Option<&Command> {
        let now = self.observe(now);
        if self.outbox.is_empty() {
            self.fill_outbox(now);
        }
        let front = self.outbox.front();
        self.lent = front.is_some();
        front
    }

    /// Takes the command [`Scheduler::peek`] lent out of the outbox: the driver has carried
    /// it out.
    ///
    /// # Panics
    ///
    /// When no command is lent (no `peek` returned one since the last `consume`): consuming
    /// one the driver never saw would drop a send whose slot stays held forever.
    pub fn consume(&mut self) {
        assert!(self.lent, "consume without a command lent by peek");
        self.lent = false;
        self.outbox.consume();
    }

    /// When the scheduler next wants `poll` called if nothing else happens (ms since run
    /// start): the earliest timer, rate capacity returning, or the end of the execution
    /// budget. At or before the latest `now` when commands are already waiting (poll at
    /// once). `None`: only a new event (submit, outcome, cancel) can make progress.
    #[must_use = "a driver that ignores the wake-up never polls the timers it asked for"]
    pub fn next_wakeup(&self) -> Option<Millis> {
        if !self.outbox.is_empty() {
            return Some(self.last_now);
        }
        let timer = self.delayed.next_due();
        let execution_end = match (self.execution_end(), self.jobs.is_empty()) {
            (Some(end), false) if !self.execution_spent => Some(end),
            _ => None,
        };
        crate::time::earliest([timer, self.rate_wakeup, execution_end])
    }

    /// Audit events recorded since the last drain, in order; they are forgotten here.
    #[must_use = "drained audit events are gone from the scheduler: write them or they are lost"]
    pub fn drain_audit(&mut self) -> Vec<AuditEvent> {
        if self.audit.is_empty() {
            return Vec::new();
        }
        // The next batch starts with room for as many events, instead of growing again.
        let room = self.audit.len();
        std::mem::replace(&mut self.audit, Vec::with_capacity(room))
    }

    /// Hands the audit events recorded since the last drain, in order, to `read`, then
    /// forgets them; the buffer is kept for the next events (no allocation per drain).
    pub fn drain_audit_with<R>(&mut self, read: impl FnOnce(&[AuditEvent]) -> R) -> R {
        let result = read(&self.audit);
        self.audit.clear();
        result
    }

    /// Current queue, delay, in-flight and reservation figures. O(1): the counts are kept
    /// in step with every move.
    #[must_use]
    pub fn gauges(&self) -> Gauges {
        Gauges {
            queued: self.counts.ready,
            delayed: self.counts.delayed,
            in_flight: self.in_flight.len() as u64,
            tokens_reserved: self.counts.tokens_reserved,
            reconciling: self.counts.reconciling,
            coalesced: self.coalescing.waiters(),
            live: self.jobs.len() as u64,
            token_debt: self.scopes.token_debt(),
            ledger_errors: self.counts.ledger_errors,
        }
    }

    /// The shared record of one scope (`next_allowed_at`, remaining, reset, source), if the
    /// scheduler has seen that scope.
    #[must_use]
    pub fn scope_record(&self, scope: &str) -> Option<ScopeRecord> {
        self.scopes.record(scope)
    }

    /// Every scope seen so far with its record, ordered by scope id.
    #[must_use]
    pub fn scope_records(&self) -> Vec<(String, ScopeRecord)> {
        self.scopes.records()
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// A hint for a driver that knows which action it will hand the scheduler next (an
    /// answer it is about to deliver): asks the CPU to bring that action's record into its
    /// cache, so settling the answer does not stall on it. Changes nothing the scheduler
    /// decides and reads no clock; a few instructions (see `IdSlab::prefetch`).
    pub fn prefetch(&self, id: crate::job::JobId) {
        self.jobs.prefetch(&id);
    }

    /// The action the scheduler expects to send next: the head of the lane behind the last
    /// action it sent, `None` when that lane had no other. A hint for a driver's own
    /// prefetch of its record of that action (a deep queue's head was last touched at its
    /// admission); anything can change the order before the next send, so a driver must not
    /// rely on it.
    pub fn next_send_hint(&self) -> Option<JobId> {
        self.next_head
    }

    /// The ledger the scheduler persists to, for reading entries (a driver's final report
    /// lists what is left unfinished from it).
    pub fn ledger(&self) -> &L {
        &self.ledger
    }

    /// The ledger entries of the actions it still tracks (not yet ended), ordered by job id:
    /// what a ledger that keeps them holds, from the scheduler's own records. For a driver
    /// whose ledger keeps nothing (`InMemoryLedger::keeping_nothing`) and that must say, at
    /// the end, where its unfinished actions stand.
    #[must_use]
    pub fn live_entries(&self) -> Vec<LedgerEntry> {
        let mut entries: Vec<LedgerEntry> =
            self.jobs.values().map(|job| job.entry.clone()).collect();
        entries.sort_unstable_by_key(|entry| entry.job.id);
        entries
    }

    /// Makes every ledger write so far durable (see `Ledger::flush`). Call order with a
    /// group-committing ledger: drain `poll`, then `flush_ledger`, then put the drained
    /// `Send`s on the wire.
    pub fn flush_ledger(&mut self) -> Result<(), LedgerError> {
        self.ledger.flush()
    }

    /// Gives the ledger back (for a simulated crash: only what it holds survives).
    #[must_use]
    pub fn into_ledger(self) -> L {
        self.ledger
    }

    /// Takes in the `now` an entry point was handed and returns the time to act at. The
    /// time contract (see the crate docs): `now` never goes backwards. Debug builds panic
    /// on an earlier `now` than one already seen (a driver bug: a clock read early, or a
    /// stale time kept across an await); release builds go on at the latest time seen, so
    /// no timer, bucket or budget ever runs backwards.
    fn observe(&mut self, now: Millis) -> Millis {
        debug_assert!(
            now >= self.last_now,
            "time went backwards: the core was handed now = {now} ms after {} ms; a driver \
             must never pass an earlier time than one it passed before",
            self.last_now
        );
        self.last_now = self.last_now.max(now);
        self.last_now
    }
}
