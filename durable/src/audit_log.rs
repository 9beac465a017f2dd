//! Writing the audit trail: hash-chained JSON lines, one per [`AuditEvent`].
//!
//! The line layout and the hashed bytes are defined in [`crate::chain`]. Each record carries
//! the hash of the one before, so an edited, deleted or reordered record shows up in
//! [`verify`](crate::verify()).
//!
//! # When it reaches the disk
//!
//! Under [`SyncPolicy::BeforeSideEffects`] (the default) and [`SyncPolicy::EveryRecord`],
//! every append is one `write` of the whole line straight to the append-only file, so a
//! crash loses at most the line being written (a torn tail, handled below) and never
//! interleaves records. Whether the line is also fsynced depends on the policy: the
//! default fsyncs every record except `action_requested` and `retry_scheduled`: those always
//! precede an `action_sent` (recorded before dispatch) of the same action, whose fsync makes
//! them durable too. So whatever left the process is on disk first, at one fsync per attempt
//! rather than one per record.
//!
//! Under [`SyncPolicy::OnRequest`] (the virtual driver, whose durability is modelled, not
//! real) lines are collected in a 256 KiB buffer and written in large chunks: a
//! `write` system call per record was most of the cost of writing a large run's trail. The
//! buffer is written out by [`AuditWriter::sync`], [`AuditWriter::close`], when it fills, and
//! (best effort, errors ignored) when the writer is dropped. A dropped writer therefore
//! leaves every record it accepted in the file, as long as that last write succeeds; call
//! `close` to learn whether it did. A chunk may end mid-line, so a real crash under this
//! policy can lose up to a buffer's worth of records and leave a torn tail, which
//! [`AuditWriter::open_append`] repairs like any other.
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
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use stampede_core::{AuditEvent, AuditKind};

use crate::chain::{canonical_json, format_line, ChainHead, ChainKey};
use crate::error::DurableError;
use crate::head_file::write_head;
use crate::redact::{sanitize_detail, Redaction};
use crate::verify::{walk, Problem, VerifyReport};

/// Bytes of audit lines [`SyncPolicy::OnRequest`] collects before writing them out: large
/// enough that a run of hundreds of MB makes few system calls, small next to a run's memory.
const BUFFER_BYTES: usize = 256 * 1024;

/// When the writer fsyncs (and, for [`SyncPolicy::OnRequest`], when it writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncPolicy {
    /// fsync after every record except `action_requested` and `retry_scheduled` (see the
    /// module docs). The default for live runs.
    #[default]
    BeforeSideEffects,
    /// fsync after every record.
    EveryRecord,
    /// Only on [`AuditWriter::sync`] and [`AuditWriter::close`]: for the virtual driver, whose
    /// crashes are simulated and whose process does not die. Records are also buffered, not
    /// written one by one (see the module docs).
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

    /// Whether records may wait in memory. Only a policy that never fsyncs on its own may:
    /// the others must have written (and, where they say so, fsynced) a record when
    /// `append` returns.
    fn buffers(self) -> bool {
        matches!(self, Self::OnRequest)
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
    NewlineAdded {
        /// Its line number (1-based).
        line: u64,
        /// The record's seq.
        seq: u64,
    },
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
    /// The writer, positioned after the last whole record: the next append continues the
    /// chain.
    pub writer: AuditWriter,
    /// `Some` when the file ended in a torn line; show it to the user.
    pub repaired_tail: Option<TailRepair>,
}

/// Appends hash-chained audit records to one file.
///
/// Dropping it writes out what [`SyncPolicy::OnRequest`] buffered, ignoring errors, and
/// fsyncs nothing: use [`close`](Self::close) to know the trail reached the disk.
#[derive(Debug)]
pub struct AuditWriter {
    /// The file behind a buffer that only [`SyncPolicy::OnRequest`] fills; other policies
    /// write each line to the file itself, once the buffer is empty.
    out: BufWriter<File>,
    path: PathBuf,
    head: ChainHead,
    sync: SyncPolicy,
    /// Set when a write failed part-way: the file may end in a partial line, so appending
    /// more would bury it. Reopen with `open_append` to repair.
    poisoned: bool,
    /// Plain SHA-256 or HMAC-SHA256 (from `STAMPEDE_AUDIT_KEY`).
    key: ChainKey,
}

impl AuditWriter {
    /// Creates a new, empty trail at `path`, keyed by `STAMPEDE_AUDIT_KEY` when it is set,
    /// and its head file `PATH.head`. Refuses to touch an existing trail.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, DurableError> {
        Self::create_keyed(path, ChainKey::from_env())
    }

    /// [`create`](Self::create) with an explicit key.
    pub fn create_keyed(path: impl AsRef<Path>, key: ChainKey) -> Result<Self, DurableError> {
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
        let writer = Self {
            out: BufWriter::with_capacity(BUFFER_BYTES, file),
            path,
            head: ChainHead::genesis(),
            sync: SyncPolicy::default(),
            poisoned: false,
            key,
        };
        // Replaces a head an earlier trail at this path left.
        writer.write_head()?;
        sync_parent_dir(&writer.path)?;
        Ok(writer)
    }

    /// Writes the head file beside the trail.
    fn write_head(&self) -> Result<(), DurableError> {
        write_head(&self.path, &self.head, &self.key).map_err(|source| DurableError::AuditIo {
            path: self.path.clone(),
            action: "write the head file",
            source,
        })
    }

    /// Resumes the trail at `path` after a restart: verifies it, repairs a torn last line
    /// (reported in [`Resumed::repaired_tail`]) and continues the chain from its last record.
    /// Fails with [`DurableError::AuditBroken`] if the chain is broken anywhere else.
    pub fn open_append(path: impl AsRef<Path>) -> Result<Resumed, DurableError> {
        Self::open_append_keyed(path, ChainKey::from_env())
    }

    /// [`open_append`](Self::open_append) with an explicit key.
    pub fn open_append_keyed(
        path: impl AsRef<Path>,
        key: ChainKey,
    ) -> Result<Resumed, DurableError> {
        let path = path.as_ref().to_path_buf();
        let walked = walk(&path, None, &key)?;
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
                    head = match walk(&path, None, &key)?.report {
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
            out: BufWriter::with_capacity(BUFFER_BYTES, file),
            path,
            head,
            sync: SyncPolicy::default(),
            poisoned: false,
            key,
        };
        Ok(Resumed {
            writer,
            repaired_tail,
        })
    }

    /// The same writer with another fsync policy. Lines buffered under
    /// [`SyncPolicy::OnRequest`] are written out before the first record appended under a
    /// policy that does not buffer.
    pub fn with_sync(mut self, sync: SyncPolicy) -> Self {
        self.sync = sync;
        self
    }

    /// The last record appended (seq 0 and 64 zeros before the first), possibly still in
    /// the buffer under [`SyncPolicy::OnRequest`]. Keep it elsewhere to
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
        let appended = self.append_unsynced(event)?;
        if self.sync.syncs_after(event.kind) {
            self.sync_records()?;
        }
        Ok(appended)
    }

    /// Appends `events` in order as [`AuditWriter::append`] would one by one, with one
    /// fsync at the end (when the policy fsyncs any of them) where `append` makes one per
    /// record: for a driver that records a turn's events together before any request of
    /// that turn leaves, which keeps the policy's promise (what left the process is on disk
    /// first) at one fsync a turn. A live run had spent two thirds of its time in these
    /// fsyncs on a busy disk.
    pub fn append_batch(&mut self, events: &[AuditEvent]) -> Result<(), DurableError> {
        let mut sync = false;
        for event in events {
            self.append_unsynced(event)?;
            sync |= self.sync.syncs_after(event.kind);
        }
        if sync {
            self.sync_records()?;
        }
        Ok(())
    }

    /// [`AuditWriter::append`] without its fsync.
    fn append_unsynced(&mut self, event: &AuditEvent) -> Result<Appended, DurableError> {
        if self.poisoned {
            return Err(DurableError::AuditIo {
                path: self.path.clone(),
                action: "append after an earlier failed write",
                source: std::io::Error::other(
                    "reopen the trail with AuditWriter::open_append to repair its tail",
                ),
            });
        }
        let sanitized = sanitize_detail(&event.detail.text());
        let clean = AuditEvent {
            detail: sanitized.text.into(),
            ..*event
        };
        let value = serde_json::to_value(&clean).map_err(|source| DurableError::AuditEncode {
            path: self.path.clone(),
            job: event.job,
            source,
        })?;
        let canonical_event = canonical_json(&value);
        let seq = self.head.seq + 1;
        let hash = self.key.record_hash(seq, &self.head.hash, &canonical_event);
        let line = format_line(seq, &self.head.hash, &canonical_event, &hash);
        let written = if self.sync.buffers() {
            self.out.write_all(line.as_bytes())
        } else {
            // One write of the whole line straight to the file: these policies promise the
            // record is there when append returns. Lines buffered under an earlier
            // OnRequest go first, so the order holds.
            self.out
                .flush()
                .and_then(|()| self.out.get_mut().write_all(line.as_bytes()))
        };
        if let Err(source) = written {
            // The file may now end in part of a line (this one or a buffered one).
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
        Ok(Appended {
            seq,
            hash,
            redactions: sanitized.redactions,
        })
    }

    /// Writes out what is buffered, fsyncs everything appended so far, and updates the head
    /// file beside the trail.
    pub fn sync(&mut self) -> Result<(), DurableError> {
        self.sync_records()?;
        self.write_head()
    }

    /// Writes out what is buffered and fsyncs it (the head file is left as it is).
    fn sync_records(&mut self) -> Result<(), DurableError> {
        if let Err(source) = self.out.flush() {
            // Part of the buffer may have reached the file, ending it mid-line.
            self.poisoned = true;
            return Err(DurableError::AuditIo {
                path: self.path.clone(),
                action: "write out buffered records",
                source,
            });
        }
        self.out
            .get_ref()
            .sync_data()
            .map_err(|source| DurableError::AuditIo {
                path: self.path.clone(),
                action: "sync to disk",
                source,
            })
    }

    /// Writes out what is buffered, fsyncs and closes the trail, returning its head.
    pub fn close(mut self) -> Result<ChainHead, DurableError> {
        self.sync()?;
        Ok(std::mem::replace(&mut self.head, ChainHead::genesis()))
    }
}

impl Drop for AuditWriter {
    /// Best effort: writes out the buffered lines so that a simulated crash (which drops the
    /// writer, as the virtual driver's restart does) loses nothing the page cache would
    /// keep. An error cannot be reported here; `open_append` repairs a tail it left torn.
    fn drop(&mut self) {
        // After `close` the head is genesis again (and was written by close): skip it then.
        if self.out.flush().is_ok() && !self.poisoned && self.head.seq > 0 {
            let _ = self.write_head();
        }
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
