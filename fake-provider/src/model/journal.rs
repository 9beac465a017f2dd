//! The journal: every attempt that reached the edge, the ground truth of a run.

use serde::{Deserialize, Serialize};

use super::identity::IdentifiedBy;
use super::request::Fingerprint;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

/// One attempt as the provider saw it.
///
/// Written when the attempt arrives (the model decides everything then). `done_ms` is the
/// planned end: `at_ms + latency_ms` for answers, drops and streams; 0 for hangs, whose end
/// only the client's timeout knows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// Attempt sequence number at the edge (1-based, gap-free).
    pub seq: u64,
    /// Arrival time, model ms since run start.
    pub at_ms: u64,
    /// Planned answer time, model ms (0 for hangs).
    pub done_ms: u64,
    /// The credential, masked (`sk-...ared`); `None` when no key was sent. Shared: masked
    /// once per known credential, not per attempt.
    pub credential: Option<Arc<str>>,
    /// The scope the credential maps to (`None` for unknown keys), shared with the model.
    pub scope: Option<Arc<str>>,
    /// Route template, e.g. `/v1/records/{id}` (borrowed for the known routes).
    pub route: Cow<'static, str>,
    /// HTTP method (borrowed for the known routes).
    pub method: Cow<'static, str>,
    /// `Idempotency-Key` as sent.
    pub idempotency_key: Option<Arc<str>>,
    /// External reference of a record write.
    pub external_ref: Option<String>,
    /// What a record look-up asked for (`id=..`, `external_ref=..`, `idempotency_key=..`), so
    /// reconciliation by the original key can be read off the journal.
    #[serde(default)]
    pub lookup: Option<String>,
    /// Request fingerprint without secrets: method, route template and body hash.
    pub fingerprint: Fingerprint,
    /// `x-stampede-tenant`.
    pub tenant: Option<Arc<str>>,
    /// `x-stampede-action`.
    pub action: Option<u64>,
    /// `x-stampede-attempt`.
    pub attempt_no: Option<u32>,
    /// `x-stampede-class`.
    pub class: Option<Arc<str>>,
    /// HTTP status when one was sent (200 for streams).
    pub status: Option<u16>,
    /// Outcome label: "200", "429", "dropped", "hang", "stream_cut", "stream_error"
    /// (borrowed for the usual statuses).
    pub outcome: Cow<'static, str>,
    /// `error.code` of an error answer (borrowed for the codes the model writes).
    pub error_code: Option<Cow<'static, str>>,
    /// Whether this attempt committed a side effect (a completion or a record).
    pub committed: bool,
    /// Whether this commit is a second (or later) side effect for its logical request, as
    /// the provider identifies it (`logical`): a record created again, or a completion
    /// billed again. Idempotent replays are not commits.
    pub duplicate: bool,
    /// Whether its logical request had itself been told to wait (a Retry-After given to an
    /// earlier attempt of it) and this attempt came back before that wait had passed.
    pub retry_after_violation: bool,
    /// Retry-After given with this answer, model ms.
    pub retry_after_ms: Option<u64>,
    /// Whether an idempotent replay answered it (same key and body, no new effect).
    pub replayed: bool,
    /// Id of the record created or replayed.
    pub record_id: Option<String>,
    /// Tokens used (prompt + completion) by a committed completion.
    pub tokens_used: u64,
    /// The logical request the provider attached this attempt to (1-based, in order of
    /// first arrival; 0 for a look-up of a write it does not know). See `model::identity`.
    #[serde(default)]
    pub logical: u64,
    /// This attempt's ordinal within its logical request (1 = first; 0 for look-ups).
    #[serde(default)]
    pub logical_attempt: u32,
    /// How the provider attached it (`new`, `idempotency_key`, `external_ref`,
    /// `fingerprint`, `lookup`).
    #[serde(default)]
    pub identified_by: IdentifiedBy,
    /// Whether it reached its scope while a Retry-After told to another request there still
    /// bound it (from when that answer left, plus the transit allowance).
    #[serde(default)]
    pub scope_wait_violation: bool,
    /// Tokens billed by this commit because it is a duplicate (`tokens_used` when
    /// `duplicate`, else 0).
    #[serde(default)]
    pub duplicate_tokens: u64,
    /// Whether it committed but its answer never reached the client (dropped or hung after
    /// the commit, a stream cut or ended by an error event).
    #[serde(default)]
    pub undelivered: bool,
    /// Whether the client's `x-stampede-attempt` claim disagrees with the provider's own
    /// count (a first attempt claimed as a retry, or a retry claimed as a first).
    #[serde(default)]
    pub claim_mismatch: bool,
    /// `x-stainless-retry-count` as the client's SDK sent it (a claim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk_retry_count: Option<u32>,
    /// The model the provider served or refused: the resolved name when `provider.models`
    /// is listed (the first model for a request naming none; the name as sent, cut to 200
    /// bytes, for an unknown one), `None` when no models are listed. Shared with the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Arc<str>>,
    /// What this commit costs at its model's price, micro-dollars (US$ 1e-6), rounded to
    /// nearest; 0 without a price or a commit. A duplicate commit is billed too.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub billed_micro_usd: u64,
    /// Which of its scope's limits refused it (429 or `insufficient_quota`): `rpm`, `tpm`,
    /// `rpd`, `tpd` or `concurrency`; `None` otherwise (injected faults included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<Cow<'static, str>>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A bounded buffer of entries not yet drained: the oldest are dropped (and counted) past
/// `capacity`, so a run that never drains cannot grow without bound.
#[derive(Debug, Clone)]
pub struct JournalBuffer {
    entries: VecDeque<JournalEntry>,
    capacity: usize,
    lost: u64,
}

impl JournalBuffer {
    /// A buffer holding at most `capacity` undrained entries.
    pub fn new(capacity: usize) -> Self {
        JournalBuffer {
            entries: VecDeque::new(),
            capacity: capacity.max(1),
            lost: 0,
        }
    }

    /// Appends, evicting the oldest entry when full. Inlined, so an entry (456 bytes) is
    /// moved from its builder into the buffer once rather than copied into the call first.
    #[inline]
    pub fn push(&mut self, entry: JournalEntry) {
        if self.entries.len() == self.capacity {
            self.entries.pop_front();
            self.lost += 1;
        }
        self.entries.push_back(entry);
    }

    /// Appends as [`JournalBuffer::push`] does and lends the entry back, for the model to
    /// fill in where it stays: an entry built whole and then pushed was moved (456 bytes a
    /// time) into `push`, into the deque's own `push_back` and into its slot.
    pub(crate) fn push_mut(&mut self, entry: JournalEntry) -> &mut JournalEntry {
        if self.entries.len() == self.capacity {
            self.entries.pop_front();
            self.lost += 1;
        }
        let at = self.entries.len();
        self.entries.push_back(entry);
        &mut self.entries[at]
    }

    /// Lends the buffer out, leaving an empty stand-in that holds no allocation (see
    /// [`JournalBuffer::restore`]).
    pub(crate) fn lend(&mut self) -> JournalBuffer {
        std::mem::replace(self, JournalBuffer::new(self.capacity))
    }

    /// Takes back a buffer [`JournalBuffer::lend`] lent out. The stand-in is forgotten, not
    /// dropped: an empty `VecDeque` owns no memory, and dropping it is a call on every
    /// attempt.
    pub(crate) fn restore(&mut self, lent: JournalBuffer) {
        let mut stand_in = std::mem::replace(self, lent);
        if stand_in.entries.capacity() == 0 {
            std::mem::forget(stand_in);
            return;
        }
        // Nothing journals while the buffer is lent (the model holds `&mut self` for the
        // whole attempt); were an entry written to the stand-in, it is kept, not lost.
        debug_assert!(false, "an entry was journaled while the buffer was lent");
        self.lost += stand_in.lost;
        for entry in stand_in.entries.drain(..) {
            self.push(entry);
        }
    }

    /// Hands each buffered entry, oldest first, to `read` where it lies, then forgets it
    /// (dropped in place: an entry is 456 bytes, and taking it out was a copy per attempt).
    /// Stops at the first error, which is returned: the entries up to the one that failed
    /// are forgotten, the rest stay buffered.
    pub fn drain_with<E>(
        &mut self,
        mut read: impl FnMut(&JournalEntry) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut read_so_far = 0;
        let result = self.entries.iter().try_for_each(|entry| {
            read_so_far += 1;
            read(entry)
        });
        self.entries.drain(..read_so_far);
        result
    }

    /// Takes everything buffered.
    pub fn drain(&mut self) -> Vec<JournalEntry> {
        self.entries.drain(..).collect()
    }

    /// Takes the oldest entry buffered.
    pub fn pop(&mut self) -> Option<JournalEntry> {
        self.entries.pop_front()
    }

    /// Entries evicted undrained since the start.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Most entries held undrained.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Entries buffered now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is buffered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
