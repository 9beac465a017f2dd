//! The pure provider model: no clock, no sockets; time is an argument and randomness comes
//! from seeded ChaCha streams (one per component, see `streams`).
//!
//! One attempt goes through, in order: authentication (401), the Retry-After violation check,
//! the model check of a completion route (404 `model_not_found` when `provider.models` is
//! listed and the body names another), the fault schedule (first matching rule), the
//! context-length check (400; the model's window, else the provider's), the limits of every
//! scope its key counts against (429; its own scope, then its further `scopes` in listed
//! order, all checked before any is charged), and the route itself (the commit, billed at
//! its model's price). A fault that commits first
//! (`drop_after_commit`, `hang_after_commit`, `stream_cut`, `stream_error`) is applied after
//! the route ran, so an attempt the limits refuse gets the 429 instead.
//!
//! Before any of it, `provider.phases` active at the arrival's time put their completion
//! latency and scope limits in force (see `phases`); with no phases nothing changes.
//!
//! Call [`ProviderModel::depart`] for every decision when its answer left (or its connection
//! closed, or the client gave up on a hang): admitted attempts hold a concurrency slot, and a
//! keyed write holds its idempotency key, until then.

mod alias_index;
mod completion_body;
mod decision;
mod faults;
mod headers;
mod identity;
mod journal;
mod latency;
mod limits;
mod logicals;
mod models;
mod phases;
mod records;
mod replays;
mod request;
mod stats;
mod streams;

pub use completion_body::{CompletionBody, UNNAMED_MODEL};
use decision::{status_label, usual_status, USUAL_OUTCOMES};
pub use decision::{Answer, CompletionId, Decision, ErrorSignal, RecordId, RecordsGiven, Signals};
pub use headers::{
    HeaderOut, LimitFigures, RateFigures, RetryAfterSignal, WindowFigures, LAST_HTTP_DATE_UNIX_S,
};
pub use identity::{IdentifiedBy, Identity, DEFAULT_IDENTITY_WINDOW_MS};
pub use journal::{
    keep_shared, JournalBuffer, JournalEntry, CATALOG_LIST_ROUTE, CATALOG_RETRIEVE_ROUTE,
};
pub use records::{Record, DEFAULT_MAX_RECORDS, DEFAULT_RECORD_RETENTION_MS};
pub use request::{
    body_hash, canonical_body_hash, mask_credential, workload_item, FindBy, Fingerprint, Fnv,
    Request, RequestRoute,
};
pub use stats::{ProviderStats, ScopeStats};

use crate::config::{ConfigError, ConnectionFault, ProviderConfig, RouteName};
use faults::{AttemptFacts, FaultSchedule, Injection};
use headers::ClientClock;
use identity::{CredentialAliases, ScopeAliases};
use latency::LatencySampler;
use limits::ScopeState;
use models::{Models, Resolved};
use phases::Phases;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use records::{KeyCheck, RecordStore};
use replays::{CompletionKeys, ReplayCheck};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use stampede_key::IdempotencyKey;
use std::sync::Arc;

/// Model time: milliseconds since the run (or the server) started.
pub type Millis = u64;

/// Undrained journal entries kept before the oldest are evicted (and counted in
/// `ProviderStats::journal_lost`).
pub const DEFAULT_JOURNAL_CAPACITY: usize = 1 << 20;

/// Retry-After given with a 503 when the rule names none and `retry_after_on_503` is on, ms.
const DEFAULT_503_RETRY_MS: u64 = 1_000;

/// An admitted attempt that has not departed yet.
#[derive(Debug, Clone)]
struct Holding {
    /// Its credential's own scope (record and completion keys live there).
    scope: usize,
    /// Its credential's ordinal, whose further scopes it also holds a slot on.
    credential: usize,
    /// The listed model it was for, which decides the scopes it counted against.
    model: Option<usize>,
    /// The record write's idempotency key it holds.
    key: Option<IdempotencyKey>,
    /// The completion's idempotency key it holds (`completion_idempotency`).
    completion_key: Option<IdempotencyKey>,
}

/// A known bearer key.
#[derive(Debug, Clone)]
struct KnownKey {
    /// Its own scope's index.
    scope: usize,
    /// Its masked form (masked once, shared by every journal entry).
    masked: Arc<str>,
    /// Its ordinal in `provider.credentials` (indexes `ProviderModel::also_counts`).
    ordinal: usize,
    /// Whether its attempts may take the refusal shortcut as far as the config decides
    /// (`ProviderModel::refused_at_once`): no fault rules, no listed models (so no scope
    /// filters a model), and no scope but its own counting it. Worked out once, where it
    /// was four tests at every attempt.
    plain: bool,
    /// Its scope and ordinal packed as the refusal shortcut's entry kinds start (see
    /// [`refusal_kind`]); `None` when either is too large to pack.
    kind_base: Option<u64>,
    /// Its scope's id, shared.
    scope_id: Arc<str>,
    /// Its scope's aliases' start and its own fingerprints' starts (see
    /// `Identity::attribute_known`), kept with the key so an attempt reads them where the
    /// key's other facts lie, with no index into a table of each.
    aliases: (ScopeAliases, CredentialAliases),
}

/// Longest model name a journal entry keeps of a request for an unknown model, bytes.
const MAX_JOURNALED_MODEL: usize = 200;

/// The provider: credentials, scopes, faults, records and the journal.
#[derive(Debug, Clone)]
pub struct ProviderModel {
    config: ProviderConfig,
    seed: u64,
    clock: ClientClock,
    /// Each known credential's scope, masked form and ordinal.
    credentials: FxHashMap<String, KnownKey>,
    /// The known key the last attempt came with, and the text it came as: a client sends
    /// with one key attempt after attempt, and comparing its text (or, for the simulator,
    /// which hands over one shared `Arc<str>`, its address) skips hashing it to search
    /// `credentials`. The `Arc` is held, so its address cannot be reused for another text.
    last_key: Option<(Arc<str>, KnownKey)>,
    /// Per credential ordinal: the further scopes it counts against, in listed order.
    also_counts: Vec<Box<[usize]>>,
    scopes: Vec<ScopeState>,
    /// Per scope: the only model it counts (index into `models`), if it has a filter.
    scope_models: Vec<Option<usize>>,
    /// The listed models.
    models: Models,
    /// Completions remembered by idempotency key (`completion_idempotency`).
    replays: CompletionKeys,
    /// Each scope's id, shared by every journal entry of the scope.
    scope_ids: Vec<Arc<str>>,
    scope_stats: Vec<ScopeStats>,
    faults: FaultSchedule,
    /// `provider.phases`: what is in force over time.
    phases: Phases,
    latency: LatencySampler,
    tool_latency: LatencySampler,
    latency_rng: ChaCha8Rng,
    usage_rng: ChaCha8Rng,
    records: RecordStore,
    /// Records kept at most (see `set_max_records`).
    max_records: usize,
    journal: JournalBuffer,
    holding: FxHashMap<u64, Holding>,
    next_seq: u64,
    stats: ProviderStats,
    /// Attempts per usual outcome (by its place in `USUAL_OUTCOMES`), kept apart from
    /// `stats.status_counts` so counting an attempt compares no label; `stats` adds them in.
    usual_outcomes: [u64; USUAL_OUTCOMES.len()],
    /// Completion and error bodies are `Null` (see `set_lean_bodies`).
    lean_bodies: bool,
    /// Completion bodies are `Null`, error bodies whole (see `set_lean_completions`).
    lean_completions: bool,
    /// Which attempts are one logical request.
    identity: Identity,
    /// Model ms after a Retry-After's answer left during which an attempt on its scope is
    /// taken as already on the wire (see `set_transit_allowance`).
    transit_allowance_ms: u64,
    /// The Retry-After the attempt being decided was given: (its answer leaves, it binds
    /// until), model ms.
    told_until: Option<(u64, u64)>,
    /// Tests only: every attempt goes the general path (`decide`), so a test can hold the
    /// refusal shortcut (`refused_at_once`) to what that path answers.
    #[cfg(test)]
    general_path_only: bool,
}

impl ProviderModel {
    /// A model for a config; `seed` derives its random streams; `wall_epoch_unix_ms` is the
    /// Unix time (ms) of model time 0, used only for HTTP-dates and `created` fields.
    pub fn new(
        config: ProviderConfig,
        seed: u64,
        wall_epoch_unix_ms: u64,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let scope_index: BTreeMap<&str, usize> = config
            .scopes
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), i))
            .collect();
        let also_counts: Vec<Box<[usize]>> = config
            .credentials
            .iter()
            .map(|c| {
                c.scopes
                    .iter()
                    .filter_map(|id| scope_index.get(id.as_str()).copied())
                    .collect()
            })
            .collect();
        let models = Models::new(&config.models);
        let scope_models: Vec<Option<usize>> = config
            .scopes
            .iter()
            .map(|s| s.model.as_deref().and_then(|m| models.index(m)))
            .collect();
        let faults = FaultSchedule::new(&config.faults, streams::derive(seed, streams::FAULTS));
        let credentials = config
            .credentials
            .iter()
            .enumerate()
            .filter_map(|(ordinal, c)| {
                let scope = *scope_index.get(c.scope.as_str())?;
                let masked = Arc::from(mask_credential(&c.key));
                let plain = faults.is_empty()
                    && models.is_empty()
                    && scope_models[scope].is_none()
                    && also_counts[ordinal].is_empty();
                Some((
                    c.key.clone(),
                    KnownKey {
                        scope,
                        masked,
                        ordinal,
                        plain,
                        kind_base: refusal_kind_base(scope, ordinal),
                        scope_id: Arc::from(config.scopes[scope].id.as_str()),
                        aliases: (
                            ScopeAliases::new(&config.scopes[scope].id),
                            CredentialAliases::new(&c.key),
                        ),
                    },
                ))
            })
            .collect();
        Ok(ProviderModel {
            seed,
            clock: ClientClock::new(1.0, wall_epoch_unix_ms),
            credentials,
            last_key: None,
            also_counts,
            scope_models,
            models,
            replays: CompletionKeys::new(
                config.scopes.len(),
                config.record_retention.ms(),
                DEFAULT_MAX_RECORDS,
            ),
            scopes: config.scopes.iter().cloned().map(ScopeState::new).collect(),
            scope_ids: config
                .scopes
                .iter()
                .map(|s| Arc::from(s.id.as_str()))
                .collect(),
            scope_stats: vec![ScopeStats::default(); config.scopes.len()],
            faults,
            phases: Phases::new(&config.phases, &scope_index),
            latency: LatencySampler::new(&config.latency),
            tool_latency: LatencySampler::new(&config.tool_latency),
            latency_rng: streams::derive(seed, streams::LATENCY),
            usage_rng: streams::derive(seed, streams::USAGE),
            records: RecordStore::new(config.record_retention.ms(), DEFAULT_MAX_RECORDS),
            max_records: DEFAULT_MAX_RECORDS,
            journal: JournalBuffer::new(DEFAULT_JOURNAL_CAPACITY),
            holding: FxHashMap::default(),
            next_seq: 0,
            stats: ProviderStats::default(),
            usual_outcomes: [0; USUAL_OUTCOMES.len()],
            lean_bodies: false,
            lean_completions: false,
            identity: Identity::new(config.identity_window.ms()),
            transit_allowance_ms: 0,
            told_until: None,
            #[cfg(test)]
            general_path_only: false,
            config,
        })
    }

    /// Sets how many model ms pass per client ms for emitted values (Retry-After,
    /// `retry-after-ms`, reset headers). The live server sets it to `config.time_scale`;
    /// the simulator leaves it at 1.
    pub fn set_emit_time_scale(&mut self, scale: f64) {
        if scale.is_finite() && scale > 0.0 {
            self.clock.set_scale(scale);
        }
    }

    /// The caller expects about `requests` logical requests (a simulated run knows its
    /// workload's count): the identity index makes room for them at the first, rather than
    /// growing step by step (see [`Identity::expect`]). A capacity only: answers, journal
    /// and figures are the same with or without it.
    pub fn expect_requests(&mut self, requests: usize) {
        self.identity.expect(requests);
    }

    /// Completion, error and record bodies `Null` when `lean` (off by default): for an
    /// in-process driver that reads only the ids from a success (the answer's
    /// `completion_id`, or the `records` a write or a look-up gives) and only the error's
    /// type and code (the answer's `error`) from a failure (the simulator), building the
    /// whole JSON body for every answer and dropping it unread is most of the cost of the
    /// answer; a lean completion costs no heap allocation, and a lean record answer builds
    /// no body (the record kept and the journal's copy of its id still allocate). Signals,
    /// errors' types and codes, the ids, usage, latency and the journal are the same either
    /// way; the HTTP server never sets it.
    pub fn set_lean_bodies(&mut self, lean: bool) {
        self.lean_bodies = lean;
    }

    /// Completion bodies `Null` when `lean` (off by default), every other body whole: for
    /// the HTTP server, which writes a plain completion's JSON itself
    /// ([`CompletionBody::write_json`], from the answer's `completion_id` and `usage`, the
    /// attempt's `max_tokens` and [`ProviderModel::completion_created`]) instead of building
    /// a value to serialize and drop, and builds the value ([`CompletionBody::to_value`])
    /// only for the answers it renders from one (streams, Anthropic's messages).
    pub fn set_lean_completions(&mut self, lean: bool) {
        self.lean_completions = lean;
    }

    /// A completion's `created` for an attempt that arrived at `now`: Unix seconds.
    pub fn completion_created(&self, now: Millis) -> u64 {
        (self.clock.wall_epoch_unix_ms + self.clock.client_ms(now)) / 1_000
    }

    /// Sets how long (model ms) after a Retry-After's answer left an attempt reaching its
    /// scope is excused from `scope_wait_violation`, as possibly sent before the client
    /// could have heard: 0 in the simulator, where transit takes no time; the live server
    /// sets it from real transit and scheduling noise (see `server::ServerOptions`).
    pub fn set_transit_allowance(&mut self, model_ms: u64) {
        self.transit_allowance_ms = model_ms;
        for scope in &mut self.scopes {
            scope.set_transit_allowance(model_ms);
        }
    }

    /// Keeps at most `max_records` records (at least 1; default [`DEFAULT_MAX_RECORDS`]):
    /// beyond it the oldest are evicted as if their retention had passed. The same cap
    /// bounds the completions remembered by idempotency key.
    pub fn set_max_records(&mut self, max_records: usize) {
        self.max_records = max_records.max(1);
        self.records.set_max_records(self.max_records);
        self.replays.set_max_keys(self.max_records);
    }

    /// Caps the undrained journal at `capacity` entries (older ones are evicted and counted).
    pub fn set_journal_capacity(&mut self, capacity: usize) {
        let mut buffer = JournalBuffer::new(capacity);
        for e in self.journal.drain() {
            buffer.push(e);
        }
        self.journal = buffer;
    }

    /// The config this model was built with (limits, faults, latencies).
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// The seed its streams derive from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Back to the state right after `new` (same config, seed and streams); the emit time
    /// scale, journal capacity, record cap, lean bodies and lean completions are kept.
    pub fn reset(&mut self) {
        let scale = self.clock.scale();
        let capacity = self.journal.capacity();
        let lean_bodies = self.lean_bodies;
        let lean_completions = self.lean_completions;
        let allowance = self.transit_allowance_ms;
        if let Ok(mut fresh) = ProviderModel::new(
            self.config.clone(),
            self.seed,
            self.clock.wall_epoch_unix_ms,
        ) {
            fresh.clock.set_scale(scale);
            fresh.journal = JournalBuffer::new(capacity);
            fresh.lean_bodies = lean_bodies;
            fresh.lean_completions = lean_completions;
            fresh.set_transit_allowance(allowance);
            fresh.set_max_records(self.max_records);
            *self = fresh;
        }
    }

    /// Journal entries since the last drain, in seq order.
    pub fn drain_journal(&mut self) -> Vec<JournalEntry> {
        self.journal.drain()
    }

    /// The oldest journal entry not yet drained: [`ProviderModel::drain_journal`] one entry at
    /// a time, without collecting them into a new `Vec` (the simulator drains after every
    /// arrival).
    pub fn next_journal(&mut self) -> Option<JournalEntry> {
        self.journal.pop()
    }

    /// [`ProviderModel::drain_journal`] read in place: each entry not yet drained, oldest
    /// first, goes to `read` by reference and is then forgotten, with no copy out of the
    /// buffer. Stops at `read`'s first error, which is returned; entries after it stay.
    pub fn drain_journal_with<E>(
        &mut self,
        read: impl FnMut(&JournalEntry) -> Result<(), E>,
    ) -> Result<(), E> {
        self.journal.drain_with(read)
    }

    /// Totals so far.
    pub fn stats(&self) -> ProviderStats {
        let mut s = self.stats.clone();
        for (label, &n) in USUAL_OUTCOMES.iter().zip(&self.usual_outcomes) {
            if n > 0 {
                *s.status_counts.entry((*label).to_string()).or_default() += n;
            }
        }
        s.records = self.records.len() as u64;
        s.records_evicted = self.records.evicted();
        s.in_flight = self.holding.len() as u64;
        s.journal_lost = self.journal.lost();
        for (i, scope) in self.scopes.iter().enumerate() {
            let mut ss = self.scope_stats[i].clone();
            ss.in_flight = scope.in_flight;
            ss.retry_after_until_ms = scope.retry_after_latest();
            s.scopes.insert(scope.limits.id.clone(), ss);
        }
        s
    }

    /// A record by id (`rec_000001`).
    pub fn record(&self, id: &str) -> Option<&Record> {
        self.records.by_id(id)
    }

    /// Records created with this external reference, in commit order.
    pub fn records_by_external_ref(&self, external_ref: &str) -> Vec<&Record> {
        self.records.by_external_ref(external_ref)
    }

    /// Records created with this idempotency key, in commit order.
    pub fn records_by_idempotency_key(&self, key: &str) -> Vec<&Record> {
        self.records.by_idempotency_key(&IdempotencyKey::new(key))
    }

    /// Every record kept (see `provider.record_retention`), in commit order.
    pub fn records(&self) -> impl ExactSizeIterator<Item = &Record> + '_ {
        self.records.all()
    }

    /// The answer to `seq` left, its connection closed, or its client gave up: frees its
    /// concurrency slot and its idempotency key. Unknown or repeated seqs are ignored.
    pub fn depart(&mut self, seq: u64, _now: Millis) {
        if let Some(h) = self.holding.remove(&seq) {
            for pos in 0..self.counted_scopes(h.credential) {
                let s = self.nth_scope(h.scope, h.credential, pos);
                if self.counts(s, h.model) {
                    self.scopes[s].release();
                }
            }
            if let (Some(scope), Some(key)) = (self.scope_ids.get(h.scope), h.key) {
                self.records.release_key(scope, &key, seq);
            }
            if let Some(key) = h.completion_key {
                self.replays.release(h.scope, &key, seq);
            }
        }
    }

    /// How many scopes a key with credential ordinal `credential` may count against: its
    /// own, then its further `scopes`.
    fn counted_scopes(&self, credential: usize) -> usize {
        1 + self.also_counts.get(credential).map_or(0, |a| a.len())
    }

    /// The `pos`-th scope a key counts against (0: its own scope `main`, then its further
    /// scopes in listed order): the order admission checks them in.
    fn nth_scope(&self, main: usize, credential: usize, pos: usize) -> usize {
        match pos {
            0 => main,
            _ => self.also_counts[credential][pos - 1],
        }
    }

    /// Whether scope `s` counts a request for `model` (a scope with a model filter counts
    /// only that model's requests).
    fn counts(&self, s: usize, model: Option<usize>) -> bool {
        match self.scope_models[s] {
            None => true,
            Some(only) => model == Some(only),
        }
    }

    /// Whether `credential` is a known key, which `last_key` then holds: the one kept when
    /// it is that key again (the same allocation or the same text), else a search of
    /// `credentials` whose find is kept for the next attempt.
    fn remember_key(&mut self, credential: Option<&Arc<str>>) -> bool {
        let Some(credential) = credential else {
            return false;
        };
        let same = |(last, _): &(Arc<str>, KnownKey)| {
            Arc::ptr_eq(last, credential) || **last == **credential
        };
        if self.last_key.as_ref().is_some_and(same) {
            return true;
        }
        match self.credentials.get(&**credential) {
            Some(found) => {
                self.last_key = Some((Arc::clone(credential), found.clone()));
                true
            }
            None => false,
        }
    }

    /// Whether `credential` is a key the provider accepts (`provider.credentials`): a
    /// query, which changes nothing. An edge asks it before refusing a malformed body, since
    /// the real APIs check the key first (see the server's `routes::key_first`).
    pub fn knows_credential(&self, credential: Option<&str>) -> bool {
        credential.is_some_and(|key| self.credentials.contains_key(key))
    }

    /// An attempt reaches the edge at `now`: journal it, apply limits and faults, commit side
    /// effects, and say what the client sees and after how long.
    // Never inlined into its caller: the profiles (`scripts/instructions.sh`) count the
    // provider's part of an attempt as this function's, and a call is a few instructions.
    #[inline(never)]
    pub fn arrive(&mut self, req: &Request, now: Millis) -> Decision {
        self.records.evict(now);
        if self.config.completion_idempotency {
            self.replays.evict(now);
        }
        if !self.phases.is_empty() {
            self.phases
                .apply(now, &self.config.scopes, &mut self.scopes);
        }
        self.next_seq += 1;
        let seq = self.next_seq;
        // The known key's scope, ordinal and whether it may take the shortcut.
        let is_known = self.remember_key(req.credential.as_ref());
        let (who, known) = match &self.last_key {
            Some((_, k)) if is_known => {
                let (scoped, credential) = &k.aliases;
                let who =
                    self.identity
                        .attribute_known(req, &k.scope_id, (scoped, credential), now);
                (who, Some((k.scope, k.ordinal, k.plain)))
            }
            _ => (self.identity.attribute(req, "", now), None),
        };
        // The common refusal (a full scope) is answered apart, with no journal lent. Only
        // the refusal is handed over, so every argument goes in a register: the rest it
        // reads where it lies (the seq, the key) or works out again (the charge).
        if let Some((scope, _, true)) = known {
            if let Some(refusal) = self.refused_at_once(req, now, scope) {
                return if self.lean_bodies {
                    self.refuse_at_once::<true>(req, now, &who, refusal)
                } else {
                    self.refuse_at_once::<false>(req, now, &who, refusal)
                };
            }
        }
        let claim_mismatch = claim_mismatch(req, &who);
        let known = known.and(self.last_key.as_ref().map(|(_, known)| known));
        // The entry is written into the journal now and filled in where it stays: the buffer
        // is lent out while the attempt is decided (the model reads no journal meanwhile).
        let mut journal = self.journal.lend();
        let entry = journal.entry();
        let credential = match (known, req.credential.as_deref()) {
            (Some(k), _) => Credential::Known {
                masked: &k.masked,
                scope: &self.scope_ids[k.scope],
            },
            (None, Some(unknown)) => Credential::Unknown(unknown),
            (None, None) => Credential::None,
        };
        open_entry(entry, req, (seq, now), credential, &who, claim_mismatch);
        self.told_until = None;
        let known = known.map(|k| (k.scope, k.ordinal));
        // Returned as it is, so its answer is written once, where the caller wants it.
        let decision = self.decide(req, now, seq, known, entry);
        let (latency_ms, answer) = (decision.latency_ms, &decision.answer);
        if let Some((leaves, until)) = self.told_until.take() {
            if who.ordinal > 0 {
                self.identity.told_wait(who.logical, leaves, until);
            }
        }
        if entry.committed && !entry.replayed && who.ordinal > 0 {
            entry.duplicate = self.identity.committed(who.logical);
            if entry.duplicate {
                entry.duplicate_tokens = entry.tokens_used;
            }
            if let (Some(id), Some(scope)) = (&entry.record_id, &entry.scope) {
                self.identity.record_created(who.logical, scope, id);
            }
        }
        entry.undelivered = entry.committed
            && matches!(
                answer,
                Answer::Drop { committed: true }
                    | Answer::Hang { committed: true }
                    | Answer::StreamCut { .. }
                    | Answer::StreamError { .. }
            );
        entry.status = answer.status();
        let outcome = answer.usual_outcome();
        // The label from the slot just found: `label` would look the slot up again.
        entry.outcome = match outcome {
            Some(i) => Cow::Borrowed(USUAL_OUTCOMES[i]),
            None => answer.label(),
        };
        entry.error_code = match answer {
            Answer::Respond {
                error: Some(error), ..
            } => Some(error.code.clone()),
            _ => None,
        };
        entry.retry_after_ms = answer.retry_after_ms();
        entry.done_ms = if matches!(answer, Answer::Hang { .. }) {
            0
        } else {
            now + latency_ms
        };
        self.count(entry, outcome);
        self.journal.restore(journal);
        decision
    }

    /// A request for a route the provider does not have reached the edge at `now`: it is
    /// answered 404 by the caller and journaled here, so a client calling the wrong path
    /// shows in the figures instead of vanishing. `path` is cut to 200 bytes.
    pub fn arrive_unknown_route(
        &mut self,
        method: &str,
        path: &str,
        credential: Option<&str>,
        now: Millis,
    ) -> u64 {
        let refusal = EdgeRefusal {
            status: 404,
            code: "unknown_route",
            workload_item: None,
        };
        self.arrive_refused(method, path, credential, refusal, now)
    }

    /// A request the edge refused before the model saw it reached the edge at `now` (a body
    /// the real API would refuse, sent with a known key: a 400), or one for a route the
    /// provider lacks (404): it is journaled as an attempt with `refusal`'s status and code,
    /// which no limit counts, so every request a client sends shows in the figures.
    /// `path` is cut to 200 bytes. Returns the attempt's seq.
    pub fn arrive_refused(
        &mut self,
        method: &str,
        path: &str,
        credential: Option<&str>,
        refusal: EdgeRefusal,
        now: Millis,
    ) -> u64 {
        let answer = EdgeAnswer {
            status: refusal.status,
            code: Some(refusal.code),
            workload_item: refusal.workload_item,
        };
        self.journal_at_edge((method, path), credential, answer, now)
    }

    /// A request for the provider's model catalog (`GET /v1/models`, `GET
    /// /v1/models/{id}`) reached the edge at `now`, which answered it from the config alone
    /// with `status` (200; 401 for a key the provider does not know, 404 for a model it
    /// does not list, 400 for a query it cannot page by) and, for a refusal, the journal's
    /// error `code`. The edge asks [`ProviderModel::knows_credential`] first, as every
    /// route checks the key first. A catalog read is no logical request and does no work:
    /// it is journaled as an attempt (every request a client sends shows in the figures,
    /// an SDK's `models.list()` at start-up included), with no logical request (`logical`
    /// 0), held to no limit, fault or wait of its scope, and billed nothing. `path` is cut
    /// to 200 bytes. Returns the attempt's seq.
    pub fn arrive_catalog(
        &mut self,
        path: &str,
        credential: Option<&str>,
        (status, code): (u16, Option<&'static str>),
        now: Millis,
    ) -> u64 {
        let answer = EdgeAnswer {
            status,
            code,
            workload_item: None,
        };
        self.journal_at_edge(("GET", path), credential, answer, now)
    }

    /// Journals a request the edge answered itself (see [`ProviderModel::arrive_refused`]
    /// and [`ProviderModel::arrive_catalog`]): an attempt no limit counts, of no logical
    /// request. Returns its seq.
    fn journal_at_edge(
        &mut self,
        (method, path): (&str, &str),
        credential: Option<&str>,
        answer: EdgeAnswer,
        now: Millis,
    ) -> u64 {
        self.next_seq += 1;
        let seq = self.next_seq;
        let mut cut = path.len().min(200);
        while !path.is_char_boundary(cut) {
            cut -= 1;
        }
        // A known key's scope is journaled with it, so a refused attempt counts where the
        // key's others do (by scope, in the attempts' rows).
        let known = credential.and_then(|c| self.credentials.get(c));
        let entry = JournalEntry {
            seq,
            at_ms: now,
            done_ms: now,
            credential: match known {
                Some(k) => Some(Arc::clone(&k.masked)),
                None => credential.map(|c| Arc::from(mask_credential(c))),
            },
            scope: known.map(|k| Arc::clone(&self.scope_ids[k.scope])),
            route: Cow::Owned(path[..cut].to_string()),
            method: Cow::Owned(method.chars().take(16).collect()),
            idempotency_key: None,
            external_ref: None,
            lookup: None,
            fingerprint: Fingerprint::None,
            tenant: None,
            action: None,
            attempt_no: None,
            class: None,
            status: Some(answer.status),
            outcome: status_label(answer.status),
            error_code: answer.code.map(Cow::Borrowed),
            committed: false,
            duplicate: false,
            retry_after_violation: false,
            retry_after_ms: None,
            replayed: false,
            record_id: None,
            tokens_used: 0,
            logical: 0,
            logical_attempt: 0,
            identified_by: IdentifiedBy::New,
            scope_wait_violation: false,
            duplicate_tokens: 0,
            undelivered: false,
            claim_mismatch: false,
            sdk_retry_count: None,
            model: None,
            billed_micro_usd: 0,
            limit: None,
            workload_item: answer.workload_item,
        };
        self.count(&entry, usual_status(answer.status));
        self.journal.push(entry);
        seq
    }

    /// Counts `tokens` of an answer the edge could not deliver after it was journaled (its
    /// client went away first) as undelivered, as a cut stream's are.
    pub fn count_undelivered(&mut self, tokens: u64) {
        self.stats.undelivered_tokens += tokens;
    }

    /// Counts attempt `e`, whose outcome is `USUAL_OUTCOMES[usual]` when `usual` is known.
    fn count(&mut self, e: &JournalEntry, usual: Option<usize>) {
        count_into((&mut self.stats, &mut self.usual_outcomes), e, usual);
    }

    /// Whether the attempt `req` at `now`, with a known key of scope `scope` whose
    /// attempts the config lets take the shortcut (`KnownKey::plain`), is one the general
    /// path (`decide`) would refuse at its limits (step 5) having passed steps 1 to 4 with
    /// no effect beyond counting: the common case of a client storming a full scope. So it
    /// is when nothing else can answer first: no fault rules, no listed models (so no model
    /// to resolve or to bound its tokens, and no scope filters a model), a key counted
    /// against its own scope only (what `plain` says), no token count (answered at 3b), and
    /// a request within the context window. Then the refusal, as `ScopeState::check_at`
    /// says it.
    ///
    /// Changes nothing but the scope's windows, rolled to `now`, which every path does
    /// before it reads them.
    #[inline]
    fn refused_at_once(
        &mut self,
        req: &Request,
        now: Millis,
        scope: usize,
    ) -> Option<limits::Refusal> {
        #[cfg(test)]
        if self.general_path_only {
            return None;
        }
        debug_assert!(
            self.faults.is_empty() && self.models.is_empty() && self.scope_models[scope].is_none(),
            "a plain key's scope filters no model and no rule can fire"
        );
        if matches!(req.route, RequestRoute::CountTokens) {
            return None;
        }
        let charge = req.token_charge();
        // Over the provider's window the general path answers 400 first.
        if req.is_model_call()
            && self
                .config
                .context_window
                .is_some_and(|window| charge > u64::from(window))
        {
            return None;
        }
        let (refusal, _, _) = self.scopes[scope].check_at(now, charge).err()?;
        Some(refusal)
    }

    /// Answers attempt `req`, arrived at `now` (ms) as the last seq with the last key
    /// remembered and attributed to `who`, with the 429 of its scope's `refusal`, as
    /// [`ProviderModel::refused_at_once`] found it: what
    /// `decide` and `arrive` do for it, in their order, with the journal entry written and
    /// closed from what is known of the answer, and the answer built where it is returned
    /// (the general path reads its fields back from a `Decision` it then copies, 312 bytes).
    /// `LEAN` is whether bodies are lean (`set_lean_bodies`): a constant, so the lean body
    /// is written where the answer is built; a body chosen at run time went through the
    /// stack, and copying it whole read back the one byte `Value::Null` stores there (a
    /// stalled store forwarding: about a third of this function's time, by perf).
    #[inline(never)]
    fn refuse_at_once<const LEAN: bool>(
        &mut self,
        req: &Request,
        now: Millis,
        who: &identity::Attribution,
        refusal: limits::Refusal,
    ) -> Decision {
        let reject_ms = self.config.reject_latency.ms();
        let (seq, charge) = (self.next_seq, req.token_charge());
        let claim_mismatch = claim_mismatch(req, who);
        let Self {
            journal,
            last_key,
            scope_ids,
            scope_stats,
            scopes,
            clock,
            config,
            identity,
            stats,
            usual_outcomes,
            ..
        } = self;
        let Some((_, known)) = last_key.as_ref() else {
            unreachable!("a known key is the last one remembered")
        };
        let scope_idx = known.scope;
        // A refusal like the last one written in this slot (drained at once, as the
        // simulator does) leaves the fields they share as they are.
        let entry_kind = refusal_kind(known.kind_base, &req.route, refusal);
        let (entry, kept) = match entry_kind {
            Some(kind) => journal.next_slot_kept(kind),
            None => (journal.next_slot(), false),
        };
        if kept {
            reopen_refusal(entry, req, (seq, now), who, claim_mismatch);
        } else {
            let credential = Credential::Known {
                masked: &known.masked,
                scope: &scope_ids[scope_idx],
            };
            open_entry(entry, req, (seq, now), credential, who, claim_mismatch);
            // As `arrive` closes the entry of a refusal: nothing was committed.
            let (_, code) = refusal.kind_and_code();
            entry.limit = Some(Cow::Borrowed(refusal.key()));
            entry.undelivered = false;
            entry.status = Some(429);
            entry.outcome = Cow::Borrowed(USUAL_OUTCOMES[REFUSED_OUTCOME]);
            entry.error_code = Some(Cow::Borrowed(code));
        }
        // 1, 2: as `decide`.
        let stats_of = &mut scope_stats[scope_idx];
        stats_of.attempts += 1;
        let scope = &mut scopes[scope_idx];
        let early = who.early;
        let scope_wait = scope.violates_retry_after(now) && !early;
        entry.scope_wait_violation = scope_wait;
        stats_of.scope_wait_violations += u64::from(scope_wait);
        stats_of.retry_after_violations += u64::from(early);
        // 5: as `admit` and `decide` refuse.
        let limit_and_used = if LEAN {
            (0, 0)
        } else {
            match scope.check(charge) {
                Err((again, limit, used)) if again == refusal => (limit, used),
                _ => unreachable!("the scope refuses as `refused_at_once` found"),
            }
        };
        scope.refused(refusal);
        let wait = scope.wait_ms(refusal, now);
        let (kind, code) = refusal.kind_and_code();
        let client_wait = clock.client_ms(wait);
        // As `rate_limited` (with `tell_retry_after`): the wait told binds the scope and,
        // below, the request.
        let leaves = now + reject_ms;
        let until = if headers::as_http_date(config.retry_after_format, seq) {
            now + wait
        } else {
            leaves + wait
        };
        scope.told_retry_after(leaves, until);
        stats_of.rate_limited += 1;
        let retry_after = clock.retry_after(config.retry_after_format, seq, now, wait);
        let body = if LEAN {
            Value::Null
        } else {
            // The limit and the amount used, read as `refused_at_once` read them: nothing
            // has changed them since but the refusal's own count, added after its check.
            let (limit, used) = limit_and_used;
            error_body(
                &refusal.message(limit, used, charge, client_wait),
                kind,
                code,
            )
        };
        // The windows were rolled to `now` by `refused_at_once`.
        let rate = clock.rate_limit(scope, now);
        // As `arrive` closes the entry: nothing was committed. A retry told again to wait
        // for the same reset leaves its request's wait as it was, so its record is not
        // visited for it.
        if who.ordinal > 0 && until > who.told_until {
            identity.told_wait(who.logical, leaves, until);
        }
        entry.retry_after_ms = Some(retry_after.delay_ms);
        entry.done_ms = now + reject_ms;
        // As `count_into` counts a refusal: nothing committed, no tokens.
        stats.attempts += 1;
        usual_outcomes[REFUSED_OUTCOME] += 1;
        stats.retry_after_violations += u64::from(early);
        stats.scope_wait_violations += u64::from(scope_wait);
        Decision {
            seq,
            latency_ms: reject_ms,
            answer: error_answer(
                429,
                Signals {
                    rate: Some(rate),
                    retry_after: Some(retry_after),
                    ..Signals::bare(seq)
                },
                body,
                kind,
                Cow::Borrowed(code),
            ),
        }
    }

    fn decide(
        &mut self,
        req: &Request,
        now: Millis,
        seq: u64,
        known: Option<(usize, usize)>,
        entry: &mut JournalEntry,
    ) -> Decision {
        let reject_ms = self.config.reject_latency.ms();
        // 1. Authentication: `known` is the key's scope and ordinal, looked up by `arrive`.
        let Some(((scope_idx, ordinal), credential)) = known.zip(req.credential.as_deref()) else {
            // In the words of the API the request came in on.
            let anthropic = matches!(
                req.route,
                RequestRoute::Messages | RequestRoute::CountTokens
            );
            let message = key_refusal_message(req.credential.is_some(), anthropic);
            return decided(
                seq,
                reject_ms,
                self.error(
                    401,
                    Signals::bare(seq),
                    || message.to_string(),
                    "invalid_request_error",
                    Cow::Borrowed("invalid_api_key"),
                ),
            );
        };
        // The scope's shared id is read where it lies (`self.scope_ids`), not cloned: a clone
        // and its drop are two locked instructions on every attempt.
        debug_assert!(
            entry
                .scope
                .as_ref()
                .is_some_and(|s| Arc::ptr_eq(s, &self.scope_ids[scope_idx])),
            "the entry was opened with its key's scope"
        );
        self.scope_stats[scope_idx].attempts += 1;

        // 2. Did it reach the scope while a Retry-After already delivered there binds it?
        // An attempt of a request that was itself told to wait and came back early is that
        // request's violation (set from the identity); otherwise the scope's wait, told to
        // another request, was not heeded: a coordination gap.
        // A token count is held to no wait of the scope's (see `RequestRoute::CountTokens`).
        // `matches!`, not `==`: comparing built a `RequestRoute` and dropped it, on every
        // attempt (59 instructions an attempt of the naive backlog, by callgrind).
        let binds = if matches!(req.route, RequestRoute::CountTokens) {
            Binds::Request
        } else {
            Binds::Scope
        };
        if binds == Binds::Scope
            && self.scopes[scope_idx].violates_retry_after(now)
            && !entry.retry_after_violation
        {
            entry.scope_wait_violation = true;
            self.scope_stats[scope_idx].scope_wait_violations += 1;
        }
        if entry.retry_after_violation {
            self.scope_stats[scope_idx].retry_after_violations += 1;
        }

        // 2b. The model, for the routes that name one: resolved once to a listed model (its
        // name shared by the journal); with no models listed, nothing changes.
        let is_chat = req.is_model_call();
        let model = if is_chat {
            match self.models.resolve(req.model.as_deref()) {
                Resolved::Unlisted => None,
                Resolved::Served(i) => {
                    entry.model = Some(Arc::clone(self.models.name(i)));
                    Some(i)
                }
                Resolved::Unknown => {
                    let name = req.model.as_deref().unwrap_or_default();
                    entry.model = Some(Arc::from(cut(name, MAX_JOURNALED_MODEL)));
                    let headers = self.headers(scope_idx, seq, now);
                    let answer = self.error(
                        404,
                        headers,
                        || model_not_found_message(name),
                        "invalid_request_error",
                        Cow::Borrowed("model_not_found"),
                    );
                    return decided(seq, reject_ms, answer);
                }
            }
        } else {
            None
        };

        // 3. The fault schedule.
        // Scripted sequences count attempts of the logical request the provider identified
        // (a look-up counts with the write it asks about), never the client's own claim.
        // With no rules nothing is picked: the facts are not gathered.
        let injection = if self.faults.is_empty() {
            None
        } else {
            let key = req.idempotency_key.as_ref().map(IdempotencyKey::text);
            let facts = AttemptFacts {
                now,
                route: req.route.name(),
                credential,
                scope: &self.scope_ids[scope_idx],
                class: req.class.as_deref(),
                tenant: req.tenant.as_deref(),
                logical: entry.logical,
                key: key.as_deref(),
                external_ref: req.external_ref.as_deref(),
                body_hash: req.body_hash,
            };
            self.faults.pick(&facts)
        };
        let mut late_fault = None;
        match injection {
            Some(Injection::Status {
                status,
                code,
                retry_after_ms,
                should_retry,
            }) => {
                let mut answer = self.injected_status(
                    (scope_idx, binds),
                    seq,
                    now,
                    reject_ms,
                    status,
                    code,
                    retry_after_ms,
                );
                if let (Some(retry), Answer::Respond { signals, .. }) = (should_retry, &mut answer)
                {
                    signals.should_retry = Some(retry);
                }
                return decided(seq, reject_ms, answer);
            }
            Some(Injection::Connection {
                fault: ConnectionFault::DropBeforeCommit,
                ..
            }) => return decided(seq, reject_ms, Answer::Drop { committed: false }),
            Some(Injection::Connection {
                fault: ConnectionFault::Hang,
                ..
            }) => return decided(seq, 0, Answer::Hang { committed: false }),
            Some(Injection::Connection {
                fault,
                after_chunks,
            }) => late_fault = Some((fault, after_chunks)),
            None => {}
        }

        // 3b. A token count is answered here: no limit holds it and nothing is billed (a
        // fault that would break an answer after its commit drops it, as any other).
        if binds == Binds::Request {
            let answer = match late_fault {
                Some(_) => Answer::Drop { committed: false },
                None => token_count(req, seq),
            };
            return decided(seq, reject_ms, answer);
        }

        // 4. Output tokens past the model's bound: refused as the real APIs refuse them (400,
        // never retried), not counted against a limit (a 429 the SDKs retry for minutes).
        // A count the edge assumed (the client named none) is the model's bound at most, as
        // a real model writes no longer answer: billed, limited and drawn as that.
        let bounded;
        let output_bound = model.and_then(|m| self.models.max_output_tokens(m));
        let req = match output_bound {
            Some(most) if req.max_tokens_assumed && req.max_tokens > most => {
                bounded = Request {
                    max_tokens: most,
                    ..req.clone()
                };
                &bounded
            }
            _ => req,
        };
        if let Some(most) = output_bound.filter(|&most| req.max_tokens > most) {
            let headers = self.headers(scope_idx, seq, now);
            // Borrowed: the message is written only when bodies are not lean.
            let name = model.map_or("", |m| &**self.models.name(m));
            let asked = req.max_tokens;
            let message = || {
                match req.route.name() {
                RouteName::Messages => format!(
                    "max_tokens: {asked} > {most}, which is the maximum allowed number of output tokens for {name}"
                ),
                RouteName::Responses => format!(
                    "Invalid 'max_output_tokens': {asked} is more than this model supports: at most {most} output tokens."
                ),
                _ => format!(
                    "max_tokens is too large: {asked}. This model supports at most {most} completion tokens, whereas you provided {asked}."
                ),
            }
            };
            let answer = self.error(
                400,
                headers,
                message,
                "invalid_request_error",
                Cow::Borrowed("invalid_value"),
            );
            return decided(seq, reject_ms, answer);
        }

        // 4b. Context length: the model's own window, else the provider's.
        if is_chat {
            let wanted = req.token_charge();
            let window = model
                .and_then(|m| self.models.context_window(m))
                .or(self.config.context_window);
            if let Some(window) = window {
                if wanted > u64::from(window) {
                    let headers = self.headers(scope_idx, seq, now);
                    let message = || {
                        format!(
                        "This model's maximum context length is {window} tokens. However, you requested {wanted} tokens ({} in the messages, {} in the completion).",
                        req.prompt_tokens, req.max_tokens
                    )
                    };
                    let answer = self.error(
                        400,
                        headers,
                        message,
                        "invalid_request_error",
                        Cow::Borrowed("context_length_exceeded"),
                    );
                    return decided(seq, reject_ms, answer);
                }
            }
        }

        // 5. The limits of every scope it counts against.
        let charge = req.token_charge();
        if let Err((refuser, (refusal, limit, used))) =
            self.admit(scope_idx, ordinal, model, now, charge)
        {
            // The refusing scope speaks for the refusal: the journal, the headers and the
            // wait are its own.
            if refuser != scope_idx {
                entry.scope = Some(Arc::clone(&self.scope_ids[refuser]));
            }
            entry.limit = Some(Cow::Borrowed(refusal.key()));
            let wait = self.scopes[refuser].wait_ms(refusal, now);
            let (kind, code) = refusal.kind_and_code();
            let client_wait = self.clock.client_ms(wait);
            let message = move || refusal.message(limit, used, charge, client_wait);
            let answer = self.rate_limited(
                (refuser, Binds::Scope),
                seq,
                now,
                reject_ms,
                wait,
                (message, kind, Cow::Borrowed(code)),
            );
            return decided(seq, reject_ms, answer);
        }
        self.scope_stats[scope_idx].admitted += 1;
        let mut holding = Holding {
            scope: scope_idx,
            credential: ordinal,
            model,
            key: None,
            completion_key: None,
        };

        // 6. The route.
        let (latency_ms, mut answer) = match &req.route {
            RequestRoute::ChatCompletions
            | RequestRoute::Messages
            | RequestRoute::Responses
            | RequestRoute::Embeddings => {
                self.complete(req, scope_idx, seq, now, entry, model, &mut holding)
            }
            RequestRoute::CreateRecord => {
                self.create_record(req, scope_idx, seq, now, entry, &mut holding)
            }
            RequestRoute::CountTokens => unreachable!("a token count is answered at 3b"),
            RequestRoute::GetRecord { id } => {
                let latency = self.tool_latency.sample(&mut self.latency_rng, 0);
                let headers = self.headers(scope_idx, seq, now);
                // Look-ups see only the caller's scope (its account), as Stripe's do.
                match self.records.by_id_in(&self.scope_ids[scope_idx], id) {
                    Some(r) => {
                        let given = RecordId::of(&r.id).map(RecordsGiven::One);
                        let answer =
                            records_answer(self.lean_bodies, headers, given, || r.to_json());
                        (latency, answer)
                    }
                    None => (
                        latency,
                        self.error(
                            404,
                            headers,
                            || format!("No such record: {id:?}"),
                            "invalid_request_error",
                            Cow::Borrowed("not_found"),
                        ),
                    ),
                }
            }
            RequestRoute::FindRecords { by } => {
                let latency = self.tool_latency.sample(&mut self.latency_rng, 0);
                let headers = self.headers(scope_idx, seq, now);
                let found = match by {
                    FindBy::ExternalRef(r) => self
                        .records
                        .by_external_ref_in(&self.scope_ids[scope_idx], r),
                    FindBy::IdempotencyKey(k) => self
                        .records
                        .by_idempotency_key_in(&self.scope_ids[scope_idx], k),
                };
                let given = match found.first() {
                    None => Some(RecordsGiven::List(None)),
                    Some(r) => RecordId::of(&r.id).map(|id| RecordsGiven::List(Some(id))),
                };
                let body = || {
                    let data: Vec<Value> = found.iter().map(|r| r.to_json()).collect();
                    json!({ "object": "list", "data": data })
                };
                (
                    latency,
                    records_answer(self.lean_bodies, headers, given, body),
                )
            }
            RequestRoute::GetItem { id } => {
                let latency = self.tool_latency.sample(&mut self.latency_rng, 0);
                let body = json!({ "id": id, "object": "item", "version": 1 });
                (
                    latency,
                    respond(200, self.headers(scope_idx, seq, now), body),
                )
            }
        };
        if entry.tokens_used > 0 {
            for pos in 1..self.counted_scopes(ordinal) {
                let s = self.nth_scope(scope_idx, ordinal, pos);
                if self.counts(s, model) {
                    self.scope_stats[s].tokens_used += entry.tokens_used;
                }
            }
        }
        self.holding.insert(seq, holding);

        // 7. Faults that show after the commit.
        if let Some((fault, after_chunks)) = late_fault {
            let committed = entry.committed;
            let chunks = match &answer {
                Answer::Respond {
                    status: 200,
                    stream_chunks,
                    ..
                } => *stream_chunks,
                _ => None,
            };
            answer = match (fault, chunks) {
                (ConnectionFault::HangAfterCommit, _) => Answer::Hang { committed },
                (ConnectionFault::StreamCut, Some(n)) => Answer::StreamCut {
                    after_chunks: after_chunks.unwrap_or(n / 2).min(n),
                    committed,
                },
                (ConnectionFault::StreamError, Some(n)) => Answer::StreamError {
                    after_chunks: after_chunks.unwrap_or(n / 2).min(n),
                },
                // Stream faults on an answer that is not a stream close the connection the
                // same way: the client gets no response.
                _ => Answer::Drop { committed },
            };
        }
        decided(seq, latency_ms, answer)
    }

    /// Stripe's answers to an `Idempotency-Key` that cannot be honoured, for records and
    /// completions alike: 409 while the first request with the key is in flight, 400 when
    /// the key comes back with another body.
    fn key_refusal(&self, headers: Signals, why: KeyRefusal) -> Answer {
        match why {
            KeyRefusal::InUse => self.error(
                409,
                headers,
                || "There is currently another in-progress request using this Idempotency-Key. Retry after it completes.".to_string(),
                "idempotency_error",
                Cow::Borrowed("idempotency_key_in_use"),
            ),
            KeyRefusal::BodyMismatch => self.error(
                400,
                headers,
                || "Keys for idempotent requests can only be used with the same parameters they were first used with.".to_string(),
                "idempotency_error",
                Cow::Borrowed("idempotency_error"),
            ),
        }
    }

    /// Admission on every scope a key counts against, in order: its own scope, then its
    /// further `scopes` as listed, skipping any whose model filter does not match `model`.
    /// The first refusal wins and names its scope (index, refusal); only when all admit is
    /// each charged, so a refusal by a later scope costs the earlier ones nothing (beyond the
    /// refusing scope's own `count_rejected`).
    fn admit(
        &mut self,
        main: usize,
        credential: usize,
        model: Option<usize>,
        now: Millis,
        tokens: u64,
    ) -> Result<(), (usize, (limits::Refusal, u64, u64))> {
        let n = self.counted_scopes(credential);
        for pos in 0..n {
            let s = self.nth_scope(main, credential, pos);
            if !self.counts(s, model) {
                continue;
            }
            // The key's own scope counted its attempt at authentication.
            if pos > 0 {
                self.scope_stats[s].attempts += 1;
            }
            if let Err(refused) = self.scopes[s].check_at(now, tokens) {
                self.scopes[s].refused(refused.0);
                return Err((s, refused));
            }
        }
        for pos in 0..n {
            let s = self.nth_scope(main, credential, pos);
            if self.counts(s, model) {
                self.scopes[s].charge(tokens);
                if pos > 0 {
                    self.scope_stats[s].admitted += 1;
                }
            }
        }
        Ok(())
    }

    /// A completion: draws its size, charges nothing more (tokens were charged at admission)
    /// and bills it at its model's price. With `completion_idempotency`, a key its scope
    /// already completed is answered with that completion again instead, at the edge's
    /// speed (`reject_latency`: a stored answer, nothing runs) and without a latency draw.
    #[allow(clippy::too_many_arguments)]
    fn complete(
        &mut self,
        req: &Request,
        scope_idx: usize,
        seq: u64,
        now: Millis,
        entry: &mut JournalEntry,
        model: Option<usize>,
        holding: &mut Holding,
    ) -> (u64, Answer) {
        let key = req
            .idempotency_key
            .as_ref()
            .filter(|_| self.config.completion_idempotency);
        if let Some(key) = key {
            let reject_ms = self.config.reject_latency.ms();
            match self.replays.check(scope_idx, key, req.body_hash) {
                ReplayCheck::Fresh => {}
                ReplayCheck::InUse => {
                    let headers = self.headers(scope_idx, seq, now);
                    return (reject_ms, self.key_refusal(headers, KeyRefusal::InUse));
                }
                ReplayCheck::BodyMismatch => {
                    let headers = self.headers(scope_idx, seq, now);
                    return (
                        reject_ms,
                        self.key_refusal(headers, KeyRefusal::BodyMismatch),
                    );
                }
                ReplayCheck::Replay(done) => {
                    entry.replayed = true;
                    let usage = (done.prompt_tokens, done.completion_tokens);
                    let mut answer =
                        self.completion_answer(req, scope_idx, seq, done.seq, now, usage);
                    if let Answer::Respond { signals, .. } = &mut answer {
                        signals.idempotent_replayed = true;
                    }
                    return (reject_ms, answer);
                }
            }
        }
        let completion = if req.max_tokens == 0 {
            0
        } else {
            self.usage_rng.gen_range(1..=req.max_tokens)
        };
        // One latency draw per completion whichever model serves it, so listing a model's
        // latency does not reshuffle the draws of the others; an active phase's latency
        // replaces both (same draw, another distribution).
        let sampler = self
            .phases
            .latency()
            .or_else(|| model.and_then(|m| self.models.latency(m)))
            .unwrap_or(&self.latency);
        let latency = sampler.sample(&mut self.latency_rng, completion);
        let total = u64::from(req.prompt_tokens) + u64::from(completion);
        entry.committed = true;
        entry.tokens_used = total;
        entry.billed_micro_usd = model
            .and_then(|m| self.models.price(m))
            .map_or(0, |p| p.micro_usd(req.prompt_tokens, completion));
        self.scope_stats[scope_idx].tokens_used += total;
        if let Some(key) = key {
            let usage = (req.prompt_tokens, completion);
            self.replays
                .remember(scope_idx, key, req.body_hash, seq, usage, now);
            holding.completion_key = req.idempotency_key.clone();
        }
        let answer = self.completion_answer(
            req,
            scope_idx,
            seq,
            seq,
            now,
            (req.prompt_tokens, completion),
        );
        (latency, answer)
    }

    /// The answer of the completion `id_seq` committed (`chatcmpl-<id_seq>`) with `usage`
    /// (prompt, completion tokens), given to attempt `seq`.
    fn completion_answer(
        &mut self,
        req: &Request,
        scope_idx: usize,
        seq: u64,
        id_seq: u64,
        now: Millis,
        usage: (u32, u32),
    ) -> Answer {
        let (prompt, completion) = usage;
        let id = CompletionId::new(id_seq);
        debug_assert!(id.is_some(), "seqs start at 1");
        let body = if self.lean_bodies || self.lean_completions {
            Value::Null
        } else {
            CompletionBody {
                id_seq,
                created: self.completion_created(now),
                prompt_tokens: prompt,
                completion_tokens: completion,
                max_tokens: req.max_tokens,
            }
            .to_value(req.model_name())
        };
        Answer::Respond {
            status: 200,
            signals: self.headers(scope_idx, seq, now),
            body,
            error: None,
            usage: Some(usage),
            stream_chunks: req.stream.then_some(completion.max(1)),
            completion_id: id,
            records: None,
        }
    }

    /// `POST /v1/records` with Stripe-style idempotency.
    fn create_record(
        &mut self,
        req: &Request,
        scope_idx: usize,
        seq: u64,
        now: Millis,
        entry: &mut JournalEntry,
        holding: &mut Holding,
    ) -> (u64, Answer) {
        // A write holds its scope's id while the store is changed under `&mut self`.
        let scope_id = &Arc::clone(&self.scope_ids[scope_idx]);
        let latency = self.tool_latency.sample(&mut self.latency_rng, 0);
        let mut headers = self.headers(scope_idx, seq, now);
        let key = req
            .idempotency_key
            .as_ref()
            .filter(|_| self.config.idempotency);
        if let Some(key) = key {
            match self.records.check_key(scope_id, key, req.body_hash) {
                KeyCheck::Fresh => {}
                KeyCheck::InUse => {
                    return (latency, self.key_refusal(headers, KeyRefusal::InUse));
                }
                KeyCheck::BodyMismatch => {
                    return (latency, self.key_refusal(headers, KeyRefusal::BodyMismatch));
                }
                KeyCheck::Replay(idx) => {
                    let Some(record) = self.records.get(idx) else {
                        return (latency, self.lost_record(headers));
                    };
                    entry.replayed = true;
                    entry.record_id = Some(record.id.clone());
                    headers.idempotent_replayed = true;
                    let given = Some(RecordsGiven::One(RecordId::of_index(idx)));
                    let answer =
                        records_answer(self.lean_bodies, headers, given, || record.to_json());
                    return (latency, answer);
                }
            }
        }
        let idx = self.records.commit(
            scope_id,
            req.idempotency_key.as_ref(),
            key.is_some(),
            req.external_ref.as_deref(),
            req.body_hash,
            req.tenant.as_ref(),
            now,
            seq,
        );
        if key.is_some() {
            holding.key = req.idempotency_key.clone();
        }
        let Some(record) = self.records.get(idx) else {
            return (latency, self.lost_record(headers));
        };
        entry.committed = true;
        entry.duplicate = record.duplicate;
        entry.record_id = Some(record.id.clone());
        let given = Some(RecordsGiven::One(RecordId::of_index(idx)));
        (
            latency,
            records_answer(self.lean_bodies, headers, given, || record.to_json()),
        )
    }

    /// An injected error status, answered `latency` model ms after `now`.
    #[allow(clippy::too_many_arguments)]
    fn injected_status(
        &mut self,
        (scope_idx, binds): (usize, Binds),
        seq: u64,
        now: Millis,
        latency: u64,
        status: u16,
        code: Option<String>,
        retry_after_ms: Option<u64>,
    ) -> Answer {
        let (message, kind, default_code) = match status {
            429 => (
                "Rate limit reached. Please try again later.",
                "requests",
                "rate_limit_exceeded",
            ),
            400 => (
                "Your request was rejected as a result of our safety system.",
                "invalid_request_error",
                "content_policy_violation",
            ),
            401 => (
                "Incorrect API key provided.",
                "invalid_request_error",
                "invalid_api_key",
            ),
            403 => (
                "You are not allowed to do this.",
                "invalid_request_error",
                "forbidden",
            ),
            404 => ("Not found.", "invalid_request_error", "not_found"),
            409 => (
                "Conflict with the current state of the resource.",
                "invalid_request_error",
                "conflict",
            ),
            422 => (
                "Invalid tool arguments.",
                "invalid_request_error",
                "invalid_arguments",
            ),
            500 => (
                "The server had an error while processing your request.",
                "server_error",
                "internal_error",
            ),
            502 => ("Bad gateway.", "server_error", "bad_gateway"),
            503 => (
                "The server is overloaded or not ready yet.",
                "server_error",
                "service_unavailable",
            ),
            504 => ("Gateway timeout.", "server_error", "gateway_timeout"),
            529 => ("Overloaded.", "server_error", "overloaded"),
            _ => ("Injected error.", "server_error", "injected_error"),
        };
        let code = code.map_or(Cow::Borrowed(default_code), Cow::Owned);
        let message = || message.to_string();
        let wait = match status {
            429 => Some(retry_after_ms.unwrap_or_else(|| {
                let scope = &self.scopes[scope_idx];
                if scope.limits.rpm.is_some() || scope.limits.tpm.is_some() {
                    scope.minute.reset_at().saturating_sub(now).max(1)
                } else {
                    DEFAULT_503_RETRY_MS
                }
            })),
            503 | 529 => retry_after_ms.or(self
                .config
                .retry_after_on_503
                .then_some(DEFAULT_503_RETRY_MS)),
            _ => retry_after_ms,
        };
        match wait {
            Some(w) if status == 429 => self.rate_limited(
                (scope_idx, binds),
                seq,
                now,
                latency,
                w,
                (message, kind, code),
            ),
            Some(w) => {
                self.tell_retry_after((scope_idx, binds), seq, now, latency, w);
                let mut signals = self.headers(scope_idx, seq, now);
                signals.retry_after =
                    Some(
                        self.clock
                            .retry_after(self.config.retry_after_format, seq, now, w),
                    );
                self.error(status, signals, message, kind, code)
            }
            None => {
                let signals = self.headers(scope_idx, seq, now);
                self.error(status, signals, message, kind, code)
            }
        }
    }

    /// A 429 answered `latency` model ms after `now` telling the scope to wait `wait` model
    /// ms, remembered for violation checks; `error` is its message (written only for a whole
    /// body), type and code.
    fn rate_limited(
        &mut self,
        (scope_idx, binds): (usize, Binds),
        seq: u64,
        now: Millis,
        latency: u64,
        wait: u64,
        error: (impl FnOnce() -> String, &'static str, Cow<'static, str>),
    ) -> Answer {
        self.tell_retry_after((scope_idx, binds), seq, now, latency, wait);
        self.scope_stats[scope_idx].rate_limited += 1;
        let retry_after = self
            .clock
            .retry_after(self.config.retry_after_format, seq, now, wait);
        let (message, kind, code) = error;
        let body = self.body_for_error(message, kind, &code);
        let scope = &mut self.scopes[scope_idx];
        scope.refresh(now);
        // The figures go straight into the answer, built where it is returned, instead of
        // through a `Signals` moved into `error` (some 260 bytes copied on nearly every
        // refusal).
        let signals = Signals {
            rate: Some(self.clock.rate_limit(scope, now)),
            retry_after: Some(retry_after),
            ..Signals::bare(seq)
        };
        error_answer(429, signals, body, kind, code)
    }

    /// An error answer: its OpenAI-shaped body, or `Null` when bodies are lean (then
    /// `message` is never written), and its type and code as an [`ErrorSignal`].
    fn error(
        &self,
        status: u16,
        signals: Signals,
        message: impl FnOnce() -> String,
        kind: &'static str,
        code: Cow<'static, str>,
    ) -> Answer {
        let body = self.body_for_error(message, kind, &code);
        error_answer(status, signals, body, kind, code)
    }

    /// An error's OpenAI-shaped body, or `Null` when bodies are lean (`message` is then
    /// never written).
    fn body_for_error(
        &self,
        message: impl FnOnce() -> String,
        kind: &'static str,
        code: &str,
    ) -> Value {
        if self.lean_bodies {
            Value::Null
        } else {
            error_body(&message(), kind, code)
        }
    }

    /// The 500 of a record the store should hold and does not.
    fn lost_record(&self, signals: Signals) -> Answer {
        self.error(
            500,
            signals,
            || "record store lost a record".to_string(),
            "server_error",
            Cow::Borrowed("internal_error"),
        )
    }

    /// Remembers, for violation checks, a Retry-After of `wait` model ms on an answer decided
    /// at `now` that leaves `latency` model ms later. `Retry-After: 12` and `retry-after-ms`
    /// count from when the client receives the answer, so the scope is bound until
    /// `now + latency + wait`; an HTTP-date names the moment itself, `now + wait` (rounded
    /// up), so a client that honours the date is never flagged.
    fn tell_retry_after(
        &mut self,
        (scope_idx, binds): (usize, Binds),
        seq: u64,
        now: Millis,
        latency: u64,
        wait: u64,
    ) {
        let leaves = now + latency;
        let until = if headers::as_http_date(self.config.retry_after_format, seq) {
            now + wait
        } else {
            leaves + wait
        };
        if binds == Binds::Scope {
            self.scopes[scope_idx].told_retry_after(leaves, until);
        }
        self.told_until = Some((leaves, until));
    }

    /// What every answer on a scope carries: its seq (`x-stampede-seq`, and `x-request-id`,
    /// which the official SDKs read into their errors) and the scope's rate-limit figures.
    fn headers(&mut self, scope_idx: usize, seq: u64, now: Millis) -> Signals {
        let scope = &mut self.scopes[scope_idx];
        scope.refresh(now);
        Signals {
            rate: Some(self.clock.rate_limit(scope, now)),
            ..Signals::bare(seq)
        }
    }
}

/// Counts attempt `e` in `stats` and `usual_outcomes` (see `ProviderModel::count`).
fn count_into(
    (s, usual_outcomes): (&mut ProviderStats, &mut [u64; USUAL_OUTCOMES.len()]),
    e: &JournalEntry,
    usual: Option<usize>,
) {
    s.attempts += 1;
    match usual {
        Some(i) => usual_outcomes[i] += 1,
        None => match s.status_counts.get_mut(&*e.outcome) {
            Some(n) => *n += 1,
            None => {
                s.status_counts.insert(e.outcome.to_string(), 1);
            }
        },
    }
    s.committed += u64::from(e.committed);
    s.duplicates += u64::from(e.duplicate);
    s.retry_after_violations += u64::from(e.retry_after_violation);
    s.scope_wait_violations += u64::from(e.scope_wait_violation);
    s.tokens_used += e.tokens_used;
    s.duplicate_tokens += e.duplicate_tokens;
    if e.undelivered {
        s.undelivered_tokens += e.tokens_used;
    }
}

/// Whether attempt `req`, attributed to `who`, claims to be a first attempt when the
/// provider counts it a retry, or the other way round (`JournalEntry::claim_mismatch`).
fn claim_mismatch(req: &Request, who: &identity::Attribution) -> bool {
    who.ordinal > 0
        && req
            .attempt_no
            .is_some_and(|claimed| (claimed <= 1) != (who.ordinal == 1))
}

/// The key an attempt came with, as its journal entry records it.
enum Credential<'a> {
    /// A key the provider knows: its masked form and its scope's id, both shared.
    Known {
        masked: &'a Arc<str>,
        scope: &'a Arc<str>,
    },
    /// A key it does not know (masked for the entry; it has no scope).
    Unknown(&'a str),
    /// No key sent.
    None,
}

/// Writes the part of attempt `req`'s journal entry known on arrival, `seq` at `now` (ms),
/// into `entry`, a recycled slot (see `JournalBuffer::next_slot`); the decision fills in
/// the rest. Every field is written: the slot holds an earlier attempt's entry. It is
/// destructured without `..`, so a field added to the entry and not written here does not
/// compile. Shared names the slot already holds are kept (`keep_shared`), and the texts'
/// buffers reused.
///
/// Always inlined: where the caller writes a field again (a refusal closes its entry at
/// once), the first write, of a value with nothing to drop, can be left out.
#[inline(always)]
fn open_entry(
    entry: &mut JournalEntry,
    req: &Request,
    (seq, now): (u64, Millis),
    credential: Credential<'_>,
    who: &identity::Attribution,
    claim_mismatch: bool,
) {
    let JournalEntry {
        seq: entry_seq,
        at_ms,
        done_ms,
        credential: entry_credential,
        scope,
        route,
        method,
        idempotency_key,
        external_ref,
        lookup,
        fingerprint,
        tenant,
        action,
        attempt_no,
        class,
        status,
        outcome,
        error_code,
        committed,
        duplicate,
        retry_after_violation,
        retry_after_ms,
        replayed,
        record_id,
        tokens_used,
        logical,
        logical_attempt,
        identified_by,
        scope_wait_violation,
        duplicate_tokens,
        undelivered,
        claim_mismatch: entry_claim_mismatch,
        sdk_retry_count,
        model,
        billed_micro_usd,
        limit,
        workload_item,
    } = entry;
    *entry_seq = seq;
    *at_ms = now;
    *done_ms = 0;
    match credential {
        Credential::Known {
            masked,
            scope: scope_id,
        } => {
            keep_shared(entry_credential, Some(masked));
            keep_shared(scope, Some(scope_id));
        }
        Credential::Unknown(key) => {
            *entry_credential = Some(Arc::from(mask_credential(key)));
            *scope = None;
        }
        Credential::None => {
            *entry_credential = None;
            *scope = None;
        }
    }
    // The route's template and method read once, for the entry and its fingerprint
    // (`Fingerprint::of`), where each read is a jump on the route.
    let (template, verb) = (req.route.template(), req.route.method());
    *route = Cow::Borrowed(template);
    *method = Cow::Borrowed(verb);
    idempotency_key.clone_from(&req.idempotency_key);
    external_ref.clone_from(&req.external_ref);
    *lookup = req.route.lookup();
    *fingerprint = Fingerprint::Parts {
        method: verb,
        template,
        body_hash: req.body_hash,
    };
    keep_shared(tenant, req.tenant.as_ref());
    *action = req.action;
    *attempt_no = req.attempt_no;
    keep_shared(class, req.class.as_ref());
    *status = None;
    *outcome = Cow::Borrowed("");
    *error_code = None;
    *committed = false;
    *duplicate = false;
    *retry_after_violation = who.early;
    *retry_after_ms = None;
    *replayed = false;
    *record_id = None;
    *tokens_used = 0;
    *logical = who.logical;
    *logical_attempt = who.ordinal;
    *identified_by = who.by;
    *scope_wait_violation = false;
    *duplicate_tokens = 0;
    *undelivered = false;
    *entry_claim_mismatch = claim_mismatch;
    *sdk_retry_count = req.sdk_retry_count;
    *model = None;
    *billed_micro_usd = 0;
    *limit = None;
    *workload_item = req.workload_item;
}

/// Where a 429's label is in `USUAL_OUTCOMES` (`usual_status(429)`, which a test holds).
const REFUSED_OUTCOME: usize = 8;

/// The kind of journal entry the refusal shortcut writes for a refusal by `refusal` on
/// `route` with a key whose scope and ordinal `base` packs ([`refusal_kind_base`]; see
/// `JournalBuffer::next_slot_kept`): every entry of one kind has the same credential,
/// scope, route, method, fingerprint (but its body hash), limit, status, outcome and error
/// code, and nothing committed, billed or looked up. `None` for a look-up, whose entry
/// names what it asked for, and for indexes too large to pack.
fn refusal_kind(base: Option<u64>, route: &RequestRoute, refusal: limits::Refusal) -> Option<u64> {
    if matches!(
        route,
        RequestRoute::GetRecord { .. } | RequestRoute::FindRecords { .. }
    ) {
        return None;
    }
    // A route's place among the fingerprint templates numbers it (below 16).
    let route = identity::template_slot(route) as u64;
    Some(base? | route << 48 | (refusal as u64) << 56)
}

/// The part of [`refusal_kind`] a key decides: its scope `scope` and ordinal `credential`
/// packed in the low 48 bits, `None` when either is too large to pack.
fn refusal_kind_base(scope: usize, credential: usize) -> Option<u64> {
    let (scope, credential) = (u64::try_from(scope).ok()?, u64::try_from(credential).ok()?);
    if scope >= 1 << 24 || credential >= 1 << 24 {
        return None;
    }
    Some(scope | credential << 24)
}

/// Writes the fields of attempt `req`'s refusal entry that differ between entries of one
/// kind (see [`refusal_kind`]) into `entry`, which holds an entry of its kind: what
/// [`open_entry`] and the shortcut's closing write, but for the fields the kind decides,
/// which are left as they are. `done_ms`, `retry_after_ms` and `scope_wait_violation` are
/// the caller's to write. Destructured without `..`, as `open_entry` is.
#[inline(always)]
fn reopen_refusal(
    entry: &mut JournalEntry,
    req: &Request,
    (seq, now): (u64, Millis),
    who: &identity::Attribution,
    claim_mismatch: bool,
) {
    let JournalEntry {
        seq: entry_seq,
        at_ms,
        done_ms: _,
        credential: _,
        scope: _,
        route: _,
        method: _,
        idempotency_key,
        external_ref,
        lookup: _,
        fingerprint,
        tenant,
        action,
        attempt_no,
        class,
        status: _,
        outcome: _,
        error_code: _,
        committed: _,
        duplicate: _,
        retry_after_violation,
        retry_after_ms: _,
        replayed: _,
        record_id: _,
        tokens_used: _,
        logical,
        logical_attempt,
        identified_by,
        scope_wait_violation: _,
        duplicate_tokens: _,
        undelivered: _,
        claim_mismatch: entry_claim_mismatch,
        sdk_retry_count,
        model: _,
        billed_micro_usd: _,
        limit: _,
        workload_item,
    } = entry;
    *entry_seq = seq;
    *at_ms = now;
    idempotency_key.clone_from(&req.idempotency_key);
    external_ref.clone_from(&req.external_ref);
    match fingerprint {
        Fingerprint::Parts { body_hash, .. } => *body_hash = req.body_hash,
        _ => unreachable!("an entry of a refusal's kind has its fingerprint's parts"),
    }
    keep_shared(tenant, req.tenant.as_ref());
    *action = req.action;
    *attempt_no = req.attempt_no;
    keep_shared(class, req.class.as_ref());
    *retry_after_violation = who.early;
    *logical = who.logical;
    *logical_attempt = who.ordinal;
    *identified_by = who.by;
    *entry_claim_mismatch = claim_mismatch;
    *sdk_retry_count = req.sdk_retry_count;
    *workload_item = req.workload_item;
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// An error answer with `body`, its type and code as an [`ErrorSignal`]. Inlined: built in
/// the caller's return slot, `signals` (some 260 bytes) is not copied again.
#[inline(always)]
fn error_answer(
    status: u16,
    signals: Signals,
    body: Value,
    kind: &'static str,
    code: Cow<'static, str>,
) -> Answer {
    Answer::Respond {
        status,
        signals,
        body,
        error: Some(ErrorSignal {
            kind: Cow::Borrowed(kind),
            code,
        }),
        usage: None,
        stream_chunks: None,
        completion_id: None,
        records: None,
    }
}

/// Whom a wait an answer tells binds: the whole scope (a 429 or 503 of its limits or
/// faults), or only the request told (a token count's: Anthropic limits counting apart,
/// so its waits hold no other request on the scope back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Binds {
    Scope,
    Request,
}

/// The answer to a token count (`POST /v1/messages/count_tokens`): the request's input
/// tokens, and the request id alone (no limit holds it, so no limit is told).
fn token_count(req: &Request, seq: u64) -> Answer {
    Answer::Respond {
        status: 200,
        signals: Signals::bare(seq),
        body: json!({ "input_tokens": req.prompt_tokens }),
        error: None,
        usage: None,
        stream_chunks: None,
        completion_id: None,
        records: None,
    }
}

/// What `decide` returns: built where it is returned, so the answer (some 400 bytes) is
/// written in place instead of moved from a tuple into a `Decision`.
fn decided(seq: u64, latency_ms: u64, answer: Answer) -> Decision {
    Decision {
        seq,
        latency_ms,
        answer,
    }
}

/// A 200 answer that gives records: `given` for an in-process driver, and the JSON `body`
/// built only when bodies are not lean, or when no id was given (an id the model does not
/// write, which a driver then reads from the body).
fn records_answer(
    lean: bool,
    signals: Signals,
    given: Option<RecordsGiven>,
    body: impl FnOnce() -> Value,
) -> Answer {
    let body = if lean && given.is_some() {
        Value::Null
    } else {
        body()
    };
    let mut answer = respond(200, signals, body);
    if let Answer::Respond { records, .. } = &mut answer {
        *records = given;
    }
    answer
}

fn respond(status: u16, signals: Signals, body: Value) -> Answer {
    Answer::Respond {
        status,
        signals,
        body,
        error: None,
        usage: None,
        stream_chunks: None,
        completion_id: None,
        records: None,
    }
}

/// Why an `Idempotency-Key` cannot be honoured (see `ProviderModel::key_refusal`).
#[derive(Debug, Clone, Copy)]
enum KeyRefusal {
    /// The first request with the key is still in flight.
    InUse,
    /// The key came back with another body.
    BodyMismatch,
}

/// What a 401 says of a key the provider does not know (`key_given`) or of none, in the
/// words of the API it came in on (`anthropic`: Anthropic's, else OpenAI's). Every route
/// says it the same way (the model catalog's too).
pub fn key_refusal_message(key_given: bool, anthropic: bool) -> &'static str {
    match (key_given, anthropic) {
        (false, false) => "No API key provided: send `Authorization: Bearer KEY`.",
        (false, true) => "x-api-key header is required",
        (true, false) => "Incorrect API key provided.",
        (true, true) => "invalid x-api-key",
    }
}

/// What a 404 `model_not_found` says of model `name`, which the provider does not list: a
/// completion naming it and a catalog look-up of it are told the same.
pub fn model_not_found_message(name: &str) -> String {
    format!("The model `{name}` does not exist or you do not have access to it.")
}

/// An OpenAI-shaped error body.
pub fn error_body(message: &str, kind: &str, code: &str) -> Value {
    error_body_at(message, kind, None, Some(code))
}

/// [`error_body`] naming the parameter at fault (`messages[0].role`), and with OpenAI's
/// `code`, which may be `null`.
pub fn error_body_at(message: &str, kind: &str, param: Option<&str>, code: Option<&str>) -> Value {
    json!({ "error": { "message": message, "type": kind, "param": param, "code": code } })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_models;
#[cfg(test)]
mod tests_phases;
#[cfg(test)]
mod tests_shortcut;

/// What the edge refused a request with, before the model saw it (see
/// [`ProviderModel::arrive_refused`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeRefusal {
    /// The HTTP status answered (400, 404).
    pub status: u16,
    /// The journal's error code (`invalid_request`, `unknown_route`).
    pub code: &'static str,
    /// The workload item the request's prompt named, when its body says (see
    /// `JournalEntry::workload_item`).
    pub workload_item: Option<u64>,
}

/// What the edge answered a request with, itself: a refusal ([`EdgeRefusal`]) or a catalog
/// read ([`ProviderModel::arrive_catalog`]).
#[derive(Debug, Clone, Copy)]
struct EdgeAnswer {
    /// The HTTP status answered.
    status: u16,
    /// The journal's error code; `None` for a success.
    code: Option<&'static str>,
    /// The workload item the request's prompt named, if any.
    workload_item: Option<u64>,
}
