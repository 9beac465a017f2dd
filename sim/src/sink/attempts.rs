//! Where attempts.csv rows go as the provider's journal drains: one row per attempt as the
//! provider saw it, streamed, never held for the whole run.

use stampede_reports::AttemptRow;

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

impl<W: std::io::Write> AttemptSink for csv::Writer<W> {
    fn attempt(&mut self, row: &AttemptRow<'_>) -> Result<(), String> {
        self.serialize(row)
            .map_err(|e| format!("writing attempts.csv: {e}"))
    }
}
