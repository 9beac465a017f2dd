//! `scripts/pgo.sh`, the profile-guided build the README's Speed section offers: its usage
//! and the arguments it refuses before it builds anything. Its builds are two release
//! builds, too long for a test: CI runs every step of it on the core's cycle benchmark
//! (`scripts/pgo.sh --check`, in `.ci/run`).

use crate::common;

fn pgo(args: &[&str]) -> std::process::Output {
    common::script("scripts/pgo.sh")
        .args(args)
        .output()
        .expect("bash runs the script")
}

#[test]
fn help_says_what_it_builds_and_how() {
    let out = pgo(&["--help"]);
    let text = common::both(&out);
    assert!(out.status.success(), "{text}");
    for says in [
        "scripts/pgo.sh --check",
        "target/pgo/stampede",
        "-Cprofile-generate",
        "-Cprofile-use",
        "stampede check scenarios/",
        "llvm-tools",
    ] {
        assert!(text.contains(says), "--help leaves out {says:?}:\n{text}");
    }
    assert!(
        !text.contains("set -euo pipefail"),
        "--help printed past the header:\n{text}"
    );
}

#[test]
fn check_with_programs_is_refused_before_any_build() {
    let out = pgo(&["--check", "--bin", "stampede"]);
    let text = common::both(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--check builds the core's cycle benchmark alone"),
        "{text}"
    );
    assert!(!text.contains("1/3"), "it started a build:\n{text}");
}
