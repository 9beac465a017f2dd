//! The degradation ladder at dispatch. Pressure is the number of actions in the ready
//! queues (admitted or due again, not yet sent); every rung whose `at_queued` it reaches is
//! active, and all active rungs apply to an action of a priority they list, once, when its
//! first attempt is dispatched: `cached` answers it without a send (and wins over every
//! other rung), `trim_output` and `smaller_model` shape its attempts (its retries keep that
//! shape), and `pause_bulk` keeps bulk actions in their queues while it is active.

use super::state::Shape;
use super::Scheduler;
use crate::degradation::RungKind;
use crate::job::{JobId, Priority};
use crate::ledger::Ledger;

/// What the ladder does to an action's first attempt.
pub(super) enum Ladder {
    /// Send it, shaped by the active rungs (`None`: no rung applies).
    Send(Option<Box<Shape>>),
    /// Answer it without a send.
    Cached,
}

impl<L: Ledger> Scheduler<L> {
    /// Actions waiting in the ready queues (actions): the ladder's pressure.
    fn pressure(&self) -> u64 {
        self.counts.ready
    }

    /// Whether an active `pause_bulk` rung holds bulk actions in their queues. Its pressure
    /// leaves the ready bulk actions out, so a bulk backlog cannot pause itself for ever.
    pub(super) fn bulk_paused(&self) -> bool {
        if self.policy.degradation.is_empty() {
            return false;
        }
        let pressure = self.counts.ready.saturating_sub(self.counts.ready_bulk);
        self.policy.degradation.iter().any(|rung| {
            rung.kind == RungKind::PauseBulk
                && rung.applies_to(Priority::Bulk)
                && rung.active(pressure)
        })
    }

    /// Whether a `cached` rung is active: dispatch then serves queue heads even without a
    /// free concurrency slot, since a cached answer takes none.
    pub(super) fn cached_active(&self) -> bool {
        if self.policy.degradation.is_empty() {
            return false;
        }
        let pressure = self.pressure();
        self.policy
            .degradation
            .iter()
            .any(|rung| rung.kind == RungKind::Cached && rung.active(pressure))
    }

    /// What the active rungs do to this action's first attempt.
    pub(super) fn ladder(&self, id: JobId) -> Ladder {
        let pressure = self.pressure();
        let job = &self.jobs[&id].entry.job;
        // The shape so far, with the `at_queued` of the most severe rung applied.
        let mut shape: Option<(u64, Shape)> = None;
        for rung in &self.policy.degradation {
            if !rung.active(pressure) || !rung.applies_to(job.priority) {
                continue;
            }
            match rung.kind {
                RungKind::Cached => return Ladder::Cached,
                RungKind::PauseBulk => continue,
                RungKind::TrimOutput | RungKind::SmallerModel => {}
            }
            let (severest, current) = shape.get_or_insert((
                rung.at_queued,
                Shape {
                    kind: rung.kind,
                    prompt_tokens: job.prompt_tokens,
                    max_output_tokens: job.max_output_tokens,
                    model: None,
                },
            ));
            if rung.kind == RungKind::TrimOutput {
                current.prompt_tokens = rung.trim(current.prompt_tokens);
                current.max_output_tokens = rung.trim(current.max_output_tokens);
            } else {
                current.model.clone_from(&rung.model);
            }
            if rung.at_queued >= *severest {
                *severest = rung.at_queued;
                current.kind = rung.kind;
            }
        }
        Ladder::Send(shape.map(|(_, shape)| Box::new(shape)))
    }
}
