//! Retries by failure group (`summary.json`'s `retries_by_group`), from the provider's
//! journal: a retry is an attempt with `logical_attempt > 1`, and its group is the group of
//! the answer the provider gave the previous attempt of the same logical request,
//! classified as the core classifies an outcome (`stampede_core::classify`).
//!
//! That needs the last answer of each logical request still open. Logical requests are
//! numbered by the provider in order of first arrival, so the memory is a window of the
//! most recent ones: a ring of one byte per request over the newest [`REMEMBERED`] of each
//! provider (256 KiB at most; a hash map of them held 13 MB in the million-request run), and
//! a retry of a request older than that counts as `unknown`. Memory is bounded whatever the
//! run's length.

use std::collections::BTreeMap;

use super::decided::Decided;
#[cfg(test)]
use stampede_provider::model::JournalEntry;

/// Logical requests whose last answer is remembered at most (the newest, per provider).
pub const REMEMBERED: usize = 1 << 18;

/// A ring slot of a request whose answer was not seen: read as [`UNKNOWN`], as a retry of
/// it counts, so a slot's value is what a read gives without a second look.
const NONE: u8 = UNKNOWN;

/// The group names, in the order of their index.
pub const GROUPS: [&str; 8] = [
    "never_arrived",
    "may_have_executed",
    "wont_improve",
    "conflict",
    "quota_exhausted",
    "stream_cut",
    "after_success",
    "unknown",
];

const UNKNOWN: u8 = 7;

/// The group of one journaled answer, as the core would classify the outcome the client
/// heard for it (an index of [`GROUPS`]).
///
/// - `dropped` before the commit is a reset before the request was written (never
///   arrived), after it a reset after the write (may have executed); `hang` is the client's
///   read timeout (may have executed);
/// - `stream_cut` and `stream_error` are a group of their own: the core retries a stream cut
///   before its first token and never one after, which the journal does not tell apart;
/// - 2xx is `after_success`; 429 and 503 never arrived unless the code is
///   `insufficient_quota` (quota exhausted); 409 `idempotency_key_in_use` never arrived,
///   any other 409 is a conflict; other 4xx and `context_length_exceeded` or content-policy
///   codes won't improve; 5xx may have executed.
pub fn group_of(e: &Decided<'_>) -> u8 {
    let code = e.error_code().unwrap_or_default();
    match (e.outcome(), e.status()) {
        ("dropped", _) => u8::from(e.committed()),
        ("hang", _) => 1,
        ("stream_cut" | "stream_error", _) => 5,
        (_, Some(200..=299)) => 6,
        (_, Some(status)) => {
            if code.eq_ignore_ascii_case("insufficient_quota") && (400..500).contains(&status) {
                4
            } else if [
                "content_policy_violation",
                "content_filter",
                "context_length_exceeded",
            ]
            .iter()
            .any(|c| c.eq_ignore_ascii_case(code))
            {
                2
            } else {
                match status {
                    429 | 503 => 0,
                    409 if code.eq_ignore_ascii_case("idempotency_key_in_use") => 0,
                    409 => 3,
                    500..=599 => 1,
                    _ => 2,
                }
            }
        }
        (_, None) => UNKNOWN,
    }
}

/// The last answer's group of each of one provider's newest logical requests.
#[derive(Debug, Default)]
struct Window {
    /// Newest logical request seen.
    newest: u64,
    /// Request `l`'s group at `l % REMEMBERED`, for `l` within [`REMEMBERED`] of `newest`;
    /// grown as ids are first reached, up to [`REMEMBERED`] slots.
    groups: Vec<u8>,
}

impl Window {
    fn slot(logical: u64) -> usize {
        (logical % REMEMBERED as u64) as usize
    }

    /// Whether `logical` is among the newest [`REMEMBERED`].
    fn holds(&self, logical: u64) -> bool {
        logical + REMEMBERED as u64 > self.newest
    }

    fn get(&self, logical: u64) -> u8 {
        // Newer than every request seen: its slot still holds an older one's answer.
        if logical > self.newest || !self.holds(logical) {
            return UNKNOWN;
        }
        self.groups
            .get(Self::slot(logical))
            .copied()
            .unwrap_or(UNKNOWN)
    }

    /// [`Window::set`] that returns what [`Window::get`] gave before: one look at the
    /// slot where `logical` is already among the newest and its slot made.
    #[inline]
    fn replace(&mut self, logical: u64, group: u8) -> u8 {
        if logical <= self.newest && self.holds(logical) {
            if let Some(g) = self.groups.get_mut(Self::slot(logical)) {
                return std::mem::replace(g, group);
            }
        }
        let before = self.get(logical);
        self.set(logical, group);
        before
    }

    fn set(&mut self, logical: u64, group: u8) {
        if logical > self.newest {
            // The slots of the ids passed over now belong to them, not to the ids
            // REMEMBERED before: clear them.
            let passed = (logical - self.newest).min(REMEMBERED as u64);
            for id in logical + 1 - passed..=logical {
                if let Some(g) = self.groups.get_mut(Self::slot(id)) {
                    *g = NONE;
                }
            }
            self.newest = logical;
        }
        if !self.holds(logical) {
            return;
        }
        let slot = Self::slot(logical);
        if slot >= self.groups.len() {
            let grown = (slot + 1).max(2 * self.groups.len()).min(REMEMBERED);
            self.groups.resize(grown, NONE);
        }
        self.groups[slot] = group;
    }
}

/// Retries counted by group, per provider (index), and the last answer of each recent
/// logical request.
#[derive(Debug, Default)]
pub struct RetryGroups {
    /// By provider index.
    last: Vec<Window>,
    /// Retries by provider index, then by group index (of [`GROUPS`]).
    counts: Vec<[u64; GROUPS.len()]>,
}

impl RetryGroups {
    /// Entry `e` of provider `provider`'s journal.
    pub fn observe(&mut self, provider: u8, e: &Decided<'_>) {
        self.observe_as(provider, e, group_of(e));
    }

    /// [`RetryGroups::observe`] with `e`'s group worked out before (`group_of(e)`).
    #[inline]
    pub(crate) fn observe_as(&mut self, provider: u8, e: &Decided<'_>, group: u8) {
        // Look-ups are not retries and do not stand between a write and its re-send.
        if e.logical_attempt() == 0 || e.logical() == 0 {
            return;
        }
        let ix = usize::from(provider);
        if self.last.len() <= ix {
            self.last.resize_with(ix + 1, Window::default);
            self.counts.resize(ix + 1, [0; GROUPS.len()]);
        }
        let before = self.last[ix].replace(e.logical(), group);
        if e.logical_attempt() > 1 {
            self.counts[ix][usize::from(before)] += 1;
        }
    }

    /// Retries by group name, over every provider.
    pub fn total(&self) -> BTreeMap<String, u64> {
        let mut sums = [0; GROUPS.len()];
        for counts in &self.counts {
            for (sum, n) in sums.iter_mut().zip(counts) {
                *sum += n;
            }
        }
        named(&sums)
    }

    /// Retries by group name at provider `provider`.
    pub fn of_provider(&self, provider: u8) -> BTreeMap<String, u64> {
        self.counts
            .get(usize::from(provider))
            .map(named)
            .unwrap_or_default()
    }
}

/// Counts by group index as a map by group name, groups with none left out.
fn named(counts: &[u64; GROUPS.len()]) -> BTreeMap<String, u64> {
    GROUPS
        .iter()
        .zip(counts)
        .filter(|(_, &n)| n > 0)
        .map(|(name, &n)| (name.to_string(), n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use stampede_core::classify::{classify, Classification};
    use stampede_core::{FailureGroup, Outcome, Response, TransportFailure};

    /// A journal entry as the provider writes one, then given this answer.
    fn entry(
        outcome: &'static str,
        status: Option<u16>,
        code: Option<&'static str>,
    ) -> JournalEntry {
        use stampede_provider::config::{CredentialConfig, ScopeLimits};
        use stampede_provider::{ProviderConfig, ProviderModel, Request, RequestRoute};
        let config = ProviderConfig {
            scopes: vec![ScopeLimits::unlimited("s")],
            credentials: vec![CredentialConfig {
                key: "sk-s".into(),
                scope: "s".into(),
                scopes: Vec::new(),
            }],
            ..ProviderConfig::default()
        };
        let mut model = ProviderModel::new(config, 1, 0).unwrap();
        let request = Request {
            route: RequestRoute::ChatCompletions,
            credential: Some("sk-s".into()),
            prompt_tokens: 10,
            max_tokens: 5,
            ..Request::default()
        };
        model.arrive(&request, 0);
        let mut e = model.drain_journal().remove(0);
        e.outcome = outcome.into();
        e.status = status;
        e.error_code = code.map(Into::into);
        e.committed = false;
        e
    }

    fn response(status: u16, code: Option<&str>) -> Outcome {
        let json = serde_json::json!({
            "status": status,
            "headers": [],
            "error_code": code,
            "usage": null,
            "operation_id": null,
        });
        Outcome::Response(serde_json::from_value::<Response>(json).unwrap())
    }

    fn core_group(outcome: &Outcome) -> &'static str {
        match classify(outcome) {
            Classification::Success => "after_success",
            Classification::Failure(f) => match f.group {
                FailureGroup::NeverArrived => "never_arrived",
                FailureGroup::MayHaveExecuted => "may_have_executed",
                FailureGroup::WontImprove => "wont_improve",
                FailureGroup::Conflict => "conflict",
                FailureGroup::QuotaExhausted => "quota_exhausted",
            },
        }
    }

    #[test]
    fn answers_fall_in_the_group_the_core_gives_them() {
        let statuses: [(u16, Option<&'static str>); 14] = [
            (200, None),
            (429, Some("rate_limit_exceeded")),
            (429, Some("insufficient_quota")),
            (503, None),
            (500, None),
            (502, None),
            (504, None),
            (400, None),
            (400, Some("context_length_exceeded")),
            (400, Some("content_policy_violation")),
            (401, None),
            (409, None),
            (409, Some("idempotency_key_in_use")),
            (422, None),
        ];
        for (status, code) in statuses {
            let ours =
                GROUPS[usize::from(group_of(&Decided::from(&entry("x", Some(status), code))))];
            assert_eq!(
                ours,
                core_group(&response(status, code)),
                "{status} {code:?}"
            );
        }
        let mut dropped = entry("dropped", None, None);
        assert_eq!(
            GROUPS[usize::from(group_of(&Decided::from(&dropped)))],
            core_group(&Outcome::Transport(TransportFailure::ResetBeforeWrite))
        );
        dropped.committed = true;
        assert_eq!(
            GROUPS[usize::from(group_of(&Decided::from(&dropped)))],
            core_group(&Outcome::Transport(TransportFailure::ResetAfterWrite))
        );
        assert_eq!(
            GROUPS[usize::from(group_of(&Decided::from(&entry("hang", None, None))))],
            core_group(&Outcome::Transport(TransportFailure::ReadTimeout))
        );
    }

    #[test]
    fn a_retry_takes_the_group_of_the_previous_answer_and_they_add_up() {
        let mut groups = RetryGroups::default();
        let attempt = |logical, n, outcome, status| JournalEntry {
            logical,
            logical_attempt: n,
            ..entry(outcome, status, None)
        };
        groups.observe(0, &Decided::from(&attempt(1, 1, "429", Some(429))));
        groups.observe(0, &Decided::from(&attempt(2, 1, "hang", None)));
        groups.observe(0, &Decided::from(&attempt(1, 2, "500", Some(500))));
        groups.observe(0, &Decided::from(&attempt(1, 3, "200", Some(200))));
        groups.observe(0, &Decided::from(&attempt(2, 2, "200", Some(200))));
        groups.observe(1, &Decided::from(&attempt(9, 2, "200", Some(200))));
        let total = groups.total();
        assert_eq!(total["never_arrived"], 1);
        assert_eq!(total["may_have_executed"], 2);
        assert_eq!(
            total["unknown"], 1,
            "a retry whose first attempt was never seen"
        );
        assert_eq!(total.values().sum::<u64>(), 4);
        assert_eq!(groups.of_provider(1)["unknown"], 1);
    }

    #[test]
    fn memory_stays_bounded() {
        let mut groups = RetryGroups::default();
        let mut first = entry("429", Some(429), None);
        first.logical_attempt = 1;
        for logical in 1..=(REMEMBERED as u64 * 3) {
            first.logical = logical;
            groups.observe(0, &Decided::from(&first));
        }
        assert_eq!(groups.last[0].groups.len(), REMEMBERED);
        let retry = |logical| JournalEntry {
            logical,
            logical_attempt: 2,
            ..entry("200", Some(200), None)
        };
        let newest = REMEMBERED as u64 * 3;
        // The newest REMEMBERED are remembered; the one before them is forgotten.
        groups.observe(0, &Decided::from(&retry(newest - REMEMBERED as u64 + 1)));
        groups.observe(0, &Decided::from(&retry(newest - REMEMBERED as u64)));
        assert_eq!(groups.total()["never_arrived"], 1);
        assert_eq!(groups.total()["unknown"], 1);
        // Ids passed over take their slots clean: no answer of the request REMEMBERED
        // before them shows through.
        groups.observe(0, &Decided::from(&retry(newest + 5)));
        assert_eq!(groups.total()["unknown"], 2);
        assert_eq!(groups.total()["never_arrived"], 1);
    }
}
