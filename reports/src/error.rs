//! The one error type of the renderers: every variant names the file it was about.

use std::path::PathBuf;

/// What to check after an I/O error while doing `action`: a file read must exist and be
/// readable; a file written needs its folder to exist and be writable.
fn io_hint(action: &str) -> &'static str {
    if action == "reading" {
        "check that the file exists and is readable"
    } else {
        "check that the folder exists and is writable"
    }
}

/// What went wrong while reading or writing a report file.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or folder could not be created, written or read.
    #[error("{action} {path}: {source} ({})", io_hint(.action))]
    Io {
        /// What we were doing (`writing`, `reading`, `creating folder`, `appending to`).
        action: &'static str,
        /// The file or folder it was about.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A folder given as a run directory holds no `summary.json`: not a folder a run wrote.
    #[error(
        "{} is not a run directory: it holds no summary.json (give a folder `stampede run --out` \
         wrote, or its summary.json)",
        .path.display()
    )]
    NotARunDirectory {
        /// The folder given.
        path: PathBuf,
    },
    /// A `summary.json` (or other JSON file) did not parse as the expected schema.
    #[error("{path}: not a valid stampede summary: {source} (was it written by `stampede run`?)")]
    Json {
        /// The file that did not parse.
        path: PathBuf,
        /// The JSON parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A CSV file could not be written.
    #[error("writing {path}: {source}")]
    Csv {
        /// The CSV file being written.
        path: PathBuf,
        /// The CSV writer's error.
        #[source]
        source: csv::Error,
    },
    /// plotters refused to draw a plot.
    #[error("drawing plot {file}: {message}")]
    Plot {
        /// The plot's file name (`latency.svg`).
        file: String,
        /// What went wrong: the drawing or PNG error, or that this build has no PNG support.
        message: String,
    },
}

impl ReportError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        ReportError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
