//! Checking an audit trail: whole, or where it first breaks.
//!
//! [`verify`] reads the file line by line and stops at the FIRST record that does not fit the
//! chain, so the report always names the earliest affected record (line number and seq):
//!
//! - a record whose stored hash differs from the hash of its own content was **edited**;
//! - a record with the wrong seq (a gap or a step back) means records were **deleted or
//!   reordered** before it; a swap of lines i < j is reported at line i;
//! - a record with the right seq whose `prev` is not the previous record's hash means the
//!   record before it was replaced;
//! - a line that is not a record is **unparsable**;
//! - a last line without its `\n` is **torn**: the writer died mid-write (see
//!   [`AuditWriter::open_append`](crate::AuditWriter::open_append), which repairs it).
//!
//! Checks run in that order on each line, so an edited record is called edited even when its
//! seq was the edited field. Records cut off the end at a line boundary leave a shorter chain
//! that is whole in itself; [`verify_with_head`] catches that given the head recorded
//! elsewhere.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::chain::{parse_line, ChainHead, ChainKey, GENESIS_PREV};
use crate::error::DurableError;
use crate::head_file::{head_path, read_head, HeadError};

/// What is wrong with the first broken record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The line is not a record (bad JSON, missing or extra fields, malformed hash).
    Unparsable {
        /// What the parser said about the line.
        reason: String,
    },
    /// The last line has no `\n`: a write was cut short by a crash.
    Torn {
        /// Byte offset where the torn line starts.
        offset: u64,
        /// Bytes in the torn line.
        bytes: u64,
        /// Whether those bytes are nevertheless a complete record that fits the chain.
        complete_record: bool,
    },
    /// The stored hash is not the hash of the record's content: the record was edited.
    Edited {
        /// The hash the record carries (64 hex digits).
        stored: String,
        /// The hash of the record's content as it is now (64 hex digits).
        computed: String,
    },
    /// The seq is not the one expected: records were deleted or reordered before this one.
    SeqOutOfOrder {
        /// The seq that should come next (one more than the previous record's).
        expected: u64,
        /// The seq this record carries.
        found: u64,
    },
    /// The seq fits but `prev` is not the previous record's hash: the record before was replaced.
    PrevMismatch {
        /// The previous record's hash (64 hex digits).
        expected: String,
        /// The `prev` this record carries.
        found: String,
    },
    /// The trail ends before the expected head: records were cut off the end.
    MissingTail {
        /// The seq of the last record in the file.
        last_seq: u64,
        /// The seq the head file (or the given head) says the trail reaches.
        expected_seq: u64,
    },
    /// The record at the expected head's seq has a different hash: the trail was rewritten.
    HeadMismatch {
        /// The hash the head says that record has (64 hex digits).
        expected: String,
        /// The hash the record in the file has.
        found: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unparsable { reason } => write!(f, "unparsable line: {reason}"),
            Self::Torn { bytes, complete_record, .. } => {
                write!(f, "torn last line ({bytes} bytes, no newline): the writer stopped mid-write")?;
                if *complete_record {
                    write!(f, "; the record itself is intact")?;
                }
                Ok(())
            }
            Self::Edited { stored, computed } => write!(
                f,
                "record edited: its stored hash {} is not the hash of its content {}",
                short(stored),
                short(computed)
            ),
            Self::SeqOutOfOrder { expected, found } if found > expected => write!(
                f,
                "seq {found} where seq {expected} was expected: record(s) {expected}..{} deleted or moved",
                found - 1
            ),
            Self::SeqOutOfOrder { expected, found } => write!(
                f,
                "seq {found} where seq {expected} was expected: records reordered or duplicated"
            ),
            Self::PrevMismatch { expected, found } => write!(
                f,
                "prev {} is not the previous record's hash {}: the record before was replaced",
                short(found),
                short(expected)
            ),
            Self::MissingTail { last_seq, expected_seq } => write!(
                f,
                "the trail ends at seq {last_seq} but the expected head is seq {expected_seq}: records cut off the end"
            ),
            Self::HeadMismatch { expected, found } => write!(
                f,
                "hash {} where the expected head has {}: the trail was rewritten",
                short(found),
                short(expected)
            ),
        }
    }
}

/// First 12 hex digits: enough to tell hashes apart in a message.
fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// The first broken record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Break {
    /// 1-based line number in the file.
    pub line: u64,
    /// The record's seq as written, when the line had one.
    pub seq: Option<u64>,
    /// What is wrong with it.
    pub problem: Problem,
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyReport {
    /// Every record fits the chain.
    Whole {
        /// Records in the file.
        records: u64,
        /// The last record's seq and hash.
        head: ChainHead,
    },
    /// The first record that does not fit.
    Broken(Break),
}

impl VerifyReport {
    /// Exit code for `stampede audit verify`: 0 whole, 1 broken.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Whole { .. } => 0,
            Self::Broken(_) => 1,
        }
    }

    /// Whether the chain is whole.
    pub fn is_whole(&self) -> bool {
        matches!(self, Self::Whole { .. })
    }
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Whole { records, head } => {
                write!(
                    f,
                    "whole: {records} records; head {head} (keep it to check for a cut tail later)"
                )
            }
            Self::Broken(Break { line, seq, problem }) => {
                write!(f, "BROKEN at line {line}")?;
                if let Some(seq) = seq {
                    write!(f, " (seq {seq})")?;
                }
                write!(f, ": {problem}")
            }
        }
    }
}

/// Checks the whole trail at `path`, keyed by `STAMPEDE_AUDIT_KEY` when it is set. `Err`
/// only when the file cannot be read.
pub fn verify(path: impl AsRef<Path>) -> Result<VerifyReport, DurableError> {
    Ok(walk(path.as_ref(), None, &ChainKey::from_env())?.report)
}

/// Checks the trail at `path` under `key`, and against `expected` when given.
pub fn verify_keyed(
    path: impl AsRef<Path>,
    expected: Option<&ChainHead>,
    key: &ChainKey,
) -> Result<VerifyReport, DurableError> {
    Ok(walk(path.as_ref(), expected, key)?.report)
}

/// Like [`verify`], and also checks that the trail reaches `expected` (a head printed by an
/// earlier `verify` or taken from [`AuditWriter::head`](crate::AuditWriter::head)) with the
/// same hash there: catches records cut off the end and a rewritten chain.
pub fn verify_with_head(
    path: impl AsRef<Path>,
    expected: &ChainHead,
) -> Result<VerifyReport, DurableError> {
    Ok(walk(path.as_ref(), Some(expected), &ChainKey::from_env())?.report)
}

/// `stampede audit verify FILE`: [`verify_cli_with_head`] with the head file beside `FILE`
/// when there is one.
pub fn verify_cli(path: &Path) -> i32 {
    verify_cli_with_head(path, None)
}

/// `stampede audit verify FILE [--head HEADFILE]`: checks the chain (keyed by
/// `STAMPEDE_AUDIT_KEY` when set) and that it reaches the head recorded in `head` (default:
/// `FILE.head` when it exists). Prints the report (stdout) or the error (stderr), and returns
/// the exit code: 0 whole, 1 broken (or a head that does not check out under the key), 2 a
/// trail or head file that cannot be read, or a head file that is no head record.
pub fn verify_cli_with_head(path: &Path, head: Option<&Path>) -> i32 {
    let key = ChainKey::from_env();
    let beside = head_path(path);
    let head_file = match head {
        Some(h) => {
            if !h.exists() {
                eprintln!("error: the head file {} does not exist", h.display());
                return 2;
            }
            Some(h.to_path_buf())
        }
        None => beside.exists().then_some(beside),
    };
    let expected = match head_file.as_deref().map(|h| read_head(h, &key)) {
        None => None,
        Some(Ok(head)) => Some(head),
        // Nothing is known of the trail yet: an error in the input, as an unreadable or
        // damaged trail file is (exit 2, as every command gives one), never "BROKEN".
        Some(Err(HeadError::Unreadable(message) | HeadError::Malformed(message))) => {
            eprintln!("error: {message}");
            return 2;
        }
        Some(Err(HeadError::Invalid(message))) => {
            println!("{}: BROKEN: {message}", path.display());
            return 1;
        }
    };
    match walk(path, expected.as_ref(), &key) {
        Ok(walked) if is_no_trail(path, &walked.report, &key) => {
            // Not a trail broken at its first line: no trail at all (a summary.json, a
            // CSV), the wrong file given, which is an error in the input. Under a key a
            // trail rewritten whole fails the check instead, as a damaged head does.
            eprintln!(
                "error: {} is no audit trail: none of its lines is a record of one; give a run's \
                 audit.jsonl",
                path.display()
            );
            2
        }
        Ok(walked) => {
            let report = walked.report;
            println!("{}: {report}", path.display());
            match &head_file {
                Some(h) if report.is_whole() => {
                    println!("  checked against the head in {}", h.display())
                }
                None => println!(
                    "  no head file: records cut off the end cannot be detected (pass --head FILE)"
                ),
                _ => {}
            }
            report.exit_code()
        }
        Err(err) => {
            eprintln!("error: {err}");
            2
        }
    }
}

/// Whether `path`, whose walk broke at `report`, is no trail at all: unkeyed, its first line
/// is no record and neither is any other (read a line at a time, each at most
/// [`MAX_LINE_BYTES`], stopping at the first record).
fn is_no_trail(path: &Path, report: &VerifyReport, key: &ChainKey) -> bool {
    let first_unparsable = matches!(
        report,
        VerifyReport::Broken(Break {
            line: 1,
            problem: Problem::Unparsable { .. },
            ..
        })
    );
    if !first_unparsable || key.is_keyed() {
        return false;
    }
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut reader = BufReader::new(file);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match read_line(&mut reader, &mut buf) {
            Ok(0) => return true,
            Ok(_) => {
                let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
                if parse_line(line, key).is_ok() {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
}

/// Reads the next line of a trail into `buf` (its `\n` kept), at most one byte past the
/// longest record, so a file that is no trail (a huge file without a newline) costs bounded
/// memory rather than all of it. Returns the bytes read, 0 at the end.
fn read_line(reader: &mut BufReader<File>, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    reader.take(MAX_LINE_BYTES + 1).read_until(b'\n', buf)
}

/// The result of reading a trail: the report, plus the head of the chain as far as it fits
/// (where an appender continues once a torn tail is dealt with).
pub(crate) struct Walk {
    pub report: VerifyReport,
    /// The chain as far as it is good.
    pub good_head: ChainHead,
}

/// Longest line a trail can hold, in bytes: a record is a few hundred (its detail is cut to
/// [`crate::redact::MAX_DETAIL_BYTES`]), so this is generous.
const MAX_LINE_BYTES: u64 = 64 * 1024;

pub(crate) fn walk(
    path: &Path,
    expected: Option<&ChainHead>,
    key: &ChainKey,
) -> Result<Walk, DurableError> {
    let io_err = |action, source| DurableError::AuditIo {
        path: PathBuf::from(path),
        action,
        source,
    };
    let file = File::open(path).map_err(|e| io_err("open for reading", e))?;
    let mut reader = BufReader::new(file);
    let mut head = ChainHead::genesis();
    let mut hash_at_expected: Option<String> = None;
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let mut offset = 0u64;
    loop {
        buf.clear();
        let read = read_line(&mut reader, &mut buf).map_err(|e| io_err("read", e))?;
        if read == 0 {
            break;
        }
        line_no += 1;
        if read as u64 > MAX_LINE_BYTES {
            return Ok(Walk {
                report: VerifyReport::Broken(Break {
                    line: line_no,
                    seq: None,
                    problem: Problem::Unparsable {
                        reason: format!(
                            "the line is longer than {} KiB, which no record is: is this an audit.jsonl?",
                            MAX_LINE_BYTES / 1024
                        ),
                    },
                }),
                good_head: head,
            });
        }
        let terminated = buf.last() == Some(&b'\n');
        let content = if terminated {
            &buf[..buf.len() - 1]
        } else {
            &buf[..]
        };
        let broken = |seq, problem| Walk {
            report: VerifyReport::Broken(Break {
                line: line_no,
                seq,
                problem,
            }),
            good_head: head.clone(),
        };
        let parsed = parse_line(content, key);
        if !terminated {
            let complete_record = parsed.as_ref().is_ok_and(|r| {
                r.stored_hash == r.computed_hash && r.seq == head.seq + 1 && r.prev == head.hash
            });
            let seq = parsed.as_ref().ok().map(|r| r.seq);
            return Ok(broken(
                seq,
                Problem::Torn {
                    offset,
                    bytes: read as u64,
                    complete_record,
                },
            ));
        }
        let record = match parsed {
            Ok(record) => record,
            Err(reason) => return Ok(broken(None, Problem::Unparsable { reason })),
        };
        let seq = Some(record.seq);
        if record.stored_hash != record.computed_hash {
            return Ok(broken(
                seq,
                Problem::Edited {
                    stored: record.stored_hash,
                    computed: record.computed_hash,
                },
            ));
        }
        if record.seq != head.seq + 1 {
            return Ok(broken(
                seq,
                Problem::SeqOutOfOrder {
                    expected: head.seq + 1,
                    found: record.seq,
                },
            ));
        }
        if record.prev != head.hash {
            return Ok(broken(
                seq,
                Problem::PrevMismatch {
                    expected: head.hash.clone(),
                    found: record.prev,
                },
            ));
        }
        head = ChainHead {
            seq: record.seq,
            hash: record.stored_hash,
        };
        if expected.is_some_and(|e| e.seq == head.seq) {
            hash_at_expected = Some(head.hash.clone());
        }
        offset += read as u64;
    }
    if let Some(expected) = expected {
        let problem = match hash_at_expected {
            _ if expected.seq == 0 && expected.hash != GENESIS_PREV => Some((
                0,
                Problem::HeadMismatch {
                    expected: expected.hash.clone(),
                    found: GENESIS_PREV.into(),
                },
            )),
            None if expected.seq > head.seq => Some((
                head.seq + 1,
                Problem::MissingTail {
                    last_seq: head.seq,
                    expected_seq: expected.seq,
                },
            )),
            Some(found) if found != expected.hash => Some((
                expected.seq,
                Problem::HeadMismatch {
                    expected: expected.hash.clone(),
                    found,
                },
            )),
            _ => None,
        };
        if let Some((seq, problem)) = problem {
            // Records count from 1 on line 1, so a whole chain has seq N on line N.
            return Ok(Walk {
                report: VerifyReport::Broken(Break {
                    line: seq.max(1),
                    seq: Some(seq),
                    problem,
                }),
                good_head: head,
            });
        }
    }
    Ok(Walk {
        report: VerifyReport::Whole {
            records: head.seq,
            head: head.clone(),
        },
        good_head: head,
    })
}
