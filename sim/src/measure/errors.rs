//! The errors table: attempts the provider did not answer with success, by status and
//! message (`429 rate_limit_exceeded`, `503 overloaded`, `dropped`), with when the first
//! and the last of each arrived.

use stampede_reports::ErrorCount;

/// Error kinds seen so far. A run meets a handful, so a list searched in order keeps the
/// per-attempt cost at a few comparisons and no allocation.
#[derive(Debug, Default)]
pub(crate) struct Errors {
    kinds: Vec<ErrorCount>,
}

impl Errors {
    /// An unsuccessful attempt arrived at `at_ms` ending as `status` (the journal's
    /// outcome) with the provider's error code `message` (empty without one).
    pub(crate) fn record(&mut self, status: &str, message: &str, at_ms: u64) {
        match self
            .kinds
            .iter_mut()
            .find(|k| k.status == status && k.message == message)
        {
            Some(k) => {
                k.count += 1;
                k.first_ms = k.first_ms.min(at_ms);
                k.last_ms = k.last_ms.max(at_ms);
            }
            None => self.kinds.push(ErrorCount {
                status: status.to_string(),
                message: message.to_string(),
                count: 1,
                first_ms: at_ms,
                last_ms: at_ms,
            }),
        }
    }

    /// The table: most frequent first, then by status and message, so the order is the
    /// same for the same run.
    pub(crate) fn finish(mut self) -> Vec<ErrorCount> {
        self.kinds.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.status.cmp(&b.status))
                .then_with(|| a.message.cmp(&b.message))
        });
        self.kinds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_counted_by_status_and_message_with_first_and_last_seen() {
        let mut e = Errors::default();
        e.record("503", "overloaded", 5_000);
        e.record("429", "rate_limit_exceeded", 1_000);
        e.record("429", "rate_limit_exceeded", 9_000);
        e.record("dropped", "", 7_000);
        e.record("429", "insufficient_quota", 8_000);
        let table = e.finish();
        let rows: Vec<(&str, &str, u64, u64, u64)> = table
            .iter()
            .map(|k| {
                (
                    k.status.as_str(),
                    k.message.as_str(),
                    k.count,
                    k.first_ms,
                    k.last_ms,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("429", "rate_limit_exceeded", 2, 1_000, 9_000),
                ("429", "insufficient_quota", 1, 8_000, 8_000),
                ("503", "overloaded", 1, 5_000, 5_000),
                ("dropped", "", 1, 7_000, 7_000),
            ]
        );
    }
}
