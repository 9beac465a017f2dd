//! The integration tests of this crate, as one test binary: each file beside this one is a
//! module of it, where each was a binary of its own that linked the crate and its
//! dependencies again. Run one file's tests by its name, for example
//! `cargo test -p stampede-sim --test integration claims`.
//!
//! `steady_state_allocations.rs` stays a binary of its own: it counts allocations, which one-time
//! initializations made by other tests in a shared process would move.

#[path = "support/journal.rs"]
mod journal;

mod claims;
mod control_bounds;
mod journal_figures;
mod run_breakdown;
