//! The allocation counts the README quotes (its block `<!-- figures:allocation-counts -->`),
//! counted here by a global allocator around the system one, from fresh runs of the naive
//! backlog under both presets, and compared byte for byte. They are counts of allocation
//! calls, the same on every run and machine (same seed, same allocations), which is why a
//! test can hold them where it could never hold a time. `cargo run --release -p
//! stampede-sim --example alloc_count` prints the same counts as a table.
//!
//! ```sh
//! STAMPEDE_BLESS=1 cargo test --test readme_allocations    # rewrite the block
//! ```

mod common;
#[path = "../sim/tests/support/counting_alloc.rs"]
mod counting_alloc;

use std::path::Path;

use common::thousands;
use counting_alloc::allocations_in;

use stampede_sim::run::{run_virtual, RunOptions};
use stampede_sim::scenario::{self, parse_override};

/// (allocations, logical requests, attempts, loop events) of one run of the backlog, the
/// run alone counted (not loading the scenario), as `alloc_count` counts it.
fn count(sets: &[&str]) -> (u64, u64, u64, u64) {
    let path = common::repo().join("scenarios/backlog-38k.toml");
    let sets: Vec<_> = sets
        .iter()
        .map(|s| parse_override(s).expect("override parses"))
        .collect();
    let scenario = scenario::load(&path, None, &sets).expect("shipped scenario loads");
    let mut outcome = None;
    let allocations =
        allocations_in(|| outcome = Some(run_virtual(&scenario, &RunOptions::default())));
    let outcome = outcome.expect("ran").expect("run plays");
    let s = &outcome.report.summary;
    (
        allocations,
        s.logical_requests,
        s.outbound_attempts,
        outcome.events,
    )
}

fn block() -> String {
    let (naive, logical, attempts, events) = count(&["client.preset=naive"]);
    let per = |a: u64, n: u64| a as f64 / n.max(1) as f64;
    let naive_line = format!(
        "backlog-38k under naive: {} allocations for {} logical requests, {} attempts and {} loop events: {:.1} per logical request, {:.1} per attempt, {:.2} per loop event;",
        thousands(naive),
        thousands(logical),
        thousands(attempts),
        thousands(events),
        per(naive, logical),
        per(naive, attempts),
        per(naive, events),
    );
    let (stampede, logical, _, events) = count(&[]);
    let stampede_line = format!(
        "under stampede: {} allocations, {:.1} per logical request, {:.2} per loop event.",
        thousands(stampede),
        per(stampede, logical),
        per(stampede, events),
    );
    // Indented: the block sits in a list item.
    format!("  {naive_line}\n  {stampede_line}")
}

#[test]
fn the_readme_quotes_the_allocation_counts_of_a_fresh_run() {
    let name = "allocation-counts";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md");
    let open = format!("<!-- figures:{name} -->\n");
    let close = format!("\n  <!-- /figures:{name} -->");
    let start = readme
        .find(&open)
        .unwrap_or_else(|| panic!("README.md has no block {open}"))
        + open.len();
    let end = start
        + readme[start..]
            .find(&close)
            .unwrap_or_else(|| panic!("README.md's block {name} is not closed"));
    let body = block();
    if std::env::var_os("STAMPEDE_BLESS").is_some() {
        let updated = format!("{}{body}{}", &readme[..start], &readme[end..]);
        std::fs::write(&path, updated).expect("write README.md");
        return;
    }
    assert_eq!(
        &readme[start..end],
        body,
        "README block `{name}` is stale; rerun with STAMPEDE_BLESS=1 cargo test --test \
         readme_allocations and review the diff"
    );
}
