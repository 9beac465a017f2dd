//! Admission: the workload's arrivals offered to the core as they fall due, with the
//! backpressure both drivers honour. When the core refuses an action (its queue for that
//! tenant and priority is full), the driver stops pulling arrivals, like a producer that
//! honours the refusal, and offers the same action again when an action finishes or the
//! refusal's retry-after has passed. The action's latency, queue wait and deadline still
//! count from its arrival. One refused action holds back the arrivals behind it (head of
//! line).

use std::collections::BTreeSet;

use stampede_core::{JobId, Ledger, Millis, Scheduler};

use super::live_actions::{LiveAction, LiveActions};
use crate::measure::Measurement;
use crate::scenario::Scenario;
use crate::virtual_driver::translate::ActionFacts;
use crate::workload::{Arrival, Arrivals};

/// The arrivals still to offer, and the one the core refused.
pub struct Admission {
    arrivals: Arrivals,
    /// An arrival the core refused, and when to offer it again (ms).
    held: Option<(Arrival, Millis)>,
    /// Actions a dead process already submitted: the replayed workload skips them (they are
    /// restored from the ledger instead).
    restored: BTreeSet<JobId>,
}

impl Admission {
    /// The arrivals of `scenario`, skipping the ids in `restored`.
    pub fn new(scenario: &Scenario, restored: BTreeSet<JobId>) -> Self {
        Self {
            arrivals: Arrivals::new(scenario),
            held: None,
            restored,
        }
    }

    /// When an arrival is next due (ms): the refused one's retry time, else the next
    /// arrival's, `None` when the workload is done.
    pub fn next_time(&self) -> Option<Millis> {
        match &self.held {
            Some((_, retry_at)) => Some(*retry_at),
            None => self.arrivals.peek_time(),
        }
    }

    /// Submits to `core` every arrival due by `now` (ms), until the core refuses one, which
    /// is held until `now + retry_after`. Nothing is offered while the runner is not
    /// `accepting` (it is down). Admitted actions go to `live`. Returns the arrivals
    /// offered (loop events).
    pub fn admit<L: Ledger>(
        &mut self,
        now: Millis,
        accepting: bool,
        core: &mut Scheduler<L>,
        live: &mut LiveActions,
        measure: &mut Measurement,
    ) -> u64 {
        let mut offered = 0;
        loop {
            let arrival = match self.held.take() {
                Some((arrival, retry_at)) if retry_at <= now && accepting => arrival,
                Some(waiting) => {
                    self.held = Some(waiting);
                    break;
                }
                None if accepting && self.arrivals.peek_time().is_some_and(|t| t <= now) => {
                    match self.arrivals.next() {
                        Some(a) if self.restored.contains(&a.job.id) => continue,
                        Some(a) => {
                            measure.on_submit();
                            a
                        }
                        None => break,
                    }
                }
                None => break,
            };
            offered += 1;
            let job = arrival.job.clone();
            let facts = ActionFacts::of(&job);
            let (id, deadline) = (job.id, job.deadline);
            match core.submit(job, now) {
                Ok(()) => live.insert(
                    id,
                    LiveAction {
                        facts,
                        submitted_at: arrival.at,
                        deadline,
                        first_sent_at: None,
                    },
                ),
                Err(rejection) => {
                    measure.on_pushed_back(id);
                    self.held = Some((arrival, now + rejection.retry_after_ms.max(1)));
                    break;
                }
            }
        }
        offered
    }

    /// Capacity was freed at `now` (ms): a refused arrival is offered again at once.
    pub fn capacity_freed(&mut self, now: Millis) {
        if let Some((_, retry_at)) = &mut self.held {
            *retry_at = now;
        }
    }

    /// When a run stops at `now` (ms): measures the logical requests never admitted (the
    /// refused one, and those due by `now` but held back behind it, each counted as
    /// submitted) as unfinished and never sent. Arrivals due after `now` were never part
    /// of the run.
    pub fn unfinished(&mut self, now: Millis, measure: &mut Measurement) {
        if let Some((arrival, _)) = self.held.take() {
            measure.on_unfinished(now, arrival.at, arrival.job.deadline, false);
        }
        while self.arrivals.peek_time().is_some_and(|t| t <= now) {
            let Some(arrival) = self.arrivals.next() else {
                break;
            };
            if self.restored.contains(&arrival.job.id) {
                continue;
            }
            measure.on_submit();
            measure.on_unfinished(now, arrival.at, arrival.job.deadline, false);
        }
    }
}
