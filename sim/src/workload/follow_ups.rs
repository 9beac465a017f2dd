//! Calls that follow from outcomes, generated as actions end:
//!
//! - an agent run's next LLM call (seed 004), after the tool call between the two; a call
//!   whose retries ran out comes back to the run as the tool's result and the run goes on,
//!   until its last call or its execution budget;
//! - an improvising agent's changed request after a failure (seed 000): the same call with
//!   its fields reordered, a changed filter, or a nearby resource. An agent that gets the
//!   breaker's constraint back (its path is open) stops.
//!
//! Every follow-up is a new logical request with an id of its own. Memory is bounded by the
//! live actions: a follow-up is created only when its predecessor ends.

use std::collections::{BTreeMap, HashMap};

use stampede_core::{Job, JobId, Millis, Reason, Terminal, TerminalStatus};

use super::{Arrival, EntryStream};
use crate::measure::agents::RunEnd;
use crate::measure::Measurement;
use crate::scenario::WorkloadSpec;

/// How an improvising agent changes a failed request (seed 000: "another nearby endpoint,
/// change a filter ... reorder JSON fields").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// The same fields in another order: the same normalized payload, so the same
    /// fingerprint and the same derived key.
    Reorder,
    /// A changed filter: a new payload.
    Filter,
    /// A nearby resource on the same endpoint template (another id); a payload change
    /// for routes without a resource.
    Nearby,
}

impl Change {
    /// The change of the agent's `variant`-th attempt (0-based), in seed 000's order.
    fn nth(variant: u32) -> Change {
        [Change::Reorder, Change::Filter, Change::Nearby][variant as usize % 3]
    }

    fn label(self) -> &'static str {
        match self {
            Change::Reorder => "reorder",
            Change::Filter => "filter",
            Change::Nearby => "nearby",
        }
    }

    /// `job` as the agent changes it for its `variant`-th changed request (1-based).
    fn apply(self, job: &mut Job, variant: u32) {
        let salt = crate::rng::mix(job.payload_hash, u64::from(variant));
        match self {
            Change::Reorder => {}
            Change::Nearby if job.resource.is_some() => {
                job.resource = job.resource.take().map(|r| format!("{r}-near-{variant}"));
            }
            Change::Filter | Change::Nearby => job.payload_hash = salt,
        }
    }
}

/// What a live call of an agent run or an improvising workload is.
#[derive(Debug)]
struct Step {
    workload: usize,
    /// The run's (or the original action's) number within its workload.
    n: u64,
    /// The call's place in its run (0-based); 0 outside agent runs.
    call: u32,
    /// Changed requests sent so far for this call.
    variant: u32,
    /// The request as sent, kept to change it (improvising workloads only).
    template: Option<Box<Job>>,
}

/// A follow-up waiting for its time.
#[derive(Debug)]
enum Pending {
    /// An agent run's next call.
    Call { workload: usize, n: u64, call: u32 },
    /// A changed request.
    Variant {
        workload: usize,
        n: u64,
        call: u32,
        variant: u32,
        job: Box<Job>,
    },
}

#[derive(Debug)]
struct Run {
    start: Millis,
    /// Requests of the run that ended (changed ones included).
    calls: u32,
    /// When its execution budget ends (ms).
    end: Millis,
}

/// The follow-ups due and the state they follow from.
#[derive(Debug, Default)]
pub(super) struct FollowUps {
    pending: BTreeMap<(Millis, u64), Pending>,
    seq: u64,
    steps: HashMap<JobId, Step>,
    runs: HashMap<(usize, u64), Run>,
}

impl FollowUps {
    pub fn peek_time(&self) -> Option<Millis> {
        self.pending.first_key_value().map(|((at, _), _)| *at)
    }

    pub fn open_runs(&self) -> u64 {
        self.runs.len() as u64
    }

    /// A stream's arrival number `n` of `spec`: starts an agent run, and is followed when
    /// its workload chains or improvises.
    pub fn register(&mut self, spec: &WorkloadSpec, n: u64, arrival: &mut Arrival) {
        if spec.agent.is_none() && spec.improvise.is_none() {
            return;
        }
        if let Some(agent) = spec.agent {
            let end = arrival.at.saturating_add(agent.budget.ms());
            self.runs.insert(
                (arrival.workload, n),
                Run {
                    start: arrival.at,
                    calls: 0,
                    end,
                },
            );
            arrival.job.deadline = Some(call_deadline(spec, arrival.at, end));
            arrival.run_start = true;
        }
        self.track(spec, arrival.workload, n, 0, 0, &arrival.job);
    }

    fn track(
        &mut self,
        spec: &WorkloadSpec,
        workload: usize,
        n: u64,
        call: u32,
        variant: u32,
        job: &Job,
    ) {
        let template = spec.improvise.map(|_| Box::new(job.clone()));
        self.steps.insert(
            job.id,
            Step {
                workload,
                n,
                call,
                variant,
                template,
            },
        );
    }

    /// The follow-up due first, as arrival `id` at `at` (ms), tracked as a call of its
    /// workload in `streams`; an agent run's next call is drawn from its stream (`seed`).
    pub fn pop(
        &mut self,
        streams: &mut [EntryStream],
        seed: u64,
        id: JobId,
        at: Millis,
    ) -> Arrival {
        let (_, pending) = self.pending.pop_first().expect("a follow-up is due");
        let (workload, n, call, variant, job) = match pending {
            Pending::Call { workload, n, call } => {
                let mut job = streams[workload].job(id, at, n, call, seed);
                if let Some(run) = self.runs.get(&(workload, n)) {
                    job.deadline = Some(call_deadline(&streams[workload].spec, at, run.end));
                }
                (workload, n, call, 0, job)
            }
            Pending::Variant {
                workload,
                n,
                call,
                variant,
                mut job,
            } => {
                job.id = id;
                (workload, n, call, variant, *job)
            }
        };
        self.track(&streams[workload].spec, workload, n, call, variant, &job);
        Arrival {
            at,
            workload,
            job,
            run_start: false,
        }
    }

    /// Action `terminal.job` ended at `now` (ms), one of `streams`' actions.
    pub fn on_terminal(
        &mut self,
        streams: &[EntryStream],
        terminal: &Terminal,
        now: Millis,
        measure: &mut Measurement,
    ) {
        if self.steps.is_empty() {
            return; // no workload follows its outcomes: nothing to look up
        }
        let Some(step) = self.steps.remove(&terminal.job) else {
            return;
        };
        let spec = &streams[step.workload].spec;
        let failed = matches!(
            terminal.status,
            TerminalStatus::Failed
                | TerminalStatus::Escalated
                | TerminalStatus::ReconciliationRequired
        );
        let constraint = matches!(terminal.reason, Reason::CircuitOpen { .. });
        let run_key = (step.workload, step.n);
        let budget_left = self.runs.get(&run_key).map_or(true, |run| now < run.end);
        if let (Some(improvise), true, Some(mut job)) = (spec.improvise, failed, step.template) {
            if constraint {
                // The breaker's constraint came back: the agent stops changing the request.
                measure.on_improvised("stopped");
            } else if step.variant < improvise.times && budget_left {
                let variant = step.variant + 1;
                let change = Change::nth(step.variant);
                change.apply(&mut job, variant);
                measure.on_improvised(change.label());
                if let Some(run) = self.runs.get_mut(&run_key) {
                    run.calls += 1;
                    measure.agents().call(false);
                }
                self.push(
                    now.saturating_add(improvise.after.ms()),
                    Pending::Variant {
                        workload: step.workload,
                        n: step.n,
                        call: step.call,
                        variant,
                        job,
                    },
                );
                return;
            }
        }
        let Some(agent) = spec.agent else {
            return;
        };
        let Some(run) = self.runs.get_mut(&run_key) else {
            return;
        };
        run.calls += 1;
        let over = matches!(
            terminal.reason,
            Reason::DeadlineExceeded | Reason::DeadlinePassed | Reason::ExecutionBudgetExhausted
        );
        let end = if terminal.status == TerminalStatus::Cancelled {
            Some(RunEnd::Cancelled)
        } else if over {
            Some(RunEnd::OverBudget)
        } else if step.call + 1 >= agent.calls {
            Some(RunEnd::Completed)
        } else {
            None
        };
        // Its error goes back to the run as the tool's result when the run goes on.
        measure
            .agents()
            .call(failed && end != Some(RunEnd::OverBudget));
        if let Some(end) = end {
            let run = self.runs.remove(&run_key).expect("the run is open");
            measure
                .agents()
                .ended(end, run.calls, now.saturating_sub(run.start));
            return;
        }
        // The tool call between two LLM calls; one that runs past its timeout comes back
        // as a timeout at the timeout.
        let tool = agent.tool_time.ms().min(agent.tool_timeout.ms());
        if agent.tool_time.ms() > agent.tool_timeout.ms() {
            measure.agents().tool_timeout();
        }
        self.push(
            now.saturating_add(tool),
            Pending::Call {
                workload: step.workload,
                n: step.n,
                call: step.call + 1,
            },
        );
    }

    fn push(&mut self, at: Millis, pending: Pending) {
        self.seq += 1;
        self.pending.insert((at, self.seq), pending);
    }
}

/// An agent call's deadline: the run's budget end, or the workload's own deadline from
/// `at` (ms) when sooner.
fn call_deadline(spec: &WorkloadSpec, at: Millis, run_end: Millis) -> Millis {
    spec.deadline
        .map_or(run_end, |d| run_end.min(at.saturating_add(d.ms())))
}
