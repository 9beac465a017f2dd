//! A live run that hits its duration cap with work in flight reports that work as what it
//! is (unfinished, sent or not), never as failed, and lists it in unfinished.csv with its
//! next safe action, so nobody re-runs blind what may have executed.

use std::path::Path;

use stampede_core::TerminalStatus;
use stampede_sim::live_driver::{run_live, LiveOptions};
use stampede_sim::run::RunOptions;
use stampede_sim::scenario::{self, parse_override};

#[test]
fn work_open_at_the_cap_is_unfinished_never_failed() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live/drops.toml");
    // Cut the run while writes and hangs are still out.
    let cut = parse_override("duration=6s").unwrap();
    let scenario = scenario::load(&path, None, &[cut]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        out_dir: Some(dir.path().to_path_buf()),
        ..RunOptions::default()
    };
    let live = LiveOptions {
        time_scale: Some(10.0),
        ..LiveOptions::default()
    };
    let (outcome, run) = run_live(&scenario, &live, &opts).expect("live run");
    let s = &outcome.report.summary;
    let failed_terminals = run
        .terminals
        .iter()
        .filter(|t| t.status == TerminalStatus::Failed)
        .count() as u64;
    assert_eq!(
        s.failed, failed_terminals,
        "failed counts only actions that failed"
    );
    assert!(
        s.unfinished > 0,
        "the cap cut nothing: the test proves little ({s:?})"
    );
    assert_eq!(
        s.completed + s.failed + s.cancelled + s.escalations + s.unfinished,
        s.logical_requests,
        "every request is in exactly one bucket"
    );
    let mut rows = csv::Reader::from_path(dir.path().join("unfinished.csv")).unwrap();
    let rows: Vec<std::collections::HashMap<String, String>> =
        rows.deserialize().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len() as u64, s.unfinished);
    for r in &rows {
        let expected = if r["sent"] == "true" {
            "look_up_before_retrying"
        } else {
            "submit_again"
        };
        assert_eq!(r["next_safe_action"], expected, "{r:?}");
    }
    assert_eq!(
        rows.iter().filter(|r| r["sent"] == "true").count() as u64,
        s.unfinished_sent
    );
}
