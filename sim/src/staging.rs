//! A virtual run's directory written whole or not at all.
//!
//! A run plays for seconds to minutes, and a run directory is read as one thing (`diff`,
//! `--baseline`, `audit verify`, a CI artifact). Written in place, a run stopped part way
//! (Ctrl-C, a CI step's timeout, a full disk) had left an earlier run's `summary.json` and
//! page beside its own partial `attempts.csv`, and had already removed the earlier run's
//! audit trail: a folder that read as the earlier run and held half of another.
//!
//! So the run writes into [`PARTIAL_DIR`] inside its directory, and only a finished run is
//! moved into place ([`Staging::publish`]), file by file, each by a rename: an earlier
//! run's files stay whole until then. A run stopped part way leaves the earlier run as it
//! was, and its own partial files in [`PARTIAL_DIR`], which the next run into the folder
//! clears. Only the run's own names are replaced or removed: a folder given as `--out`
//! may hold anything else, which is left alone.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The folder inside a run directory where a run being played writes its files.
pub const PARTIAL_DIR: &str = ".stampede-partial";

/// Files an earlier run may have left that a run does not always write (the audit trail
/// is written on request only): removed when a run that did not write them is published,
/// so none is taken for the new run's own.
const SOMETIMES_WRITTEN: [&str; 2] = ["audit.jsonl", "audit.jsonl.head"];

/// A run directory being written: the files go to [`Staging::path`] until
/// [`Staging::publish`] moves them into the directory.
#[derive(Debug)]
pub struct Staging {
    dir: PathBuf,
    partial: PathBuf,
}

impl Staging {
    /// Starts a run in `dir` (made if missing): clears what a run stopped part way left in
    /// its [`PARTIAL_DIR`], and makes that folder afresh.
    pub fn begin(dir: &Path) -> io::Result<Staging> {
        fs::create_dir_all(dir)?;
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
        })
    }

    /// Where the run writes its files until it is published.
    pub fn path(&self) -> &Path {
        &self.partial
    }

    /// Moves the finished run's files into the directory, replacing an earlier run's of the
    /// same names and removing those of its files this run did not write
    /// ([`SOMETIMES_WRITTEN`]), then removes the partial folder. `files`, paths under
    /// [`Staging::path`], are given back under the directory.
    pub fn publish(self, files: Vec<PathBuf>) -> io::Result<Vec<PathBuf>> {
        let mut names: Vec<_> = fs::read_dir(&self.partial)?
            .map(|entry| entry.map(|e| e.file_name()))
            .collect::<io::Result<_>>()?;
        // The page last: until it is moved, a reader of the folder finds the earlier run's
        // page or none, never a page of this run whose data is not there yet.
        names.sort_by_key(|name| name == "index.html");
        for name in &names {
            let to = self.dir.join(name);
            // A folder (the plots) is replaced whole: a rename cannot replace a folder
            // that holds files.
            if fs::symlink_metadata(&to).is_ok_and(|m| m.is_dir()) {
                fs::remove_dir_all(&to)?;
            }
            fs::rename(self.partial.join(name), &to)?;
        }
        for stale in SOMETIMES_WRITTEN {
            if !names.iter().any(|n| n == stale) {
                remove_if_there(&self.dir.join(stale))?;
            }
        }
        fs::remove_dir(&self.partial)?;
        Ok(files
            .into_iter()
            .map(|f| match f.strip_prefix(&self.partial) {
                Ok(rest) => self.dir.join(rest),
                Err(_) => f,
            })
            .collect())
    }
}

fn remove_if_there(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
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
            ("plots/a.svg", "old plot"),
            ("notes.txt", "the user's"),
        ] {
            fs::write(dir.join(name), text).unwrap();
        }
        // A run stopped part way: its partial files stay apart, the earlier run whole.
        let stopped = Staging::begin(&dir).unwrap();
        fs::write(stopped.path().join("attempts.csv"), "partial").unwrap();
        drop(stopped);
        assert_eq!(fs::read_to_string(dir.join("summary.json")).unwrap(), "old");
        assert!(!dir.join("attempts.csv").exists());
        assert!(dir.join("audit.jsonl").exists());

        // The next run clears them, and its finished files replace the earlier run's.
        let run = Staging::begin(&dir).unwrap();
        assert!(!run.path().join("attempts.csv").exists(), "cleared");
        fs::create_dir(run.path().join("plots")).unwrap();
        fs::write(run.path().join("plots/b.svg"), "new plot").unwrap();
        fs::write(run.path().join("summary.json"), "new").unwrap();
        fs::write(run.path().join("index.html"), "page").unwrap();
        let files = vec![
            run.path().join("summary.json"),
            run.path().join("plots/b.svg"),
        ];
        let published = run.publish(files).unwrap();
        assert_eq!(
            published,
            vec![dir.join("summary.json"), dir.join("plots/b.svg")]
        );
        assert_eq!(fs::read_to_string(dir.join("summary.json")).unwrap(), "new");
        assert!(
            !dir.join("plots/a.svg").exists(),
            "the plots are this run's"
        );
        assert!(dir.join("plots/b.svg").exists());
        // This run wrote no audit trail: the earlier one is not left to pass for its own.
        assert!(!dir.join("audit.jsonl").exists());
        assert!(!dir.join("audit.jsonl.head").exists());
        assert_eq!(
            fs::read_to_string(dir.join("notes.txt")).unwrap(),
            "the user's"
        );
        assert!(!dir.join(PARTIAL_DIR).exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}
