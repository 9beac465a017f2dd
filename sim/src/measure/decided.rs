//! A journal entry as measurement reads it: what the provider decided about one attempt.
//!
//! The provider's journal also records what the client said about itself (its tenant,
//! class, action and attempt numbers, from the `x-stampede-*` headers only our own client
//! sends), and the provider's flag of where the attempt claim disagreed with its own count.
//! Those are claims, or made from one, never the source of a figure.
//! [`Measurement::on_journal`] turns each entry into a [`Decided`] at once, and every
//! figure below it is computed from that view, which has no method for a claim or for
//! anything derived from one: no figure can read one, by construction.
//!
//! [`Measurement::on_journal`]: super::Measurement::on_journal

use std::sync::Arc;

use stampede_core::IdempotencyKey;

use stampede_provider::model::{Fingerprint, JournalEntry};

use super::labels::Statics;

/// The provider's side of one journal entry: a view that reads only the fields the
/// provider decided, each where it lies in the entry (copying them all out first was a
/// good part of measuring an attempt). Made once per entry; nothing copied or allocated.
#[derive(Debug, Clone, Copy)]
pub struct Decided<'a> {
    /// The entry, read only through the methods below: none reads a claim.
    e: &'a JournalEntry,
}

/// The labels of one entry, where they lie (see [`Decided::labels`]).
#[derive(Debug, Clone, Copy)]
pub struct Labels<'a> {
    /// The outcome's label.
    pub outcome: &'a str,
    /// The route template.
    pub route: &'a str,
    /// The HTTP method.
    pub method: &'a str,
    /// The error code, if any.
    pub error_code: Option<&'a str>,
    /// The limit that refused it, if one did.
    pub limit: Option<&'a str>,
}

impl<'a> From<&'a JournalEntry> for Decided<'a> {
    fn from(e: &'a JournalEntry) -> Self {
        Self { e }
    }
}

impl<'a> Decided<'a> {
    /// When the attempt arrived (model ms).
    #[inline]
    pub fn at_ms(&self) -> u64 {
        self.e.at_ms
    }
    /// When its answer left, or 0 for a hang (model ms).
    #[inline]
    pub fn done_ms(&self) -> u64 {
        self.e.done_ms
    }
    /// Route template (`/v1/chat/completions`, `/v1/records`, ...).
    #[inline]
    pub fn route(&self) -> &'a str {
        &self.e.route
    }
    /// HTTP method.
    #[inline]
    pub fn method(&self) -> &'a str {
        &self.e.method
    }
    /// The Idempotency-Key the request carried, if any.
    #[inline]
    pub fn idempotency_key(&self) -> Option<&'a IdempotencyKey> {
        self.e.idempotency_key.as_ref()
    }
    /// Method, route template and body hash.
    #[inline]
    pub fn fingerprint(&self) -> &'a Fingerprint {
        &self.e.fingerprint
    }
    /// HTTP status, when one was sent.
    #[inline]
    pub fn status(&self) -> Option<u16> {
        self.e.status
    }
    /// The outcome's label (a status, `drop`, `hang`, ...).
    #[inline]
    pub fn outcome(&self) -> &'a str {
        &self.e.outcome
    }
    /// The error code of an error answer.
    #[inline]
    pub fn error_code(&self) -> Option<&'a str> {
        self.e.error_code.as_deref()
    }
    /// Whether the side effect was committed.
    #[inline]
    pub fn committed(&self) -> bool {
        self.e.committed
    }
    /// Whether the provider counted it a duplicate commit.
    #[inline]
    pub fn duplicate(&self) -> bool {
        self.e.duplicate
    }
    /// Whether it came back before the Retry-After the provider gave.
    #[inline]
    pub fn retry_after_violation(&self) -> bool {
        self.e.retry_after_violation
    }
    /// Whether it came back before its scope's announced wait.
    #[inline]
    pub fn scope_wait_violation(&self) -> bool {
        self.e.scope_wait_violation
    }
    /// Whether an idempotent replay answered it.
    #[inline]
    pub fn replayed(&self) -> bool {
        self.e.replayed
    }
    /// Tokens the provider counted (tokens).
    #[inline]
    pub fn tokens_used(&self) -> u64 {
        self.e.tokens_used
    }
    /// Tokens billed twice (tokens).
    #[inline]
    pub fn duplicate_tokens(&self) -> u64 {
        self.e.duplicate_tokens
    }
    /// The logical request the provider attributed it to.
    #[inline]
    pub fn logical(&self) -> u64 {
        self.e.logical
    }
    /// Which attempt of that logical request it was, as the provider counted.
    #[inline]
    pub fn logical_attempt(&self) -> u32 {
        self.e.logical_attempt
    }
    /// Whether it was committed but its answer never reached the client.
    #[inline]
    pub fn undelivered(&self) -> bool {
        self.e.undelivered
    }
    /// The model it was billed as (the journal's shared name: a tally keyed by it clones
    /// the `Arc`, not the text).
    #[inline]
    pub fn model(&self) -> Option<&'a Arc<str>> {
        self.e.model.as_ref()
    }
    /// What was billed (micro-USD).
    #[inline]
    pub fn billed_micro_usd(&self) -> u64 {
        self.e.billed_micro_usd
    }
    /// The limit that refused it, if one did.
    #[inline]
    pub fn limit(&self) -> Option<&'a str> {
        self.e.limit.as_deref()
    }
    /// The labels above as they lie in the entry, static or made at run time: a kind is
    /// recognised by where they are (see `kinds`).
    #[inline]
    pub fn labels(&self) -> Labels<'a> {
        Labels {
            outcome: &self.e.outcome,
            route: &self.e.route,
            method: &self.e.method,
            error_code: self.e.error_code.as_deref(),
            limit: self.e.limit.as_deref(),
        }
    }
    /// Which of the labels above the provider wrote from its static tables: tallies key
    /// those by address (see `labels`).
    #[inline]
    pub fn statics(&self) -> Statics {
        Statics::of(self.e)
    }
}
