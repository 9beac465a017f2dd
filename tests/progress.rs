//! Progress on the terminal: a long run draws it on stderr when stderr is a terminal, and
//! nothing at all when it is not (the output scripts and CI read stays byte for byte what
//! it was), nor with --quiet or --json.

use std::process::Command;

use crate::common;
use common::{a_str, repo, stampede, text};

fn backlog() -> String {
    let p = repo().join("scenarios").join("backlog-38k.toml");
    p.to_str().unwrap().to_string()
}

#[test]
fn nothing_but_the_table_when_output_is_not_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    // The naive backlog plays long enough for the display to report many times over.
    let output = stampede(&[
        "run",
        &backlog(),
        "--set",
        "client.preset=naive",
        "--out",
        a_str(tmp.path()),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(text(&output.stderr), "", "no progress on a pipe");
    let stdout = text(&output.stdout);
    assert!(
        stdout.starts_with("backlog-38k (seed 7, preset naive, virtual)\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("requests done") && !stdout.contains('\r'));
}

/// Runs `args` under `script`, which gives the command a terminal; `None` when the
/// machine has no `script` (util-linux).
fn on_a_terminal(args: &str) -> Option<String> {
    // A wide terminal, so no part of the line is cut to fit.
    let cmd = format!(
        "stty rows 50 cols 200 2>/dev/null; {} {args}",
        env!("CARGO_BIN_EXE_stampede")
    );
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .ok()?;
    Some(text(&out.stdout))
}

#[test]
fn a_terminal_shows_requests_done_attempts_and_429s_unless_quiet() {
    let tmp = tempfile::tempdir().unwrap();
    let run = format!(
        "run {} --set client.preset=naive --out {}",
        backlog(),
        a_str(tmp.path())
    );
    let Some(shown) = on_a_terminal(&run) else {
        eprintln!("skipped: no `script` command to give the run a terminal");
        return;
    };
    assert!(
        shown.contains("/38000 requests done, ") && shown.contains(" 429s, at "),
        "{shown}"
    );
    assert!(shown.contains("backlog-38k (seed 7, preset naive, virtual)"));
    for quiet in ["--quiet", "--json"] {
        let shown = on_a_terminal(&format!("{run} {quiet}")).unwrap();
        assert!(!shown.contains("requests done"), "{quiet}: {shown}");
    }
}
