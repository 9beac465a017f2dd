//! Which attempts are one logical request, decided at the edge from what arrives.
//!
//! The provider, not the client, says which attempts belong together, so retries added by a
//! library under the client, or by a client that sends no attribution at all, are counted
//! the same as the client's own. An attempt is attached to a logical request by the first
//! of these that names one already seen:
//!
//! 1. a record write's `external_ref` (the business object it creates), within its scope;
//! 2. the `Idempotency-Key`, within its scope; a key names its request outright, so a keyed
//!    attempt whose key is new starts a new logical request even if its body was seen;
//! 3. otherwise the request's fingerprint: credential, route and canonical body hash, while
//!    the last attempt with that fingerprint arrived less than the identity window ago.
//!
//! The limit of rule 3: two different requests with byte-identical bodies on one credential
//! are one logical request to the provider. The simulator's workload makes every body
//! distinct; a real client tells such requests apart with an `Idempotency-Key`.
//!
//! Record look-ups (`GET /v1/records...`) reconcile a write: they are attached to the write
//! they ask about (by key, external reference or record id) but are not attempts of it.
//!
//! Memory: a logical request is forgotten once no attempt has reached it for the identity
//! window; its aliases go with it. At most [`DEFAULT_MAX_LOGICALS`] are remembered: past
//! it, the least recently touched is forgotten first, however recent (at 20,000 new
//! requests a second, the 15-minute window would hold 18 million; the cap holds about
//! 120 MB: 64 bytes a request, its place in touch order included, and 9 bytes for each of
//! its aliases in the index, with the tables' slack). A retry of a request forgotten that
//! way counts as a new logical request.
//! Aliases are 64-bit hashes of a tag and the alias's parts (a collision among a million
//! live requests has a probability near 3e-8). They never leave the index, so the hash is
//! private: it reads 8 bytes a step (see [`AliasHash`]) where the observable hashes
//! (`body_hash`, the journal's) stay FNV-1a byte by byte.

use rustc_hash::FxHashMap;
use stampede_key::IdempotencyKey;

use serde::{Deserialize, Serialize};

use super::alias_index::{AliasIndex, Slot};
use super::logicals::Logicals;
use super::request::{FindBy, Request, RequestRoute};
use super::Millis;

/// Default identity window: 15 minutes of model time.
pub const DEFAULT_IDENTITY_WINDOW_MS: u64 = 15 * 60_000;

/// Logical requests remembered at most; past it the least recently touched is forgotten.
pub const DEFAULT_MAX_LOGICALS: usize = 1_000_000;

/// How an attempt was attached to its logical request (journaled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum IdentifiedBy {
    /// The first attempt of a new logical request.
    #[default]
    New,
    /// A record write with an `external_ref` already seen.
    ExternalRef,
    /// An `Idempotency-Key` already seen.
    IdempotencyKey,
    /// The same fingerprint within the identity window.
    Fingerprint,
    /// A record look-up, attached to the write it asks about (`logical` 0 when unknown).
    Lookup,
}

/// One logical request as the provider tracks it: 64 bytes, a million of them remembered
/// at the cap (a unit test holds the size).
#[derive(Debug, Clone)]
struct Logical {
    /// Attempts of it so far (look-ups excluded).
    attempts: u32,
    /// Side effects it committed so far (completions billed, records created; idempotent
    /// replays excluded).
    commits: u32,
    /// Until when (model ms) a Retry-After given to one of its attempts binds it, and for
    /// how long before that (ms: from when that answer left). A wait of over 49 days binds
    /// from 49 days before its end.
    told_until: Millis,
    told_for: u32,
    /// Model ms of the last attempt (or look-up) that reached it.
    last_at: Millis,
    /// Its first two alias hashes, removed with it. Nearly every request has one or two (its
    /// key, its fingerprint), kept inline so a million remembered requests make no million
    /// small allocations; a write's external reference and record id, or a body changed
    /// under one key, go to `Identity::spilled`.
    aliases: [u64; 2],
    /// Entries of `aliases` in use, and whether more are spilled: an enum, so
    /// `Option<Logical>` needs no room of its own beside it.
    used: Used,
    /// Its neighbours in touch order (see `Identity::oldest`): the request touched last
    /// before it and the one first touched after it, 0 for none.
    older: u64,
    newer: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Used {
    #[default]
    None,
    One,
    Two,
    /// Two inline and more in `Identity::spilled`.
    Spilled,
}

impl Logical {
    /// A request first touched at `now`, last in touch order after `older` (0: none).
    fn new(now: Millis, older: u64) -> Self {
        Logical {
            attempts: 0,
            commits: 0,
            told_until: 0,
            told_for: 0,
            last_at: now,
            aliases: [0; 2],
            used: Used::None,
            older,
            newer: 0,
        }
    }

    fn inline_used(&self) -> usize {
        match self.used {
            Used::None => 0,
            Used::One => 1,
            Used::Two | Used::Spilled => 2,
        }
    }

    /// Inline alias number `position`, if in use.
    fn inline(&self, position: u8) -> Option<u64> {
        let position = usize::from(position);
        (position < self.inline_used()).then(|| self.aliases[position])
    }

    /// Whether it holds alias `a` inline.
    fn holds_inline(&self, a: u64) -> bool {
        self.aliases[..self.inline_used()].contains(&a)
    }

    /// Its inline aliases with where they are kept.
    fn inline_aliases(&self) -> impl Iterator<Item = (u64, Slot)> + '_ {
        self.aliases[..self.inline_used()]
            .iter()
            .zip([Slot::Inline(0), Slot::Inline(1)])
            .map(|(&a, slot)| (a, slot))
    }

    /// From when (model ms) a Retry-After binds it.
    fn told_from(&self) -> Millis {
        self.told_until.saturating_sub(Millis::from(self.told_for))
    }

    /// Touched at `now`, with `newest` the newest request in touch order: its last touch
    /// set and, when it moves last, its links set to that place. Says what the order's
    /// other links need (`Identity::touched`).
    fn touch(&mut self, now: Millis, newest: u64) -> Touched {
        if self.last_at == now {
            return Touched::Stays;
        }
        self.last_at = now;
        match (self.older, self.newer) {
            (0, 0) => Touched::Alone,
            (_, 0) => Touched::Stays,
            (older, newer) => {
                (self.older, self.newer) = (newest, 0);
                Touched::Moves { older, newer }
            }
        }
    }
}

/// What touching a request asks of the touch order (see `Logical::touch`).
#[derive(Debug, Clone, Copy)]
enum Touched {
    /// It keeps its place: touched within the ms of its last touch, or the newest already.
    Stays,
    /// It is the only request remembered: its expiry is the oldest's.
    Alone,
    /// It moves last, out from between `older` and `newer` (0: none).
    Moves { older: u64, newer: u64 },
}

/// Where one attempt belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attribution {
    /// The logical request (1-based, in order of first arrival); 0 for a look-up whose
    /// write the provider does not know.
    pub logical: u64,
    /// This attempt's ordinal within it (1 = first); 0 for look-ups.
    pub ordinal: u32,
    /// How it was attached.
    pub by: IdentifiedBy,
    /// Whether a Retry-After given to an earlier attempt of the same logical request had
    /// not yet passed when this one arrived.
    pub early: bool,
    /// Until when (model ms) a Retry-After given to an earlier attempt binds its logical
    /// request (0: none, or a look-up): a wait told this attempt that ends no later
    /// changes nothing ([`Identity::told_wait`]), which a caller can tell without it.
    pub told_until: Millis,
}

/// The identity index.
#[derive(Debug, Clone)]
pub struct Identity {
    window_ms: Millis,
    max_logicals: usize,
    /// Whether the tables were given their steady-state room (see `presize`).
    presized: bool,
    /// Logical requests the caller expects (see [`Identity::expect`]), until room for them
    /// is made at the first one; 0 when none are expected or the room is made.
    expected: usize,
    next: u64,
    logicals: Logicals<Logical>,
    aliases: AliasIndex,
    /// Aliases past a request's inline two, by request id (rare).
    spilled: FxHashMap<u64, Vec<u64>>,
    /// The ends of the remembered requests in touch order, linked through their records
    /// (`Logical::older`, `newer`; 0 when none is remembered): a request moves last when an
    /// attempt touches it at a later ms than its last, and stays where it is when touched
    /// again within the same ms. Arrivals come in time order, so the order is by last
    /// touch, then by the first touch within that ms: the order the expiry log this
    /// replaced forgot in (it queued `(expires at, id)` at every touch and skipped an
    /// entry whose expiry was not its request's latest, so a request's first entry of its
    /// last ms counted), which a property test holds it to. Forgetting takes the oldest.
    oldest: u64,
    newest: u64,
    /// When the oldest expires: its last touch plus the window (model ms).
    oldest_expires: Millis,
}

/// Most ids the table of logical requests spans in place (see `Logicals`): a quarter more
/// than the cap, so forgetting out of order rarely moves a request aside.
fn max_span(max_logicals: usize) -> usize {
    max_logicals + max_logicals / 4 + 1_024
}

/// What an alias names, hashed first so aliases of different kinds never share an input.
#[derive(Debug, Clone, Copy)]
enum AliasKind {
    /// A record write's `external_ref`.
    ExternalRef = 1,
    /// An `Idempotency-Key`.
    Key = 2,
    /// A created record's id.
    Record = 3,
    /// A request's fingerprint: credential, route template and body hash.
    Fingerprint = 4,
}

/// The private hash of aliases: each part goes in as its length, then 8 bytes a step, and
/// each step (xor, multiply by an odd constant, fold the high half down) is a bijection of
/// the state, so inputs that differ in one word never collide; a Murmur3 finalizer spreads
/// the result. FNV-1a byte by byte cost about 4 instructions a byte; this costs about 5 a
/// word. Its values stay in memory (the alias index is never iterated into an output), so
/// it is free to differ from the FNV-1a the journal and the HTTP edge compute.
#[derive(Debug, Clone, Copy)]
struct AliasHash(u64);

impl AliasHash {
    const STEP: u64 = 0x9e37_79b9_7f4a_7c15;

    fn new(kind: AliasKind) -> Self {
        AliasHash(0).word(kind as u64)
    }

    fn word(self, w: u64) -> Self {
        let h = (self.0 ^ w).wrapping_mul(Self::STEP);
        AliasHash(h ^ (h >> 32))
    }

    /// Feeds `bytes` and their length (so `("ab", "c")` and `("a", "bc")` differ): whole
    /// words, then the last up to 8 bytes read as one word (overlapping the previous word
    /// when the length is not a multiple of 8; the length keeps that unambiguous).
    fn text(self, bytes: &[u8]) -> Self {
        let mut h = self.word(bytes.len() as u64);
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            h = h.word(u64::from_le_bytes(w.try_into().unwrap_or_default()));
        }
        let rest = words.remainder().len();
        if rest == 0 {
            return h;
        }
        let n = bytes.len();
        let last = if n >= 8 {
            u64::from_le_bytes(bytes[n - 8..].try_into().unwrap_or_default())
        } else if n >= 4 {
            let head = u32::from_le_bytes(bytes[..4].try_into().unwrap_or_default());
            let tail = u32::from_le_bytes(bytes[n - 4..].try_into().unwrap_or_default());
            u64::from(head) << 32 | u64::from(tail)
        } else {
            u64::from(bytes[0]) << 16 | u64::from(bytes[n / 2]) << 8 | u64::from(bytes[n - 1])
        };
        h.word(last)
    }

    fn finish(self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// The alias of `value` of `kind` within `scope`.
fn alias(kind: AliasKind, scope: &str, value: &str) -> u64 {
    AliasHash::new(kind)
        .text(scope.as_bytes())
        .text(value.as_bytes())
        .finish()
}

/// The alias of idempotency key `key` within `scope`: a derived key goes in as its two
/// words, behind a length no text has, with no text rendered to be hashed.
fn key_alias(scope: &str, key: &IdempotencyKey) -> u64 {
    key_alias_from(AliasHash::new(AliasKind::Key).text(scope.as_bytes()), key)
}

/// [`key_alias`] continued from `h`, its kind and scope fed.
fn key_alias_from(h: AliasHash, key: &IdempotencyKey) -> u64 {
    match key.derived_bytes() {
        Some(bytes) => {
            let (high, low) = bytes.split_at(8);
            let word = |w: &[u8]| u64::from_le_bytes(w.try_into().unwrap_or_default());
            h.word(u64::MAX).word(word(high)).word(word(low)).finish()
        }
        None => h.text(key.text().as_bytes()).finish(),
    }
}

/// The alias of a request's fingerprint on its credential: the body hash goes in as the
/// number it is, with no hex text rendered to be hashed. (The model continues it from
/// [`Prefixes`]; this is the whole, for tests.)
#[cfg(test)]
fn fingerprint_alias(req: &Request) -> u64 {
    let credential = req.credential.as_deref().unwrap_or("");
    fingerprint_prefix(credential, req.route.template())
        .word(req.body_hash)
        .finish()
}

/// A fingerprint's alias with its credential and route template fed (the body hash to come).
fn fingerprint_prefix(credential: &str, template: &str) -> AliasHash {
    AliasHash::new(AliasKind::Fingerprint)
        .text(credential.as_bytes())
        .text(template.as_bytes())
}

/// The route templates a fingerprint can name, in [`template_slot`] order.
const TEMPLATES: [&str; 10] = [
    "/v1/chat/completions",
    "/v1/messages",
    "/v1/responses",
    "/v1/messages/count_tokens",
    "/v1/embeddings",
    "/v1/records",
    "/v1/records/{id}",
    "/v1/records?external_ref",
    "/v1/records?idempotency_key",
    "/v1/items/{id}",
];

/// Where `route`'s template ([`RequestRoute::template`]) is in [`TEMPLATES`].
pub(super) fn template_slot(route: &RequestRoute) -> usize {
    match route {
        RequestRoute::ChatCompletions => 0,
        RequestRoute::Messages => 1,
        RequestRoute::Responses => 2,
        RequestRoute::CountTokens => 3,
        RequestRoute::Embeddings => 4,
        RequestRoute::CreateRecord => 5,
        RequestRoute::GetRecord { .. } => 6,
        RequestRoute::FindRecords {
            by: FindBy::ExternalRef(_),
        } => 7,
        RequestRoute::FindRecords {
            by: FindBy::IdempotencyKey(_),
        } => 8,
        RequestRoute::GetItem { .. } => 9,
    }
}

/// The part of a scope's aliases that is the same for every attempt on it, hashed once:
/// a key's and an external reference's alias start with their kind and the scope's id.
/// The model keeps one per scope ([`Identity::attribute_known`]); a hash continued from it
/// is the hash [`alias`] and [`key_alias`] compute from the whole.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScopeAliases {
    key: AliasHash,
    external_ref: AliasHash,
}

impl ScopeAliases {
    /// The aliases' start for scope `scope` (its id).
    pub(crate) fn new(scope: &str) -> Self {
        ScopeAliases {
            key: AliasHash::new(AliasKind::Key).text(scope.as_bytes()),
            external_ref: AliasHash::new(AliasKind::ExternalRef).text(scope.as_bytes()),
        }
    }
}

/// The part of a credential's fingerprints that is the same for every attempt with it on
/// a route, hashed once per route: the kind, the credential and the route's template (the
/// body hash comes last). The model keeps one per known credential; a hash continued from
/// it is the hash [`fingerprint_alias`] computes from the whole.
#[derive(Debug, Clone)]
pub(crate) struct CredentialAliases {
    /// By [`template_slot`].
    fingerprint: [AliasHash; TEMPLATES.len()],
}

impl CredentialAliases {
    /// The fingerprints' start for credential `credential` (the key's text).
    pub(crate) fn new(credential: &str) -> Self {
        CredentialAliases {
            fingerprint: TEMPLATES.map(|template| fingerprint_prefix(credential, template)),
        }
    }
}

/// An attempt's aliases' starts, from the model's tables or hashed from their texts.
#[derive(Clone, Copy)]
struct Prefixes {
    key: AliasHash,
    external_ref: AliasHash,
    fingerprint: AliasHash,
}

impl Prefixes {
    /// Hashed from the texts: the scope's id (`""` for an unknown credential) and the
    /// request's credential and route.
    fn of(req: &Request, scope: &str) -> Self {
        let scoped = ScopeAliases::new(scope);
        Prefixes {
            key: scoped.key,
            external_ref: scoped.external_ref,
            fingerprint: fingerprint_prefix(
                req.credential.as_deref().unwrap_or(""),
                req.route.template(),
            ),
        }
    }

    /// The alias of idempotency key `key` (see [`key_alias`]).
    fn key(&self, key: &IdempotencyKey) -> u64 {
        key_alias_from(self.key, key)
    }
}

impl Identity {
    /// An index that remembers a logical request for `window_ms` after its last attempt.
    pub fn new(window_ms: Millis) -> Self {
        Self::with_cap(window_ms, DEFAULT_MAX_LOGICALS)
    }

    /// An index that remembers a logical request for `window_ms` after its last attempt,
    /// and at most `max_logicals` (at least 1) of them.
    pub fn with_cap(window_ms: Millis, max_logicals: usize) -> Self {
        Identity {
            window_ms: window_ms.max(1),
            max_logicals: max_logicals.max(1),
            presized: false,
            expected: 0,
            next: 0,
            logicals: Logicals::new(max_span(max_logicals.max(1))),
            aliases: AliasIndex::default(),
            spilled: FxHashMap::default(),
            oldest: 0,
            newest: 0,
            oldest_expires: 0,
        }
    }

    /// Logical requests remembered now.
    pub fn remembered(&self) -> usize {
        self.logicals.len()
    }

    /// The caller expects about `requests` logical requests (a simulated run knows its
    /// workload's count): room for them, up to the cap, is made when the first is
    /// remembered. Only a capacity: what is remembered, and so every answer, is the same
    /// without it.
    ///
    /// Grown from empty, the alias tables of a million-request run double about sixteen
    /// times each, and every step reads each entry's alias back from its request's record
    /// (a cache miss apiece): about 2% of the million-request run's time. The room is made
    /// at the first request rather than here because only then is it known how many aliases
    /// a request binds (a fingerprint, and a key when the client sends one), so a client
    /// without keys does not get twice the table it needs.
    pub fn expect(&mut self, requests: usize) {
        self.expected = requests.min(self.max_logicals);
    }

    /// Makes the room [`Identity::expect`] asked for, now that request `first` is
    /// remembered with the aliases a request of this run binds.
    #[cold]
    fn make_expected_room(&mut self, first: u64) {
        let expected = std::mem::take(&mut self.expected);
        let aliases = self
            .logicals
            .get(first)
            .map_or(1, |l| l.inline_aliases().count().max(1));
        self.logicals
            .reserve(expected.saturating_sub(self.logicals.len()));
        self.aliases.reserve(
            (expected * aliases).saturating_sub(self.aliases.len()),
            inline_alias(&self.logicals),
        );
    }

    /// At the cap, requests are forgotten and new ones remembered continuously. A hash table
    /// under such churn fills with tombstones and, holding more than half of what it can, then
    /// doubles (a step of ~130 MB at a million requests, seen 20 minutes into a soak).
    /// Reserving that room once, when the cap is first reached, makes the step happen then;
    /// afterwards the tables rehash in place and memory stays flat.
    fn presize(&mut self) {
        self.presized = true;
        self.logicals
            .reserve(max_span(self.max_logicals).saturating_sub(self.logicals.len()));
        self.aliases
            .reserve(self.aliases.len(), inline_alias(&self.logicals));
    }

    fn forget(&mut self, id: u64) {
        if let Some(l) = self.logicals.remove(id) {
            self.unlink(l.older, l.newer);
            for (a, slot) in l.inline_aliases() {
                self.aliases.remove(a, id, slot);
            }
            if l.used == Used::Spilled {
                for a in self.spilled.remove(&id).unwrap_or_default() {
                    self.aliases.remove(a, id, Slot::Spilled);
                }
            }
        }
    }

    /// The request owning alias `a`, if one is remembered.
    fn owner(&self, a: u64) -> Option<u64> {
        self.aliases.get(a, inline_alias(&self.logicals))
    }

    /// Forgets requests idle for the window, then, while `room` more would not fit under the
    /// cap, the least recently touched (the oldest in touch order first).
    ///
    /// Inlined: on nearly every attempt nothing has expired and the cap is not near, which
    /// the oldest's expiry and the count tell without a call.
    #[inline]
    fn forget_idle(&mut self, now: Millis, room: usize) {
        let quiet = self.oldest == 0
            || (self.oldest_expires > now && self.logicals.len() + room <= self.max_logicals);
        if !quiet {
            self.forget_idle_now(now, room);
        }
    }

    /// [`Identity::forget_idle`] when something may be forgotten.
    #[inline(never)]
    fn forget_idle_now(&mut self, now: Millis, room: usize) {
        while self.oldest != 0 {
            let full = self.logicals.len() + room > self.max_logicals;
            if full && !self.presized {
                self.presize();
            }
            if self.oldest_expires > now && !full {
                break;
            }
            self.forget(self.oldest);
        }
    }

    /// Takes a request out of touch order, given its neighbours there (0: none); its own
    /// links are left as they are. Always inlined: nearly every attempt of a storm moves
    /// its request, and `#[inline]` alone left it a call.
    #[inline(always)]
    fn unlink(&mut self, older: u64, newer: u64) {
        if older == 0 {
            self.oldest = newer;
        } else if let Some(o) = self.logicals.get_mut(older) {
            o.newer = newer;
        }
        if newer == 0 {
            self.newest = older;
        } else if let Some(n) = self.logicals.get_mut(newer) {
            n.older = older;
            if older == 0 {
                self.oldest_expires = n.last_at + self.window_ms;
            }
        }
    }

    /// Puts request `id`, touched at `now` and out of touch order, last in it; its record
    /// already names the newest as its older neighbour (`Logical::new` does).
    fn link_newest(&mut self, id: u64, now: Millis) {
        if self.newest == 0 {
            self.oldest = id;
            self.oldest_expires = now + self.window_ms;
        } else if let Some(last) = self.logicals.get_mut(self.newest) {
            last.newer = id;
        }
        self.newest = id;
    }

    /// Request `id` was touched at `now` (an attempt or a look-up reached it).
    fn touch(&mut self, id: u64, now: Millis) {
        let newest = self.newest;
        let Some(l) = self.logicals.get_mut(id) else {
            return;
        };
        let links = l.touch(now, newest);
        self.touched(id, now, links);
    }

    /// Moves request `id`, touched at `now`, in touch order as its record's
    /// `Logical::touch` said (`links`).
    // Always inlined: nearly every call finds nothing to move, or one request to move last.
    #[inline(always)]
    fn touched(&mut self, id: u64, now: Millis, links: Touched) {
        match links {
            Touched::Stays => {}
            Touched::Alone => self.oldest_expires = now + self.window_ms,
            Touched::Moves { older, newer } => {
                self.unlink(older, newer);
                self.link_newest(id, now);
            }
        }
    }

    /// Makes `a` an alias of request `id` (remembered), unless it already names one. An
    /// alias the request holds inline names it (see `AliasIndex`'s invariant): no look-up
    /// of the index is needed to tell, as for a keyed request's fingerprint, bound at its
    /// first attempt and met again at every retry.
    fn bind(&mut self, id: u64, a: u64) {
        let held = self.logicals.get(id).is_some_and(|l| l.holds_inline(a));
        if !held && self.owner(a).is_none() {
            self.bind_unowned(id, a);
        }
    }

    /// [`Identity::bind`] of alias `a`, whose owner was looked up (`owner`) unless `None`,
    /// and which is `distinct` from every alias bound since. Between the look-up and here
    /// aliases were only added, or forgotten when no owner was found: one that named a
    /// request still does (`bind` would leave it), and one that named none, distinct from
    /// those added, still names none.
    // Always inlined: a match on what was looked up, at three places of one attribution.
    #[inline(always)]
    fn bind_looked_up(&mut self, id: u64, a: u64, owner: Option<Option<u64>>, distinct: bool) {
        match owner {
            Some(Some(_)) => {}
            Some(None) if distinct => self.bind_unowned(id, a),
            _ => self.bind(id, a),
        }
    }

    /// Makes `a`, which names no request, an alias of request `id` (remembered).
    fn bind_unowned(&mut self, id: u64, a: u64) {
        let Some(l) = self.logicals.get_mut(id) else {
            return;
        };
        let slot = match l.used {
            Used::None => {
                (l.aliases[0], l.used) = (a, Used::One);
                Slot::Inline(0)
            }
            Used::One => {
                (l.aliases[1], l.used) = (a, Used::Two);
                Slot::Inline(1)
            }
            Used::Two | Used::Spilled => {
                l.used = Used::Spilled;
                self.spilled.entry(id).or_default().push(a);
                Slot::Spilled
            }
        };
        self.aliases
            .insert(a, id, slot, inline_alias(&self.logicals));
    }

    /// Attaches an attempt arriving at `now` on `scope` (`""` when its credential is
    /// unknown) to its logical request.
    // Never inlined: an attempt with an unknown key is rare, and `attribute_with` is always
    // inlined into its callers.
    #[inline(never)]
    pub fn attribute(&mut self, req: &Request, scope: &str, now: Millis) -> Attribution {
        self.attribute_with(req, scope, Prefixes::of(req, scope), now)
    }

    /// [`Identity::attribute`] of an attempt with a known credential, on its scope `scope`,
    /// whose aliases' starts the model keeps: `scoped`, hashed from `scope`, and
    /// `credential`, from the request's credential. The same attribution, with the
    /// scope's id and the credential hashed once rather than at every attempt.
    // Always inlined, with `attribute_with`: into the model's `arrive`, on every attempt,
    // where a call passed the request, the aliases' starts and the attribution through
    // memory and saved and restored registers around it.
    #[inline(always)]
    pub(crate) fn attribute_known(
        &mut self,
        req: &Request,
        scope: &str,
        (scoped, credential): (&ScopeAliases, &CredentialAliases),
        now: Millis,
    ) -> Attribution {
        let prefixes = Prefixes {
            key: scoped.key,
            external_ref: scoped.external_ref,
            fingerprint: credential.fingerprint[template_slot(&req.route)],
        };
        self.attribute_with(req, scope, prefixes, now)
    }

    /// [`Identity::attribute`] with the aliases' starts `prefixes`.
    #[inline(always)]
    fn attribute_with(
        &mut self,
        req: &Request,
        scope: &str,
        prefixes: Prefixes,
        now: Millis,
    ) -> Attribution {
        self.forget_idle(now, 0);
        if let Some(target) = lookup_alias(&req.route, scope) {
            let logical = self.owner(target).unwrap_or(0);
            if logical != 0 {
                self.touch(logical, now);
            }
            return Attribution {
                logical,
                ordinal: 0,
                by: IdentifiedBy::Lookup,
                early: false,
                told_until: 0,
            };
        }
        let is_write = matches!(req.route, RequestRoute::CreateRecord);
        let by_ref = req
            .external_ref
            .as_deref()
            .filter(|_| is_write)
            .map(|r| prefixes.external_ref.text(r.as_bytes()).finish());
        let by_key = req.idempotency_key.as_ref().map(|k| prefixes.key(k));
        let by_fp = prefixes.fingerprint.word(req.body_hash).finish();
        // The owner of each alias looked up (`None`: not looked up), so that binding them
        // below looks none of them up again.
        let (mut ref_owner, mut key_owner, mut fp_owner) = (None, None, None);
        let found = 'found: {
            if let Some(a) = by_ref {
                let owner = self.owner(a);
                ref_owner = Some(owner);
                if let Some(l) = owner {
                    break 'found Some((l, IdentifiedBy::ExternalRef));
                }
            }
            match by_key {
                Some(a) => {
                    let owner = self.owner(a);
                    key_owner = Some(owner);
                    owner.map(|l| (l, IdentifiedBy::IdempotencyKey))
                }
                None => {
                    let owner = self.owner(by_fp);
                    fp_owner = Some(owner);
                    owner.map(|l| (l, IdentifiedBy::Fingerprint))
                }
            }
        };
        let (id, by) = match found {
            Some(found) => found,
            None => {
                // Room for one more under the cap.
                self.forget_idle(now, 1);
                self.next += 1;
                let id = self.next;
                self.logicals.insert(id, Logical::new(now, self.newest));
                self.link_newest(id, now);
                (id, IdentifiedBy::New)
            }
        };
        if let Some(a) = by_ref {
            self.bind_looked_up(id, a, ref_owner, true);
        }
        if let Some(a) = by_key {
            self.bind_looked_up(id, a, key_owner, by_ref != Some(a));
        }
        let fp_new = by_ref != Some(by_fp) && by_key != Some(by_fp);
        self.bind_looked_up(id, by_fp, fp_owner, fp_new);
        if self.expected > 0 && by == IdentifiedBy::New {
            self.make_expected_room(id);
        }
        // `touch`, with the attempt counted in the same visit to the request's record.
        let newest = self.newest;
        match self.logicals.get_mut(id) {
            Some(l) => {
                let links = l.touch(now, newest);
                l.attempts = l.attempts.saturating_add(1);
                let attribution = Attribution {
                    logical: id,
                    ordinal: l.attempts,
                    by,
                    early: now >= l.told_from() && now < l.told_until,
                    told_until: l.told_until,
                };
                self.touched(id, now, links);
                attribution
            }
            // Just inserted or found in the index: present.
            None => Attribution {
                logical: id,
                ordinal: 1,
                by,
                early: false,
                told_until: 0,
            },
        }
    }

    /// The attempt attributed to `logical` committed a side effect (not an idempotent
    /// replay). Returns whether it is a second (or later) one: a duplicate.
    pub fn committed(&mut self, logical: u64) -> bool {
        match self.logicals.get_mut(logical) {
            Some(l) => {
                l.commits = l.commits.saturating_add(1);
                l.commits > 1
            }
            None => false,
        }
    }

    /// A Retry-After given to an attempt of `logical`, in an answer that leaves at `leaves`,
    /// binds it until `until` (model ms).
    pub fn told_wait(&mut self, logical: u64, leaves: Millis, until: Millis) {
        if let Some(l) = self.logicals.get_mut(logical) {
            if until > l.told_until {
                l.told_until = until;
                l.told_for = u32::try_from(until.saturating_sub(leaves)).unwrap_or(u32::MAX);
            }
        }
    }

    /// Record `record_id` was created by `logical`: look-ups by id find it.
    pub fn record_created(&mut self, logical: u64, scope: &str, record_id: &str) {
        if logical != 0 {
            self.bind(logical, alias(AliasKind::Record, scope, record_id));
        }
    }

    /// The remembered requests in touch order, oldest first, its links and the oldest's
    /// expiry checked on the way.
    #[cfg(test)]
    fn touch_order(&self) -> Vec<u64> {
        let (mut order, mut older, mut at) = (Vec::new(), 0, self.oldest);
        while at != 0 {
            let l = self
                .logicals
                .get(at)
                .expect("a request in touch order is remembered");
            assert_eq!(
                l.older, older,
                "request {at} links back to the one before it"
            );
            if older == 0 {
                assert_eq!(self.oldest_expires, l.last_at + self.window_ms);
            }
            order.push(at);
            (older, at) = (at, l.newer);
        }
        assert_eq!(self.newest, older, "the order ends at the newest");
        assert_eq!(
            order.len(),
            self.logicals.len(),
            "every request is in it once"
        );
        order
    }
}

/// Request `id`'s inline alias number `position`, if remembered: how the alias index reads
/// an alias back from the requests' records.
fn inline_alias(logicals: &Logicals<Logical>) -> impl Fn(u64, u8) -> Option<u64> + '_ {
    |id, position| logicals.get(id)?.inline(position)
}

/// The alias a record look-up asks about, or `None` for other routes.
fn lookup_alias(route: &RequestRoute, scope: &str) -> Option<u64> {
    match route {
        RequestRoute::GetRecord { id } => Some(alias(AliasKind::Record, scope, id)),
        RequestRoute::FindRecords {
            by: FindBy::ExternalRef(r),
        } => Some(alias(AliasKind::ExternalRef, scope, r)),
        RequestRoute::FindRecords {
            by: FindBy::IdempotencyKey(k),
        } => Some(key_alias(scope, k)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Aliases differ whenever their kind, scope, value (any length, split anywhere),
    /// credential, route or body hash does.
    #[test]
    fn aliases_tell_their_parts_apart() {
        let mut seen = std::collections::HashSet::new();
        let texts: Vec<String> = (0..=20).map(|n| "ab".repeat(n)[..n].to_string()).collect();
        for kind in [AliasKind::ExternalRef, AliasKind::Key, AliasKind::Record] {
            for scope in &texts {
                for value in &texts {
                    assert!(
                        seen.insert(alias(kind, scope, value)),
                        "{scope:?} {value:?}"
                    );
                }
            }
        }
        for credential in [None, Some("sk-a"), Some("sk-b"), Some("sk-a\0")] {
            for route in [RequestRoute::ChatCompletions, RequestRoute::CreateRecord] {
                for hash in [0, 1, 0x100, 0xdead_beef, u64::MAX] {
                    let mut req = chat(hash);
                    req.route = route.clone();
                    req.credential = credential.map(Into::into);
                    assert!(seen.insert(fingerprint_alias(&req)), "{req:?}");
                }
            }
        }
        // Values of 1 to 7 bytes and past a word, one byte changed anywhere.
        for n in 1..=17 {
            let base = vec![b'x'; n];
            for at in 0..n {
                let mut other = base.clone();
                other[at] = b'y';
                let (a, b) = (
                    std::str::from_utf8(&base).unwrap_or_default(),
                    std::str::from_utf8(&other).unwrap_or_default(),
                );
                assert_ne!(alias(AliasKind::Key, "s", a), alias(AliasKind::Key, "s", b));
            }
        }
    }

    /// The aliases' starts the model keeps give the aliases hashed from the texts: every
    /// route's template is in its slot, and a known credential's attempt on its scope is
    /// attributed as it was when both were hashed at every attempt.
    #[test]
    fn kept_alias_starts_are_the_hashes_of_the_texts() {
        let key: IdempotencyKey = "k-1".into();
        let routes = [
            RequestRoute::ChatCompletions,
            RequestRoute::Messages,
            RequestRoute::Responses,
            RequestRoute::CountTokens,
            RequestRoute::Embeddings,
            RequestRoute::CreateRecord,
            RequestRoute::GetRecord {
                id: "rec_000001".into(),
            },
            RequestRoute::FindRecords {
                by: FindBy::ExternalRef("r".into()),
            },
            RequestRoute::FindRecords {
                by: FindBy::IdempotencyKey(key.clone()),
            },
            RequestRoute::GetItem { id: "i".into() },
        ];
        let mut slots = std::collections::HashSet::new();
        for route in &routes {
            assert_eq!(TEMPLATES[template_slot(route)], route.template());
            slots.insert(template_slot(route));
        }
        assert_eq!(slots.len(), TEMPLATES.len(), "one route per slot");
        for (scope, credential) in [("s", "sk-a"), ("account:support", "sk-support-batch")] {
            let (scoped, kept) = (ScopeAliases::new(scope), CredentialAliases::new(credential));
            for route in &routes {
                let req = Request {
                    route: route.clone(),
                    credential: Some(credential.into()),
                    body_hash: 0xfeed,
                    ..Request::default()
                };
                let whole = Prefixes::of(&req, scope);
                assert_eq!(whole.key.0, scoped.key.0);
                assert_eq!(whole.external_ref.0, scoped.external_ref.0);
                assert_eq!(
                    whole.fingerprint.0,
                    kept.fingerprint[template_slot(route)].0
                );
                assert_eq!(
                    whole.fingerprint.word(req.body_hash).finish(),
                    fingerprint_alias(&req)
                );
                assert_eq!(whole.key(&key), key_alias(scope, &key));
            }
            // Attributed both ways, attempt by attempt, two indexes agree.
            let (mut texts, mut known) = (Identity::new(1_000), Identity::new(1_000));
            for (t, body) in [1u64, 2, 1, 3, 1, 2].into_iter().enumerate() {
                let mut req = chat(body);
                req.credential = Some(credential.into());
                if body == 3 {
                    req.idempotency_key = Some(key.clone());
                }
                let now = 100 * t as u64;
                assert_eq!(
                    texts.attribute(&req, scope, now),
                    known.attribute_known(&req, scope, (&scoped, &kept), now)
                );
            }
        }
    }

    fn chat(body: u64) -> Request {
        Request {
            route: RequestRoute::ChatCompletions,
            credential: Some("sk-a".into()),
            body_hash: body,
            ..Request::default()
        }
    }

    #[test]
    fn the_same_body_within_the_window_is_one_logical_request() {
        let mut id = Identity::new(1_000);
        let a = id.attribute(&chat(7), "s", 0);
        let b = id.attribute(&chat(7), "s", 900);
        let c = id.attribute(&chat(8), "s", 950);
        assert_eq!((a.logical, a.ordinal, a.by), (1, 1, IdentifiedBy::New));
        assert_eq!(
            (b.logical, b.ordinal, b.by),
            (1, 2, IdentifiedBy::Fingerprint)
        );
        assert_eq!((c.logical, c.ordinal), (2, 1));
        // The window slides with each attempt: 1_800 is within 1_000 of 900.
        assert_eq!(id.attribute(&chat(7), "s", 1_800).ordinal, 3);
        // Idle for a whole window: forgotten, a new logical request.
        let late = id.attribute(&chat(7), "s", 2_800);
        assert_eq!((late.logical, late.ordinal), (3, 1));
    }

    #[test]
    fn a_key_decides_when_sent_and_a_new_key_is_a_new_request() {
        let mut id = Identity::new(60_000);
        let mut keyed = chat(7);
        keyed.idempotency_key = Some("k1".into());
        assert_eq!(id.attribute(&keyed, "s", 0).logical, 1);
        assert_eq!(id.attribute(&keyed, "s", 10).ordinal, 2);
        keyed.idempotency_key = Some("k2".into());
        let other = id.attribute(&keyed, "s", 20);
        assert_eq!(
            (other.logical, other.ordinal),
            (2, 1),
            "a new key names a new request"
        );
        // The same key on another scope is another request (keys are scoped).
        keyed.idempotency_key = Some("k1".into());
        assert_eq!(id.attribute(&keyed, "t", 30).logical, 3);
    }

    #[test]
    fn record_writes_group_by_external_ref_and_look_ups_attach_without_counting() {
        let mut id = Identity::new(60_000);
        let write = |key: &str| Request {
            route: RequestRoute::CreateRecord,
            credential: Some("sk-a".into()),
            idempotency_key: Some(key.into()),
            external_ref: Some("order-1".into()),
            body_hash: 3,
            ..Request::default()
        };
        let first = id.attribute(&write("k1"), "s", 0);
        assert!(!id.committed(first.logical));
        id.record_created(first.logical, "s", "rec_000001");
        // A buggy client re-sends with a fresh key: the external reference still tells.
        let again = id.attribute(&write("k2"), "s", 10);
        assert_eq!(
            (again.logical, again.ordinal, again.by),
            (1, 2, IdentifiedBy::ExternalRef)
        );
        assert!(
            id.committed(again.logical),
            "a second record is a duplicate"
        );
        let by_id = Request {
            route: RequestRoute::GetRecord {
                id: "rec_000001".into(),
            },
            credential: Some("sk-a".into()),
            ..Request::default()
        };
        let look = id.attribute(&by_id, "s", 20);
        assert_eq!(
            (look.logical, look.ordinal, look.by),
            (1, 0, IdentifiedBy::Lookup)
        );
        let by_key = Request {
            route: RequestRoute::FindRecords {
                by: FindBy::IdempotencyKey("k2".into()),
            },
            credential: Some("sk-a".into()),
            ..Request::default()
        };
        assert_eq!(id.attribute(&by_key, "s", 30).logical, 1);
        let unknown = Request {
            route: RequestRoute::FindRecords {
                by: FindBy::ExternalRef("order-9".into()),
            },
            credential: Some("sk-a".into()),
            ..Request::default()
        };
        assert_eq!(id.attribute(&unknown, "s", 40).logical, 0);
        // The next attempt of the write is its third: look-ups do not count.
        assert_eq!(id.attribute(&write("k1"), "s", 50).ordinal, 3);
    }

    #[test]
    fn a_request_told_to_wait_is_early_until_its_own_wait_passed() {
        let mut id = Identity::new(60_000);
        let a = id.attribute(&chat(1), "s", 0);
        id.told_wait(a.logical, 100, 5_000);
        assert!(
            !id.attribute(&chat(1), "s", 50).early,
            "sent before its answer left"
        );
        assert!(id.attribute(&chat(1), "s", 4_999).early);
        assert!(
            !id.attribute(&chat(2), "s", 4_999).early,
            "another request was not told"
        );
        assert!(!id.attribute(&chat(1), "s", 5_000).early);
    }

    #[test]
    fn past_the_cap_the_least_recently_touched_is_forgotten_first() {
        let mut id = Identity::with_cap(60_000, 3);
        for body in 1..=3 {
            assert_eq!(id.attribute(&chat(body), "s", body).ordinal, 1);
        }
        // Touch the oldest: 2 is now the least recently touched.
        assert_eq!(id.attribute(&chat(1), "s", 10).ordinal, 2);
        let four = id.attribute(&chat(4), "s", 20);
        assert_eq!((four.logical, four.ordinal), (4, 1));
        assert_eq!(id.remembered(), 3);
        // 1, 3 and 4 are remembered; 2 was forgotten, so its retry is a new request.
        assert_eq!(id.attribute(&chat(1), "s", 30).ordinal, 3);
        assert_eq!(id.attribute(&chat(3), "s", 31).ordinal, 2);
        let two = id.attribute(&chat(2), "s", 40);
        assert_eq!((two.logical, two.ordinal), (5, 1));
        assert_eq!(id.remembered(), 3);
        // A retry of a remembered request evicts nothing.
        assert_eq!(id.attribute(&chat(2), "s", 41).ordinal, 2);
        assert_eq!(id.remembered(), 3);
        // Memory stays bounded under a flood of new requests within the window.
        for t in 0..10_000u64 {
            id.attribute(&chat(100 + t), "s", 100 + t);
        }
        assert_eq!(id.remembered(), 3);
        assert_eq!(id.touch_order().len(), 3);
        // Nor under one request touched over and over.
        for t in 0..10_000u64 {
            id.attribute(&chat(2), "s", 20_000 + t);
        }
        assert_eq!(id.touch_order().len(), 3);
    }

    /// The expiry log the touch order replaced (see `Identity::oldest`), as it was: an
    /// entry `(expires at, id)` queued at every touch unless the last one is the same,
    /// forgetting from the front a request whose latest expiry the entry is.
    struct ExpiryLog {
        window_ms: Millis,
        max_logicals: usize,
        log: std::collections::VecDeque<(Millis, u64)>,
        /// Each remembered request's last touch.
        last_at: std::collections::BTreeMap<u64, Millis>,
    }

    impl ExpiryLog {
        fn forget_idle(&mut self, now: Millis, room: usize) {
            while let Some(&(expires, id)) = self.log.front() {
                let full = self.last_at.len() + room > self.max_logicals;
                if expires > now && !full {
                    break;
                }
                self.log.pop_front();
                if self.last_at.get(&id) == Some(&(expires - self.window_ms)) {
                    self.last_at.remove(&id);
                }
            }
        }

        fn touch(&mut self, id: u64, now: Millis) {
            if let Some(last) = self.last_at.get_mut(&id) {
                *last = now;
                let entry = (now + self.window_ms, id);
                if self.log.back() != Some(&entry) {
                    self.log.push_back(entry);
                }
            }
        }

        /// The remembered requests in the order the log forgets them.
        fn order(&self) -> Vec<u64> {
            let mut seen = std::collections::BTreeSet::new();
            self.log
                .iter()
                .filter(|&&(e, id)| self.last_at.get(&id) == Some(&(e - self.window_ms)))
                .filter(|&&(_, id)| seen.insert(id))
                .map(|&(_, id)| id)
                .collect()
        }
    }

    proptest::proptest! {
        /// The touch order forgets as the expiry log did, attempt for attempt: by the
        /// window and, past the cap, the least recently touched first, with requests
        /// touched within one ms kept in the order of their first touch there. Attempts
        /// and look-ups of a few bodies and keys, several in one ms, under a cap of 1 to 6.
        #[test]
        fn the_touch_order_forgets_as_the_expiry_log_did(
            cap in 1usize..7,
            window in 1u64..40,
            steps in proptest::collection::vec(
                (0u64..6, 0u64..10, proptest::option::of(0u8..4), 0u8..6),
                1..300,
            ),
        ) {
            let mut id = Identity::with_cap(window, cap);
            let mut log = ExpiryLog {
                window_ms: window,
                max_logicals: cap,
                log: Default::default(),
                last_at: Default::default(),
            };
            let mut now = 0;
            for (gap, body, key, kind) in steps {
                // Most steps stay within the ms of the last.
                now += gap.saturating_sub(3);
                let key = key.map(|k| IdempotencyKey::from(format!("k{k}")));
                let req = match (kind, key) {
                    (0, Some(k)) => Request {
                        route: RequestRoute::FindRecords {
                            by: FindBy::IdempotencyKey(k),
                        },
                        credential: Some("sk-a".into()),
                        ..Request::default()
                    },
                    (_, key) => Request {
                        idempotency_key: key,
                        ..chat(body)
                    },
                };
                let who = id.attribute(&req, "s", now);
                log.forget_idle(now, 0);
                match who.by {
                    IdentifiedBy::Lookup if who.logical == 0 => {}
                    IdentifiedBy::New => {
                        log.forget_idle(now, 1);
                        log.last_at.insert(who.logical, now);
                        log.touch(who.logical, now);
                    }
                    _ => log.touch(who.logical, now),
                }
                proptest::prop_assert_eq!(id.touch_order(), log.order());
                proptest::prop_assert_eq!(id.remembered(), log.last_at.len());
            }
        }
    }

    #[test]
    fn at_the_cap_the_tables_stop_growing() {
        // Churn at the cap fills hash tables with tombstones; a table holding more than half
        // of what it can then doubles, long after the cap was reached. Room reserved when the
        // cap is reached keeps every table at one size from then on.
        let mut id = Identity::with_cap(u64::MAX / 4, 1_000);
        for t in 0..1_000u64 {
            id.attribute(&chat(t), "s", t);
        }
        // `capacity()` is what a table holds before it must rehash or grow: it falls as
        // tombstones fill it and jumps only when the table is reallocated larger.
        let sizes = |id: &Identity| (id.logicals.capacity(), id.aliases.capacity());
        id.attribute(&chat(1_000), "s", 1_000);
        let at_cap = sizes(&id);
        for t in 1_001..400_000u64 {
            id.attribute(&chat(t), "s", t);
            let now = sizes(&id);
            assert!(
                now.0 <= at_cap.0 && now.1 <= at_cap.1,
                "grew at {t}: {now:?} from {at_cap:?}"
            );
        }
    }

    #[test]
    fn memory_follows_live_requests() {
        let mut id = Identity::new(100);
        for t in 0..10_000u64 {
            id.attribute(&chat(t), "s", t);
        }
        assert!(id.remembered() <= 101, "{} remembered", id.remembered());
    }
}

#[cfg(test)]
mod alias_list {
    use super::*;

    /// A remembered request stays 64 bytes, its place in touch order included, however
    /// many are kept.
    #[test]
    fn a_remembered_request_is_64_bytes() {
        assert!(std::mem::size_of::<Option<Logical>>() <= 64);
    }

    /// Aliases past the inline two are found, and forgotten with their request.
    #[test]
    fn spilled_aliases_are_found_and_forgotten() {
        let mut id = Identity::new(1_000);
        let write = |key: &str, body: u64| Request {
            route: RequestRoute::CreateRecord,
            credential: Some("sk-a".into()),
            idempotency_key: Some(key.into()),
            external_ref: Some("order-1".into()),
            body_hash: body,
            ..Request::default()
        };
        // Reference, key and fingerprint: the third spills.
        let first = id.attribute(&write("k1", 1), "s", 0);
        id.record_created(first.logical, "s", "rec_1");
        // A new key and body under the same reference: two more spilled aliases.
        assert_eq!(id.attribute(&write("k2", 2), "s", 10).logical, 1);
        assert_eq!(id.aliases.len(), 6);
        assert_eq!(id.spilled[&1].len(), 4);
        let by_record = Request {
            route: RequestRoute::GetRecord { id: "rec_1".into() },
            credential: Some("sk-a".into()),
            ..Request::default()
        };
        assert_eq!(id.attribute(&by_record, "s", 20).logical, 1);
        let mut unkeyed = write("k2", 2);
        unkeyed.idempotency_key = None;
        unkeyed.external_ref = None;
        let again = id.attribute(&unkeyed, "s", 30);
        assert_eq!((again.logical, again.by), (1, IdentifiedBy::Fingerprint));
        // Idle for the window: the request and every alias of it are forgotten.
        let later = id.attribute(&write("k9", 9), "t", 5_000);
        assert_eq!(later.logical, 2);
        assert_eq!(id.aliases.len(), 3, "only the new request's aliases remain");
        assert!(!id.spilled.contains_key(&1));
        assert_eq!(id.attribute(&by_record, "s", 5_001).logical, 0);
    }
}
