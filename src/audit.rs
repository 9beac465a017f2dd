//! `stampede audit verify FILE`: checks a hash-chained audit trail (`audit.jsonl` of a run
//! directory) and prints whether it is whole or which record first breaks it.
//! Exit codes: 0 the chain is whole, 1 a record is edited, missing or out of order, or the
//! trail does not reach its head (the message names its line and seq), 2 the file cannot be
//! read or is no trail at all (none of its lines is a record), or the head file is no head
//! record (damaged, or not a head file), unless the trail is keyed (`STAMPEDE_AUDIT_KEY`),
//! where either fails the check (1).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Check that every record of an audit trail fits the hash chain; exit 1 naming the
    /// first record that does not (edited, deleted, reordered), 2 when the file is unreadable
    /// or the head file is no head record.
    Verify {
        /// The audit trail (JSON lines), e.g. runs/<scenario>/audit.jsonl.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// The head file the writer kept (default: FILE.head when it exists); the trail must
        /// reach its record with its hash, so records cut off the end are caught. With
        /// STAMPEDE_AUDIT_KEY set, the chain and the head are checked as HMACs under it.
        #[arg(long, value_name = "HEADFILE")]
        head: Option<PathBuf>,
    },
}

pub fn main(args: AuditArgs) -> ExitCode {
    match args.command {
        AuditCommand::Verify { file, head } => {
            let code = stampede_durable::verify_cli_with_head(&file, head.as_deref());
            ExitCode::from(u8::try_from(code).unwrap_or(2))
        }
    }
}
