//! Measurement: every figure of a run, counted where it is true. Attempts, statuses,
//! retries, duplicates and Retry-After violations come from the provider's journal (what
//! reached the edge); latencies, queue waits and terminal outcomes from what the client's
//! core reported to the driver.

pub mod blind_resends;
pub mod percentiles;
pub mod waves;

use std::collections::{BTreeMap, HashMap};

use stampede_core::{Reason, Terminal, TerminalStatus};
use stampede_provider::model::JournalEntry;
use stampede_reports::{AttemptRow, Summary, TenantRow, TimeseriesRow};

use percentiles::Distribution;
use waves::RetryBins;

/// Figures accumulated while a run plays. Memory grows with the run's length in buckets
/// and with the write actions still live, not with the number of requests.
#[derive(Debug)]
pub struct Measurement {
    bucket_ms: u64,
    summary: Summary,
    latency: Distribution,
    queue_wait: Distribution,
    retry_bins: RetryBins,
    /// Record writes committed so far per live logical action.
    write_commits: HashMap<u64, u32>,
    rows: Vec<TimeseriesRow>,
    /// Terminal latencies of the bucket being filled: (bucket index, values).
    bucket_latency: Option<(usize, Distribution)>,
    tenants: BTreeMap<(u64, String), TenantRow>,
    last_terminal_ms: u64,
    /// Uncertain writes re-sent without a look-up showing absence (from the journal).
    blind: blind_resends::BlindResends,
    /// The last action pushed back (the driver holds one at a time).
    last_pushed_back: Option<u64>,
}

/// What a finished measurement hands to the report.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    pub summary: Summary,
    pub timeseries: Vec<TimeseriesRow>,
    pub tenants: Vec<TenantRow>,
}

/// Rounds a figure to 4 decimals so its printed form is stable and short.
pub fn round4(x: f64) -> f64 {
    if x.is_finite() {
        (x * 10_000.0).round() / 10_000.0
    } else {
        0.0
    }
}

impl Measurement {
    /// A measurement with timeseries buckets of `bucket_ms`.
    pub fn new(bucket_ms: u64) -> Self {
        Self {
            bucket_ms: bucket_ms.max(1),
            summary: Summary::default(),
            latency: Distribution::default(),
            queue_wait: Distribution::default(),
            retry_bins: RetryBins::default(),
            write_commits: HashMap::new(),
            rows: Vec::new(),
            bucket_latency: None,
            tenants: BTreeMap::new(),
            last_terminal_ms: 0,
            blind: blind_resends::BlindResends::default(),
            last_pushed_back: None,
        }
    }

    fn bucket(&self, t: u64) -> usize {
        usize::try_from(t / self.bucket_ms).unwrap_or(usize::MAX)
    }

    fn row(&mut self, t: u64) -> &mut TimeseriesRow {
        let i = self.bucket(t);
        if i >= self.rows.len() {
            let width = self.bucket_ms;
            let start = self.rows.len();
            self.rows.extend((start..=i).map(|b| TimeseriesRow {
                t_ms: b as u64 * width,
                ..TimeseriesRow::default()
            }));
        }
        &mut self.rows[i]
    }

    fn tenant_row(&mut self, t: u64, tenant: &str) -> &mut TenantRow {
        let start = self.bucket(t) as u64 * self.bucket_ms;
        self.tenants
            .entry((start, tenant.to_string()))
            .or_insert_with(|| TenantRow {
                t_ms: start,
                tenant: tenant.to_string(),
                ..TenantRow::default()
            })
    }

    /// A logical action was submitted.
    pub fn on_submit(&mut self) {
        self.summary.logical_requests += 1;
    }

    /// Admission refused action `id` and the driver held it back to offer it again
    /// (backpressure). `rejected` counts each action pushed back at least once.
    pub fn on_pushed_back(&mut self, id: u64) {
        if self.last_pushed_back != Some(id) {
            self.last_pushed_back = Some(id);
            self.summary.rejected += 1;
        }
    }

    /// Logical requests submitted so far.
    pub fn logical_requests(&self) -> u64 {
        self.summary.logical_requests
    }

    /// An action's first attempt left the client after waiting `wait_ms` since submission.
    pub fn on_first_dispatch(&mut self, wait_ms: u64) {
        self.queue_wait.record(wait_ms);
    }

    /// The client reserved `tokens` for an attempt.
    pub fn on_reserved(&mut self, tokens: u32) {
        self.summary.tokens_reserved += u64::from(tokens);
    }

    /// An action reached its terminal outcome at `at`, `latency_ms` after submission.
    /// `missed_deadline`: it ended after its deadline or because of it.
    pub fn on_terminal(
        &mut self,
        at: u64,
        tenant: &str,
        terminal: &Terminal,
        latency_ms: u64,
        missed_deadline: bool,
    ) {
        match terminal.status {
            TerminalStatus::Completed => self.summary.completed += 1,
            TerminalStatus::Failed => self.summary.failed += 1,
            TerminalStatus::Cancelled => self.summary.cancelled += 1,
            TerminalStatus::Escalated => self.summary.escalations += 1,
            TerminalStatus::ReconciliationRequired => {
                // Left for a person to resolve: an escalation, and counted apart as well.
                self.summary.escalations += 1;
                self.summary.reconciliation_required += 1;
            }
        }
        if missed_deadline || terminal.reason == Reason::DeadlineExceeded {
            self.summary.deadline_misses += 1;
        }
        self.latency.record(latency_ms);
        self.last_terminal_ms = self.last_terminal_ms.max(at);
        let completed = terminal.status == TerminalStatus::Completed;
        let row = self.row(at);
        if completed {
            row.completed += 1;
        } else {
            row.failed += 1;
        }
        if completed {
            self.tenant_row(at, tenant).completed += 1;
        }
        let b = self.bucket(at);
        match &mut self.bucket_latency {
            Some((idx, dist)) if *idx == b => dist.record(latency_ms),
            _ => {
                self.flush_bucket_latency();
                let mut dist = Distribution::default();
                dist.record(latency_ms);
                self.bucket_latency = Some((b, dist));
            }
        }
        self.write_commits.remove(&terminal.job);
        // An action left reconciliation_required can be resumed by a restarted runner.
        if terminal.status != TerminalStatus::ReconciliationRequired {
            self.blind.forget(terminal.job);
        }
    }

    fn flush_bucket_latency(&mut self) {
        if let Some((idx, dist)) = self.bucket_latency.take() {
            let t = idx as u64 * self.bucket_ms;
            let row = self.row(t);
            row.latency_p50_ms = dist.quantile(0.5);
            row.latency_p99_ms = dist.quantile(0.99);
        }
    }

    /// Client gauges at the end of the bucket holding `t`.
    pub fn on_gauges(&mut self, t: u64, queued: u64, in_flight: u64, tokens_reserved: u64) {
        let row = self.row(t);
        row.queue_depth = queued;
        row.in_flight = in_flight;
        row.tokens_reserved = tokens_reserved;
    }

    /// One journal entry: an attempt at the provider's edge. Returns its attempts.csv row.
    /// `client_done_ms` fills the end of a hang, which only the client's timeout knows.
    pub fn on_journal(&mut self, e: &JournalEntry, client_done_ms: Option<u64>) -> AttemptRow {
        self.summary.blind_resends += u64::from(self.blind.observe(e));
        let s = &mut self.summary;
        s.outbound_attempts += 1;
        *s.status_counts.entry(e.outcome.clone()).or_insert(0) += 1;
        let retry = e.attempt_no.is_some_and(|n| n > 1);
        if retry {
            s.retries += 1;
            self.retry_bins.record(e.at_ms);
        }
        // The provider flags an attempt that reached a scope before a Retry-After it had
        // already delivered there (from when that answer left) had passed: ground truth.
        let violation = e.retry_after_violation;
        if violation {
            s.retry_after_violations += 1;
        }
        let lookup = e.method == "GET" && e.route.starts_with("/v1/records");
        if lookup {
            s.reconciliations += 1;
        }
        s.tokens_used += e.tokens_used;
        let is_write = e.method == "POST" && e.route == "/v1/records";
        let mut duplicate = e.duplicate;
        if is_write && e.committed {
            if let Some(action) = e.action {
                let n = self.write_commits.entry(action).or_insert(0);
                *n += 1;
                duplicate |= *n > 1;
            }
        }
        if duplicate {
            self.summary.duplicates += 1;
        }
        let row = self.row(e.at_ms);
        row.attempts += 1;
        if retry {
            row.retries += 1;
        }
        match e.status {
            Some(200..=299) if e.outcome.chars().all(|c| c.is_ascii_digit()) => row.status_2xx += 1,
            Some(429) => row.status_429 += 1,
            Some(503) => row.status_503 += 1,
            Some(500..=599) => row.status_5xx_other += 1,
            Some(400..=499) => row.status_4xx_other += 1,
            _ => row.dropped += 1,
        }
        row.tokens_used += e.tokens_used;
        let tenant = e.tenant.clone().unwrap_or_default();
        self.tenant_row(e.at_ms, &tenant).attempts += 1;
        let done_ms = if e.done_ms == 0 {
            client_done_ms.unwrap_or(e.at_ms)
        } else {
            e.done_ms
        };
        AttemptRow {
            seq: e.seq,
            at_ms: e.at_ms,
            done_ms,
            tenant,
            scope: e.scope.clone().unwrap_or_default(),
            route: e.route.clone(),
            action: e.action.unwrap_or(0),
            attempt_no: e.attempt_no.unwrap_or(0),
            outcome: e.outcome.clone(),
            error_code: e.error_code.clone().unwrap_or_default(),
            committed: e.committed,
            retry_after_violation: violation,
            idempotency_key: e.idempotency_key.clone().unwrap_or_default(),
        }
    }

    /// Closes the run at `end_ms` with `unfinished` actions still open when the virtual-time
    /// cap hit (counted as failed; `unfinished_late` of them were past their deadline).
    pub fn finish(mut self, end_ms: u64, unfinished: u64, unfinished_late: u64) -> Measured {
        self.flush_bucket_latency();
        let mut s = self.summary;
        s.failed += unfinished;
        s.deadline_misses += unfinished_late;
        s.mode = "virtual".to_string();
        s.virtual_duration_ms = if unfinished > 0 {
            end_ms
        } else {
            self.last_terminal_ms
        };
        s.attempts_per_logical = round4(if s.logical_requests == 0 {
            0.0
        } else {
            s.outbound_attempts as f64 / s.logical_requests as f64
        });
        s.goodput_per_min = round4(if s.virtual_duration_ms == 0 {
            0.0
        } else {
            s.completed as f64 * 60_000.0 / s.virtual_duration_ms as f64
        });
        s.retry_waves = self.retry_bins.waves();
        s.peak_retries_per_100ms = self.retry_bins.peak();
        s.latency_ms = self.latency.percentiles();
        s.queue_wait_ms = self.queue_wait.percentiles();
        Measured {
            summary: s,
            timeseries: self.rows,
            tenants: self.tenants.into_values().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stampede_provider::config::{CredentialConfig, DurationMs, ScopeLimits};
    use stampede_provider::{ProviderConfig, ProviderModel, Request, RequestRoute};

    /// A provider with one scope of 1 request a minute whose 429s leave 100 ms after the
    /// decision.
    fn provider() -> ProviderModel {
        let config = ProviderConfig {
            reject_latency: DurationMs(100),
            scopes: vec![ScopeLimits {
                id: "s".into(),
                rpm: Some(1),
                tpm: None,
                rpd: None,
                tpd: None,
                concurrency: None,
                count_rejected: false,
            }],
            credentials: vec![CredentialConfig {
                key: "sk-s".into(),
                scope: "s".into(),
            }],
            ..ProviderConfig::default()
        };
        ProviderModel::new(config, 1, 0).unwrap()
    }

    fn chat(attempt_no: u32) -> Request {
        Request {
            route: RequestRoute::ChatCompletions,
            credential: Some("sk-s".into()),
            prompt_tokens: 10,
            max_tokens: 5,
            attempt_no: Some(attempt_no),
            ..Request::default()
        }
    }

    #[test]
    fn retry_after_violations_are_the_providers_own_flags() {
        let mut m = provider();
        m.arrive(&chat(1), 0);
        // 429 decided at 10_000, answer left at 10_100: Retry-After 50 s binds to 60_100.
        m.arrive(&chat(1), 10_000);
        m.arrive(&chat(1), 10_050); // in flight before the answer left: no violation
        m.arrive(&chat(2), 30_000); // too early
        m.arrive(&chat(2), 60_050); // still too early, though the window reset
        m.arrive(&chat(2), 60_100); // on time
        let mut measure = Measurement::new(1_000);
        let rows: Vec<AttemptRow> = m
            .drain_journal()
            .iter()
            .map(|e| measure.on_journal(e, None))
            .collect();
        let flags: Vec<bool> = rows.iter().map(|r| r.retry_after_violation).collect();
        assert_eq!(flags, vec![false, false, false, true, true, false]);
        let measured = measure.finish(60_100, 0, 0);
        assert_eq!(measured.summary.retry_after_violations, 2);
        assert_eq!(
            measured.summary.retry_after_violations,
            m.stats().retry_after_violations,
            "the summary counts what the provider flagged"
        );
    }
}
