//! One connection's clock: how long it has been idle, or reading a request head, so a
//! watchdog can close connections that hold a slot without making progress.
//!
//! - idle: no request in progress and no byte of the next one read: closed after
//!   `idle_timeout`, or after `pressed_idle_timeout` while a new connection waits for a
//!   slot (so clients that open connections and leave them idle cannot keep others out);
//! - reading a head: bytes of the next request read but its head not yet complete (or an
//!   unread body still trickling in after its answer): closed `header_read_timeout` after
//!   the first of those bytes;
//! - a request in progress (from its head until its answer's last byte, hangs and streams
//!   included): closed only when the client stops taking the answer's bytes: the socket
//!   refuses a write for `write_stall_timeout` (a stream whose client stopped reading would
//!   otherwise hold its scope's concurrency slot until the connection died). Its body read
//!   has its own timeout in the handler.

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

#[derive(Debug)]
struct ClockState {
    in_flight: u32,
    idle_since: Instant,
    first_byte: Option<Instant>,
    /// Since when the socket has refused the answer's bytes (a write pending), if it does.
    write_blocked_since: Option<Instant>,
}

/// Shared by the connection's I/O, its in-flight guards and its watchdog.
#[derive(Debug)]
pub(crate) struct ConnClock {
    state: Mutex<ClockState>,
}

impl ConnClock {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(ConnClock {
            state: Mutex::new(ClockState {
                in_flight: 0,
                idle_since: Instant::now(),
                first_byte: None,
                write_blocked_since: None,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ClockState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn read_some(&self) {
        let mut s = self.lock();
        if s.in_flight == 0 && s.first_byte.is_none() {
            s.first_byte = Some(Instant::now());
        }
    }

    /// The socket refused a write (`true`) or took one (`false`).
    fn write_blocked(&self, blocked: bool) {
        let mut s = self.lock();
        s.write_blocked_since = match (blocked, s.write_blocked_since) {
            (true, Some(since)) => Some(since),
            (true, None) => Some(Instant::now()),
            (false, _) => None,
        };
    }

    /// When the watchdog should close the connection, if nothing changes; while a request
    /// is in progress, only when its answer's bytes are refused (`write_stall` after the
    /// first refusal), else `None`.
    fn deadline(&self, header: Duration, idle: Duration, write_stall: Duration) -> Option<Instant> {
        let s = self.lock();
        if s.in_flight > 0 {
            return s.write_blocked_since.map(|since| since + write_stall);
        }
        Some(match s.first_byte {
            Some(t) => t + header,
            None => s.idle_since + idle,
        })
    }
}

/// Held from a request's head until its answer's body is done (or dropped).
#[derive(Debug)]
pub(crate) struct InFlight(Arc<ConnClock>);

impl InFlight {
    pub(crate) fn new(clock: Arc<ConnClock>) -> Self {
        {
            let mut s = clock.lock();
            s.in_flight += 1;
            s.first_byte = None;
        }
        InFlight(clock)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        if s.in_flight == 0 {
            s.idle_since = Instant::now();
            s.first_byte = None;
        }
    }
}

/// How long a connection may take, by what it is doing (see the module's list).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub header: Duration,
    pub idle: Duration,
    pub pressed_idle: Duration,
    pub write_stall: Duration,
}

/// Whether a new connection waits for a slot, shared by the accept loop and every
/// watchdog: the loop raises it while it waits; one idle connection claims the room it
/// asks for, so one waiting connection closes one idle one, not every one idle as long.
#[derive(Debug)]
pub(crate) struct Pressure {
    /// Raised and lowered by the accept loop; wakes the watchdogs when it changes.
    waiting: tokio::sync::watch::Sender<bool>,
    /// A close is wanted and no idle connection has claimed it yet.
    wanted: std::sync::atomic::AtomicBool,
}

impl Pressure {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Pressure {
            waiting: tokio::sync::watch::Sender::new(false),
            wanted: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// A new connection waits for a slot (`true`), or got one (`false`).
    pub(crate) fn set_waiting(&self, waiting: bool) {
        self.wanted
            .store(waiting, std::sync::atomic::Ordering::Release);
        self.waiting.send_replace(waiting);
    }

    /// Takes the close wanted, if one still is.
    fn claim(&self) -> bool {
        self.wanted.swap(false, std::sync::atomic::Ordering::AcqRel)
    }
}

/// Resolves when the connection has been idle or reading a head for too long, its client
/// has refused an answer's bytes for too long, or it has been idle `pressed_idle` while a
/// new connection waits for a slot and it claimed the close.
pub(crate) async fn watchdog(clock: Arc<ConnClock>, timeouts: Timeouts, pressure: Arc<Pressure>) {
    let poll = timeouts
        .header
        .min(timeouts.idle)
        .min(timeouts.write_stall)
        .max(Duration::from_millis(10))
        / 2;
    let mut changes = pressure.waiting.subscribe();
    loop {
        let pressed = *changes.borrow_and_update();
        let stall = timeouts.write_stall;
        let normal = clock.deadline(timeouts.header, timeouts.idle, stall);
        let early = pressed
            .then(|| {
                let idle = timeouts.idle.min(timeouts.pressed_idle);
                clock.deadline(timeouts.header, idle, stall)
            })
            .flatten();
        let now = Instant::now();
        if normal.is_some_and(|d| now >= d) {
            return;
        }
        if early.is_some_and(|d| now >= d) && pressure.claim() {
            return;
        }
        let until = match (normal, early) {
            (None, _) => now + poll,
            (Some(n), Some(e)) if e > now => e.min(n),
            (Some(n), _) => n,
        };
        // Never past one poll: a request can arrive, and its answer's writes be refused,
        // while this sleeps towards an idle deadline, and nothing else wakes it for those.
        let until = until.min(now + poll);
        tokio::select! {
            _ = tokio::time::sleep_until(until.into()) => {}
            // Cannot fail: this watchdog holds the sender (in `pressure`).
            _ = changes.changed() => {}
        }
    }
}

/// The socket, noting when bytes arrive outside a request and when it refuses writes.
pub(crate) struct TrackedIo<T> {
    inner: T,
    clock: Arc<ConnClock>,
    /// The last write was refused (the clock holds since when): the clock is locked only
    /// when this changes, not on every write.
    blocked: bool,
}

impl<T> TrackedIo<T> {
    pub(crate) fn new(inner: T, clock: Arc<ConnClock>) -> Self {
        TrackedIo {
            inner,
            clock,
            blocked: false,
        }
    }

    /// Notes whether a write was refused, for the watchdog.
    fn wrote<R>(&mut self, r: Poll<R>) -> Poll<R> {
        let blocked = r.is_pending();
        if blocked != self.blocked {
            self.blocked = blocked;
            self.clock.write_blocked(blocked);
        }
        r
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for TrackedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.clock.read_some();
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for TrackedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.wrote(r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.wrote(r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Not a sign the socket takes bytes again: a TCP socket's flush is ready at once
        // even while it refuses every write. Taken for one, it cleared the refusal the write
        // before had noted, and a client that stopped reading was never closed.
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// An answer's body that keeps its request in flight until its last frame (or its drop).
pub(crate) struct GuardedBody {
    inner: axum::body::Body,
    _guard: InFlight,
}

impl GuardedBody {
    pub(crate) fn new(inner: axum::body::Body, guard: InFlight) -> Self {
        GuardedBody {
            inner,
            _guard: guard,
        }
    }
}

impl Body for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
