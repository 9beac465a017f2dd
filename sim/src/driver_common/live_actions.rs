//! The actions the core admitted and has not finished, as a driver tracks them: the facts
//! their attempts need on the wire, when they arrived, their deadline, and whether an
//! attempt of theirs has left yet. Measured at their first dispatch and at their end.

use std::collections::HashMap;

use stampede_core::{JobId, Millis, Send, Terminal, TerminalStatus};
use stampede_provider::model::Request;

use crate::measure::Measurement;
use crate::virtual_driver::translate::{self, ActionFacts};

/// A live action.
pub struct LiveAction {
    pub facts: ActionFacts,
    /// When it arrived (ms): its latency and queue wait count from here, refusals included.
    pub submitted_at: Millis,
    /// Deadline (ms), if it has one.
    pub deadline: Option<Millis>,
    /// Whether an attempt of it has been sent.
    pub dispatched: bool,
}

/// Live actions by id. Looked up, never iterated into an output: only counted, or walked
/// in sorted id order.
#[derive(Default)]
pub struct LiveActions {
    by_id: HashMap<JobId, LiveAction>,
}

impl LiveActions {
    /// Tracks `action` under `id`.
    pub fn insert(&mut self, id: JobId, action: LiveAction) {
        self.by_id.insert(id, action);
    }

    /// Ids of the live actions, ascending.
    pub fn sorted_ids(&self) -> Vec<JobId> {
        let mut ids: Vec<JobId> = self.by_id.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// The provider request for `send` at `now` (ms), measuring the action's first dispatch
    /// and the tokens reserved. Errs (with the message) when the core sent for an action the
    /// driver does not track, which would be a bug in the core or the driver.
    pub fn dispatch(
        &mut self,
        send: &Send,
        now: Millis,
        measure: &mut Measurement,
    ) -> Result<Request, String> {
        // The core sends only for actions it admitted, which are all live here.
        let Some(action) = self.by_id.get_mut(&send.job) else {
            return Err(format!("the core sent for unknown action {}", send.job));
        };
        if !action.dispatched {
            action.dispatched = true;
            measure.on_first_dispatch(now.saturating_sub(action.submitted_at));
        }
        measure.on_reserved(send.reserved_tokens);
        Ok(translate::request(send, &action.facts))
    }

    /// Measures `terminal` at `now` (ms) and stops tracking its action. `false` when the
    /// action was not live (already finished or never tracked): nothing is measured.
    pub fn finish(&mut self, terminal: &Terminal, now: Millis, measure: &mut Measurement) -> bool {
        let Some(action) = self.by_id.remove(&terminal.job) else {
            return false;
        };
        let late = terminal.status != TerminalStatus::Cancelled
            && action.deadline.is_some_and(|d| now > d);
        measure.on_terminal(
            now,
            &action.facts.tenant,
            terminal,
            now.saturating_sub(action.submitted_at),
            late,
        );
        true
    }

    /// When a run stops at `now` (ms): how many actions are still live, and how many of
    /// them are past their deadline.
    pub fn unfinished(&self, now: Millis) -> (u64, u64) {
        let late = self
            .by_id
            .values()
            .filter(|a| a.deadline.is_some_and(|d| d < now))
            .count();
        (self.by_id.len() as u64, late as u64)
    }
}
