//! Simulated crashes of the runner process and its restart from the ledger.
//!
//! On a crash the driver drops the core's `Scheduler`: its queues, buckets, timers and
//! in-flight bookkeeping are gone, as they would be. Only the ledger survives, exactly as it
//! stood (the in-memory ledger is cloned at the crash point: what was persisted is what was
//! put). While the runner is down nothing is submitted or cancelled (arrivals and
//! cancellations come from outside and wait), and answers to attempts of the dead process are
//! lost; the provider still committed what it committed, and its journal shows it. After the
//! restart delay the core is rebuilt with `Scheduler::restore` from that ledger.
//!
//! Attempt ids restart at 1 in every process life, so the driver tags the attempts it puts on
//! the wire with a global id (`epoch base + local id`) and drops answers whose global id
//! belongs to an earlier life.
//!
//! Terminal outcomes the dead process persisted but never reported (its outbox died with it)
//! are read back from the ledger at the crash: that is what the outside world can learn.

use std::collections::{BTreeMap, BTreeSet};

use stampede_core::{AttemptId, InMemoryLedger, JobId, Millis, Policy, Scheduler, SendAttempt};
use stampede_provider::model::JournalEntry;

use super::DriverError;
use crate::driver_common::live_actions::LiveActions;
use crate::driver_common::persisted::persisted_terminal;
use crate::measure::Measurement;
use crate::rng;
use crate::scenario::{CrashPoint, CrashSpec, CrashTrigger, Scenario};
use crate::sink::AuditSink;

/// What to do with an answer from the event queue.
pub enum Delivery {
    /// Hand it to the core under this (local) attempt id.
    Deliver(AttemptId),
    /// It belongs to a process that died: drop it.
    Dead,
    /// The runner dies as the answer arrives, before recording it.
    Crash,
}

/// The runner is down until `until` (ms); `ledger` is what it had persisted.
struct Down {
    until: Millis,
    ledger: InMemoryLedger,
}

/// The crash schedule and the state of the runner's process lives.
pub struct Crashes {
    specs: Vec<CrashSpec>,
    fired: Vec<bool>,
    policy: Policy,
    seed: u64,
    /// Distinct actions that reached each point with a crash still to come.
    reached: BTreeMap<CrashPoint, BTreeSet<JobId>>,
    /// Attempts of the current life on the wire: global id -> action.
    flights: BTreeMap<u64, JobId>,
    /// Global ids up to this belong to dead lives.
    epoch_base: u64,
    max_global: u64,
    down: Option<Down>,
    /// Restart delay of the crash that fired last (ms).
    down_for: Millis,
    crashes: u64,
    /// When each life ended and the next began (ms): `(crashed at, restarted at)`.
    downs: Vec<(Millis, Millis)>,
    /// Whether the last attempt put on the wire committed a side effect (from the journal).
    last_committed: bool,
}

impl Crashes {
    /// The schedule of `scenario`; `policy` is what restored schedulers run.
    pub fn new(scenario: &Scenario, policy: &Policy) -> Self {
        Self {
            specs: scenario.crashes.clone(),
            fired: vec![false; scenario.crashes.len()],
            policy: policy.clone(),
            seed: scenario.seed,
            reached: BTreeMap::new(),
            flights: BTreeMap::new(),
            epoch_base: 0,
            max_global: 0,
            down: None,
            down_for: 0,
            crashes: 0,
            downs: Vec::new(),
            last_committed: false,
        }
    }

    /// The ledger the first process starts with. Runs with crashes keep terminal entries, so
    /// outcomes persisted but not reported before a crash can be read back. A run without
    /// one keeps none: no process is ever restored from it, and at the end the core's own
    /// records say where its live actions stand (`Fleet::ledger_entries`).
    pub fn first_ledger(&self) -> InMemoryLedger {
        if self.specs.is_empty() {
            InMemoryLedger::keeping_nothing()
        } else {
            InMemoryLedger::new()
        }
    }

    /// Whether the scenario plans any crash (a run without has one runner that never dies).
    pub fn planned(&self) -> bool {
        !self.specs.is_empty()
    }

    /// When the runner was down: `(crashed at, restarted at)` per crash (ms).
    pub fn downs(&self) -> &[(Millis, Millis)] {
        &self.downs
    }

    /// Crashes so far.
    pub fn count(&self) -> u64 {
        self.crashes
    }

    /// Whether the runner is up (it takes arrivals and cancellations).
    pub fn accepting(&self) -> bool {
        self.down.is_none()
    }

    /// The next time the schedule needs the loop: a restart, or a crash at a time.
    pub fn next_time(&self) -> Option<Millis> {
        // Asked at every turn of the loop: a run with no crash planned (most runs) is never
        // down and has no crash at a time.
        if self.specs.is_empty() {
            return None;
        }
        if let Some(down) = &self.down {
            return Some(down.until);
        }
        self.specs
            .iter()
            .zip(&self.fired)
            .filter_map(|(spec, fired)| match spec.trigger {
                CrashTrigger::At(at) if !fired => Some(at),
                _ => None,
            })
            .min()
    }

    /// The global id under which the driver tracks the current life's `attempt`.
    pub fn global(&mut self, attempt: AttemptId) -> u64 {
        let global = self.epoch_base + attempt;
        self.max_global = self.max_global.max(global);
        global
    }

    /// Sees each journal entry of an attempt that just reached the provider.
    pub fn on_journal(&mut self, entry: &JournalEntry) {
        self.last_committed = entry.committed;
    }

    /// Whether the runner dies now, with `send` persisted but not put on the wire.
    pub fn before_send(&mut self, send: &SendAttempt) -> bool {
        self.last_committed = false;
        self.reaches(CrashPoint::AfterPersistBeforeSend, send.job)
    }

    /// Whether the runner dies now, `send` being on the wire under `global` (and, when the
    /// journal says so, committed at the provider).
    pub fn after_send(&mut self, send: &SendAttempt, global: u64) -> bool {
        // At every send: a run with no crash planned keeps no flights and never dies.
        if self.specs.is_empty() {
            return false;
        }
        if self.has_point(CrashPoint::AfterResponseBeforePersist) {
            self.flights.insert(global, send.job);
        }
        let sent = self.reaches(CrashPoint::AfterSendBeforeResponse, send.job);
        let committed =
            self.last_committed && self.reaches(CrashPoint::AfterCommitBeforeResponse, send.job);
        sent || committed
    }

    /// What to do with the answer to attempt `global`.
    pub fn deliver(&mut self, global: u64) -> Delivery {
        if global <= self.epoch_base || self.down.is_some() {
            return Delivery::Dead;
        }
        // At every answer: a run with no crash planned tracks no flights.
        if self.specs.is_empty() {
            return Delivery::Deliver(global - self.epoch_base);
        }
        if let Some(job) = self.flights.remove(&global) {
            if self.reaches(CrashPoint::AfterResponseBeforePersist, job) {
                return Delivery::Crash;
            }
        }
        Delivery::Deliver(global - self.epoch_base)
    }

    fn has_point(&self, point: CrashPoint) -> bool {
        self.specs.iter().zip(&self.fired).any(|(spec, fired)| {
            !fired
                && matches!(spec.trigger,
                    CrashTrigger::Nth { point: p, .. } | CrashTrigger::Action { point: p, .. } if p == point)
        })
    }

    /// Counts `job` reaching `point`; fires the first unfired crash it matches. A run with
    /// no crashes (most runs) returns at once, without a call, at every send and answer.
    #[inline]
    fn reaches(&mut self, point: CrashPoint, job: JobId) -> bool {
        !self.specs.is_empty() && self.reaches_armed(point, job)
    }

    /// [`Crashes::reaches`] for a run with crashes to play.
    fn reaches_armed(&mut self, point: CrashPoint, job: JobId) -> bool {
        if !self.has_point(point) {
            return false;
        }
        let seen = self.reached.entry(point).or_default();
        let first = seen.insert(job);
        let n = seen.len() as u64;
        let hit = self
            .specs
            .iter()
            .zip(&self.fired)
            .position(|(spec, fired)| {
                !fired
                    && match spec.trigger {
                        CrashTrigger::Nth { point: p, nth } => p == point && first && n == nth,
                        CrashTrigger::Action { point: p, action } => p == point && action == job,
                        CrashTrigger::At(_) => false,
                    }
            });
        match hit {
            Some(i) => {
                self.fired[i] = true;
                self.down_for = self.specs[i].restart_after_ms;
                true
            }
            None => false,
        }
    }

    /// At the start of a turn at `now`: restarts a runner whose delay is over, and crashes
    /// one whose time has come.
    pub(super) fn turn(
        &mut self,
        now: Millis,
        core: &mut Scheduler<InMemoryLedger>,
        live: &mut LiveActions,
        measure: &mut Measurement,
        audit: &mut dyn AuditSink,
    ) -> Result<(), DriverError> {
        if self.down.as_ref().is_some_and(|d| d.until <= now) {
            self.restart(now, core, audit)?;
        }
        if self.down.is_some() {
            return Ok(());
        }
        let due = self
            .specs
            .iter()
            .zip(&self.fired)
            .position(|(spec, fired)| {
                !fired && matches!(spec.trigger, CrashTrigger::At(at) if at <= now)
            });
        if let Some(i) = due {
            self.fired[i] = true;
            self.down_for = self.specs[i].restart_after_ms;
            self.crash(now, core, live, measure, audit)?;
        }
        Ok(())
    }

    /// The runner dies at `now`: the scheduler is dropped and only its ledger is kept.
    pub(super) fn crash(
        &mut self,
        now: Millis,
        core: &mut Scheduler<InMemoryLedger>,
        live: &mut LiveActions,
        measure: &mut Measurement,
        audit: &mut dyn AuditSink,
    ) -> Result<(), DriverError> {
        self.crashes += 1;
        self.downs.push((now, now.saturating_add(self.down_for)));
        // Audit events are written before dispatch, so what the dead process recorded is in
        // its trail.
        audit
            .record(&core.drain_audit())
            .map_err(DriverError::Output)?;
        let placeholder = Scheduler::new(
            self.policy.clone(),
            InMemoryLedger::new(),
            rng::stream(self.seed, "client-down"),
        )?;
        let ledger = std::mem::replace(core, placeholder).into_ledger();
        report_persisted_terminals(now, &ledger, live, measure);
        self.epoch_base = self.max_global;
        self.flights.clear();
        self.down = Some(Down {
            until: now.saturating_add(self.down_for),
            ledger,
        });
        Ok(())
    }

    fn restart(
        &mut self,
        now: Millis,
        core: &mut Scheduler<InMemoryLedger>,
        audit: &mut dyn AuditSink,
    ) -> Result<(), DriverError> {
        let Some(down) = self.down.take() else {
            return Ok(());
        };
        audit.restart().map_err(DriverError::Output)?;
        // Each life draws its own client stream, so a restart does not replay the jitter of
        // the life before.
        let stream = format!("client-life-{}", self.crashes);
        *core = Scheduler::restore(
            self.policy.clone(),
            down.ledger,
            rng::stream(self.seed, &stream),
            now,
        )?;
        Ok(())
    }
}

/// Measures the actions the ledger holds as terminal while the driver still has them live:
/// their `Finish` was lost with the process, the ledger says how they ended.
fn report_persisted_terminals(
    now: Millis,
    ledger: &InMemoryLedger,
    live: &mut LiveActions,
    measure: &mut Measurement,
) {
    for id in live.sorted_ids() {
        if let Some(terminal) = ledger.get(id).as_ref().and_then(persisted_terminal) {
            live.finish(&terminal, now, measure);
        }
    }
}
