//! A run that is refused leaves the run directory it was pointed at as it was: an earlier
//! run's files there are what was measured, and a flag out of range, a provider that is not
//! there, a ledger that cannot be opened or a client command that does not exist must not
//! truncate them or write files of its own beside them.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common;
use common::{a_str, quickstart, stampede, text};

/// Every file in `dir` and its bytes (a folder with none).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            // A folder is listed by name (its bytes are no file's).
            let bytes = if e.path().is_dir() {
                Vec::new()
            } else {
                std::fs::read(e.path()).unwrap()
            };
            (name, bytes)
        })
        .collect()
}

#[test]
fn a_refused_live_run_leaves_an_earlier_runs_files_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let qs = quickstart();
    let dir = tmp.path().join("run");
    let out = stampede(&["run", &qs, "--no-render", "--quiet", "--out", a_str(&dir)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let before = files(&dir);
    let attempts = before
        .get("attempts.csv")
        .expect("the first run wrote attempts.csv");
    assert!(attempts.len() > 1_000, "the first run made attempts");

    // Port 1, below every ephemeral port: no test's server can be there. (A port bound and
    // closed here could be handed to a test running beside this one, whose provider the
    // run would then reset.)
    let nobody = "http://127.0.0.1:1";
    let no_ledger = tmp.path().join("missing").join("ledger.db");
    let refused: [&[&str]; 4] = [
        &["--live", "--time-scale", "0"],
        &["--live", "--provider", nobody],
        &["--live", "--ledger", a_str(&no_ledger)],
        &["--client", "--", "/nonexistent/stampede-test-client"],
    ];
    for flags in refused {
        let mut args = vec!["run", qs.as_str(), "--no-render", "--out", a_str(&dir)];
        args.extend_from_slice(flags);
        let out = stampede(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flags:?}: {}",
            text(&out.stderr)
        );
        assert!(
            files(&dir) == before,
            "{flags:?} changed the earlier run's files"
        );
    }
}

/// A virtual run stopped part way (Ctrl-C, a CI step's timeout) leaves an earlier run in
/// its folder whole, its audit trail included: the run writes into a partial folder, and
/// only a finished run replaces the earlier one's files. It had left the earlier run's
/// summary and page beside its own partial attempts.csv, the earlier audit trail already
/// removed. The next run clears the partial folder.
#[test]
fn a_virtual_run_stopped_part_way_leaves_an_earlier_run_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let qs = quickstart();
    let dir = tmp.path().join("run");
    let out = stampede(&[
        "run",
        &qs,
        "--no-render",
        "--quiet",
        "--audit",
        "--out",
        a_str(&dir),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let before = files(&dir);
    assert!(before.contains_key("audit.jsonl"), "{:?}", before.keys());

    // A million requests: long enough in any build to be stopped while it plays.
    let million = common::repo()
        .join("sim")
        .join("examples")
        .join("bench-1m.toml");
    let mut long = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args([
            "run",
            a_str(&million),
            "--no-render",
            "--quiet",
            "--out",
            a_str(&dir),
        ])
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let partial = dir
        .join(stampede_sim::staging::PARTIAL_DIR)
        .join("attempts.csv");
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::metadata(&partial).map_or(true, |m| m.len() == 0) {
        assert!(
            Instant::now() < deadline,
            "the long run wrote no attempts in 120 s"
        );
        assert!(
            long.try_wait().unwrap().is_none(),
            "the long run ended before it was stopped"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL: what a CI runner's timeout or a crash does, with no chance to tidy up.
    long.kill().unwrap();
    long.wait().unwrap();
    let mut after = files(&dir);
    assert!(after.remove(stampede_sim::staging::PARTIAL_DIR).is_some());
    assert!(
        after == before,
        "the stopped run changed the earlier run's files"
    );

    // The next run clears the partial folder, and, asked for no audit trail, removes the
    // earlier one rather than leave it to pass for its own.
    let out = stampede(&["run", &qs, "--no-render", "--quiet", "--out", a_str(&dir)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let last = files(&dir);
    assert!(
        !last.contains_key(stampede_sim::staging::PARTIAL_DIR),
        "{:?}",
        last.keys()
    );
    assert!(!last.contains_key("audit.jsonl"), "{:?}", last.keys());
    assert!(last.contains_key("summary.json"), "{:?}", last.keys());
}

/// `--out` naming a file is refused saying what to give instead, and the file is left as it
/// was (it had said only "File exists").
#[test]
fn an_out_that_is_a_file_is_refused_saying_what_to_give() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("notes.txt");
    std::fs::write(&file, "the user's").unwrap();
    let out = stampede(&["run", &quickstart(), "--quiet", "--out", a_str(&file)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("it is a file") && err.contains("give --out a folder"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "the user's");
}
