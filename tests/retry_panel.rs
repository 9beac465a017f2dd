//! The page's panel of retries per 100 ms is drawn from what the run counted, not from the
//! `attempts.csv` it just wrote: both must say the same. A report rendered again from the
//! files alone (the panel read back from `attempts.csv`) gives the same `attempts.svg`.

use std::path::Path;

use stampede_reports::{render, RenderOptions};

use crate::common;

/// Retries per 100 ms as `attempts.csv` says: rows past their logical request's first.
fn bins_from_csv(path: &Path) -> Vec<u64> {
    let mut reader = csv::Reader::from_path(path).expect("attempts.csv opens");
    let headers = reader.headers().expect("a header row").clone();
    let col = |name: &str| headers.iter().position(|h| h == name).expect(name);
    let (at, ordinal) = (col("at_ms"), col("logical_attempt"));
    let mut bins = Vec::new();
    for row in reader.records() {
        let row = row.expect("a row");
        let logical_attempt: u32 = row[ordinal].parse().expect("a number");
        if logical_attempt > 1 {
            let i = (row[at].parse::<u64>().expect("a number") / 100) as usize;
            if i >= bins.len() {
                bins.resize(i + 1, 0);
            }
            bins[i] += 1;
        }
    }
    bins
}

#[test]
fn the_counted_retry_bins_are_the_ones_attempts_csv_holds() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = common::run_into(&common::shipped("amplification", None), dir.path());
    let counted = outcome
        .report
        .retries_per_100ms
        .clone()
        .expect("a virtual run counts its retries");
    let from_csv = bins_from_csv(&dir.path().join("attempts.csv"));
    assert!(
        counted.iter().sum::<u64>() > 100,
        "the scenario retries in waves"
    );
    assert_eq!(counted, from_csv);

    // Rendered from the counted bins (no attempts.csv beside the page), and from the files
    // alone (the panel read back from attempts.csv): the same panel.
    let counted_page = tempfile::tempdir().unwrap();
    render(
        counted_page.path(),
        &outcome.report,
        &RenderOptions::default(),
    )
    .expect("renders");
    let again = tempfile::tempdir().unwrap();
    std::fs::copy(
        dir.path().join("attempts.csv"),
        again.path().join("attempts.csv"),
    )
    .unwrap();
    let mut from_files = outcome.report.clone();
    from_files.retries_per_100ms = None;
    render(again.path(), &from_files, &RenderOptions::default()).expect("renders");
    let svg = |d: &Path| std::fs::read(d.join("attempts.svg")).expect("attempts.svg");
    assert_eq!(svg(counted_page.path()), svg(again.path()));
}
