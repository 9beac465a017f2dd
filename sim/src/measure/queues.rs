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

use super::buckets::LevelChanges;
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
    /// Change of the queue's depth in each report bucket, by the workload's arrival times:
    /// its level at each bucket's end is the timeseries' `backlog` for this queue alone.
    /// An arrival held back at admission counts from the time it arrived, where `depth`
    /// counts it only once the admission takes it up (a backlog of 38,000 refused at
    /// admission read as a peak of 97).
    levels: LevelChanges,
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

    /// Job `job`, arrived in report bucket `arrived`, was sent for the first time in bucket
    /// `sent` after waiting `wait_ms`.
    pub fn sent(&mut self, job: JobId, wait_ms: u64, (arrived, sent): (usize, usize)) {
        if let Some(t) = self.leave(job) {
            t.figures.sent += 1;
            t.figures.wait_total_ms += wait_ms;
            t.wait.record(wait_ms);
            t.levels.add(arrived, 1);
            t.levels.add(sent, -1);
        }
    }

    /// Job `job` ended without ever being sent (cancelled, or failed at admission), having
    /// arrived and ended in the report buckets `spent`; `None` for one a dead process had
    /// sent, whose wait this process does not know.
    pub fn ended_unsent(&mut self, job: JobId, spent: Option<(usize, usize)>) {
        if let (Some(t), Some((arrived, ended))) = (self.leave(job), spent) {
            t.levels.add(arrived, 1);
            t.levels.add(ended, -1);
        }
    }

    /// Job `job`, arrived in report bucket `arrived`, still waits unsent when the run
    /// stops.
    pub fn open_at_end(&mut self, job: JobId, arrived: usize) {
        let Some(b) = self.slot(job).filter(|b| b & WAITING != 0) else {
            return;
        };
        self.tallies[usize::from((b & !WAITING) - 1)]
            .levels
            .add(arrived, 1);
    }

    /// `summary.json`'s `queues`, keyed `PRIORITY/CLASS`.
    pub fn finish(&self) -> BTreeMap<String, QueueFigures> {
        self.names
            .iter()
            .zip(&self.tallies)
            .map(|((p, c), t)| {
                let figures = QueueFigures {
                    depth_end: t.depth,
                    // Each is a lower bound: `depth` sees every change but no arrival held
                    // at admission before it is taken up, the levels see those but only at
                    // bucket ends.
                    depth_peak: t.figures.depth_peak.max(t.levels.peak()),
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
        q.sent(1, 400, (0, 0));
        q.sent(1, 900, (0, 1)); // a second first send is not counted again
        q.ended_unsent(3, Some((0, 0)));
        q.open_at_end(2, 0);
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

    /// Arrivals the admission holds back count from the time they arrived: 5 arrive in
    /// bucket 0 and only 2 are taken up (and sent) before the end of bucket 3, where the
    /// other 3 are sent. The queue held 3 at the end of buckets 0 to 2, though no more
    /// than 2 were ever taken up at once.
    #[test]
    fn arrivals_held_at_admission_count_in_the_peak_from_their_arrival() {
        let mut q = Queues::default();
        for job in 1..=2 {
            q.arrive(job, Priority::Normal, "llm");
            q.sent(job, 0, (0, 0));
        }
        for job in 3..=5 {
            q.arrive(job, Priority::Normal, "llm");
            q.sent(job, 3_000, (0, 3));
        }
        let out = q.finish();
        assert_eq!(out["normal/llm"].depth_peak, 3);
        assert_eq!(out["normal/llm"].depth_end, 0);
    }
}
