//! The end-to-end tests of the `stampede` command and its crates together, as one test
//! binary: each file beside this one is a module of it. One binary where there were 46: each
//! linked the whole workspace and its dependencies again (65 to 87 MB each, 3.2 GB in all in
//! a clean clone's target directory) and compiled its own copy of `common` and of every
//! generic it used. Run one file's tests by its name, for example
//! `cargo test --test integration golden_summaries`.
//!
//! `readme_allocations.rs` stays a binary of its own: it counts the allocations of a run in
//! a fresh process, and one-time initializations that other tests had already made in a
//! shared one moved its count (12,454 against the README's 12,460).

mod common;

mod abort;
mod audit_figures;
mod audit_head;
mod audit_verify;
mod broken_pipe;
mod browser;
mod calibration;
mod case_files;
mod check_cmd;
mod clients;
mod diff_cmd;
mod golden_summaries;
mod goodput_honest;
mod live_agreement;
mod live_five_step;
mod live_journal_tail;
mod live_models;
mod live_no_retries;
mod live_safety;
mod live_unfinished;
mod messages;
mod node_clients;
mod outside_loop;
mod pairs;
mod pgo_script;
mod progress;
mod provider_identity;
mod python_model;
mod readme_figures;
mod readme_server_bounds;
mod refused_run_keeps_files;
mod replicas;
mod restarts_live;
mod restarts_props;
mod restarts_scenario;
mod retry_panel;
mod routing_scenarios;
mod rule_scenarios;
mod run_dir_size;
mod run_scenarios;
mod same_runs;
mod secrets;
mod seed_figures;
mod seed_scenarios;
mod serve_bad_clients;
mod sweep_cmd;
mod sweep_shard;
