//! `$GITHUB_STEP_SUMMARY`: the file a CI runner collects each step's markdown in.
//!
//! What goes there is a copy of what the run directory and the console already hold, so a
//! step summary that cannot be written is worth a warning, never the run's verdict: the
//! variable set empty, or naming a folder or a file this process cannot write, is reported
//! and left out before anything is played.

use std::path::PathBuf;

/// The step summary to append to: `None` when the variable is unset or empty, or when the
/// file it names cannot be opened for appending (then with a warning on stderr that says
/// where the markdown is instead).
pub(crate) fn from_env() -> Option<PathBuf> {
    let value = std::env::var_os("GITHUB_STEP_SUMMARY")?;
    if value.is_empty() {
        return None;
    }
    let path = PathBuf::from(value);
    // Opened as the append will open it (created if missing), so a folder, a read-only file
    // or a missing parent folder is found now, not after the run.
    match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        Ok(_) => Some(path),
        Err(e) => {
            eprintln!(
                "warning: cannot append to $GITHUB_STEP_SUMMARY ({}): {e}; the markdown \
                 summary is left out of it (a run writes it to its directory's summary.md)",
                path.display()
            );
            None
        }
    }
}
