//! Figures the measurement takes from the provider's journal as the provider decided them:
//! Retry-After violations are the provider's own flags, and a commit is a duplicate across
//! providers by the providers' identity of a request (its key, else its fingerprint).

use stampede_provider::model::JournalEntry;
use stampede_sim::measure::decided::Decided;
use stampede_sim::measure::providers::ProviderTally;
use stampede_sim::measure::{Measurement, SentBy};
use stampede_sim::sink::attempts::{self, Numbering};

use crate::journal;

use journal::{chat, commit, provider};

fn tally() -> ProviderTally {
    ProviderTally::new(&["a".to_string(), "b".to_string()])
}

#[test]
fn retry_after_violations_are_the_providers_own_flags() {
    let mut m = provider();
    m.arrive(&chat(), 0);
    // 429 decided at 10_000, answer left at 10_100: Retry-After 50 s binds to 60_100.
    m.arrive(&chat(), 10_000);
    m.arrive(&chat(), 10_050); // in flight before the answer left: no violation
    m.arrive(&chat(), 30_000); // too early
    m.arrive(&chat(), 60_050); // still too early, though the window reset
    m.arrive(&chat(), 60_100); // on time
    let mut measure = Measurement::new(1_000, 600_000);
    let journal = m.drain_journal();
    let flags: Vec<bool> = journal
        .iter()
        .map(|e| {
            measure.on_journal(e, None, &SentBy::default());
            attempts::with_row(e, None, "", Numbering::default(), |row| {
                row.retry_after_violation
            })
        })
        .collect();
    assert_eq!(flags, vec![false, false, false, true, true, false]);
    let measured = measure.finish(60_100);
    assert_eq!(measured.summary.retry_after_violations, 2);
    assert_eq!(
        measured.summary.retry_after_violations,
        m.stats().retry_after_violations,
        "the summary counts what the provider flagged"
    );
}

#[test]
fn one_identity_committed_at_two_providers_is_a_duplicate_at_the_second() {
    let mut t = tally();
    let e = commit(Some("stk_1"), "POST /v1/chat/completions 01");
    assert!(!t.observe(0, &Decided::from(&e)).duplicate);
    assert!(t.observe(1, &Decided::from(&e)).duplicate);
    // Without a key, the fingerprint is the identity.
    let f = commit(None, "POST /v1/chat/completions 02");
    assert!(!t.observe(0, &Decided::from(&f)).duplicate);
    assert!(t.observe(1, &Decided::from(&f)).duplicate);
}

#[test]
fn a_replay_or_a_providers_own_duplicate_is_not_counted_again() {
    let mut t = tally();
    let e = commit(Some("stk_1"), "x");
    t.observe(0, &Decided::from(&e));
    let replay = JournalEntry {
        replayed: true,
        committed: false,
        ..commit(Some("stk_1"), "x")
    };
    assert!(!t.observe(1, &Decided::from(&replay)).duplicate);
    let own = JournalEntry {
        duplicate: true,
        ..commit(Some("stk_1"), "x")
    };
    assert!(!t.observe(0, &Decided::from(&own)).duplicate);
}
