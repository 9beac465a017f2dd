//! Buffering under `SyncPolicy::OnRequest`: the file holds every record after `close()` and
//! after a drop, `head()` tracks what was appended, and the bytes are those the unbuffered
//! policies write. The unbuffered policies still have each record in the file when `append`
//! returns.

use std::fs;
use std::path::Path;

use stampede_core::{AuditEvent, AuditKind};
use stampede_durable::{
    verify, verify_with_head, AuditWriter, ChainHead, SyncPolicy, VerifyReport,
};

/// Enough records (about 100 bytes of detail each) to fill the 256 KiB buffer several times,
/// so chunked writes that end mid-line are exercised.
const MANY: u64 = 6_000;

fn event(n: u64) -> AuditEvent {
    const KINDS: [AuditKind; 4] = [
        AuditKind::ActionRequested,
        AuditKind::ActionSent,
        AuditKind::ActionResult,
        AuditKind::Completed,
    ];
    AuditEvent {
        at: 10 * n,
        kind: KINDS[(n % 4) as usize],
        job: n / 4,
        attempt: (n % 4 != 0).then_some(n),
        detail: format!("status 429 after {n} ms; retry-after 2000 ms; scope tenant-a/model-x")
            .into(),
    }
}

/// Appends `range` and returns the head after each append (checked to advance by one).
fn append_all(writer: &mut AuditWriter, range: std::ops::RangeInclusive<u64>) -> ChainHead {
    for n in range {
        let before = writer.head().seq;
        let appended = writer.append(&event(n)).unwrap();
        assert_eq!(appended.seq, before + 1);
        assert_eq!(writer.head().seq, appended.seq);
        assert_eq!(writer.head().hash, appended.hash);
    }
    writer.head().clone()
}

/// The trail of records 1..=n written with `policy`, and its closing head.
fn written_with(policy: SyncPolicy, path: &Path, n: u64) -> ChainHead {
    let mut writer = AuditWriter::create(path).unwrap().with_sync(policy);
    let head = append_all(&mut writer, 1..=n);
    let closed = writer.close().unwrap();
    assert_eq!(closed, head, "close returns the head");
    closed
}

#[test]
fn on_request_holds_every_record_after_close_with_the_unbuffered_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let buffered = dir.path().join("buffered.jsonl");
    let direct = dir.path().join("direct.jsonl");
    let head = written_with(SyncPolicy::OnRequest, &buffered, MANY);
    let direct_head = written_with(SyncPolicy::EveryRecord, &direct, MANY);

    assert_eq!(head.seq, MANY);
    assert_eq!(head, direct_head);
    assert_eq!(
        verify_with_head(&buffered, &head).unwrap(),
        VerifyReport::Whole {
            records: MANY,
            head: head.clone()
        }
    );
    let bytes = fs::read(&buffered).unwrap();
    assert!(
        bytes.len() > 4 * 256 * 1024,
        "the buffer filled several times"
    );
    assert_eq!(bytes, fs::read(&direct).unwrap());
}

#[test]
fn on_request_holds_every_record_after_a_drop_and_resumes_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut writer = AuditWriter::create(&path)
        .unwrap()
        .with_sync(SyncPolicy::OnRequest);
    // Not a whole number of buffers, so the last chunk only leaves on the drop.
    let head = append_all(&mut writer, 1..=MANY / 2 + 7);
    drop(writer);

    assert_eq!(
        verify_with_head(&path, &head).unwrap(),
        VerifyReport::Whole {
            records: head.seq,
            head: head.clone()
        }
    );
    // A simulated restart: resume where the dropped writer stopped, with no repair needed.
    let resumed = AuditWriter::open_append(&path).unwrap();
    assert_eq!(resumed.repaired_tail, None);
    assert_eq!(resumed.writer.head(), &head);
    let mut writer = resumed.writer.with_sync(SyncPolicy::OnRequest);
    let head = append_all(&mut writer, head.seq + 1..=MANY);
    drop(writer);

    let resumed_bytes = fs::read(&path).unwrap();
    let reference = dir.path().join("reference.jsonl");
    let reference_head = written_with(SyncPolicy::EveryRecord, &reference, MANY);
    assert_eq!(head, reference_head);
    assert_eq!(resumed_bytes, fs::read(&reference).unwrap());
}

#[test]
fn sync_writes_out_the_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut writer = AuditWriter::create(&path)
        .unwrap()
        .with_sync(SyncPolicy::OnRequest);
    let head = append_all(&mut writer, 1..=3);
    writer.sync().unwrap();
    // The writer is still open; what it appended is in the file already.
    assert_eq!(
        verify_with_head(&path, &head).unwrap(),
        VerifyReport::Whole {
            records: 3,
            head: head.clone()
        }
    );
    let head = append_all(&mut writer, 4..=5);
    assert_eq!(writer.close().unwrap(), head);
    assert!(verify_with_head(&path, &head).unwrap().is_whole());
}

#[test]
fn unbuffered_policies_have_each_record_in_the_file_when_append_returns() {
    for policy in [SyncPolicy::EveryRecord, SyncPolicy::BeforeSideEffects] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let mut writer = AuditWriter::create(&path).unwrap().with_sync(policy);
        for n in 1..=8 {
            let appended = writer.append(&event(n)).unwrap();
            assert_eq!(
                verify(&path).unwrap(),
                VerifyReport::Whole {
                    records: n,
                    head: ChainHead {
                        seq: appended.seq,
                        hash: appended.hash
                    }
                },
                "{policy:?} after record {n}"
            );
        }
        writer.close().unwrap();
    }
}

#[test]
fn switching_from_on_request_to_a_syncing_policy_keeps_the_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut writer = AuditWriter::create(&path)
        .unwrap()
        .with_sync(SyncPolicy::OnRequest);
    append_all(&mut writer, 1..=5);
    let mut writer = writer.with_sync(SyncPolicy::EveryRecord);
    let head = append_all(&mut writer, 6..=6);
    // Record 6 is on disk when append returns, and the five buffered before it precede it.
    assert_eq!(
        verify_with_head(&path, &head).unwrap(),
        VerifyReport::Whole {
            records: 6,
            head: head.clone()
        }
    );
    writer.close().unwrap();
}

/// A batch appended with one fsync at its end writes the bytes and the head that the same
/// records appended one by one do, and each batch is in the file when `append_batch`
/// returns.
#[test]
fn a_batch_writes_what_appending_one_by_one_writes() {
    let dir = tempfile::tempdir().unwrap();
    let batched = dir.path().join("batched.jsonl");
    let direct = dir.path().join("direct.jsonl");
    let direct_head = written_with(SyncPolicy::BeforeSideEffects, &direct, 300);
    let mut writer = AuditWriter::create(&batched).unwrap();
    let events: Vec<AuditEvent> = (1..=300).map(event).collect();
    for batch in events.chunks(7) {
        writer.append_batch(batch).unwrap();
        let lines = fs::read_to_string(&batched).unwrap().lines().count() as u64;
        assert_eq!(lines, writer.head().seq, "the batch is in the file");
    }
    assert_eq!(writer.close().unwrap(), direct_head);
    assert_eq!(fs::read(&batched).unwrap(), fs::read(&direct).unwrap());
}
