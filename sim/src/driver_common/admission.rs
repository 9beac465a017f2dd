//! Admission: the workload's arrivals offered to the core as they fall due, with the
//! backpressure both drivers honour. When the core refuses an action (its queue for that
//! tenant and priority is full), the driver stops pulling arrivals, like a producer that
//! honours the refusal, and offers the same action again when an action finishes or the
//! refusal's retry-after has passed. The action's latency, queue wait and deadline still
//! count from its arrival. One refused action holds back the arrivals behind it (head of
//! line).

use std::collections::BTreeSet;

use stampede_core::{JobId, Millis, Terminal};

use super::client_core::ClientCore;
use super::live_actions::{LiveAction, LiveActions};
use crate::measure::Measurement;
use crate::scenario::Scenario;
use crate::workload::{Arrival, Arrivals};

/// The arrivals still to offer, and the one the core refused.
pub struct Admission {
    arrivals: Arrivals,
    /// An arrival the core refused, and when to offer it again (ms).
    held: Option<(Arrival, Millis)>,
    /// Actions a dead process already submitted: the replayed workload skips them (they are
    /// restored from the ledger instead).
    restored: BTreeSet<JobId>,
    /// Offers the core refused (backpressure), over the run.
    refused: u64,
    /// When the client policy's execution budget ends (ms), if it has one: a refusal from
    /// then on is for the spent budget, not a full queue (`room_for` does not say which).
    execution_end: Option<Millis>,
}

impl Admission {
    /// The arrivals of `scenario`, skipping the ids in `restored`.
    pub fn new(scenario: &Scenario, restored: BTreeSet<JobId>) -> Self {
        Self {
            arrivals: Arrivals::new(scenario),
            held: None,
            restored,
            refused: 0,
            execution_end: scenario
                .policy
                .execution_budget
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    /// Offers the core refused so far (an arrival held back and offered again counts once
    /// per refusal): loop work, but not progress.
    pub fn refused_offers(&self) -> u64 {
        self.refused
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
    /// admitted (loop events); refused offers are counted apart (`refused_offers`).
    pub fn admit(
        &mut self,
        now: Millis,
        accepting: bool,
        core: &mut impl ClientCore,
        live: &mut LiveActions,
        measure: &mut Measurement,
    ) -> u64 {
        let mut admitted = 0;
        loop {
            // The held offer is looked at in place: taking it out to put it back moved a
            // whole job twice at every turn of the loop while it waited.
            let arrival = match &self.held {
                Some((_, retry_at)) if *retry_at <= now && accepting => match self.held.take() {
                    Some((arrival, _)) => arrival,
                    None => unreachable!("an offer is held"),
                },
                Some(_) => break,
                None if accepting && self.arrivals.peek_time().is_some_and(|t| t <= now) => {
                    match self.arrivals.next() {
                        Some(a) if self.restored.contains(&a.job.id) => continue,
                        Some(a) => {
                            if a.run_start {
                                measure.agents().started();
                            }
                            measure.on_submit();
                            measure.on_arrival(a.job.id, a.job.priority, &a.job.class);
                            measure.on_tenant_arrival(a.job.id, &a.job.tenant, a.at);
                            a
                        }
                        None => break,
                    }
                }
                None => break,
            };
            // Backpressure first: a refused offer is held without a copy or a message.
            if let Err(retry_after_ms) = core.room_for(&arrival.job) {
                self.refused += 1;
                let cause = if self.execution_end.is_some_and(|end| now >= end) {
                    "execution_budget_spent"
                } else {
                    "queue_full"
                };
                measure.on_pushed_back(arrival.job.id, cause, retry_after_ms);
                self.held = Some((arrival, now + retry_after_ms.max(1)));
                break;
            }
            let (id, deadline) = (arrival.job.id, arrival.job.deadline);
            match core.submit(arrival.job.clone(), now) {
                Ok(()) => {
                    admitted += 1;
                    live.insert(id, LiveAction::of(arrival.at, arrival.job, deadline));
                }
                Err(rejection) if rejection.cause.is_final() => {
                    // Never offered again: it ends here, failed and never sent.
                    admitted += 1;
                    live.insert(id, LiveAction::of(arrival.at, arrival.job, deadline));
                    let mut terminal = Terminal::refused(id);
                    if deadline.is_some_and(|d| arrival.at < d) {
                        // It arrived in time and waited, held back at admission, until its
                        // deadline passed: a deadline exceeded, not work that came late.
                        terminal.reason = stampede_core::Reason::DeadlineExceeded;
                    }
                    live.finish(&terminal, now, measure);
                    self.arrivals.on_terminal(&terminal, now, measure);
                }
                Err(rejection) => {
                    self.refused += 1;
                    measure.on_pushed_back(id, rejection.cause.label(), rejection.retry_after_ms);
                    self.held = Some((arrival, now + rejection.retry_after_ms.max(1)));
                    break;
                }
            }
        }
        admitted
    }

    /// Action `terminal.job` ended at `now` (ms): its capacity is free, so a refused
    /// arrival is offered again at once, and what follows from its outcome (an agent run's
    /// next call, a changed request) is scheduled.
    pub fn ended(&mut self, terminal: &Terminal, now: Millis, measure: &mut Measurement) {
        self.capacity_freed(now);
        self.arrivals.on_terminal(terminal, now, measure);
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
        let never_sent = |measure: &mut Measurement, arrival: &crate::workload::Arrival| {
            let job = &arrival.job;
            let group = crate::measure::Group {
                tenant: &job.tenant,
                class: &job.class,
                route: crate::measure::action_route(job.route),
            };
            measure.on_unfinished(now, (job.id, group), arrival.at, job.deadline, false);
            measure.list_unfinished(
                job.id,
                stampede_reports::UnfinishedRow {
                    tenant: arrival.job.tenant.to_string(),
                    class: arrival.job.class.to_string(),
                    submitted_at_ms: arrival.at,
                    sent: false,
                    state: "never_sent".into(),
                    idempotency_key: String::new(),
                    external_ref: arrival.job.external_ref.clone().unwrap_or_default(),
                    ..stampede_reports::UnfinishedRow::default()
                },
            );
        };
        if let Some((arrival, _)) = self.held.take() {
            never_sent(measure, &arrival);
        }
        while self.arrivals.peek_time().is_some_and(|t| t <= now) {
            let Some(arrival) = self.arrivals.next() else {
                break;
            };
            if self.restored.contains(&arrival.job.id) {
                continue;
            }
            if arrival.run_start {
                measure.agents().started();
            }
            measure.on_submit();
            measure.on_arrival(arrival.job.id, arrival.job.priority, &arrival.job.class);
            measure.on_tenant_arrival(arrival.job.id, &arrival.job.tenant, arrival.at);
            never_sent(measure, &arrival);
        }
        measure.agents().unfinished(self.arrivals.open_runs());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = r#"
name = "restored"
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
"#;

    /// A runner restarted after the scenario's end: the 6 actions its dead process had
    /// persisted come back from the ledger, so the cap measures only the 4 never submitted,
    /// never sent, and none of them twice.
    #[test]
    fn restored_actions_are_not_counted_again_at_the_cap() {
        let scenario = crate::scenario::parse(SCENARIO, "restored.toml", &[]).unwrap();
        let restored: BTreeSet<JobId> = (1..=6).collect();
        let mut admission = Admission::new(&scenario, restored);
        let mut measure = Measurement::new(1_000, scenario.duration_ms);
        admission.unfinished(scenario.duration_ms, &mut measure);
        let m = measure.finish(scenario.duration_ms);
        assert_eq!(m.summary.logical_requests, 4);
        assert_eq!((m.summary.unfinished, m.summary.unfinished_sent), (4, 0));
        assert_eq!(m.summary.failed, 0, "open is not failed");
        let ids: Vec<u64> = m.unfinished.iter().map(|r| r.action).collect();
        assert_eq!(ids, vec![7, 8, 9, 10]);
        assert!(m
            .unfinished
            .iter()
            .all(|r| r.next_safe_action == "submit_again"));
    }
}
