//! Logical actions from the scenario's `[[workload]]` entries, generated lazily in arrival
//! order: each entry is a stream with its own ChaCha RNG, and the streams are merged by
//! arrival time, so memory stays constant however many actions a scenario has.

mod follow_ups;
pub mod tokens;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use stampede_core::{Job, JobId, Millis, Name, Route, TaskName};

use crate::rng;
use crate::scenario::{Arrival as ArrivalSpec, Scenario, WorkloadSpec};

/// One logical action arriving at the client.
#[derive(Debug, Clone, PartialEq)]
pub struct Arrival {
    /// Submission time (ms since run start).
    pub at: Millis,
    /// Index of the `[[workload]]` entry it came from.
    pub workload: usize,
    /// The logical action, as the core is handed it.
    pub job: Job,
    /// The first call of an agent run: the run starts with it.
    pub run_start: bool,
}

/// The prefix of entry `index`'s task names (`{prefix}-{n}`).
fn task_prefix(index: usize, spec: &WorkloadSpec) -> String {
    spec.task
        .clone()
        .unwrap_or_else(|| format!("{}-w{index}", spec.tenant))
}

/// Whether every action of entry `index` of `entries` is alone in its task while it is
/// live: the entry has a task per action (action `n`'s task is `{prefix}-{n}`; an agent
/// run's next call, and an improvising agent's changed request, come only after the
/// previous call ended), and no other entry of the tenant names tasks with the same
/// prefix. Names end in the action's number, so two prefixes that differ never make the
/// same name.
fn sole_tasks(entries: &[WorkloadSpec], index: usize) -> bool {
    let spec = &entries[index];
    let prefix = task_prefix(index, spec);
    spec.tasks.map_or(true, |tasks| tasks >= spec.count)
        && entries.iter().enumerate().all(|(i, other)| {
            i == index || other.tenant != spec.tenant || task_prefix(i, other) != prefix
        })
}

/// One workload entry's stream of actions.
struct EntryStream {
    index: usize,
    spec: WorkloadSpec,
    route: Route,
    /// The entry's names, shared by every job it makes (interned once, cloned by reference).
    names: Names,
    task_prefix: String,
    tasks: u64,
    /// Whether each of the entry's actions is alone in its task (`Job::sole_task`).
    sole_tasks: bool,
    rng: ChaCha8Rng,
    /// The entry's prompt and output token counts, prepared for drawing.
    prompt_tokens: tokens::Prepared,
    max_output_tokens: tokens::Prepared,
    /// Next action number within the entry.
    next: u64,
    /// Arrival time of action `next` (ms, fractional for Poisson accumulation).
    next_at: f64,
}

/// The names every job of one workload entry carries.
struct Names {
    tenant: Name,
    credential: Name,
    class: Name,
    scope: Option<Name>,
    model: Option<Name>,
}

impl EntryStream {
    fn new(scenario: &Scenario, index: usize, spec: &WorkloadSpec) -> Self {
        let scope = crate::scenario::providers::client_scope(
            &scenario.provider,
            &spec.credential,
            spec.model.as_deref(),
        );
        let mut s = EntryStream {
            index,
            spec: spec.clone(),
            route: spec.effective_route(),
            names: Names {
                tenant: spec.tenant.as_str().into(),
                credential: spec.credential.as_str().into(),
                class: spec.class.as_str().into(),
                scope: scope.map(Into::into),
                model: spec.model.as_deref().map(Into::into),
            },
            task_prefix: task_prefix(index, spec),
            tasks: spec.tasks.unwrap_or(spec.count).max(1),
            sole_tasks: sole_tasks(&scenario.workloads, index),
            rng: rng::stream(scenario.seed, &format!("workload/{index}")),
            prompt_tokens: tokens::Prepared::of(spec.prompt_tokens),
            max_output_tokens: tokens::Prepared::of(spec.max_output_tokens),
            next: 0,
            next_at: spec.start.ms() as f64,
        };
        if let ArrivalSpec::Poisson(rate) = s.spec.arrival {
            s.next_at += s.poisson_gap(rate.per_second);
        }
        s
    }

    fn poisson_gap(&mut self, per_second: f64) -> f64 {
        let u: f64 = 1.0 - self.rng.gen::<f64>();
        -u.ln() * 1_000.0 / per_second
    }

    fn peek(&self) -> Option<Millis> {
        (self.next < self.spec.count).then_some(self.next_at.floor() as Millis)
    }

    /// The task of action number `n`, `{prefix}-{n % tasks}`, written straight into the
    /// name: held inline when short (the default `{tenant}-w{entry}-{n}` is), so no
    /// allocation per job, and without the formatting machinery (`format_smolstr!` cost
    /// about 420 instructions a job, a twentieth of the million-request run's).
    fn task_of(&self, n: u64) -> TaskName {
        let mut digits = itoa::Buffer::new();
        let mut name = smol_str::SmolStrBuilder::new();
        name.push_str(&self.task_prefix);
        name.push('-');
        name.push_str(digits.format(n % self.tasks));
        name.finish()
    }

    /// The job of call `call` (0: the arrival itself) of action number `n`, arriving at
    /// `at` (ms). Follow-up calls draw their tokens from a stream of their own, so a run's
    /// later calls are the same whichever preset played its earlier ones.
    pub(crate) fn job(&mut self, id: JobId, at: Millis, n: u64, call: u32, seed: u64) -> Job {
        let llm = self.route == Route::ChatCompletion;
        let mut own;
        let rng = if call == 0 {
            &mut self.rng
        } else {
            own = rng::stream(
                seed,
                &format!("workload/{}/action/{n}/call/{call}", self.index),
            );
            &mut own
        };
        let prompt_tokens = if llm { self.prompt_tokens.draw(rng) } else { 0 };
        let max_output_tokens = if llm {
            self.max_output_tokens.draw(rng)
        } else {
            0
        };
        let resource = (self.route == Route::GetItem).then(|| {
            let item = match self.spec.resources {
                Some(k) => rng.gen_range(0..k),
                None => n,
            };
            format!("item-{item}")
        });
        let task = self.task_of(n);
        let external_ref = self
            .spec
            .external_ref
            .then(|| format!("{}-{n}", self.task_prefix));
        // The deadline counts from when the action was created upstream (`age` before it
        // arrived); an agent run's calls share the run's budget.
        let created = at.saturating_sub(self.spec.age.map_or(0, |a| a.ms()));
        let own_deadline = self.spec.deadline.map(|d| created + d.ms());
        let deadline = match self.spec.agent {
            Some(_) => None,
            None => own_deadline,
        };
        Job {
            id,
            tenant: self.names.tenant,
            task,
            credential: self.names.credential,
            scope: self.names.scope,
            class: self.names.class,
            route: self.route,
            resource,
            priority: self.spec.priority,
            prompt_tokens,
            max_output_tokens,
            deadline,
            idempotency_key: None,
            payload_hash: if call == 0 {
                rng::mix(self.index as u64, n)
            } else {
                rng::mix(self.index as u64, rng::mix(n, u64::from(call)))
            },
            external_ref,
            coalescable: self.spec.coalescable,
            stream: self.spec.stream,
            model: self.names.model,
            sole_task: self.sole_tasks,
        }
    }

    fn take(&mut self, id: JobId, seed: u64) -> Arrival {
        let n = self.next;
        let at = self.next_at.floor() as Millis;
        let job = self.job(id, at, n, 0, seed);
        self.next += 1;
        self.next_at = match &self.spec.arrival {
            ArrivalSpec::Poisson(rate) => self.next_at + self.poisson_gap(rate.per_second),
            planned => planned.planned_at(self.spec.start.ms(), self.next),
        };
        Arrival {
            at,
            workload: self.index,
            job,
            run_start: false,
        }
    }
}

/// Every workload entry merged into one stream in arrival order, with the calls that
/// follow from outcomes (an agent run's next call, an improvising agent's changed request;
/// see [`Arrivals::on_terminal`]). Ties break on the entry's index, follow-ups first, so
/// the order is fixed by the scenario and the outcomes alone.
pub struct Arrivals {
    streams: Vec<EntryStream>,
    heap: BinaryHeap<Reverse<(Millis, usize)>>,
    next_id: JobId,
    seed: u64,
    follow: follow_ups::FollowUps,
}

impl Arrivals {
    /// The arrivals of a scenario; job ids start at 1.
    pub fn new(scenario: &Scenario) -> Self {
        let streams: Vec<EntryStream> = scenario
            .workloads
            .iter()
            .enumerate()
            .map(|(i, w)| EntryStream::new(scenario, i, w))
            .collect();
        let heap = streams
            .iter()
            .filter_map(|s| s.peek().map(|t| Reverse((t, s.index))))
            .collect();
        Arrivals {
            streams,
            heap,
            next_id: 1,
            seed: scenario.seed,
            follow: follow_ups::FollowUps::default(),
        }
    }

    /// When the next action arrives (ms), if any is left.
    pub fn peek_time(&self) -> Option<Millis> {
        let stream = self.heap.peek().map(|Reverse((t, _))| *t);
        match (stream, self.follow.peek_time()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Total actions the scenario's streams produce (an agent run counts once, however many
    /// calls it makes).
    pub fn total(&self) -> u64 {
        self.streams.iter().map(|s| s.spec.count).sum()
    }

    /// Agent runs started and not ended.
    pub fn open_runs(&self) -> u64 {
        self.follow.open_runs()
    }

    /// Action `terminal.job` ended at `now` (ms): an agent run's next call or an
    /// improvising agent's changed request may follow; their figures go to `measure`.
    pub fn on_terminal(
        &mut self,
        terminal: &stampede_core::Terminal,
        now: Millis,
        measure: &mut crate::measure::Measurement,
    ) {
        self.follow
            .on_terminal(&self.streams, terminal, now, measure);
    }
}

impl Iterator for Arrivals {
    type Item = Arrival;

    fn next(&mut self) -> Option<Arrival> {
        let stream_at = self.heap.peek().map(|Reverse((t, _))| *t);
        if let Some(at) = self
            .follow
            .peek_time()
            .filter(|&at| stream_at.map_or(true, |s| at <= s))
        {
            let id = self.next_id;
            self.next_id += 1;
            let arrival = self.follow.pop(&mut self.streams, self.seed, id, at);
            return Some(arrival);
        }
        let Reverse((_, index)) = self.heap.pop()?;
        let stream = &mut self.streams[index];
        let n = stream.next;
        let mut arrival = stream.take(self.next_id, self.seed);
        self.next_id += 1;
        if let Some(t) = stream.peek() {
            self.heap.push(Reverse((t, index)));
        }
        let spec = &self.streams[index].spec;
        self.follow.register(spec, n, &mut arrival);
        Some(arrival)
    }
}

/// A task cancellation from a workload's `cancel_at`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cancellation {
    /// When (ms since run start).
    pub at: Millis,
    /// The tenant whose task is cancelled.
    pub tenant: String,
    /// The task (goal) cancelled.
    pub task: String,
}

/// Every cancellation in the scenario, in time order.
pub fn cancellations(scenario: &Scenario) -> Vec<Cancellation> {
    let mut out = Vec::new();
    for (index, w) in scenario.workloads.iter().enumerate() {
        let Some(at) = w.cancel_at else { continue };
        let prefix = w
            .task
            .clone()
            .unwrap_or_else(|| format!("{}-w{index}", w.tenant));
        let tasks = w.tasks.unwrap_or(w.count).max(1);
        let picked: Vec<u64> = match &w.cancel_tasks {
            Some(list) => list.clone(),
            None => (0..tasks).collect(),
        };
        for t in picked {
            out.push(Cancellation {
                at: at.ms(),
                tenant: w.tenant.clone(),
                task: format!("{prefix}-{t}"),
            });
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A default task per action (`{tenant}-w{entry}-{n}`) is held inline: admitting a
    /// million actions makes no allocation for their task names, and a long name given by
    /// the scenario still reads back whole.
    #[test]
    fn default_task_names_are_held_inline() {
        let text = r#"
            name = "tasks"
            duration = "1m"
            [[provider.scopes]]
            id = "account"
            rpm = 600
            [[provider.credentials]]
            key = "sk-a"
            scope = "account"
            [[workload]]
            tenant = "support"
            credential = "sk-a"
            count = 3
            arrival = "backlog"
            [[workload]]
            tenant = "support"
            credential = "sk-a"
            task = "a-task-name-longer-than-twenty-three-bytes"
            count = 2
            arrival = "backlog"
        "#;
        let scenario = crate::scenario::parse(text, "tasks.toml", &[]).expect("valid scenario");
        let tasks: Vec<TaskName> = Arrivals::new(&scenario).map(|a| a.job.task).collect();
        let short: Vec<&str> = tasks
            .iter()
            .filter(|t| !t.is_heap_allocated())
            .map(|t| t.as_str())
            .collect();
        assert_eq!(short, ["support-w0-0", "support-w0-1", "support-w0-2"]);
        let long: Vec<&str> = tasks
            .iter()
            .filter(|t| t.is_heap_allocated())
            .map(|t| t.as_str())
            .collect();
        assert_eq!(
            long,
            [
                "a-task-name-longer-than-twenty-three-bytes-0",
                "a-task-name-longer-than-twenty-three-bytes-1"
            ]
        );
    }
}
