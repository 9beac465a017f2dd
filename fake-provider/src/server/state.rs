//! The server's shared state: the model behind a mutex, the clock, and the journal ring.

use crate::config::ProviderConfig;
use crate::model::{Decision, JournalEntry, ProviderModel, Request};
use crate::ConfigError;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Journal entries the server keeps for `GET /_stampede/journal` (older ones are evicted and
/// counted; the ring is what bounds the server's memory in long runs).
pub const DEFAULT_JOURNAL_RING: usize = 100_000;

/// Everything that changes, under one lock (critical sections are a few microseconds).
pub(crate) struct Inner {
    pub(crate) model: ProviderModel,
    /// Real instant of model time 0.
    pub(crate) start: Instant,
    pub(crate) time_scale: f64,
    pub(crate) ring: VecDeque<JournalEntry>,
    pub(crate) ring_capacity: usize,
    pub(crate) ring_lost: u64,
    /// Attempts arrived whose answer has not departed yet (see `respond::Departure`).
    pub(crate) pending: super::pending::Pending,
    /// Seqs of 2xx answers journaled and then abandoned by their client, in the order they
    /// were abandoned (`GET /_stampede/abandoned`): a reader that took an entry before its
    /// client went away learns it from here. At most [`MAX_ABANDONED`]; more are counted.
    pub(crate) abandoned: Vec<u64>,
    /// Abandoned answers past [`MAX_ABANDONED`], not listed.
    pub(crate) abandoned_lost: u64,
    /// This journal's id (`GET /_stampede/stats`, `journal_id`): new whenever the journal
    /// starts afresh (the server starts, a reset, a new scenario), so a runner resuming from
    /// its ledger can tell the journal its first life wrote to from another.
    pub(crate) journal_id: u64,
}

/// An id no journal has had before, in this process or (as far as 64 random bits go) any
/// other: the standard library's per-process random hash keys, over a counter, the wall
/// clock and the process id.
fn fresh_journal_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static MADE: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(MADE.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish()
}

/// Abandoned answers listed at most (8 bytes each): past it they are counted, and a reader
/// must take the ring's entries instead.
pub const MAX_ABANDONED: usize = 1_000_000;

/// State shared by every connection.
pub(crate) struct Shared {
    inner: Mutex<Inner>,
    pub(crate) seed: u64,
    /// The running config's `accept_unknown_fields`, read by the HTTP edge without the
    /// lock (see [`Shared::replace`]).
    accept_unknown_fields: AtomicBool,
}

impl Shared {
    pub(crate) fn new(
        config: ProviderConfig,
        seed: u64,
        ring_capacity: usize,
    ) -> Result<Self, ConfigError> {
        let accept_unknown_fields = AtomicBool::new(config.accept_unknown_fields);
        Ok(Shared {
            inner: Mutex::new(Inner::build(config, seed, ring_capacity)?),
            seed,
            accept_unknown_fields,
        })
    }

    /// Whether a body field the real API does not know is taken (`accept_unknown_fields`).
    pub(crate) fn accepts_unknown_fields(&self) -> bool {
        self.accept_unknown_fields.load(Ordering::Relaxed)
    }

    /// Puts `fresh` in place of the running model under the held lock `inner`, with its
    /// config's edge settings.
    pub(crate) fn replace(&self, inner: &mut Inner, fresh: Inner) {
        self.accept_unknown_fields.store(
            fresh.model.config().accept_unknown_fields,
            Ordering::Relaxed,
        );
        *inner = fresh;
    }

    /// The lock; a poisoned lock is taken anyway (the model keeps no invariant a panicking
    /// reader could break halfway, and the server must keep answering).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Real ms after a Retry-After's answer left during which an attempt reaching its scope is
/// taken as already on the wire (`scope_wait_violation` excused). See the README's "Retry-After
/// compliance".
pub const TRANSIT_ALLOWANCE_REAL_MS: u64 = 50;

impl Inner {
    pub(crate) fn build(
        config: ProviderConfig,
        seed: u64,
        ring_capacity: usize,
    ) -> Result<Self, ConfigError> {
        let wall_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let time_scale = config.time_scale;
        let mut model = ProviderModel::new(config, seed, wall_epoch)?;
        model.set_emit_time_scale(time_scale);
        // An attempt the client sent before a 429 reached it arrives after the 429 left; over
        // loopback that transit, with scheduling noise on a busy machine, stays well under
        // TRANSIT_ALLOWANCE_REAL_MS real ms. Such attempts are not scope-wait violations.
        model.set_transit_allowance((TRANSIT_ALLOWANCE_REAL_MS as f64 * time_scale).ceil() as u64);
        // The server drains after every attempt, so the model's own buffer stays tiny.
        model.set_journal_capacity(1_024);
        // A plain completion's body is written straight as JSON text by the edge
        // (`respond::play`), not built as a value to be serialized and dropped.
        model.set_lean_completions(true);
        Ok(Inner {
            model,
            start: Instant::now(),
            time_scale,
            ring: VecDeque::new(),
            ring_capacity: ring_capacity.max(1),
            pending: super::pending::Pending::default(),
            abandoned: Vec::new(),
            abandoned_lost: 0,
            ring_lost: 0,
            journal_id: fresh_journal_id(),
        })
    }

    /// Model time now: real ms since start times the scale.
    pub(crate) fn now(&self) -> u64 {
        let real = self.start.elapsed().as_secs_f64() * 1_000.0;
        (real * self.time_scale) as u64
    }

    /// Real ms for a model duration (rounded up so the client never hears early).
    pub(crate) fn real_ms(&self, model_ms: u64) -> u64 {
        (model_ms as f64 / self.time_scale).ceil() as u64
    }

    /// One attempt through the model, its journal entry moved to the ring. An attempt no
    /// credential admitted (`scope` empty) keeps only its attribution numbers, tenant and
    /// class: nothing else it sent is stored. Also returns the `created` of a completion
    /// answered now (the model leaves completion bodies to the edge).
    pub(crate) fn arrive(&mut self, req: &Request) -> (Decision, u64) {
        let now = self.now();
        let d = self.model.arrive(req, now);
        // Every attempt through here departs once (`respond::play` makes its departure
        // in the same poll).
        self.pending.arrived(d.seq, true);
        // Entry by entry, not `drain_journal`: that collects them in a new `Vec` each time.
        while let Some(mut e) = self.model.next_journal() {
            if e.scope.is_none() {
                e.idempotency_key = None;
                e.external_ref = None;
                e.lookup = None;
            }
            if self.ring.len() == self.ring_capacity {
                self.ring.pop_front();
                self.ring_lost += 1;
            }
            self.ring.push_back(e);
        }
        (d, self.model.completion_created(now))
    }

    /// Journals a request the edge refused before the model saw it (a route the provider
    /// lacks, a body the real API refuses): see `ProviderModel::arrive_refused`.
    pub(crate) fn arrive_refused(
        &mut self,
        method: &str,
        path: &str,
        credential: Option<&str>,
        refusal: crate::model::EdgeRefusal,
    ) -> u64 {
        let now = self.now();
        let seq = self
            .model
            .arrive_refused(method, path, credential, refusal, now);
        self.ring_journal();
        seq
    }

    /// Journals a request for the model catalog the edge answered with `answer` (status,
    /// error code): see `ProviderModel::arrive_catalog`.
    pub(crate) fn arrive_catalog(
        &mut self,
        path: &str,
        credential: Option<&str>,
        answer: (u16, Option<&'static str>),
    ) -> u64 {
        let now = self.now();
        let seq = self.model.arrive_catalog(path, credential, answer, now);
        self.ring_journal();
        seq
    }

    /// Moves the model's undrained journal entries to the ring (evicting the oldest past
    /// its capacity) of an attempt the edge answered itself, which kept nothing private.
    fn ring_journal(&mut self) {
        while let Some(e) = self.model.next_journal() {
            if self.ring.len() == self.ring_capacity {
                self.ring.pop_front();
                self.ring_lost += 1;
            }
            self.ring.push_back(e);
        }
    }

    pub(crate) fn depart(&mut self, seq: u64) {
        let now = self.now();
        self.model.depart(seq, now);
        self.pending.departed(seq);
    }

    /// Attempt `seq`'s answer was never delivered: its client went away before the answer
    /// was handed to the connection (a client timeout shorter than the latency, a stream
    /// it stopped reading). A 2xx journaled for it is marked undelivered, so no one counts
    /// it as a request the provider answered; what it billed stays billed, as a real
    /// provider bills work its client abandoned.
    pub(crate) fn abandon(&mut self, seq: u64) {
        let Ok(i) = self.ring.binary_search_by_key(&seq, |e| e.seq) else {
            return;
        };
        let e = &mut self.ring[i];
        if matches!(e.status, Some(200..=299)) && !e.undelivered {
            e.undelivered = true;
            let tokens = e.tokens_used;
            self.model.count_undelivered(tokens);
            if self.abandoned.len() < MAX_ABANDONED {
                self.abandoned.push(seq);
            } else {
                self.abandoned_lost += 1;
            }
        }
    }
}
