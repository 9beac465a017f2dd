//! stampede-durable: what survives a crash.
//!
//! - [`SqliteLedger`]: the core's [`Ledger`](stampede_core::Ledger) in a SQLite file (WAL,
//!   `synchronous = FULL`, one transaction per put, versioned schema), for live runs.
//! - [`AuditWriter`]: the audit trail as hash-chained JSON lines, free of secrets and bodies,
//!   resumable after a crash.
//! - [`verify()`]: whether a trail is whole, or the first record that is not (backs
//!   `stampede audit verify FILE` through [`verify_cli`]).

#![deny(missing_docs)]

pub mod audit_log;
pub mod chain;
pub mod credential_ref;
pub mod error;
pub mod head_file;
pub mod redact;
pub mod sqlite_ledger;
pub mod verify;

pub use audit_log::{Appended, AuditWriter, Resumed, SyncPolicy, TailRepair};
pub use chain::{ChainHead, ChainKey, AUDIT_KEY_ENV, GENESIS_PREV};
pub use credential_ref::CredentialRefs;
pub use error::DurableError;
pub use head_file::{head_path, read_head, write_head, HeadError};
pub use redact::{sanitize_detail, Redaction, Sanitized};
pub use sqlite_ledger::{LedgerOptions, SqliteLedger, Synchronous, SCHEMA_VERSION, UNBOUND_FACT};
pub use verify::{
    verify, verify_cli, verify_cli_with_head, verify_keyed, verify_with_head, Break, Problem,
    VerifyReport,
};
