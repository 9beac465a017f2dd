//! Where the runner's audit events go: `audit.jsonl` in the run directory, hash-chained by
//! stampede-durable's [`AuditWriter`](stampede_durable::AuditWriter), resumed with `open_append` after each simulated
//! restart as a restarted process would.

use std::path::Path;

use stampede_core::AuditEvent;
use stampede_durable::SyncPolicy;

use crate::driver_common::audit_trail::ChainedTrail;

/// Receives the audit events the core records, in order.
pub trait AuditSink {
    /// Events drained from the running scheduler.
    fn record(&mut self, events: &[AuditEvent]) -> Result<(), String>;
    /// The runner died and a new process starts: it reopens the trail.
    fn restart(&mut self) -> Result<(), String>;
    /// Whether events are kept at all. A sink that drops them says so, and the driver then
    /// turns the core's audit off: recording events nobody reads still costs an event (and
    /// a growing buffer) per step of every action.
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
    trail: ChainedTrail,
}

impl AuditFile {
    /// Starts a new trail at `path`, replacing a trail left by an earlier run there.
    pub fn create(path: &Path) -> Result<Self, String> {
        let trail = ChainedTrail::create(path, SyncPolicy::OnRequest)?;
        Ok(Self { trail })
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.trail.records()
    }

    /// Flushes the trail to disk.
    pub fn close(self) -> Result<(), String> {
        self.trail.close()
    }
}

impl AuditSink for AuditFile {
    fn record(&mut self, events: &[AuditEvent]) -> Result<(), String> {
        self.trail.append(events)
    }

    fn restart(&mut self) -> Result<(), String> {
        self.trail.reopen()
    }
}
