//! The integration tests of this crate, as one test binary: each file beside this one is a
//! module of it, where each was a binary of its own that linked the crate and its
//! dependencies again. Run one file's tests by its name, for example
//! `cargo test -p stampede-core --test integration ledger_refusal`.

mod common;

mod ledger_refusal;
mod peek;
mod properties;
mod restore;
mod routing;
mod rules;
mod seed_rules;
