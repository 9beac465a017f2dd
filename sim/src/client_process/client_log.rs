//! A client's output, kept in its log up to a cap.
//!
//! The client's stdout and stderr are pipes the runner reads, not the log file itself: a
//! client that writes without end (`yes`, a retry loop that logs every attempt) wrote
//! 4.4 GB in two seconds straight into `client.log`. Past [`MAX_LOG_BYTES`] the output is
//! still read, so the client never blocks on a full pipe, but dropped, and the log ends
//! with a line saying how much was.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;

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

/// Copies a replica's output into its log until both pipes close.
pub struct ClientLog {
    path: PathBuf,
    sink: Arc<Mutex<Sink>>,
    copies: Vec<JoinHandle<std::io::Result<()>>>,
}

impl ClientLog {
    /// Creates the log at `path` (truncating an earlier one).
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(ClientLog {
            path: path.to_path_buf(),
            sink: Arc::new(Mutex::new(Sink {
                file: File::create(path)?,
                written: 0,
                dropped: 0,
            })),
            copies: Vec::new(),
        })
    }

    /// Reads `output` (a stdout or stderr pipe) into the log, on a task of its own.
    pub fn copy(&mut self, mut output: impl AsyncRead + Unpin + Send + 'static) {
        let sink = Arc::clone(&self.sink);
        self.copies.push(tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = output.read(&mut buf).await?;
                if n == 0 {
                    return Ok(());
                }
                let mut sink = sink.lock().unwrap_or_else(|p| p.into_inner());
                let room = MAX_LOG_BYTES.saturating_sub(sink.written);
                let kept = (n as u64).min(room) as usize;
                sink.file.write_all(&buf[..kept])?;
                sink.written += kept as u64;
                sink.dropped += (n - kept) as u64;
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
