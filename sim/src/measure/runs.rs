//! Runs of like attempts: consecutive journal entries of one kind (see `kinds`), in one
//! timeseries bucket, sent for one combination of groups, whose figures are added up here
//! and written once the run ends, instead of into the summary, the timeseries row, the
//! tenant's row, the groups and the errors table at every attempt.
//!
//! In a storm nearly every attempt is the refusal before it again, in the same bucket, for
//! the same tenant: a run is long, and an attempt adds to a handful of counters of its
//! own. Every figure a run holds is a sum (or, for an error's first and last arrival, a
//! minimum and a maximum), so adding it at the run's end gives the figures counting each
//! attempt gives; the run is written whenever the figures are read
//! ([`super::Measurement::running`], [`super::Measurement::finish`]).

use super::groups::GroupKey;
use super::kinds::NO_KIND;
use stampede_reports::TimeseriesRow;

/// The timeseries row's column an attempt's status counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Column {
    /// `status_2xx`: answered with success and the answer taken.
    Success,
    /// `status_429`.
    TooMany,
    /// `status_503`.
    Unavailable,
    /// `status_5xx_other`.
    OtherServer,
    /// `status_4xx_other`.
    OtherClient,
    /// `dropped`: no status, or a 2xx whose answer was not a whole one taken.
    Dropped,
}

impl Column {
    /// The column of an attempt answered with `status` (`success`: answered with success
    /// and the answer taken).
    pub(crate) fn of(status: Option<u16>, success: bool) -> Self {
        match status {
            Some(200..=299) if success => Self::Success,
            Some(429) => Self::TooMany,
            Some(503) => Self::Unavailable,
            Some(500..=599) => Self::OtherServer,
            Some(400..=499) => Self::OtherClient,
            _ => Self::Dropped,
        }
    }

    /// Counts `n` attempts in this column of `row`.
    pub(crate) fn count(self, row: &mut TimeseriesRow, n: u64) {
        let column = match self {
            Self::Success => &mut row.status_2xx,
            Self::TooMany => &mut row.status_429,
            Self::Unavailable => &mut row.status_503,
            Self::OtherServer => &mut row.status_5xx_other,
            Self::OtherClient => &mut row.status_4xx_other,
            Self::Dropped => &mut row.dropped,
        };
        *column += n;
    }
}

/// Where a run's figures go: its kind, its bucket and its groups, and the tenant's row in
/// that bucket (its place in the bucket's tenant rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunAt {
    /// The kind's place ([`super::kinds::Facts::kind`]).
    pub kind: u32,
    /// The timeseries bucket.
    pub bucket: usize,
    /// The groups the attempts were sent for.
    pub key: GroupKey,
}

/// The attempts of the run being counted, not yet added to their figures.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Run {
    /// Where its figures go; a kind of [`NO_KIND`] when no run is open.
    pub at: RunAt,
    /// The tenant's row's place in the bucket's tenant rows.
    pub tenant_row: usize,
    /// Attempts.
    pub attempts: u64,
    /// Of them, retries (`logical_attempt > 1`).
    pub retries: u64,
    /// Of them, first attempts of a logical request (`logical_attempt == 1`).
    pub firsts: u64,
    /// Retry-After violations.
    pub retry_after_violations: u64,
    /// Scope wait violations.
    pub scope_wait_violations: u64,
    /// Tokens used (tokens).
    pub tokens_used: u64,
    /// Duplicate commits, by the provider's flag.
    pub duplicates: u64,
    /// Tokens billed twice (tokens).
    pub duplicate_tokens: u64,
    /// Idempotent replays.
    pub replays: u64,
    /// When the first and the last of them arrived (ms): the earliest and the latest.
    pub first_ms: u64,
    /// See `first_ms`.
    pub last_ms: u64,
}

impl Run {
    /// No run: nothing counted, and no attempt's kind is its.
    pub(crate) fn none() -> Self {
        Self::starting(
            RunAt {
                kind: NO_KIND,
                bucket: 0,
                key: GroupKey::default(),
            },
            0,
        )
    }

    /// A run at `at` with no attempt counted yet; `tenant_row` as [`Run::tenant_row`].
    pub(crate) fn starting(at: RunAt, tenant_row: usize) -> Self {
        Self {
            at,
            tenant_row,
            attempts: 0,
            retries: 0,
            firsts: 0,
            retry_after_violations: 0,
            scope_wait_violations: 0,
            tokens_used: 0,
            duplicates: 0,
            duplicate_tokens: 0,
            replays: 0,
            first_ms: u64::MAX,
            last_ms: 0,
        }
    }
}
