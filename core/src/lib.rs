//! stampede-core: the sans-IO client scheduling policy.
//!
//! The [`Scheduler`] is a state machine. Drivers feed it events (`submit`, `on_outcome`,
//! `cancel_task`) together with the current time, and drain the [`Command`]s it answers with
//! (`poll`) until it has nothing more to say, then sleep until [`Scheduler::next_wakeup`].
//! It never reads a clock, sleeps, spawns or touches a socket, and its only randomness is the
//! seeded RNG it is built with, so the same inputs always give the same commands.

pub mod command;
pub mod job;
pub mod ledger;
pub mod outcome;
pub mod time;

pub use command::{
    AttemptId, Command, LookupBy, NextAction, Reason, SendAttempt, SendKind, Terminal,
    TerminalStatus,
};
pub use job::{Job, JobId, Priority, Route};
pub use ledger::{ActionState, InMemoryLedger, Ledger, LedgerEntry, LedgerError};
pub use outcome::{LookupResult, Outcome, Response, TransportFailure, Usage};
pub use time::Millis;
pub mod audit;
pub mod policy;
pub mod preset;
pub mod scheduler;

pub use audit::{AuditEvent, AuditKind};
pub use policy::{Backoff, ClassPolicy, FailureGroup, Jitter, Policy, ScopeBudget};
pub use preset::{preset, PRESETS};
pub use scheduler::{CoreError, Gauges, Rejection, Scheduler, ScopeRecord, ScopeSource};
pub mod backoff;
pub mod breaker;
pub mod bucket;
pub mod classify;
mod id_hash;
pub mod idempotency;
pub mod rate_headers;
pub mod retry_after;
mod stored_entry;
