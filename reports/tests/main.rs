//! The integration tests of this crate, as one test binary: each file beside this one is a
//! module of it, where each was a binary of its own that linked the crate and its
//! dependencies again. Run one file's tests by its name, for example
//! `cargo test -p stampede-reports --test integration baseline_page`.

mod common;

mod baseline_page;
mod clipped_peaks;
mod compare;
mod data_files;
mod page_tables;
mod plot_reading;
mod png;
mod prometheus;
mod render;
mod sweep;
