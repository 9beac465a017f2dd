//! A virtual run's directory written whole or not at all.
//!
//! A run plays for seconds to minutes, and a run directory is read as one thing (`diff`,
//! `--baseline`, `audit verify`, a CI artifact). Written in place, a run stopped part way
//! (Ctrl-C, a CI step's timeout, a full disk) had left an earlier run's `summary.json` and
//! page beside its own partial `attempts.csv`, and had already removed the earlier run's
//! audit trail: a folder that read as the earlier run and held half of another.
//!
//! So the run writes into [`PARTIAL_DIR`] inside its directory, and only a finished run is
//! moved into place ([`Staging::publish`]), file by file, each by a rename, the summary and
//! then the page last: an earlier run's files stay whole until then. A run stopped part way
//! leaves the earlier run as it was, and its own partial files in [`PARTIAL_DIR`], which the
//! next run into the folder clears; a run that fails removes them ([`Staging::abandon`]).
//!
//! One run writes into a directory at a time: [`Staging::begin`] takes an exclusive lock on
//! the directory, held until the run is published or given up (the system drops it when
//! the process dies, however it dies), and refuses a second run into it. Two runs into one folder had
//! published one run's summary beside the other's half-written attempts.
//!
//! Only the run's own names are replaced or removed: a folder given as `--out` may hold
//! anything else, which is left alone, and a folder where the run would put a file of the
//! same name stops the publishing before anything is moved.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The folder inside a run directory where a run being played writes its files.
pub const PARTIAL_DIR: &str = ".stampede-partial";

/// Files an earlier run may have left that a run does not always write (the audit trail
/// on request only; the page and plots unless `--no-render`, `tenants.svg` for several
/// tenants, the PNGs with `--png`): removed when a run that did not write them is
/// published, so none is taken for the new run's own.
fn sometimes_written() -> impl Iterator<Item = &'static str> {
    ["audit.jsonl", "audit.jsonl.head"]
        .into_iter()
        .chain(stampede_reports::RENDERED_FILES)
}

/// A run directory being written: the files go to [`Staging::path`] until
/// [`Staging::publish`] moves them into the directory.
#[derive(Debug)]
pub struct Staging {
    dir: PathBuf,
    partial: PathBuf,
    /// The directory, opened and locked for this run (see the module's doc).
    _lock: fs::File,
}

impl Staging {
    /// Starts a run in `dir` (made if missing): locks it against a second run, clears what
    /// a run stopped part way left in its [`PARTIAL_DIR`], and makes that folder afresh.
    pub fn begin(dir: &Path) -> io::Result<Staging> {
        if fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "it is a file, where a run writes a folder of files: give --out a folder's \
                 path (made if missing)",
            ));
        }
        fs::create_dir_all(dir)?;
        let lock = lock(dir)?;
        let partial = dir.join(PARTIAL_DIR);
        match fs::remove_dir_all(&partial) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        fs::create_dir(&partial)?;
        Ok(Staging {
            dir: dir.to_path_buf(),
            partial,
            _lock: lock,
        })
    }

    /// Where the run writes its files until it is published.
    pub fn path(&self) -> &Path {
        &self.partial
    }

    /// Moves the finished run's files into the directory, replacing an earlier run's of the
    /// same names and removing those of its files this run did not write, then removes the
    /// partial folder. `files`, paths under [`Staging::path`], are given back under the
    /// directory.
    pub fn publish(self, files: Vec<PathBuf>) -> io::Result<Vec<PathBuf>> {
        let mut names: Vec<_> = fs::read_dir(&self.partial)?
            .map(|entry| entry.map(|e| e.file_name()))
            .collect::<io::Result<_>>()?;
        // A folder of the user's where a file goes is never replaced: checked for every
        // name before the first is moved, so nothing is half published.
        if let Some(name) = names
            .iter()
            .find(|name| fs::symlink_metadata(self.dir.join(name)).is_ok_and(|m| m.is_dir()))
        {
            let at = self.dir.join(name);
            return Err(io::Error::other(format!(
                "{} is a folder, where the run writes a file of that name: move it away, or \
                 give the run another --out (the run's files are in {})",
                at.display(),
                self.partial.display()
            )));
        }
        // The summary, then the page, last: until they are moved a reader of the folder
        // finds the earlier run's, never this run's before its data is there.
        names.sort_by_key(|name| match name.to_str() {
            Some("summary.json") => 1,
            Some("index.html") => 2,
            _ => 0,
        });
        for name in &names {
            fs::rename(self.partial.join(name), self.dir.join(name))?;
        }
        remove_stale(&self.dir, &names)?;
        fs::remove_dir(&self.partial)?;
        Ok(files
            .into_iter()
            .map(|f| match f.strip_prefix(&self.partial) {
                Ok(rest) => self.dir.join(rest),
                Err(_) => f,
            })
            .collect())
    }

    /// Gives up a run that failed: its partial files are removed (a full disk stays full
    /// with them), the directory's earlier run left as it is.
    pub fn abandon(self) {
        // Best effort: the run's own error is what is reported.
        let _ = fs::remove_dir_all(&self.partial);
    }
}

/// Removes from `dir` the files an earlier run may have left that this run, which wrote
/// `written` (file names), did not write: none is left to pass for this run's. A live or
/// `--client` run, which writes in place, calls it once its files are written.
/// An audit trail's head (`audit.jsonl.head`) goes with its trail: a run that lists the
/// trail among its files wrote the head beside it.
pub fn remove_stale<N: AsRef<std::ffi::OsStr>>(dir: &Path, written: &[N]) -> io::Result<()> {
    let wrote = |name: &str| written.iter().any(|n| n.as_ref() == name);
    remove_unwritten(dir, sometimes_written(), |stale| {
        wrote(stale) || (stale == "audit.jsonl.head" && wrote("audit.jsonl"))
    })
}

/// Removes from `dir` each file of `names` (the files a writer of the folder may write)
/// that this writer did not (`kept` is false), so none is left to pass for this writer's:
/// a run directory's ([`remove_stale`]), a sweep folder's plots. A folder of such a name
/// is the user's, and stays.
pub fn remove_unwritten<S: AsRef<str>>(
    dir: &Path,
    names: impl IntoIterator<Item = S>,
    kept: impl Fn(&str) -> bool,
) -> io::Result<()> {
    for name in names {
        let name = name.as_ref();
        if !kept(name) {
            remove_if_there(&dir.join(name))?;
        }
    }
    Ok(())
}

/// Takes the lock a run holds on `dir` (see the module's doc) when `dir` exists, for a run
/// that writes in place (live, `--client`): held while the returned file lives. A folder
/// not made yet is not made here (a refused run must not leave one).
pub fn lock_if_there(dir: &Path) -> io::Result<Option<fs::File>> {
    if dir.is_dir() {
        lock(dir).map(Some)
    } else {
        Ok(None)
    }
}

/// Removes the file at `path`, if one is there. A folder of that name is the user's, not a
/// file a run left: it stays.
fn remove_if_there(path: &Path) -> io::Result<()> {
    if fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        return Ok(());
    }
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// `dir`, opened and locked exclusively (`flock`), or the error that another run holds it.
#[cfg(unix)]
fn lock(dir: &Path) -> io::Result<fs::File> {
    use std::os::unix::io::AsRawFd;
    let file = fs::File::open(dir)?;
    // SAFETY: `flock` on a descriptor this function owns; it reads and writes no memory.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    if locked {
        return Ok(file);
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::WouldBlock {
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!(
                "another run is writing into {}: wait for it to end, or give this run another \
                 --out",
                dir.display()
            ),
        ));
    }
    // A file system that keeps no locks (some network ones answer ENOLCK): the run goes on
    // unlocked, as runs went before there was a lock, rather than not at all.
    Ok(file)
}

/// Elsewhere no lock is taken: two runs into one folder are the user's to avoid.
#[cfg(not(unix))]
fn lock(dir: &Path) -> io::Result<fs::File> {
    fs::File::open(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("stampede-staging-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    /// An earlier run stays whole until the new one is published, a run stopped part way
    /// leaves it so, and what the folder holds beside the run is never touched.
    #[test]
    fn an_earlier_run_is_replaced_only_by_a_finished_one() {
        let dir = folder("replace");
        fs::create_dir_all(dir.join("plots")).unwrap();
        for (name, text) in [
            ("summary.json", "old"),
            ("audit.jsonl", "old trail"),
            ("audit.jsonl.head", "old head"),
            ("index.html", "old page"),
            ("tenants.svg", "old plot"),
            ("plots/mine.svg", "the user's"),
            ("notes.txt", "the user's"),
        ] {
            fs::write(dir.join(name), text).unwrap();
        }
        // A run that failed part way: its partial files go, the earlier run stays whole.
        let failed = Staging::begin(&dir).unwrap();
        fs::write(failed.path().join("attempts.csv"), "partial").unwrap();
        failed.abandon();
        assert!(!dir.join(PARTIAL_DIR).exists());
        assert_eq!(fs::read_to_string(dir.join("summary.json")).unwrap(), "old");
        assert!(!dir.join("attempts.csv").exists());
        assert!(dir.join("audit.jsonl").exists());

        // One stopped part way (its process killed: nothing of it runs after) leaves its
        // partial files, which the next run clears before its finished files replace the
        // earlier run's.
        let stopped = dir.join(PARTIAL_DIR);
        fs::create_dir(&stopped).unwrap();
        fs::write(stopped.join("attempts.csv"), "partial").unwrap();
        let run = Staging::begin(&dir).unwrap();
        assert!(!run.path().join("attempts.csv").exists(), "cleared");
        fs::write(run.path().join("summary.json"), "new").unwrap();
        fs::write(run.path().join("dead_letter.jsonl"), "").unwrap();
        let files = vec![run.path().join("summary.json")];
        let published = run.publish(files).unwrap();
        assert_eq!(published, vec![dir.join("summary.json")]);
        assert_eq!(fs::read_to_string(dir.join("summary.json")).unwrap(), "new");
        assert!(dir.join("dead_letter.jsonl").exists());
        // This run wrote no audit trail, page or tenant plot (--no-render): the earlier
        // run's are not left to pass for its own.
        for gone in [
            "audit.jsonl",
            "audit.jsonl.head",
            "index.html",
            "tenants.svg",
        ] {
            assert!(!dir.join(gone).exists(), "{gone}");
        }
        for kept in ["notes.txt", "plots/mine.svg"] {
            assert_eq!(fs::read_to_string(dir.join(kept)).unwrap(), "the user's");
        }
        assert!(!dir.join(PARTIAL_DIR).exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A folder of the user's named like a file of the run is never replaced: the run is
    /// not published at all (nothing half moved), and says what to do.
    #[test]
    fn a_users_folder_named_like_a_run_file_stops_the_publishing() {
        // Named like a file the run would remove as an earlier run's: it stays, and the run
        // is published.
        let dir = folder("kept");
        fs::create_dir_all(dir.join("tenants.svg")).unwrap();
        fs::write(dir.join("tenants.svg").join("data"), "precious").unwrap();
        let run = Staging::begin(&dir).unwrap();
        fs::write(run.path().join("summary.json"), "new").unwrap();
        run.publish(Vec::new()).unwrap();
        assert!(dir.join("tenants.svg").join("data").exists());
        fs::remove_dir_all(&dir).unwrap();

        let dir = folder("clash");
        fs::create_dir_all(dir.join("summary.json")).unwrap();
        fs::write(dir.join("summary.json").join("data.txt"), "precious").unwrap();
        fs::write(dir.join("index.html"), "old page").unwrap();
        let run = Staging::begin(&dir).unwrap();
        fs::write(run.path().join("summary.json"), "new").unwrap();
        fs::write(run.path().join("index.html"), "new page").unwrap();
        let err = run.publish(Vec::new()).unwrap_err();
        assert!(err.to_string().contains("is a folder"), "{err}");
        assert_eq!(
            fs::read_to_string(dir.join("summary.json").join("data.txt")).unwrap(),
            "precious"
        );
        assert_eq!(
            fs::read_to_string(dir.join("index.html")).unwrap(),
            "old page"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A run that writes in place (live, `--client`) lists its files: the earlier run's
    /// page goes, its own trail and the head beside it stay.
    #[test]
    fn a_run_in_place_keeps_what_it_wrote_and_its_trails_head() {
        let dir = folder("in-place");
        fs::create_dir_all(&dir).unwrap();
        for name in ["index.html", "junit.xml", "audit.jsonl", "audit.jsonl.head"] {
            fs::write(dir.join(name), "x").unwrap();
        }
        remove_stale(&dir, &["summary.json", "audit.jsonl"]).unwrap();
        assert!(!dir.join("index.html").exists() && !dir.join("junit.xml").exists());
        assert!(dir.join("audit.jsonl").exists() && dir.join("audit.jsonl.head").exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A second run into a folder a run is writing into is refused while the first holds
    /// it, and taken once the first has ended.
    #[cfg(unix)]
    #[test]
    fn one_run_writes_into_a_folder_at_a_time() {
        let dir = folder("lock");
        let first = Staging::begin(&dir).unwrap();
        fs::write(first.path().join("attempts.csv"), "first").unwrap();
        let err = Staging::begin(&dir).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        assert!(err.to_string().contains("another run is writing"), "{err}");
        // The first run's partial files were not cleared by the refused one.
        assert!(first.path().join("attempts.csv").exists());
        first.publish(Vec::new()).unwrap();
        let second = Staging::begin(&dir).unwrap();
        second.publish(Vec::new()).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }
}
