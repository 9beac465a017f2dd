//! Measurement: every figure of a run, counted where it is true. Attempts, statuses,
//! retries, duplicates and Retry-After violations come from the provider's journal (what
//! reached the edge); latencies, queue waits and terminal outcomes from what the client's
//! core reported to the driver.

pub mod agents;
pub(crate) mod billing;
pub mod blind_resends;
mod buckets;
pub mod decided;
mod errors;
pub mod groups;
mod kinds;
mod labels;
pub mod percentiles;
pub mod providers;
pub mod queues;
pub mod retry_groups;
mod runs;
mod starvation;
pub mod waves;

use std::collections::BTreeMap;

use decided::Decided;
use stampede_core::{Job, JobId, Millis, Priority, Reason, Route, Terminal, TerminalStatus};
use stampede_provider::model::JournalEntry;
use stampede_reports::{Summary, TenantRow, TimeseriesRow, UnfinishedRow};

use crate::driver_common::case_file::{CaseFiles, CaseNotes, Ending};
use buckets::{Backlog, BucketQuantiles};
use errors::Errors;
pub use groups::{action_route, request_route, Group, GroupKey};
use groups::{GroupEnd, Groups};
use kinds::{Facts, KindKey, Kinds, NO_KIND};
use labels::ByStatic;
use percentiles::Distribution;
pub(crate) use runs::Column;
use runs::{Run, RunAt};
use waves::RetryBins;

/// Figures accumulated while a run plays. Memory grows with the run's length in buckets
/// and with the write actions still live; per request only one byte (each action's queue,
/// for `by_priority` and `queues`: see [`queues`]), and a bounded window of the provider's
/// logical requests (for `retries_by_group`: see [`retry_groups`]).
#[derive(Debug)]
pub struct Measurement {
    bucket_ms: u64,
    /// The bucket last found and the ms it spans, `(first ms, end ms, bucket)`: an attempt
    /// looks its bucket up three times or more, nearly always the one before, and a 64-bit
    /// division at each was a measurable part of measuring it.
    last_bucket: (u64, u64, usize),
    summary: Summary,
    /// Submit to completion of every logical request not cancelled that did not complete,
    /// counted as unanswered (see `unanswered_ms`): `summary.latency_ms` is of these and
    /// `completed_latency` together, added once at the end (hdrhistogram adds counts bucket
    /// by bucket: the figures of recording each value in both), so a completion is
    /// recorded once, not twice.
    latency: Distribution,
    completed_latency: Distribution,
    queue_wait: Distribution,
    failed_latency: Distribution,
    service: Distribution,
    retry_bins: RetryBins,
    rows: Vec<TimeseriesRow>,
    /// Terminal latencies (ms) of the bucket being filled, if any: its index and values
    /// (the vector reused from bucket to bucket).
    bucket_latency: (Option<usize>, Vec<u64>),
    /// The precision of the bucket's percentiles.
    precision: percentiles::Precision,
    /// Each bucket's rows by tenant, by bucket index like `rows` (every caller has made the
    /// bucket's timeseries row first, so this grows no further than `rows`): a few tenants a
    /// bucket, in the order first seen, sorted by name at the end. An index, where a map by
    /// bucket start searched a tree at every attempt.
    tenants: Vec<Vec<TenantRow>>,
    last_terminal_ms: u64,
    /// The scenario's duration cap (ms): how long a request without a deadline that did not
    /// complete keeps the service window open.
    cap_ms: u64,
    /// Whether the run stopped before its cap ([`Measurement::stopped_early`]): the service
    /// window then ends at the stop at the latest.
    stopped_early: bool,
    /// End of the service window so far (ms): see `Summary::goodput_window_ms`.
    window_end_ms: u64,
    /// Uncertain writes re-sent without a look-up showing absence (from the journal).
    blind: blind_resends::BlindResends,
    /// The last action pushed back (the driver holds one at a time).
    last_pushed_back: Option<u64>,
    /// Logical requests open at the cap, listed with their next safe action, by the
    /// harness's own job id (its arrival record), never a client's claim: the key orders
    /// `unfinished.csv` and is written as each row's `action`, whose incoming value is
    /// never read.
    unfinished: BTreeMap<JobId, UnfinishedRow>,
    /// Outcomes by class, tenant and route.
    groups: Groups,
    /// Unsuccessful answers by status and message.
    errors: Errors,
    /// Service time of successful attempts by arrival bucket, and the buckets closed so far
    /// as `(bucket, p50, p99)` (written into the rows at the end, so no row is made early).
    bucket_service: (BucketQuantiles, Vec<(usize, u64, u64)>),
    /// Queue wait by first-send bucket, as `service`.
    bucket_queue_wait: (BucketQuantiles, Vec<(usize, u64, u64)>),
    /// Requests arrived and not yet sent, over time.
    backlog: Backlog,
    /// The journal's routes seen so far, as `(method, route template, position of the
    /// tally of `METHOD /template` in the route grouping)`: the key is made and interned
    /// once per route, not per attempt.
    route_keys: Vec<(String, String, u32)>,
    /// The same positions by the route's static method and template (see [`labels`]).
    static_routes: ByStatic<(&'static str, &'static str), u32>,
    /// Attempts by static outcome label not yet added to `summary.status_counts`, whose
    /// search by text was a few `memcmp`s an attempt: added whenever the summary is read
    /// ([`Measurement::running`], [`Measurement::finish`]).
    status_pending: ByStatic<&'static str, u64>,
    /// The kinds of entries met, with what their labels decide (see [`kinds`]), and their
    /// attempts not yet added to `summary.status_counts` (as `status_pending`).
    kinds: Kinds,
    /// The run of like attempts being counted (see [`runs`]).
    run: Run,
    /// Tests only: look at every entry afresh, as an entry with a label made at run time
    /// is, to hold the kinds' facts to a fresh look's (and count each attempt alone, to
    /// hold runs to it).
    #[cfg(test)]
    no_kinds: bool,
    /// The tenant row last counted: its bucket, its tenant's position in the tenant
    /// grouping and its place in the bucket's rows. Consecutive attempts are mostly of one
    /// tenant in one bucket, and finding its row by name compared the name.
    last_tenant_row: Option<(usize, u32, usize)>,
    /// The route grouping's position of each action route's tally
    /// ([`action_route`], by `Route` as [`route_slot`] numbers them), once seen.
    action_routes: [Option<u32>; 3],
    /// Dead letters and case files of the actions that did not complete.
    cases: CaseFiles,
    /// Whether to keep them: a run that writes no files (a benchmark) keeps none.
    keep_cases: bool,
    /// Each provider's figures and cross-provider commits (a run with several providers).
    providers: providers::ProviderTally,
    /// The providers' names in index order (a run with several; empty otherwise).
    provider_names: Vec<String>,
    /// Retries by the failure group of the previous answer (from the journal).
    retry_groups: retry_groups::RetryGroups,
    /// Queues by priority and class, and each action's priority.
    queues: queues::Queues,
    /// Time between attempts of each logical request that ended (ms), as the core counted it.
    backoff: Distribution,
    /// What was billed, by model, and refusals by limit.
    billing: billing::Billing,
    /// The longest any tenant waited with work queued while others were served.
    starvation: starvation::Starvation,
    /// Agent runs as they end (`agent_runs`).
    agents: agents::AgentRuns,
    /// The wait given to each admission refusal (ms).
    refusal_waits: Distribution,
    /// The failure reason's name being counted, kept between terminals so writing one
    /// allocates nothing once the buffer has grown to the longest name.
    reason_name: String,
    /// Failures by reason name not yet added to `summary.failures_by_reason` (added
    /// whenever the summary is read, as `status_pending`), in the order first seen.
    reasons_pending: Vec<(String, u64)>,
    /// The reason last counted and its name's place in `reasons_pending`: failures come in
    /// runs of one reason, which then is counted without writing its name again or
    /// searching `reasons_pending` by text.
    last_reason: Option<(Reason, usize)>,
}

/// What the harness itself sent an attempt as: the tenant, class and priority it submitted
/// the action with (`""` when it cannot know), and which provider's journal the entry came
/// from. No numbering of actions or attempts, the harness's or the client's, reaches a
/// figure: the provider's journal decides which attempts are one logical request. The
/// harness's numbering goes only to attempts.csv's columns ([`crate::sink::attempts::Numbering`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct SentBy<'a> {
    /// The tenant the harness submitted the action for (`""` when it cannot know).
    pub tenant: &'a str,
    /// The class the harness submitted the action as (`""` when it cannot know).
    pub class: &'a str,
    /// The priority it submitted the action at (`""` when it cannot know):
    /// `queues::priority_name`.
    pub priority: &'static str,
    /// The provider the harness sent it to (its index in the run's provider list; 0 for a
    /// run with one).
    pub provider: u8,
    /// The key of the request's groups ([`Measurement::group_key`]) when the driver keeps
    /// one: its figures are then added by position. `None`: found from the names above.
    pub group: Option<GroupKey>,
}

/// What a driver knows when an action reaches its terminal outcome.
#[derive(Debug, Clone, Copy)]
pub struct Ended<'a> {
    /// When it ended (ms).
    pub at: Millis,
    /// The tenant that owns the action.
    pub tenant: &'a str,
    /// Its class, as the workload named it.
    pub class: &'a str,
    /// Its route, `METHOD /template` (see [`action_route`]).
    pub route: &'a str,
    /// Its terminal outcome, as the core reported it.
    pub terminal: &'a Terminal,
    /// When it arrived (ms): latency counts from here, admission refusals included.
    pub submitted_at: Millis,
    /// When its first attempt left (ms), if one did.
    pub first_sent_at: Option<Millis>,
    /// Its deadline (ms), if it has one.
    pub deadline: Option<Millis>,
    /// The key of its groups ([`Measurement::group_key`]) and its route, when the driver
    /// keeps them: its end is then added to its groups by position, without finding
    /// `tenant`, `class` and `route` by name again. `None`: found from the names.
    pub group: Option<(GroupKey, Route)>,
}

/// What a finished measurement hands to the report.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// The run's figures (`summary.json`).
    pub summary: Summary,
    /// `timeseries.csv`: one row per time bucket (`[measure] bucket`, ms).
    pub timeseries: Vec<TimeseriesRow>,
    /// `tenants.csv`: one row per tenant per time bucket.
    pub tenants: Vec<TenantRow>,
    /// Logical requests open at the cap, in action order (`unfinished.csv`).
    pub unfinished: Vec<UnfinishedRow>,
    /// Actions that did not complete, in the order they ended (`dead_letter.jsonl`,
    /// `escalations.jsonl`).
    pub cases: CaseFiles,
    /// When the client's process was down, `(crashed at, restarted at)` in ms: drawn as
    /// bands on the time plots beside the provider's faults.
    pub downs: Vec<(Millis, Millis)>,
    /// Retries per 100 ms over the run (bin `i` = `[i*100, (i+1)*100)` ms), for the page's
    /// panel of retry waves.
    pub retries_per_100ms: Vec<u64>,
}

/// `Route`'s place in [`Measurement`]'s small tables by action route.
fn route_slot(route: Route) -> usize {
    match route {
        Route::ChatCompletion => 0,
        Route::CreateRecord => 1,
        Route::GetItem => 2,
    }
}

/// Micro-dollars as dollars, exact to the micro-dollar in print.
pub fn usd(micro_usd: u64) -> f64 {
    micro_usd as f64 / 1_000_000.0
}

/// The route grouping's position of `METHOD /template` for a journal route, found in
/// `keys` by text (its key made and interned in `groups` at the route's first sight).
fn route_tally_by_text(
    keys: &mut Vec<(String, String, u32)>,
    groups: &mut Groups,
    method: &str,
    route: &str,
) -> u32 {
    if let Some(&(.., at)) = keys.iter().find(|(m, r, _)| m == method && r == route) {
        return at;
    }
    let at = groups.route(&format!("{method} {route}"));
    keys.push((method.to_string(), route.to_string(), at));
    at
}

/// Adds `n` to the count of `name` in `counts` (a summary's counts by status, by reason),
/// copying the name only the first time it is counted.
pub(crate) fn count_by_name(counts: &mut BTreeMap<String, u64>, name: &str, n: u64) {
    match counts.get_mut(name) {
        Some(count) => *count += n,
        None => {
            counts.insert(name.to_string(), n);
        }
    }
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
    /// A measurement with timeseries buckets of `bucket_ms`, for a run capped at `cap_ms`.
    pub fn new(bucket_ms: u64, cap_ms: u64) -> Self {
        Self {
            bucket_ms: bucket_ms.max(1),
            last_bucket: (0, 0, 0),
            summary: Summary::default(),
            latency: Distribution::default(),
            completed_latency: Distribution::default(),
            queue_wait: Distribution::default(),
            failed_latency: Distribution::default(),
            service: Distribution::default(),
            retry_bins: RetryBins::default(),
            rows: Vec::new(),
            bucket_latency: (None, Vec::new()),
            precision: percentiles::Precision::default(),
            tenants: Vec::new(),
            last_terminal_ms: 0,
            cap_ms,
            stopped_early: false,
            window_end_ms: 0,
            blind: blind_resends::BlindResends::default(),
            last_pushed_back: None,
            unfinished: BTreeMap::new(),
            groups: Groups::default(),
            errors: Errors::default(),
            bucket_service: Default::default(),
            bucket_queue_wait: Default::default(),
            backlog: Backlog::default(),
            route_keys: Vec::new(),
            static_routes: ByStatic::default(),
            status_pending: ByStatic::default(),
            kinds: Kinds::default(),
            run: Run::none(),
            #[cfg(test)]
            no_kinds: false,
            last_tenant_row: None,
            action_routes: [None; 3],
            cases: CaseFiles::default(),
            keep_cases: true,
            providers: providers::ProviderTally::default(),
            provider_names: Vec::new(),
            retry_groups: retry_groups::RetryGroups::default(),
            queues: queues::Queues::default(),
            backoff: Distribution::default(),
            billing: billing::Billing::default(),
            starvation: starvation::Starvation::default(),
            agents: agents::AgentRuns::default(),
            refusal_waits: Distribution::default(),
            reason_name: String::new(),
            reasons_pending: Vec::new(),
            last_reason: None,
        }
    }

    /// The run has several providers, `names` in index order: keep figures for each and
    /// count a logical request committed at two of them as a duplicate.
    pub fn name_providers(&mut self, names: &[String]) {
        self.providers = providers::ProviderTally::new(names);
        self.provider_names = names.to_vec();
    }

    fn bucket(&mut self, t: u64) -> usize {
        let (from, to, last) = self.last_bucket;
        if (from..to).contains(&t) {
            return last;
        }
        let index = t / self.bucket_ms;
        let bucket = usize::try_from(index).unwrap_or(usize::MAX);
        let from = index * self.bucket_ms;
        self.last_bucket = (from, from.saturating_add(self.bucket_ms), bucket);
        bucket
    }

    fn row(&mut self, t: u64) -> &mut TimeseriesRow {
        let i = self.bucket(t);
        self.row_in(i)
    }

    /// The timeseries row of bucket `i`, made (with those before it) when missing.
    #[inline]
    fn row_in(&mut self, i: usize) -> &mut TimeseriesRow {
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

    /// The place of the row of `tenant` in the bucket of `t`, `i`, among the bucket's
    /// tenant rows (made when missing). `position`: the tenant's place in the tenant
    /// grouping, when the caller knows it: the row last counted is then found again
    /// without comparing names.
    #[inline]
    fn tenant_row_place(
        &mut self,
        (t, i): (u64, usize),
        tenant: &str,
        position: Option<u32>,
    ) -> usize {
        debug_assert_eq!(i, self.bucket(t));
        let row = match (position, self.last_tenant_row) {
            (Some(pos), Some((bucket, last, row))) if bucket == i && last == pos => row,
            _ => {
                let (i, row) = self.tenant_row_index(t, tenant);
                self.last_tenant_row = position.map(|pos| (i, pos, row));
                row
            }
        };
        debug_assert_eq!(
            self.tenants[i][row].tenant, tenant,
            "a position names one tenant"
        );
        row
    }

    /// Where the row of `tenant` in the bucket of `t` is, `(bucket, place)`, made when
    /// missing.
    fn tenant_row_index(&mut self, t: u64, tenant: &str) -> (usize, usize) {
        let i = self.bucket(t);
        debug_assert!(i < self.rows.len(), "the bucket's timeseries row exists");
        if i >= self.tenants.len() {
            self.tenants.resize_with(i + 1, Vec::new);
        }
        let rows = &mut self.tenants[i];
        // Found by `&str`: a tenant's name is copied once per bucket, not per attempt.
        let row = match rows.iter().position(|r| r.tenant == tenant) {
            Some(row) => row,
            None => {
                rows.push(TenantRow {
                    t_ms: i as u64 * self.bucket_ms,
                    tenant: tenant.to_string(),
                    ..TenantRow::default()
                });
                rows.len() - 1
            }
        };
        (i, row)
    }

    /// A logical action was submitted.
    pub fn on_submit(&mut self) {
        self.summary.logical_requests += 1;
    }

    /// Job `job` of `tenant` arrived at `at` (ms): it waits in its tenant's queue until
    /// first sent (see `starvation`). `job` here and below is the harness's own id of the
    /// action, from its arrival record (the workload's, or the core's `Send` and terminal
    /// that carry it back): a figure keyed by it is a client-side figure (a queue, a wait)
    /// that no attempt on the wire, and so no provider, can decide.
    pub fn on_tenant_arrival(&mut self, job: JobId, tenant: &str, at: Millis) {
        self.starvation.arrive(job, tenant, at);
    }

    /// Job `job` of `priority` and `class` arrived (after [`Measurement::on_submit`],
    /// before admission takes it or not): it counts in its queue until first sent, and its
    /// attempts and outcome count under its priority.
    pub fn on_arrival(&mut self, job: JobId, priority: stampede_core::Priority, class: &str) {
        self.queues.arrive(job, priority, class);
    }

    /// Job `job` was sent before this process took it over (restored from a ledger): it
    /// leaves its queue with no queue wait measured.
    pub fn on_sent_before(&mut self, job: JobId) {
        self.queues.ended_unsent(job, None);
        self.starvation.ended_unsent(job);
    }

    /// Admission refused action `id` for `cause` (`queue_full`, `execution_budget_spent`,
    /// ...) and the driver held it back to offer it again (backpressure). `rejected` counts
    /// each action pushed back at least once, `rejected_by_reason` its first refusal's cause.
    pub fn on_pushed_back(&mut self, id: u64, cause: &str, wait_ms: u64) {
        self.refusal_waits.record(wait_ms);
        if self.last_pushed_back != Some(id) {
            self.last_pushed_back = Some(id);
            self.summary.rejected += 1;
            count_by_name(&mut self.summary.rejected_by_reason, cause, 1);
        }
    }

    /// The client reports `n` attempts whose token usage stayed unknown (kept at the upper
    /// estimate, marked uncertain), at the run's end.
    pub fn on_uncertain_usage(&mut self, n: u64) {
        self.summary.uncertain_usage = n;
    }

    /// The figures so far, as they stand mid-run: counts only (ratios, percentiles, waves
    /// and the service window are filled by [`Measurement::finish`]). What an expectation
    /// with `abort = true` watches. It takes `&mut self` because the status counts kept
    /// aside by static label (see `labels`) are added to the summary first.
    pub fn running(&mut self) -> &Summary {
        self.add_pending_statuses();
        &self.summary
    }

    /// Adds the attempts counted by static outcome label and by kind since the last call
    /// to `summary.status_counts`, and the failures counted by reason to
    /// `summary.failures_by_reason`; writes the run of attempts being counted.
    fn add_pending_statuses(&mut self) {
        self.end_run();
        for (label, n) in self.status_pending.iter_mut() {
            if *n > 0 {
                count_by_name(&mut self.summary.status_counts, label, std::mem::take(n));
            }
        }
        for (label, n) in self.kinds.take_pending() {
            if n > 0 {
                count_by_name(&mut self.summary.status_counts, label, n);
            }
        }
        for (name, n) in &mut self.reasons_pending {
            if *n > 0 {
                count_by_name(
                    &mut self.summary.failures_by_reason,
                    name,
                    std::mem::take(n),
                );
            }
        }
    }

    /// Logical requests submitted so far.
    pub fn logical_requests(&self) -> u64 {
        self.summary.logical_requests
    }

    /// Job `job`, submitted at `submitted_at` (ms), sent its first attempt at `at` (ms):
    /// its queue wait ends, and it leaves the backlog.
    pub fn on_first_dispatch(&mut self, job: JobId, submitted_at: Millis, at: Millis) {
        let wait_ms = at.saturating_sub(submitted_at);
        self.queue_wait.record(wait_ms);
        let (arrived, sent) = (self.bucket(submitted_at), self.bucket(at));
        self.queues.sent(job, wait_ms, (arrived, sent));
        self.starvation.sent(job, at);
        let (open, closed) = &mut self.bucket_queue_wait;
        closed.extend(open.record(sent, wait_ms));
        self.backlog.sent(job, arrived, sent);
    }

    /// The client moved an action to a fallback route for `reason`
    /// (`FallbackWhen::label`).
    /// `(from, to)` name the providers it left and moved to.
    pub fn on_fallback(&mut self, reason: &'static str, (from, to): (&str, &str)) {
        *self
            .summary
            .fallbacks
            .entry(reason.to_string())
            .or_insert(0) += 1;
        let routes = &mut self.summary.fallback_routes;
        match routes
            .iter_mut()
            .find(|r| r.reason == reason && r.from_provider == from && r.to_provider == to)
        {
            Some(r) => r.count += 1,
            None => {
                routes.push(stampede_reports::FallbackRouteCount {
                    from_provider: from.to_string(),
                    to_provider: to.to_string(),
                    reason: reason.to_string(),
                    count: 1,
                });
                routes.sort();
            }
        }
    }

    /// The agent runs' tally (see [`agents::AgentRuns`]).
    pub fn agents(&mut self) -> &mut agents::AgentRuns {
        &mut self.agents
    }

    /// An improvising agent sent a changed request (`reorder`, `filter`, `nearby`), or
    /// stopped on the breaker's constraint (`stopped`).
    pub fn on_improvised(&mut self, change: &'static str) {
        *self
            .summary
            .improvised
            .entry(change.to_string())
            .or_insert(0) += 1;
    }

    /// The client served an action degraded by `rung` (`RungKind::label`): shaped at its
    /// first send, or answered from cache.
    pub fn on_degraded(&mut self, rung: &'static str) {
        *self.summary.degraded.entry(rung.to_string()).or_insert(0) += 1;
    }

    /// The key of the groups of a request the harness submitted for `tenant` as `class` at
    /// `priority`: a driver makes it once per action and hands it back with each attempt,
    /// so no attempt compares names.
    pub fn group_key(&mut self, tenant: &str, class: &str, priority: Priority) -> GroupKey {
        self.groups
            .key(class, tenant, queues::priority_name(priority))
    }

    /// The client reserved `tokens` for an attempt of a request of groups `key` on `route`.
    pub fn on_reserved(&mut self, key: GroupKey, route: Route, tokens: u32) {
        self.summary.tokens_reserved += u64::from(tokens);
        let at = self.route_position(route);
        self.groups.reserved_at((key, at), u64::from(tokens));
    }

    /// The position of an action route's tally in `by_route`, found by name once per route.
    fn route_position(&mut self, route: Route) -> u32 {
        let slot = &mut self.action_routes[route_slot(route)];
        match *slot {
            Some(at) => at,
            None => *slot.insert(self.groups.route(action_route(route))),
        }
    }

    /// An action reached its terminal outcome (see [`Ended`]).
    pub fn on_terminal(&mut self, ended: Ended<'_>) {
        let Ended {
            at,
            tenant,
            class,
            route,
            terminal,
            submitted_at,
            first_sent_at,
            deadline,
            group,
        } = ended;
        let latency_ms = at.saturating_sub(submitted_at);
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
        if !matches!(
            terminal.status,
            TerminalStatus::Completed | TerminalStatus::Cancelled
        ) {
            self.count_reason(&terminal.reason);
        }
        self.backoff.record(terminal.waited_ms);
        self.summary.backoff_ms.total += terminal.waited_ms;
        if first_sent_at.is_none() {
            let spent = (self.bucket(submitted_at), self.bucket(at));
            self.queues.ended_unsent(terminal.job, Some(spent));
            self.starvation.ended_unsent(terminal.job);
        }
        let cancelled = terminal.status == TerminalStatus::Cancelled;
        let missed_deadline = !cancelled && deadline.is_some_and(|d| at > d);
        if let Reason::Degraded { rung } = terminal.reason {
            self.on_degraded(rung.label());
        }
        if missed_deadline
            || matches!(
                terminal.reason,
                Reason::DeadlineExceeded | Reason::DeadlinePassed
            )
        {
            self.summary.deadline_misses += 1;
        }
        let completed = terminal.status == TerminalStatus::Completed;
        // The service window: a request that did not complete is unserved until its deadline
        // (or the cap), however early the client gave up on it.
        let served_until = if completed || cancelled {
            at
        } else {
            deadline.unwrap_or(self.cap_ms).min(self.cap_ms).max(at)
        };
        self.window_end_ms = self.window_end_ms.max(served_until);
        if completed {
            self.completed_latency.record(latency_ms);
            if let Some(sent) = first_sent_at {
                self.service.record(at.saturating_sub(sent));
            }
        }
        // As `latency_ms` counts it: unanswered until the deadline when not completed.
        let counted_latency = if completed {
            Some(latency_ms)
        } else if cancelled {
            None
        } else {
            Some(self.unanswered_ms(submitted_at, deadline).max(latency_ms))
        };
        if let (false, false, Some(ms)) = (completed, cancelled, counted_latency) {
            self.failed_latency.record(latency_ms);
            self.latency.record(ms);
        }
        let priority = self.queues.priority_of(terminal.job);
        let named = Group {
            tenant,
            class,
            route,
        };
        let at_groups = match group {
            Some((key, action)) => {
                let at = (key, self.route_position(action));
                debug_assert_eq!(
                    at,
                    self.groups.at(named, priority),
                    "the driver's key names the groups of {tenant}, {class}, {route}, {priority}"
                );
                at
            }
            None => self.groups.at(named, priority),
        };
        self.groups.end_at(
            at_groups,
            GroupEnd::Terminal {
                status: terminal.status,
                latency_ms: counted_latency,
                queue_wait_ms: first_sent_at.map(|s| s.saturating_sub(submitted_at)),
            },
        );
        let (arrived, ended) = (self.bucket(submitted_at), self.bucket(at));
        self.backlog.ended(terminal.job, arrived, Some(ended));
        self.last_terminal_ms = self.last_terminal_ms.max(at);
        let row = self.row(at);
        if completed {
            row.completed += 1;
        } else {
            row.failed += 1;
        }
        if completed {
            let b = self.bucket(at);
            let position = group.map(|(key, _)| key.tenant());
            let place = self.tenant_row_place((at, b), tenant, position);
            self.tenants[b][place].completed += 1;
            if self.bucket_latency.0 != Some(b) {
                self.flush_bucket_latency();
                self.bucket_latency.0 = Some(b);
            }
            self.bucket_latency.1.push(latency_ms);
        }
    }

    /// Counts a failure for `reason` (into `reasons_pending`).
    #[inline]
    fn count_reason(&mut self, reason: &Reason) {
        match &self.last_reason {
            Some((last, at)) if last == reason => self.reasons_pending[*at].1 += 1,
            _ => self.count_other_reason(reason),
        }
    }

    /// [`Measurement::count_reason`] for a reason other than the one counted last.
    #[cold]
    #[inline(never)]
    fn count_other_reason(&mut self, reason: &Reason) {
        let name = &mut self.reason_name;
        crate::driver_common::case_file::write_reason_name(reason, name);
        let at = match self.reasons_pending.iter().position(|(n, _)| n == name) {
            Some(at) => at,
            None => {
                self.reasons_pending.push((name.clone(), 0));
                self.reasons_pending.len() - 1
            }
        };
        self.reasons_pending[at].1 += 1;
        self.last_reason = Some((reason.clone(), at));
    }

    /// The run stopped early at `at` (ms), interrupted: what is still open counts as
    /// unserved until then, not until the scenario's cap, which the run never reached (an
    /// interrupted run at 89 s read a latency p99 of 1,112 s and a service window of the
    /// whole 20 minutes).
    pub fn stopped_early(&mut self, at: Millis) {
        self.cap_ms = self.cap_ms.min(at);
        self.stopped_early = true;
    }

    /// A logical request of a client that is not ours (`--client`), judged from the journal
    /// alone: its first attempt reached the provider at `first_at` (ms; `None`: it never
    /// did), and the provider delivered a 2xx answer to it at `answered_at`, if ever. Its
    /// latency counts from that first arrival: the client's own queue is invisible here.
    pub fn on_external(&mut self, first_at: Option<Millis>, answered_at: Option<Millis>) {
        match (first_at, answered_at) {
            (Some(first), Some(done)) => {
                self.summary.completed += 1;
                let latency = done.saturating_sub(first);
                self.completed_latency.record(latency);
                self.service.record(latency);
                self.window_end_ms = self.window_end_ms.max(done);
                self.last_terminal_ms = self.last_terminal_ms.max(done);
                self.row(done).completed += 1;
            }
            (first, _) => {
                self.summary.failed += 1;
                let first = first.unwrap_or(0);
                self.latency.record(self.unanswered_ms(first, None));
                self.window_end_ms = self.window_end_ms.max(self.cap_ms);
            }
        }
    }

    /// The latency a request that never completed counts with: it was unanswered until its
    /// deadline, or the scenario's cap when it has none (ms from arrival).
    fn unanswered_ms(&self, submitted_at: Millis, deadline: Option<Millis>) -> u64 {
        deadline
            .unwrap_or(self.cap_ms)
            .min(self.cap_ms)
            .saturating_sub(submitted_at)
    }

    /// Job `job` of `group` was still open when the run stopped at `now` (ms): never
    /// finished, so neither completed nor failed. `sent`: an attempt of it left, so it may
    /// have executed (in flight or awaiting reconciliation): look it up before running it
    /// again.
    pub fn on_unfinished(
        &mut self,
        now: Millis,
        (job, group): (JobId, Group<'_>),
        submitted_at: Millis,
        deadline: Option<Millis>,
        sent: bool,
    ) {
        self.summary.unfinished += 1;
        self.summary.unfinished_sent += u64::from(sent);
        if deadline.is_some_and(|d| d < now) {
            self.summary.deadline_misses += 1;
        }
        let waited = now.saturating_sub(submitted_at);
        let latency_ms = self.unanswered_ms(submitted_at, deadline).max(waited);
        self.latency.record(latency_ms);
        let priority = self.queues.priority_of(job);
        self.groups
            .end(group, priority, GroupEnd::Unfinished { latency_ms });
        let arrived = self.bucket(submitted_at);
        self.backlog.ended(job, arrived, None);
        self.queues.open_at_end(job, arrived);
        self.window_end_ms = self.window_end_ms.max(now);
    }

    /// Lists open request `job` in `unfinished.csv` (after [`Measurement::on_unfinished`]).
    /// Its `action` column is `job`, the harness's own id from its arrival record, set
    /// here whatever the row says, so no claim can reach it; its next safe action follows
    /// from whether it was sent (one sent may have executed: look it up before retrying).
    pub fn list_unfinished(&mut self, job: JobId, row: UnfinishedRow) {
        let next = if row.sent {
            "look_up_before_retrying"
        } else {
            "submit_again"
        };
        let listed = UnfinishedRow {
            action: job,
            next_safe_action: next.to_string(),
            ..row
        };
        let before = self.unfinished.insert(job, listed);
        debug_assert!(before.is_none(), "open request {job} listed twice");
    }

    /// Keeps a dead letter (and a case file, when a person must decide) for an action that
    /// ended with `terminal` without completing; nothing for one that completed.
    pub fn on_case(&mut self, terminal: &Terminal, notes: CaseNotes, ending: &Ending<'_>) {
        if self.keep_cases {
            self.cases.on_terminal(terminal, notes, ending);
        }
    }

    /// Whether to keep dead letters and case files (on by default): a run that writes no
    /// run directory has nowhere to put them.
    pub fn keep_cases(&mut self, keep: bool) {
        self.keep_cases = keep;
    }

    /// [`Measurement::on_case`] for an action of `job` whose attempts no notes followed
    /// (see `CaseFiles::on_unseen_terminal`); `(submitted, ended)` in ms.
    pub fn on_unseen_case(&mut self, terminal: &Terminal, job: &Job, span: (Millis, Millis)) {
        if self.keep_cases {
            self.cases.on_unseen_terminal(terminal, job, span);
        }
    }

    fn flush_bucket_latency(&mut self) {
        if let Some(idx) = self.bucket_latency.0.take() {
            let mut values = std::mem::take(&mut self.bucket_latency.1);
            let (p50, p99) = self.precision.p50_p99(&mut values);
            values.clear();
            self.bucket_latency.1 = values;
            let row = self.row(idx as u64 * self.bucket_ms);
            row.latency_p50_ms = p50;
            row.latency_p99_ms = p99;
        }
    }

    /// Client gauges at the end of the bucket holding `t`.
    pub fn on_gauges(&mut self, t: u64, queued: u64, in_flight: u64, tokens_reserved: u64) {
        let row = self.row(t);
        row.queue_depth = queued;
        row.in_flight = in_flight;
        row.tokens_reserved = tokens_reserved;
    }

    /// One journal entry: an attempt at the provider's edge. `client_done_ms` fills the end
    /// of a hang, which only the client's timeout knows. `by` is the harness's own record of
    /// who it sent for (empty when it cannot know, as for a `--client` process), never the
    /// client's `x-stampede-*` claims: the journal keeps those, and only `claim_mismatches`
    /// reads them (from the provider's flag).
    ///
    /// Every figure here is the provider's: which attempts are one logical request, which
    /// commit is a duplicate, who came back early. The attempts.csv row is the driver's to
    /// write (`sink::attempts::write`). It moves the run's figures, its provider's, its
    /// model's and its retry group's.
    pub fn on_journal(&mut self, e: &JournalEntry, client_done_ms: Option<u64>, by: &SentBy<'_>) {
        // `claim_mismatches` is the summary's one key about the client's claims: the
        // provider's own flag of an attempt claim that disagreed with its count, added here
        // from the entry and kept out of the view every figure is computed from.
        self.summary.claim_mismatches += u64::from(e.claim_mismatch);
        // The provider's side of it only: no figure below can read the client's claims.
        let e = &Decided::from(e);
        let facts = self.facts(e);
        self.observe_journal(e, facts, client_done_ms, by);
        let cross = self.observe_providers(e, by.provider, facts.duplicate_write);
        self.billing.observe(e, e.duplicate() || cross, facts.limit);
        self.retry_groups.observe_as(by.provider, e, facts.group);
    }

    /// What the labels, status and flags of `e` decide, found by its kind (see [`kinds`])
    /// when its labels are statics; its attempt is counted by status here.
    #[inline]
    fn facts(&mut self, e: &Decided<'_>) -> Facts {
        #[cfg(test)]
        if self.no_kinds {
            return self.facts_afresh(e);
        }
        if let Some(facts) = self.kinds.count_last(e) {
            return *facts;
        }
        self.facts_of_kind(e)
    }

    /// [`Measurement::facts`] of an entry not of the kind met last.
    #[cold]
    #[inline(never)]
    fn facts_of_kind(&mut self, e: &Decided<'_>) -> Facts {
        let Some(key) = KindKey::of(e) else {
            return self.facts_afresh(e);
        };
        if let Some(facts) = self.kinds.count_other(&key) {
            return facts;
        }
        let facts = self.facts_of(e);
        self.kinds.count_new(key, facts)
    }

    /// [`Measurement::facts`] of an entry looked at afresh (a label made at run time), its
    /// attempt counted by its outcome's text.
    #[cold]
    #[inline(never)]
    fn facts_afresh(&mut self, e: &Decided<'_>) -> Facts {
        match e.statics().outcome {
            Some(label) => *self.status_pending.get_or_insert_with(label, || 0) += 1,
            None => count_by_name(&mut self.summary.status_counts, e.outcome(), 1),
        }
        self.facts_of(e)
    }

    /// What the labels, status and flags of `e` decide, worked out (its tallies made on
    /// first sight).
    fn facts_of(&mut self, e: &Decided<'_>) -> Facts {
        let answered = answered_success(e.status(), e.outcome());
        let success = answered && !e.undelivered();
        let error_at = if success {
            usize::MAX
        } else {
            // A success whose answer the client never took (it had gone: a timeout shorter
            // than the provider's latency) is not one for the client: an error.
            let (message, statics) = if answered {
                let statics = e.statics().outcome.map(|outcome| (outcome, "undelivered"));
                ("undelivered", statics)
            } else {
                let statics = e.statics().outcome.zip(e.statics().error_code);
                (e.error_code().unwrap_or_default(), statics)
            };
            self.errors.place(e.outcome(), message, statics)
        };
        Facts {
            route: self.route_tally(e),
            success,
            error_at,
            create: blind_resends::is_create(e),
            lookup: blind_resends::is_lookup(e),
            unsure: e.committed() || blind_resends::leaves_client_unsure(e),
            group: retry_groups::group_of(e),
            limit: e.limit().map(billing::limit_index),
            duplicate_write: e.route() == "/v1/records",
            undelivered: e.undelivered(),
            column: Column::of(e.status(), success),
            kind: NO_KIND,
        }
    }

    /// A run with several providers: entry `e` of provider `provider`'s journal. A commit
    /// of a request another provider already committed, by the providers' own identity (its
    /// Idempotency-Key, else its fingerprint: see `providers::ProviderTally`), is counted a
    /// duplicate here, with its tokens.
    /// `write`: a duplicate of `e` is a duplicate write (its kind's [`Facts::duplicate_write`]).
    #[inline]
    fn observe_providers(&mut self, e: &Decided<'_>, provider: u8, write: bool) -> bool {
        if !self.providers.active() {
            return false;
        }
        self.observe_several_providers(e, provider, write)
    }

    /// [`Measurement::observe_providers`] in a run with several providers.
    #[inline(never)]
    fn observe_several_providers(&mut self, e: &Decided<'_>, provider: u8, write: bool) -> bool {
        self.providers.billed(provider, e.billed_micro_usd());
        let cross = self.providers.observe(provider, e).duplicate;
        if cross {
            let s = &mut self.summary;
            s.cross_provider_duplicates += 1;
            s.duplicates += 1;
            if write {
                s.duplicate_writes += 1;
            } else {
                s.duplicate_completions += 1;
            }
            s.duplicate_tokens += e.tokens_used();
        }
        cross
    }

    /// Every figure an attempt moves, from the provider's journal entry alone: which logical
    /// request it belongs to and which attempt of it, as the provider decided. `by` says
    /// who the harness submitted it for: its tenant, class and priority (tenants.csv, the
    /// outcome tables), and the key of its groups when the driver keeps one. The
    /// harness's numbering is not passed in, and the entry comes as a [`Decided`], which has
    /// no field for the client's claimed headers, so no figure can read them.
    /// `client_done_ms` ends a hang.
    fn observe_journal(
        &mut self,
        e: &Decided<'_>,
        f: Facts,
        client_done_ms: Option<u64>,
        by: &SentBy<'_>,
    ) {
        // Its bucket, found once for the service time, the timeseries row and the tenant's.
        let bucket = self.bucket(e.at_ms());
        // A success whose answer the client never took is an error (see `facts_of`), and in
        // the time series with the attempts that got no whole answer.
        if f.success {
            let done = if e.done_ms() == 0 {
                client_done_ms.unwrap_or(e.at_ms())
            } else {
                e.done_ms()
            };
            let (open, closed) = &mut self.bucket_service;
            closed.extend(open.record(bucket, done.saturating_sub(e.at_ms())));
        }
        // Neither a create nor a look-up moves no write's fate.
        if f.create || f.lookup {
            let blind = self.blind.observe_as(e, (f.create, f.lookup, f.unsure));
            self.summary.blind_resends += u64::from(blind);
        }
        if e.logical_attempt() > 1 {
            self.retry_bins.record(e.at_ms());
        }
        match by.group {
            Some(key) if f.kind != NO_KIND => self.count_in_run(e, f, (bucket, key), by.tenant),
            _ => self.count_alone(e, f, bucket, by),
        }
    }

    /// Counts `e`'s attempt in the run of like attempts (see [`runs`]): `bucket` is its
    /// bucket, `key` its groups, `tenant` its tenant's name. A run of another kind, bucket
    /// or groups is written first.
    #[inline]
    fn count_in_run(
        &mut self,
        e: &Decided<'_>,
        f: Facts,
        (bucket, key): (usize, GroupKey),
        tenant: &str,
    ) {
        let at = RunAt {
            kind: f.kind,
            bucket,
            key,
        };
        if self.run.at != at {
            self.start_run(at, e.at_ms(), tenant);
        }
        let run = &mut self.run;
        run.attempts += 1;
        run.retries += u64::from(e.logical_attempt() > 1);
        run.firsts += u64::from(e.logical_attempt() == 1);
        run.retry_after_violations += u64::from(e.retry_after_violation());
        run.scope_wait_violations += u64::from(e.scope_wait_violation());
        run.tokens_used += e.tokens_used();
        run.duplicates += u64::from(e.duplicate());
        run.duplicate_tokens += e.duplicate_tokens();
        run.replays += u64::from(e.replayed());
        run.first_ms = run.first_ms.min(e.at_ms());
        run.last_ms = run.last_ms.max(e.at_ms());
    }

    /// Writes the run being counted and opens one at `at`, for an attempt that arrived at
    /// `at_ms` for `tenant`: its timeseries row and its tenant's row are made now, as
    /// counting the attempt alone makes them.
    #[cold]
    #[inline(never)]
    fn start_run(&mut self, at: RunAt, at_ms: u64, tenant: &str) {
        self.end_run();
        self.row_in(at.bucket);
        let tenant_row = self.tenant_row_place((at_ms, at.bucket), tenant, Some(at.key.tenant()));
        self.run = Run::starting(at, tenant_row);
    }

    /// Adds the run being counted to its figures, and leaves none open.
    fn end_run(&mut self) {
        let run = std::mem::replace(&mut self.run, Run::none());
        if run.attempts == 0 {
            return;
        }
        let f = self.kinds.facts_at(run.at.kind);
        let n = run.attempts;
        self.groups
            .attempts_at((run.at.key, f.route), (n, run.tokens_used, run.replays));
        if !f.success {
            self.errors
                .count_n_at(f.error_at, n, (run.first_ms, run.last_ms));
        }
        let s = &mut self.summary;
        s.duplicates_suppressed += run.replays;
        s.outbound_attempts += n;
        s.retries += run.retries;
        s.provider_logical_requests += run.firsts;
        s.retry_after_violations += run.retry_after_violations;
        s.scope_wait_violations += run.scope_wait_violations;
        if f.lookup {
            s.reconciliations += n;
        }
        s.tokens_used += run.tokens_used;
        s.duplicates += run.duplicates;
        if f.duplicate_write {
            s.duplicate_writes += run.duplicates;
        } else {
            s.duplicate_completions += run.duplicates;
        }
        s.duplicate_tokens += run.duplicate_tokens;
        if f.undelivered {
            s.undelivered_tokens += run.tokens_used;
        }
        let row = &mut self.rows[run.at.bucket];
        row.attempts += n;
        row.retries += run.retries;
        f.column.count(row, n);
        row.tokens_used += run.tokens_used;
        self.tenants[run.at.bucket][run.tenant_row].attempts += n;
    }

    /// Counts `e`'s attempt by itself, in every figure a run adds up (see [`runs`]): an
    /// entry with no kind, or one sent for groups the driver did not key.
    #[cold]
    #[inline(never)]
    fn count_alone(&mut self, e: &Decided<'_>, f: Facts, bucket: usize, by: &SentBy<'_>) {
        let key = match by.group {
            Some(key) => key,
            None => self.groups.key(by.class, by.tenant, by.priority),
        };
        self.groups
            .attempt_at((key, f.route), e.tokens_used(), e.replayed());
        if !f.success {
            self.errors.count_at(f.error_at, e.at_ms());
        }
        let s = &mut self.summary;
        s.duplicates_suppressed += u64::from(e.replayed());
        s.outbound_attempts += 1;
        let retry = e.logical_attempt() > 1;
        if retry {
            s.retries += 1;
        }
        s.provider_logical_requests += u64::from(e.logical_attempt() == 1);
        s.retry_after_violations += u64::from(e.retry_after_violation());
        s.scope_wait_violations += u64::from(e.scope_wait_violation());
        if f.lookup {
            s.reconciliations += 1;
        }
        s.tokens_used += e.tokens_used();
        if e.duplicate() {
            s.duplicates += 1;
            if f.duplicate_write {
                s.duplicate_writes += 1;
            } else {
                s.duplicate_completions += 1;
            }
        }
        s.duplicate_tokens += e.duplicate_tokens();
        if e.undelivered() {
            s.undelivered_tokens += e.tokens_used();
        }
        let row = self.row_in(bucket);
        row.attempts += 1;
        if retry {
            row.retries += 1;
        }
        f.column.count(row, 1);
        row.tokens_used += e.tokens_used();
        let tenant_at = by.group.map(GroupKey::tenant);
        let place = self.tenant_row_place((e.at_ms(), bucket), by.tenant, tenant_at);
        self.tenants[bucket][place].attempts += 1;
    }

    /// The route grouping's position of entry `e`'s `METHOD /template`: by the static
    /// labels when the provider wrote them from its tables, else by text.
    fn route_tally(&mut self, e: &Decided<'_>) -> u32 {
        let (keys, groups) = (&mut self.route_keys, &mut self.groups);
        let mut by_text = || route_tally_by_text(keys, groups, e.method(), e.route());
        match e.statics().method.zip(e.statics().route) {
            Some(statics) => *self.static_routes.get_or_insert_with(statics, by_text),
            None => by_text(),
        }
    }

    /// Writes the per-bucket percentiles and the backlog into the rows the run made (never
    /// adding a row).
    fn fill_bucket_figures(&mut self) {
        let (mut open, mut service) = std::mem::take(&mut self.bucket_service);
        service.extend(open.finish());
        for (b, p50, p99) in service {
            if let Some(row) = self.rows.get_mut(b) {
                (row.service_p50_ms, row.service_p99_ms) = (p50, p99);
            }
        }
        let (mut open, mut waits) = std::mem::take(&mut self.bucket_queue_wait);
        waits.extend(open.finish());
        for (b, p50, p99) in waits {
            if let Some(row) = self.rows.get_mut(b) {
                (row.queue_wait_p50_ms, row.queue_wait_p99_ms) = (p50, p99);
            }
        }
        let levels = self.backlog.levels(self.rows.len());
        for (row, level) in self.rows.iter_mut().zip(levels) {
            row.backlog = level;
        }
    }

    /// Closes the run at `end_ms`, after every action still open was reported with
    /// [`Measurement::on_unfinished`].
    pub fn finish(mut self, end_ms: u64) -> Measured {
        self.add_pending_statuses();
        self.flush_bucket_latency();
        self.fill_bucket_figures();
        let mut s = self.summary;
        let unfinished = s.unfinished;
        s.mode = "virtual".to_string();
        s.virtual_duration_ms = if unfinished > 0 {
            end_ms
        } else {
            self.last_terminal_ms
        };
        // Unfinished requests were not served by the end of the run.
        let window = if unfinished > 0 {
            self.window_end_ms.max(end_ms)
        } else {
            self.window_end_ms
        };
        // A failure before the stop held the window open to its deadline, past the stop.
        let window = if self.stopped_early {
            window.min(self.cap_ms.max(self.last_terminal_ms))
        } else {
            window
        };
        s.goodput_window_ms = window;
        s.attempts_per_logical = round4(if s.logical_requests == 0 {
            0.0
        } else {
            s.outbound_attempts as f64 / s.logical_requests as f64
        });
        s.goodput_per_min = round4(if window == 0 {
            0.0
        } else {
            s.completed as f64 * 60_000.0 / window as f64
        });
        s.retry_waves = self.retry_bins.waves(s.virtual_duration_ms);
        s.peak_retries_per_100ms = self.retry_bins.peak();
        self.latency.add(&self.completed_latency);
        s.latency_ms = self.latency.percentiles();
        s.completed_latency_ms = self.completed_latency.percentiles();
        s.failed_latency_ms = self.failed_latency.percentiles();
        s.service_ms = self.service.percentiles();
        s.queue_wait_ms = self.queue_wait.percentiles();
        [s.by_class, s.by_tenant, s.by_route, s.by_priority] = self.groups.finish(window);
        s.errors = self.errors.finish();
        self.providers.finish(&mut s);
        self.billing.finish(&mut s);
        (s.starvation_ms, s.starved_tenant) = self.starvation.finish(end_ms);
        s.retries_by_group = self.retry_groups.total();
        for (ix, name) in self.provider_names.iter().enumerate() {
            if let (Some(f), Ok(ix)) = (s.by_provider.get_mut(name), u8::try_from(ix)) {
                f.retries_by_group = self.retry_groups.of_provider(ix);
            }
        }
        let backoff = self.backoff.percentiles();
        s.backoff_ms = stampede_reports::Backoff {
            total: s.backoff_ms.total,
            p50: backoff.p50,
            p95: backoff.p95,
            p99: backoff.p99,
            max: backoff.max,
        };
        s.queues = self.queues.finish();
        s.agent_runs = self.agents.finish();
        if !self.refusal_waits.is_empty() {
            let given = self.refusal_waits.percentiles();
            s.refusal_wait_ms = stampede_reports::WaitsGiven {
                count: self.refusal_waits.len(),
                p50: given.p50,
                p99: given.p99,
                max: given.max,
            };
        }
        Measured {
            summary: s,
            timeseries: self.rows,
            tenants: self
                .tenants
                .into_iter()
                .flat_map(|mut rows| {
                    rows.sort_by(|a, b| a.tenant.cmp(&b.tenant));
                    rows
                })
                .collect(),
            unfinished: self.unfinished.into_values().collect(),
            cases: self.cases,
            downs: Vec::new(),
            retries_per_100ms: self.retry_bins.bins(),
        }
    }
}

/// Whether an attempt was answered with success: a 2xx whose outcome is the status alone
/// (a stream cut after its 200 is not). Whether the client took the answer is apart
/// (`undelivered`).
pub(crate) fn answered_success(status: Option<u16>, outcome: &str) -> bool {
    matches!(status, Some(200..=299)) && outcome.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Measurement;

    proptest! {
        /// The bucket last found is reused only inside the ms it spans: times forwards,
        /// backwards, on and beside a boundary all find the bucket a division gives.
        #[test]
        fn a_time_finds_the_bucket_a_division_gives(
            width in 1u64..5_000,
            times in proptest::collection::vec(
                prop_oneof![0u64..20_000, Just(0), Just(u64::MAX), (1u64..5).prop_map(|k| k * 1_000)],
                1..100,
            ),
        ) {
            let mut measure = Measurement::new(width, 60_000);
            for t in times {
                let want = usize::try_from(t / width).unwrap_or(usize::MAX);
                prop_assert_eq!(measure.bucket(t), want, "{} ms in buckets of {} ms", t, width);
            }
        }
    }

    proptest! {
        /// Failures counted by the reason last seen and added when the summary is read are
        /// the counts of naming every failure as it comes: for any series of reasons
        /// (runs, alternations, one variant with two statuses), read at any point.
        #[test]
        fn failures_by_reason_are_each_failure_named(
            series in proptest::collection::vec((0usize..5, proptest::bool::ANY), 0..60),
        ) {
            use std::collections::BTreeMap;
            use stampede_core::Reason;
            let reasons = [
                Reason::DeadlineExceeded,
                Reason::AttemptsExhausted,
                Reason::WontImprove { status: 422, code: None },
                Reason::WontImprove { status: 500, code: None },
                Reason::CircuitOpen { fingerprint: "f".into() },
            ];
            let mut measure = Measurement::new(1_000, 60_000);
            let mut named: BTreeMap<String, u64> = BTreeMap::new();
            for (which, read) in series {
                let reason = &reasons[which];
                measure.count_reason(reason);
                *named
                    .entry(crate::driver_common::case_file::reason_name(reason))
                    .or_default() += 1;
                if read {
                    prop_assert_eq!(&measure.running().failures_by_reason, &named);
                }
            }
            prop_assert_eq!(&measure.running().failures_by_reason, &named);
        }
    }
}
