//! Crash-and-restore runs of the virtual driver, end to end: the shipped
//! `scenarios/restarts.toml` holds its expectations, a client without reconciliation is
//! caught re-sending blindly, and a crash at each named point of a single uncertain write is
//! followed by a look-up with the write's original key and never by a second create.

use std::path::Path;

use stampede_reports::AttemptRow;
use stampede_sim::run::{run_virtual, RunOptions};
use stampede_sim::scenario::{self, parse_override, CrashPoint};
use stampede_sim::sink::AttemptSink;
use stampede_sim::virtual_driver;

#[derive(Default)]
struct Journal(Vec<AttemptRow<'static>>);

impl AttemptSink for Journal {
    fn attempt(&mut self, row: &AttemptRow<'_>) -> Result<(), String> {
        self.0.push(row.clone().into_owned());
        Ok(())
    }
}

fn shipped() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/restarts.toml"
    ))
}

#[test]
fn the_restarts_scenario_passes_and_crashes_at_every_point() {
    let scenario = scenario::load(shipped(), None, &[]).expect("restarts.toml loads");
    let points: Vec<Option<CrashPoint>> = scenario
        .crashes
        .iter()
        .map(|c| match c.trigger {
            scenario::CrashTrigger::Nth { point, .. }
            | scenario::CrashTrigger::Action { point, .. } => Some(point),
            scenario::CrashTrigger::At(_) => None,
        })
        .collect();
    for point in CrashPoint::ALL {
        assert!(points.contains(&Some(point)), "no crash at {point}");
    }
    let dir = tempfile::tempdir().unwrap();
    let outcome = run_virtual(
        &scenario,
        &RunOptions {
            out_dir: Some(dir.path().to_path_buf()),
            ..RunOptions::default()
        },
    )
    .expect("the run plays");
    let s = &outcome.report.summary;
    assert!(outcome.passed(), "{:?}", s.expectations);
    assert_eq!(s.crashes, scenario.crashes.len() as u64);
    // Every crash is a window of the report (shaded on every time plot and listed in the
    // page's faults table, as the provider's faults are): from the crash to the restart.
    let downs: Vec<_> = outcome
        .report
        .fault_windows
        .iter()
        .filter(|w| w.what.contains("crashed"))
        .collect();
    assert_eq!(downs.len() as u64, s.crashes);
    let mut delays: Vec<u64> = downs
        .iter()
        .map(|w| w.until_ms.expect("a restart") - w.from_ms)
        .collect();
    let mut planned: Vec<u64> = scenario
        .crashes
        .iter()
        .map(|c| c.restart_after_ms)
        .collect();
    delays.sort_unstable();
    planned.sort_unstable();
    assert_eq!(delays, planned);
    assert_eq!((s.duplicate_writes, s.blind_resends), (0, 0));
    // LLM calls that may have executed when the runner died are retried by design, and the
    // provider bills them again: counted, never hidden.
    assert_eq!(s.duplicates, s.duplicate_completions);
    // The audit trail of the crashed and restored runner is one whole chain.
    let report = stampede_durable::verify(dir.path().join("audit.jsonl")).unwrap();
    assert!(report.is_whole(), "{report}");
    // The figures (summary.md's table, the page's) name the crashes.
    assert_eq!(
        stampede_reports::figure(s, "crashes"),
        Some(s.crashes as f64)
    );
}

/// The console names a run's crashes (it had said nothing of them); a run without any
/// prints no such line.
#[test]
fn the_console_names_the_runners_crashes_and_only_when_there_were_some() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::common::stampede(&[
        "run",
        "scenarios/restarts.toml",
        "--no-render",
        "--out",
        crate::common::a_str(dir.path()),
    ]);
    let console = crate::common::text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{console}");
    let line = console
        .lines()
        .find(|l| l.trim_start().starts_with("runner crashes"))
        .unwrap_or_else(|| panic!("no crash line: {console}"));
    assert!(line.trim_end().ends_with(" 5"), "{line}");
    let quiet = crate::common::stampede(&["run", "scenarios/quickstart.toml", "--no-render"]);
    assert!(!crate::common::text(&quiet.stdout).contains("runner crashes"));
}

#[test]
fn a_client_without_reconciliation_is_caught_resending_blindly() {
    let naive = parse_override("client.preset=naive").unwrap();
    let scenario = scenario::load(shipped(), None, &[naive]).unwrap();
    let run = virtual_driver::run(&scenario, &mut Journal::default()).unwrap();
    assert!(
        run.measured.summary.blind_resends > 0,
        "{:?}",
        run.measured.summary
    );
}

/// One uncertain write, a crash at `point` on its first attempt; the provider commits it
/// (the answer, when one is sent, is a plain 200).
fn single_write(point: CrashPoint) -> String {
    format!(
        "name = \"one-write\"\nseed = 3\nduration = \"5m\"\n\
         [[provider.scopes]]\nid = \"account:acme\"\nrpm = 600\n\
         [[provider.credentials]]\nkey = \"sk-acme\"\nscope = \"account:acme\"\n\
         [[workload]]\ntenant = \"acme\"\ncredential = \"sk-acme\"\nclass = \"uncertain_write\"\ncount = 1\n\
         [[crashes]]\npoint = \"{point}\"\nnth = 1\nrestart_after = \"2s\"\n"
    )
}

#[test]
fn after_each_crash_point_the_write_is_looked_up_by_its_key_and_never_created_twice() {
    for point in CrashPoint::ALL {
        let scenario = scenario::parse(&single_write(point), "one-write.toml", &[]).unwrap();
        let mut journal = Journal::default();
        let run = virtual_driver::run(&scenario, &mut journal).unwrap();
        let s = &run.measured.summary;
        assert_eq!(s.crashes, 1, "{point}: the crash did not happen");
        assert_eq!(s.completed, 1, "{point}: {s:?}");
        let creates: Vec<&AttemptRow<'static>> = journal
            .0
            .iter()
            .filter(|r| r.route == "/v1/records")
            .collect();
        let committed = creates.iter().filter(|r| r.committed).count();
        assert_eq!(committed, 1, "{point}: {creates:?}");
        assert_eq!((s.duplicates, s.blind_resends), (0, 0), "{point}");
        let lookups: Vec<&AttemptRow<'static>> = journal
            .0
            .iter()
            .filter(|r| r.route == "/v1/records?idempotency_key")
            .collect();
        match point {
            // Nothing reached the provider before the crash: the restored runner looks the
            // write up (in flight in the ledger), finds it absent and sends it once.
            CrashPoint::AfterPersistBeforeSend => {
                assert_eq!(creates.len(), 1, "{point}: {creates:?}");
                assert_eq!(lookups.len(), 1, "{point}: {lookups:?}");
                assert!(lookups[0].at_ms < creates[0].at_ms, "{point}");
            }
            // The create reached the provider and committed: the restored runner looks it
            // up and finds it; it never sends the create again.
            _ => {
                assert_eq!(creates.len(), 1, "{point}: a second create {creates:?}");
                assert_eq!(lookups.len(), 1, "{point}: {lookups:?}");
                assert!(lookups[0].at_ms > creates[0].at_ms, "{point}");
            }
        }
    }
}
