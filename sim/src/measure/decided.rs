//! A journal entry as measurement reads it: what the provider decided about one attempt.
//!
//! The provider's journal also records what the client said about itself (its tenant,
//! class, action and attempt numbers, from the `x-stampede-*` headers only our own client
//! sends), and the provider's flag of where the attempt claim disagreed with its own count.
//! Those are claims, or made from one, never the source of a figure.
//! [`Measurement::on_journal`] turns each entry into a [`Decided`] at once, and every
//! figure below it is computed from that view, which has no field for a claim or for
//! anything derived from one: no figure can read one, by construction.
//!
//! [`Measurement::on_journal`]: super::Measurement::on_journal

use std::sync::Arc;

use stampede_core::IdempotencyKey;

use stampede_provider::model::{Fingerprint, JournalEntry};

use super::labels::Statics;

/// The provider's side of one journal entry: borrowed fields, copied scalars. Made once per
/// entry (a few dozen bytes; nothing allocated).
#[derive(Debug, Clone, Copy)]
pub struct Decided<'a> {
    /// When the attempt arrived (model ms).
    pub at_ms: u64,
    /// When its answer left, or 0 for a hang (model ms).
    pub done_ms: u64,
    /// Route template (`/v1/chat/completions`, `/v1/records`, ...).
    pub route: &'a str,
    /// HTTP method.
    pub method: &'a str,
    /// The Idempotency-Key the request carried, if any.
    pub idempotency_key: Option<&'a IdempotencyKey>,
    /// Method, route template and body hash.
    pub fingerprint: &'a Fingerprint,
    /// HTTP status, when one was sent.
    pub status: Option<u16>,
    /// The outcome's label (a status, `drop`, `hang`, ...).
    pub outcome: &'a str,
    /// The error code of an error answer.
    pub error_code: Option<&'a str>,
    /// Whether the side effect was committed.
    pub committed: bool,
    /// Whether the provider counted it a duplicate commit.
    pub duplicate: bool,
    /// Whether it came back before the Retry-After the provider gave.
    pub retry_after_violation: bool,
    /// Whether it came back before its scope's announced wait.
    pub scope_wait_violation: bool,
    /// Whether an idempotent replay answered it.
    pub replayed: bool,
    /// Tokens the provider counted (tokens).
    pub tokens_used: u64,
    /// Tokens billed twice (tokens).
    pub duplicate_tokens: u64,
    /// The logical request the provider attributed it to.
    pub logical: u64,
    /// Which attempt of that logical request it was, as the provider counted.
    pub logical_attempt: u32,
    /// Whether it was committed but its answer never reached the client.
    pub undelivered: bool,
    /// The model it was billed as (the journal's shared name: a tally keyed by it clones
    /// the `Arc`, not the text).
    pub model: Option<&'a Arc<str>>,
    /// What was billed (micro-USD).
    pub billed_micro_usd: u64,
    /// The limit that refused it, if one did.
    pub limit: Option<&'a str>,
    /// Which of the labels above the provider wrote from its static tables: tallies key
    /// those by address (see `labels`).
    pub statics: Statics,
}

impl<'a> From<&'a JournalEntry> for Decided<'a> {
    fn from(e: &'a JournalEntry) -> Self {
        Self {
            at_ms: e.at_ms,
            done_ms: e.done_ms,
            route: &e.route,
            method: &e.method,
            idempotency_key: e.idempotency_key.as_ref(),
            fingerprint: &e.fingerprint,
            status: e.status,
            outcome: &e.outcome,
            error_code: e.error_code.as_deref(),
            committed: e.committed,
            duplicate: e.duplicate,
            retry_after_violation: e.retry_after_violation,
            scope_wait_violation: e.scope_wait_violation,
            replayed: e.replayed,
            tokens_used: e.tokens_used,
            duplicate_tokens: e.duplicate_tokens,
            logical: e.logical,
            logical_attempt: e.logical_attempt,
            undelivered: e.undelivered,
            model: e.model.as_ref(),
            billed_micro_usd: e.billed_micro_usd,
            limit: e.limit.as_deref(),
            statics: Statics::of(e),
        }
    }
}
