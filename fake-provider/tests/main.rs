//! The integration tests of this crate, as one test binary: each file beside this one is a
//! module of it, where each was a binary of its own that linked the crate and its
//! dependencies again. Run one file's tests by its name, for example
//! `cargo test -p stampede-provider --test integration bounds`.

mod bounds;
mod control_guard;
mod fuzz_http;
mod http;
mod journal_pages;
mod models_http;
mod scoped_lookups;
