//! The audit trail of a live run on a ledger: `audit.jsonl` in the run directory,
//! hash-chained by stampede-durable's [`AuditWriter`](stampede_durable::AuditWriter).
//!
//! Unlike the virtual driver's trail, this one belongs to a process that can really die
//! (SIGKILL, power loss), so it keeps the writer's default fsync policy: every record that
//! precedes a side effect is on disk before the request leaves. A restarted runner continues
//! the same chain with `open_append`, which repairs a tail torn by the kill and says so.

use std::path::Path;

use stampede_core::AuditEvent;
use stampede_durable::{SyncPolicy, TailRepair};

use crate::driver_common::audit_trail::ChainedTrail;
use crate::sink::AuditSink;

/// The audit file of one process life of a live run.
pub struct LiveAuditTrail {
    trail: ChainedTrail,
}

impl LiveAuditTrail {
    /// Starts a new trail at `path`, replacing a trail an earlier, unrelated run left there.
    pub fn create(path: &Path) -> Result<Self, String> {
        let trail = ChainedTrail::create(path, SyncPolicy::default())?;
        Ok(Self { trail })
    }

    /// Continues the trail a dead process left at `path`, with the repair of its torn last
    /// line, if it had one. Refuses a chain broken anywhere but its tail (that is evidence).
    pub fn resume(path: &Path) -> Result<(Self, Option<TailRepair>), String> {
        let (trail, repaired) = ChainedTrail::resume(path, SyncPolicy::default()).map_err(|e| {
            format!(
                "{e}; the audit trail of the run being resumed must be whole to be continued: \
                 keep it as evidence, and resume with the same --ledger and a new --out \
                 directory (its trail then starts anew). A new --ledger would abandon the \
                 run's unfinished actions, uncertain writes included"
            )
        })?;
        Ok((Self { trail }, repaired))
    }

    /// Records this life appended.
    pub fn records(&self) -> u64 {
        self.trail.records()
    }

    /// Syncs and closes the trail.
    pub fn close(self) -> Result<(), String> {
        self.trail.close()
    }
}

impl AuditSink for LiveAuditTrail {
    fn record(&mut self, events: &[AuditEvent]) -> Result<(), String> {
        self.trail.append(events)
    }

    /// A live process does not restart inside itself: the next life is a new process,
    /// which calls [`LiveAuditTrail::resume`].
    fn restart(&mut self) -> Result<(), String> {
        Ok(())
    }
}
