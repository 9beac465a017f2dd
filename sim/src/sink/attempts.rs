//! Where attempts.csv rows go as the provider's journal drains: one row per attempt as the
//! provider saw it, streamed, never held for the whole run.

use std::borrow::Cow;

use stampede_core::IdempotencyKey;
use stampede_provider::model::JournalEntry;
use stampede_reports::{AttemptRow, AttemptsCsv};

/// The harness's own numbering of an attempt: the action it sent it for and the attempt's
/// 1-based number as the core counted it (0 when it cannot know, as for a `--client`
/// process). It goes to attempts.csv's `action` and `attempt_no` columns and nowhere else:
/// no figure reads it (the provider's journal decides which attempts are one request).
#[derive(Debug, Clone, Copy, Default)]
pub struct Numbering {
    /// The logical action's id.
    pub action: u64,
    /// The attempt's number within its action.
    pub attempt_no: u32,
}

/// Calls `f` with journal entry `e`'s attempts.csv row, sent for `tenant` with the harness's
/// numbering `n`; `client_done_ms` fills the end of a hang. The row's texts borrow from `e`,
/// and its idempotency key's text is rendered on the stack for it (a key is held as a
/// value, not as text).
pub fn with_row<R>(
    e: &JournalEntry,
    client_done_ms: Option<u64>,
    tenant: &str,
    n: Numbering,
    f: impl FnOnce(&AttemptRow<'_>) -> R,
) -> R {
    let key = e.idempotency_key.as_ref().map(IdempotencyKey::text);
    let done_ms = if e.done_ms == 0 {
        client_done_ms.unwrap_or(e.at_ms)
    } else {
        e.done_ms
    };
    f(&AttemptRow {
        seq: e.seq,
        at_ms: e.at_ms,
        done_ms,
        tenant: Cow::Borrowed(tenant),
        scope: Cow::Borrowed(e.scope.as_deref().unwrap_or_default()),
        route: Cow::Borrowed(&*e.route),
        action: n.action,
        attempt_no: n.attempt_no,
        outcome: Cow::Borrowed(&*e.outcome),
        error_code: Cow::Borrowed(e.error_code.as_deref().unwrap_or_default()),
        committed: e.committed,
        retry_after_violation: e.retry_after_violation,
        idempotency_key: Cow::Borrowed(key.as_deref().unwrap_or_default()),
        logical: e.logical,
        logical_attempt: e.logical_attempt,
        duplicate: e.duplicate,
        scope_wait_violation: e.scope_wait_violation,
    })
}

/// Hands `e`'s row to `sink`, built only when the sink keeps rows (a run without
/// attempts.csv would build a row per attempt to throw it away).
pub fn write(
    sink: &mut dyn AttemptSink,
    e: &JournalEntry,
    client_done_ms: Option<u64>,
    tenant: &str,
    n: Numbering,
) -> Result<(), String> {
    if sink.wants_rows() {
        with_row(e, client_done_ms, tenant, n, |row| sink.attempt(row))?;
    }
    Ok(())
}

/// Where attempts.csv rows go as the journal drains.
pub trait AttemptSink {
    /// Takes one attempts.csv row; an `Err` says why it could not be written.
    fn attempt(&mut self, row: &AttemptRow<'_>) -> Result<(), String>;

    /// Whether rows are wanted at all: `false` lets the loop skip building them.
    fn wants_rows(&self) -> bool {
        true
    }
}

/// Discards rows (benchmarks).
pub struct NoAttempts;

impl AttemptSink for NoAttempts {
    fn attempt(&mut self, _row: &AttemptRow<'_>) -> Result<(), String> {
        Ok(())
    }

    fn wants_rows(&self) -> bool {
        false
    }
}

impl<W: std::io::Write> AttemptSink for AttemptsCsv<W> {
    fn attempt(&mut self, row: &AttemptRow<'_>) -> Result<(), String> {
        self.write(row)
            .map_err(|e| format!("writing attempts.csv: {e}"))
    }
}
