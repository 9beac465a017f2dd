//! The errors table: attempts the provider did not answer with success, by status and
//! message (`429 rate_limit_exceeded`, `503 overloaded`, `dropped`), with when the first
//! and the last of each arrived.

use stampede_reports::ErrorCount;

use super::labels::ByStatic;

/// Error kinds seen so far. A run meets a handful, so a list searched in order keeps the
/// per-attempt cost at a few comparisons and no allocation.
#[derive(Debug, Default)]
pub(crate) struct Errors {
    kinds: Vec<ErrorCount>,
    /// The place in `kinds` of each `(status, message)` seen as static labels (see
    /// `labels`): found without comparing the texts.
    by_static: ByStatic<(&'static str, &'static str), usize>,
}

impl Errors {
    /// An unsuccessful attempt arrived at `at_ms` ending as `status` (the journal's
    /// outcome) with the provider's error code `message` (empty without one).
    /// `statics` are the two as static labels, when the provider wrote them from its
    /// tables.
    #[cfg(test)]
    pub(crate) fn record(
        &mut self,
        status: &str,
        message: &str,
        statics: Option<(&'static str, &'static str)>,
        at_ms: u64,
    ) {
        let at = self.place(status, message, statics);
        self.count_at(at, at_ms);
    }

    /// The place in the table of `(status, message)` (as [`Errors::record`] takes them),
    /// made with no count when new: hand it to [`Errors::count_at`].
    pub(crate) fn place(
        &mut self,
        status: &str,
        message: &str,
        statics: Option<(&'static str, &'static str)>,
    ) -> usize {
        let kinds = &mut self.kinds;
        match statics {
            Some(key) => *self
                .by_static
                .get_or_insert_with(key, || place(kinds, status, message)),
            None => place(kinds, status, message),
        }
    }

    /// An unsuccessful attempt arrived at `at_ms` of the kind at place `at` (from
    /// [`Errors::place`]).
    #[inline]
    pub(crate) fn count_at(&mut self, at: usize, at_ms: u64) {
        self.count_n_at(at, 1, (at_ms, at_ms));
    }

    /// `n` unsuccessful attempts of the kind at place `at`, the earliest arrived at
    /// `first_ms` and the latest at `last_ms`.
    #[inline]
    pub(crate) fn count_n_at(&mut self, at: usize, n: u64, (first_ms, last_ms): (u64, u64)) {
        let k = &mut self.kinds[at];
        k.count += n;
        k.first_ms = k.first_ms.min(first_ms);
        k.last_ms = k.last_ms.max(last_ms);
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

/// The place of `(status, message)` in `kinds`, found by text, pushed with no count when
/// new.
fn place(kinds: &mut Vec<ErrorCount>, status: &str, message: &str) -> usize {
    if let Some(at) = kinds
        .iter()
        .position(|k| k.status == status && k.message == message)
    {
        return at;
    }
    kinds.push(ErrorCount {
        status: status.to_string(),
        message: message.to_string(),
        count: 0,
        first_ms: u64::MAX,
        last_ms: 0,
    });
    kinds.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_counted_by_status_and_message_with_first_and_last_seen() {
        let mut e = Errors::default();
        // One kind is found by its static labels or by its text alike.
        let limited: (&'static str, &'static str) = ("429", "rate_limit_exceeded");
        e.record("503", "overloaded", None, 5_000);
        e.record(limited.0, limited.1, Some(limited), 1_000);
        e.record("429", "rate_limit_exceeded", None, 9_000);
        e.record(limited.0, limited.1, Some(limited), 4_000);
        e.record("dropped", "", Some(("dropped", "")), 7_000);
        e.record("429", "insufficient_quota", None, 8_000);
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
                ("429", "rate_limit_exceeded", 3, 1_000, 9_000),
                ("429", "insufficient_quota", 1, 8_000, 8_000),
                ("503", "overloaded", 1, 5_000, 5_000),
                ("dropped", "", 1, 7_000, 7_000),
            ]
        );
    }
}
