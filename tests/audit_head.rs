//! The audit trail is anchored: its head (last seq and hash) is kept beside it, so
//! `stampede audit verify` catches records cut off the end; under `STAMPEDE_AUDIT_KEY` the
//! chain and the head are HMACs, so a chain rewritten and recomputed without the key fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use stampede_core::{AuditEvent, AuditKind};
use stampede_durable::chain::{canonical_json, record_hash, GENESIS_PREV};
use stampede_durable::{head_path, AuditWriter, ChainHead, ChainKey};

use crate::common;

const KEY: &str = "a-test-audit-key";

fn write_trail(dir: &Path, key: ChainKey) -> PathBuf {
    let path = dir.join("audit.jsonl");
    let mut writer = AuditWriter::create_keyed(&path, key).expect("create the trail");
    for job in 1..=10u64 {
        let event = AuditEvent {
            at: job * 1_000,
            kind: AuditKind::Completed,
            job,
            attempt: Some(1),
            detail: format!("job {job}").into(),
        };
        writer.append(&event).expect("append");
    }
    writer.close().expect("close");
    path
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn rewrite(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

/// `stampede audit verify FILE [ARGS]` with the key (or none) in the environment.
fn verify(path: &Path, args: &[&str], key: Option<&str>) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_stampede"));
    cmd.args(["audit", "verify"]).arg(path).args(args);
    match key {
        Some(k) => cmd.env("STAMPEDE_AUDIT_KEY", k),
        None => cmd.env_remove("STAMPEDE_AUDIT_KEY"),
    };
    let out = cmd.output().expect("run stampede");
    let text = common::both(&out);
    (out.status.code().unwrap_or(-1), text)
}

/// What someone without the key can do: recompute every hash with plain SHA-256 from the
/// first record on, and write a head file to match.
fn recompute_unkeyed(path: &Path, lines: &[String]) {
    let mut prev = GENESIS_PREV.to_string();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        let seq = i as u64 + 1;
        let event = canonical_json(&v["event"]);
        let hash = record_hash(seq, &prev, &event);
        out.push(format!(
            "{{\"seq\":{seq},\"prev\":\"{prev}\",\"event\":{event},\"hash\":\"{hash}\"}}"
        ));
        prev = hash;
    }
    rewrite(path, &out);
    stampede_durable::write_head(
        path,
        &ChainHead {
            seq: out.len() as u64,
            hash: prev,
        },
        &ChainKey::Unkeyed,
    )
    .unwrap();
}

#[test]
fn records_cut_off_the_end_are_caught_by_the_head_beside_the_trail() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_trail(dir.path(), ChainKey::Unkeyed);
    assert!(
        head_path(&path).exists(),
        "the head file is written beside the trail"
    );
    let (code, text) = verify(&path, &[], None);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("checked against the head"), "{text}");
    let all = lines(&path);
    rewrite(&path, &all[..7]);
    let (code, text) = verify(&path, &[], None);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("cut off the end"), "{text}");
    // The head kept elsewhere, named with --head.
    let elsewhere = dir.path().join("kept.head");
    std::fs::rename(head_path(&path), &elsewhere).unwrap();
    let (code, text) = verify(&path, &["--head", elsewhere.to_str().unwrap()], None);
    assert_eq!(code, 1, "{text}");
    // Without any head, a cut at a line boundary is undetectable: the report says so.
    let (code, text) = verify(&path, &[], None);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("no head file"), "{text}");
}

#[test]
fn a_keyed_trail_verifies_only_under_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_trail(dir.path(), ChainKey::Hmac(KEY.as_bytes().to_vec()));
    let (code, text) = verify(&path, &[], Some(KEY));
    assert_eq!(code, 0, "{text}");
    let (code, text) = verify(&path, &[], Some("another-key"));
    assert_eq!(code, 1, "{text}");
    let (code, text) = verify(&path, &[], None);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("STAMPEDE_AUDIT_KEY"), "{text}");
}

#[test]
fn a_keyed_trail_catches_a_recomputed_chain_and_a_recomputed_cut() {
    for cut in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = write_trail(dir.path(), ChainKey::Hmac(KEY.as_bytes().to_vec()));
        let mut all = lines(&path);
        // Edit record 5's detail, or cut three records, then recompute everything.
        if cut {
            all.truncate(7);
        } else {
            all[4] = all[4].replace("job 5", "job 55");
        }
        recompute_unkeyed(&path, &all);
        let (code, text) = verify(&path, &[], Some(KEY));
        assert_eq!(code, 1, "cut {cut}: {text}");
        // The same rewrite of an unkeyed trail cannot be told from the original: that is
        // what the key is for.
        let dir = tempfile::tempdir().unwrap();
        let path = write_trail(dir.path(), ChainKey::Unkeyed);
        let mut all = lines(&path);
        if cut {
            all.truncate(7);
        } else {
            all[4] = all[4].replace("job 5", "job 55");
        }
        recompute_unkeyed(&path, &all);
        let (code, text) = verify(&path, &[], None);
        assert_eq!(code, 0, "cut {cut}: {text}");
    }
}

#[test]
fn a_keyed_head_file_cannot_be_moved_back_to_match_a_cut_trail() {
    let dir = tempfile::tempdir().unwrap();
    let key = ChainKey::Hmac(KEY.as_bytes().to_vec());
    let path = write_trail(dir.path(), key);
    let all = lines(&path);
    rewrite(&path, &all[..7]);
    // Point the head at record 7 as it stands (its hash is in the file) without the key.
    let v: Value = serde_json::from_str(&all[6]).unwrap();
    let forged = format!(
        "{{\"seq\":7,\"hash\":\"{}\",\"records\":7,\"keyed\":true,\"mac\":\"{}\"}}\n",
        v["hash"].as_str().unwrap(),
        "0".repeat(64)
    );
    std::fs::write(head_path(&path), forged).unwrap();
    let (code, text) = verify(&path, &[], Some(KEY));
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("MAC"), "{text}");
}

/// A head file that is not a head at all (not JSON, a field missing or unknown, a hash that
/// is not 64 hex digits, seq 0 with a hash no trail has) says nothing of the trail: it is a
/// damaged input, exit 2 as every other command gives one, on stderr naming the file and
/// what to do; never "BROKEN" with the exit of a trail that was edited.
#[test]
fn a_malformed_head_file_is_an_input_error_not_a_broken_trail() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_trail(dir.path(), ChainKey::Unkeyed);
    let good = std::fs::read_to_string(head_path(&path)).unwrap();
    for malformed in [
        "garbage\n".to_string(),
        String::new(),
        "{\"seq\":1}\n".to_string(),
        good.replace("\"keyed\"", "\"extra\":1,\"keyed\""),
        good.replace("\"seq\":10", "\"seq\":99999999999999999999"),
        // A count that is not its seq: no writer wrote it.
        good.replace("\"records\":10", "\"records\":7"),
        format!(
            "{{\"seq\":10,\"hash\":\"{}\",\"records\":10,\"keyed\":false}}\n",
            "xyz"
        ),
        format!(
            "{{\"seq\":0,\"hash\":\"{}\",\"records\":0,\"keyed\":false}}\n",
            "1".repeat(64)
        ),
    ] {
        std::fs::write(head_path(&path), &malformed).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_stampede"));
        let out = cmd
            .args(["audit", "verify"])
            .arg(&path)
            .env_remove("STAMPEDE_AUDIT_KEY")
            .output()
            .unwrap();
        let (stdout, stderr) = (common::text(&out.stdout), common::text(&out.stderr));
        assert_eq!(
            out.status.code(),
            Some(2),
            "{malformed:?}: {stdout}{stderr}"
        );
        assert!(!stdout.contains("BROKEN"), "{malformed:?}: {stdout}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains("audit.jsonl.head"),
            "{malformed:?}: {stderr}"
        );
        assert!(stderr.contains("--head"), "says what to do: {stderr}");
        assert!(!stderr.contains("  "), "no run of spaces: {stderr}");
    }
    // The good head still checks out: the trail itself was never at fault.
    std::fs::write(head_path(&path), good).unwrap();
    let (code, text) = verify(&path, &[], None);
    assert_eq!(code, 0, "{text}");
}

/// Under a key the head's MAC is what catches records cut off the end: someone who cut the
/// trail and cannot forge the head can still damage it, so a damaged head fails the check
/// (exit 1, BROKEN), as a forged one does, where it had been an input error (exit 2) whose
/// advice was to check the trail without its head.
#[test]
fn a_damaged_head_of_a_keyed_trail_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_trail(dir.path(), ChainKey::Hmac(KEY.as_bytes().to_vec()));
    let (code, text) = verify(&path, &[], Some(KEY));
    assert_eq!(code, 0, "{text}");
    for damaged in ["garbage\n", "{\"seq\":1}\n"] {
        std::fs::write(head_path(&path), damaged).unwrap();
        let (code, text) = verify(&path, &[], Some(KEY));
        assert_eq!(code, 1, "{damaged:?}: {text}");
        assert!(
            text.contains("BROKEN") && text.contains("audit.jsonl.head"),
            "{text}"
        );
        assert!(!text.contains("move this one aside"), "{text}");
    }
}
