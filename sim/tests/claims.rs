//! What the client says about itself changes no figure. Our own client sends `x-stampede-*`
//! headers naming its action and attempt numbers; the provider's journal keeps them as
//! claims, and the measurement (`stampede_sim::measure`) reads none of them: the provider's
//! own identity decides which attempts are one logical request and what was billed twice.
//! These tests set the claim fields from outside the measurement, through its public
//! interface only, and show that every figure comes out the same; the measurement's own
//! code never names those fields.

use stampede_reports::UnfinishedRow;
use stampede_sim::measure::Measurement;

use crate::journal;

use journal::{chat, commit, provider, sent_by};

#[test]
fn no_figure_reads_the_clients_claims_or_the_harness_numbering() {
    // The same attempts, once claiming nothing, once claiming wrong actions and attempt
    // numbers in headers and attributed to wrong numbers by the harness: every figure
    // comes out the same, because only the provider's journal decides them.
    let play = |claim: bool| {
        let mut m = provider();
        for (i, at) in [0u64, 10_000, 30_000, 60_100].into_iter().enumerate() {
            let mut r = chat();
            r.attempt_no = claim.then_some(90 + i as u32);
            r.action = claim.then_some(7_000 + i as u64);
            m.arrive(&r, at);
        }
        let mut measure = Measurement::new(1_000, 600_000);
        for e in &m.drain_journal() {
            measure.on_journal(e, None, &sent_by(0));
        }
        let mut summary = measure.finish(60_100).summary;
        // The one figure about claims: how often they disagree with the provider.
        let mismatches = std::mem::take(&mut summary.claim_mismatches);
        (serde_json::to_string(&summary).unwrap(), mismatches)
    };
    let (silent, none) = play(false);
    let (claiming, disagreements) = play(true);
    assert_eq!(silent, claiming);
    assert_eq!(none, 0);
    assert!(
        disagreements > 0,
        "wrong claims are counted as such, and only there"
    );
}

#[test]
fn the_clients_claims_do_not_make_two_requests_one() {
    let two_providers = || {
        let mut measure = Measurement::new(1_000, 600_000);
        measure.name_providers(&["a".to_string(), "b".to_string()]);
        measure
    };
    let mut measure = two_providers();
    let mut a = commit(None, "POST /v1/chat/completions 01");
    let mut b = commit(None, "POST /v1/chat/completions 02");
    // The same claimed action and attempt on both: still two payloads, two requests.
    (a.action, a.attempt_no) = (Some(7), Some(1));
    (b.action, b.attempt_no) = (Some(7), Some(1));
    measure.on_journal(&a, None, &sent_by(0));
    measure.on_journal(&b, None, &sent_by(1));
    assert_eq!(measure.finish(1_000).summary.cross_provider_duplicates, 0);
    // The count held at zero above is live: one payload committed at both providers is one
    // request twice.
    let mut measure = two_providers();
    let once = commit(None, "POST /v1/chat/completions 01");
    measure.on_journal(&once, None, &sent_by(0));
    measure.on_journal(&once, None, &sent_by(1));
    assert_eq!(measure.finish(1_000).summary.cross_provider_duplicates, 1);
}

#[test]
fn unfinished_rows_are_listed_by_the_harness_job_id_whatever_the_row_says() {
    let mut measure = Measurement::new(1_000, 600_000);
    // A row carrying some other number in its `action` (as a claim would) is listed
    // under the job id it was given, in job order.
    for (job, said) in [(9, 7_000), (2, 7_001), (5, 0)] {
        let row = UnfinishedRow {
            action: said,
            tenant: format!("t{job}"),
            ..UnfinishedRow::default()
        };
        measure.list_unfinished(job, row);
    }
    let rows = measure.finish(1_000).unfinished;
    let listed: Vec<(u64, &str)> = rows.iter().map(|r| (r.action, r.tenant.as_str())).collect();
    assert_eq!(listed, vec![(2, "t2"), (5, "t5"), (9, "t9")]);
}
