//! The actions the core admitted and has not finished, as a driver tracks them: the facts
//! their attempts need on the wire, when they arrived, their deadline, and whether an
//! attempt of theirs has left yet. Measured at their first dispatch and at their end.

use rustc_hash::FxHashMap;

use stampede_core::{ActionState, JobId, LedgerEntry, Millis, Outcome, SendAttempt, Terminal};
use stampede_provider::model::Request;
use stampede_reports::UnfinishedRow;

use crate::driver_common::case_file::{CaseNotes, Ending, PROVIDER};
use crate::driver_common::translate::{self, ActionFacts};
use crate::measure::{action_route, Ended, Group, GroupKey, Measurement, SentBy};
use stampede_core::id_slab::IdSlab;

/// A live action.
pub struct LiveAction {
    pub facts: ActionFacts,
    /// When it arrived (ms): its latency and queue wait count from here, refusals included.
    pub submitted_at: Millis,
    /// Deadline (ms), if it has one.
    pub deadline: Option<Millis>,
    /// When its first attempt was sent (ms), if one has been. A restored action that a dead
    /// process had sent has its restart time here (its first send is not known).
    pub first_sent_at: Option<Millis>,
    /// Its task, scope, key and attempt timeline, for a dead letter or a case file.
    pub case: CaseNotes,
    /// The key of its groups in the measurement, made at its first dispatch.
    pub group: Option<GroupKey>,
}

impl LiveAction {
    /// Action `job`, arrived at `submitted_at` (ms), just admitted: nothing sent yet.
    pub fn of(submitted_at: Millis, job: stampede_core::Job, deadline: Option<Millis>) -> Self {
        LiveAction {
            submitted_at,
            facts: ActionFacts::from_job(job),
            deadline,
            first_sent_at: None,
            case: CaseNotes::default(),
            group: None,
        }
    }

    /// Who the harness sent this action for, as the measurement attributes its attempts (its
    /// tenant, class, priority and groups), sent to provider `provider`.
    pub fn sent_by(&self, provider: u8) -> SentBy<'_> {
        SentBy {
            tenant: &self.facts.tenant,
            class: &self.facts.class,
            priority: crate::measure::queues::priority_name(self.facts.priority),
            provider,
            group: self.group,
        }
    }
}

/// Who the harness sent `action` for, as the measurement attributes its attempts (its
/// tenant, class, priority and groups), sent to provider `provider`. An action the driver
/// no longer tracks (`None`) is attributed to no one (empty names).
pub fn sent_by(action: Option<&LiveAction>, provider: u8) -> SentBy<'_> {
    match action {
        Some(action) => action.sent_by(provider),
        None => SentBy {
            provider,
            ..SentBy::default()
        },
    }
}

/// Live actions by id. Looked up, never iterated into an output: only counted, or walked
/// in sorted id order.
#[derive(Default)]
pub struct LiveActions {
    by_id: IdSlab<LiveAction>,
    /// Whether requests carry the client's `x-stampede-*` claims (`client.claims`).
    silent: bool,
    /// Whether no attempt timelines are noted (see [`LiveActions::keep_notes`]).
    no_notes: bool,
    /// In a run with several providers, which provider issued each key: a case file names
    /// the provider its action went to last. Empty: the one `[provider]`.
    provider_of_key: FxHashMap<String, String>,
}

impl LiveActions {
    /// Whether the requests it builds carry the client's `x-stampede-*` claims (on by
    /// default; off plays a client that says nothing about itself).
    pub fn set_claims(&mut self, claims: bool) {
        self.silent = !claims;
    }

    /// Whether to note each action's attempt timeline (on by default). The notes feed only
    /// dead letters and case files, so a run that keeps none (no run directory: a sweep, a
    /// benchmark) turns them off and saves, per action, a timeline vector allocated and
    /// freed and, per answer, a look-up of the action (about 3% of the million-request run).
    pub fn keep_notes(&mut self, keep: bool) {
        self.no_notes = !keep;
    }

    /// A run with several providers: `(key, provider name)` for every key.
    pub fn name_providers(&mut self, keys: impl IntoIterator<Item = (String, String)>) {
        self.provider_of_key = keys.into_iter().collect();
    }

    /// Tracks `action` under `id`.
    pub fn insert(&mut self, id: JobId, action: LiveAction) {
        self.by_id.insert(id, action);
    }

    /// The live action `id`, if tracked.
    pub fn get(&self, id: JobId) -> Option<&LiveAction> {
        self.by_id.get(&id)
    }

    /// Ids of the live actions, ascending.
    pub fn sorted_ids(&self) -> Vec<JobId> {
        self.by_id.ids()
    }

    /// Writes the provider request for `send` at `now` (ms) into `request` (the previous
    /// attempt's, reused: see `translate::fill_request`), measuring the action's first
    /// dispatch and the tokens reserved, and lends the action, for its wire to read who sent
    /// it without finding it again. Errs (with the message) when the core sent for an
    /// action the driver does not track, which would be a bug in the core or the driver.
    pub fn dispatch(
        &mut self,
        send: &SendAttempt,
        now: Millis,
        measure: &mut Measurement,
        request: &mut Request,
    ) -> Result<&LiveAction, String> {
        // The core sends only for actions it admitted, which are all live here.
        let Some(action) = self.by_id.get_mut(&send.job) else {
            return Err(format!("the core sent for unknown action {}", send.job));
        };
        if action.first_sent_at.is_none() {
            action.first_sent_at = Some(now);
            measure.on_first_dispatch(send.job, action.submitted_at, now);
            // A rung shapes an action once, at its first send; its retries keep the shape.
            if let Some(rung) = send.degraded {
                measure.on_degraded(rung.label());
            }
        }
        if let Some(reason) = send.fallback {
            let name = |key: &str| {
                self.provider_of_key
                    .get(key)
                    .map_or(PROVIDER, String::as_str)
            };
            measure.on_fallback(
                reason.label(),
                (name(&action.facts.credential), name(&send.credential)),
            );
            // The case file names where the action went last.
            action.facts.credential = send.credential;
            action.facts.scope = Some(send.scope);
        }
        let facts = &action.facts;
        let group = *action
            .group
            .get_or_insert_with(|| measure.group_key(&facts.tenant, &facts.class, facts.priority));
        measure.on_reserved(group, facts.route, send.reserved_tokens);
        if !self.no_notes {
            let keyed = send.idempotency_key.is_some();
            action.case.sent(send.attempt_no, &send.kind, keyed, now);
        }
        translate::fill_request(request, send, &action.facts);
        if self.silent {
            request.tenant = None;
            request.class = None;
            request.action = None;
            request.attempt_no = None;
        }
        Ok(action)
    }

    /// The client heard `outcome` of attempt `attempt_no` of action `id` at `now` (ms): noted
    /// in the action's timeline (an action no longer live is ignored; nothing is noted when
    /// notes are off).
    pub fn note_answer(&mut self, id: JobId, attempt_no: u32, outcome: &Outcome, now: Millis) {
        if self.no_notes {
            return;
        }
        if let Some(action) = self.by_id.get_mut(&id) {
            action.case.answered(attempt_no, outcome, now);
        }
    }

    /// Brings action `id`'s record into the CPU's cache ahead of its terminal (see
    /// `IdSlab::prefetch`): the virtual driver calls it when the action's answer arrives,
    /// before the core settles the answer and the terminal comes out.
    #[inline]
    pub fn prefetch(&self, id: JobId) {
        self.by_id.prefetch(&id);
    }

    /// Measures `terminal` at `now` (ms) and stops tracking its action. `false` when the
    /// action was not live (already finished or never tracked): nothing is measured.
    pub fn finish(&mut self, terminal: &Terminal, now: Millis, measure: &mut Measurement) -> bool {
        let provider_of_key = &self.provider_of_key;
        // Read where it lies and dropped there: moving the whole action out of its slot only
        // to drop it was a copy per terminal. Only its notes (a vector) are taken.
        self.by_id
            .remove_with(&terminal.job, |action| {
                Self::measure_end(action, provider_of_key, terminal, now, measure)
            })
            .is_some()
    }

    /// Measures the end of `action` by `terminal` at `now` (ms), taking its notes.
    fn measure_end(
        action: &mut LiveAction,
        provider_of_key: &FxHashMap<String, String>,
        terminal: &Terminal,
        now: Millis,
        measure: &mut Measurement,
    ) {
        let case = std::mem::take(&mut action.case);
        measure.on_terminal(Ended {
            at: now,
            tenant: &action.facts.tenant,
            class: &action.facts.class,
            route: action_route(action.facts.route),
            terminal,
            submitted_at: action.submitted_at,
            first_sent_at: action.first_sent_at,
            deadline: action.deadline,
            group: action.group.map(|key| (key, action.facts.route)),
        });
        measure.on_case(
            terminal,
            case,
            &Ending {
                action: terminal.job,
                facts: &action.facts,
                provider: provider_of_key
                    .get(&*action.facts.credential)
                    .map_or(PROVIDER, String::as_str),
                submitted_at: action.submitted_at,
                at: now,
                deadline: action.deadline,
            },
        );
    }

    /// When a run stops at `now` (ms): measures every action still live as unfinished, in
    /// id order (sent or not: one with an attempt out may have executed), and lists it with
    /// its next safe action, its key and state read from the core's ledger `entries`.
    pub fn unfinished(&self, now: Millis, measure: &mut Measurement, entries: Vec<LedgerEntry>) {
        let ledger: FxHashMap<JobId, LedgerEntry> = entries
            .into_iter()
            .filter(|e| !e.state.is_terminal())
            .map(|e| (e.job.id, e))
            .collect();
        for id in self.sorted_ids() {
            let Some(a) = self.by_id.get(&id) else {
                continue;
            };
            let sent = a.first_sent_at.is_some();
            let group = Group {
                tenant: &a.facts.tenant,
                class: &a.facts.class,
                route: action_route(a.facts.route),
            };
            measure.on_unfinished(now, (id, group), a.submitted_at, a.deadline, sent);
            let entry = ledger.get(&id);
            let state = match (sent, entry.map(|e| e.state)) {
                (_, Some(ActionState::ReconciliationRequired)) => "reconciliation_required",
                (true, _) => "in_flight",
                (false, _) => "never_sent",
            };
            measure.list_unfinished(
                id,
                UnfinishedRow {
                    tenant: a.facts.tenant.to_string(),
                    class: a.facts.class.to_string(),
                    submitted_at_ms: a.submitted_at,
                    sent,
                    state: state.to_string(),
                    idempotency_key: entry
                        .and_then(|e| e.job.idempotency_key.as_ref())
                        .map(String::from)
                        .unwrap_or_default(),
                    external_ref: a.facts.external_ref.clone().unwrap_or_default(),
                    ..UnfinishedRow::default()
                },
            );
        }
    }
}

#[cfg(test)]
mod sizes {
    /// The README quotes the bytes the driver's record of a live action costs: 264 since
    /// its task name is held inline (24 bytes where a shared string's pointer took 16, and
    /// no allocation per action); its case notes hold the first attempt inline.
    #[test]
    fn a_live_action_is_at_most_264_bytes() {
        let size = std::mem::size_of::<Option<super::LiveAction>>();
        assert!(size <= 264, "Option<LiveAction> is {size} bytes");
    }
}
