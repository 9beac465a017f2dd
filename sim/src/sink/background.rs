//! attempts.csv encoded on a thread of its own, so the loop that plays the run only copies
//! each row's numbers and texts into a batch.
//!
//! Encoding a row (numbers to digits, texts checked for quoting) took about 1,300
//! instructions, a tenth of a naive run's loop; copying the row into a batch takes a small
//! part of that. Full batches go to the encoder thread over a bounded channel (at most
//! `BATCHES_QUEUED` wait, so a slow disk holds the loop back instead of filling memory)
//! and come back empty to be filled again, so a run of any length allocates a handful of
//! batches. The encoder writes each row with [`AttemptsCsv`], in the order it was taken:
//! the file's bytes are those of a sink that encodes in place.

use std::borrow::Cow;
use std::io;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use stampede_reports::{AttemptRow, AttemptsCsv};

use super::AttemptSink;

/// Rows a batch holds before it goes to the encoder.
const BATCH_ROWS: usize = 4_096;
/// Full batches that may wait for the encoder at once.
const BATCHES_QUEUED: usize = 2;

/// One row's numbers and flags, and where its texts end in the batch's text buffer.
#[derive(Debug, Clone, Copy)]
struct Packed {
    seq: u64,
    at_ms: u64,
    done_ms: u64,
    action: u64,
    logical: u64,
    attempt_no: u32,
    logical_attempt: u32,
    /// committed, retry_after_violation, duplicate, scope_wait_violation: bits 0 to 3.
    flags: u8,
    /// Where the row's texts start in `Batch::texts`.
    start: u32,
    /// Where its tenant, scope, route, outcome, error code and key end there.
    ends: [u32; 6],
}

/// Rows on their way to the encoder: numbers in `rows`, texts one after another in `texts`.
#[derive(Debug, Default)]
struct Batch {
    rows: Vec<Packed>,
    texts: String,
}

impl Batch {
    fn with_room() -> Self {
        Batch {
            rows: Vec::with_capacity(BATCH_ROWS),
            texts: String::with_capacity(BATCH_ROWS * 64),
        }
    }

    /// Copies `row` in.
    fn push(&mut self, row: &AttemptRow<'_>) {
        let offset =
            |texts: &String| u32::try_from(texts.len()).expect("a batch's texts fit in 4 GiB");
        let start = offset(&self.texts);
        let mut ends = [0; 6];
        let texts = [
            &row.tenant,
            &row.scope,
            &row.route,
            &row.outcome,
            &row.error_code,
            &row.idempotency_key,
        ];
        for (end, text) in ends.iter_mut().zip(texts) {
            self.texts.push_str(text);
            *end = offset(&self.texts);
        }
        let flags = u8::from(row.committed)
            | u8::from(row.retry_after_violation) << 1
            | u8::from(row.duplicate) << 2
            | u8::from(row.scope_wait_violation) << 3;
        self.rows.push(Packed {
            seq: row.seq,
            at_ms: row.at_ms,
            done_ms: row.done_ms,
            action: row.action,
            logical: row.logical,
            attempt_no: row.attempt_no,
            logical_attempt: row.logical_attempt,
            flags,
            start,
            ends,
        });
    }

    /// Row `p` as the encoder takes it, its texts borrowed from the batch.
    fn row(&self, p: &Packed) -> AttemptRow<'_> {
        let text = |i: usize| {
            let from = if i == 0 { p.start } else { p.ends[i - 1] };
            Cow::Borrowed(&self.texts[from as usize..p.ends[i] as usize])
        };
        AttemptRow {
            seq: p.seq,
            at_ms: p.at_ms,
            done_ms: p.done_ms,
            tenant: text(0),
            scope: text(1),
            route: text(2),
            action: p.action,
            attempt_no: p.attempt_no,
            outcome: text(3),
            error_code: text(4),
            committed: p.flags & 1 != 0,
            retry_after_violation: p.flags & 2 != 0,
            idempotency_key: text(5),
            logical: p.logical,
            logical_attempt: p.logical_attempt,
            duplicate: p.flags & 4 != 0,
            scope_wait_violation: p.flags & 8 != 0,
        }
    }

    fn clear(&mut self) {
        self.rows.clear();
        self.texts.clear();
    }
}

/// An attempts.csv whose rows are encoded and written on a thread of its own. Call
/// [`BackgroundCsv::finish`] at the end: it writes what is left and says whether every row
/// reached the file.
pub struct BackgroundCsv {
    filling: Batch,
    to_encoder: Option<SyncSender<Batch>>,
    emptied: Receiver<Batch>,
    encoder: Option<JoinHandle<io::Result<()>>>,
}

impl BackgroundCsv {
    /// Starts the encoder thread on `csv`.
    pub fn start(mut csv: AttemptsCsv<std::fs::File>) -> io::Result<Self> {
        let (to_encoder, full) = mpsc::sync_channel::<Batch>(BATCHES_QUEUED);
        let (give_back, emptied) = mpsc::channel::<Batch>();
        let encoder = std::thread::Builder::new()
            .name("attempts.csv".into())
            .spawn(move || {
                for mut batch in full {
                    for p in &batch.rows {
                        csv.write(&batch.row(p))?;
                    }
                    batch.clear();
                    // The loop may have ended already: the batch is then dropped here.
                    let _ = give_back.send(batch);
                }
                csv.finish().map(drop)
            })?;
        Ok(BackgroundCsv {
            filling: Batch::with_room(),
            to_encoder: Some(to_encoder),
            emptied,
            encoder: Some(encoder),
        })
    }

    /// Sends the batch being filled to the encoder; an empty one takes its place.
    fn hand_over(&mut self) -> io::Result<()> {
        let next = self
            .emptied
            .try_recv()
            .unwrap_or_else(|_| Batch::with_room());
        let full = std::mem::replace(&mut self.filling, next);
        let sent = self
            .to_encoder
            .as_ref()
            .is_some_and(|to| to.send(full).is_ok());
        if sent {
            return Ok(());
        }
        // The encoder stops early only on an error, which says why; were it to stop
        // without one, the batch it did not take is still not written.
        self.join()?;
        Err(io::Error::other(
            "the attempts.csv encoder stopped before the run's end",
        ))
    }

    /// Waits for the encoder to end and gives its result.
    fn join(&mut self) -> io::Result<()> {
        self.to_encoder = None;
        match self.encoder.take() {
            Some(encoder) => encoder
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the attempts.csv encoder panicked"))),
            None => Err(io::Error::other("the attempts.csv encoder stopped earlier")),
        }
    }

    /// Hands over the rows still batched and waits for the encoder to write them all.
    fn close(&mut self) -> io::Result<()> {
        if !self.filling.rows.is_empty() {
            self.hand_over()?;
        }
        self.join()
    }

    /// Writes the rows still batched and waits for every row to reach the file.
    pub fn finish(mut self) -> io::Result<()> {
        self.close()
    }
}

impl Drop for BackgroundCsv {
    /// A run that stopped on an error still gets the rows it made into the file.
    fn drop(&mut self) {
        if self.encoder.is_some() {
            let _ = self.close();
        }
    }
}

impl AttemptSink for BackgroundCsv {
    fn attempt(&mut self, row: &AttemptRow<'_>) -> Result<(), String> {
        self.filling.push(row);
        if self.filling.rows.len() >= BATCH_ROWS {
            self.hand_over()
                .map_err(|e| format!("writing attempts.csv: {e}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: u64) -> AttemptRow<'static> {
        AttemptRow {
            seq: i,
            at_ms: i * 7,
            done_ms: i * 7 + 3,
            tenant: Cow::Borrowed(if i % 2 == 0 { "acme" } else { "" }),
            scope: Cow::Owned(format!("account:{}", i % 3)),
            route: Cow::Borrowed("/v1/chat/completions"),
            action: i / 2,
            attempt_no: (i % 5) as u32,
            outcome: Cow::Borrowed(if i % 4 == 0 { "429" } else { "200" }),
            error_code: Cow::Borrowed(if i % 4 == 0 {
                "rate_limit_exceeded"
            } else {
                ""
            }),
            committed: i % 3 == 0,
            retry_after_violation: i % 5 == 0,
            idempotency_key: Cow::Owned(if i % 6 == 0 {
                format!("k,\"{i}\"")
            } else {
                String::new()
            }),
            logical: i / 3,
            logical_attempt: (i % 4) as u32,
            duplicate: i % 7 == 0,
            scope_wait_violation: i % 11 == 0,
        }
    }

    #[test]
    fn the_file_is_the_one_an_encoder_in_place_writes() {
        let dir = std::env::temp_dir().join(format!("stampede-bg-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (here, there) = (dir.join("here.csv"), dir.join("there.csv"));
        let rows = 3 * BATCH_ROWS as u64 + 17;
        let mut in_place = AttemptsCsv::create(&here).unwrap();
        let mut background = BackgroundCsv::start(AttemptsCsv::create(&there).unwrap()).unwrap();
        for i in 0..rows {
            in_place.write(&row(i)).unwrap();
            background.attempt(&row(i)).unwrap();
        }
        in_place.finish().unwrap();
        background.finish().unwrap();
        let (a, b) = (
            std::fs::read(&here).unwrap(),
            std::fs::read(&there).unwrap(),
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(a.iter().filter(|&&c| c == b'\n').count() as u64, rows + 1);
        assert!(a == b, "the two files differ");
    }

    #[test]
    fn a_run_that_stops_without_finishing_still_writes_its_rows() {
        let path =
            std::env::temp_dir().join(format!("stampede-bg-drop-{}.csv", std::process::id()));
        let mut background = BackgroundCsv::start(AttemptsCsv::create(&path).unwrap()).unwrap();
        let rows = BATCH_ROWS as u64 + 5;
        for i in 0..rows {
            background.attempt(&row(i)).unwrap();
        }
        drop(background);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            text.lines().count() as u64,
            rows + 1,
            "the header and every row"
        );
    }
}
