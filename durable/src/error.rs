//! What can go wrong with the durable stores, said so a user can act on it.

use std::path::PathBuf;

/// A durable store (the SQLite ledger or the audit trail) could not be opened, read or written.
///
/// Every variant names the file and says what to do; none is raised for a normal, whole file.
#[derive(Debug, thiserror::Error)]
pub enum DurableError {
    /// SQLite refused to open or set up the ledger file.
    #[error(
        "cannot open the ledger {path}: {source}; check that the directory exists and is writable, \
         and that the file is a Stampede ledger (or point the runner at a new file)"
    )]
    LedgerOpen {
        /// The ledger file.
        path: PathBuf,
        /// What SQLite said (cannot open, not a database, read-only, ...).
        #[source]
        source: rusqlite::Error,
    },
    /// The ledger file could not be opened or locked (before SQLite reads it).
    #[error(
        "cannot open the ledger {path}: {source}; check that the directory exists and is \
         writable, or point the runner at a new file"
    )]
    LedgerFile {
        /// The ledger file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The ledger file is gone but its write-ahead log is still there.
    #[error(
        "the ledger {path} does not exist, but its write-ahead log {wal} does: the ledger was \
         deleted or moved without it. Restore the ledger file beside its log to resume its \
         run, or remove {wal} to start a new ledger"
    )]
    LedgerWalOrphan {
        /// The ledger file that is missing.
        path: PathBuf,
        /// Its write-ahead log, left behind.
        wal: PathBuf,
    },
    /// The ledger can be read but not written.
    #[error(
        "the ledger {path} can be read but not written (the file or its folder is read-only \
         for this user): a run writes every action to it before sending; make both writable, \
         or give --ledger a new file"
    )]
    LedgerReadOnly {
        /// The ledger file.
        path: PathBuf,
    },
    /// The ledger path names something other than a regular file.
    #[error(
        "the ledger {path} is {what}: give --ledger the path of a file (a new one is created)"
    )]
    LedgerNotAFile {
        /// The ledger path.
        path: PathBuf,
        /// What it is instead (`a folder`, ...).
        what: &'static str,
    },
    /// Another process holds the ledger: two runners on one ledger would each restore and
    /// send the same live actions.
    #[error(
        "the ledger {path} is in use by another runner: two runners on one ledger would both \
         send its unfinished actions (a write committed twice); wait for the other to end, or \
         give this run a new --ledger file"
    )]
    LedgerInUse {
        /// The ledger file.
        path: PathBuf,
    },
    /// The file is an SQLite database of some other program.
    #[error(
        "{path} is not a Stampede ledger ({holds}); nothing was written to it; give --ledger \
         a new file"
    )]
    LedgerForeign {
        /// The database file.
        path: PathBuf,
        /// What it holds instead, as a phrase (`it holds the tables users and no ledger
        /// table`).
        holds: String,
    },
    /// SQLite would not put the file in WAL mode, so a returned put might not be durable.
    #[error(
        "the ledger {path} could not be switched to WAL journal mode (it is in {mode} mode); \
         put the ledger on a local filesystem that supports shared memory"
    )]
    LedgerNotWal {
        /// The ledger file.
        path: PathBuf,
        /// The journal mode SQLite kept instead (`delete`, `memory`, ...).
        mode: String,
    },
    /// The ledger was written by a newer Stampede whose schema this build does not know.
    #[error(
        "the ledger {path} has schema version {found}, but this build understands versions up to \
         {supported}; run a newer stampede on it, or start a new ledger file"
    )]
    LedgerTooNew {
        /// The ledger file.
        path: PathBuf,
        /// The schema version the file says it has.
        found: i64,
        /// The newest schema version this build reads ([`crate::SCHEMA_VERSION`]).
        supported: i64,
    },
    /// A statement on an open ledger failed (disk full, file locked by another runner, ...).
    #[error("ledger {path}: cannot {action}: {source}; check free space and that no other runner holds this file")]
    LedgerSql {
        /// The ledger file.
        path: PathBuf,
        /// What the ledger was doing, as a phrase (`"store the entry of job 7"`, `"read the
        /// schema version"`).
        action: String,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// A stored row does not decode: the file was edited or damaged outside Stampede.
    #[error("ledger {path} is corrupt at job {job}: {problem}; restore it from a backup or start a new ledger file")]
    LedgerCorrupt {
        /// The ledger file.
        path: PathBuf,
        /// The job id of the row that does not decode, as text (or what identifies the row
        /// when its id is unreadable).
        job: String,
        /// What is wrong with it.
        problem: String,
    },
    /// An audit trail file could not be created, read, written or synced.
    #[error("audit trail {path}: cannot {action}: {source}")]
    AuditIo {
        /// The audit trail file.
        path: PathBuf,
        /// What the writer was doing, as a phrase (`"create"`, `"append a record"`, `"write the
        /// head file"`).
        action: &'static str,
        /// What the OS said (disk full, permission denied, ...).
        #[source]
        source: std::io::Error,
    },
    /// `AuditWriter::create` was pointed at a file that already exists.
    #[error(
        "audit trail {path} already exists; resume it with AuditWriter::open_append, or choose a new file \
         (an existing trail is never overwritten)"
    )]
    AuditExists {
        /// The audit trail file.
        path: PathBuf,
    },
    /// `AuditWriter::open_append` found a chain that does not verify before its tail.
    #[error(
        "audit trail {path} is broken, refusing to append to it: {report}; keep the file as evidence and \
         start a new trail"
    )]
    AuditBroken {
        /// The audit trail file.
        path: PathBuf,
        /// What verification found (the first broken record and why).
        report: String,
    },
    /// An audit event did not serialize (should not happen for core events).
    #[error("audit trail {path}: cannot encode event for job {job}: {source}")]
    AuditEncode {
        /// The audit trail file.
        path: PathBuf,
        /// The job the event was about.
        job: u64,
        /// What serde_json said.
        #[source]
        source: serde_json::Error,
    },
}
