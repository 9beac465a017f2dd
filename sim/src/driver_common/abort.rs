//! Thresholds that end a run early (k6's `abortOnFail`): the scenario's expectations with
//! `abort = true`, each on a figure that only grows while the run plays, watched after every
//! turn of a driver's loop. The first whose figure passes its `max` stops the run at that
//! time; the driver then measures what was played, as at the duration cap.

use stampede_core::Millis;
use stampede_reports::{Aborted, Summary};

use crate::scenario::expect::{monotone, Monotone};
use crate::scenario::Scenario;

/// The watched expectations of a scenario (none: a check costs one branch).
#[derive(Debug, Clone, Default)]
pub struct AbortWatch {
    /// (expectation key, how to read its figure, its max).
    watched: Vec<(String, Monotone, f64)>,
}

impl AbortWatch {
    /// The expectations of `scenario` that carry `abort = true` (the scenario's parser has
    /// refused it on any figure that can fall, and without a max).
    pub fn new(scenario: &Scenario) -> Self {
        let watched = scenario
            .expectations
            .iter()
            .filter(|e| e.abort)
            .filter_map(|e| Some((e.key.clone(), monotone(&e.key)?, e.max?)))
            .collect();
        Self { watched }
    }

    /// Whether any watched figure is read from the provider's journal (which a live run
    /// reads only at its end unless it polls for it).
    pub fn watches_journal(&self) -> bool {
        self.watched
            .iter()
            .any(|(key, _, _)| !DRIVER_COUNTED.contains(&key.as_str()))
    }

    /// The first watched expectation (in key order) whose figure is over its max at `now`
    /// (ms), reading each figure as the largest value in the summaries `so_far` gives (a
    /// live run counts the journal's figures and its own in two summaries). `so_far` is
    /// called only when something is watched: reading a driver's figures is not free
    /// (`Measurement::running` adds the counts it keeps aside), and a run with no
    /// `abort = true` checks on every turn.
    #[inline]
    pub fn check<'s, const N: usize>(
        &self,
        now: Millis,
        so_far: impl FnOnce() -> [&'s Summary; N],
    ) -> Option<Aborted> {
        if self.watched.is_empty() {
            return None;
        }
        let so_far = so_far();
        self.watched.iter().find_map(|(key, read, max)| {
            let value = so_far.iter().map(|s| read.read(s)).max().unwrap_or(0);
            (value as f64 > *max).then(|| Aborted {
                expectation: key.clone(),
                at_ms: now,
            })
        })
    }
}

/// Figures a driver counts itself as the run plays (at admission and terminal outcomes),
/// not from the provider's journal.
const DRIVER_COUNTED: [&str; 9] = [
    "cancelled",
    "completed",
    "deadline_misses",
    "escalations",
    "failed",
    "logical_requests",
    "reconciliation_required",
    "rejected",
    "tokens_reserved",
];

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = r#"
name = "watch"
duration = "10m"

[[provider.scopes]]
id = "s"

[[provider.credentials]]
key = "sk-s-key"
scope = "s"

[[workload]]
tenant = "t"
credential = "sk-s-key"
count = 10
arrival = "backlog"

[expect]
failed = { max = 2, abort = true }
status_counts.429 = { max = 5, abort = true }
duplicates = 0
"#;

    #[test]
    fn the_first_figure_over_its_max_stops_the_run() {
        let scenario = crate::scenario::parse(SCENARIO, "watch.toml", &[]).unwrap();
        let watch = AbortWatch::new(&scenario);
        assert!(
            watch.watches_journal(),
            "status_counts come from the journal"
        );
        let mut s = Summary {
            failed: 2,
            duplicates: 4,
            ..Summary::default()
        };
        assert_eq!(
            watch.check(10, || [&s]),
            None,
            "at the max still holds; duplicates is not watched"
        );
        s.status_counts.insert("429".into(), 6);
        let empty = Summary::default();
        assert_eq!(
            watch.check(20, || [&empty, &s]),
            Some(Aborted {
                expectation: "status_counts.429".into(),
                at_ms: 20
            })
        );
    }

    #[test]
    fn nothing_watched_costs_nothing() {
        let text = SCENARIO.replace(", abort = true", "");
        let scenario = crate::scenario::parse(&text, "watch.toml", &[]).unwrap();
        let watch = AbortWatch::new(&scenario);
        assert!(watch.watched.is_empty() && !watch.watches_journal());
        let s = Summary {
            failed: 99,
            ..Summary::default()
        };
        assert_eq!(watch.check(10, || [&s]), None);
    }
}
