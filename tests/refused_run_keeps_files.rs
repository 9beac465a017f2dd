//! A run that is refused leaves the run directory it was pointed at as it was: an earlier
//! run's files there are what was measured, and a flag out of range, a provider that is not
//! there, a ledger that cannot be opened or a client command that does not exist must not
//! truncate them or write files of its own beside them.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;
use common::{a_str, quickstart, stampede, text};

/// Every file in `dir` and its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
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
