//! What the virtual and the live driver do alike, written once: the turn of their loops
//! (`turn`: arrivals, cancellations, answers, the core's commands, over a small `Wire`
//! trait each driver implements), admitting the workload's
//! arrivals into the core with backpressure (`admission`), tracking the actions the core
//! admitted until their terminal outcome (`live_actions`), sampling the core's gauges once
//! per report bucket (`gauges`), reading a terminal outcome back from a ledger entry
//! (`persisted`), the hash-chained audit file both write (`audit_trail`), the dead letters
//! and escalation case files of actions that did not complete (`case_file`); `client_core`
//! is what those parts need of the client, one core or a fleet of replicas; `abort` watches
//! the expectations that may end a run early.
//!
//! Each driver keeps what is its own: the virtual one its event queue and simulated
//! crashes, the live one its clock, HTTP attempts and restart from a durable ledger.

pub mod abort;
pub mod admission;
pub mod audit_trail;
pub mod case_file;
pub mod client_core;
pub mod gauges;
pub mod live_actions;
pub mod persisted;
pub mod translate;
pub mod turn;

/// Wall-clock time of scenario t = 0 (2026-01-01T00:00:00Z, ms since the Unix epoch), in
/// both drivers: fixed, so HTTP-date Retry-After values are the same on every run.
pub const SCENARIO_EPOCH_UNIX_MS: u64 = 1_767_225_600_000;
