//! `stampede sweep --shard I/N` and `stampede sweep merge`: the shards of a sweep, merged in
//! any order, write the unsharded sweep's files byte for byte and print its lines and exit
//! code; a merge refuses shards of different sweeps, a missing shard and a shard given
//! twice; a bad `--shard` exits 2 before any run.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use crate::common;
use common::{a_str, quickstart, stampede, text};

/// The quickstart sweep's arguments after the scenario (it plays in virtual time, quickly).
const GRID: [&str; 8] = [
    "--vary",
    "client.workers=4,16",
    "--vary",
    "client.preset=naive,stampede",
    "--seeds",
    "2",
    "--jobs",
    "2",
];

fn sweep(extra: &[&str], out: &Path) -> Output {
    let qs = quickstart();
    let mut args = vec!["sweep", qs.as_str()];
    args.extend_from_slice(extra);
    args.extend(["--out", a_str(out)]);
    stampede(&args)
}

fn merge(dirs: &[&Path], out: &Path) -> Output {
    merge_with(dirs, out, &[])
}

fn merge_with(dirs: &[&Path], out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["sweep", "merge"];
    args.extend(dirs.iter().map(|d| a_str(d)));
    args.extend(["--out", a_str(out)]);
    args.extend_from_slice(extra);
    stampede(&args)
}

/// Every file of a folder, by name.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The lines a sweep and its merge share: per configuration, then the recommendation.
fn result_lines(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.starts_with("  ") || l.starts_with("recommended") || l.starts_with("no "))
        .collect()
}

/// Runs `args` unsharded and as `shards` shards, merges them (last shard first) and checks
/// that every output file, the printed lines and the exit code are the same.
fn same_as_unsharded(args: &[&str], shards: u32, tmp: &Path) -> Output {
    let whole_dir = tmp.join("whole");
    let whole = sweep(args, &whole_dir);
    assert!(
        matches!(whole.status.code(), Some(0..=2)),
        "{}",
        text(&whole.stderr)
    );
    let errors = |out: &Output| -> Vec<String> {
        let mut lines: Vec<String> = text(&out.stderr)
            .lines()
            // One line per run that could not play, naming its configuration and seed.
            .filter(|l| l.starts_with("error: ") && l.contains(", seed "))
            .map(String::from)
            .collect();
        lines.sort();
        lines
    };
    let mut dirs = Vec::new();
    let mut shard_errors = Vec::new();
    for i in (0..shards).rev() {
        let dir = tmp.join(format!("shard-{i}"));
        let shard = format!("{i}/{shards}");
        let mut shard_args = args.to_vec();
        shard_args.extend(["--shard", shard.as_str()]);
        let out = sweep(&shard_args, &dir);
        // A shard exits 2 when one of its runs could not play, as the whole sweep does.
        let expected = if errors(&out).is_empty() { 0 } else { 2 };
        assert_eq!(
            out.status.code(),
            Some(expected),
            "{shard}: {}",
            text(&out.stderr)
        );
        shard_errors.extend(errors(&out));
        assert!(dir.join("manifest.json").is_file(), "{shard}");
        assert!(
            !dir.join("sweep.csv").exists(),
            "{shard}: a shard writes no sweep outputs"
        );
        dirs.push(dir);
    }
    let merged_dir = tmp.join("merged");
    let dir_refs: Vec<&Path> = dirs.iter().map(|d| d.as_path()).collect();
    // `--png` is the merge's own flag (a shard writes no plots).
    let png: &[&str] = if args.contains(&"--png") {
        &["--png"]
    } else {
        &[]
    };
    let merged = merge_with(&dir_refs, &merged_dir, png);
    assert_eq!(
        merged.status.code(),
        whole.status.code(),
        "{}",
        text(&merged.stderr)
    );
    let (a, b) = (files(&whole_dir), files(&merged_dir));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "the same files"
    );
    for (name, bytes) in &a {
        assert!(bytes == &b[name], "{name} differs after the merge");
    }
    let (ws, ms) = (text(&whole.stdout), text(&merged.stdout));
    assert!(!result_lines(&ws).is_empty(), "{ws}");
    assert_eq!(result_lines(&ws), result_lines(&ms), "{ws}\n---\n{ms}");
    // Runs that could not play: the same errors, from the shards and again from the merge.
    assert_eq!(errors(&whole), errors(&merged));
    shard_errors.sort();
    assert_eq!(errors(&whole), shard_errors);
    merged
}

#[test]
fn three_shards_merged_write_the_unsharded_sweep_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = GRID.to_vec();
    // PNG plots are a cargo feature (`--features png`, on in CI's --all-features).
    if cfg!(feature = "png") {
        args.push("--png");
    }
    same_as_unsharded(&args, 3, tmp.path());
    assert_eq!(
        tmp.path().join("whole/sweep-goodput_per_min.png").is_file(),
        cfg!(feature = "png")
    );
    // Without --png the merge writes no PNG: the flag is the merge's own.
    let plain = merge(
        &[
            &tmp.path().join("shard-0"),
            &tmp.path().join("shard-1"),
            &tmp.path().join("shard-2"),
        ],
        &tmp.path().join("plain"),
    );
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stderr));
    assert!(!tmp.path().join("plain/sweep-goodput_per_min.png").exists());
    // The same shard again (one thread this time) writes the same bytes.
    let again = tmp.path().join("again");
    let mut args = GRID[..6].to_vec();
    args.extend(["--jobs", "1", "--shard", "1/3"]);
    assert_eq!(sweep(&args, &again).status.code(), Some(0));
    assert_eq!(files(&again), files(&tmp.path().join("shard-1")));
    let csv = std::fs::read(tmp.path().join("plain/sweep.csv")).unwrap();
    assert_eq!(
        csv,
        std::fs::read(tmp.path().join("whole/sweep.csv")).unwrap()
    );
}

#[test]
fn a_failing_sweep_with_more_shards_than_runs_merges_to_the_same_verdict() {
    // Nothing varied, a configuration that fails its expectations: exit 1 both ways; five
    // shards for three runs leaves two shards empty.
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "--set",
        "client.preset=naive",
        "--set",
        "client.workers=16",
        "--seeds",
        "3",
    ];
    let merged = same_as_unsharded(&args, 5, tmp.path());
    assert_eq!(merged.status.code(), Some(1));
    assert!(
        text(&merged.stdout).contains("no configuration met the expectations"),
        "{}",
        text(&merged.stdout)
    );
}

#[test]
fn runs_that_cannot_play_are_carried_through_the_shards_to_the_merge() {
    // The second configuration's client cannot start: its runs end in errors, which the
    // whole sweep prints (exit 2) after writing the outputs of the runs that played.
    let tmp = tempfile::tempdir().unwrap();
    let args = [
        "--vary",
        r#"client.command=[],["/nonexistent-stampede-client"]"#,
        "--seeds",
        "2",
    ];
    let merged = same_as_unsharded(&args, 3, tmp.path());
    assert_eq!(merged.status.code(), Some(2));
    assert!(
        text(&merged.stderr).contains("nonexistent-stampede-client"),
        "{}",
        text(&merged.stderr)
    );
}

/// Shards 0/3, 1/3, 2/3 of the quickstart grid, written once for the refusal tests.
fn three_shards(tmp: &Path) -> Vec<std::path::PathBuf> {
    (0..3)
        .map(|i| {
            let dir = tmp.join(format!("s{i}"));
            let shard = format!("{i}/3");
            let mut args = GRID.to_vec();
            args.extend(["--shard", shard.as_str()]);
            let out = sweep(&args, &dir);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            dir
        })
        .collect()
}

fn refused(out: &Output, out_dir: &Path, needles: &[&str]) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{n:?} in {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!out_dir.exists(), "nothing is written: {stderr}");
}

#[test]
fn merge_refuses_other_sweeps_missing_and_repeated_shards_and_damaged_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let s = three_shards(tmp.path());
    let out = tmp.path().join("never");

    // A missing shard: named, with what to run.
    let o = merge(&[&s[0], &s[2]], &out);
    refused(
        &o,
        &out,
        &["shard 1/3", "missing", "--shard 1/3", a_str(&s[0])],
    );

    // A shard given twice.
    let o = merge(&[&s[0], &s[1], &s[1], &s[2]], &out);
    refused(&o, &out, &["shard 1/3 is given twice", a_str(&s[1])]);

    // A shard of another sweep (other seeds) in the place of shard 2.
    let other = tmp.path().join("other");
    let mut args = GRID.to_vec();
    args.extend(["--seed", "7", "--shard", "2/3"]);
    assert_eq!(sweep(&args, &other).status.code(), Some(0));
    let o = merge(&[&s[0], &s[1], &other], &out);
    refused(&o, &out, &["different sweeps", a_str(&other), "--seed"]);

    // The same sweep split another way.
    let half = tmp.path().join("half");
    let mut args = GRID.to_vec();
    args.extend(["--shard", "1/2"]);
    assert_eq!(sweep(&args, &half).status.code(), Some(0));
    let o = merge(&[&s[0], &half, &s[2]], &out);
    refused(&o, &out, &["shard 1/2", "same N", a_str(&half)]);

    // A folder that is not a shard, and one that does not exist.
    let plain = tmp.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let o = merge(&[&s[0], &s[1], &plain], &out);
    refused(&o, &out, &["manifest.json", a_str(&plain)]);
    let o = merge(&[&s[0], &s[1], &tmp.path().join("nowhere")], &out);
    refused(&o, &out, &["no such folder", "nowhere"]);

    // A shard whose runs were cut short, and one whose manifest is not JSON.
    let runs = s[2].join("runs.jsonl");
    let text_runs = std::fs::read_to_string(&runs).unwrap();
    let first_line = text_runs.lines().next().unwrap();
    std::fs::write(&runs, format!("{first_line}\n")).unwrap();
    let o = merge(&[&s[0], &s[1], &s[2]], &out);
    refused(
        &o,
        &out,
        &["runs.jsonl", "1 of the shard's 2 runs", "shard 2/3 again"],
    );
    std::fs::write(&runs, format!("{first_line}\n{{not json\n")).unwrap();
    let o = merge(&[&s[0], &s[1], &s[2]], &out);
    refused(&o, &out, &["runs.jsonl:2", "not valid JSON"]);
    std::fs::write(s[1].join("manifest.json"), "{").unwrap();
    let o = merge(&[&s[0], &s[1]], &out);
    refused(&o, &out, &["manifest.json", "not valid JSON"]);
}

#[test]
fn a_bad_shard_exits_2_before_any_run() {
    let tmp = tempfile::tempdir().unwrap();
    for (shard, says) in [
        ("3/3", "the last is 2/3"),
        ("a/b", "not a whole number"),
        ("0/0", "at least 1"),
        ("2", "expected I/N"),
        ("", "expected I/N"),
    ] {
        let out_dir = tmp.path().join("never");
        let mut args = GRID.to_vec();
        args.extend(["--shard", shard]);
        let out = sweep(&args, &out_dir);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{shard}: {stderr}");
        assert!(stderr.contains("--shard"), "{shard}: {stderr}");
        assert!(stderr.contains(says), "{shard}: {stderr}");
        assert!(!out_dir.exists(), "{shard}: nothing is written");
    }
}

/// A merge without `--out` writes where the shards' manifest says the sweep would have, but
/// only to a folder under the working directory: a manifest edited to name `../escape` or
/// an absolute path had the merge create and write there.
#[test]
fn a_merge_goes_nowhere_a_manifest_names_outside_its_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let shard = tmp.path().join("shard");
    let out = sweep(&["--vary", "client.workers=4", "--shard", "0/1"], &shard);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let manifest_path = shard.join("manifest.json");
    let manifest = std::fs::read_to_string(&manifest_path).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let escape = tmp.path().join("escape");
    for named in [
        "../escape".to_string(),
        escape.display().to_string(),
        String::new(),
    ] {
        json["default_out"] = serde_json::Value::String(named.clone());
        std::fs::write(&manifest_path, serde_json::to_string(&json).unwrap()).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_stampede"))
            .args(["sweep", "merge", a_str(&shard)])
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{named}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("--out"), "{}", text(&out.stderr));
        assert!(!escape.exists() && !tmp.path().join("../escape").exists());
    }
}
