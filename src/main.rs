//! The `stampede` command: argument parsing and wiring only. Each subcommand lives in its
//! own file; this file only dispatches.

mod audit;
mod exit;
mod run;
mod validate;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run::main(args),
        Command::Validate(args) => validate::main(args),
        Command::Audit(args) => audit::main(args),
    }
}
