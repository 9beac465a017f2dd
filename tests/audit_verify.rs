//! `stampede audit verify FILE` at the command level: a whole trail exits 0; editing,
//! deleting or reordering one record exits 1 and the message names that record (line and
//! seq); an unreadable file, or one that is no trail at all, exits 2.

use std::path::{Path, PathBuf};
use std::process::Command;

use stampede_core::{AuditEvent, AuditKind};
use stampede_durable::AuditWriter;

use crate::common;

/// Ten events of two actions, as a run would record them.
fn write_trail(dir: &Path) -> PathBuf {
    let path = dir.join("audit.jsonl");
    let mut writer = AuditWriter::create(&path).expect("create the trail");
    let kinds = [
        AuditKind::ActionRequested,
        AuditKind::ActionSent,
        AuditKind::ActionResult,
        AuditKind::RetryScheduled,
        AuditKind::Completed,
    ];
    for job in 1..=2u64 {
        for (i, kind) in kinds.iter().enumerate() {
            let event = AuditEvent {
                at: job * 1_000 + i as u64 * 10,
                kind: *kind,
                job,
                attempt: Some(job),
                detail: format!("step {i}").into(),
            };
            writer.append(&event).expect("append");
        }
    }
    writer.close().expect("close");
    path
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("read the trail")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn rewrite(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).expect("rewrite the trail");
}

/// Runs `stampede audit verify FILE`: (exit code, stdout + stderr).
fn verify(path: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(["audit", "verify"])
        .arg(path)
        .output()
        .expect("run stampede");
    let text = common::both(&out);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_whole_trail_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_trail(dir.path());
    let (code, text) = verify(&path);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("whole: 10 records"), "{text}");
}

#[test]
fn an_edited_record_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_trail(dir.path());
    let mut l = lines(&path);
    assert!(l[3].contains("step 3"));
    l[3] = l[3].replace("step 3", "step 9");
    rewrite(&path, &l);
    let (code, text) = verify(&path);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("BROKEN at line 4 (seq 4)"), "{text}");
    assert!(text.contains("edited"), "{text}");
}

#[test]
fn a_deleted_record_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_trail(dir.path());
    let mut l = lines(&path);
    l.remove(5);
    rewrite(&path, &l);
    let (code, text) = verify(&path);
    assert_eq!(code, 1, "{text}");
    // Line 6 now holds seq 7: record 6 is missing.
    assert!(text.contains("BROKEN at line 6 (seq 7)"), "{text}");
    assert!(text.contains("record(s) 6..6 deleted or moved"), "{text}");
}

#[test]
fn reordered_records_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_trail(dir.path());
    let mut l = lines(&path);
    l.swap(2, 7);
    rewrite(&path, &l);
    let (code, text) = verify(&path);
    assert_eq!(code, 1, "{text}");
    // The first misplaced record is on line 3 (it holds seq 8).
    assert!(text.contains("BROKEN at line 3 (seq 8)"), "{text}");
}

#[test]
fn an_unreadable_file_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let (code, text) = verify(&dir.path().join("no-such-trail.jsonl"));
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("no-such-trail.jsonl"), "{text}");
}

/// A file that is no trail at all (a run's summary.json, given by mistake) is an error in
/// the input (exit 2, saying what to give), where it was reported BROKEN at line 1 as an
/// edited trail is (exit 1). A trail whose first line alone is garbage is still broken.
#[test]
fn a_file_that_is_no_trail_exits_2_and_a_trail_with_a_garbage_line_1() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.json");
    std::fs::write(&summary, "{\n  \"completed\": 600,\n  \"failed\": 0\n}\n").unwrap();
    let (code, text) = verify(&summary);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("summary.json is no audit trail") && text.contains("audit.jsonl"),
        "{text}"
    );
    assert!(!text.contains("BROKEN"), "{text}");
    let path = write_trail(dir.path());
    let mut lines = lines(&path);
    lines[0] = "garbage".to_string();
    rewrite(&path, &lines);
    let (code, text) = verify(&path);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("BROKEN") && text.contains("line 1"), "{text}");
}
