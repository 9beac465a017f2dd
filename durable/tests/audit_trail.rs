//! The audit trail: a whole chain verifies; each kind of tampering is caught and named;
//! a crash's torn tail is repaired on resume and reported; secrets never reach the file.

use std::fs;
use std::path::{Path, PathBuf};

use stampede_core::{AuditEvent, AuditKind};
use stampede_durable::{
    verify, verify_with_head, AuditWriter, Break, ChainKey, DurableError, HeadError, Problem,
    Redaction, TailRepair, VerifyReport,
};

const KINDS: [AuditKind; 4] = [
    AuditKind::ActionRequested,
    AuditKind::ActionSent,
    AuditKind::ActionResult,
    AuditKind::Completed,
];

fn event(n: u64) -> AuditEvent {
    AuditEvent {
        at: 100 * n,
        kind: KINDS[(n % 4) as usize],
        job: n / 4,
        attempt: (n % 4 != 0).then_some(n),
        detail: format!("status 200 after {n} ms").into(),
    }
}

/// A trail of `n` records in a fresh temp dir.
fn trail(n: u64) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut writer = AuditWriter::create(&path).unwrap();
    for i in 1..=n {
        writer.append(&event(i)).unwrap();
    }
    writer.close().unwrap();
    (dir, path)
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    fs::write(
        path,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
}

fn broken(path: &Path) -> Break {
    match verify(path).unwrap() {
        VerifyReport::Broken(brk) => brk,
        whole => panic!("expected a broken trail, got {whole}"),
    }
}

#[test]
fn a_whole_trail_verifies_with_its_count_and_head() {
    let (_dir, path) = trail(6);
    let report = verify(&path).unwrap();
    let VerifyReport::Whole { records, head } = &report else {
        panic!("{report}")
    };
    assert_eq!(*records, 6);
    assert_eq!(head.seq, 6);
    let last: serde_json::Value = serde_json::from_str(lines(&path).last().unwrap()).unwrap();
    assert_eq!(head.hash, last["hash"].as_str().unwrap());
    assert_eq!(report.exit_code(), 0);
}

#[test]
fn records_are_numbered_from_one_and_chained_from_zeros() {
    let (_dir, path) = trail(3);
    let records: Vec<serde_json::Value> = lines(&path)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records[0]["seq"], 1);
    assert_eq!(records[0]["prev"], "0".repeat(64));
    for pair in records.windows(2) {
        assert_eq!(pair[1]["prev"], pair[0]["hash"]);
        assert_eq!(
            pair[1]["seq"].as_u64().unwrap(),
            pair[0]["seq"].as_u64().unwrap() + 1
        );
    }
    assert_eq!(records[2]["event"]["detail"], "status 200 after 3 ms");
}

#[test]
fn an_empty_trail_is_whole() {
    let (_dir, path) = trail(0);
    assert!(matches!(
        verify(&path).unwrap(),
        VerifyReport::Whole { records: 0, .. }
    ));
}

#[test]
fn an_edited_field_is_named_by_line_and_seq() {
    let (_dir, path) = trail(5);
    let mut all = lines(&path);
    all[2] = all[2].replace("status 200 after 3 ms", "status 200 after 4 ms");
    write_lines(&path, &all);
    let brk = broken(&path);
    assert_eq!((brk.line, brk.seq), (3, Some(3)));
    assert!(
        matches!(brk.problem, Problem::Edited { .. }),
        "{:?}",
        brk.problem
    );
    let report = verify(&path).unwrap();
    assert_eq!(report.exit_code(), 1);
    assert!(report.to_string().contains("line 3 (seq 3)"), "{report}");
}

#[test]
fn a_deleted_line_is_named_where_the_gap_shows() {
    let (_dir, path) = trail(5);
    let mut all = lines(&path);
    all.remove(1); // seq 2
    write_lines(&path, &all);
    let brk = broken(&path);
    assert_eq!((brk.line, brk.seq), (2, Some(3)));
    assert_eq!(
        brk.problem,
        Problem::SeqOutOfOrder {
            expected: 2,
            found: 3
        }
    );
    assert!(verify(&path)
        .unwrap()
        .to_string()
        .contains("record(s) 2..2 deleted"));
}

#[test]
fn a_deleted_first_line_is_caught_on_line_one() {
    let (_dir, path) = trail(3);
    let mut all = lines(&path);
    all.remove(0);
    write_lines(&path, &all);
    let brk = broken(&path);
    assert_eq!((brk.line, brk.seq), (1, Some(2)));
}

#[test]
fn swapped_lines_are_named_at_the_earlier_one() {
    let (_dir, path) = trail(6);
    let mut all = lines(&path);
    all.swap(1, 4);
    write_lines(&path, &all);
    let brk = broken(&path);
    assert_eq!((brk.line, brk.seq), (2, Some(5)));
    assert_eq!(
        brk.problem,
        Problem::SeqOutOfOrder {
            expected: 2,
            found: 5
        }
    );
}

#[test]
fn a_record_rewritten_with_a_fresh_hash_breaks_the_next_link() {
    // Someone who edits a record and recomputes its own hash still breaks the record after.
    let (_dir, path) = trail(4);
    let mut all = lines(&path);
    let mut rec: serde_json::Value = serde_json::from_str(&all[1]).unwrap();
    rec["event"]["detail"] = "nothing happened".into();
    let canonical = stampede_durable::chain::canonical_json(&rec["event"]);
    let hash = stampede_durable::chain::record_hash(2, rec["prev"].as_str().unwrap(), &canonical);
    rec["hash"] = hash.into();
    all[1] = rec.to_string();
    write_lines(&path, &all);
    let brk = broken(&path);
    assert_eq!((brk.line, brk.seq), (3, Some(3)));
    assert!(
        matches!(brk.problem, Problem::PrevMismatch { .. }),
        "{:?}",
        brk.problem
    );
}

#[test]
fn a_truncation_mid_record_is_a_torn_line() {
    let (_dir, path) = trail(4);
    let bytes = fs::read(&path).unwrap();
    let cut = bytes.len() - 30;
    fs::write(&path, &bytes[..cut]).unwrap();
    let brk = broken(&path);
    assert_eq!(brk.line, 4);
    assert!(
        matches!(
            brk.problem,
            Problem::Torn {
                complete_record: false,
                ..
            }
        ),
        "{:?}",
        brk.problem
    );
}

#[test]
fn a_truncation_at_a_line_boundary_is_caught_against_the_kept_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut writer = AuditWriter::create(&path).unwrap();
    for i in 1..=5 {
        writer.append(&event(i)).unwrap();
    }
    let head = writer.close().unwrap();
    let all = lines(&path);
    write_lines(&path, &all[..3]);
    // Alone, a shorter chain is whole in itself...
    assert!(verify(&path).unwrap().is_whole());
    // ...but not against the head kept elsewhere.
    let VerifyReport::Broken(brk) = verify_with_head(&path, &head).unwrap() else {
        panic!("not caught")
    };
    assert_eq!((brk.line, brk.seq), (4, Some(4)));
    assert_eq!(
        brk.problem,
        Problem::MissingTail {
            last_seq: 3,
            expected_seq: 5
        }
    );
}

#[test]
fn a_rewritten_chain_is_caught_against_the_kept_head() {
    let (_dir, path) = trail(3);
    let head = match verify(&path).unwrap() {
        VerifyReport::Whole { head, .. } => head,
        other => panic!("{other}"),
    };
    // A whole new chain of the same length written over the old one.
    fs::remove_file(&path).unwrap();
    let mut writer = AuditWriter::create(&path).unwrap();
    for i in 11..=13 {
        writer.append(&event(i)).unwrap();
    }
    writer.close().unwrap();
    let VerifyReport::Broken(brk) = verify_with_head(&path, &head).unwrap() else {
        panic!("not caught")
    };
    assert_eq!((brk.line, brk.seq), (3, Some(3)));
    assert!(matches!(brk.problem, Problem::HeadMismatch { .. }));
}

#[test]
fn an_unparsable_line_is_named() {
    let (_dir, path) = trail(3);
    let mut all = lines(&path);
    all.insert(1, "not a record".into());
    write_lines(&path, &all);
    let brk = broken(&path);
    assert_eq!((brk.line, brk.seq), (2, None));
    assert!(matches!(brk.problem, Problem::Unparsable { .. }));
}

#[test]
fn an_unreadable_file_is_an_error_not_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.jsonl");
    let err = verify(&missing).unwrap_err();
    assert!(err.to_string().contains("nope.jsonl"), "{err}");
    assert_eq!(stampede_durable::verify_cli(&missing), 2);
}

/// A head file that cannot be read says nothing of the trail: an error (exit 2), as an
/// unreadable trail is, never "BROKEN". One that is read and cannot be any trail's head
/// (seq 0 with a hash other than the empty trail's) is blamed, not the trail: a malformed
/// input, exit 2 too.
#[test]
fn a_head_file_that_cannot_be_read_is_an_error_and_an_impossible_one_is_named() {
    let (dir, path) = trail(3);
    let folder = dir.path().join("a-folder");
    fs::create_dir(&folder).unwrap();
    assert_eq!(
        stampede_durable::verify_cli_with_head(&path, Some(&folder)),
        2
    );
    match stampede_durable::read_head(&folder, &ChainKey::Unkeyed) {
        Err(HeadError::Unreadable(message)) => assert!(message.contains("a-folder"), "{message}"),
        other => panic!("a folder read as a head: {other:?}"),
    }
    let impossible = dir.path().join("impossible.head");
    fs::write(
        &impossible,
        format!(
            "{{\"seq\":0,\"hash\":\"{}\",\"records\":0,\"keyed\":false}}\n",
            "1".repeat(64)
        ),
    )
    .unwrap();
    match stampede_durable::read_head(&impossible, &ChainKey::Unkeyed) {
        Err(HeadError::Malformed(message)) => {
            assert!(message.contains("not the head of any trail"), "{message}")
        }
        other => panic!("an impossible head was read: {other:?}"),
    }
    assert_eq!(
        stampede_durable::verify_cli_with_head(&path, Some(&impossible)),
        2
    );
}

#[test]
fn verify_cli_exit_codes_follow_the_report() {
    let (_dir, path) = trail(3);
    assert_eq!(stampede_durable::verify_cli(&path), 0);
    let mut all = lines(&path);
    all.swap(0, 1);
    write_lines(&path, &all);
    assert_eq!(stampede_durable::verify_cli(&path), 1);
}

#[test]
fn resuming_continues_the_chain() {
    let (_dir, path) = trail(3);
    let resumed = AuditWriter::open_append(&path).unwrap();
    assert_eq!(resumed.repaired_tail, None);
    let mut writer = resumed.writer;
    assert_eq!(writer.head().seq, 3);
    assert_eq!(writer.append(&event(4)).unwrap().seq, 4);
    writer.close().unwrap();
    assert!(matches!(
        verify(&path).unwrap(),
        VerifyReport::Whole { records: 4, .. }
    ));
}

#[test]
fn resuming_after_a_torn_write_truncates_the_partial_line_and_says_so() {
    let (_dir, path) = trail(3);
    let whole_len = fs::metadata(&path).unwrap().len();
    // What a crash half-way through writing record 4 leaves.
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"seq":4,"prev":"ab"#);
    fs::write(&path, &bytes).unwrap();
    let resumed = AuditWriter::open_append(&path).unwrap();
    assert_eq!(
        resumed.repaired_tail,
        Some(TailRepair::Truncated { line: 4, bytes: 19 })
    );
    assert_eq!(fs::metadata(&path).unwrap().len(), whole_len);
    let mut writer = resumed.writer;
    writer.append(&event(4)).unwrap();
    writer.close().unwrap();
    assert!(matches!(
        verify(&path).unwrap(),
        VerifyReport::Whole { records: 4, .. }
    ));
}

#[test]
fn resuming_keeps_a_complete_record_that_only_lost_its_newline() {
    let (_dir, path) = trail(3);
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    assert!(matches!(
        broken(&path).problem,
        Problem::Torn {
            complete_record: true,
            ..
        }
    ));
    let resumed = AuditWriter::open_append(&path).unwrap();
    assert_eq!(
        resumed.repaired_tail,
        Some(TailRepair::NewlineAdded { line: 3, seq: 3 })
    );
    assert_eq!(resumed.writer.head().seq, 3);
    assert_eq!(fs::read(&path).unwrap(), bytes);
}

#[test]
fn resuming_a_tampered_trail_is_refused() {
    let (_dir, path) = trail(4);
    let mut all = lines(&path);
    all.remove(1);
    write_lines(&path, &all);
    let err = AuditWriter::open_append(&path).unwrap_err();
    assert!(matches!(err, DurableError::AuditBroken { .. }), "{err:?}");
    assert!(err.to_string().contains("line 2"), "{err}");
}

#[test]
fn resuming_a_missing_trail_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = AuditWriter::open_append(dir.path().join("gone.jsonl")).unwrap_err();
    assert!(err.to_string().contains("gone.jsonl"), "{err}");
}

#[test]
fn create_never_overwrites_an_existing_trail() {
    let (_dir, path) = trail(2);
    let before = fs::read(&path).unwrap();
    assert!(matches!(
        AuditWriter::create(&path).unwrap_err(),
        DurableError::AuditExists { .. }
    ));
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn bearer_keys_and_api_keys_never_reach_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut writer = AuditWriter::create(&path).unwrap();
    let mut leaky = event(1);
    leaky.detail = "401 for sk-live-abc123XYZ via Authorization: Bearer sk-live-abc123XYZ".into();
    let appended = writer.append(&leaky).unwrap();
    assert_eq!(
        appended.redactions,
        vec![Redaction::BearerToken, Redaction::ApiKey]
    );
    let mut bearer = event(2);
    bearer.detail = "sent with bearer tok_9f8e7d".into();
    assert_eq!(
        writer.append(&bearer).unwrap().redactions,
        vec![Redaction::BearerToken]
    );
    let mut body = event(3);
    body.detail = r#"500 {"error":"prompt text here"}"#.into();
    assert_eq!(
        writer.append(&body).unwrap().redactions,
        vec![Redaction::Body]
    );
    assert!(writer.append(&event(4)).unwrap().redactions.is_empty());
    writer.close().unwrap();

    let text = fs::read_to_string(&path).unwrap();
    for secret in ["abc123XYZ", "sk-live", "tok_9f8e7d", "prompt text"] {
        assert!(!text.contains(secret), "{secret} leaked into {text}");
    }
    assert!(text.contains("[redacted key]") && text.contains("bearer [redacted]"));
    // Redacted records are ordinary chain members.
    assert!(matches!(
        verify(&path).unwrap(),
        VerifyReport::Whole { records: 4, .. }
    ));
}

/// A file that is no trail, such as a huge one without a newline, is reported at its first
/// line after reading a bounded part of it, not read whole into memory.
#[test]
fn a_line_longer_than_any_record_is_unparsable_without_reading_it_all() {
    let (_dir, path) = trail(2);
    let mut bytes = fs::read(&path).unwrap();
    bytes.resize(bytes.len() + 4 * 1024 * 1024, b'x');
    fs::write(&path, &bytes).unwrap();
    let b = broken(&path);
    assert_eq!((b.line, b.seq), (3, None));
    match &b.problem {
        Problem::Unparsable { reason } => {
            assert!(reason.contains("longer than 64 KiB"), "{reason}")
        }
        other => panic!("expected an unparsable line, got {other:?}"),
    }
}

/// A blank line (an editor's trailing newline) is named for what it is, where it read as
/// "EOF while parsing at line 1 column 0".
#[test]
fn a_blank_line_is_named_empty() {
    let (_dir, path) = trail(2);
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(b"\n");
    fs::write(&path, &bytes).unwrap();
    let b = broken(&path);
    assert_eq!(b.line, 3);
    match &b.problem {
        Problem::Unparsable { reason } => assert!(reason.contains("the line is empty"), "{reason}"),
        other => panic!("expected an unparsable line, got {other:?}"),
    }
}
