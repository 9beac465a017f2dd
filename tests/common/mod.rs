//! What the command tests (`check_cmd`, `sweep_cmd`, `diff_cmd`) share: running the
//! `stampede` binary and finding the repository's scenarios.

// Compiled into both test binaries (tests/main.rs and readme_allocations.rs); the second
// uses only some of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the `stampede` binary built for these tests with `args`, and waits for it.
pub fn stampede(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(args)
        // A test must not write into CI's step summary.
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("the stampede binary runs")
}

/// A process's stdout or stderr as text.
pub fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// A finished process's stdout, then its stderr, as one text (for messages and asserts).
pub fn both(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A command that runs the repository's shell script `path` (`scripts/pairs.sh`) with bash,
/// from the repository root; add its arguments and environment, then run it.
pub fn script(path: &str) -> Command {
    let mut command = Command::new("bash");
    command.arg(repo().join(path)).current_dir(repo());
    command
}

/// The path of the shipped quickstart scenario, as an argument.
pub fn quickstart() -> String {
    let p = repo().join("scenarios").join("quickstart.toml");
    p.to_str().expect("UTF-8 path").to_string()
}

/// `p` as an argument (temporary paths are UTF-8).
pub fn a_str(p: &Path) -> &str {
    p.to_str().expect("temp paths are UTF-8")
}

/// Runs `stampede` with `args` and asserts it was refused as bad input (exit 2) saying
/// `says`, with `out_dir` (where it was told to write) not created.
#[allow(dead_code)] // Not every test binary that shares this module refuses something.
pub fn assert_refused(args: &[&str], says: &str, out_dir: &Path) {
    let out = stampede(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
    assert!(!out_dir.exists(), "{args:?}: nothing is written");
}

/// A shipped scenario, `scenarios/NAME.toml`, loaded with one `--set` override when given
/// (`client.preset=naive`).
pub fn shipped(name: &str, set: Option<&str>) -> stampede_sim::scenario::Scenario {
    let path = repo().join("scenarios").join(format!("{name}.toml"));
    let sets: Vec<_> = set
        .map(|s| stampede_sim::scenario::parse_override(s).unwrap())
        .into_iter()
        .collect();
    stampede_sim::scenario::load(&path, None, &sets).expect("shipped scenario loads")
}

/// The summary of shipped scenario `name` played in virtual time (see [`shipped`]).
pub fn shipped_summary(name: &str, set: Option<&str>) -> stampede_reports::Summary {
    let options = stampede_sim::run::RunOptions::default();
    stampede_sim::run::run_virtual(&shipped(name, set), &options)
        .expect("run plays")
        .report
        .summary
}

/// `scenario` played in virtual time with its run directory written to `dir` (no page: the
/// command renders that).
pub fn run_into(
    scenario: &stampede_sim::scenario::Scenario,
    dir: &Path,
) -> stampede_sim::run::RunOutcome {
    let options = stampede_sim::run::RunOptions {
        out_dir: Some(dir.to_path_buf()),
        ..stampede_sim::run::RunOptions::default()
    };
    stampede_sim::run::run_virtual(scenario, &options).expect("the run plays")
}

/// The names of a summary's failed expectations.
pub fn failed_expectations(s: &stampede_reports::Summary) -> Vec<String> {
    s.expectations
        .iter()
        .filter(|e| !e.pass)
        .map(|e| e.name.clone())
        .collect()
}

/// `12345` as `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
