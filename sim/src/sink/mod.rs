//! Where a run's streams go while it plays, for either driver: the attempts the provider
//! journaled (`attempts`, attempts.csv) and the audit events the client's core records
//! (`audit`, audit.jsonl). Each has a sink that drops everything, for benchmarks and runs
//! without a directory, so a driver can skip building what nobody keeps.

pub mod attempts;
pub mod audit;
pub mod background;

pub use attempts::{AttemptSink, NoAttempts};
pub use audit::{AuditFile, AuditSink, NoAudit};
