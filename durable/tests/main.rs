//! The integration tests of this crate, as one test binary: each file beside this one is a
//! module of it, where each was a binary of its own that linked the crate and its
//! dependencies again. Run one file's tests by its name, for example
//! `cargo test -p stampede-durable --test integration audit_buffering`.

mod audit_buffering;
mod audit_tamper_prop;
mod audit_trail;
mod sqlite_ledger;
