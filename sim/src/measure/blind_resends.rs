//! Blind re-sends of uncertain writes, counted from the provider's journal alone.
//!
//! A record create (`POST /v1/records`) is *blindly re-sent* when it reaches the provider
//! again for a logical action whose earlier create either committed or left the client
//! unable to know whether it did (a hang past the timeout, a connection dropped after the
//! write, a 500/502/504), and no reconciliation look-up for that action (`GET /v1/records...`)
//! was answered in between while the provider held no record of it (a look-up showing
//! absence). A 429 or 503 refusal, or a drop before the write, executed nothing, so it leaves
//! the action as certain or uncertain as it was.
//!
//! Writes and look-ups are tied together by the provider's identity (the journal's
//! `logical`), never by what the client says about itself. Memory holds one small entry per
//! record write seen.
//!
//! Counted per create, not per action: two blind re-sends of one action count two. An
//! idempotency key makes a blind re-send harmless to the side effect, but it is still blind:
//! the point of the figure is the client's discipline, which keys must not hide.

use std::collections::BTreeMap;

use super::decided::Decided;
#[cfg(test)]
use stampede_provider::model::JournalEntry;

/// What the journal has shown so far about one write action.
#[derive(Debug, Clone, Copy, Default)]
struct WriteFate {
    /// Some create of this action committed a record.
    committed: bool,
    /// The client cannot know from its answers whether the action executed, and no look-up
    /// since then showed it absent.
    uncertain: bool,
}

/// Counts blind re-sends as journal entries stream by (in arrival order).
#[derive(Debug, Clone, Default)]
pub struct BlindResends {
    /// Each write's fate, by the provider's logical request id (the journal's `logical`).
    by_logical: BTreeMap<u64, WriteFate>,
    count: u64,
}

impl BlindResends {
    /// Blind re-sends seen so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Looks at one journal entry. Returns whether it was a blind re-send.
    pub fn observe(&mut self, e: &Decided<'_>) -> bool {
        let unsure = e.committed() || leaves_client_unsure(e);
        self.observe_as(e, (is_create(e), is_lookup(e), unsure))
    }

    /// [`BlindResends::observe`] with what `e`'s labels decide worked out before:
    /// `(is_create(e), is_lookup(e), e.committed() || leaves_client_unsure(e))`.
    // Out of line: the measurement calls it for creates and look-ups only, which a storm of
    // completions never makes.
    #[inline(never)]
    pub(crate) fn observe_as(
        &mut self,
        e: &Decided<'_>,
        (create, lookup, unsure): (bool, bool, bool),
    ) -> bool {
        // The logical request as the provider identified it; a look-up carries the write
        // it asked about (0 when the provider knows no such write).
        let logical = e.logical();
        if logical == 0 {
            return false;
        }
        if create {
            let fate = self.by_logical.entry(logical).or_default();
            let blind = fate.uncertain;
            self.count += u64::from(blind);
            fate.committed |= e.committed();
            fate.uncertain |= unsure;
            return blind;
        }
        if lookup {
            if let Some(fate) = self.by_logical.get_mut(&logical) {
                // A look-up answered while no record exists shows the action absent: a
                // re-send after it is the safe, reconciled one.
                let answered = matches!(e.status(), Some(200 | 404));
                if answered && !fate.committed {
                    fate.uncertain = false;
                }
            }
        }
        false
    }
}

/// Whether `e` is a record create (`POST /v1/records`).
pub(crate) fn is_create(e: &Decided<'_>) -> bool {
    e.method() == "POST" && e.route() == "/v1/records"
}

/// Whether `e` is a record look-up (`GET /v1/records...`): a reconciliation.
pub(crate) fn is_lookup(e: &Decided<'_>) -> bool {
    e.method() == "GET" && e.route().starts_with("/v1/records")
}

/// Whether the answer to a create leaves the client unable to tell if it executed.
pub(crate) fn leaves_client_unsure(e: &Decided<'_>) -> bool {
    match e.outcome() {
        "hang" => true,
        "dropped" => e.committed(),
        _ => matches!(e.status(), Some(500 | 502 | 504)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(method: &str, route: &str, outcome: &str, committed: bool) -> JournalEntry {
        let status = outcome.parse().ok();
        // Every field the test does not set keeps its default: nothing the client claims
        // about itself is written, since no figure reads it.
        JournalEntry {
            route: route.to_string().into(),
            method: method.to_string().into(),
            status,
            outcome: outcome.to_string().into(),
            committed,
            logical: 7,
            logical_attempt: if method == "GET" { 0 } else { 1 },
            ..JournalEntry::default()
        }
    }

    fn create(outcome: &str, committed: bool) -> JournalEntry {
        entry("POST", "/v1/records", outcome, committed)
    }

    fn lookup(outcome: &str) -> JournalEntry {
        entry("GET", "/v1/records", outcome, false)
    }

    #[test]
    fn a_resend_after_a_committed_drop_without_a_lookup_is_blind() {
        let mut b = BlindResends::default();
        assert!(!b.observe(&Decided::from(&create("dropped", true))));
        assert!(b.observe(&Decided::from(&create("200", true))));
        assert_eq!(b.count(), 1);
    }

    #[test]
    fn a_resend_after_a_lookup_showing_absence_is_not_blind() {
        let mut b = BlindResends::default();
        b.observe(&Decided::from(&create("hang", false)));
        assert!(!b.observe(&Decided::from(&lookup("200"))));
        assert!(!b.observe(&Decided::from(&create("200", true))));
        assert_eq!(b.count(), 0);
    }

    #[test]
    fn a_lookup_that_finds_the_record_does_not_license_a_resend() {
        let mut b = BlindResends::default();
        b.observe(&Decided::from(&create("hang", true)));
        b.observe(&Decided::from(&lookup("200")));
        assert!(b.observe(&Decided::from(&create("200", false))));
    }

    #[test]
    fn refusals_and_drops_before_the_write_leave_nothing_uncertain() {
        let mut b = BlindResends::default();
        b.observe(&Decided::from(&create("429", false)));
        b.observe(&Decided::from(&create("503", false)));
        b.observe(&Decided::from(&create("dropped", false)));
        assert!(!b.observe(&Decided::from(&create("200", true))));
        assert_eq!(b.count(), 0);
    }

    #[test]
    fn a_failed_lookup_does_not_clear_the_doubt() {
        let mut b = BlindResends::default();
        b.observe(&Decided::from(&create("502", false)));
        b.observe(&Decided::from(&lookup("429")));
        assert!(b.observe(&Decided::from(&create("200", true))));
    }
}
