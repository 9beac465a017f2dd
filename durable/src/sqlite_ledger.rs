//! The ledger of logical actions in a SQLite file, so a runner that crashes can resume.
//!
//! Durability: the file runs in WAL journal mode with `synchronous = FULL`, and every `put` is
//! one short transaction (a single upsert statement in autocommit mode). When `put` returns,
//! the entry is on disk: the scheduler calls it before the first send of an action and at every
//! state change, so what it has been told survives a crash and nothing it has not been told
//! does.
//!
//! Layout: one row per logical action in `entries`, with the fields the runner filters on as
//! columns (job id, state, attempts, waited ms, operation id, updated at, idempotency key) and
//! the whole [`Job`] as JSON. Job ids are `u64`; SQLite integers are `i64`,
//! so ids are stored bit-cast and sorted back in Rust, which keeps every id (even above
//! `i64::MAX`) exact and `entries()` in job-id order.
//!
//! Schema versions live in `PRAGMA user_version` (0 means a brand-new file):
//! - 1: the `entries` table.
//! - 2: adds the `idempotency_key` column and its index, back-filled from the job JSON, so a
//!   restarted runner finds an action by the key it reconciles with.
//!
//! Opening an older version migrates it in one transaction; a newer version is refused with
//! [`DurableError::LedgerTooNew`] rather than guessed at.
//!
//! Secrets: a job's credential is stored as a reference (its masked form and a stable hash,
//! see [`crate::credential_ref`]), never as the key. Reading resolves it back to the key when
//! this ledger knows it: keys it was given by `put` in this process, or by
//! [`SqliteLedger::add_credentials`] (a restarted runner passes its scenario's credentials).
//! A file this creates is readable and writable by its owner only (mode 0600 on Unix; SQLite
//! gives its `-wal` and `-shm` files the same mode).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection};
use stampede_core::{ActionState, Job, JobId, Ledger, LedgerEntry, LedgerError, OperationId};

use crate::credential_ref::{self, CredentialRefs};
use crate::error::DurableError;

/// The schema version this build writes and the newest it can read. Version 3 added the
/// `run` table: what the run that writes the ledger is (see [`SqliteLedger::run_facts`]).
pub const SCHEMA_VERSION: i64 = 3;

/// The run fact a ledger migrated from before schema version 3 holds until a run records
/// itself ([`SqliteLedger::set_run_facts`] replaces it): its entries were written before
/// runs recorded what they are, so the first run that resumes it is taken as theirs. A
/// ledger with entries and neither its run's facts nor this one had them deleted.
pub const UNBOUND_FACT: &str = "unbound";

/// How long a statement waits for a lock held by another connection before failing (ms).
const BUSY_TIMEOUT_MS: u64 = 5_000;

/// How hard SQLite works to make a commit durable. See the `ledger_puts` example for what
/// each costs on a given machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// fsync the WAL at every commit: a returned `put` survives power loss. The default.
    #[default]
    Full,
    /// fsync only at checkpoints: a returned `put` survives a process crash but the last
    /// commits may be lost on power loss. For benchmarks and throwaway runs.
    Normal,
}

impl Synchronous {
    fn pragma_value(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::Normal => "NORMAL",
        }
    }
}

/// Options for [`SqliteLedger::open_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct LedgerOptions {
    /// How hard a returned put is synced to disk (default: [`Synchronous::Full`]).
    pub synchronous: Synchronous,
}

/// A [`Ledger`] in a SQLite file (or in memory, for tests).
#[derive(Debug)]
pub struct SqliteLedger {
    conn: Connection,
    /// For messages: the file, or `:memory:`.
    path: PathBuf,
    /// Keys the stored credential references resolve back to.
    credentials: CredentialRefs,
    /// Group commit: puts not yet written, the latest per job (`None`: every put is
    /// written and synced before it returns).
    pending: Option<BTreeMap<JobId, LedgerEntry>>,
    /// The ledger file, held open with an exclusive advisory lock (`flock`) for as long as
    /// the ledger is: a second runner on the same file is refused at open, where it used
    /// to restore the first one's live actions and send them again (a write committed
    /// twice). `None` in memory. Declared after `conn` so it is closed after SQLite's
    /// handle (SQLite's own locks are `fcntl` locks, which closing another handle to the
    /// file would release while SQLite still held it).
    _lock: Option<File>,
}

/// Refuses a database that is not a Stampede ledger before anything is written to it:
/// one that records no schema version but holds tables, or records one but has no
/// `entries` table. Taking such a file as a ledger added a table, a version and WAL mode
/// to another program's database.
fn refuse_foreign(conn: &Connection, path: &Path) -> Result<(), DurableError> {
    // A file that is no database at all fails here first: an error of opening it.
    let sql_err = |_: &str, source| DurableError::LedgerOpen {
        path: path.to_path_buf(),
        source,
    };
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .and_then(|mut statement| {
            statement
                .query_map([], |row| row.get(0))?
                .collect::<Result<Vec<String>, _>>()
        })
        .map_err(|source| sql_err("list the tables", source))?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|source| sql_err("read the schema version", source))?;
    let ours = tables.iter().any(|t| t == "entries");
    if ours || (version == 0 && tables.is_empty()) {
        return Ok(());
    }
    let holds = if tables.is_empty() {
        format!("it records schema version {version} but holds no ledger table")
    } else {
        format!(
            "it holds the tables {} and no ledger table",
            tables.join(", ")
        )
    };
    Err(DurableError::LedgerForeign {
        path: path.to_path_buf(),
        holds,
    })
}

/// Opens the ledger file and takes an exclusive advisory lock on it, without waiting:
/// refused when the path is not a regular file (a folder, a device such as `/dev/null`,
/// a pipe: SQLite would write its journal files beside it) or another process holds the
/// lock (another runner on this ledger). The lock goes with the process, so a runner
/// killed with SIGKILL leaves none behind.
fn lock_exclusive(path: &Path) -> Result<File, DurableError> {
    let io_err = |source| DurableError::LedgerFile {
        path: path.to_path_buf(),
        source,
    };
    // Looked at before it is opened: opening a named pipe blocks until a writer comes.
    let meta = std::fs::metadata(path).map_err(io_err)?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a folder"
        } else {
            "not a regular file (a device, a pipe or a socket)"
        };
        return Err(DurableError::LedgerNotAFile {
            path: path.to_path_buf(),
            what,
        });
    }
    let file = File::open(path).map_err(io_err)?;
    match try_lock(&file) {
        Ok(true) => Ok(file),
        Ok(false) => Err(DurableError::LedgerInUse {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(io_err(e)),
    }
}

/// Takes an exclusive `flock(2)` on `file` without waiting: `Ok(false)` when another open
/// file description holds one. (std's `File::try_lock` is the same call, from Rust 1.89,
/// past this workspace's minimum version.)
#[cfg(unix)]
fn try_lock(file: &File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock(2) on a descriptor `file` owns and keeps open; no memory is touched.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// No advisory lock off Unix: the ledger is opened as before.
#[cfg(not(unix))]
fn try_lock(_file: &File) -> std::io::Result<bool> {
    Ok(true)
}

/// Creates `path` empty with mode 0600 when it does not exist yet (SQLite takes an empty file
/// as a new database).
#[cfg(unix)]
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(not(unix))]
fn create_private(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

impl SqliteLedger {
    /// Opens (creating if needed) the ledger at `path` with `synchronous = FULL`, migrating an
    /// older schema.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, DurableError> {
        Self::open_with(path, LedgerOptions::default())
    }

    /// Opens (creating if needed) the ledger at `path` with the given options.
    pub fn open_with(path: impl AsRef<Path>, options: LedgerOptions) -> Result<Self, DurableError> {
        let path = path.as_ref().to_path_buf();
        let open_err = |source| DurableError::LedgerOpen {
            path: path.clone(),
            source,
        };
        let wal = PathBuf::from(format!("{}-wal", path.display()));
        if !path.exists() && wal.exists() {
            // The ledger went without its log: a new one here would start afresh (and a
            // first life resets the provider) as if nothing had been recorded.
            return Err(DurableError::LedgerWalOrphan { path, wal });
        }
        if let Err(e) = create_private(&path) {
            return Err(open_err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(format!("cannot create the file: {e}")),
            )));
        }
        let lock = lock_exclusive(&path)?;
        let conn = Connection::open(&path).map_err(open_err)?;
        conn.busy_timeout(Duration::from_millis(BUSY_TIMEOUT_MS))
            .map_err(open_err)?;
        refuse_foreign(&conn, &path)?;
        // SQLite opens a file it may not write read-only, without a word: the run would
        // get as far as its first write ahead of a send and stop there.
        if conn
            .is_readonly(rusqlite::DatabaseName::Main)
            .unwrap_or(false)
        {
            return Err(DurableError::LedgerReadOnly { path });
        }
        // journal_mode answers with the mode in force; anything but WAL on a file means the
        // durability story above does not hold, so say so instead of running on.
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(open_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(DurableError::LedgerNotWal { path, mode });
        }
        conn.pragma_update(None, "synchronous", options.synchronous.pragma_value())
            .map_err(open_err)?;
        let mut ledger = Self {
            conn,
            path,
            credentials: CredentialRefs::default(),
            pending: None,
            _lock: Some(lock),
        };
        ledger.migrate()?;
        Ok(ledger)
    }

    /// Makes these keys resolvable: entries stored with a reference to one of them read back
    /// with the key itself. A restarted runner passes its scenario's credentials.
    pub fn add_credentials<'a>(&mut self, keys: impl IntoIterator<Item = &'a str>) {
        for key in keys {
            self.credentials.add(key);
        }
    }

    /// Turns group commit on (or off, after writing what is pending): `put` then only
    /// records the entry, and [`Ledger::flush`] writes every pending one in one transaction,
    /// one fsync. The durability promise moves to the flush: a driver flushes before any
    /// send leaves (see `Scheduler::flush_ledger`), so an action is still on disk before its
    /// first attempt. A crash loses only the state changes since the last flush, which a
    /// restart treats as the earlier, safer state (an in-flight action is reconciled).
    pub fn set_group_commit(&mut self, on: bool) -> Result<(), DurableError> {
        if on {
            self.pending.get_or_insert_with(BTreeMap::new);
            Ok(())
        } else {
            self.write_pending()?;
            self.pending = None;
            Ok(())
        }
    }

    /// Writes the pending puts in one transaction.
    fn write_pending(&mut self) -> Result<(), DurableError> {
        let Some(pending) = self.pending.take().filter(|p| !p.is_empty()) else {
            return Ok(());
        };
        let begin = self.conn.execute_batch("BEGIN IMMEDIATE");
        begin.map_err(|source| self.sql_err("begin a group commit", source))?;
        for entry in pending.values() {
            if let Err(e) = self.put_entry(entry) {
                let _ = self.conn.execute_batch("ROLLBACK");
                self.pending = Some(pending);
                return Err(e);
            }
        }
        if let Err(source) = self.conn.execute_batch("COMMIT") {
            let _ = self.conn.execute_batch("ROLLBACK");
            self.pending = Some(pending);
            return Err(self.sql_err("commit a group of entries", source));
        }
        self.pending = Some(BTreeMap::new());
        Ok(())
    }

    /// A ledger that lives only as long as this value: for tests and the virtual driver's
    /// unit tests. Same schema and code paths as a file, minus WAL.
    pub fn open_in_memory() -> Result<Self, DurableError> {
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|source| DurableError::LedgerOpen {
            path: path.clone(),
            source,
        })?;
        let mut ledger = Self {
            conn,
            path,
            credentials: CredentialRefs::default(),
            pending: None,
            _lock: None,
        };
        ledger.migrate()?;
        Ok(ledger)
    }

    /// The file this ledger lives in (`:memory:` for an in-memory one).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open file (always [`SCHEMA_VERSION`] after `open`).
    pub fn schema_version(&self) -> Result<i64, DurableError> {
        self.conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(|source| self.sql_err("read the schema version", source))
    }

    /// Inserts or replaces the entry for `entry.job.id`; durable when it returns.
    pub fn put_entry(&mut self, entry: &LedgerEntry) -> Result<(), DurableError> {
        // The key stays in memory (to resolve the reference back); the file gets the reference.
        self.credentials.add(&entry.job.credential);
        let mut job = entry.job.clone();
        if !credential_ref::is_reference(&job.credential) {
            job.credential = credential_ref::reference(&job.credential).into();
        }
        let job_json = serde_json::to_string(&job).map_err(|e| DurableError::LedgerCorrupt {
            path: self.path.clone(),
            job: entry.job.id.to_string(),
            problem: format!("the job does not encode as JSON: {e}"),
        })?;
        // One statement in autocommit mode is one transaction: a crash leaves either the old
        // row or the new one, never half of each.
        self.conn
            .prepare_cached(
                "INSERT INTO entries \
                 (job_id, state, attempts, waited_ms, operation_id, updated_at, idempotency_key, job_json) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
                 ON CONFLICT(job_id) DO UPDATE SET \
                 state = excluded.state, attempts = excluded.attempts, waited_ms = excluded.waited_ms, \
                 operation_id = excluded.operation_id, updated_at = excluded.updated_at, \
                 idempotency_key = excluded.idempotency_key, job_json = excluded.job_json",
            )
            .and_then(|mut stmt| {
                let key = entry.job.idempotency_key.as_ref().map(|k| k.text());
                stmt.execute(params![
                    id_to_sql(entry.job.id),
                    state_name(entry.state),
                    entry.attempts,
                    millis_to_sql(entry.waited_ms),
                    entry.operation_id.as_deref(),
                    millis_to_sql(entry.updated_at),
                    key.as_deref(),
                    job_json,
                ])
            })
            .map_err(|source| self.sql_err(&format!("store the entry of job {}", entry.job.id), source))?;
        Ok(())
    }

    /// What the run that writes this ledger recorded about itself, by fact name, in name
    /// order: a restart compares its own facts with them, so a ledger is never resumed by
    /// a run of another scenario, seed or configuration. Empty for a ledger no run has
    /// described (a new one, or one from before schema version 3).
    pub fn run_facts(&self) -> Result<Vec<(String, String)>, DurableError> {
        let mut statement = self
            .conn
            .prepare("SELECT fact, value FROM run ORDER BY fact")
            .map_err(|e| self.sql_err("read what run wrote the ledger", e))?;
        let rows = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .and_then(|rows| rows.collect::<Result<Vec<(String, String)>, _>>())
            .map_err(|e| self.sql_err("read what run wrote the ledger", e))?;
        Ok(rows)
    }

    /// Records what the run that writes this ledger is, replacing what was recorded;
    /// durable when it returns (whatever the group commit holds pending).
    pub fn set_run_facts(&mut self, facts: &[(&str, String)]) -> Result<(), DurableError> {
        self.write_run_facts(facts, true)
    }

    /// Records these facts of the run that writes this ledger, each replacing the fact of
    /// its name and the others kept, in one transaction; durable when it returns (whatever
    /// the group commit holds pending).
    pub fn update_run_facts(&mut self, facts: &[(&str, String)]) -> Result<(), DurableError> {
        self.write_run_facts(facts, false)
    }

    /// Writes `facts` in one transaction, first deleting every fact when `replace_all`.
    fn write_run_facts(
        &mut self,
        facts: &[(&str, String)],
        replace_all: bool,
    ) -> Result<(), DurableError> {
        let path = self.path.clone();
        let sql_err = |source| DurableError::LedgerSql {
            path: path.clone(),
            action: "record what run writes the ledger".into(),
            source,
        };
        let tx = self.conn.transaction().map_err(sql_err)?;
        if replace_all {
            tx.execute("DELETE FROM run", []).map_err(sql_err)?;
        }
        for (fact, value) in facts {
            tx.execute(
                "INSERT OR REPLACE INTO run (fact, value) VALUES (?1, ?2)",
                params![fact, value],
            )
            .map_err(sql_err)?;
        }
        tx.commit().map_err(sql_err)
    }

    /// Copies what the write-ahead log holds into the file itself and empties the log
    /// (`wal_checkpoint(TRUNCATE)`): what was committed is then in the ledger's own file,
    /// which a copy of that file alone (without its `-wal`) still holds.
    pub fn checkpoint(&mut self) -> Result<(), DurableError> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(|e| self.sql_err("checkpoint the write-ahead log", e))
    }

    /// Every entry, ordered by job id.
    pub fn all_entries(&self) -> Result<Vec<LedgerEntry>, DurableError> {
        let mut entries = self.select("", [], "read the entries")?;
        entries.sort_by_key(|entry| entry.job.id);
        Ok(entries)
    }

    /// The entry for one job, if any.
    pub fn get(&self, id: JobId) -> Result<Option<LedgerEntry>, DurableError> {
        let mut found = self.select("WHERE job_id = ?1", [id_to_sql(id)], "read one entry")?;
        Ok(found.pop())
    }

    /// The entries whose job carries this idempotency key, ordered by job id (normally at most
    /// one: the key is per logical action).
    pub fn find_by_idempotency_key(&self, key: &str) -> Result<Vec<LedgerEntry>, DurableError> {
        let mut entries = self.select(
            "WHERE idempotency_key = ?1",
            [key],
            "look up an idempotency key",
        )?;
        entries.sort_by_key(|entry| entry.job.id);
        Ok(entries)
    }

    fn select<P: rusqlite::Params>(
        &self,
        filter: &str,
        params: P,
        action: &str,
    ) -> Result<Vec<LedgerEntry>, DurableError> {
        let sql = format!(
            "SELECT job_id, state, attempts, waited_ms, operation_id, updated_at, job_json FROM entries {filter}"
        );
        let mut stmt = self
            .conn
            .prepare_cached(&sql)
            .map_err(|source| self.sql_err(action, source))?;
        let rows = stmt
            .query_map(params, |row| {
                let read = || {
                    Ok(StoredRow {
                        job_id: row.get(0)?,
                        state: row.get(1)?,
                        attempts: row.get(2)?,
                        waited_ms: row.get(3)?,
                        operation_id: row.get(4)?,
                        updated_at: row.get(5)?,
                        job_json: row.get(6)?,
                    })
                };
                // A column of the wrong type (NULL, text for a number, bytes that are not
                // UTF-8) is a row edited or damaged outside Stampede: said as such, with
                // the row's job when that much reads.
                Ok(read().map_err(|e| (row.get::<_, i64>(0).ok(), e)))
            })
            .map_err(|source| self.sql_err(action, source))?;
        let mut entries = Vec::new();
        for row in rows {
            let row = match row.map_err(|source| self.sql_err(action, source))? {
                Ok(row) => row,
                Err((job, source)) if is_decode_error(&source) => {
                    return Err(DurableError::LedgerCorrupt {
                        path: self.path.clone(),
                        job: job.map_or("(unreadable id)".to_string(), |id| {
                            id_from_sql(id).to_string()
                        }),
                        problem: format!("a column does not read: {source}"),
                    });
                }
                Err((_, source)) => return Err(self.sql_err(action, source)),
            };
            let mut entry = row.decode(&self.path)?;
            entry.job.credential = self.credentials.resolve(&entry.job.credential).into();
            entries.push(entry);
        }
        Ok(entries)
    }

    /// Brings the file to [`SCHEMA_VERSION`], one version step at a time, in one
    /// transaction.
    fn migrate(&mut self) -> Result<(), DurableError> {
        let found = self.schema_version()?;
        if found > SCHEMA_VERSION {
            return Err(DurableError::LedgerTooNew {
                path: self.path.clone(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        if found == SCHEMA_VERSION {
            return Ok(());
        }
        let path = self.path.clone();
        let sql_err = |action: &str, source| DurableError::LedgerSql {
            path: path.clone(),
            action: action.into(),
            source,
        };
        let tx = self
            .conn
            .transaction()
            .map_err(|e| sql_err("start the schema migration", e))?;
        if found < 1 {
            tx.execute_batch(
                "CREATE TABLE entries (
                    job_id       INTEGER PRIMARY KEY,  -- JobId (u64) bit-cast to i64
                    state        TEXT    NOT NULL,     -- ActionState, snake_case
                    attempts     INTEGER NOT NULL,
                    waited_ms    INTEGER NOT NULL,     -- ms
                    operation_id TEXT,
                    updated_at   INTEGER NOT NULL,     -- ms since run start
                    job_json     TEXT    NOT NULL      -- stampede_core::Job as JSON
                );",
            )
            .map_err(|e| sql_err("create the schema (version 1)", e))?;
        }
        if found < 2 {
            tx.execute_batch(
                "ALTER TABLE entries ADD COLUMN idempotency_key TEXT;
                 UPDATE entries SET idempotency_key = json_extract(job_json, '$.idempotency_key');
                 CREATE INDEX entries_by_idempotency_key ON entries(idempotency_key);",
            )
            .map_err(|e| sql_err("migrate the schema to version 2", e))?;
        }
        if found < 3 {
            tx.execute_batch(
                "CREATE TABLE run (
                    fact  TEXT PRIMARY KEY,  -- what it says (scenario, seed, workload, ...)
                    value TEXT NOT NULL
                );",
            )
            .map_err(|e| sql_err("migrate the schema to version 3", e))?;
            if found > 0 {
                // Its entries were written before runs recorded themselves: say so, or an
                // empty `run` table would read as one whose rows were deleted.
                tx.execute(
                    "INSERT INTO run (fact, value) VALUES (?1, ?2)",
                    params![
                        UNBOUND_FACT,
                        format!("migrated from schema version {found}")
                    ],
                )
                .map_err(|e| sql_err("migrate the schema to version 3", e))?;
            }
        }
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(|e| sql_err("record the schema version", e))?;
        tx.commit()
            .map_err(|e| sql_err("commit the schema migration", e))?;
        Ok(())
    }

    fn sql_err(&self, action: &str, source: rusqlite::Error) -> DurableError {
        DurableError::LedgerSql {
            path: self.path.clone(),
            action: action.to_string(),
            source,
        }
    }
}

impl Ledger for SqliteLedger {
    fn put(&mut self, entry: &LedgerEntry) -> Result<(), LedgerError> {
        match &mut self.pending {
            Some(pending) => {
                self.credentials.add(&entry.job.credential);
                pending.insert(entry.job.id, entry.clone());
                Ok(())
            }
            None => self.put_entry(entry).map_err(LedgerError::from),
        }
    }

    /// Stored entries with the pending ones over them.
    fn entries(&self) -> Result<Vec<LedgerEntry>, LedgerError> {
        let mut all = self.all_entries().map_err(LedgerError::from)?;
        if let Some(pending) = self.pending.as_ref().filter(|p| !p.is_empty()) {
            let mut by_id: BTreeMap<JobId, LedgerEntry> =
                all.drain(..).map(|e| (e.job.id, e)).collect();
            for (id, e) in pending {
                by_id.insert(*id, e.clone());
            }
            all = by_id.into_values().collect();
        }
        Ok(all)
    }

    fn flush(&mut self) -> Result<(), LedgerError> {
        self.write_pending().map_err(LedgerError::from)
    }
}

impl Drop for SqliteLedger {
    /// What is pending is written on a clean drop (a crash loses it, as documented).
    fn drop(&mut self) {
        let _ = self.write_pending();
    }
}

impl From<DurableError> for LedgerError {
    fn from(err: DurableError) -> Self {
        match err {
            DurableError::LedgerCorrupt { .. } => LedgerError::Corrupt(err.to_string()),
            other => LedgerError::Storage(other.to_string()),
        }
    }
}

/// One row as SQLite hands it back, before it is checked.
struct StoredRow {
    job_id: i64,
    state: String,
    attempts: i64,
    waited_ms: i64,
    operation_id: Option<String>,
    updated_at: i64,
    job_json: String,
}

impl StoredRow {
    fn decode(self, path: &Path) -> Result<LedgerEntry, DurableError> {
        let id = id_from_sql(self.job_id);
        let corrupt = |problem: String| DurableError::LedgerCorrupt {
            path: path.to_path_buf(),
            job: id.to_string(),
            problem,
        };
        let job: Job = serde_json::from_str(&self.job_json)
            .map_err(|e| corrupt(format!("the stored job JSON does not decode: {e}")))?;
        // The column is the key; the JSON is the payload. If they disagree the row was edited.
        if job.id != id {
            return Err(corrupt(format!(
                "the row's key is job {id} but its JSON is job {}",
                job.id
            )));
        }
        let state: ActionState =
            serde_json::from_value(serde_json::Value::String(self.state.clone()))
                .map_err(|_| corrupt(format!("unknown state {:?}", self.state)))?;
        let attempts = u32::try_from(self.attempts)
            .map_err(|_| corrupt(format!("attempts {} is not a count", self.attempts)))?;
        Ok(LedgerEntry {
            job,
            state,
            attempts,
            waited_ms: self.waited_ms as u64,
            operation_id: self.operation_id.map(OperationId::from),
            updated_at: self.updated_at as u64,
        })
    }
}

/// Whether reading a row failed on what the row holds (a column of the wrong type or not
/// UTF-8) rather than on the database.
fn is_decode_error(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::Utf8Error(..)
            | rusqlite::Error::IntegralValueOutOfRange(..)
    )
}

/// The snake_case name serde gives a state (the same text the JSON report uses).
fn state_name(state: ActionState) -> String {
    match serde_json::to_value(state) {
        Ok(serde_json::Value::String(name)) => name,
        // A unit enum always serializes to a string; fall back to Debug rather than panic.
        _ => format!("{state:?}"),
    }
}

/// u64 values are stored bit-cast into SQLite's i64 so every value round-trips exactly.
fn id_to_sql(id: JobId) -> i64 {
    id as i64
}

fn id_from_sql(id: i64) -> JobId {
    id as u64
}

fn millis_to_sql(ms: u64) -> i64 {
    ms as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names_are_the_serde_names() {
        assert_eq!(
            state_name(ActionState::ReconciliationRequired),
            "reconciliation_required"
        );
        assert_eq!(state_name(ActionState::InFlight), "in_flight");
    }

    #[test]
    fn ids_above_i64_max_round_trip() {
        for id in [0, 1, i64::MAX as u64, i64::MAX as u64 + 1, u64::MAX] {
            assert_eq!(id_from_sql(id_to_sql(id)), id);
        }
    }

    #[test]
    fn each_connection_runs_with_the_synchronous_level_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let level = |ledger: &SqliteLedger| -> i64 {
            ledger
                .conn
                .query_row("PRAGMA synchronous", [], |row| row.get(0))
                .unwrap()
        };
        let full = SqliteLedger::open(dir.path().join("a.sqlite")).unwrap();
        assert_eq!(level(&full), 2); // FULL
        let options = LedgerOptions {
            synchronous: Synchronous::Normal,
        };
        let normal = SqliteLedger::open_with(dir.path().join("b.sqlite"), options).unwrap();
        assert_eq!(level(&normal), 1); // NORMAL
    }

    /// Two runners on one ledger would both restore its live actions and send them again
    /// (a helper saw 1,770 records committed twice): the second open is refused while the
    /// first ledger is open, and succeeds once it is closed.
    #[test]
    fn a_ledger_open_in_one_runner_is_refused_to_another() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let first = SqliteLedger::open(&path).unwrap();
        let second = SqliteLedger::open(&path).unwrap_err();
        assert!(
            matches!(second, DurableError::LedgerInUse { .. }),
            "{second}"
        );
        assert!(second.to_string().contains("in use by another runner"));
        drop(first);
        SqliteLedger::open(&path).expect("free again once the first is closed");
    }

    /// Another program's database is refused before anything is written to it: no ledger
    /// table, no schema version, and its journal mode as it was.
    #[test]
    fn another_programs_database_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);")
                .unwrap();
        }
        let refused = SqliteLedger::open(&path).unwrap_err();
        assert!(
            matches!(refused, DurableError::LedgerForeign { .. }),
            "{refused}"
        );
        assert!(refused.to_string().contains("tables users"), "{refused}");
        let conn = Connection::open(&path).unwrap();
        let tables: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!((tables, version, mode.as_str()), (1, 0, "delete"));
    }

    /// A folder, or a link to a device, is refused before SQLite opens it (it would write
    /// its journal files beside the device, in /dev).
    #[cfg(unix)]
    #[test]
    fn a_ledger_path_that_is_no_regular_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let refused = SqliteLedger::open(dir.path()).unwrap_err();
        assert!(refused.to_string().contains("is a folder"), "{refused}");
        let link = dir.path().join("null.db");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let refused = SqliteLedger::open(&link).unwrap_err();
        assert!(
            matches!(refused, DurableError::LedgerNotAFile { .. }),
            "{refused}"
        );
        // A named pipe is refused too, not opened (which waits for a writer forever).
        let fifo = dir.path().join("fifo.db");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) with a NUL-terminated path in a folder this test owns.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let refused = SqliteLedger::open(&fifo).unwrap_err();
        assert!(
            matches!(refused, DurableError::LedgerNotAFile { .. }),
            "{refused}"
        );
    }

    #[test]
    fn a_fresh_in_memory_ledger_is_at_the_current_version_and_empty() {
        let ledger = SqliteLedger::open_in_memory().unwrap();
        assert_eq!(ledger.schema_version().unwrap(), SCHEMA_VERSION);
        assert!(ledger.all_entries().unwrap().is_empty());
    }
}
