//! A closed stdout (`stampede check scenarios/ | head -1`) ends the command quietly, as with
//! any Unix filter, instead of a panic inside `println!`.

#![cfg(unix)]

use std::process::{Command, Stdio};

#[test]
fn check_into_a_closed_pipe_ends_without_a_panic() {
    let scenarios = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/quickstart.toml");
    let out_dir = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(["check", scenarios, "--no-write", "--junit"])
        .arg(out_dir.path().join("junit.xml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("stampede starts");
    // Close the reading end before the command prints anything.
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("stampede ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("panicked"),
        "stampede panicked on a closed stdout: {stderr}"
    );
}

/// `run` keeps SIGPIPE ignored (a live run holds sockets): a closed stdout must still end it
/// without a panic, and the run directory is written all the same.
#[test]
fn run_into_a_closed_pipe_ends_without_a_panic() {
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/quickstart.toml");
    let out_dir = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(["run", scenario, "--no-render", "--out"])
        .arg(out_dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("stampede starts");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("stampede ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(0));
    assert!(out_dir.path().join("summary.json").exists());
}
