//! The audit trail of a live run on a ledger: `audit.jsonl` in the run directory,
//! hash-chained by stampede-durable's [`AuditWriter`].
//!
//! Unlike the virtual driver's trail, this one belongs to a process that can really die
//! (SIGKILL, power loss), so it keeps the writer's default fsync policy: every record that
//! precedes a side effect is on disk before the request leaves. A restarted runner continues
//! the same chain with `open_append`, which repairs a tail torn by the kill and says so.

use std::path::{Path, PathBuf};

use stampede_core::AuditEvent;
use stampede_durable::{AuditWriter, TailRepair};

use crate::virtual_driver::AuditSink;

/// The audit file of one process life of a live run.
pub struct LiveAuditTrail {
    path: PathBuf,
    writer: Option<AuditWriter>,
    /// Records this life appended.
    records: u64,
}

impl LiveAuditTrail {
    /// Starts a new trail at `path`, replacing a trail an earlier, unrelated run left there.
    pub fn create(path: &Path) -> Result<Self, String> {
        if path.exists() {
            std::fs::remove_file(path).map_err(|e| {
                format!("cannot replace the old audit trail {}: {e}", path.display())
            })?;
        }
        let writer = AuditWriter::create(path).map_err(|e| e.to_string())?;
        Ok(Self {
            path: path.to_path_buf(),
            writer: Some(writer),
            records: 0,
        })
    }

    /// Continues the trail a dead process left at `path`, with the repair of its torn last
    /// line, if it had one. Refuses a chain broken anywhere but its tail (that is evidence).
    pub fn resume(path: &Path) -> Result<(Self, Option<TailRepair>), String> {
        let resumed = AuditWriter::open_append(path).map_err(|e| {
            format!(
                "{e}; the audit trail of the run being resumed must be whole: keep it as \
                 evidence and start a fresh run with a new --ledger file and --out directory"
            )
        })?;
        Ok((
            Self {
                path: path.to_path_buf(),
                writer: Some(resumed.writer),
                records: 0,
            },
            resumed.repaired_tail,
        ))
    }

    /// Records this life appended.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Syncs and closes the trail.
    pub fn close(mut self) -> Result<(), String> {
        match self.writer.take() {
            Some(w) => w.close().map(drop).map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }
}

impl AuditSink for LiveAuditTrail {
    fn record(&mut self, events: &[AuditEvent]) -> Result<(), String> {
        let Some(writer) = self.writer.as_mut() else {
            return Err(format!(
                "{}: the audit trail is closed",
                self.path.display()
            ));
        };
        for event in events {
            writer.append(event).map_err(|e| e.to_string())?;
            self.records += 1;
        }
        Ok(())
    }

    /// A live process does not restart inside itself: the next life is a new process,
    /// which calls [`LiveAuditTrail::resume`].
    fn restart(&mut self) -> Result<(), String> {
        Ok(())
    }
}
