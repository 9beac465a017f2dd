//! The numeric figures of a summary, by their `summary.json` key, in one fixed order: the page,
//! the markdown summary, the comparison and the sweep CSV all list the same figures the same way.

use crate::schema::{Percentiles, Summary};

/// One numeric figure of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// The `summary.json` key, dotted for nested values (`latency_ms.p99`, `status_counts.429`);
    /// the same name an `[expect]` entry uses.
    pub key: String,
    /// The value in the unit of `unit`.
    pub value: f64,
    /// Unit for display (`ms`, `tokens`, `per min`, or empty for plain counts).
    pub unit: &'static str,
    /// False for figures that differ between two runs of the same seed (wall-clock time): the
    /// byte-identical outputs leave them out.
    pub deterministic: bool,
}

/// What `rejected` counts, shown beside it wherever figures are listed (the comparison of
/// `diff` and `run --baseline`, `summary.md`, `index.html`): it sits beside `completed` and
/// is easily read as failed requests.
pub const REJECTED_UNIT: &str = "held back, offered again";

fn fig(key: impl Into<String>, value: f64, unit: &'static str) -> Figure {
    Figure {
        key: key.into(),
        value,
        unit,
        deterministic: true,
    }
}

fn percentiles(out: &mut Vec<Figure>, name: &str, p: &Percentiles) {
    for (suffix, v) in [
        ("p50", p.p50),
        ("p95", p.p95),
        ("p99", p.p99),
        ("max", p.max),
    ] {
        out.push(fig(format!("{name}.{suffix}"), v as f64, "ms"));
    }
}

/// Every numeric figure of `summary`, headline figures first. Counts are exact as `f64` up to
/// 2^53, far above any run.
pub fn figures(summary: &Summary) -> Vec<Figure> {
    let s = summary;
    let mut out = vec![
        fig("logical_requests", s.logical_requests as f64, ""),
        fig("completed", s.completed as f64, ""),
        fig("failed", s.failed as f64, ""),
        fig("cancelled", s.cancelled as f64, ""),
        fig("escalations", s.escalations as f64, ""),
        // Not failures: arrivals the client's admission refused under backpressure (its
        // queue full) and held, to offer again later; they may all complete.
        fig("rejected", s.rejected as f64, REJECTED_UNIT),
        fig("outbound_attempts", s.outbound_attempts as f64, ""),
        fig("attempts_per_logical", s.attempts_per_logical, ""),
        fig("retries", s.retries as f64, ""),
        fig("retry_waves", s.retry_waves as f64, ""),
        fig(
            "peak_retries_per_100ms",
            s.peak_retries_per_100ms as f64,
            "",
        ),
        fig("duplicates", s.duplicates as f64, ""),
        fig("duplicate_writes", s.duplicate_writes as f64, ""),
        fig("duplicate_completions", s.duplicate_completions as f64, ""),
        fig("reconciliations", s.reconciliations as f64, ""),
        fig(
            "reconciliation_required",
            s.reconciliation_required as f64,
            "",
        ),
        fig("deadline_misses", s.deadline_misses as f64, ""),
        fig(
            "retry_after_violations",
            s.retry_after_violations as f64,
            "",
        ),
        fig("scope_wait_violations", s.scope_wait_violations as f64, ""),
        fig(
            "provider_logical_requests",
            s.provider_logical_requests as f64,
            "",
        ),
        fig("unfinished", s.unfinished as f64, ""),
        fig("goodput_per_min", s.goodput_per_min, "per min"),
        fig("virtual_duration_ms", s.virtual_duration_ms as f64, "ms"),
    ];
    percentiles(&mut out, "latency_ms", &s.latency_ms);
    percentiles(&mut out, "queue_wait_ms", &s.queue_wait_ms);
    out.push(fig("tokens_reserved", s.tokens_reserved as f64, "tokens"));
    out.push(fig("tokens_used", s.tokens_used as f64, "tokens"));
    // BTreeMap: status codes in a stable order.
    for (status, n) in &s.status_counts {
        out.push(fig(format!("status_counts.{status}"), *n as f64, ""));
    }
    // Figures of features a run may not use (several providers, prices, routing, a
    // degradation ladder): listed only when the run has them, so the page and the sweep CSV
    // of a run without them stay as they were.
    for (name, n) in &s.rate_limit_hits {
        out.push(fig(format!("rate_limit_hits.{name}"), *n as f64, ""));
    }
    if !s.by_provider.is_empty() || s.cross_provider_duplicates > 0 {
        out.push(fig(
            "cross_provider_duplicates",
            s.cross_provider_duplicates as f64,
            "",
        ));
    }
    for (reason, n) in &s.fallbacks {
        out.push(fig(format!("fallbacks.{reason}"), *n as f64, ""));
    }
    for (rung, n) in &s.degraded {
        out.push(fig(format!("degraded.{rung}"), *n as f64, ""));
    }
    for (name, n) in &s.agent_runs {
        let unit = if name.ends_with("_ms") { "ms" } else { "" };
        out.push(fig(format!("agent_runs.{name}"), *n as f64, unit));
    }
    if !s.refusal_wait_ms.is_empty() {
        let w = &s.refusal_wait_ms;
        out.push(fig("refusal_wait_ms.count", w.count as f64, ""));
        out.push(fig("refusal_wait_ms.p50", w.p50 as f64, "ms"));
        out.push(fig("refusal_wait_ms.max", w.max as f64, "ms"));
    }
    for (change, n) in &s.improvised {
        out.push(fig(format!("improvised.{change}"), *n as f64, ""));
    }
    if s.starvation_ms != 0 {
        out.push(fig("starvation_ms", s.starvation_ms as f64, "ms"));
    }
    if s.crashes != 0 {
        out.push(fig("crashes", s.crashes as f64, ""));
    }
    if s.mode == "client" {
        out.push(fig("foreign_requests", s.foreign_requests as f64, ""));
        if s.catalog_reads != 0 {
            out.push(fig("catalog_reads", s.catalog_reads as f64, ""));
        }
    }
    if s.billed_usd != 0.0 {
        out.push(fig("billed_usd", s.billed_usd, "USD"));
        out.push(fig("duplicate_billed_usd", s.duplicate_billed_usd, "USD"));
    }
    // The seeds' figures of causes: listed only when the run has them.
    for (reason, n) in &s.failures_by_reason {
        out.push(fig(format!("failures_by_reason.{reason}"), *n as f64, ""));
    }
    for (reason, n) in &s.rejected_by_reason {
        out.push(fig(format!("rejected_by_reason.{reason}"), *n as f64, ""));
    }
    for (group, n) in &s.retries_by_group {
        out.push(fig(format!("retries_by_group.{group}"), *n as f64, ""));
    }
    if s.backoff_ms.total > 0 {
        let b = &s.backoff_ms;
        out.push(fig("backoff_ms.total", b.total as f64, "ms"));
        for (suffix, v) in [
            ("p50", b.p50),
            ("p95", b.p95),
            ("p99", b.p99),
            ("max", b.max),
        ] {
            out.push(fig(format!("backoff_ms.{suffix}"), v as f64, "ms"));
        }
    }
    if s.uncertain_usage > 0 {
        out.push(fig("uncertain_usage", s.uncertain_usage as f64, ""));
    }
    for (name, p) in &s.by_provider {
        out.push(fig(
            format!("by_provider.{name}.outbound_attempts"),
            p.outbound_attempts as f64,
            "",
        ));
        out.push(fig(
            format!("by_provider.{name}.tokens_used"),
            p.tokens_used as f64,
            "tokens",
        ));
        if s.billed_usd != 0.0 {
            out.push(fig(
                format!("by_provider.{name}.billed_usd"),
                p.billed_usd,
                "USD",
            ));
        }
    }
    out.push(Figure {
        key: "wall_ms".to_string(),
        value: s.wall_ms as f64,
        unit: "ms",
        deterministic: false,
    });
    out
}

/// The value of one figure by its `summary.json` key, if the summary has it.
pub fn figure(summary: &Summary, key: &str) -> Option<f64> {
    figures(summary)
        .into_iter()
        .find(|f| f.key == key)
        .map(|f| f.value)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_figure_on_the_page_has_a_label_and_a_meaning() {
        let mut s = Summary::default();
        s.status_counts.insert("200".into(), 1);
        s.status_counts.insert("429".into(), 1);
        s.status_counts.insert("dropped".into(), 1);
        s.failures_by_reason.insert("deadline_exceeded".into(), 1);
        s.rejected_by_reason.insert("queue_full".into(), 1);
        s.retries_by_group.insert("never_arrived".into(), 1);
        s.backoff_ms.total = 1;
        s.uncertain_usage = 1;
        s.starvation_ms = 1;
        s.crashes = 1;
        s.billed_usd = 1.0;
        s.cross_provider_duplicates = 1;
        s.fallbacks.insert("provider_5xx".into(), 1);
        s.degraded.insert("cached".into(), 1);
        s.rate_limit_hits.insert("tpm".into(), 1);
        s.by_provider.insert("a".into(), Default::default());
        s.mode = "client".into();
        for f in super::figures(&s).iter().filter(|f| f.deterministic) {
            let (_, label, meaning) = super::describe(&f.key);
            assert!(
                !label.is_empty() && !meaning.is_empty(),
                "{} has no label or meaning: describe it in figures::describe",
                f.key
            );
        }
    }

    use super::*;

    #[test]
    fn nested_and_status_figures_use_dotted_keys() {
        let mut s = Summary::default();
        s.latency_ms.p99 = 900;
        s.status_counts.insert("429".into(), 7);
        assert_eq!(figure(&s, "latency_ms.p99"), Some(900.0));
        assert_eq!(figure(&s, "status_counts.429"), Some(7.0));
        assert_eq!(figure(&s, "no_such_key"), None);
    }

    #[test]
    fn rejected_says_what_it_counts() {
        let s = Summary {
            rejected: 37_714,
            completed: 38_000,
            ..Summary::default()
        };
        let f = figures(&s)
            .into_iter()
            .find(|f| f.key == "rejected")
            .unwrap();
        assert_eq!((f.value, f.unit), (37_714.0, "held back, offered again"));
    }
}

/// Where a figure sits on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FigureGroup {
    /// What the client finished: outcomes, deadlines, latency, goodput.
    Finished,
    /// What reached the provider: attempts, retries, answers by status.
    Provider,
    /// Safety: side effects committed twice, reconciliation, Retry-After respected.
    Safety,
    /// What it cost: tokens.
    Cost,
}

impl FigureGroup {
    /// The group's heading on the page.
    pub fn heading(self) -> &'static str {
        match self {
            FigureGroup::Finished => "What the client finished",
            FigureGroup::Provider => "What reached the provider",
            FigureGroup::Safety => "Safety",
            FigureGroup::Cost => "What it cost",
        }
    }
}

/// A figure's group, plain label and one-line meaning, by its `summary.json` key.
pub fn describe(key: &str) -> (FigureGroup, &'static str, &'static str) {
    use FigureGroup::*;
    if let Some(status) = key.strip_prefix("status_counts.") {
        let meaning = match status {
            "429" => "attempts the provider refused for rate (Too Many Requests)",
            "503" => "attempts the provider refused as unavailable",
            "dropped" => "attempts whose connection the provider dropped",
            s if s.starts_with('2') => "attempts answered with success",
            _ => "attempts that ended with this status or outcome",
        };
        return (Provider, "answers with this status", meaning);
    }
    if let Some(limit) = key.strip_prefix("rate_limit_hits.") {
        let meaning = match limit {
            "rpm" => "429s for requests per minute",
            "tpm" => "429s for tokens per minute",
            "rpd" => "refusals for requests per day (insufficient_quota)",
            "tpd" => "refusals for tokens per day (insufficient_quota)",
            "concurrency" => "429s for requests in flight at once",
            _ => "refusals by this limit",
        };
        return (Provider, "refused by limit", meaning);
    }
    if key.starts_with("fallbacks.") {
        return (
            Provider,
            "fell back",
            "requests the client moved to a fallback route for this reason",
        );
    }
    if key.starts_with("degraded.") {
        return (
            Finished,
            "served degraded",
            "requests served by this rung of the degradation ladder",
        );
    }
    if let Some(rest) = key.strip_prefix("agent_runs.") {
        let meaning = match rest {
            "runs" => "agent runs started (LLM, tool, LLM, ...)",
            "completed" => "runs whose every call ended inside the run's execution budget",
            "over_budget" => "runs stopped because a call could not end inside the budget",
            "cancelled" => "runs whose task was cancelled",
            "unfinished" => "runs still going when the scenario ended",
            "calls" => "LLM requests the runs made, changed requests included",
            "failed_calls_returned" => {
                "calls whose retries ran out and whose error went back to the run as a tool result"
            }
            "tool_timeouts" => "tool calls given up at their timeout",
            "calls_per_run_p50" | "calls_per_run_max" => "LLM requests per ended run",
            _ => "how long an ended run took, first call to last answer",
        };
        return (Finished, "agent runs", meaning);
    }
    if let Some(rest) = key.strip_prefix("refusal_wait_ms.") {
        let meaning = if rest == "count" {
            "offers admission refused (backpressure), each told when to come back"
        } else {
            "the wait admission gave a refused caller before offering again"
        };
        return (Finished, "wait given when refused", meaning);
    }
    if key.starts_with("improvised.") {
        return (
            Safety,
            "improvised requests",
            "changed requests an agent sent after a failure (stopped: agents that stopped on the breaker's constraint)",
        );
    }
    if let Some(rest) = key.strip_prefix("by_provider.") {
        let (group, label, meaning) = match rest.rsplit_once('.').map(|(_, f)| f) {
            Some("billed_usd") => (Cost, "billed by provider", "what this provider billed"),
            Some("tokens_used") => (Cost, "tokens by provider", "tokens this provider billed"),
            _ => (
                Provider,
                "attempts by provider",
                "attempts that reached this provider's edge",
            ),
        };
        return (group, label, meaning);
    }
    if key.starts_with("failures_by_reason.") {
        return (
            Finished,
            "failed for",
            "requests that ended without completing for this reason (the core's)",
        );
    }
    if key.starts_with("rejected_by_reason.") {
        return (
            Finished,
            "pushed back for",
            "requests admission first refused for this cause (offered again later)",
        );
    }
    if key.starts_with("retries_by_group.") {
        return (
            Provider,
            "retries after",
            "retries whose previous answer fell in this failure group",
        );
    }
    if key == "backoff_ms.total" {
        return (
            Finished,
            "backoff, summed",
            "time requests waited between attempts, as the client counted it",
        );
    }
    if key.starts_with("backoff_ms.") {
        return (
            Finished,
            "backoff",
            "time one request waited between its attempts (not queue, not provider)",
        );
    }
    if key == "uncertain_usage" {
        return (
            Cost,
            "usage uncertain",
            "attempts whose token usage was unknown: the reservation kept as the estimate",
        );
    }
    if key.starts_with("latency_ms.") {
        return (
            Finished,
            "latency",
            "submit to outcome; a request never answered counts until its deadline",
        );
    }
    if key.starts_with("queue_wait_ms.") {
        return (
            Finished,
            "queue wait",
            "submit to first send: time spent waiting in the client",
        );
    }
    match key {
        "logical_requests" => (Finished, "logical requests", "what the workload asked for"),
        "completed" => (Finished, "completed", "requests that got their answer"),
        "failed" => (Finished, "failed", "requests that ended without an answer"),
        "cancelled" => (Finished, "cancelled", "requests whose task was cancelled"),
        "escalations" => (
            Finished,
            "escalated",
            "requests handed to a person with their context",
        ),
        "rejected" => (
            Finished,
            "pushed back at admission",
            "requests the client's queue refused at least once (offered again later)",
        ),
        "unfinished" => (
            Finished,
            "unfinished at the cap",
            "requests still open when the run's duration ended",
        ),
        "deadline_misses" => (
            Finished,
            "deadline misses",
            "requests not answered by their deadline",
        ),
        "goodput_per_min" => (
            Finished,
            "goodput",
            "completed requests per minute of the service window",
        ),
        "virtual_duration_ms" => (Finished, "virtual duration", "simulated time the run took"),
        "outbound_attempts" => (
            Provider,
            "outbound attempts",
            "attempts that reached the provider, as its journal counts them",
        ),
        "attempts_per_logical" => (
            Provider,
            "attempts per logical request",
            "outbound attempts over logical requests: 1 means no retries",
        ),
        "retries" => (
            Provider,
            "retries",
            "attempts after the first of one logical request",
        ),
        "retry_waves" => (
            Provider,
            "retry waves",
            "synchronized bursts of retries (a fixed sleep across many workers)",
        ),
        "peak_retries_per_100ms" => (
            Provider,
            "peak retries per 100 ms",
            "the densest 100 ms of retries",
        ),
        "provider_logical_requests" => (
            Provider,
            "logical requests the provider saw",
            "distinct requests by the provider's identity (key, fingerprint)",
        ),
        "duplicates" => (
            Safety,
            "duplicate side effects",
            "records or billed completions committed more than once for one request",
        ),
        "duplicate_writes" => (Safety, "duplicate writes", "records created twice"),
        "duplicate_completions" => (
            Safety,
            "duplicate completions",
            "completions billed twice for one request",
        ),
        "reconciliations" => (
            Safety,
            "reconciliations",
            "uncertain writes looked up instead of re-sent",
        ),
        "reconciliation_required" => (
            Safety,
            "reconciliation required",
            "uncertain writes still waiting for a look-up",
        ),
        "crashes" => (
            Safety,
            "runner crashes",
            "times the runner died mid-run and was restored from its ledger",
        ),
        "retry_after_violations" => (
            Safety,
            "Retry-After violations (own)",
            "attempts of a request that came back before the wait it was told",
        ),
        "scope_wait_violations" => (
            Safety,
            "Retry-After violations (scope)",
            "attempts on a scope another request had been told to leave alone",
        ),
        "tokens_reserved" => (
            Cost,
            "tokens reserved",
            "prompt plus maximum output, reserved before sending",
        ),
        "tokens_used" => (Cost, "tokens used", "tokens the provider billed"),
        "cross_provider_duplicates" => (
            Safety,
            "billed at two providers",
            "requests a fallback sent on while the first provider's commit was unknown",
        ),
        "starvation_ms" => (
            Finished,
            "longest starvation",
            "the longest a tenant waited with work queued while other tenants were served",
        ),
        "billed_usd" => (
            Cost,
            "billed",
            "what the providers billed, duplicates included",
        ),
        "duplicate_billed_usd" => (Cost, "billed twice", "what duplicate commits cost"),
        "foreign_requests" => (
            Provider,
            "requests not of the workload",
            "requests a --client run's client sent whose prompt names no item of its workload",
        ),
        "catalog_reads" => (
            Provider,
            "model catalog reads",
            "reads of GET /v1/models a --client run's client made: no work, no attempt",
        ),
        _ => (Finished, "", ""),
    }
}
