//! What is wrong with a scenario, and where.

use std::fmt;

/// A scenario (or a `--set` override) that cannot be run. Displays as
/// `FILE:LINE: key `KEY`: MESSAGE`, leaving out what is unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The scenario file as the user named it.
    pub file: String,
    /// 1-based line of the offending key, when it is written in the file.
    pub line: Option<usize>,
    /// Dotted key path (`client.workers`, `workload.0.arrival`), when known.
    pub key: Option<String>,
    /// What is wrong and what is expected instead.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": key `{key}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}
