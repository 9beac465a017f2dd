//! The SQLite ledger: round trips, reopen, upsert, schema versions, clear errors.

use std::path::Path;

use rusqlite::Connection;
use stampede_core::{ActionState, Job, Ledger, LedgerEntry, Priority, Route};
use stampede_durable::{DurableError, SqliteLedger, SCHEMA_VERSION, UNBOUND_FACT};

fn job(id: u64) -> Job {
    Job {
        id,
        tenant: format!("tenant-{}", id % 3).into(),
        task: format!("task-{}", id % 5).into(),
        credential: "sk-acme-shared".into(),
        scope: if id % 2 == 0 {
            Some("account:acme".into())
        } else {
            None
        },
        class: "uncertain_write".into(),
        route: Route::CreateRecord,
        resource: None,
        priority: Priority::Normal,
        prompt_tokens: 120,
        max_output_tokens: 300,
        deadline: Some(id.wrapping_add(60_000)),
        idempotency_key: Some(format!("idem-{id}").into()),
        payload_hash: id.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        external_ref: Some(format!("ref-{id}")),
        coalescable: false,
        stream: false,
        model: None,
        sole_task: id % 4 == 0,
    }
}

fn entry(id: u64, state: ActionState, attempts: u32) -> LedgerEntry {
    LedgerEntry {
        job: job(id),
        state,
        attempts,
        waited_ms: 250 * u64::from(attempts),
        operation_id: (attempts > 0).then(|| format!("op-{id}").into()),
        updated_at: id.wrapping_add(1_000),
    }
}

#[test]
fn entries_round_trip_in_job_id_order() {
    let mut ledger = SqliteLedger::open_in_memory().unwrap();
    let ids = [42, 7, u64::MAX, 0, i64::MAX as u64 + 1, 19];
    for (n, id) in ids.iter().enumerate() {
        ledger
            .put(&entry(*id, ActionState::Planned, n as u32))
            .unwrap();
    }
    let mut expected: Vec<LedgerEntry> = ids
        .iter()
        .enumerate()
        .map(|(n, id)| entry(*id, ActionState::Planned, n as u32))
        .collect();
    expected.sort_by_key(|e| e.job.id);
    assert_eq!(ledger.entries().unwrap(), expected);
}

#[test]
fn put_replaces_the_entry_of_the_same_job() {
    let mut ledger = SqliteLedger::open_in_memory().unwrap();
    ledger.put(&entry(3, ActionState::Planned, 0)).unwrap();
    ledger.put(&entry(4, ActionState::Planned, 0)).unwrap();
    let mut later = entry(3, ActionState::ReconciliationRequired, 1);
    later.job.external_ref = None;
    ledger.put(&later).unwrap();
    assert_eq!(
        ledger.entries().unwrap(),
        vec![later.clone(), entry(4, ActionState::Planned, 0)]
    );
    assert_eq!(ledger.get(3).unwrap(), Some(later));
    assert_eq!(ledger.get(5).unwrap(), None);
}

#[test]
fn entries_survive_closing_and_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let written: Vec<LedgerEntry> = [
        entry(1, ActionState::Completed, 2),
        entry(2, ActionState::InFlight, 1),
        entry(3, ActionState::ReconciliationRequired, 1),
        entry(4, ActionState::Cancelled, 0),
    ]
    .into();
    {
        let mut ledger = SqliteLedger::open(&path).unwrap();
        for e in &written {
            ledger.put(e).unwrap();
        }
    } // dropped: the connection closes as a crashed process's would
    let mut reopened = SqliteLedger::open(&path).unwrap();
    // The file holds references to keys; the restarted runner knows its scenario's keys.
    reopened.add_credentials(["sk-other", "sk-acme-shared"]);
    assert_eq!(reopened.entries().unwrap(), written);
    assert_eq!(reopened.schema_version().unwrap(), SCHEMA_VERSION);
}

#[test]
fn a_put_is_visible_to_another_connection_as_soon_as_it_returns() {
    // What a second process (or the restarted runner) sees while the first still runs.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let mut writer = SqliteLedger::open(&path).unwrap();
    writer.put(&entry(9, ActionState::InFlight, 1)).unwrap();
    // A plain SQLite connection: a second ledger on the file is refused while the first is
    // open (two runners on one ledger), but the file is readable.
    let reader = Connection::open(&path).unwrap();
    let row: (String, i64) = reader
        .query_row(
            "SELECT state, attempts FROM entries WHERE job_id = 9",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(row, ("in_flight".to_string(), 1));
}

#[test]
fn the_file_runs_in_wal_mode_with_full_sync() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let mut ledger = SqliteLedger::open(&path).unwrap();
    ledger.put(&entry(1, ActionState::Planned, 0)).unwrap();
    let conn = Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    assert!(path.with_extension("sqlite-wal").exists());
}

#[test]
fn entries_are_found_by_idempotency_key() {
    let mut ledger = SqliteLedger::open_in_memory().unwrap();
    ledger.put(&entry(1, ActionState::Completed, 1)).unwrap();
    ledger
        .put(&entry(2, ActionState::ReconciliationRequired, 1))
        .unwrap();
    assert_eq!(
        ledger.find_by_idempotency_key("idem-2").unwrap(),
        vec![entry(2, ActionState::ReconciliationRequired, 1)]
    );
    assert!(ledger.find_by_idempotency_key("idem-9").unwrap().is_empty());
}

/// Writes a ledger in the version-1 layout, as an older Stampede would have.
fn write_version_1(path: &Path, entries: &[LedgerEntry]) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE entries (job_id INTEGER PRIMARY KEY, state TEXT NOT NULL, attempts INTEGER NOT NULL,
             waited_ms INTEGER NOT NULL, operation_id TEXT, updated_at INTEGER NOT NULL, job_json TEXT NOT NULL);
         PRAGMA user_version = 1;",
    )
    .unwrap();
    for e in entries {
        conn.execute(
            "INSERT INTO entries VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            rusqlite::params![
                e.job.id as i64,
                serde_json::to_value(e.state).unwrap().as_str().unwrap(),
                e.attempts,
                e.waited_ms as i64,
                e.operation_id.as_deref(),
                e.updated_at as i64,
                serde_json::to_string(&e.job).unwrap()
            ],
        )
        .unwrap();
    }
}

#[test]
fn a_version_1_ledger_is_migrated_and_keeps_its_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite");
    let old = vec![
        entry(1, ActionState::InFlight, 1),
        entry(2, ActionState::ReconciliationRequired, 1),
    ];
    write_version_1(&path, &old);
    let ledger = SqliteLedger::open(&path).unwrap();
    assert_eq!(ledger.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(ledger.entries().unwrap(), old);
    // The version-2 column was back-filled from the stored jobs.
    assert_eq!(
        ledger.find_by_idempotency_key("idem-2").unwrap(),
        vec![old[1].clone()]
    );
    // Version 3's table of what run wrote it: no run having said, it says the ledger is
    // bound to none yet, and still does when opened again before a run records itself.
    let unbound = vec![(
        UNBOUND_FACT.to_string(),
        "migrated from schema version 1".to_string(),
    )];
    assert_eq!(ledger.run_facts().unwrap(), unbound);
    drop(ledger);
    let mut ledger = SqliteLedger::open(&path).unwrap();
    assert_eq!(ledger.run_facts().unwrap(), unbound);
    // The run that resumes it records itself in its place.
    ledger.set_run_facts(&[("seed", "3".to_string())]).unwrap();
    assert_eq!(
        ledger.run_facts().unwrap(),
        vec![("seed".to_string(), "3".to_string())]
    );
}

#[test]
fn what_run_writes_a_ledger_survives_a_reopen_and_is_replaced_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let mut ledger = SqliteLedger::open(&path).unwrap();
    ledger.set_group_commit(true).unwrap();
    ledger
        .set_run_facts(&[("scenario", "a".to_string()), ("seed", "3".to_string())])
        .unwrap();
    drop(ledger);
    let mut ledger = SqliteLedger::open(&path).unwrap();
    let facts = ledger.run_facts().unwrap();
    assert_eq!(
        facts,
        vec![
            ("scenario".to_string(), "a".to_string()),
            ("seed".to_string(), "3".to_string())
        ]
    );
    ledger.set_run_facts(&[("seed", "4".to_string())]).unwrap();
    assert_eq!(
        ledger.run_facts().unwrap(),
        vec![("seed".to_string(), "4".to_string())]
    );
    // Facts are updated by name, the others kept.
    ledger
        .update_run_facts(&[("life", "ended".to_string()), ("seed", "5".to_string())])
        .unwrap();
    assert_eq!(
        ledger.run_facts().unwrap(),
        vec![
            ("life".to_string(), "ended".to_string()),
            ("seed".to_string(), "5".to_string())
        ]
    );
}

#[test]
fn a_ledger_from_a_newer_version_is_refused_with_advice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.sqlite");
    drop(SqliteLedger::open(&path).unwrap());
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let err = SqliteLedger::open(&path).unwrap_err();
    assert!(matches!(err, DurableError::LedgerTooNew { found, .. } if found == SCHEMA_VERSION + 1));
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("newer stampede"), "{message}");
}

#[test]
fn a_file_that_is_not_a_database_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(
        &path,
        "this is not a ledger, just some text that is long enough to have a header page",
    )
    .unwrap();
    let err = SqliteLedger::open(&path).unwrap_err();
    assert!(matches!(err, DurableError::LedgerOpen { .. }), "{err:?}");
    assert!(err.to_string().contains("notes.txt"), "{err}");
}

/// A ledger deleted without its write-ahead log is not taken for a new one: the run it
/// belonged to would start afresh as if nothing had been recorded.
#[test]
fn a_write_ahead_log_without_its_ledger_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    std::fs::write(dir.path().join("ledger.sqlite-wal"), b"left behind").unwrap();
    let err = SqliteLedger::open(&path).unwrap_err();
    assert!(
        matches!(err, DurableError::LedgerWalOrphan { .. }),
        "{err:?}"
    );
    assert!(!path.exists(), "no new ledger was made");
}

/// Columns of the wrong type and bytes that are not UTF-8 are a row edited outside
/// Stampede: corrupt, naming the job, never a disk or lock problem (the message used to
/// advise checking free space and other runners).
#[test]
fn a_column_that_does_not_read_is_corruption_of_its_row() {
    let edits = [
        ("UPDATE entries SET attempts = 1.5", "job 5"),
        ("UPDATE entries SET state = CAST(x'ff00' AS TEXT)", "job 5"),
        ("UPDATE entries SET attempts = 'many'", "job 5"),
        ("UPDATE entries SET operation_id = x'00ff'", "job 5"),
    ];
    for (edit, named) in edits {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.sqlite");
        let mut ledger = SqliteLedger::open(&path).unwrap();
        ledger.put(&entry(5, ActionState::Planned, 0)).unwrap();
        Connection::open(&path).unwrap().execute(edit, []).unwrap();
        let err = ledger.all_entries().unwrap_err();
        assert!(
            matches!(err, DurableError::LedgerCorrupt { .. }),
            "{edit}: {err:?}"
        );
        let message = err.to_string();
        assert!(message.contains(named), "{edit}: {message}");
        assert!(!message.contains("free space"), "{edit}: {message}");
    }
}

#[test]
fn a_row_edited_outside_stampede_is_reported_as_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let mut ledger = SqliteLedger::open(&path).unwrap();
    ledger.put(&entry(5, ActionState::Planned, 0)).unwrap();
    Connection::open(&path)
        .unwrap()
        .execute("UPDATE entries SET state = 'exploded'", [])
        .unwrap();
    let err = ledger.entries().unwrap_err();
    assert!(
        matches!(err, stampede_core::LedgerError::Corrupt(_)),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("exploded") && err.to_string().contains("job 5"),
        "{err}"
    );
}

#[test]
fn the_file_holds_a_reference_to_the_key_never_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let mut ledger = SqliteLedger::open(&path).unwrap();
    for id in 1..=5 {
        ledger.put(&entry(id, ActionState::InFlight, 1)).unwrap();
    }
    // In this process the key is known: entries come back whole.
    assert_eq!(
        ledger.entries().unwrap()[0].job.credential,
        "sk-acme-shared"
    );
    drop(ledger);
    let mut bytes = std::fs::read(&path).unwrap();
    for side in ["-wal", "-shm"] {
        if let Ok(b) = std::fs::read(format!("{}{side}", path.display())) {
            bytes.extend(b);
        }
    }
    let needle = b"sk-acme-shared";
    assert!(
        !bytes.windows(needle.len()).any(|w| w == needle),
        "the full key is in the ledger file"
    );
    // A reader that does not know the key sees the reference: masked, with its hash.
    let reader = SqliteLedger::open(&path).unwrap();
    let c = reader.entries().unwrap()[0].job.credential;
    assert!(c.starts_with("credref:v1:sk-...:"), "{c}");
}

#[cfg(unix)]
#[test]
fn a_new_ledger_file_is_private_to_its_owner() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let mut ledger = SqliteLedger::open(&path).unwrap();
    ledger.put(&entry(1, ActionState::InFlight, 1)).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
    let wal = std::fs::metadata(format!("{}-wal", path.display()))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(wal & 0o077, 0, "the WAL is readable by others: {wal:o}");
}

#[test]
fn group_commit_writes_pending_puts_at_flush_and_reads_them_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let mut ledger = SqliteLedger::open(&path).unwrap();
    ledger.set_group_commit(true).unwrap();
    let on_disk = || -> i64 {
        Connection::open(&path)
            .unwrap()
            .query_row("SELECT COUNT(*) FROM entries", [], |r| r.get(0))
            .unwrap()
    };
    for id in 1..=50 {
        ledger.put(&entry(id, ActionState::Planned, 0)).unwrap();
    }
    ledger.put(&entry(7, ActionState::InFlight, 1)).unwrap();
    assert_eq!(on_disk(), 0, "nothing written before the flush");
    // The ledger itself sees what is pending (a restore reads it).
    let seen = ledger.entries().unwrap();
    assert_eq!(seen.len(), 50);
    assert_eq!(seen[6].state, ActionState::InFlight);
    ledger.flush().unwrap();
    assert_eq!(on_disk(), 50, "one group, all durable");
    ledger.put(&entry(51, ActionState::Planned, 0)).unwrap();
    drop(ledger);
    assert_eq!(on_disk(), 51, "a clean drop writes what is pending");
    let reopened = SqliteLedger::open(&path).unwrap();
    assert_eq!(reopened.entries().unwrap()[6].attempts, 1);
}
