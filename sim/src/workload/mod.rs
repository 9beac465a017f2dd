//! Logical actions from the scenario's `[[workload]]` entries, generated lazily in arrival
//! order: each entry is a stream with its own ChaCha RNG, and the streams are merged by
//! arrival time, so memory stays constant however many actions a scenario has.

pub mod tokens;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use stampede_core::{Job, JobId, Millis, Route};

use crate::rng;
use crate::scenario::{Arrival as ArrivalSpec, Scenario, WorkloadSpec};

/// One logical action arriving at the client.
#[derive(Debug, Clone, PartialEq)]
pub struct Arrival {
    /// Submission time (ms since run start).
    pub at: Millis,
    /// Index of the `[[workload]]` entry it came from.
    pub workload: usize,
    pub job: Job,
}

/// One workload entry's stream of actions.
struct EntryStream {
    index: usize,
    spec: WorkloadSpec,
    route: Route,
    scope: Option<String>,
    task_prefix: String,
    tasks: u64,
    rng: ChaCha8Rng,
    /// Next action number within the entry.
    next: u64,
    /// Arrival time of action `next` (ms, fractional for Poisson accumulation).
    next_at: f64,
}

impl EntryStream {
    fn new(scenario: &Scenario, index: usize, spec: &WorkloadSpec) -> Self {
        let scope = scenario
            .provider
            .credentials
            .iter()
            .find(|c| c.key == spec.credential)
            .map(|c| c.scope.clone());
        let mut s = EntryStream {
            index,
            spec: spec.clone(),
            route: spec.effective_route(),
            scope,
            task_prefix: spec
                .task
                .clone()
                .unwrap_or_else(|| format!("{}-w{index}", spec.tenant)),
            tasks: spec.tasks.unwrap_or(spec.count).max(1),
            rng: rng::stream(scenario.seed, &format!("workload/{index}")),
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

    /// Task name of action number `n`.
    fn task_of(&self, n: u64) -> String {
        format!("{}-{}", self.task_prefix, n % self.tasks)
    }

    fn take(&mut self, id: JobId) -> Arrival {
        let n = self.next;
        let at = self.next_at.floor() as Millis;
        let llm = self.route == Route::ChatCompletion;
        let prompt_tokens = if llm {
            tokens::draw(self.spec.prompt_tokens, &mut self.rng)
        } else {
            0
        };
        let max_output_tokens = if llm {
            tokens::draw(self.spec.max_output_tokens, &mut self.rng)
        } else {
            0
        };
        let resource = (self.route == Route::GetItem).then(|| {
            let item = match self.spec.resources {
                Some(k) => self.rng.gen_range(0..k),
                None => n,
            };
            format!("item-{item}")
        });
        let task = self.task_of(n);
        let external_ref = self
            .spec
            .external_ref
            .then(|| format!("{}-{n}", self.task_prefix));
        let job = Job {
            id,
            tenant: self.spec.tenant.clone(),
            task,
            credential: self.spec.credential.clone(),
            scope: self.scope.clone(),
            class: self.spec.class.clone(),
            route: self.route,
            resource,
            priority: self.spec.priority,
            prompt_tokens,
            max_output_tokens,
            deadline: self.spec.deadline.map(|d| at + d.ms()),
            idempotency_key: None,
            payload_hash: rng::mix(self.index as u64, n),
            external_ref,
            coalescable: self.spec.coalescable,
            stream: self.spec.stream,
            model: None,
        };
        self.next += 1;
        self.next_at = match self.spec.arrival {
            ArrivalSpec::Backlog => self.next_at,
            ArrivalSpec::Rate(rate) => {
                self.spec.start.ms() as f64 + self.next as f64 * 1_000.0 / rate.per_second
            }
            ArrivalSpec::Poisson(rate) => self.next_at + self.poisson_gap(rate.per_second),
            ArrivalSpec::Bursts { size, every } => {
                (self.spec.start.ms() + (self.next / size) * every.ms()) as f64
            }
        };
        Arrival {
            at,
            workload: self.index,
            job,
        }
    }
}

/// Every workload entry merged into one stream in arrival order. Ties break on the entry's
/// index, so the order is fixed by the scenario alone.
pub struct Arrivals {
    streams: Vec<EntryStream>,
    heap: BinaryHeap<Reverse<(Millis, usize)>>,
    next_id: JobId,
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
        }
    }

    /// When the next action arrives (ms), if any is left.
    pub fn peek_time(&self) -> Option<Millis> {
        self.heap.peek().map(|Reverse((t, _))| *t)
    }

    /// Total actions the scenario will produce.
    pub fn total(&self) -> u64 {
        self.streams.iter().map(|s| s.spec.count).sum()
    }
}

impl Iterator for Arrivals {
    type Item = Arrival;

    fn next(&mut self) -> Option<Arrival> {
        let Reverse((_, index)) = self.heap.pop()?;
        let stream = &mut self.streams[index];
        let arrival = stream.take(self.next_id);
        self.next_id += 1;
        if let Some(t) = stream.peek() {
            self.heap.push(Reverse((t, index)));
        }
        Some(arrival)
    }
}

/// A task cancellation from a workload's `cancel_at`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cancellation {
    /// When (ms since run start).
    pub at: Millis,
    pub tenant: String,
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
