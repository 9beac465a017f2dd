//! A live run on a durable ledger (`stampede run --live --ledger FILE`), and its restart
//! after the runner process died.
//!
//! First life: the ledger file is empty. The run goes as any live run (the provider is
//! given the scenario and reset), except that the core persists every logical action to
//! the [`SqliteLedger`] (before its first send and at every state change) and the audit
//! trail goes to `audit.jsonl` in the run directory.
//!
//! Restart: the ledger file holds entries, so a process died mid-run (or finished) on it.
//! The new process
//! - attaches to the provider the dead one talked to without resetting it: its records
//!   are what reconciliation looks up, its journal holds both lives for measurement;
//! - resumes the scenario clock where the provider's clock stands (`GET /_stampede/stats`),
//!   so times in the ledger, the journal and the audit trail stay on one axis;
//! - rebuilds the core with `Scheduler::restore`: uncertain writes that were in flight
//!   are looked up with their original idempotency key, planned actions are queued again,
//!   terminal ones stay terminal;
//! - replays the workload generator (deterministic from the seed, so job ids are stable)
//!   and skips the actions already in the ledger, submitting the later ones;
//! - takes cancellations up to the last time the dead process wrote to its ledger as
//!   already applied, since that process reached at least that time;
//! - continues the audit chain with `open_append` (reporting a repaired torn tail).
//!
//! Actions the dead process finished count in this run's summary with the outcome its
//! ledger recorded, so a resumed run's summary covers both lives, like its journal.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use stampede_core::{JobId, LedgerEntry, Millis};
use stampede_durable::{SqliteLedger, UNBOUND_FACT};

use super::audit_trail::LiveAuditTrail;
use super::lives::{self, Lives};
use super::provider::Provider;
use super::{driver, resolve_time_scale, run_facts, LiveError, LiveOptions, LiveRun};
pub use crate::driver_common::persisted::persisted_terminal;
use crate::rng;
use crate::scenario::Scenario;
use crate::sink::{AttemptSink, AuditSink, NoAudit};
use crate::workload::{Arrivals, Cancellation};

/// What a live loop starts from: the ledger the core persists to, whether this life
/// resumes a dead one, and where audit events go.
pub struct Start<'a, L> {
    /// The ledger the core persists its logical actions to: the `--ledger` file's
    /// [`SqliteLedger`], or an in-memory ledger for a run without one.
    pub ledger: L,
    /// `None`: a first life (the caller has just reset the provider; the clock starts at 0).
    pub restart: Option<Restart>,
    /// Where the core's audit events go (the run's audit trail, or nowhere).
    pub audit: &'a mut dyn AuditSink,
}

/// What a restarted runner knows when it comes up.
#[derive(Debug, Clone)]
pub struct Restart {
    /// Scenario ms the clock resumes at: the provider's clock when the runner came up.
    pub at: Millis,
    /// What the dead process persisted, in job-id order.
    pub entries: Vec<LedgerEntry>,
    /// When each of those actions arrived (scenario ms), from the replayed workload.
    pub arrived: BTreeMap<JobId, Millis>,
    /// The latest time the dead process wrote to its ledger (scenario ms): it had reached
    /// at least that time.
    pub reached: Millis,
}

impl Restart {
    /// The restart of `scenario` at `at` from the ledger `entries`.
    pub fn new(scenario: &Scenario, entries: Vec<LedgerEntry>, at: Millis) -> Self {
        let reached = entries.iter().map(|e| e.updated_at).max().unwrap_or(0);
        let mut wanted: BTreeSet<JobId> = entries.iter().map(|e| e.job.id).collect();
        let mut arrived = BTreeMap::new();
        // Every persisted action arrived before the dead process's last write, hence before
        // `at`: replaying the arrivals up to `at` finds them all (bounded by the workload).
        let mut arrivals = Arrivals::new(scenario);
        while !wanted.is_empty() && arrivals.peek_time().is_some_and(|t| t <= at) {
            let Some(arrival) = arrivals.next() else {
                break;
            };
            if wanted.remove(&arrival.job.id) {
                arrived.insert(arrival.job.id, arrival.at);
            }
        }
        Self {
            at,
            entries,
            arrived,
            reached,
        }
    }

    /// Ids of the actions the ledger holds: the workload must not submit them again.
    pub fn ids(&self) -> BTreeSet<JobId> {
        self.entries.iter().map(|e| e.job.id).collect()
    }

    /// When `entry`'s action arrived (its last ledger write when the workload does not
    /// produce it, e.g. after the scenario was edited).
    pub fn arrived_at(&self, entry: &LedgerEntry) -> Millis {
        self.arrived
            .get(&entry.job.id)
            .copied()
            .unwrap_or(entry.updated_at)
    }

    /// How many of `cancels` (in time order) the dead process had already applied.
    pub fn cancellations_done(&self, cancels: &[Cancellation]) -> usize {
        cancels.iter().take_while(|c| c.at <= self.reached).count()
    }

    /// The client random stream of this life: each life draws its own, so a restart does
    /// not replay the jitter of the life before.
    pub fn rng_stream(&self) -> String {
        format!("client-resumed-at-{}", self.at)
    }

    /// Entries not terminal: what the restored core still works on.
    pub fn unfinished(&self) -> u64 {
        self.entries
            .iter()
            .filter(|e| !e.state.is_terminal())
            .count() as u64
    }
}

/// What a restarted run resumed from, for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartReport {
    /// The ledger file.
    pub ledger: PathBuf,
    /// Scenario ms the run resumed at.
    pub resumed_at_ms: Millis,
    /// Actions the ledger held.
    pub actions: u64,
    /// Of those, not terminal (restored into the core).
    pub unfinished: u64,
    /// How the audit trail was continued (appended, repaired, or started anew).
    pub audit: Option<String>,
}

impl fmt::Display for RestartReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "resumed from ledger {} at scenario {} ms: {} actions persisted, {} not finished \
             (in-flight uncertain writes are looked up by their original key)",
            self.ledger.display(),
            self.resumed_at_ms,
            self.actions,
            self.unfinished
        )?;
        if let Some(audit) = &self.audit {
            write!(f, "; audit trail: {audit}")?;
        }
        Ok(())
    }
}

/// What a live run on a ledger cannot play (a time scale out of range, simulated crashes),
/// refused before the ledger is opened; gives the time scale (scenario ms per real ms).
pub(super) fn refuse_unplayable(scenario: &Scenario, opts: &LiveOptions) -> Result<f64, LiveError> {
    let scale = resolve_time_scale(scenario, opts.time_scale)?;
    if !scenario.crashes.is_empty() {
        return Err(LiveError::Unsupported(format!(
            "scenario {:?} has [[crashes]]: simulated crashes need the virtual driver; a live \
             run on --ledger is crashed for real (kill the process and run the same command \
             again)",
            scenario.name
        )));
    }
    Ok(scale)
}

/// Plays `scenario` live on the ledger at `ledger_path`, resuming a dead run when the file
/// holds entries; audit events go to `audit_path` when given.
pub async fn play_durable(
    scenario: &Scenario,
    opts: &LiveOptions,
    ledger_path: &Path,
    audit_path: Option<&Path>,
    sink: &mut dyn AttemptSink,
) -> Result<LiveRun, LiveError> {
    let scale = refuse_unplayable(scenario, opts)?;
    let mut ledger = SqliteLedger::open(ledger_path)
        .map_err(|e| LiveError::Durable(format!("--ledger: {e}")))?;
    // The ledger stores references to keys, not keys: resolve them from the scenario's.
    ledger.add_credentials(
        scenario
            .workloads
            .iter()
            .map(|w| w.credential.as_str())
            .chain(scenario.provider.credentials.iter().map(|c| c.key.as_str())),
    );
    // Group commit: the driver flushes once per turn, before that turn's sends leave.
    ledger
        .set_group_commit(true)
        .map_err(|e| LiveError::Durable(format!("--ledger: {e}")))?;
    let entries = ledger
        .all_entries()
        .map_err(|e| LiveError::Durable(format!("--ledger: {e}")))?;
    let facts = run_facts::of(scenario);
    let stored = ledger
        .run_facts()
        .map_err(|e| LiveError::Durable(format!("--ledger: {e}")))?;
    // A ledger migrated from before runs recorded themselves says so until one does.
    let unbound = stored.iter().any(|(fact, _)| fact == UNBOUND_FACT);
    let stored: Vec<(String, String)> = stored
        .into_iter()
        .filter(|(fact, _)| fact != UNBOUND_FACT)
        .collect();
    if !entries.is_empty() && stored.is_empty() && !unbound {
        // Every run records itself before its first entry: with those rows gone, the
        // ledger would bind to whatever run resumed it.
        return Err(LiveError::Durable(format!(
            "the ledger {} holds {} actions but no record of the run that wrote them (its \
             `run` table is empty, so the file was edited): it cannot tell whether this run is \
             that one, and resuming another run's actions under this run's settings could \
             send them again. Start afresh with a new --ledger file",
            ledger_path.display(),
            entries.len()
        )));
    }
    // A life of this build records these four before it sends anything; a ledger holding
    // some and not all had rows deleted (one from before them holds none).
    let recorded = |name: &str| stored.iter().any(|(fact, _)| fact == name);
    let written: Vec<&str> = lives::FACTS
        .into_iter()
        .chain([run_facts::PROVIDER_JOURNAL])
        .collect();
    let missing: Vec<&str> = written.iter().copied().filter(|f| !recorded(f)).collect();
    if !entries.is_empty() && !missing.is_empty() && missing.len() < written.len() {
        return Err(LiveError::Durable(format!(
            "the ledger {} lacks part of the record of the run that wrote it ({} deleted from \
             its `run` table, so the file was edited): without it a restart cannot check the \
             provider's journal or count the run's crashes. Start afresh with a new --ledger \
             file",
            ledger_path.display(),
            missing.join(", ")
        )));
    }
    let differ = run_facts::differences(&stored, &facts);
    if !entries.is_empty() && !differ.is_empty() {
        return Err(LiveError::Durable(format!(
            "the ledger {} belongs to another run; what differs from this one: {}. Resuming it \
             would play its {} actions under this run's settings and report the two runs as \
             one. Resume with the same scenario file, --seed and --set values; to start \
             afresh, use a new --ledger file",
            ledger_path.display(),
            differ.join(", "),
            entries.len()
        )));
    }
    // The journal the dead life wrote to, when it recorded one (its first life did; empty
    // when its provider named none).
    let journal_then = stored
        .iter()
        .find(|(fact, _)| fact == run_facts::PROVIDER_JOURNAL)
        .map(|(_, id)| id.clone())
        .filter(|id| !id.is_empty());
    // A first life records what it is (and, once its provider is up, that provider's
    // journal); a ledger from before runs recorded that is bound to the run that resumes it.
    let mut kept = facts.clone();
    if let (false, Some(id)) = (entries.is_empty(), &journal_then) {
        kept.push((run_facts::PROVIDER_JOURNAL, id.clone()));
    }
    if !entries.is_empty() {
        // What the ledger says of its lives stays until this restart counts itself (a
        // restart refused below leaves them as they were).
        for name in lives::FACTS {
            if let Some((_, value)) = stored.iter().find(|(fact, _)| fact == name) {
                kept.push((name, value.clone()));
            }
        }
    }
    ledger
        .set_run_facts(&kept)
        .map_err(|e| LiveError::Durable(format!("--ledger: {e}")))?;
    if entries.is_empty() {
        if let (Some(then), Some(url)) = (&journal_then, &opts.provider) {
            let provider = Provider::attach(url).with_control_token(opts.control_token.clone());
            let now = provider.journal_id().await?;
            refuse_a_stale_ledger(&provider, (then, now.as_deref()), &entries, ledger_path).await?;
        }
        return first_life(scenario, opts, scale, (ledger, facts), audit_path, sink).await;
    }

    let Some(url) = &opts.provider else {
        return Err(LiveError::Unsupported(format!(
            "the ledger {} holds {} actions of an earlier run: resuming needs the provider that \
             run talked to (its records answer the reconciliation look-ups), so pass \
             --provider URL of that `stampede serve`; an in-process provider would start \
             empty. To start afresh instead, use a new --ledger file",
            ledger_path.display(),
            entries.len()
        )));
    };
    let provider = Provider::attach(url).with_control_token(opts.control_token.clone());
    let status = provider.status().await?;
    if let Some(then) = &journal_then {
        let now = status.journal_id.as_deref();
        refuse_a_stale_ledger(&provider, (then, now), &entries, ledger_path).await?;
    }
    let (at, provider_scale) = (status.at, status.scale);
    if (provider_scale - scale).abs() > 1e-9 * scale {
        return Err(LiveError::Unsupported(format!(
            "the provider at {url} runs at time scale {provider_scale} but this run asks for \
             {scale}: resume with the --time-scale the interrupted run used"
        )));
    }
    let restart = Restart::new(scenario, entries, at);
    if at < restart.reached {
        return Err(LiveError::Durable(format!(
            "the provider at {url} reads {at} ms but the ledger {} was last written at {} ms: \
             the provider was reset or restarted since the run this ledger belongs to, so its \
             records no longer show what that run did. Start afresh with a new --ledger file",
            ledger_path.display(),
            restart.reached
        )));
    }
    if at >= scenario.duration_ms {
        // Resumed with no time left, the run would end at once: nothing sent, nothing
        // looked up, while saying it looks the uncertain writes up.
        return Err(LiveError::Durable(format!(
            "the provider at {url} reads {at} ms, past the scenario's end at {} ms: the run \
             the ledger {} belongs to has no time left, so nothing would be sent or looked up. \
             To finish its {} unfinished actions, resume with a longer duration (--set \
             duration=...); to start afresh, use a new --ledger file",
            scenario.duration_ms,
            ledger_path.display(),
            restart.unfinished()
        )));
    }
    let (mut trail, audit_note) = match audit_path {
        Some(path) if path.exists() => {
            let (trail, repair) = LiveAuditTrail::resume(path).map_err(LiveError::Output)?;
            let note = match repair {
                Some(repair) => format!("continued {}; {repair}", path.display()),
                None => format!("continued {}", path.display()),
            };
            (Some(trail), Some(note))
        }
        Some(path) => {
            let trail = LiveAuditTrail::create(path).map_err(LiveError::Output)?;
            let note = format!(
                "{} did not exist, so the trail of the interrupted life is not in it; started \
                 a new one",
                path.display()
            );
            (Some(trail), Some(note))
        }
        None => (None, None),
    };
    // Counted once nothing but the run itself can stop this life, in one transaction.
    let lives = Lives::after_restart(&stored, (restart.reached, at), restart.unfinished() > 0);
    ledger
        .update_run_facts(&lives.facts())
        .map_err(|e| LiveError::Durable(format!("--ledger: {e}")))?;
    let report = RestartReport {
        ledger: ledger_path.to_path_buf(),
        resumed_at_ms: at,
        actions: restart.entries.len() as u64,
        unfinished: restart.unfinished(),
        audit: audit_note,
    };
    let mut none = NoAudit;
    let audit: &mut dyn AuditSink = match trail.as_mut() {
        Some(t) => t,
        None => &mut none,
    };
    let start = Start {
        ledger,
        restart: Some(restart),
        audit,
    };
    let run = driver::play_from(scenario, &provider, scale, opts, sink, start).await;
    let closed = trail.map_or(Ok(()), LiveAuditTrail::close);
    let mut run = run?;
    mark_ended(ledger_path, &mut run);
    closed.map_err(LiveError::Output)?;
    run.restart = Some(report);
    run.measured.summary.crashes = lives.crashes;
    run.measured.downs = lives.downs;
    Ok(run)
}

/// Records that the life on the ledger at `ledger_path` ended in order, once its run let
/// go of the file (before the run's report is written): a restart after it counts no
/// crash. A failure loses nothing `run` measured: it is a warning, and the next restart
/// counts this life as a crash.
fn mark_ended(ledger_path: &Path, run: &mut LiveRun) {
    let ended = [(lives::LIFE, "ended".to_string())];
    if let Err(e) =
        SqliteLedger::open(ledger_path).and_then(|mut ledger| ledger.update_run_facts(&ended))
    {
        run.ledger_warnings.push(format!(
            "warning: ledger: could not record that this run ended ({e}); a restart on it \
             will count this life as a crash"
        ));
    }
}

/// Refuses to resume from a ledger whose run's provider journal (`then`, recorded by its
/// first life) the provider no longer keeps: it restarted, or another run reset it, and a
/// write in flight may have executed where no look-up can find it (a ledger with no
/// actions has none in flight, and starts afresh). Refuses too a ledger that does not hold
/// every action that journal shows this run sent: the core writes an action ahead of its
/// first send, so such a ledger is older than the run (a copy of the file without its
/// `-wal`, a log cut short), and resuming from it would send those actions again as new.
/// `now` is the provider's journal id as it reads now; a provider that gives none is taken
/// as it is.
async fn refuse_a_stale_ledger(
    provider: &Provider,
    (then, now): (&str, Option<&str>),
    entries: &[LedgerEntry],
    ledger_path: &Path,
) -> Result<(), LiveError> {
    let Some(now) = now else {
        return Ok(());
    };
    if now != then {
        if entries.is_empty() {
            return Ok(());
        }
        return Err(LiveError::Durable(format!(
            "the provider at {} keeps another journal than the one the run of the ledger {} \
             wrote to (journal {now}, not {then}): it restarted, or another run reset it, \
             since. Its records no longer show what that run did, so a write the run had in \
             flight may have executed where no look-up can find it, and would be sent again. \
             Resume against the provider that run talked to; if it is gone, check those \
             writes by hand and start afresh with a new --ledger file",
            provider.base,
            ledger_path.display()
        )));
    }
    let known: BTreeSet<JobId> = entries.iter().map(|e| e.job.id).collect();
    let unknown: BTreeSet<u64> = provider
        .journal(0)
        .await?
        .iter()
        .filter_map(|e| e.action)
        .filter(|action| !known.contains(action))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let first: Vec<String> = unknown.iter().take(5).map(u64::to_string).collect();
    Err(LiveError::Durable(format!(
        "the ledger {} holds {} actions, but the provider's journal shows this run sent {} \
         more (actions {}{}): the ledger is older than the run it belongs to (a copy of the \
         file without its {}-wal beside it, or a log cut short), and resuming would send \
         those actions again as new. Resume from the whole ledger (the file and its -wal \
         together); if it is lost, check those actions by hand and start afresh with a new \
         --ledger file",
        ledger_path.display(),
        entries.len(),
        unknown.len(),
        first.join(", "),
        if unknown.len() > first.len() {
            ", ..."
        } else {
            ""
        },
        ledger_path.display()
    )))
}

/// The first life on an empty ledger: a live run as usual, persisted and audited.
async fn first_life(
    scenario: &Scenario,
    opts: &LiveOptions,
    scale: f64,
    (mut ledger, mut facts): (SqliteLedger, Vec<(&'static str, String)>),
    audit_path: Option<&Path>,
    sink: &mut dyn AttemptSink,
) -> Result<LiveRun, LiveError> {
    let ledger_path = ledger.path().to_path_buf();
    let mut config = scenario.provider.clone();
    config.time_scale = scale;
    let provider = match &opts.provider {
        Some(url) => Provider::remote_with_token(url, &config, opts.control_token.clone()).await?,
        None => Provider::in_process(config, rng::stream_u64(scenario.seed, "provider")).await?,
    };
    // The journal this life writes to, fresh, recorded before anything is sent: a restart
    // must find the same one (see `play_durable`). The loop starts its clock right after.
    provider.reset().await?;
    // With it ("" when the provider names none), this life, running, and no crash yet.
    let journal = provider.journal_id().await?.unwrap_or_default();
    facts.push((run_facts::PROVIDER_JOURNAL, journal));
    facts.extend(Lives::default().facts());
    ledger
        .set_run_facts(&facts)
        .map_err(|e| LiveError::Durable(format!("--ledger: {e}")))?;
    // Into the file itself: a copy of the file without its -wal still says which journal
    // its run wrote to, and a restart from it can tell what it lacks.
    ledger
        .checkpoint()
        .map_err(|e| LiveError::Durable(format!("--ledger: {e}")))?;
    let mut trail = match audit_path {
        Some(path) => Some(LiveAuditTrail::create(path).map_err(LiveError::Output)?),
        None => None,
    };
    let mut none = NoAudit;
    let audit: &mut dyn AuditSink = match trail.as_mut() {
        Some(t) => t,
        None => &mut none,
    };
    let start = Start {
        ledger,
        restart: None,
        audit,
    };
    let run = driver::play_from(scenario, &provider, scale, opts, sink, start).await;
    provider.stop().await;
    let closed = trail.map_or(Ok(()), LiveAuditTrail::close);
    let mut run = run?;
    mark_ended(&ledger_path, &mut run);
    closed.map_err(LiveError::Output)?;
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario;
    use crate::sink::NoAttempts;
    use crate::workload::cancellations;
    use stampede_core::{ActionState, Ledger, TerminalStatus};

    const SCENARIO: &str = r#"
name = "resume-unit"
seed = 3
duration = "1m"

[[provider.scopes]]
id = "account:acme"
rpm = 600

[[provider.credentials]]
key = "sk-acme"
scope = "account:acme"

[[workload]]
tenant = "acme"
credential = "sk-acme"
class = "uncertain_write"
count = 6
tasks = 3
arrival = { rate = "1/s" }
cancel_at = "2500ms"
cancel_tasks = [1]

[[workload]]
tenant = "acme"
credential = "sk-acme"
class = "uncertain_write"
count = 2
arrival = "backlog"
cancel_at = "40s"
"#;

    fn scenario() -> Scenario {
        scenario::parse(SCENARIO, "resume-unit.toml", &[]).expect("the unit scenario parses")
    }

    /// Ledger entries for the first `n` arrivals of `scenario`, last written at `at`.
    fn persisted(
        scenario: &Scenario,
        n: usize,
        state: ActionState,
        at: Millis,
    ) -> Vec<LedgerEntry> {
        Arrivals::new(scenario)
            .take(n)
            .map(|a| LedgerEntry {
                job: a.job,
                state,
                attempts: 1,
                waited_ms: 0,
                operation_id: None,
                updated_at: at,
            })
            .collect()
    }

    #[test]
    fn a_restart_finds_when_each_persisted_action_arrived() {
        let s = scenario();
        let expected: BTreeMap<JobId, Millis> = Arrivals::new(&s)
            .take(4)
            .map(|a| (a.job.id, a.at))
            .collect();
        let restart = Restart::new(&s, persisted(&s, 4, ActionState::InFlight, 2_000), 3_000);
        assert_eq!(restart.arrived, expected);
        assert_eq!(restart.ids(), expected.keys().copied().collect());
        assert_eq!(restart.reached, 2_000);
        assert_eq!(restart.unfinished(), 4);
        // An action the workload does not produce (the scenario was edited) falls back to
        // its last ledger write.
        let mut stray = restart.entries[0].clone();
        stray.job.id = 999;
        stray.updated_at = 1_234;
        assert_eq!(restart.arrived_at(&stray), 1_234);
    }

    #[test]
    fn cancellations_before_the_dead_process_last_wrote_count_as_applied() {
        let s = scenario();
        let cancels = cancellations(&s);
        assert_eq!(cancels.len(), 3, "{cancels:?}");
        let early = Restart::new(&s, persisted(&s, 2, ActionState::Planned, 1_000), 1_500);
        assert_eq!(early.cancellations_done(&cancels), 0);
        let later = Restart::new(&s, persisted(&s, 2, ActionState::Planned, 2_500), 3_000);
        assert_eq!(later.cancellations_done(&cancels), 1);
    }

    #[test]
    fn only_terminal_ledger_states_give_a_persisted_outcome() {
        let s = scenario();
        let mut entry = persisted(&s, 1, ActionState::Completed, 10).remove(0);
        entry.operation_id = Some("rec_1".into());
        let done = persisted_terminal(&entry).expect("completed is terminal");
        assert_eq!(done.status, TerminalStatus::Completed);
        assert_eq!(done.operation_id.as_deref(), Some("rec_1"));
        assert!(done.sent);
        for state in [
            ActionState::Planned,
            ActionState::InFlight,
            ActionState::ReconciliationRequired,
        ] {
            entry.state = state;
            assert!(persisted_terminal(&entry).is_none(), "{state:?}");
        }
        entry.state = ActionState::Cancelled;
        assert_eq!(
            persisted_terminal(&entry).map(|t| t.status),
            Some(TerminalStatus::Cancelled)
        );
    }

    /// A ledger as a first life of `scenario` leaves it: its run's facts, then `entries`.
    fn ledger_with(scenario: &Scenario, path: &Path, entries: &[LedgerEntry]) {
        let mut ledger = SqliteLedger::open(path).expect("a ledger file");
        ledger
            .set_run_facts(&run_facts::of(scenario))
            .expect("record the run");
        for e in entries {
            ledger.put(e).expect("put");
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    #[test]
    fn resuming_without_the_providers_url_is_refused() {
        let s = scenario();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("ledger.db");
        ledger_with(&s, &path, &persisted(&s, 2, ActionState::InFlight, 500));
        let opts = LiveOptions {
            time_scale: Some(10.0),
            ledger: Some(path.clone()),
            ..LiveOptions::default()
        };
        let err = runtime()
            .block_on(play_durable(&s, &opts, &path, None, &mut NoAttempts))
            .expect_err("an in-process provider knows nothing of the dead run");
        let message = err.to_string();
        assert!(message.contains("--provider URL"), "{message}");
        assert!(message.contains("holds 2 actions"), "{message}");
    }

    #[test]
    fn resuming_against_a_provider_reset_since_is_refused() {
        let s = scenario();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("ledger.db");
        // The dead process wrote at scenario minute 10; the provider's clock reads ~0.
        ledger_with(&s, &path, &persisted(&s, 1, ActionState::InFlight, 600_000));
        let rt = runtime();
        let (addr, server) = rt
            .block_on(stampede_provider::spawn_ephemeral(s.provider.clone(), 1))
            .expect("a provider on 127.0.0.1");
        let opts = LiveOptions {
            provider: Some(format!("http://{addr}")),
            time_scale: Some(1.0),
            ledger: Some(path.clone()),
            ..LiveOptions::default()
        };
        let err = rt
            .block_on(play_durable(&s, &opts, &path, None, &mut NoAttempts))
            .expect_err("the provider no longer holds the dead run's records");
        assert!(err.to_string().contains("reset or restarted"), "{err}");
        // A different time scale is refused before that.
        let other = LiveOptions {
            time_scale: Some(10.0),
            ..opts
        };
        let err = rt
            .block_on(play_durable(&s, &other, &path, None, &mut NoAttempts))
            .expect_err("the scale must match the provider's");
        assert!(err.to_string().contains("time scale"), "{err}");
        rt.block_on(server.shutdown()).expect("the provider stops");
    }
}
