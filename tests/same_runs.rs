//! `scripts/same_runs.sh`, which the README's Speed section names for the claim that a
//! change left every run directory the same: it must pass for one binary given twice (a run
//! is byte for byte the same from process to process, `wall_ms` masked) and fail when the
//! runs differ (here a wrapper that runs another seed), so the check can fail.

use crate::common;

/// Runs the script on two scenarios (one refusing the naive preset) with `base` and `new`.
fn same_runs(base: &str, new: &str) -> (bool, String) {
    let out = common::script("scripts/same_runs.sh")
        .args([base, new])
        .env("SCENARIOS", "quickstart layers")
        .output()
        .expect("bash runs the script");
    let text = common::both(&out);
    (out.status.success(), text)
}

#[test]
fn one_binary_twice_writes_the_same_run_directories() {
    let bin = env!("CARGO_BIN_EXE_stampede");
    let (ok, text) = same_runs(bin, bin);
    assert!(ok, "{text}");
    assert!(text.contains("same     quickstart (own)"), "{text}");
    assert!(text.contains("same     quickstart (naive)"), "{text}");
    assert!(text.contains("refused  layers (naive) by both"), "{text}");
    assert!(
        text.contains("3 run directories the same, 0 differing, 1 refused by both"),
        "{text}"
    );
}

#[test]
fn another_seed_is_caught() {
    let bin = env!("CARGO_BIN_EXE_stampede");
    let dir = std::env::temp_dir().join(format!("same-runs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let wrapper = dir.join("reseeded");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec '{bin}' \"$@\" --seed 99\n"),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (ok, text) = same_runs(bin, wrapper.to_str().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!ok, "a run with another seed passed as the same:\n{text}");
    assert!(text.contains("DIFFER   quickstart (own)"), "{text}");
    assert!(text.contains("differing"), "{text}");
}
