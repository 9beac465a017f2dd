//! Property tests of the audit chain.
//!
//! - For any event sequence and any single tampering (edit one field of one record, delete a
//!   line, swap two lines, replay a line, cut the file at any byte), `verify_with_head` (given
//!   the head the writer reported) says broken and names the EARLIEST affected record: the
//!   edited line, the line where a deleted record's gap shows, the earlier of two swapped
//!   lines, the replayed copy, the line a cut tears, or the first missing seq when a cut lands
//!   on a line boundary. Plain `verify` agrees, except that a cut on a line boundary leaves a
//!   shorter chain that is whole in itself.
//! - For any crash point (the file cut at any byte), `open_append` repairs the tail, and the
//!   resumed chain verifies whole with every record written before the cut.
//!
//! Cases: 128 by default; `PROPTEST_CASES=5000 cargo test -p stampede-durable --test
//! audit_tamper_prop` runs more.

use std::fs;
use std::path::Path;

use proptest::prelude::*;
use stampede_core::{AuditEvent, AuditKind};
use stampede_durable::{
    verify, verify_with_head, AuditWriter, ChainHead, Problem, SyncPolicy, VerifyReport,
};

const KINDS: [AuditKind; 8] = [
    AuditKind::ActionRequested,
    AuditKind::ActionSent,
    AuditKind::ActionResult,
    AuditKind::RetryScheduled,
    AuditKind::ReconciliationRequired,
    AuditKind::Escalated,
    AuditKind::Cancelled,
    AuditKind::Completed,
];

fn arb_event() -> impl Strategy<Value = AuditEvent> {
    (
        0u64..1_000_000_000,
        0usize..KINDS.len(),
        0u64..50,
        proptest::option::of(0u64..500),
        "[a-z0-9 ,.]{0,24}",
    )
        .prop_map(|(at, kind, job, attempt, detail)| AuditEvent {
            at,
            kind: KINDS[kind],
            job,
            attempt,
            detail: detail.into(),
        })
}

#[derive(Debug, Clone, Copy)]
enum Field {
    Detail,
    At,
    Job,
    Kind,
    Seq,
    Prev,
    Hash,
}

/// One tampering. Indexes are taken modulo the record count when applied.
#[derive(Debug, Clone)]
enum Tamper {
    Edit { line: usize, field: Field },
    Delete { line: usize },
    Swap { a: usize, b: usize },
    Replay { line: usize },
    Cut { at_byte: usize },
}

fn arb_tamper() -> impl Strategy<Value = Tamper> {
    let field = prop_oneof![
        Just(Field::Detail),
        Just(Field::At),
        Just(Field::Job),
        Just(Field::Kind),
        Just(Field::Seq),
        Just(Field::Prev),
        Just(Field::Hash),
    ];
    prop_oneof![
        (any::<usize>(), field).prop_map(|(line, field)| Tamper::Edit { line, field }),
        any::<usize>().prop_map(|line| Tamper::Delete { line }),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Tamper::Swap { a, b }),
        any::<usize>().prop_map(|line| Tamper::Replay { line }),
        any::<usize>().prop_map(|at_byte| Tamper::Cut { at_byte }),
    ]
}

fn flip_hex(text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    chars[0] = if chars[0] == '0' { '1' } else { '0' };
    chars.into_iter().collect()
}

fn edit(line: &str, field: Field) -> String {
    let mut rec: serde_json::Value = serde_json::from_str(line).unwrap();
    match field {
        Field::Detail => {
            let detail = format!("{}!", rec["event"]["detail"].as_str().unwrap());
            rec["event"]["detail"] = detail.into();
        }
        Field::At => rec["event"]["at"] = (rec["event"]["at"].as_u64().unwrap() + 1).into(),
        Field::Job => rec["event"]["job"] = (rec["event"]["job"].as_u64().unwrap() + 1).into(),
        Field::Kind => {
            let other = if rec["event"]["kind"] == "completed" {
                "escalated"
            } else {
                "completed"
            };
            rec["event"]["kind"] = other.into();
        }
        Field::Seq => rec["seq"] = (rec["seq"].as_u64().unwrap() + 1).into(),
        Field::Prev => rec["prev"] = flip_hex(rec["prev"].as_str().unwrap()).into(),
        Field::Hash => rec["hash"] = flip_hex(rec["hash"].as_str().unwrap()).into(),
    }
    rec.to_string()
}

/// What the verifier must say: (line, seq) of the earliest affected record, and whether a
/// plain `verify` (without the head) can see it.
struct Expected {
    line: u64,
    seq: Option<u64>,
    visible_without_head: bool,
    problem_is: fn(&Problem) -> bool,
}

/// Applies `tamper` to the file's lines and returns what verification must report, or `None`
/// when the tampering happens to leave the file unchanged (then there is nothing to detect).
fn apply(path: &Path, tamper: &Tamper) -> Option<Expected> {
    let bytes = fs::read(path).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let n = lines.len();
    let write = |lines: &[String]| {
        fs::write(
            path,
            lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
        )
        .unwrap()
    };
    match *tamper {
        Tamper::Edit { line, field } => {
            let k = line % n;
            lines[k] = edit(&lines[k], field);
            let seq: serde_json::Value = serde_json::from_str(&lines[k]).unwrap();
            write(&lines);
            Some(Expected {
                line: k as u64 + 1,
                seq: seq["seq"].as_u64(),
                visible_without_head: true,
                problem_is: |p| matches!(p, Problem::Edited { .. }),
            })
        }
        Tamper::Delete { line } => {
            let k = line % n;
            lines.remove(k);
            write(&lines);
            let last = k + 1 == n;
            Some(Expected {
                line: k as u64 + 1,
                // The record now on line k+1 (seq k+2), or the missing seq k+1 past the end.
                seq: Some(if last { k as u64 + 1 } else { k as u64 + 2 }),
                visible_without_head: !last,
                problem_is: |p| {
                    matches!(
                        p,
                        Problem::SeqOutOfOrder { .. } | Problem::MissingTail { .. }
                    )
                },
            })
        }
        Tamper::Swap { a, b } => {
            let (i, j) = (a % n, b % n);
            if i == j {
                return None;
            }
            let (i, j) = (i.min(j), i.max(j));
            lines.swap(i, j);
            write(&lines);
            Some(Expected {
                line: i as u64 + 1,
                seq: Some(j as u64 + 1),
                visible_without_head: true,
                problem_is: |p| matches!(p, Problem::SeqOutOfOrder { .. }),
            })
        }
        Tamper::Replay { line } => {
            let k = line % n;
            let copy = lines[k].clone();
            lines.insert(k + 1, copy);
            write(&lines);
            Some(Expected {
                line: k as u64 + 2,
                seq: Some(k as u64 + 1),
                visible_without_head: true,
                problem_is: |p| matches!(p, Problem::SeqOutOfOrder { .. }),
            })
        }
        Tamper::Cut { at_byte } => {
            let cut = at_byte % bytes.len();
            fs::write(path, &bytes[..cut]).unwrap();
            let complete_lines = bytes[..cut].iter().filter(|&&b| b == b'\n').count() as u64;
            let on_boundary = cut == 0 || bytes[cut - 1] == b'\n';
            Some(if on_boundary {
                Expected {
                    line: complete_lines + 1,
                    seq: Some(complete_lines + 1),
                    visible_without_head: false,
                    problem_is: |p| matches!(p, Problem::MissingTail { .. }),
                }
            } else {
                Expected {
                    line: complete_lines + 1,
                    seq: None, // checked loosely: a torn prefix may or may not still show its seq
                    visible_without_head: true,
                    problem_is: |p| matches!(p, Problem::Torn { .. }),
                }
            })
        }
    }
}

fn write_trail(path: &Path, events: &[AuditEvent]) -> ChainHead {
    let mut writer = AuditWriter::create(path)
        .unwrap()
        .with_sync(SyncPolicy::OnRequest);
    for e in events {
        writer.append(e).unwrap();
    }
    writer.close().unwrap()
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_single_tampering_is_detected_at_the_earliest_affected_record(
        events in prop::collection::vec(arb_event(), 1..24),
        tamper in arb_tamper(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let head = write_trail(&path, &events);
        prop_assert!(verify_with_head(&path, &head).unwrap().is_whole());
        let Some(expected) = apply(&path, &tamper) else { return Ok(()) };

        let with_head = verify_with_head(&path, &head).unwrap();
        let VerifyReport::Broken(brk) = &with_head else {
            return Err(TestCaseError::fail(format!("{tamper:?} not detected: {with_head}")));
        };
        prop_assert_eq!(brk.line, expected.line, "{:?}: {}", tamper, with_head);
        if expected.seq.is_some() {
            prop_assert_eq!(brk.seq, expected.seq, "{:?}: {}", tamper, with_head);
        }
        prop_assert!((expected.problem_is)(&brk.problem), "{:?}: {}", tamper, with_head);

        let plain = verify(&path).unwrap();
        if expected.visible_without_head {
            prop_assert_eq!(&plain, &with_head);
        } else {
            prop_assert!(plain.is_whole(), "{:?}: {}", tamper, plain);
        }
    }

    #[test]
    fn a_crash_at_any_byte_resumes_into_a_whole_chain(
        events in prop::collection::vec(arb_event(), 1..16),
        more in prop::collection::vec(arb_event(), 1..4),
        at_byte in any::<usize>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_trail(&path, &events);
        let bytes = fs::read(&path).unwrap();
        let cut = at_byte % (bytes.len() + 1);
        fs::write(&path, &bytes[..cut]).unwrap();
        // Records that survive: every complete line, plus a last one that lost only its `\n`.
        let complete = bytes[..cut].iter().filter(|&&b| b == b'\n').count() as u64;
        let lost_only_newline = cut < bytes.len() && bytes[cut] == b'\n';
        let survivors = complete + u64::from(lost_only_newline);

        let resumed = AuditWriter::open_append(&path).unwrap();
        prop_assert_eq!(resumed.writer.head().seq, survivors);
        let on_boundary = cut == 0 || bytes[cut - 1] == b'\n';
        prop_assert_eq!(resumed.repaired_tail.is_some(), !on_boundary);
        let mut writer = resumed.writer.with_sync(SyncPolicy::OnRequest);
        for e in &more {
            writer.append(e).unwrap();
        }
        let head = writer.close().unwrap();
        let report = verify(&path).unwrap();
        prop_assert_eq!(report, VerifyReport::Whole { records: survivors + more.len() as u64, head });
    }
}
