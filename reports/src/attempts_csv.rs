//! `attempts.csv` written row by row as a run's journal drains: one row per outbound attempt,
//! hundreds of thousands in a backlog run, so the encoding is the run directory's hot path.
//!
//! Rows are encoded straight into one output buffer: numbers with `itoa`, booleans as
//! `true`/`false`, texts copied as they are unless they hold a byte CSV must quote. The
//! bytes are exactly what the `csv` crate's serde writer makes of an [`AttemptRow`] with
//! its default settings (a test compares the two over arbitrary rows), at a fraction of the
//! cost: the serde path visits every field through a serializer and every byte through
//! `csv_core`'s state machine, a fifth of a naive backlog run's `--out` time.

use std::io::{self, Write};

use crate::schema::AttemptRow;

/// The buffer is handed to the writer when it holds this many bytes (256 KiB): large
/// writes, a bounded buffer.
const FLUSH_AT: usize = 1 << 18;

/// Writes `attempts.csv` rows to `W`, header first, buffered in 256 KiB writes.
///
/// Call [`AttemptsCsv::finish`] at the end: a dropped writer loses what it still buffers.
#[derive(Debug)]
pub struct AttemptsCsv<W: Write> {
    out: W,
    buf: Vec<u8>,
}

impl AttemptsCsv<std::fs::File> {
    /// Creates (or truncates) the file at `path` and starts it: every writer of a run's
    /// `attempts.csv` opens it this way.
    pub fn create(path: &std::path::Path) -> io::Result<Self> {
        std::fs::File::create(path).map(Self::new)
    }
}

impl<W: Write> AttemptsCsv<W> {
    /// Starts the file on `out` with its header line (written with the first flush).
    pub fn new(out: W) -> Self {
        let mut buf = Vec::with_capacity(FLUSH_AT + 1024);
        buf.extend_from_slice(HEADER.as_bytes());
        buf.push(b'\n');
        AttemptsCsv { out, buf }
    }

    /// Appends `row`; the buffer goes to the writer when it is full.
    pub fn write(&mut self, row: &AttemptRow<'_>) -> io::Result<()> {
        encode(row, &mut self.buf);
        if self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands every buffered byte to the writer and flushes it.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()
    }

    /// Flushes and gives the writer back.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self.out)
    }
}

/// The header line: [`AttemptRow`]'s field names in declaration order, as serde names them.
pub const HEADER: &str = "seq,at_ms,done_ms,tenant,scope,route,action,attempt_no,outcome,\
error_code,committed,retry_after_violation,idempotency_key,logical,logical_attempt,duplicate,\
scope_wait_violation";

/// Appends `row` as one CSV line (with its `\n`) to `out`.
pub fn encode(row: &AttemptRow<'_>, out: &mut Vec<u8>) {
    // Destructured so that a field added to the row without a column here fails to compile.
    let AttemptRow {
        seq,
        at_ms,
        done_ms,
        tenant,
        scope,
        route,
        action,
        attempt_no,
        outcome,
        error_code,
        committed,
        retry_after_violation,
        idempotency_key,
        logical,
        logical_attempt,
        duplicate,
        scope_wait_violation,
    } = row;
    // One reservation for the whole line (17 fields: ten numbers of at most 20 digits,
    // four flags, the texts, perhaps quoted), so the appends below never reallocate.
    let texts = tenant.len() + scope.len() + route.len() + outcome.len() + error_code.len();
    out.reserve(2 * (texts + idempotency_key.len()) + 17 * 24);
    let mut n = itoa::Buffer::new();
    out.extend_from_slice(n.format(*seq).as_bytes());
    out.push(b',');
    out.extend_from_slice(n.format(*at_ms).as_bytes());
    out.push(b',');
    out.extend_from_slice(n.format(*done_ms).as_bytes());
    out.push(b',');
    text(tenant, out);
    out.push(b',');
    text(scope, out);
    out.push(b',');
    text(route, out);
    out.push(b',');
    out.extend_from_slice(n.format(*action).as_bytes());
    out.push(b',');
    out.extend_from_slice(n.format(*attempt_no).as_bytes());
    out.push(b',');
    text(outcome, out);
    out.push(b',');
    text(error_code, out);
    out.push(b',');
    flag(*committed, out);
    out.push(b',');
    flag(*retry_after_violation, out);
    out.push(b',');
    text(idempotency_key, out);
    out.push(b',');
    out.extend_from_slice(n.format(*logical).as_bytes());
    out.push(b',');
    out.extend_from_slice(n.format(*logical_attempt).as_bytes());
    out.push(b',');
    flag(*duplicate, out);
    out.push(b',');
    flag(*scope_wait_violation, out);
    out.push(b'\n');
}

fn flag(b: bool, out: &mut Vec<u8>) {
    out.extend_from_slice(if b { b"true" } else { b"false" });
}

/// A text field: as it is, or quoted with its quotes doubled when it holds a delimiter, a
/// quote or a line break (the bytes `csv`'s default writer quotes, `\r` included because a
/// reader takes it for the end of a record).
fn text(s: &str, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    if !needs_quotes(bytes) {
        out.extend_from_slice(bytes);
        return;
    }
    out.push(b'"');
    for &b in bytes {
        if b == b'"' {
            out.push(b'"');
        }
        out.push(b);
    }
    out.push(b'"');
}

/// Whether `bytes` holds one of the four bytes CSV quotes. All four are below `-` (0x2d),
/// which keys, scopes, routes and outcomes rarely hold, so eight bytes at a time are first
/// tested for any byte below it (the classic "has a byte less than n" word trick) and only a
/// word that has one is looked at byte by byte.
fn needs_quotes(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const BELOW: u64 = ONES * 0x2d;
    let special = |b: &u8| matches!(b, b',' | b'"' | b'\n' | b'\r');
    let mut words = bytes.chunks_exact(8);
    for word in words.by_ref() {
        let x = u64::from_ne_bytes(word.try_into().expect("chunks of eight"));
        // Nonzero exactly when some byte of `x` is below 0x2d (bytes of 0x80 and above,
        // never special, are masked out by `!x`).
        if x.wrapping_sub(BELOW) & !x & HIGHS != 0 && word.iter().any(special) {
            return true;
        }
    }
    words.remainder().iter().any(special)
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use proptest::prelude::*;

    use super::*;

    /// What the `csv` crate's serde writer makes of `rows` (the reference this encoder
    /// must match byte for byte).
    fn by_serde(rows: &[AttemptRow<'_>]) -> Vec<u8> {
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in rows {
            w.serialize(r).unwrap();
        }
        w.into_inner().unwrap()
    }

    fn by_encoder(rows: &[AttemptRow<'_>]) -> Vec<u8> {
        let mut w = AttemptsCsv::new(Vec::new());
        for r in rows {
            w.write(r).unwrap();
        }
        w.finish().unwrap()
    }

    /// Texts that need no quoting, texts that do, and the empty text.
    fn a_text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9:/_-]{0,12}",
            "[a-z,\"\r\n ]{0,8}",
            any::<String>(),
            Just(String::new()),
        ]
    }

    fn a_row() -> impl Strategy<Value = AttemptRow<'static>> {
        (
            (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()),
            (any::<u32>(), any::<u64>(), any::<u32>()),
            (a_text(), a_text(), a_text(), a_text(), a_text(), a_text()),
            any::<[bool; 4]>(),
        )
            .prop_map(
                |(
                    (seq, at_ms, done_ms, action),
                    (attempt_no, logical, logical_attempt),
                    (tenant, scope, route, outcome, error_code, key),
                    flags,
                )| AttemptRow {
                    seq,
                    at_ms,
                    done_ms,
                    tenant: Cow::Owned(tenant),
                    scope: Cow::Owned(scope),
                    route: Cow::Owned(route),
                    action,
                    attempt_no,
                    outcome: Cow::Owned(outcome),
                    error_code: Cow::Owned(error_code),
                    committed: flags[0],
                    retry_after_violation: flags[1],
                    idempotency_key: Cow::Owned(key),
                    logical,
                    logical_attempt,
                    duplicate: flags[2],
                    scope_wait_violation: flags[3],
                },
            )
    }

    proptest! {
        #[test]
        fn rows_are_byte_identical_to_the_csv_crates(rows in prop::collection::vec(a_row(), 1..20)) {
            prop_assert_eq!(by_encoder(&rows), by_serde(&rows));
        }
    }

    proptest! {
        #[test]
        fn the_word_test_finds_exactly_the_bytes_csv_quotes(bytes in prop::collection::vec(any::<u8>(), 0..40)) {
            let expected = bytes.iter().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r'));
            prop_assert_eq!(needs_quotes(&bytes), expected);
        }
    }

    #[test]
    fn a_run_with_no_attempts_still_has_its_header() {
        // serde's writer writes no header before a first row; a file of no attempts keeps
        // its columns so a reader knows what it would hold.
        let empty = String::from_utf8(by_encoder(&[])).unwrap();
        assert_eq!(empty, format!("{HEADER}\n"));
        let one = String::from_utf8(by_serde(&[AttemptRow::default()])).unwrap();
        assert_eq!(one.lines().next(), Some(HEADER));
    }

    #[test]
    fn the_buffer_reaches_the_writer_in_bounded_writes() {
        let row = AttemptRow {
            idempotency_key: Cow::Borrowed("k,with\"quote"),
            ..AttemptRow::default()
        };
        let mut w = AttemptsCsv::new(Vec::new());
        for _ in 0..20_000 {
            w.write(&row).unwrap();
            assert!(w.buf.len() < FLUSH_AT + 1024, "the buffer stays bounded");
        }
        let bytes = w.finish().unwrap();
        let rows: Vec<AttemptRow> = csv::Reader::from_reader(bytes.as_slice())
            .deserialize()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows.len(), 20_000);
        assert!(rows.iter().all(|r| r == &row));
    }
}
