//! The trail's head kept beside it: `audit.jsonl.head`, one JSON object:
//!
//! ```text
//! {"seq":N,"hash":"<64 hex>","records":N,"keyed":false}
//! {"seq":N,"hash":"<64 hex>","records":N,"keyed":true,"mac":"<64 hex>"}
//! ```
//!
//! The writer replaces it (write to a temporary file, then rename) when the trail is created,
//! synced on request, closed or dropped, so it names a record the trail held at that moment.
//! `stampede audit verify` checks the trail reaches that record with that hash: records cut
//! off the end are caught. Under a key (`STAMPEDE_AUDIT_KEY`), `mac` is the HMAC-SHA256 of
//! `"stampede-audit-head-v1\n" ++ seq ++ "\n" ++ hash ++ "\n" ++ records` under the key, so
//! the head cannot be rewritten to match a cut or recomputed trail without it.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::chain::{is_hash, ChainHead, ChainKey, AUDIT_KEY_ENV, GENESIS_PREV};

/// What the head file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadRecord {
    /// The last record's seq.
    pub seq: u64,
    /// Its hash.
    pub hash: String,
    /// Records in the trail (equal to `seq` for a trail that starts at 1).
    pub records: u64,
    /// Whether the chain is keyed (HMAC).
    pub keyed: bool,
    /// The MAC over the fields above, in keyed mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
}

fn mac_input(seq: u64, hash: &str, records: u64) -> String {
    format!("stampede-audit-head-v1\n{seq}\n{hash}\n{records}")
}

/// `FILE.head` for the trail `FILE`.
pub fn head_path(trail: &Path) -> PathBuf {
    let mut name = trail.as_os_str().to_owned();
    name.push(".head");
    PathBuf::from(name)
}

/// Replaces the head file of `trail` with `head` (atomically: temporary file and rename).
pub fn write_head(trail: &Path, head: &ChainHead, key: &ChainKey) -> std::io::Result<()> {
    let record = HeadRecord {
        seq: head.seq,
        hash: head.hash.clone(),
        records: head.seq,
        keyed: key.is_keyed(),
        mac: key.mac(mac_input(head.seq, &head.hash, head.seq).as_bytes()),
    };
    let path = head_path(trail);
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = PathBuf::from(tmp_name);
    let mut text = serde_json::to_string(&record).map_err(std::io::Error::other)?;
    text.push('\n');
    {
        let mut f = File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_data()?;
    }
    fs::rename(&tmp, &path)
}

/// Why a head file gave no head: it could not be read at all (a folder, no permission), it
/// was read and is no head record (not JSON, a field missing or unknown, a malformed hash,
/// seq 0 with a hash no trail has), or it is a head that does not check out under this key
/// (keyed where no key is set or the other way round, a bad MAC). The first two say nothing
/// about the trail and are errors in the input; the third fails its verification. Each
/// message names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    /// The file could not be read.
    #[error("{0}")]
    Unreadable(String),
    /// The file was read and is no head record: damaged, or not a head file.
    #[error("{0}")]
    Malformed(String),
    /// The file is a head record, and not a valid head for this trail's key.
    #[error("{0}")]
    Invalid(String),
}

/// Reads and checks a head file: its fields, and under a key its MAC. `Err` says what is
/// wrong, naming the file.
pub fn read_head(path: &Path, key: &ChainKey) -> Result<ChainHead, HeadError> {
    let text = fs::read_to_string(path).map_err(|e| {
        HeadError::Unreadable(format!("cannot read the head file {}: {e}", path.display()))
    })?;
    check_head(path, &text, key)
}

/// What to do about a head file that is no head record.
const MALFORMED_FIX: &str = "give the head file the writer kept beside the trail with --head \
     HEADFILE (a trail checked without its head cannot show records cut off its end)";

/// The head a head file's `text` records, checked (`path` names it in messages). A head
/// that is no head record is an input error, unless the trail is keyed: there the head's
/// MAC is what catches records cut off the end, and a damaged head, which anyone who can
/// write the file can make, must fail the check as a forged one does, not ask for a run
/// without it.
fn check_head(path: &Path, text: &str, key: &ChainKey) -> Result<ChainHead, HeadError> {
    let malformed = |what: &str| {
        let message = format!("the head file {} {what}; {MALFORMED_FIX}", path.display());
        if key.is_keyed() {
            HeadError::Invalid(message)
        } else {
            HeadError::Malformed(message)
        }
    };
    let record: HeadRecord = serde_json::from_str(text.trim())
        .map_err(|e| malformed(&format!("is not a head record ({e})")))?;
    if !is_hash(&record.hash) {
        return Err(malformed("has a malformed hash (not 64 hex digits)"));
    }
    if record.records != record.seq {
        // A trail's records are numbered from 1 without a gap, so a head's count is its
        // seq: a head that says otherwise was written by no writer of a trail.
        return Err(malformed(&format!(
            "says the trail holds {} records at seq {}, where a trail holds as many records \
             as its last seq",
            record.records, record.seq
        )));
    }
    if record.seq == 0 && record.hash != GENESIS_PREV {
        // Seq 0 is the empty trail, whose hash is fixed: no trail can reach this head, so
        // the head is what is wrong, not the trail checked against it.
        return Err(malformed(
            "is at seq 0 with a hash other than the empty trail's: it is not the head of any \
             trail",
        ));
    }
    match (record.keyed, key.is_keyed()) {
        (true, false) => {
            return Err(HeadError::Invalid(format!(
                "the head file {} says the trail is keyed: set {AUDIT_KEY_ENV} to the key it \
                 was written with",
                path.display()
            )))
        }
        (false, true) => {
            return Err(HeadError::Invalid(format!(
                "{AUDIT_KEY_ENV} is set but the head file {} says the trail is not keyed: an \
                 unkeyed head proves nothing against someone who can rewrite it",
                path.display()
            )))
        }
        _ => {}
    }
    if record.keyed {
        let want = key.mac(mac_input(record.seq, &record.hash, record.records).as_bytes());
        if record.mac.as_deref() != want.as_deref() {
            return Err(HeadError::Invalid(format!(
                "the head file {} does not carry a valid MAC under {AUDIT_KEY_ENV}: it was \
                 edited, or the key is not the one the trail was written with",
                path.display()
            )));
        }
    }
    Ok(ChainHead {
        seq: record.seq,
        hash: record.hash,
    })
}
