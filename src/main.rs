//! The `stampede` command: argument parsing and wiring only. Each subcommand lives in its
//! own file; this file only dispatches.

// The doc comments on the command's arguments are its `--help` text, written for a terminal
// (`runs/<scenario name>/`, `[provider]` tables), not for rustdoc.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

mod audit;
mod check;
mod count_arg;
mod diff;
mod exit;
mod progress_bar;
mod run;
mod serve;
mod step_summary;
mod sweep;
mod sweep_shard;
mod validate;
mod work_queue;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Find out what your AI-agent client really does to a rate-limited provider.
#[derive(Debug, Parser)]
#[command(name = "stampede", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Play a scenario and write its report; exit 1 when an expectation fails.
    Run(run::RunArgs),
    /// Check scenario files without running them.
    Validate(validate::ValidateArgs),
    /// Audit trails: `stampede audit verify FILE` checks a hash-chained audit.jsonl.
    Audit(audit::AuditArgs),
    /// Run every scenario under the paths: one line each, a combined junit.xml; exit 1 when
    /// any expectation fails, 2 when a scenario is malformed.
    Check(check::CheckArgs),
    /// Play one scenario over a grid of values and seeds: sweep.csv, plots, a recommendation.
    /// `--shard I/N` plays one part; `stampede sweep merge DIR...` joins the parts.
    Sweep(sweep::SweepCli),
    /// Show each figure's change between two run directories.
    Diff(diff::DiffArgs),
    /// Serve the fake provider over HTTP (loopback by default) until Ctrl-C.
    Serve(serve::ServeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Filters end quietly on a closed stdout. `serve` and `run` (a live run holds sockets) keep
    // Rust's ignored SIGPIPE: a client that closes before its answer is written must cost that
    // one connection an EPIPE, not kill the process (hyper writes with writev, which raises
    // SIGPIPE on a reset socket).
    if !matches!(cli.command, Command::Serve(_) | Command::Run(_)) {
        restore_default_sigpipe();
    }
    match cli.command {
        Command::Run(args) => run::main(args),
        Command::Validate(args) => validate::main(args),
        Command::Audit(args) => audit::main(args),
        Command::Check(args) => check::main(args),
        Command::Sweep(args) => sweep::main(args),
        Command::Diff(args) => diff::main(args),
        Command::Serve(args) => serve::main(args),
    }
}

/// Rust ignores SIGPIPE, so a closed stdout (`stampede check scenarios/ | head`) makes the next
/// `println!` panic. A command-line filter should simply end, as every Unix tool does.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called in main before any other thread exists; SIG_DFL is a valid
    // disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
