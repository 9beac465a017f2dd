//! Retry-After violations, counted from the journal by when the client could know.
//!
//! The provider flags an attempt that arrives while a Retry-After it issued on that scope
//! is running, even when the attempt left the client before the 429 reached it (two
//! attempts in flight together). Here a Retry-After binds the scope from the moment its
//! answer was delivered (`done_ms`) until `at_ms + retry_after_ms`; only an attempt arriving
//! inside that span is a violation.

use std::collections::BTreeMap;

use stampede_provider::model::JournalEntry;

/// Running Retry-After spans per scope.
#[derive(Debug, Default)]
pub struct RetryAfterSpans {
    /// Scope id -> (delivered at, binding until), ms.
    spans: BTreeMap<String, Vec<(u64, u64)>>,
}

impl RetryAfterSpans {
    /// Checks one attempt (entries come in arrival order) and records the Retry-After its
    /// answer gives. Returns whether the attempt violated a Retry-After already delivered.
    pub fn observe(&mut self, e: &JournalEntry) -> bool {
        let scope = e.scope.clone().unwrap_or_default();
        let spans = self.spans.entry(scope).or_default();
        spans.retain(|&(_, until)| until > e.at_ms);
        let violation = spans
            .iter()
            .any(|&(from, until)| from <= e.at_ms && e.at_ms < until);
        if let Some(ra) = e.retry_after_ms.filter(|&ra| ra > 0) {
            let delivered = if e.done_ms == 0 { e.at_ms } else { e.done_ms };
            spans.push((delivered, e.at_ms + ra));
        }
        violation
    }
}
