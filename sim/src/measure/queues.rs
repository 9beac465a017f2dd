//! Queues by priority and class (`summary.json`'s `queues`) and each action's priority
//! (for `by_priority`): who arrived, how many waited unsent at once, and how long each
//! waited for its first send.
//!
//! The harness learns an action's priority and class when it arrives; the core's terminal
//! outcome names only its job id, the harness's own (nothing here reads the journal). So
//! each action's queue is kept in one byte indexed by that id (ids are dense from 1), at
//! most [`MAX_TRACKED`] of them: a run of the
//! largest size keeps about 10 MB here, and an action past that cap is left out of
//! `by_priority` and `queues` (never counted under a wrong name).

use std::collections::BTreeMap;

use stampede_core::{JobId, Priority};
use stampede_reports::QueueFigures;

use super::percentiles::Distribution;

/// Actions (by id) whose queue is remembered: above `MAX_ACTIONS` (10 million).
pub const MAX_TRACKED: u64 = 1 << 24;

/// Queues at most (priority and class pairs): 127, one byte per action with a flag.
const MAX_QUEUES: usize = 127;

/// The flag of an action still waiting for its first send.
const WAITING: u8 = 0x80;

/// The name `by_priority` and the metrics use for a priority.
pub fn priority_name(priority: Priority) -> &'static str {
    match priority {
        Priority::Critical => "critical",
        Priority::Normal => "normal",
        Priority::Bulk => "bulk",
    }
}

#[derive(Debug, Default)]
struct Tally {
    figures: QueueFigures,
    depth: u64,
    wait: Distribution,
}

/// Every queue's tally, and each action's queue.
#[derive(Debug, Default)]
pub struct Queues {
    names: Vec<(&'static str, String)>,
    tallies: Vec<Tally>,
    /// Per action id: its queue's index + 1 (0: unknown) in the low bits, [`WAITING`] while
    /// it has not been sent.
    of_job: Vec<u8>,
}

impl Queues {
    fn slot(&self, job: JobId) -> Option<u8> {
        self.of_job
            .get(usize::try_from(job).ok()?)
            .copied()
            .filter(|&b| b & !WAITING != 0)
    }

    /// Job `job` of `priority` and `class` arrived (submitted, whether or not
    /// admission took it at once): it waits unsent.
    pub fn arrive(&mut self, job: JobId, priority: Priority, class: &str) {
        if job >= MAX_TRACKED {
            return;
        }
        let priority = priority_name(priority);
        let ix = match self
            .names
            .iter()
            .position(|(p, c)| *p == priority && c == class)
        {
            Some(ix) => ix,
            None if self.names.len() < MAX_QUEUES => {
                self.names.push((priority, class.to_string()));
                self.tallies.push(Tally::default());
                self.names.len() - 1
            }
            None => return,
        };
        let at = job as usize;
        if self.of_job.len() <= at {
            self.of_job.resize(at + 1, 0);
        }
        if self.of_job[at] & WAITING != 0 {
            return; // already counted as waiting (offered again after a restart)
        }
        self.of_job[at] = (ix as u8 + 1) | WAITING;
        let t = &mut self.tallies[ix];
        t.figures.arrived += 1;
        t.depth += 1;
        t.figures.depth_peak = t.figures.depth_peak.max(t.depth);
    }

    /// The priority of action `job` (`""` when unknown).
    pub fn priority_of(&self, job: JobId) -> &'static str {
        self.slot(job)
            .map_or("", |b| self.names[usize::from((b & !WAITING) - 1)].0)
    }

    /// Stops counting `job` as waiting; its queue's tally when it was.
    fn leave(&mut self, job: JobId) -> Option<&mut Tally> {
        let b = self.slot(job)?;
        if b & WAITING == 0 {
            return None;
        }
        self.of_job[job as usize] = b & !WAITING;
        let t = &mut self.tallies[usize::from((b & !WAITING) - 1)];
        t.depth = t.depth.saturating_sub(1);
        Some(t)
    }

    /// Job `job` was sent for the first time after waiting `wait_ms`.
    pub fn sent(&mut self, job: JobId, wait_ms: u64) {
        if let Some(t) = self.leave(job) {
            t.figures.sent += 1;
            t.figures.wait_total_ms += wait_ms;
            t.wait.record(wait_ms);
        }
    }

    /// Job `job` ended without ever being sent (cancelled, or failed at admission).
    pub fn ended_unsent(&mut self, job: JobId) {
        self.leave(job);
    }

    /// `summary.json`'s `queues`, keyed `PRIORITY/CLASS`.
    pub fn finish(&self) -> BTreeMap<String, QueueFigures> {
        self.names
            .iter()
            .zip(&self.tallies)
            .map(|((p, c), t)| {
                let figures = QueueFigures {
                    depth_end: t.depth,
                    wait_ms: t.wait.percentiles(),
                    ..t.figures
                };
                (format!("{p}/{c}"), figures)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_rises_with_arrivals_and_falls_with_first_sends() {
        let mut q = Queues::default();
        q.arrive(1, Priority::Bulk, "llm");
        q.arrive(2, Priority::Bulk, "llm");
        q.arrive(3, Priority::Critical, "tool");
        assert_eq!(q.priority_of(1), "bulk");
        assert_eq!(q.priority_of(3), "critical");
        assert_eq!(q.priority_of(99), "");
        q.sent(1, 400);
        q.sent(1, 900); // a second first send is not counted again
        q.ended_unsent(3);
        let out = q.finish();
        let bulk = out["bulk/llm"];
        assert_eq!((bulk.arrived, bulk.depth_peak, bulk.depth_end), (2, 2, 1));
        assert_eq!(
            (bulk.sent, bulk.wait_total_ms, bulk.wait_ms.p50),
            (1, 400, 400)
        );
        assert_eq!(out["critical/tool"].depth_end, 0);
        assert_eq!(
            q.priority_of(1),
            "bulk",
            "kept after the send, for its attempts"
        );
    }
}
