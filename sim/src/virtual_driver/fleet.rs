//! Replicas: the same client code running as `client.replicas` independent instances (the
//! processes of one service), sharing the scenario's credentials and scopes. Each has its
//! own core: its own scope records, buckets, retry budgets, breaker and workers. The
//! workload is spread across them by task (every action of one task runs in one replica,
//! as one process runs an agent's task), so no replica sees another's 429s: seed 000's
//! "each process sees only its own requests".
//!
//! With `client.share_scope = "fleet"` the replicas share a scope record through a store
//! that takes `client.share_delay` to propagate: a wait one replica publishes (a Retry-After,
//! a pause after a bare 429, a quota reset) and the rate one replica spends reach the others
//! that much later, as news they observe (`Scheduler::observe_peer_wait`,
//! `Scheduler::observe_peer_spend`). Concurrency budgets stay per replica.
//!
//! A fleet of one is exactly the single core: same attempt ids, same random stream, same
//! outputs byte for byte.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use stampede_core::{
    AttemptId, AuditEvent, Command, CoreError, Gauges, InMemoryLedger, Job, JobId, LedgerEntry,
    Millis, Outcome, Policy, Rejection, Scheduler, ScopeSource,
};

use stampede_provider::model::Fnv;

use crate::driver_common::client_core::ClientCore;
use crate::rng;

/// Most replicas a scenario may ask for.
pub const MAX_REPLICAS: u32 = 256;

/// What one replica learned that the others hear of after the share delay.
#[derive(Debug, Clone, PartialEq, Eq)]
enum News {
    /// "Send nothing to `scope` before `until`" (ms since run start).
    Wait {
        scope: String,
        until: Millis,
        source: ScopeSource,
    },
    /// One request and `tokens` reserved tokens spent on `scope`.
    Spend { scope: String, tokens: u64 },
}

/// The client's instances and the store they share, if any.
pub struct Fleet {
    replicas: Vec<Scheduler<InMemoryLedger>>,
    /// The store's propagation delay (ms) when the replicas share the scope record.
    share_delay: Option<Millis>,
    /// News in propagation, oldest first: `(arrives at, from replica, news)`. The delay is
    /// one constant and `now` never goes back, so arrival order is publication order.
    news: VecDeque<(Millis, usize, News)>,
    /// Scope of each attempt on the wire by global attempt id, while sharing (what an
    /// outcome changed is read off that scope's record).
    scope_of: FxHashMap<AttemptId, String>,
    /// Which replica `peek` asks first: turns rotate so no replica sends first every time.
    turn: usize,
    /// With several replicas: the command `peek` lent (taken from its replica, its attempt
    /// id made the fleet's), until `consume`.
    held: Option<Command>,
}

impl Fleet {
    /// `replicas` instances of the client under `policy`. Replica 0 keeps `ledger` and the
    /// scenario's client stream, so one replica is the plain single core.
    pub fn new(
        policy: &Policy,
        ledger: InMemoryLedger,
        seed: u64,
        replicas: u32,
        share_delay: Option<Millis>,
    ) -> Result<Self, CoreError> {
        assert!(
            (1..=MAX_REPLICAS).contains(&replicas),
            "the scenario bounds replicas"
        );
        let mut list = Vec::with_capacity(replicas as usize);
        list.push(Scheduler::new(
            policy.clone(),
            ledger,
            rng::stream(seed, "client"),
        )?);
        // Replicas never crash (crashes are refused with replicas), so no replica is ever
        // restored from its ledger: each keeps none.
        for r in 1..replicas {
            list.push(Scheduler::new(
                policy.clone(),
                InMemoryLedger::keeping_nothing(),
                rng::stream(seed, &format!("client-replica-{r}")),
            )?);
        }
        Ok(Self {
            replicas: list,
            share_delay: share_delay.filter(|_| replicas > 1),
            news: VecDeque::new(),
            scope_of: FxHashMap::default(),
            turn: 0,
            held: None,
        })
    }

    /// The single core of a fleet of one (crash simulation works on one runner).
    pub fn sole_mut(&mut self) -> &mut Scheduler<InMemoryLedger> {
        assert_eq!(self.replicas.len(), 1, "crashes are refused with replicas");
        &mut self.replicas[0]
    }

    fn global(&self, replica: usize, local: AttemptId) -> AttemptId {
        local * self.replicas.len() as u64 + replica as u64
    }

    fn local(&self, global: AttemptId) -> (usize, AttemptId) {
        let n = self.replicas.len() as u64;
        ((global % n) as usize, global / n)
    }

    /// Asks the replica holding action `id` to bring its record into cache (see
    /// `Scheduler::prefetch`): its answer is about to be delivered.
    pub fn prefetch(&self, id: JobId) {
        if let [sole] = self.replicas.as_slice() {
            // One replica: no loop over the list at every answer.
            return sole.prefetch(id);
        }
        for core in &self.replicas {
            core.prefetch(id);
        }
    }

    /// Cancels a task in every replica (only the one running it has actions of it).
    pub fn cancel_task(&mut self, tenant: &str, task: &str, now: Millis) {
        for core in &mut self.replicas {
            core.cancel_task(tenant, task, now);
        }
    }

    /// An attempt's outcome, to the replica that sent it; while sharing, a wait the outcome
    /// published on its scope goes out as news.
    pub fn on_outcome(&mut self, attempt: AttemptId, outcome: &Outcome, now: Millis) {
        if let [sole] = self.replicas.as_mut_slice() {
            // One replica shares nothing: the outcome goes straight to it.
            sole.on_outcome(attempt, outcome, now);
            return;
        }
        let (r, local) = self.local(attempt);
        let scope = self.scope_of.remove(&attempt);
        let before = scope
            .as_deref()
            .and_then(|s| self.replicas[r].scope_record(s));
        self.replicas[r].on_outcome(local, outcome, now);
        let (Some(delay), Some(scope)) = (self.share_delay, scope) else {
            return;
        };
        let Some(after) = self.replicas[r].scope_record(&scope) else {
            return;
        };
        let moved = before.map_or(0, |b| b.next_allowed_at) < after.next_allowed_at;
        if let (true, Some(source)) = (moved, after.source) {
            self.publish(
                now + delay,
                r,
                News::Wait {
                    scope,
                    until: after.next_allowed_at,
                    source,
                },
            );
        }
    }

    fn publish(&mut self, at: Millis, from: usize, news: News) {
        debug_assert!(self.news.back().map_or(true, |(t, ..)| *t <= at));
        self.news.push_back((at, from, news));
    }

    /// Delivers the news that has arrived by `now` to every replica but its publisher.
    fn deliver_news(&mut self, now: Millis) {
        while self.news.front().is_some_and(|(at, ..)| *at <= now) {
            let Some((_, from, news)) = self.news.pop_front() else {
                break;
            };
            for (r, core) in self.replicas.iter_mut().enumerate() {
                if r == from {
                    continue;
                }
                match &news {
                    News::Wait {
                        scope,
                        until,
                        source,
                    } => core.observe_peer_wait(scope, *until, *source, now),
                    News::Spend { scope, tokens } => {
                        core.observe_peer_spend(scope, 1, *tokens, now)
                    }
                }
            }
        }
    }

    /// The next command due at `now` from any replica, in turns, lent where it lies; a
    /// `Send`'s attempt id is the fleet's (unique across replicas). Carry it out, then call
    /// [`Fleet::consume`]; drain until `None`.
    pub fn peek(&mut self, now: Millis) -> Option<&Command> {
        if self.replicas.len() == 1 {
            // One replica (no news, its ids are the fleet's): its command is lent as it
            // lies in the replica's outbox.
            debug_assert!(self.news.is_empty() && self.share_delay.is_none());
            return self.replicas[0].peek(now);
        }
        if self.held.is_none() {
            self.held = self.next_of_replicas(now);
        }
        self.held.as_ref()
    }

    /// Takes the command [`Fleet::peek`] lent: the driver has carried it out.
    ///
    /// # Panics
    ///
    /// When no command is lent (see [`Scheduler::consume`]).
    #[inline]
    pub fn consume(&mut self) {
        if self.replicas.len() == 1 {
            return self.replicas[0].consume();
        }
        assert!(
            self.held.take().is_some(),
            "consume without a command lent by peek"
        );
    }

    /// The next command of the replicas, in turns, with a send's attempt id made the
    /// fleet's; news due is delivered first.
    fn next_of_replicas(&mut self, now: Millis) -> Option<Command> {
        self.deliver_news(now);
        let n = self.replicas.len();
        for i in 0..n {
            let r = (self.turn + i) % n;
            let Some(mut command) = self.replicas[r].poll(now) else {
                continue;
            };
            self.turn = (r + 1) % n;
            if let Command::Send(send) = &mut command {
                send.attempt = self.global(r, send.attempt);
                if let Some(delay) = self.share_delay {
                    self.scope_of.insert(send.attempt, send.scope.to_string());
                    let news = News::Spend {
                        scope: send.scope.to_string(),
                        tokens: u64::from(send.reserved_tokens),
                    };
                    self.publish(now + delay, r, news);
                }
            }
            return Some(command);
        }
        None
    }

    /// When the fleet next wants `poll` (ms): the earliest replica's, or news arriving.
    pub fn next_wakeup(&self) -> Option<Millis> {
        if let [sole] = self.replicas.as_slice() {
            // One replica hears no news: its wake-up is the fleet's, asked at every turn of
            // the loop without the iterator chain over replicas and news.
            debug_assert!(self.news.is_empty());
            return sole.next_wakeup();
        }
        let news = self.news.front().map(|(at, ..)| *at);
        self.replicas
            .iter()
            .filter_map(Scheduler::next_wakeup)
            .chain(news)
            .min()
    }

    /// Hands every replica's audit events to `read`, replica by replica.
    pub fn drain_audit_with(
        &mut self,
        mut read: impl FnMut(&[AuditEvent]) -> Result<(), String>,
    ) -> Result<(), String> {
        for core in &mut self.replicas {
            core.drain_audit_with(&mut read)?;
        }
        Ok(())
    }

    /// Every replica's ledger entries, replica by replica: for a replica whose ledger keeps
    /// nothing, the entries of the actions it still tracks, from its own records.
    pub fn ledger_entries(&self) -> Vec<LedgerEntry> {
        self.replicas
            .iter()
            .flat_map(crate::driver_common::persisted::ledger_entries)
            .collect()
    }
}

impl ClientCore for Fleet {
    /// Summed over the replicas' scope records (each replica keeps its own).
    fn uncertain_usage(&self) -> Option<u64> {
        Some(
            self.replicas
                .iter()
                .flat_map(|c| c.scope_records())
                .map(|(_, r)| r.uncertain_usage)
                .sum(),
        )
    }

    fn submit(&mut self, job: Job, now: Millis) -> Result<(), Rejection> {
        let r = replica_of(&job, self.replicas.len());
        self.replicas[r].submit(job, now)
    }

    fn room_for(&self, job: &Job) -> Result<(), Millis> {
        self.replicas[replica_of(job, self.replicas.len())].room_for(job)
    }

    #[inline]
    fn peek(&mut self, now: Millis) -> Option<&Command> {
        Fleet::peek(self, now)
    }

    #[inline]
    fn consume(&mut self) {
        Fleet::consume(self)
    }

    fn next_send_hint(&self) -> Option<JobId> {
        match self.replicas.as_slice() {
            [sole] => sole.next_send_hint(),
            _ => None,
        }
    }

    fn on_outcome(&mut self, attempt: AttemptId, outcome: &Outcome, now: Millis) {
        Fleet::on_outcome(self, attempt, outcome, now)
    }

    fn cancel_task(&mut self, tenant: &str, task: &str, now: Millis) {
        Fleet::cancel_task(self, tenant, task, now)
    }

    fn gauges(&self) -> Gauges {
        let mut sum = Gauges::default();
        for g in self.replicas.iter().map(Scheduler::gauges) {
            sum.queued += g.queued;
            sum.delayed += g.delayed;
            sum.in_flight += g.in_flight;
            sum.tokens_reserved += g.tokens_reserved;
            sum.reconciling += g.reconciling;
            sum.coalesced += g.coalesced;
            sum.live += g.live;
            sum.token_debt += g.token_debt;
            sum.ledger_errors += g.ledger_errors;
        }
        sum
    }
}

/// The replica of `replicas` an action runs in: its task's, by a stable hash (FNV-1a) of
/// tenant and task, so every action of one task runs in one replica.
pub fn replica_of(job: &Job, replicas: usize) -> usize {
    if replicas <= 1 {
        return 0;
    }
    let h = Fnv::new()
        .bytes(job.tenant.as_bytes())
        .bytes(&[0])
        .bytes(job.task.as_bytes())
        .finish();
    (h % replicas as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: JobId) -> Job {
        Job {
            prompt_tokens: 10,
            max_output_tokens: 10,
            ..Job::new(id, "t1", format!("task-{id}"), "key-1")
        }
    }

    /// Several replicas: a command is lent (its attempt id made the fleet's once) until it
    /// is consumed, and each send's fleet id is unique.
    #[test]
    fn a_fleet_lends_each_command_until_consumed() {
        let policy = stampede_core::preset("stampede").expect("a shipped preset");
        let mut fleet = Fleet::new(&policy, InMemoryLedger::new(), 7, 3, Some(5)).unwrap();
        for id in 1..=12 {
            ClientCore::submit(&mut fleet, job(id), 0).expect("room");
        }
        let mut attempts = std::collections::BTreeSet::new();
        let mut jobs = std::collections::BTreeSet::new();
        while let Some(first) = fleet.peek(0).cloned() {
            assert_eq!(fleet.peek(0), Some(&first), "lent again, unchanged");
            let Command::Send(send) = first else {
                panic!("only sends are due: {first:?}")
            };
            assert!(attempts.insert(send.attempt), "fleet ids are unique");
            assert_eq!(fleet.local(send.attempt).0, replica_of(&job(send.job), 3));
            jobs.insert(send.job);
            fleet.consume();
        }
        assert_eq!(jobs, (1..=12).collect(), "every action was sent once");
    }

    #[test]
    #[should_panic(expected = "consume without a command lent by peek")]
    fn a_fleet_refuses_to_consume_what_it_did_not_lend() {
        let policy = stampede_core::preset("stampede").expect("a shipped preset");
        let mut fleet = Fleet::new(&policy, InMemoryLedger::new(), 7, 2, None).unwrap();
        fleet.consume();
    }
}
