//! stampede-core: the sans-IO client scheduling policy.
//!
//! The [`Scheduler`] is a state machine in the manner of quinn-proto's `Connection`. Drivers
//! feed it events together with the current time, drain the [`Command`]s it answers with,
//! and sleep until [`Scheduler::next_wakeup`]. It never reads a clock, sleeps, spawns or
//! touches a socket, and its only randomness is the seeded RNG it is built with, so the same
//! inputs always give the same commands. The same policy therefore runs in virtual time (a
//! discrete-event simulator) and in real time (an HTTP client) without a line changed.
//!
//! # Time
//!
//! Time is a [`Millis`]: milliseconds since the driver's run start, virtual or real (the core
//! cannot tell). Every event and every `poll` takes `now` and acts as of that time.
//!
//! - **`now` never goes backwards.** Across every call that takes it ([`Scheduler::submit`],
//!   [`Scheduler::submit_not_before`], [`Scheduler::on_outcome`], [`Scheduler::cancel_task`],
//!   [`Scheduler::poll`], [`Scheduler::observe_peer_wait`], [`Scheduler::observe_peer_spend`],
//!   and the starting time given to [`Scheduler::restore`]), each `now` is at least the
//!   largest one passed before. Many calls at the same millisecond are normal.
//! - The scheduler keeps the largest `now` it has seen. Debug builds assert the contract
//!   (`debug_assert!` in each entry point: a smaller `now` panics with both times); release
//!   builds go on at the largest time seen, so no timer, bucket or budget runs backwards.
//! - A driver that reads a clock must read a monotonic one and clamp what it hands over to
//!   the last time it handed over (the live driver does: a restarted run's clock can read a
//!   hair before its restore time).
//! - Wall-clock instants only enter through `Retry-After` HTTP-dates, which are compared with
//!   [`Policy::wall_epoch_unix_ms`] `+ now`.
//!
//! # Call order
//!
//! One turn of a driver, at one `now`:
//!
//! 1. **Events due at `now`, in any order:** [`Scheduler::submit`] (or
//!    [`Scheduler::submit_not_before`]) for each new logical action, [`Scheduler::on_outcome`]
//!    for each attempt whose answer arrived, [`Scheduler::cancel_task`] for each cancellation,
//!    [`Scheduler::observe_peer_wait`] / [`Scheduler::observe_peer_spend`] for news from
//!    replicas. A refused submit returns a [`Rejection`] with `retry_after_ms`: offer the
//!    job again no sooner; [`Scheduler::room_for`] asks the same question without the cost.
//!    Optional: [`Scheduler::prefetch`]`(job)` as soon as the driver knows which action's
//!    answer it will deliver, a cache hint that changes nothing the scheduler decides; and
//!    after a send, [`Scheduler::next_send_hint`] names the action the core expects to send
//!    next, for the driver to prefetch its own record of it.
//! 2. **Drain [`Scheduler::poll`]`(now)` until it returns `None`.** Polling wakes the
//!    timers due at `now`, enforces the execution budget and dispatches as much as rate,
//!    concurrency and the scope records allow. Each command is due now:
//!    - [`Command::Send`]: put the [`SendAttempt`] on the wire. Its concurrency slot and rate
//!      reservation are already held, so report how it ended with exactly one
//!      `on_outcome(send.attempt, ..)`, at the time the answer (or the failure) is heard.
//!      With a group-committing [`Ledger`], call [`Scheduler::flush_ledger`] after draining
//!      and before any drained send leaves, so an action is durable before its first send.
//!    - [`Command::Finish`]: the logical action is terminal; nothing more is emitted for it.
//!
//!    Or read each command where it lies: [`Scheduler::peek`]`(now)` lends the next one (the
//!    same one `poll` would return), the driver carries it out, then
//!    [`Scheduler::consume`] takes it; drain until `peek` gives `None`. A send is 160 bytes,
//!    and a driver that reads it in place copies none of it (both of this project's drivers
//!    do). `consume` with nothing lent panics: it would drop a command the driver never saw.
//! 3. **Audit** (when the policy records it): [`Scheduler::drain_audit`] or
//!    [`Scheduler::drain_audit_with`].
//! 4. **Sleep** until the earliest of [`Scheduler::next_wakeup`] and the driver's own next
//!    event (an answer, an arrival, a cancellation). `next_wakeup` is an absolute time (ms
//!    since run start), at or before the last `now` when commands are already waiting (poll
//!    again at once). `None`: only a new event can make progress.
//!
//! A whole run of one action against a provider that answers 200 after 120 ms:
//!
//! ```
//! use rand::SeedableRng;
//! use rand_chacha::ChaCha8Rng;
//! use stampede_core::{
//!     preset, Command, InMemoryLedger, Job, Outcome, Response, Scheduler, TerminalStatus,
//! };
//!
//! let policy = preset("stampede").expect("a shipped preset");
//! let mut core = Scheduler::new(policy, InMemoryLedger::new(), ChaCha8Rng::seed_from_u64(7))?;
//! // A chat completion; every field `Job::new` leaves neutral can be set like these.
//! let job = Job {
//!     prompt_tokens: 500,
//!     max_output_tokens: 200,
//!     ..Job::new(1, "acme", "summarise-ticket", "key-1")
//! };
//! let mut now = 0;
//! core.submit(job, now).expect("the queue has room");
//! let mut on_the_wire = Vec::new();
//! let mut finished = Vec::new();
//! loop {
//!     while let Some(command) = core.poll(now) {
//!         match command {
//!             Command::Send(send) => on_the_wire.push(send.attempt),
//!             Command::Finish(terminal) => finished.push(terminal),
//!         }
//!     }
//!     if on_the_wire.is_empty() && core.next_wakeup().is_none() {
//!         break;
//!     }
//!     now += 120; // time only moves forward
//!     for attempt in on_the_wire.drain(..) {
//!         core.on_outcome(attempt, Outcome::Response(Response::new(200)), now);
//!     }
//! }
//! assert_eq!(finished.len(), 1);
//! assert_eq!(finished[0].status, TerminalStatus::Completed);
//! assert_eq!(finished[0].attempts, 1);
//! # Ok::<(), stampede_core::CoreError>(())
//! ```
//!
//! What happens when:
//!
//! - An outcome for an attempt the core no longer tracks (its action was cancelled or
//!   finished by a budget while it was on the wire, or it was sent before a restore) is
//!   ignored: its slot and reservation were given back when the action ended.
//! - Cancellation ends every live action of the task at once, each with a `Finish`; delayed
//!   work is dropped before it wakes.
//! - After a crash, [`Scheduler::restore`] rebuilds the state from the ledger at `now`;
//!   attempt ids start afresh, so answers to pre-crash attempts must not be fed to it.
//!
//! # Errors and budgets
//!
//! Nothing the provider does is an error of the core: every failure is an [`Outcome`] the
//! policy classifies and acts on, ending in a [`Terminal`] with a [`Reason`] and the
//! [`NextAction`]s that are safe. Errors are reserved for the driver's side: a [`Rejection`]
//! (admission), a [`CoreError`] (bad policy or ledger at build or restore), a
//! [`LedgerError`] (storage).
//!
//! # What is exported
//!
//! The root re-exports what a driver needs: the state machine and its errors, the job that
//! goes in, the commands and terminals that come out, the outcomes fed back, the ledger
//! trait, the policy and its presets. Header parsing ([`rate_headers`], [`retry_after`]) and
//! stable hashing ([`idempotency`]) are modules of their own for drivers that speak HTTP,
//! and [`classify`] tells a driver what an outcome meant (for its reports); the policy's
//! parts live in [`policy`]. Everything else (backoff, buckets, the breaker, the scheduler's
//! insides) is private.

#![deny(missing_docs)]

mod audit;
mod backoff;
mod breaker;
mod bucket;
pub mod classify;
mod command;
mod degradation;
mod id_band;
mod id_hash;
mod id_index;
pub mod id_slab;
pub mod idempotency;
mod job;
mod labels;
mod ledger;
mod operation_id;
mod outcome;
pub mod policy;
pub mod preset;
pub mod rate_headers;
pub mod retry_after;
mod routing;
mod scheduler;
mod stored_entry;
mod time;

// The state machine, its figures and its errors.
pub use scheduler::{
    CoreError, Gauges, Rejection, RejectionCause, RejectionReason, Scheduler, ScopeRecord,
    ScopeSource, DEFAULT_SCOPE,
};

// What goes in: logical actions, and what the driver observed of each attempt.
pub use job::{Job, JobId, Priority, Route, TaskName};
pub use operation_id::OperationId;
pub use outcome::{LookupResult, Outcome, Response, TransportFailure, Usage};
pub use rate_headers::RateHint;
pub use stampede_key::{IdempotencyKey, KeyText};
pub use stampede_name::Name;

// What comes out: commands, attempts to send, terminal outcomes, audit events.
pub use audit::{AuditDetail, AuditEvent, AuditKind, FallbackMove};
pub use command::{
    AttemptId, Command, LookupBy, NextAction, NextActions, Reason, SendAttempt, SendKind, Terminal,
    TerminalStatus,
};

// Persistence: the ledger trait a durable store implements, and the in-memory one.
pub use ledger::{ActionState, InMemoryLedger, Ledger, LedgerEntry, LedgerError};

// The policy and its named presets.
pub use policy::{
    Backoff, ClassPolicy, FailureGroup, FallbackRoute, FallbackWhen, Jitter, Policy, RoutePlan,
    Routing, Rung, RungKind, ScopeBudget, MAX_ATTEMPTS,
};
pub use preset::{preset, PRESETS};

// Time.
pub use time::{earliest, Millis, MINUTE, SECOND};
