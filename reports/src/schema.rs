//! The run report schema. Field names are the public contract (CONTRACT.md): extend, never
//! rename. Maps are `BTreeMap` so serialization order is stable.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Latency-like percentiles (ms), from an HdrHistogram.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median (ms).
    pub p50: u64,
    /// 95th percentile (ms).
    pub p95: u64,
    /// 99th percentile (ms).
    pub p99: u64,
    /// Largest value recorded (ms).
    pub max: u64,
}

/// One expectation from the scenario's `[expect]` table and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Expectation {
    /// The summary key it constrains (dotted for nested keys: `latency_ms.p99`).
    pub name: String,
    /// Human-readable limit: `<= 1.2`, `>= 10`, `10..=20`.
    pub limit: String,
    /// The measured value.
    pub actual: f64,
    /// Whether the measured value is within the limit.
    pub pass: bool,
}

/// `summary.json`: the run's figures, counted at the provider edge where it matters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The scenario's name (its `name` key).
    pub scenario: String,
    /// The seed the run played (the scenario's, or `--seed`).
    pub seed: u64,
    /// `"virtual"` or `"live"`.
    pub mode: String,
    /// The client preset the run used.
    pub preset: String,
    /// Logical requests the workload submitted.
    pub logical_requests: u64,
    /// Logical requests that ended with a completed answer.
    pub completed: u64,
    /// Logical requests that ended failed: the client gave up on them.
    pub failed: u64,
    /// Logical requests that ended cancelled (left out of `latency_ms`).
    pub cancelled: u64,
    /// Logical requests handed to a person: escalated, or left `reconciliation_required`
    /// (also counted there).
    pub escalations: u64,
    /// Logical actions the client's admission refused at least once under backpressure (its
    /// queue full) and held back to offer again later: not failures (an action held back may
    /// still complete, and is counted in `failed` only if it later fails). Each action counts
    /// once however often it was refused.
    pub rejected: u64,
    /// Attempts that reached the provider's edge, from its journal.
    pub outbound_attempts: u64,
    /// Outbound attempts per logical request: `outbound_attempts` / `logical_requests`.
    pub attempts_per_logical: f64,
    /// `{"200": n, "429": n, "503": n, "dropped": n, ...}` from the journal.
    pub status_counts: BTreeMap<String, u64>,
    /// Outbound attempts after the first of their logical request, the request as the
    /// provider identified it (Idempotency-Key, else the fingerprint within the identity
    /// window; record writes also by external reference). Look-ups are not retries.
    pub retries: u64,
    /// Synchronized retry bursts (definition in the README).
    pub retry_waves: u64,
    /// Retries in the fullest 100 ms bin of virtual time (see `retry_waves`).
    pub peak_retries_per_100ms: u64,
    /// Side effects (records created, completions billed) committed more than once for one
    /// logical request, as the provider identified it: the second and later commits.
    pub duplicates: u64,
    /// Reconciliation look-ups that reached the provider.
    pub reconciliations: u64,
    /// Uncertain writes left unresolved (`reconciliation_required`).
    pub reconciliation_required: u64,
    /// Logical requests that missed their deadline: ended past it or failed for it (cancelled
    /// ones aside), or still open past it at the cap.
    pub deadline_misses: u64,
    /// Attempts of a logical request that had itself been told to wait (a Retry-After on an
    /// earlier attempt of it) and came back before that wait had passed: a client that
    /// ignored what it was told. No transit ambiguity: it had heard the answer.
    pub retry_after_violations: u64,
    /// Virtual time from start to the last terminal outcome (ms).
    pub virtual_duration_ms: u64,
    /// Wall time of the run (ms). Not deterministic; the determinism check ignores it.
    pub wall_ms: u64,
    /// Submit to a completed answer (ms), over every logical request not cancelled: one that
    /// did not complete counts as unanswered until its deadline (the scenario's duration
    /// when it has none), so a client that fails fast cannot look fast.
    pub latency_ms: Percentiles,
    /// Submit to first dispatch (ms).
    pub queue_wait_ms: Percentiles,
    /// Tokens the client reserved for its attempts, summed over every attempt.
    pub tokens_reserved: u64,
    /// Tokens the provider reported used, from its journal.
    pub tokens_used: u64,
    /// Completed logical requests per minute of the service window (`goodput_window_ms`),
    /// which an early end through failures cannot shorten.
    pub goodput_per_min: f64,
    /// The scenario's `[expect]` entries, each with its measured value and verdict.
    pub expectations: Vec<Expectation>,
    /// Runner crashes during the run: the simulated ones of a scenario's `[[crashes]]`, or,
    /// in a live run on a `--ledger`, the runner's lives that died (killed, crashed) before
    /// they exited in order, counted over every life of the ledger.
    #[serde(default)]
    pub crashes: u64,
    /// Uncertain writes re-sent blindly, from the journal: a second create for an action
    /// whose earlier create committed or left the client unable to know (hang, drop after
    /// the write, 500/502/504), with no look-up for it in between that answered absent.
    #[serde(default)]
    pub blind_resends: u64,
    /// Attempts on a scope that a Retry-After told to *another* request still bound (from
    /// when that answer left, plus the transit allowance of a live run): a coordination gap
    /// between requests that share the scope, not one request ignoring its own answer.
    #[serde(default)]
    pub scope_wait_violations: u64,
    /// Of `duplicates`, records created again: a side effect in the world (a second
    /// ticket, a second charge).
    #[serde(default)]
    pub duplicate_writes: u64,
    /// Of `duplicates`, completions billed again: money, not a second effect.
    #[serde(default)]
    pub duplicate_completions: u64,
    /// Tokens billed by duplicate completions (a logical request billed again).
    #[serde(default)]
    pub duplicate_tokens: u64,
    /// Tokens billed whose answer never reached the client (dropped or hung after commit,
    /// stream cut or ended by an error event).
    #[serde(default)]
    pub undelivered_tokens: u64,
    /// Logical requests as the provider identified them (distinct first attempts).
    #[serde(default)]
    pub provider_logical_requests: u64,
    /// Attempts whose `x-stampede-attempt` claim disagrees with the provider's count (a
    /// retry layer under the client re-sending the same headers shows here).
    #[serde(default)]
    pub claim_mismatches: u64,
    /// Submit to terminal outcome (ms) of logical requests that did not complete (failed,
    /// escalated, left for reconciliation; cancelled ones excluded).
    #[serde(default)]
    pub failed_latency_ms: Percentiles,
    /// Submit to completion (ms), completed logical requests only: what the survivors saw.
    #[serde(default)]
    pub completed_latency_ms: Percentiles,
    /// Logical requests still open when the run hit its duration cap: neither completed
    /// nor failed (they are not in `failed`).
    #[serde(default)]
    pub unfinished: u64,
    /// Of those, ones with an attempt sent: they may have executed (in flight, or awaiting
    /// reconciliation), so the next safe action is a look-up, never a blind re-run.
    #[serde(default)]
    pub unfinished_sent: u64,
    /// First attempt sent to completion (ms), completed logical requests: service time
    /// without the queue wait before it.
    #[serde(default)]
    pub service_ms: Percentiles,
    /// The service window goodput is divided by (ms): from 0 until every logical request
    /// was completed, cancelled, or given up for good, a request that did not complete
    /// counting until its deadline (the scenario's duration when it has none).
    #[serde(default)]
    pub goodput_window_ms: u64,
    /// `--client` runs: the client process's exit status (a negative value -N: ended by
    /// signal N, e.g. when the scenario's duration ran out). Absent for other runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_exit_code: Option<i64>,
    /// `--client` runs: logical requests the provider saw whose prompt names no item of
    /// the workload (the client's own requests: a health check, work it made up, an item
    /// it rewrote). Counted apart, never as the workload's completions. Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub foreign_requests: u64,
    /// `--client` runs: reads of the model catalog (`GET /v1/models`, `/v1/models/{id}`,
    /// an SDK's `models.list()`), counted apart: no logical request and no work, so never
    /// an outbound attempt, a status count or a row of attempts.csv. Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub catalog_reads: u64,
    /// Set when an expectation with `abort = true` could no longer hold and ended the run
    /// early: every figure is then of the part played, up to `at_ms`. Absent when the run
    /// played to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<Aborted>,
    /// Set when the user stopped a live or `--client` run early (Ctrl-C, SIGTERM or
    /// SIGHUP): every figure is then of the part played, up to `at_ms`, and the run's exit
    /// status is the signal's (130 for SIGINT). Absent when the run played to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<Interrupted>,
    /// Outcomes by request class (`llm`, `tool`, ...), by name. For a `--client` run, its
    /// workload's items with a prompt (see `foreign_requests`).
    #[serde(default)]
    pub by_class: BTreeMap<String, GroupOutcomes>,
    /// Outcomes by tenant, by name (for a `--client` run, as `by_class`).
    #[serde(default)]
    pub by_tenant: BTreeMap<String, GroupOutcomes>,
    /// Outcomes by route, `METHOD /path/template` (`POST /v1/chat/completions`). A
    /// look-up route (`GET /v1/records?external_ref`) has attempts and no requests of its
    /// own: its requests are the writes it looks up. For a `--client` run, as `by_class`.
    #[serde(default)]
    pub by_route: BTreeMap<String, GroupOutcomes>,
    /// Attempts the provider did not answer with success, by status and message, most
    /// frequent first (then by status and message).
    #[serde(default)]
    pub errors: Vec<ErrorCount>,
    /// Figures of each provider, by name, in a run with several (`[providers.<name>]`);
    /// absent for a run with one provider, whose figures are the summary's own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_provider: BTreeMap<String, ProviderFigures>,
    /// Figures of each model the provider served or refused, by name; absent when no request
    /// named a model.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_model: BTreeMap<String, ModelFigures>,
    /// Logical requests billed at two providers (or more): the fallback went out while the
    /// first provider's commit was unknown to the client. Counted by the harness, which knows
    /// the logical request behind every attempt at every provider; each is also in
    /// `duplicates` and `duplicate_completions` (or `duplicate_writes`), with its tokens in
    /// `duplicate_tokens`. Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cross_provider_duplicates: u64,
    /// What the providers billed, US dollars, from each model's price (duplicates included:
    /// they are billed too). Absent when no model has a price.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub billed_usd: f64,
    /// Of `billed_usd`, what duplicate commits cost (US dollars). Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub duplicate_billed_usd: f64,
    /// The longest any tenant waited with work queued (arrived, not yet sent) while other
    /// tenants were served, ms: a wait starts when the tenant's queue fills or at its last
    /// send, ends at its next send (or the run's end), and counts only if another tenant
    /// sent meanwhile. Absent when 0 (one tenant, or none ever waited behind another).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub starvation_ms: u64,
    /// The tenant of `starvation_ms`. Absent with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starved_tenant: Option<String>,
    /// Logical requests the client moved to a fallback route, by the condition that moved
    /// them (`provider_5xx`, `rate_limit_after_retry_budget`, `context_length_needed`,
    /// `primary_unavailable`). Absent when none fell back.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fallbacks: BTreeMap<String, u64>,
    /// The same moves by where they went: `[{from_provider, to_provider, reason, count}]`,
    /// providers named as in `by_provider` (`provider` for a scenario's one `[provider]`),
    /// sorted. Absent when none fell back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback_routes: Vec<FallbackRouteCount>,
    /// Logical requests the client served degraded, by the rung of its ladder
    /// (`trim_output`, `smaller_model`, `pause_bulk`, `cached`). Absent when none were.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub degraded: BTreeMap<String, u64>,
    /// Agent runs (workloads with `agent`, seed 004), counted by the client as each run
    /// ends: `runs` started, `completed` (every call done inside the run's budget, a call
    /// whose retries ran out included: it came back as a tool result), `over_budget`,
    /// `cancelled`, `unfinished` at the cap; `calls` made, `failed_calls_returned` (calls
    /// whose error went back to the run as a tool result), `tool_timeouts`;
    /// `calls_per_run_p50`/`_max` and `duration_p50_ms`/`_p99_ms` over ended runs. Absent
    /// without agent runs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agent_runs: BTreeMap<String, u64>,
    /// Changed requests an improvising agent sent after a failure (workloads with
    /// `improvise`, seed 000), by change: `reorder` (same normalized payload), `filter` (a
    /// new payload), `nearby` (another resource on the same endpoint); `stopped` counts the
    /// agents that stopped because the breaker's constraint came back. Absent when none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub improvised: BTreeMap<String, u64>,
    /// 429 and quota refusals by the limit that refused them (`rpm`, `tpm`, `rpd`, `tpd`,
    /// `concurrency`), as the provider journaled them. Absent when no limit refused.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rate_limit_hits: BTreeMap<String, u64>,
    /// Outcomes by priority (`critical`, `normal`, `bulk`), as `by_class`.
    #[serde(default)]
    pub by_priority: BTreeMap<String, GroupOutcomes>,
    /// Logical requests that ended without completing (`failed`, `escalated`,
    /// `reconciliation_required`), by the core's reason, named as in `dead_letter.jsonl`
    /// (`deadline_exceeded`, `attempts_exhausted`, `quota_exhausted`, `circuit_open`,
    /// `wont_improve_422`, ...): they add up to `failed + escalations`. Absent when every
    /// request completed (a `--client` run's failed items are `attempts_exhausted`: the
    /// harness hears no reason there).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failures_by_reason: BTreeMap<String, u64>,
    /// `rejected` by the cause of the first refusal of each action: `queue_full` (its
    /// tenant's queue at its priority held `admission.queue_capacity`),
    /// `execution_budget_spent` (the run's execution budget had passed), `ledger_refused`,
    /// `invalid_action`; they add up to `rejected`. Absent when admission refused nothing.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// `retries` by the failure group of the answer the provider gave the previous attempt
    /// of the same logical request (as the provider identified it; look-ups skipped):
    /// `never_arrived`, `may_have_executed`, `wont_improve`, `conflict`, `quota_exhausted`
    /// (the core's groups, the answer classified as the core classifies it), `stream_cut`,
    /// `after_success` (the previous attempt was answered with success) and `unknown` (its
    /// previous attempt is too far back to be remembered). Counted from the journal; they
    /// add up to `retries`. Absent when there were no retries.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub retries_by_group: BTreeMap<String, u64>,
    /// Time logical requests spent waiting between their attempts (backoff and
    /// Retry-After), apart from queue wait (before the first send) and provider time: the
    /// core's own count of what the client waited (`Terminal::waited_ms`), over the requests
    /// that reached a terminal outcome. A client-side figure; 0 for a `--client` run.
    #[serde(default)]
    pub backoff_ms: Backoff,
    /// The wait admission gave each refusal (seed 001: "backpressure with a reason"; the
    /// caller is told when to offer again): `count` refusals, and percentiles of the wait
    /// given (ms). Absent when admission refused nothing.
    #[serde(default, skip_serializing_if = "WaitsGiven::is_empty")]
    pub refusal_wait_ms: WaitsGiven,
    /// Attempts whose token usage stayed unknown (a dropped or cut answer), so the client
    /// kept its reservation as the upper estimate and marked it uncertain: the core's count
    /// over its scopes' token buckets (scopes with a `tpm` in the client's policy), of the
    /// client alive at the run's end. Absent when 0 or when the client does not report it:
    /// today only a live run's core does (the virtual driver's fleet does not pass it on
    /// yet; SDK presets and `--client` runs have no such count).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub uncertain_usage: u64,
    /// Attempts the provider answered with the original result of an earlier attempt
    /// (same Idempotency-Key and body): a duplicate suppressed, no new effect. From the
    /// journal.
    #[serde(default)]
    pub duplicates_suppressed: u64,
    /// Queues by priority and class, keyed `PRIORITY/CLASS` (`normal/llm`): how deep they
    /// got and how long their requests waited for a first send. Absent for a `--client`
    /// run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub queues: BTreeMap<String, QueueFigures>,
}

/// Backoff: time between attempts of a logical request (ms): `summary.json`'s `backoff_ms`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Backoff {
    /// Summed over every logical request that ended (ms).
    pub total: u64,
    /// Percentiles over those requests, one value each (ms; 0 for a request that never
    /// waited).
    pub p50: u64,
    /// 95th percentile of the same (ms).
    pub p95: u64,
    /// 99th percentile of the same (ms).
    pub p99: u64,
    /// Longest of the same (ms).
    pub max: u64,
}

/// Waits a client gave the callers it refused (ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitsGiven {
    /// Refusals, each offer counted (an action refused twice counts twice).
    pub count: u64,
    /// Percentiles of the wait given (ms).
    pub p50: u64,
    /// 99th percentile of the wait given (ms).
    pub p99: u64,
    /// Longest wait given (ms).
    pub max: u64,
}

impl WaitsGiven {
    /// Whether nothing was refused.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// One queue of `summary.json`'s `queues`: requests of one priority and class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueFigures {
    /// Logical requests that arrived for it.
    pub arrived: u64,
    /// Arrived and not yet sent once (held at admission or queued in the client) at the
    /// run's end (requests), as the time series' `backlog` counts.
    pub depth_end: u64,
    /// The most there were (requests): the larger of the most at a report bucket's end
    /// (held at admission counted from their arrival, as the time series' `backlog`) and
    /// the most taken up by the admission and unsent at any one time.
    pub depth_peak: u64,
    /// Of the arrivals, first sent: the queue waits measured.
    pub sent: u64,
    /// Their queue waits summed: submit to first send (ms).
    pub wait_total_ms: u64,
    /// Their queue waits' percentiles (ms).
    pub wait_ms: Percentiles,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

/// Moves to a fallback route between two providers for one reason: an entry of
/// `fallback_routes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FallbackRouteCount {
    /// The provider the action left.
    pub from_provider: String,
    /// The provider it moved to (the same one when only the model changed).
    pub to_provider: String,
    /// The condition that moved it (`provider_5xx`, ...).
    pub reason: String,
    /// Logical requests moved so.
    pub count: u64,
}

/// What one provider of a run with several saw and billed: a value of `by_provider`.
/// Counted from that provider's journal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderFigures {
    /// Attempts that reached this provider's edge.
    pub outbound_attempts: u64,
    /// Of those, retries of a logical request this provider had seen before.
    pub retries: u64,
    /// Logical requests as this provider identified them.
    pub provider_logical_requests: u64,
    /// Answers by status or outcome, as the summary's `status_counts`.
    pub status_counts: BTreeMap<String, u64>,
    /// Tokens of the completions it committed (tokens).
    pub tokens_used: u64,
    /// Side effects it committed again for a logical request it had already committed.
    pub duplicates: u64,
    /// Commits of logical requests another provider had already committed.
    pub cross_provider_duplicates: u64,
    /// What it billed, US dollars.
    pub billed_usd: f64,
    /// Its retries by the failure group of the previous answer, as the summary's
    /// `retries_by_group`. Absent when it had no retries.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub retries_by_group: BTreeMap<String, u64>,
}

/// What requests for one model used and cost: a value of `by_model`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelFigures {
    /// Attempts that named the model (or were served by it by default), at every provider.
    pub outbound_attempts: u64,
    /// Completions committed.
    pub completions: u64,
    /// Tokens of those completions (tokens).
    pub tokens_used: u64,
    /// What they were billed, US dollars.
    pub billed_usd: f64,
}

/// An early end: the expectation that could no longer hold, and when the run stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aborted {
    /// The expectation's key (`failed`, `status_counts.429`).
    pub expectation: String,
    /// Run time when its figure passed the limit and the run stopped (ms since run start;
    /// scenario ms for a live run).
    pub at_ms: u64,
}

/// An early end the user asked for: the signal, and when the run stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interrupted {
    /// The signal's name: `SIGINT` (Ctrl-C), `SIGTERM` or `SIGHUP`.
    pub signal: String,
    /// Run time when the run stopped (scenario ms since run start).
    pub at_ms: u64,
}

impl Interrupted {
    /// One line for people: `interrupted by SIGINT at 12.3 s (figures are of the part
    /// played)`.
    pub fn line(&self) -> String {
        format!(
            "interrupted by {} at {} s: figures are of the part played",
            self.signal,
            crate::number::fmt_figure(self.at_ms as f64 / 1000.0),
        )
    }

    /// The exit status a shell gives a process this signal ended: 128 plus its number
    /// (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP), so a script or CI step sees the
    /// run as stopped, not as passed or failed on its expectations.
    pub fn exit_status(&self) -> u8 {
        match self.signal.as_str() {
            "SIGHUP" => 129,
            "SIGTERM" => 143,
            _ => 130,
        }
    }
}

impl Aborted {
    /// One line for people: `aborted at 12.3 s: failed passed its limit and can no longer
    /// hold`.
    pub fn line(&self) -> String {
        format!(
            "aborted at {} s: {} passed its limit, so the expectation could no longer hold \
             (figures are of the part played)",
            crate::number::fmt_figure(self.at_ms as f64 / 1000.0),
            self.expectation
        )
    }
}

/// What happened to one group of logical requests (one class, tenant or route): the
/// values of `by_class`, `by_tenant` and `by_route` in `summary.json`. Counts are logical
/// requests unless named otherwise; the terminal counts and `unfinished` add up to
/// `logical_requests`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupOutcomes {
    /// Logical requests of the group the workload submitted.
    pub logical_requests: u64,
    /// Of those, completed (Gatling's OK).
    pub completed: u64,
    /// Ended without an answer (Gatling's KO, with `escalations`).
    pub failed: u64,
    /// Cancelled with their task.
    pub cancelled: u64,
    /// Handed to a person (escalated, or left for reconciliation).
    pub escalations: u64,
    /// Still open when the run hit its duration cap (neither completed nor failed).
    pub unfinished: u64,
    /// Outbound attempts sent for the group's requests, look-ups included, counted at the
    /// provider's edge.
    pub attempts: u64,
    /// Submit to a completed answer (ms), as the summary's `latency_ms`: a request that
    /// did not complete counts as unanswered until its deadline (the duration cap without
    /// one); cancelled requests left out.
    pub latency_ms: Percentiles,
    /// Submit to first send (ms), of the group's requests that ended after being sent.
    pub queue_wait_ms: Percentiles,
    /// Tokens the client reserved for the group's attempts (prompt plus maximum output,
    /// at each send).
    #[serde(default)]
    pub tokens_reserved: u64,
    /// Tokens of the completions the provider committed for the group's attempts, from
    /// its journal.
    #[serde(default)]
    pub tokens_used: u64,
    /// The group's completed requests per minute of the run's service window
    /// (`goodput_window_ms`, the same for every group).
    #[serde(default)]
    pub goodput_per_min: f64,
    /// The group's attempts the provider answered as an idempotent replay (a duplicate
    /// suppressed).
    #[serde(default)]
    pub duplicates_suppressed: u64,
}

/// One kind of unsuccessful answer and how often the provider gave it: an entry of
/// `summary.json`'s `errors`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCount {
    /// The HTTP status (`"429"`, `"503"`), or what happened to the connection
    /// (`"dropped"`, `"hang"`, `"stream_cut"`, `"stream_error"`), as in `status_counts`.
    pub status: String,
    /// The provider's error code (`rate_limit_exceeded`, `overloaded`), empty when the
    /// answer carried none.
    pub message: String,
    /// Attempts that ended this way.
    pub count: u64,
    /// Arrival of the first such attempt at the provider (ms since run start).
    pub first_ms: u64,
    /// Arrival of the last such attempt (ms since run start).
    pub last_ms: u64,
}

/// One row of `timeseries.csv`: one time bucket.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeseriesRow {
    /// Bucket start (ms since run start).
    pub t_ms: u64,
    /// Attempts that reached the provider in the bucket.
    pub attempts: u64,
    /// Of those, retries (not the first attempt of their logical request, as the provider
    /// identified it).
    pub retries: u64,
    /// Attempts in the bucket answered with success (2xx).
    pub status_2xx: u64,
    /// Attempts in the bucket answered 429 (rate limited).
    pub status_429: u64,
    /// Attempts in the bucket answered 503 (unavailable).
    pub status_503: u64,
    /// Attempts in the bucket answered with a 5xx other than 503.
    pub status_5xx_other: u64,
    /// Attempts in the bucket answered with a 4xx other than 429.
    pub status_4xx_other: u64,
    /// Attempts in the bucket with no complete answer (dropped, hung, stream cut).
    pub dropped: u64,
    /// Queue depth at the bucket's end (jobs admitted, not yet dispatched).
    pub queue_depth: u64,
    /// Attempts the client had sent and not yet heard back on, at the bucket's end.
    pub in_flight: u64,
    /// Tokens reserved by the client at the bucket's end.
    pub tokens_reserved: u64,
    /// Tokens used (provider-reported) in the bucket.
    pub tokens_used: u64,
    /// Completions in the bucket.
    pub completed: u64,
    /// Failures (failed, escalated, cancelled) in the bucket.
    pub failed: u64,
    /// Median submit-to-completion latency of actions completed in the bucket (ms, 0 if none).
    pub latency_p50_ms: u64,
    /// 99th percentile of the same (ms, 0 if none).
    pub latency_p99_ms: u64,
    /// Median service time of attempts that arrived at the provider in the bucket and were
    /// answered with success: arrival at its edge to the answer leaving (ms, 0 if none).
    /// Time at the provider alone, with no wait in the client before it.
    #[serde(default)]
    pub service_p50_ms: u64,
    /// 99th percentile of the same (ms, 0 if none).
    #[serde(default)]
    pub service_p99_ms: u64,
    /// Median queue wait of logical requests first sent in the bucket: submit to first
    /// send (ms, 0 if none).
    #[serde(default)]
    pub queue_wait_p50_ms: u64,
    /// 99th percentile of the same (ms, 0 if none).
    #[serde(default)]
    pub queue_wait_p99_ms: u64,
    /// Logical requests waiting in the client at the bucket's end: arrived and not yet sent
    /// once, whether queued in the client or held back at its admission. Not capped by
    /// any queue bound (`queue_depth` counts only what the client's own queue holds), so a
    /// backlog of 38,000 shows here as 38,000 draining.
    #[serde(default)]
    pub backlog: u64,
}

/// One row of `tenants.csv`: one tenant's completions in one time bucket (for per-tenant
/// goodput when a scenario has several tenants).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TenantRow {
    /// Bucket start (ms since run start).
    pub t_ms: u64,
    /// The tenant's name (the workload's `tenant`).
    pub tenant: String,
    /// The tenant's logical requests completed in the bucket.
    pub completed: u64,
    /// Outbound attempts of this tenant's actions in the bucket.
    pub attempts: u64,
}

/// One row of `unfinished.csv`: a logical request still open when the run hit its duration
/// cap, with what is safe to do about it. Never "failed": one that was sent may have
/// executed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UnfinishedRow {
    /// The client's action id.
    pub action: u64,
    /// Tenant it was submitted for.
    pub tenant: String,
    /// Its request class (a key of the client's classes: `llm`, `read`, ...).
    pub class: String,
    /// When it arrived (ms since run start).
    pub submitted_at_ms: u64,
    /// Whether an attempt of it was sent (it may have executed).
    pub sent: bool,
    /// `never_sent`, `in_flight` (an attempt out, or waiting to retry), or
    /// `reconciliation_required` (a write that may have executed, being looked up).
    pub state: String,
    /// Its idempotency key, for a look-up or a safe retry.
    pub idempotency_key: String,
    /// Its external reference, if any.
    pub external_ref: String,
    /// What to do next: `submit_again` (never sent), or `look_up_before_retrying` (by the
    /// key or reference: it may have executed).
    pub next_safe_action: String,
}

/// One row of `attempts.csv`: one outbound attempt as the provider saw it.
///
/// Its texts borrow from the journal entry it is written from (a run writes one row per
/// attempt, hundreds of thousands, and copies none of them); a row kept or read back owns
/// them ([`AttemptRow::into_owned`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AttemptRow<'a> {
    /// Journal sequence number.
    pub seq: u64,
    /// Arrival at the provider edge (ms since run start).
    pub at_ms: u64,
    /// When the answer left or the connection closed (ms).
    pub done_ms: u64,
    /// Tenant the harness sent it for (empty when it cannot know: a `--client` process).
    pub tenant: Cow<'a, str>,
    /// Provider scope it counted against (`account:acme`; empty when none).
    pub scope: Cow<'a, str>,
    /// Route template it reached (`/v1/records`).
    pub route: Cow<'a, str>,
    /// The action the harness sent this attempt for (0 when it cannot know: a `--client`
    /// process). Never read from the client's headers.
    pub action: u64,
    /// The attempt's 1-based number as the harness sent it (0 when it cannot know).
    pub attempt_no: u32,
    /// HTTP status, or `dropped`, `hang`, `stream_cut`.
    pub outcome: Cow<'a, str>,
    /// Provider error code, if any.
    pub error_code: Cow<'a, str>,
    /// Whether a side effect was committed.
    pub committed: bool,
    /// Whether its logical request had been told to wait and it came back early.
    pub retry_after_violation: bool,
    /// The Idempotency-Key it carried (empty when none).
    pub idempotency_key: Cow<'a, str>,
    /// The logical request the provider attached it to (0: a look-up of an unknown write).
    #[serde(default)]
    pub logical: u64,
    /// Its ordinal within that logical request (1 = first; 0 for look-ups).
    #[serde(default)]
    pub logical_attempt: u32,
    /// Whether it committed a second side effect for its logical request.
    #[serde(default)]
    pub duplicate: bool,
    /// Whether it reached a scope another request's Retry-After still bound.
    #[serde(default)]
    pub scope_wait_violation: bool,
}

impl AttemptRow<'_> {
    /// The same row owning its texts (to keep it past the journal entry it came from).
    pub fn into_owned(self) -> AttemptRow<'static> {
        AttemptRow {
            seq: self.seq,
            at_ms: self.at_ms,
            done_ms: self.done_ms,
            tenant: Cow::Owned(self.tenant.into_owned()),
            scope: Cow::Owned(self.scope.into_owned()),
            route: Cow::Owned(self.route.into_owned()),
            action: self.action,
            attempt_no: self.attempt_no,
            outcome: Cow::Owned(self.outcome.into_owned()),
            error_code: Cow::Owned(self.error_code.into_owned()),
            committed: self.committed,
            retry_after_violation: self.retry_after_violation,
            idempotency_key: Cow::Owned(self.idempotency_key.into_owned()),
            logical: self.logical,
            logical_attempt: self.logical_attempt,
            duplicate: self.duplicate,
            scope_wait_violation: self.scope_wait_violation,
        }
    }
}
