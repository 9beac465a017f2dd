//! Agent runs (seed 004) as the client saw them end: how many finished inside their
//! execution budget, how many calls each took, how long each ran.

use std::collections::BTreeMap;

use super::percentiles::Distribution;

/// How an agent run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Every call ended inside the budget (a call whose retries ran out included).
    Completed,
    /// A call could not end inside the run's execution budget.
    OverBudget,
    /// Its task was cancelled.
    Cancelled,
}

/// The names of `summary.json`'s `agent_runs` figures, in the order [`AgentRuns::finish`]
/// gives their values.
pub const FIGURES: [&str; 12] = [
    "runs",
    "completed",
    "over_budget",
    "cancelled",
    "unfinished",
    "calls",
    "failed_calls_returned",
    "tool_timeouts",
    "calls_per_run_p50",
    "calls_per_run_max",
    "duration_p50_ms",
    "duration_p99_ms",
];

/// The tally behind `summary.json`'s `agent_runs`.
#[derive(Debug, Default)]
pub struct AgentRuns {
    started: u64,
    completed: u64,
    over_budget: u64,
    cancelled: u64,
    unfinished: u64,
    calls: u64,
    failed_calls_returned: u64,
    tool_timeouts: u64,
    calls_per_run: Distribution,
    duration: Distribution,
}

impl AgentRuns {
    /// A run started.
    pub fn started(&mut self) {
        self.started += 1;
    }

    /// A call of a run ended; `returned_as_tool_result` when it failed and its error went
    /// back to the run.
    pub fn call(&mut self, returned_as_tool_result: bool) {
        self.calls += 1;
        self.failed_calls_returned += u64::from(returned_as_tool_result);
    }

    /// A tool call ran past its timeout.
    pub fn tool_timeout(&mut self) {
        self.tool_timeouts += 1;
    }

    /// A run ended after `calls` calls and `duration_ms` (ms).
    pub fn ended(&mut self, end: RunEnd, calls: u32, duration_ms: u64) {
        match end {
            RunEnd::Completed => self.completed += 1,
            RunEnd::OverBudget => self.over_budget += 1,
            RunEnd::Cancelled => self.cancelled += 1,
        }
        self.calls_per_run.record(u64::from(calls));
        self.duration.record(duration_ms);
    }

    /// `n` runs were still going when the run stopped.
    pub fn unfinished(&mut self, n: u64) {
        self.unfinished += n;
    }

    /// The figures, named as [`FIGURES`]; empty when no run started.
    pub fn finish(&self) -> BTreeMap<String, u64> {
        if self.started == 0 {
            return BTreeMap::new();
        }
        let values = [
            self.started,
            self.completed,
            self.over_budget,
            self.cancelled,
            self.unfinished,
            self.calls,
            self.failed_calls_returned,
            self.tool_timeouts,
            self.calls_per_run.quantile(0.5),
            self.calls_per_run.percentiles().max,
            self.duration.quantile(0.5),
            self.duration.quantile(0.99),
        ];
        FIGURES
            .iter()
            .zip(values)
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_add_up_and_calls_per_run_are_over_ended_runs() {
        let mut a = AgentRuns::default();
        assert!(a.finish().is_empty(), "no agent workload: no figures");
        for _ in 0..3 {
            a.started();
        }
        a.call(false);
        a.call(true);
        a.ended(RunEnd::Completed, 2, 10_000);
        a.call(false);
        a.ended(RunEnd::OverBudget, 1, 300_000);
        a.unfinished(1);
        let f = a.finish();
        assert_eq!(f["runs"], 3);
        assert_eq!(
            f["completed"] + f["over_budget"] + f["cancelled"] + f["unfinished"],
            3
        );
        assert_eq!((f["calls"], f["failed_calls_returned"]), (3, 1));
        assert_eq!(f["calls_per_run_max"], 2);
    }
}
