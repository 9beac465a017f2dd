//! The ledger of logical actions, behind a small trait so a durable store can replace the
//! in-memory one without the scheduler knowing.

use crate::id_band::IdBand;
use crate::stored_entry::StoredEntry;

use serde::{Deserialize, Serialize};

use crate::job::{Job, JobId};
use crate::operation_id::OperationId;
use crate::time::Millis;

/// Where a logical action stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionState {
    /// Accepted and persisted; nothing sent yet.
    Planned,
    /// An attempt may be on the wire.
    InFlight,
    /// Done (answered successfully, or found by a look-up). Terminal.
    Completed,
    /// A write that may have executed; must be looked up before anything is re-sent.
    ReconciliationRequired,
    /// Ended without happening (see the terminal's reason). Terminal.
    Failed,
    /// Handed to a person or another system (open circuit, look-up impossible). Terminal.
    Escalated,
    /// Its task was cancelled. Terminal.
    Cancelled,
}

impl ActionState {
    /// Whether the state is final: `completed`, `failed`, `escalated` or `cancelled`.
    /// `reconciliation_required` is not: a restore looks the action up again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Escalated | Self::Cancelled
        )
    }
}

/// What is persisted about one logical action: enough to resume after a crash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// The job as submitted, with its idempotency key filled in (persisted before the first
    /// send so every attempt, before or after a restart, reuses it).
    pub job: Job,
    /// Where the action stands.
    pub state: ActionState,
    /// Attempts made so far, including look-ups (budgets count across restarts).
    pub attempts: u32,
    /// Time spent waiting so far (ms).
    pub waited_ms: Millis,
    /// Provider operation id once known.
    pub operation_id: Option<OperationId>,
    /// When the state last changed (ms since run start).
    pub updated_at: Millis,
}

/// A ledger failed to read or write.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The store could not be read or written (disk full, permissions, I/O, a locked
    /// database). Nothing is ever sent unpersisted: at admission the job is refused, before
    /// a send the attempt is held back one backoff base and tried again, and any other
    /// failed write is counted in `Gauges::ledger_errors`. Fix the storage; the run goes on.
    #[error("ledger storage failed: {0}")]
    Storage(String),
    /// The store holds something that cannot be read back as entries (a damaged file, a
    /// foreign schema). Restoring from it is refused: repair or move the file aside.
    #[error("ledger is corrupt: {0}")]
    Corrupt(String),
}

/// Stores logical actions. `put` must be durable (for a durable ledger) when it returns:
/// the scheduler calls it before the first send of an action and at every state change.
pub trait Ledger {
    /// Inserts or replaces the entry for `entry.job.id`.
    fn put(&mut self, entry: &LedgerEntry) -> Result<(), LedgerError>;
    /// Every entry, ordered by job id.
    fn entries(&self) -> Result<Vec<LedgerEntry>, LedgerError>;

    /// Records a state change of an action already `put`, whose `job` part is unchanged
    /// since (only state, attempts, wait, operation id and time moved). Same durability as
    /// `put`; a ledger may override it to skip rewriting the job.
    fn put_progress(&mut self, entry: &LedgerEntry) -> Result<(), LedgerError> {
        self.put(entry)
    }

    /// Makes every `put` so far durable. A ledger that writes through does nothing; one
    /// that commits in groups (many puts, one fsync) writes its pending puts here. The
    /// driver of a group-committing ledger calls it (through `Scheduler::flush_ledger`)
    /// before any `Send` it drained leaves, so an action is still durable before its
    /// first send.
    fn flush(&mut self) -> Result<(), LedgerError> {
        Ok(())
    }

    /// A hint: the entry of action `id` will be written soon (its next send is next in
    /// line). A ledger that holds entries in memory may ask the CPU to bring it into cache;
    /// it must change nothing. Does nothing by default.
    fn prefetch(&self, _id: JobId) {}

    /// Whether [`Ledger::entries`] gives back what was written: `false` for a ledger that
    /// keeps nothing ([`InMemoryLedger::keeping_nothing`]), whose driver learns where its
    /// unfinished actions stand from the scheduler's own records instead
    /// (`Scheduler::live_entries`). Every ledger that stores keeps the default, `true`.
    fn keeps_entries(&self) -> bool {
        true
    }
}

/// The in-memory ledger: what a process without persistence has.
#[derive(Debug, Default, Clone)]
pub struct InMemoryLedger {
    /// Entries stored compact (shared names, short texts inline, no id: a put copies no
    /// strings to the heap) by job id, each found by its place in a band of ids (`id_band`: an admission
    /// is a push, a write a subtraction and a load, no index); `entries()` reads them in
    /// order of id, so no other order leaks. Only the ledgers that keep entries hold any (runs that plan a crash,
    /// small; a long virtual run keeps nothing), so the band's ring may double.
    stored: IdBand<StoredEntry>,
    /// Drop entries once they are terminal, so long runs do not grow memory with the total
    /// number of requests (only live actions and those left `reconciliation_required` stay).
    forget_terminal: bool,
    /// Keep nothing at all (see [`InMemoryLedger::keeping_nothing`]).
    keep_nothing: bool,
}

impl InMemoryLedger {
    /// An empty ledger that keeps every entry, terminal ones included.
    pub fn new() -> Self {
        Self::default()
    }

    /// A ledger that forgets terminal entries (for long simulated runs): memory follows the
    /// number of live actions, not the total submitted.
    pub fn forgetting_terminal() -> Self {
        Self {
            forget_terminal: true,
            ..Self::default()
        }
    }

    /// A ledger that keeps nothing: every write is accepted and dropped, and `entries()` is
    /// empty. For a process that is never restored from its ledger (a virtual run that plans
    /// no crash): the core still writes ahead of every send, as the design requires, but
    /// no reader exists, and storing each write was a sixth of a million-request run. The
    /// process's own records say where its live actions stand (`Scheduler::live_entries`).
    pub fn keeping_nothing() -> Self {
        Self {
            keep_nothing: true,
            ..Self::default()
        }
    }

    /// The entry for one job, if any (a copy).
    pub fn get(&self, id: JobId) -> Option<LedgerEntry> {
        self.stored(id).map(|stored| stored.to_entry(id))
    }

    /// Number of entries (actions).
    pub fn len(&self) -> usize {
        self.stored.len()
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.stored.is_empty()
    }

    fn stored(&self, id: JobId) -> Option<&StoredEntry> {
        self.stored.get(&id)
    }

    fn stored_mut(&mut self, id: JobId) -> Option<&mut StoredEntry> {
        self.stored.get_mut(&id)
    }

    fn remove(&mut self, id: JobId) {
        // Dropped in place: moving the entry out only to drop it was a copy per terminal.
        self.stored.delete(&id);
    }
}

impl Ledger for InMemoryLedger {
    fn put(&mut self, entry: &LedgerEntry) -> Result<(), LedgerError> {
        if self.keep_nothing {
            return Ok(());
        }
        let id = entry.job.id;
        if self.forget_terminal && entry.state.is_terminal() {
            self.remove(id);
            return Ok(());
        }
        match self.stored.get_mut(&id) {
            // A state change of a known action: update in place instead of copying the job.
            Some(known) if known.holds_job(&entry.job) => known.set_progress(entry),
            Some(other) => *other = StoredEntry::new(entry),
            // A new action (every admission): stored without searching for it again, its
            // key written where it lies (see `StoredEntry::without_key`).
            None => self
                .stored
                .insert_new(id, || StoredEntry::without_key(entry))
                .set_key(&entry.job),
        }
        Ok(())
    }

    fn entries(&self) -> Result<Vec<LedgerEntry>, LedgerError> {
        // The band gives its ids in id order (`IdBand::ids` sorts the ids alone), so the
        // entries are read out in order and never sorted themselves.
        Ok(self
            .stored
            .ids()
            .into_iter()
            .map(|id| self.stored[&id].to_entry(id))
            .collect())
    }

    fn prefetch(&self, id: JobId) {
        self.stored.prefetch(&id);
    }

    /// `false` only for [`InMemoryLedger::keeping_nothing`].
    fn keeps_entries(&self) -> bool {
        !self.keep_nothing
    }

    // Inlined up to the ledger that keeps nothing (a virtual run's, written at every send
    // and terminal): its write is one check where it is made, not a call. A terminal of a
    // ledger that forgets terminal entries goes straight to the slab's removal from where
    // it is written, not through `put_progress_kept` first (a call that saved and restored
    // registers around the removal's own).
    #[inline]
    fn put_progress(&mut self, entry: &LedgerEntry) -> Result<(), LedgerError> {
        if self.keep_nothing {
            return Ok(());
        }
        if self.forget_terminal && entry.state.is_terminal() {
            // Straight to the removal `put` would make, without first finding the entry.
            self.remove(entry.job.id);
            return Ok(());
        }
        self.put_progress_kept(entry)
    }
}

impl InMemoryLedger {
    /// [`Ledger::put_progress`] of a ledger that keeps entries, but for a terminal one that
    /// forgets them (removed where `put_progress` is inlined).
    #[inline(never)]
    fn put_progress_kept(&mut self, entry: &LedgerEntry) -> Result<(), LedgerError> {
        match self.stored_mut(entry.job.id) {
            Some(known) => {
                known.set_progress(entry);
                Ok(())
            }
            None => self.put(entry),
        }
    }
}
