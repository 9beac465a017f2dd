//! Where the runner's audit events go: `audit.jsonl` in the run directory, hash-chained by
//! stampede-durable's [`AuditWriter`], resumed with `open_append` after each simulated
//! restart as a restarted process would.

use std::path::{Path, PathBuf};

use stampede_core::AuditEvent;
use stampede_durable::{AuditWriter, SyncPolicy};

/// Receives the audit events the core records, in order.
pub trait AuditSink {
    /// Events drained from the running scheduler.
    fn record(&mut self, events: &[AuditEvent]) -> Result<(), String>;
    /// The runner died and a new process starts: it reopens the trail.
    fn restart(&mut self) -> Result<(), String>;
    /// Whether events are kept at all. A sink that drops them says so, and the driver then
    /// turns the core's audit off: recording events nobody reads costs a string per event.
    fn keeps_events(&self) -> bool {
        true
    }
}

/// Discards events (runs without a directory, benchmarks).
pub struct NoAudit;

impl AuditSink for NoAudit {
    fn record(&mut self, _events: &[AuditEvent]) -> Result<(), String> {
        Ok(())
    }

    fn restart(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn keeps_events(&self) -> bool {
        false
    }
}

/// The audit trail file of a virtual run. fsync only on request: the simulated process dies
/// but the real one does not, so the page cache survives every simulated crash.
pub struct AuditFile {
    path: PathBuf,
    writer: Option<AuditWriter>,
    records: u64,
}

impl AuditFile {
    /// Starts a new trail at `path`, replacing a trail left by an earlier run there.
    pub fn create(path: &Path) -> Result<Self, String> {
        if path.exists() {
            std::fs::remove_file(path)
                .map_err(|e| format!("cannot replace {}: {e}", path.display()))?;
        }
        let writer = AuditWriter::create(path)
            .map_err(|e| e.to_string())?
            .with_sync(SyncPolicy::OnRequest);
        Ok(Self {
            path: path.to_path_buf(),
            writer: Some(writer),
            records: 0,
        })
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes the trail to disk.
    pub fn close(mut self) -> Result<(), String> {
        match self.writer.take() {
            Some(w) => w.close().map(|_| ()).map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }
}

impl AuditSink for AuditFile {
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

    fn restart(&mut self) -> Result<(), String> {
        // The dead process's writer goes away unsynced, as a killed process's would.
        drop(self.writer.take());
        let resumed = AuditWriter::open_append(&self.path).map_err(|e| e.to_string())?;
        self.writer = Some(resumed.writer.with_sync(SyncPolicy::OnRequest));
        Ok(())
    }
}
