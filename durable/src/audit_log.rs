//! Writing the audit trail: hash-chained JSON lines, one per [`AuditEvent`].
//!
//! The line layout and the hashed bytes are defined in [`crate::chain`]. Each record carries
//! the hash of the one before, so an edited, deleted or reordered record shows up in
//! [`verify`](crate::verify()).
//!
//! # When it reaches the disk
//!
//! Every append is one `write` of the whole line to an unbuffered, append-only file, so a
//! crash loses at most the line being written (a torn tail, handled below) and never
//! interleaves records. Whether the line is also fsynced depends on [`SyncPolicy`]; the
//! default, [`SyncPolicy::BeforeSideEffects`], fsyncs every record except `action_requested`
//! and `retry_scheduled`: those always precede an `action_sent` (recorded before dispatch) of
//! the same action, whose fsync makes them durable too. So whatever left the process is on
//! disk first, at one fsync per attempt rather than one per record.
//!
//! # Resuming after a crash
//!
//! [`AuditWriter::open_append`] verifies the whole file first and refuses to extend a chain
//! that is broken before its last line (that is evidence, not crash damage). A last line
//! without its `\n` is a write the crash cut short: if its bytes are nevertheless a complete
//! record that fits the chain, the newline is added and the record kept; otherwise the partial
//! line is truncated away. Either way the repair is returned as a [`TailRepair`] for the
//! caller to report, never silently applied.
//!
//! # No secrets, no bodies
//!
//! Each event's `detail` goes through [`sanitize_detail`] before it is hashed; what was
//! redacted is returned in [`Appended::redactions`].

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use stampede_core::{AuditEvent, AuditKind};

use crate::chain::{canonical_json, format_line, record_hash, ChainHead};
use crate::error::DurableError;
use crate::redact::{sanitize_detail, Redaction};
use crate::verify::{walk, Problem, VerifyReport};

/// When the writer fsyncs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncPolicy {
    /// fsync after every record except `action_requested` and `retry_scheduled` (see the
    /// module docs). The default for live runs.
    #[default]
    BeforeSideEffects,
    /// fsync after every record.
    EveryRecord,
    /// Only on [`AuditWriter::sync`] and [`AuditWriter::close`]: for the virtual driver, whose
    /// crashes are simulated and whose process does not die.
    OnRequest,
}

impl SyncPolicy {
    fn syncs_after(self, kind: AuditKind) -> bool {
        match self {
            Self::EveryRecord => true,
            Self::OnRequest => false,
            Self::BeforeSideEffects => {
                !matches!(kind, AuditKind::ActionRequested | AuditKind::RetryScheduled)
            }
        }
    }
}

/// What one append wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The record's seq (1-based).
    pub seq: u64,
    /// The record's hash.
    pub hash: String,
    /// What was redacted from the event's detail; empty for a clean detail. Non-empty means
    /// the caller put a secret or a body into an audit detail, which is a bug to fix.
    pub redactions: Vec<Redaction>,
}

/// How [`AuditWriter::open_append`] repaired a tail torn by a crash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TailRepair {
    /// The partial last line was removed.
    Truncated {
        /// Its line number.
        line: u64,
        /// Bytes removed.
        bytes: u64,
    },
    /// The last line was a complete record missing only its `\n`, which was added.
    NewlineAdded { line: u64, seq: u64 },
}

impl std::fmt::Display for TailRepair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Truncated { line, bytes } => {
                write!(
                    f,
                    "removed a torn last line {line} ({bytes} bytes) left by a crash mid-write"
                )
            }
            Self::NewlineAdded { line, seq } => {
                write!(
                    f,
                    "line {line} (seq {seq}) was complete but missing its newline; added it"
                )
            }
        }
    }
}

/// A writer resumed by [`AuditWriter::open_append`], with the repair it made, if any.
#[derive(Debug)]
pub struct Resumed {
    pub writer: AuditWriter,
    /// `Some` when the file ended in a torn line; show it to the user.
    pub repaired_tail: Option<TailRepair>,
}

/// Appends hash-chained audit records to one file.
#[derive(Debug)]
pub struct AuditWriter {
    file: File,
    path: PathBuf,
    head: ChainHead,
    sync: SyncPolicy,
    /// Set when a write failed part-way: the file may end in a partial line, so appending
    /// more would bury it. Reopen with `open_append` to repair.
    poisoned: bool,
}

impl AuditWriter {
    /// Creates a new, empty trail at `path`. Refuses to touch an existing file.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, DurableError> {
        let path = path.as_ref().to_path_buf();
        let file = match OpenOptions::new().append(true).create_new(true).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(DurableError::AuditExists { path });
            }
            Err(source) => {
                return Err(DurableError::AuditIo {
                    path,
                    action: "create",
                    source,
                })
            }
        };
        sync_parent_dir(&path)?;
        Ok(Self {
            file,
            path,
            head: ChainHead::genesis(),
            sync: SyncPolicy::default(),
            poisoned: false,
        })
    }

    /// Resumes the trail at `path` after a restart: verifies it, repairs a torn last line
    /// (reported in [`Resumed::repaired_tail`]) and continues the chain from its last record.
    /// Fails with [`DurableError::AuditBroken`] if the chain is broken anywhere else.
    pub fn open_append(path: impl AsRef<Path>) -> Result<Resumed, DurableError> {
        let path = path.as_ref().to_path_buf();
        let walked = walk(&path, None)?;
        let io_err = |action, source| DurableError::AuditIo {
            path: path.clone(),
            action,
            source,
        };
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| io_err("open for appending", e))?;
        let mut head = walked.good_head;
        let repaired_tail = match walked.report {
            VerifyReport::Whole { .. } => None,
            VerifyReport::Broken(brk) => match brk.problem {
                Problem::Torn {
                    complete_record: true,
                    ..
                } => {
                    (&file)
                        .write_all(b"\n")
                        .map_err(|e| io_err("complete the torn last line", e))?;
                    file.sync_data().map_err(|e| io_err("sync", e))?;
                    // The torn record fitted the chain, so it is the new head; re-read it.
                    head = match walk(&path, None)?.report {
                        VerifyReport::Whole { head, .. } => head,
                        other => {
                            return Err(DurableError::AuditBroken {
                                path,
                                report: other.to_string(),
                            });
                        }
                    };
                    Some(TailRepair::NewlineAdded {
                        line: brk.line,
                        seq: head.seq,
                    })
                }
                Problem::Torn {
                    offset,
                    bytes,
                    complete_record: false,
                } => {
                    file.set_len(offset)
                        .map_err(|e| io_err("truncate the torn last line", e))?;
                    file.sync_data().map_err(|e| io_err("sync", e))?;
                    Some(TailRepair::Truncated {
                        line: brk.line,
                        bytes,
                    })
                }
                _ => {
                    let report = VerifyReport::Broken(brk).to_string();
                    return Err(DurableError::AuditBroken { path, report });
                }
            },
        };
        let writer = Self {
            file,
            path,
            head,
            sync: SyncPolicy::default(),
            poisoned: false,
        };
        Ok(Resumed {
            writer,
            repaired_tail,
        })
    }

    /// The same writer with another fsync policy.
    pub fn with_sync(mut self, sync: SyncPolicy) -> Self {
        self.sync = sync;
        self
    }

    /// The last record written (seq 0 and 64 zeros before the first). Keep it elsewhere to
    /// catch a cut tail with [`verify_with_head`](crate::verify_with_head).
    pub fn head(&self) -> &ChainHead {
        &self.head
    }

    /// The trail's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record for `event` (its detail sanitized), fsyncing as the policy says.
    pub fn append(&mut self, event: &AuditEvent) -> Result<Appended, DurableError> {
        if self.poisoned {
            return Err(DurableError::AuditIo {
                path: self.path.clone(),
                action: "append after an earlier failed write",
                source: std::io::Error::other(
                    "reopen the trail with AuditWriter::open_append to repair its tail",
                ),
            });
        }
        let sanitized = sanitize_detail(&event.detail);
        let mut clean = event.clone();
        clean.detail = sanitized.text;
        let value = serde_json::to_value(&clean).map_err(|source| DurableError::AuditEncode {
            path: self.path.clone(),
            job: event.job,
            source,
        })?;
        let canonical_event = canonical_json(&value);
        let seq = self.head.seq + 1;
        let hash = record_hash(seq, &self.head.hash, &canonical_event);
        let line = format_line(seq, &self.head.hash, &canonical_event, &hash);
        if let Err(source) = self.file.write_all(line.as_bytes()) {
            self.poisoned = true;
            return Err(DurableError::AuditIo {
                path: self.path.clone(),
                action: "append a record",
                source,
            });
        }
        self.head = ChainHead {
            seq,
            hash: hash.clone(),
        };
        if self.sync.syncs_after(event.kind) {
            self.sync()?;
        }
        Ok(Appended {
            seq,
            hash,
            redactions: sanitized.redactions,
        })
    }

    /// fsyncs everything written so far.
    pub fn sync(&mut self) -> Result<(), DurableError> {
        self.file
            .sync_data()
            .map_err(|source| DurableError::AuditIo {
                path: self.path.clone(),
                action: "sync to disk",
                source,
            })
    }

    /// fsyncs and closes the trail, returning its head.
    pub fn close(mut self) -> Result<ChainHead, DurableError> {
        self.sync()?;
        Ok(self.head)
    }
}

/// A new file's directory entry must reach the disk too, or a crash can lose the whole file.
#[cfg(unix)]
fn sync_parent_dir(path: &Path) -> Result<(), DurableError> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| DurableError::AuditIo {
            path: path.to_path_buf(),
            action: "sync its directory",
            source,
        })
}

#[cfg(not(unix))]
fn sync_parent_dir(_path: &Path) -> Result<(), DurableError> {
    // Directories cannot be opened for syncing here; the file's own sync has to do.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_policy_syncs_everything_but_what_precedes_a_send() {
        let policy = SyncPolicy::default();
        assert!(!policy.syncs_after(AuditKind::ActionRequested));
        assert!(!policy.syncs_after(AuditKind::RetryScheduled));
        for kind in [
            AuditKind::ActionSent,
            AuditKind::ActionResult,
            AuditKind::ReconciliationRequired,
            AuditKind::Escalated,
            AuditKind::Cancelled,
            AuditKind::Completed,
        ] {
            assert!(policy.syncs_after(kind), "{kind:?}");
        }
        assert!(SyncPolicy::EveryRecord.syncs_after(AuditKind::ActionRequested));
        assert!(!SyncPolicy::OnRequest.syncs_after(AuditKind::ActionSent));
    }
}
