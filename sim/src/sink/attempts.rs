//! Where attempts.csv rows go as the provider's journal drains: one row per attempt as the
//! provider saw it, streamed, never held for the whole run.

use std::borrow::Cow;
use std::fs::File;
use std::path::PathBuf;

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

    /// Whether rows are wanted at all: `false` lets the loop skip building them. A sink
    /// answers the same for its whole life: the virtual wire asks once, when the run
    /// starts, and the run's case files assume it too.
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

/// attempts.csv for a run that can be refused after it starts (a live run whose provider is
/// not there, or whose ledger cannot be opened): the file is created at the first row, so
/// such a run leaves an earlier run's attempts.csv in the directory whole, and
/// [`AttemptsFile::close`] keeps the rows of a run that failed part way.
#[derive(Debug)]
pub struct AttemptsFile {
    path: PathBuf,
    csv: Option<AttemptsCsv<File>>,
}

impl AttemptsFile {
    /// attempts.csv at `path`, not created yet.
    pub fn new(path: PathBuf) -> Self {
        AttemptsFile { path, csv: None }
    }

    /// Writes out what the run gave: for a run that `ended`, the whole file (its header
    /// alone when no attempt was made); for one that failed, the rows it made before it
    /// failed, and nothing at all (the file untouched) when it made none.
    pub fn close(self, ended: bool) -> std::io::Result<()> {
        match self.csv {
            Some(csv) => csv.finish().map(drop),
            None if ended => AttemptsCsv::create(&self.path)?.finish().map(drop),
            None => Ok(()),
        }
    }
}

impl AttemptSink for AttemptsFile {
    fn attempt(&mut self, row: &AttemptRow<'_>) -> Result<(), String> {
        let csv = match &mut self.csv {
            Some(csv) => csv,
            None => {
                let created = AttemptsCsv::create(&self.path)
                    .map_err(|e| format!("cannot write {}: {e}", self.path.display()))?;
                self.csv.insert(created)
            }
        };
        csv.attempt(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_row() -> AttemptRow<'static> {
        AttemptRow {
            seq: 1,
            at_ms: 0,
            done_ms: 40,
            tenant: Cow::Borrowed("t"),
            scope: Cow::Borrowed("acct"),
            route: Cow::Borrowed("POST /v1/chat/completions"),
            action: 1,
            attempt_no: 1,
            outcome: Cow::Borrowed("200"),
            error_code: Cow::Borrowed(""),
            committed: true,
            retry_after_violation: false,
            idempotency_key: Cow::Borrowed(""),
            logical: 1,
            logical_attempt: 1,
            duplicate: false,
            scope_wait_violation: false,
        }
    }

    /// An earlier run's file is left whole by a run that failed before its first attempt,
    /// replaced by one that ended (its header alone when it made no attempt), and by the
    /// rows of one that failed part way.
    #[test]
    fn the_file_is_written_at_the_first_row_and_kept_by_a_failed_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("attempts.csv");
        let read = || std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, "an earlier run's rows\n").unwrap();

        AttemptsFile::new(path.clone()).close(false).unwrap();
        assert_eq!(
            read(),
            "an earlier run's rows\n",
            "refused before any attempt"
        );

        AttemptsFile::new(path.clone()).close(true).unwrap();
        assert_eq!(
            read().lines().collect::<Vec<_>>(),
            [stampede_reports::attempts_csv::HEADER]
        );

        std::fs::write(&path, "an earlier run's rows\n").unwrap();
        let mut failed = AttemptsFile::new(path.clone());
        failed.attempt(&a_row()).unwrap();
        failed.close(false).unwrap();
        let text = read();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0], stampede_reports::attempts_csv::HEADER);
        assert!(lines[1].starts_with("1,0,40,t,acct,"), "{text}");
    }
}
