//! A client's output, kept in its log up to a cap.
//!
//! The client's stdout and stderr are pipes the runner reads, not the log file itself: a
//! client that writes without end (`yes`, a retry loop that logs every attempt) wrote
//! 4.4 GB in two seconds straight into `client.log`. Past [`MAX_LOG_BYTES`] the output is
//! still read, so the client never blocks on a full pipe, but dropped, and the log ends
//! with a line saying how much was.
//!
//! Every key of the scenario is masked on its way into the log (`sk-...abcd`): a client
//! that traces its commands (`set -x` before a `curl -H "Authorization: Bearer $KEY"`), or
//! prints its environment, or quotes its key in an error, had put the key whole into the
//! run directory CI uploads.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;

/// Shortest key masked in the log (bytes).
const MIN_MASKED_KEY: usize = 4;

/// Largest log kept per replica (bytes).
pub const MAX_LOG_BYTES: u64 = 64 << 20;

/// Longest the runner waits, once the client's processes are gone, for its output to end
/// (a process outside the client's group can hold the pipes open for ever).
const DRAIN: Duration = Duration::from_secs(2);

/// One replica's log: the file and how much went into it.
struct Sink {
    file: File,
    written: u64,
    dropped: u64,
}

impl Sink {
    /// Writes what the cap leaves room for of `bytes`, and counts the rest dropped.
    fn keep(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let room = MAX_LOG_BYTES.saturating_sub(self.written);
        let kept = (bytes.len() as u64).min(room) as usize;
        self.file.write_all(&bytes[..kept])?;
        self.written += kept as u64;
        self.dropped += (bytes.len() - kept) as u64;
        Ok(())
    }
}

/// Copies a replica's output into its log until both pipes close.
pub struct ClientLog {
    path: PathBuf,
    sink: Arc<Mutex<Sink>>,
    /// The keys masked in the log, each with its mask.
    keys: Arc<[(Vec<u8>, Vec<u8>)]>,
    copies: Vec<JoinHandle<std::io::Result<()>>>,
}

impl ClientLog {
    /// Creates the log at `path` (truncating an earlier one), masking each of `keys` in it.
    pub fn create(path: &Path, keys: &[&str]) -> std::io::Result<Self> {
        let mut masked: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            // A key of a character or three is no secret (a test's `k1`), and masking it
            // everywhere garbled every word that held it ("plain te****t" for `x`).
            .filter(|k| k.len() >= MIN_MASKED_KEY)
            .map(|k| (k.as_bytes().to_vec(), stampede_secret::mask(k).into_bytes()))
            .collect();
        // Longest first: a key that holds another is masked whole.
        masked.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        masked.dedup_by(|a, b| a.0 == b.0);
        Ok(ClientLog {
            path: path.to_path_buf(),
            sink: Arc::new(Mutex::new(Sink {
                file: File::create(path)?,
                written: 0,
                dropped: 0,
            })),
            keys: masked.into(),
            copies: Vec::new(),
        })
    }

    /// Reads `output` (a stdout or stderr pipe) into the log, on a task of its own.
    pub fn copy(&mut self, mut output: impl AsyncRead + Unpin + Send + 'static) {
        let sink = Arc::clone(&self.sink);
        let mut masker = Masker::new(Arc::clone(&self.keys));
        self.copies.push(tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            let mut out = Vec::with_capacity(buf.len());
            loop {
                let n = output.read(&mut buf).await?;
                out.clear();
                let kept = match (masker.keys.is_empty(), n) {
                    // Nothing to mask: the bytes go as they came.
                    (true, _) => &buf[..n],
                    (false, 0) => {
                        masker.finish(&mut out);
                        &out
                    }
                    (false, _) => {
                        masker.feed(&buf[..n], &mut out);
                        &out
                    }
                };
                sink.lock().unwrap_or_else(|p| p.into_inner()).keep(kept)?;
                if n == 0 {
                    return Ok(());
                }
            }
        }));
    }

    /// Waits (at most [`DRAIN`]) for the output to end, then notes in the log what the cap
    /// dropped. The client's processes must be gone: their pipes close with them.
    pub async fn finish(self) -> std::io::Result<()> {
        let until = tokio::time::Instant::now() + DRAIN;
        for mut copy in self.copies {
            match tokio::time::timeout_at(until, &mut copy).await {
                Ok(Ok(copied)) => copied?,
                Ok(Err(join)) => return Err(std::io::Error::other(join)),
                // Held open by a process outside the client's group: what came is kept,
                // and nothing more is read.
                Err(_) => copy.abort(),
            }
        }
        let mut sink = self.sink.lock().unwrap_or_else(|p| p.into_inner());
        if sink.dropped > 0 {
            let note = format!(
                "\n[stampede: {} reached its cap of {} MiB; {} more bytes of the client's \
                 output were dropped]\n",
                self.path.display(),
                MAX_LOG_BYTES >> 20,
                sink.dropped
            );
            sink.file.write_all(note.as_bytes())?;
        }
        sink.file.flush()
    }
}

/// Masks keys in a stream of bytes read in pieces: a key cut in two by a read is still
/// found, since the bytes that may begin one are held back until the next piece shows
/// whether they do.
struct Masker {
    /// The keys, longest first, each with its mask.
    keys: Arc<[(Vec<u8>, Vec<u8>)]>,
    /// Whether a key starts with this byte: every other byte is copied as it is, in runs.
    starts: [bool; 256],
    /// The longest key's length (bytes): a tail shorter than it may begin one.
    longest: usize,
    /// The end of the bytes so far that may be the start of a key (shorter than the
    /// longest key).
    held: Vec<u8>,
}

impl Masker {
    fn new(keys: Arc<[(Vec<u8>, Vec<u8>)]>) -> Self {
        let mut starts = [false; 256];
        for (key, _) in keys.iter() {
            if let Some(&first) = key.first() {
                starts[usize::from(first)] = true;
            }
        }
        Masker {
            longest: keys.first().map_or(0, |(k, _)| k.len()),
            keys,
            starts,
            held: Vec::new(),
        }
    }

    /// Appends `piece`, masked, to `out`, holding back what may begin a key.
    fn feed(&mut self, piece: &[u8], out: &mut Vec<u8>) {
        if self.held.is_empty() {
            self.scan(piece, out);
        } else {
            // Only a key's first bytes are held: this copy is short-lived and small.
            let mut bytes = std::mem::take(&mut self.held);
            bytes.extend_from_slice(piece);
            self.scan(&bytes, out);
        }
    }

    /// Appends `bytes`, masked, to `out`, and holds back a tail that may begin a key.
    fn scan(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        let mut i = 0;
        while i < bytes.len() {
            let run = bytes[i..]
                .iter()
                .position(|b| self.starts[usize::from(*b)])
                .unwrap_or(bytes.len() - i);
            out.extend_from_slice(&bytes[i..i + run]);
            i += run;
            if i == bytes.len() {
                return;
            }
            let rest = &bytes[i..];
            if let Some((key, mask)) = self.keys.iter().find(|(k, _)| rest.starts_with(k)) {
                out.extend_from_slice(mask);
                i += key.len();
                continue;
            }
            // Near the end, a key may go on in the next piece: hold the rest back.
            if rest.len() < self.longest && self.keys.iter().any(|(k, _)| k.starts_with(rest)) {
                self.held.extend_from_slice(rest);
                return;
            }
            out.push(bytes[i]);
            i += 1;
        }
    }

    /// Appends what was held back to `out`: the stream ended, so it begins no key.
    fn finish(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(keys: &[&str], pieces: &[&[u8]]) -> String {
        let keys: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .map(|k| (k.as_bytes().to_vec(), stampede_secret::mask(k).into_bytes()))
            .collect();
        let mut m = Masker::new(keys.into());
        let mut out = Vec::new();
        for p in pieces {
            m.feed(p, &mut out);
        }
        m.finish(&mut out);
        String::from_utf8(out).unwrap()
    }

    /// A key is masked wherever the reads cut it, and nothing else changes.
    #[test]
    fn a_key_is_masked_across_any_cut() {
        let key = "sk-proj-SECRET0123456789abcdef";
        let line =
            format!("+ curl -H 'Authorization: Bearer {key}' http://x\nsk- and sk-proj ok\n");
        let want = line.replace(key, &stampede_secret::mask(key));
        assert!(!want.contains("SECRET"));
        for cut in 0..=line.len() {
            let (a, b) = line.as_bytes().split_at(cut);
            assert_eq!(masked(&[key], &[a, b]), want, "cut at {cut}");
        }
        // Byte by byte, and a key that ends the stream.
        let pieces: Vec<&[u8]> = line.as_bytes().chunks(1).collect();
        assert_eq!(masked(&[key], &pieces), want);
        assert_eq!(
            masked(&[key], &[key.as_bytes()]),
            stampede_secret::mask(key)
        );
        // A prefix of a key at the end is not one.
        assert_eq!(masked(&[key], &[b"sk-proj-SEC"]), "sk-proj-SEC");
    }
}
