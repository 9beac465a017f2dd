//! The hash-chained audit file both drivers write (`audit.jsonl` in the run directory),
//! through stampede-durable's [`AuditWriter`]. The drivers differ only in when it is
//! synced (a live process can really die, a virtual one only pretends) and in how the
//! next process life reopens it; both are the caller's.

use std::path::{Path, PathBuf};

use stampede_core::AuditEvent;
use stampede_durable::{AuditWriter, SyncPolicy, TailRepair};

/// An open audit chain, and the records appended through it.
pub struct ChainedTrail {
    path: PathBuf,
    /// `None` once closed.
    writer: Option<AuditWriter>,
    sync: SyncPolicy,
    /// Records appended through this trail.
    records: u64,
}

impl ChainedTrail {
    /// Starts a new trail at `path`, fsynced as `sync` says, replacing a trail an earlier,
    /// unrelated run left there.
    pub fn create(path: &Path, sync: SyncPolicy) -> Result<Self, String> {
        if path.exists() {
            std::fs::remove_file(path).map_err(|e| {
                format!("cannot replace the old audit trail {}: {e}", path.display())
            })?;
        }
        let writer = AuditWriter::create(path)
            .map_err(|e| e.to_string())?
            .with_sync(sync);
        Ok(Self {
            path: path.to_path_buf(),
            writer: Some(writer),
            sync,
            records: 0,
        })
    }

    /// Continues the trail a dead process left at `path`, with the repair of its torn last
    /// line, if it had one. Refuses a chain broken anywhere but its tail (that is evidence).
    pub fn resume(path: &Path, sync: SyncPolicy) -> Result<(Self, Option<TailRepair>), String> {
        let resumed = AuditWriter::open_append(path).map_err(|e| e.to_string())?;
        Ok((
            Self {
                path: path.to_path_buf(),
                writer: Some(resumed.writer.with_sync(sync)),
                sync,
                records: 0,
            },
            resumed.repaired_tail,
        ))
    }

    /// The process holding the trail died and a new one reopens it: the old writer goes
    /// away unsynced, as a killed process's would, and the chain continues from its file.
    pub fn reopen(&mut self) -> Result<(), String> {
        drop(self.writer.take());
        let resumed = AuditWriter::open_append(&self.path).map_err(|e| e.to_string())?;
        self.writer = Some(resumed.writer.with_sync(self.sync));
        Ok(())
    }

    /// Appends `events` in order.
    pub fn append(&mut self, events: &[AuditEvent]) -> Result<(), String> {
        let Some(writer) = self.writer.as_mut() else {
            return Err(format!(
                "{}: the audit trail is closed",
                self.path.display()
            ));
        };
        // One fsync for the batch (a turn's events), not one per record.
        writer.append_batch(events).map_err(|e| e.to_string())?;
        self.records += events.len() as u64;
        Ok(())
    }

    /// Records appended through this trail.
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
