//! The live loop: one task owns the core's `Scheduler`; each `Send` runs as its own tokio
//! task and its outcome comes back through a `JoinSet`; between turns the loop sleeps until
//! the earliest of the next arrival, cancellation, core wake-up, report bucket, the
//! duration cap, or an attempt finishing.
//!
//! Its turn is the virtual driver's, written once (`driver_common::turn`): arrivals with the
//! same backpressure, then cancellations, then outcomes, then the core's commands, each
//! `Send` handed to `HttpWire`. So both drivers differ only where real I/O adds
//! something: latency noise, timer granularity, and a reset that HTTP cannot place before
//! or after the write (see `transport`).
//!
//! [`play_from`] is the same loop on any ledger, and resumed when its [`Start`] says so
//! (see `resume`); [`play`] is a first life on the in-memory ledger.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Instant;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use stampede_core::{
    AttemptId, AuditEvent, InMemoryLedger, JobId, Ledger, Millis, Name, Outcome, Scheduler,
    SendAttempt, Terminal,
};
use stampede_provider::model::{Fingerprint, JournalEntry, Request, RequestRoute};
use stampede_reports::Interrupted;
use tokio::task::JoinSet;

use super::clock::LiveClock;
use super::dilate::Dilation;
use super::journal_tail::{self, JournalTail};
use super::provider::Provider;
use super::request::{http_request, RequestWriter};
use super::resume::{self, Restart, Start};
use super::transport::Transport;
use super::LedgerCommits;
use super::{AttemptTiming, LiveError, LiveOptions, LiveRun};
use crate::driver_common::abort::AbortWatch;
use crate::driver_common::case_file::CaseNotes;
use crate::driver_common::live_actions::{LiveAction, LiveActions};
use crate::driver_common::translate::{self, ActionFacts};
use crate::driver_common::turn::{Flow, Heard, Turn, Untracked, Wire};
use crate::driver_common::SCENARIO_EPOCH_UNIX_MS;
use crate::measure::{Ended, GroupKey, Measurement, SentBy};
use crate::progress::{self, Pacer, ProgressHandle, Snapshot};
use crate::rng;
use crate::scenario::Scenario;
use crate::signals::Signals;
use crate::sink::attempts::{self, Numbering};
use crate::sink::{AttemptSink, AuditSink, NoAudit};

/// What the harness sent an attempt as, until its journal entry is read: action, attempt
/// number, tenant, class, priority and groups (see `SentBy`). The names are the action's
/// own shared strings: no copy per attempt.
type SentAs = (JobId, u32, Name, Name, &'static str, Option<GroupKey>);

/// What an attempt task hands back.
struct Finished {
    attempt: AttemptId,
    job: JobId,
    attempt_no: u32,
    outcome: Outcome,
    /// Real µs since the run's start when the request was handed to the client and when
    /// its outcome was known.
    sent_us: u64,
    done_us: u64,
}

/// Plays `scenario` against `provider` in real time at `scale` scenario ms per real ms.
pub async fn play(
    scenario: &Scenario,
    provider: &Provider,
    scale: f64,
    opts: &LiveOptions,
    sink: &mut dyn AttemptSink,
) -> Result<LiveRun, LiveError> {
    // No one restores from this ledger: the core still writes ahead of every send, but
    // nothing is stored, and at the end the core's own records give the unfinished actions
    // (as in a virtual run that plans no crash).
    let start = Start {
        ledger: InMemoryLedger::keeping_nothing(),
        restart: None,
        audit: &mut NoAudit,
    };
    provider.reset().await?;
    play_from(scenario, provider, scale, opts, sink, start).await
}

/// Plays `scenario` against `provider` with the core persisting to `start.ledger`: a
/// first life (the caller has just reset the provider, and the clock starts at 0), or the restart of a dead
/// one (`start.restart`: the provider is left as it is, the clock resumes at the
/// provider's time, the core is restored from the ledger and the actions it holds are not
/// submitted again). Audit events go to `start.audit`, each `Send`'s before it leaves.
pub async fn play_from<L: Ledger>(
    scenario: &Scenario,
    provider: &Provider,
    scale: f64,
    opts: &LiveOptions,
    sink: &mut dyn AttemptSink,
    start: Start<'_, L>,
) -> Result<LiveRun, LiveError> {
    let Start {
        ledger,
        restart,
        audit: audit_sink,
    } = start;
    let mut policy = scenario.policy.clone();
    policy.wall_epoch_unix_ms = SCENARIO_EPOCH_UNIX_MS;
    let audit = policy.audit;
    let mut core = match &restart {
        None => Scheduler::new(policy, ledger, rng::stream(scenario.seed, "client"))?,
        Some(r) => Scheduler::restore(
            policy,
            ledger,
            rng::stream(scenario.seed, &r.rng_stream()),
            r.at,
        )?,
    };
    // Actions a dead process already submitted: the workload replays them, they are skipped.
    let mut turn = Turn::new(
        scenario,
        restart.as_ref().map(Restart::ids).unwrap_or_default(),
    );
    let cap = turn.cap();
    // When the client heard how each attempt ended (scenario ms), by (action, attempt_no):
    // the end of a hang in attempts.csv, which only the client's timeout knows.
    let mut heard: BTreeMap<(JobId, u32), Millis> = BTreeMap::new();
    let mut wire = HttpWire {
        base: provider.base.clone(),
        writer: RequestWriter::new(&provider.base),
        hidden_retries: scenario.client.transport_retries,
        default_model: scenario.provider.default_model().map(std::sync::Arc::from),
        sent: FxHashMap::default(),
        outgoing: Vec::new(),
        terminals: Vec::new(),
    };
    let mut timings: Vec<AttemptTiming> = Vec::new();
    let mut audit_events: Vec<AuditEvent> = Vec::new();
    let mut inflight: JoinSet<Finished> = JoinSet::new();
    let mut ready: Vec<Finished> = Vec::new();
    let mut sends: u64 = 0;
    let mut commits = LedgerCommits::default();
    // Expectations with `abort = true`: the driver's own figures are in `measure`; the
    // journal's, which the run reads in full only at its end, are polled once per report
    // bucket into `probe` (only when one of them is watched).
    let abort = AbortWatch::new(scenario);
    let mut aborted = None;
    let mut probe = Measurement::new(scenario.bucket_ms, cap);
    let mut probed_seq = 0u64;
    let mut next_probe: Millis = 0;
    let progress = opts.progress.as_ref().map(ProgressHandle::get);
    let mut pacer = Pacer::new();
    let requests = progress::requests_of(scenario);
    // 429 answers the client heard, for the progress display.
    let mut throttled = 0u64;
    if let Some(r) = &restart {
        let done = r.cancellations_done(turn.cancellations());
        turn.resume_at(r.at, done);
        adopt_restored(r, &mut turn.live, &mut turn.measure);
    }

    let unix_now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    };
    let (clock, real_start_unix_ms) = match &restart {
        None => (LiveClock::start(scale), unix_now_ms()),
        // The provider keeps its clock and its records; this life's clock resumes there,
        // and scenario time 0 lies that far back in real time.
        Some(r) => (
            LiveClock::starting_at(scale, r.at),
            unix_now_ms().saturating_sub((r.at as f64 / scale) as u64),
        ),
    };
    let transport = Transport::new(
        opts.connect_timeout_ms,
        Dilation {
            scale,
            real_start_unix_ms,
            scenario_epoch_unix_ms: SCENARIO_EPOCH_UNIX_MS,
        },
    );
    let wall_started = Instant::now();
    // The journal is read as it grows, so the provider's ring need not hold the whole run.
    let tail = JournalTail::start(provider.control(), 0, journal_tail::READ_EVERY);
    // The core's time contract: `now` never goes backwards. A restarted life's clock can
    // read a hair before the restore time (its origin is rounded through f64), so the time
    // handed to the core is clamped to the latest one handed so far.
    let mut now: Millis = restart.as_ref().map_or(0, |r| r.at);
    // Ctrl-C stops the run here, between turns, and the run reports what it measured.
    let mut signals = opts.stop_on_signals.then(Signals::new);
    let mut interrupted: Option<&'static str> = None;

    loop {
        now = clock.now().max(now);
        if !turn.open(now, &core) {
            now = cap;
            break;
        }
        let before = turn.events;

        turn.arrivals(now, true, &mut core);
        for f in ready.drain(..) {
            heard.insert((f.job, f.attempt_no), now);
            timings.push(AttemptTiming {
                job: f.job,
                attempt_no: f.attempt_no,
                sent_real_us: f.sent_us,
                done_real_us: f.done_us,
                heard_ms: now,
            });
            throttled += u64::from(matches!(&f.outcome, Outcome::Response(r) if r.status == 429));
            let heard = Heard {
                attempt: f.attempt,
                job: f.job,
                attempt_no: f.attempt_no,
            };
            turn.answer(&mut core, heard, &f.outcome, now);
        }
        // Drain the core first, then make its ledger writes durable (one group commit per
        // turn), then put the attempts on the wire: an action is on disk before its first
        // send, and no core call ever waits on the disk.
        let flow = turn.commands(now, &mut core, &mut wire)?;
        debug_assert_eq!(flow, Flow::Go, "a live runner dies only by being killed");
        // Timed by the driver, which may read a clock (the core never does): while the disk
        // syncs, this thread runs nothing else, and the scenario's clock goes on.
        let committing = std::time::Instant::now();
        core.flush_ledger()
            .map_err(|e| LiveError::Durable(format!("--ledger: {e}")))?;
        // The trail records the attempts before they leave (a killed process must not have
        // sent what its trail does not show), with one fsync for the turn: counted with the
        // commit, as the driver waits on both.
        if audit {
            record_audit(&mut core, opts.keep_audit, &mut audit_events, audit_sink)?;
        }
        commits.note(committing.elapsed());
        for (send, http, stream, hidden) in wire.outgoing.drain(..) {
            let timeout = clock.real(send.timeout_ms);
            let transport = transport.clone();
            sends += 1;
            inflight.spawn(async move {
                let sent_us = clock.real_elapsed_us();
                let mut outcome = transport.attempt(&send, http, stream, timeout).await;
                if let Some((base, request, mut left)) = hidden {
                    while left > 0 && translate::hidden_layer_retries(&outcome) {
                        left -= 1;
                        let Ok(again) = http_request(&base, &request) else {
                            break;
                        };
                        outcome = transport.attempt(&send, again, stream, timeout).await;
                    }
                }
                Finished {
                    attempt: send.attempt,
                    job: send.job,
                    attempt_no: send.attempt_no,
                    outcome,
                    sent_us,
                    done_us: clock.real_elapsed_us(),
                }
            });
        }

        if abort.watches_journal() && now >= next_probe {
            next_probe = now + scenario.bucket_ms;
            for entry in provider.journal(probed_seq).await? {
                probed_seq = probed_seq.max(entry.seq);
                probe.on_journal(&entry, None, &SentBy::default());
            }
        }
        // An expectation with `abort = true` that can no longer hold ends the run here.
        if let Some(a) = abort.check(now, || [turn.measure.running(), probe.running()]) {
            aborted = Some(a);
            break;
        }
        if let Some(p) = progress.filter(|_| pacer.due_by_clock()) {
            let mut snapshot = Snapshot::of(turn.measure.running(), now, cap, requests);
            snapshot.attempts = sends;
            snapshot.throttled = throttled;
            p.update(&snapshot);
        }

        let arrival_time = turn.next_arrival(true);
        let wake = core.next_wakeup();
        if inflight.is_empty() && arrival_time.is_none() && wake.is_none() {
            break;
        }
        // A wake-up that is due but yielded nothing must not spin: take it a tick later.
        let stalled = turn.events == before;
        let due = stampede_core::earliest([arrival_time, wake, Some(turn.next_bucket())])
            .map_or(cap + 1, |due| due.min(cap + 1));
        let due = if stalled { due.max(now + 1) } else { due };
        let sleep = tokio::time::sleep_until(clock.instant_at(due).into());
        let listening = signals.is_some();
        tokio::select! {
            joined = inflight.join_next(), if !inflight.is_empty() => {
                if let Some(j) = joined {
                    ready.push(j.map_err(|e| LiveError::Provider(format!("an attempt task failed: {e}")))?);
                }
                while let Some(j) = inflight.try_join_next() {
                    ready.push(j.map_err(|e| LiveError::Provider(format!("an attempt task failed: {e}")))?);
                }
            }
            _ = sleep => {}
            name = async { signals.as_mut().expect("listening").any().await }, if listening => {
                interrupted = Some(name);
                now = clock.now().max(now);
                break;
            }
        }
    }
    // Listening ends with the play; a signal from here on is dropped (see `signals`), so
    // the journal is read and the report written whole.
    drop(signals);
    // Attempts still in flight at the cap are abandoned (the provider journaled them).
    inflight.abort_all();
    while inflight.join_next().await.is_some() {}
    let real_ms = u64::try_from(wall_started.elapsed().as_millis()).unwrap_or(u64::MAX);

    let entries = crate::driver_common::persisted::ledger_entries(&core);
    if interrupted.is_some() {
        turn.measure.stopped_early(now);
    }
    turn.close(now, &core, entries);
    let Turn {
        mut measure,
        events,
        ..
    } = turn;
    let HttpWire {
        mut sent,
        terminals,
        ..
    } = wire;

    // Ground truth: what reached the provider's edge, from its own journal.
    let journal: Vec<JournalEntry> = tail.finish().await?;
    // A restarted life reads the dead one's attempts in the journal too; those of actions
    // this life never sent are known by the idempotency key its ledger kept for them (the
    // key the provider tells requests apart by), so they count for their tenant and class,
    // where they counted for none (by_class and by_tenant then fell short of the totals).
    let restored_by_key: FxHashMap<&stampede_core::IdempotencyKey, SentAs> = restart
        .iter()
        .flat_map(|r| &r.entries)
        .filter_map(|e| {
            let key = e.job.idempotency_key.as_ref()?;
            let priority = crate::measure::queues::priority_name(e.job.priority);
            Some((
                key,
                (e.job.id, 0, e.job.tenant, e.job.class, priority, None),
            ))
        })
        .collect();
    for entry in &journal {
        // The entry's own text where it has one (read back from JSON, it does): no copy.
        let key: Cow<'_, str> = match (&entry.lookup, &entry.fingerprint) {
            (Some(lookup), _) => Cow::Borrowed(lookup),
            (None, Fingerprint::Text(text)) => Cow::Borrowed(text),
            (None, fingerprint) => Cow::Owned(fingerprint.to_string()),
        };
        // A hidden re-send has no send of its own: it is the last attempt sent by that key.
        let attempt = sent
            .get_mut(&*key)
            .and_then(|q| {
                if q.len() > 1 {
                    Some(q.remove(0))
                } else {
                    q.first().cloned()
                }
            })
            .or_else(|| {
                let key = entry.idempotency_key.as_ref()?;
                restored_by_key.get(key).cloned()
            });
        let done = attempt
            .as_ref()
            .and_then(|(job, no, ..)| heard.get(&(*job, *no)).copied());
        let (by, numbering) = attempt.as_ref().map_or_else(
            Default::default,
            |(job, no, tenant, class, priority, group)| {
                (
                    SentBy {
                        tenant,
                        class,
                        priority,
                        provider: 0,
                        group: *group,
                    },
                    Numbering {
                        action: *job,
                        attempt_no: *no,
                    },
                )
            },
        );
        measure.on_journal(entry, done, &by);
        attempts::with_row(entry, done, by.tenant, numbering, |row| sink.attempt(row))
            .map_err(LiveError::Output)?;
    }
    let mut measured = measure.finish(now);
    measured.summary.mode = "live".to_string();
    measured.summary.aborted = aborted;
    measured.summary.interrupted = interrupted.map(|signal| Interrupted {
        signal: signal.to_string(),
        at_ms: now,
    });
    Ok(LiveRun {
        measured,
        events,
        end_ms: now,
        real_ms,
        sends,
        journal,
        terminals,
        attempts: timings,
        audit: audit_events,
        scale,
        restart: None,
        ledger_commits: commits,
        ledger_warnings: Vec::new(),
    })
}

/// An attempt ready to leave: the core's send, its HTTP request, whether it streams, and
/// what the retry layer under the client re-sends after a connection error.
type Outgoing = (
    SendAttempt,
    hyper::Request<http_body_util::Full<bytes::Bytes>>,
    bool,
    Option<(String, Request, u32)>,
);

/// The live driver's wire: each send is rendered as HTTP and noted under the key the
/// provider's journal will show it by; it leaves after the turn's ledger commit.
struct HttpWire {
    /// The provider's base URL.
    base: String,
    /// Writes the attempts' HTTP requests to `base`.
    writer: RequestWriter,
    /// `client.transport_retries`: re-sends a layer under the client makes, unknown to it.
    hidden_retries: u32,
    /// The model a call that names none asks for: the provider's first listed model, which
    /// the provider model serves such a call in a virtual run (`None`: it lists none).
    default_model: Option<std::sync::Arc<str>>,
    /// What this harness sent, in send order, under the key the provider's journal shows it
    /// by (its look-up, else its fingerprint): which action, attempt and tenant each journal
    /// entry was, known without reading the client's claims off the wire.
    /// Nearly every key is sent once (retries of an action share its body and so its key):
    /// the first send is kept inline.
    sent: FxHashMap<String, SmallVec<[SentAs; 1]>>,
    /// Attempts of this turn, to spawn once the ledger is durable.
    outgoing: Vec<Outgoing>,
    /// Every terminal outcome, for the run's caller.
    terminals: Vec<Terminal>,
}

impl From<Untracked> for LiveError {
    fn from(e: Untracked) -> Self {
        LiveError::Provider(e.0)
    }
}

impl Wire for HttpWire {
    type Error = LiveError;

    fn send(
        &mut self,
        send: &SendAttempt,
        request: &Request,
        action: &LiveAction,
        _measure: &mut Measurement,
        _now: Millis,
    ) -> Result<Flow, LiveError> {
        // A call that names no model asks for the one a virtual run's provider would serve
        // it: on the wire a model is required, and an unlisted name would be refused.
        let named;
        let request = match &self.default_model {
            Some(model)
                if request.model.is_none()
                    && matches!(request.route, RequestRoute::ChatCompletions) =>
            {
                named = Request {
                    model: Some(std::sync::Arc::clone(model)),
                    ..request.clone()
                };
                &named
            }
            _ => request,
        };
        // Rendered once: the bytes go on the wire and their hash names the journal entry.
        let body = super::body::render(request).map(bytes::Bytes::from);
        let (tenant, class, priority, group) = (
            action.facts.tenant,
            action.facts.class,
            crate::measure::queues::priority_name(action.facts.priority),
            action.group,
        );
        self.sent
            .entry(journal_key(request, body.as_deref()))
            .or_default()
            .push((send.job, send.attempt_no, tenant, class, priority, group));
        let http = self
            .writer
            .write(request, body)
            .map_err(LiveError::Provider)?;
        let hidden = (self.hidden_retries > 0)
            .then(|| (self.base.clone(), request.clone(), self.hidden_retries));
        // Kept until its answer: the attempt's task reads it to make sense of the answer.
        self.outgoing
            .push((send.clone(), http, request.stream, hidden));
        Ok(Flow::Go)
    }

    fn finished(&mut self, terminal: &Terminal) {
        self.terminals.push(terminal.clone());
    }
}

/// The key the provider's journal shows an attempt of `request` by: what a look-up asked
/// for, else the fingerprint (method, route template, hash of the canonical body), computed
/// as the server computes it. `body` is the request's rendered body, already canonical (see
/// `body`), so its hash is the server's.
fn journal_key(request: &stampede_provider::model::Request, body: Option<&[u8]>) -> String {
    if let Some(lookup) = request.route.lookup() {
        return lookup;
    }
    let hash = body.map_or(0, stampede_provider::model::body_hash);
    // Sized for `POST /v1/chat/completions 0123456789abcdef` and the like, so the text is
    // written into one allocation rather than grown as it is formatted.
    let mut key = String::with_capacity(64);
    let _ = write!(key, "{}", Fingerprint::of(&request.route, hash));
    key
}

/// Hands the core's audit events to the run's trail (and keeps them when asked).
fn record_audit<L: Ledger>(
    core: &mut Scheduler<L>,
    keep: bool,
    kept: &mut Vec<AuditEvent>,
    sink: &mut dyn AuditSink,
) -> Result<(), LiveError> {
    // Read where they lie: the core keeps its buffer for the next events, where
    // `drain_audit` handed it over and allocated a new one at every turn that recorded any.
    core.drain_audit_with(|drained| {
        sink.record(drained).map_err(LiveError::Output)?;
        if keep {
            kept.extend_from_slice(drained);
        }
        Ok(())
    })
}

/// Takes over what a dead process persisted: every action counts as a logical request of
/// this run; unfinished ones are live again (the restored core works on them), finished
/// ones are measured with the outcome the ledger recorded.
fn adopt_restored(restart: &Restart, live: &mut LiveActions, measure: &mut Measurement) {
    for entry in &restart.entries {
        measure.on_submit();
        measure.on_arrival(entry.job.id, entry.job.priority, &entry.job.class);
        if entry.attempts > 0 {
            // Sent by the dead process: out of its queue, its wait unknown here.
            measure.on_sent_before(entry.job.id);
        }
        let arrived = restart.arrived_at(entry);
        match resume::persisted_terminal(entry) {
            Some(terminal) => {
                measure.on_terminal(Ended {
                    at: entry.updated_at,
                    tenant: &entry.job.tenant,
                    class: &entry.job.class,
                    route: crate::measure::action_route(entry.job.route),
                    terminal: &terminal,
                    submitted_at: arrived,
                    first_sent_at: None,
                    deadline: entry.job.deadline,
                    group: None,
                });
                // It ended in the dead process: its timeline went with it.
                measure.on_unseen_case(&terminal, &entry.job, (arrived, entry.updated_at));
            }
            None => {
                live.insert(
                    entry.job.id,
                    LiveAction {
                        facts: ActionFacts::of(&entry.job),
                        submitted_at: arrived,
                        deadline: entry.job.deadline,
                        first_sent_at: (entry.attempts > 0).then_some(restart.at),
                        case: CaseNotes::restored(entry.attempts > 0),
                        group: None,
                    },
                );
            }
        }
    }
}
