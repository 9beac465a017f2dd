//! The live driver: the same core, in real time on tokio, against the fake provider over
//! real HTTP (started in-process on an ephemeral loopback port, or already running at a
//! URL), measured from the provider's journal exactly as the virtual run is.
//!
//! Time: the scenario is played `time_scale` times faster than written (scenario ms per
//! real ms). The core is handed scenario time (real ms since start × scale), so its policy
//! runs unchanged; the provider runs its model at the same scale and emits waits in real
//! time, which the driver stretches back into scenario time before the core reads them
//! (`dilate`). Journal times are the provider's model time, so every figure of a live
//! run is in scenario ms like a virtual run's, except `wall_ms` (real).
//!
//! Files: `clock` (the dilated clock), `dilate` (headers into scenario time), `request`
//! (an attempt as HTTP), `body` (its JSON body straight to bytes), `transport` (HTTP and its failures into outcomes), `provider`
//! (starting or reaching the provider, its journal), `driver` (the loop), `resume` (a run
//! on a durable ledger, and its restart after the runner died), `audit_trail` (the
//! hash-chained audit file of such a run).

pub mod audit_trail;
pub mod body;
pub mod clock;
pub mod dilate;
pub mod driver;
pub(crate) mod journal_tail;
mod lives;
pub mod provider;
pub mod request;
pub mod resume;
mod run_facts;
pub mod transport;

/// How often a live or `--client` run reads the provider's journal while it plays (real
/// time; see `journal_tail`).
pub use journal_tail::READ_EVERY as JOURNAL_READ_EVERY;

use std::fs;
use std::path::PathBuf;
use std::time::Instant;

use stampede_core::{AuditEvent, JobId, Millis, Terminal};
use stampede_provider::config::{MAX_TIME_SCALE, MIN_TIME_SCALE};
use stampede_provider::model::JournalEntry;

use crate::measure::Measured;
use crate::rng;
use crate::run::{finish_run, RunError, RunOptions, RunOutcome};
use crate::scenario::Scenario;
use crate::sink::attempts::AttemptsFile;
use crate::sink::{AttemptSink, NoAttempts};
use provider::Provider;

/// Scenario ms per real ms when neither `--time-scale` nor the scenario's
/// `provider.time_scale` says: a minute of scenario time in two real seconds. Higher scales
/// run faster but coarsen the harness: tokio timers tick in whole real ms, so one real ms
/// of timer or I/O delay is `scale` ms of scenario time.
pub const DEFAULT_TIME_SCALE: f64 = 30.0;

/// Connect timeout of live attempts, real ms.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 1_000;

/// How to run live.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// Base URL of a running provider (`http://127.0.0.1:8080`); `None` starts one
    /// in-process on 127.0.0.1 with an ephemeral port.
    pub provider: Option<String>,
    /// Scenario ms per real ms; `None`: the scenario's `provider.time_scale` when it is not
    /// 1, else [`DEFAULT_TIME_SCALE`].
    pub time_scale: Option<f64>,
    /// Connect timeout, real ms.
    pub connect_timeout_ms: u64,
    /// Keep the core's audit events in [`LiveRun::audit`] (when the policy records them).
    pub keep_audit: bool,
    /// A SQLite ledger file the run persists its logical actions to (see [`resume`]). When
    /// it already holds entries the run is a restart: the provider is not reset and the
    /// scheduler is restored from the ledger.
    pub ledger: Option<PathBuf>,
    /// The control token of a `--provider` that requires one (`stampede serve` on a
    /// non-loopback address, or started with `--control-token`).
    pub control_token: Option<String>,
    /// Where the run reports how far it has got, about every 100 real ms (a terminal
    /// display); [`run_live`] takes [`RunOptions::progress`] when this is `None`.
    pub progress: Option<crate::progress::ProgressHandle>,
    /// Stop early on SIGINT (Ctrl-C), SIGTERM or SIGHUP, keeping what was measured: no
    /// new attempt leaves, those in flight are abandoned (the provider journaled them; a
    /// ledger keeps them in flight, for a restart to reconcile), and the run is reported
    /// with `interrupted` set. Further signals are dropped until the report is written (SIGKILL
    /// still ends it). Off by default: a
    /// library caller keeps its process's signals; the command line turns it on.
    pub stop_on_signals: bool,
}

impl Default for LiveOptions {
    fn default() -> Self {
        Self {
            provider: None,
            time_scale: None,
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            keep_audit: false,
            ledger: None,
            control_token: None,
            progress: None,
            stop_on_signals: false,
        }
    }
}

/// A live run that could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The fake provider could not be started, reached or read (its clock, stats or journal),
    /// or an attempt task failed.
    #[error("live run: {0}")]
    Provider(String),
    /// The time scale asked for (scenario ms per real ms) is not a finite number from the
    /// provider's [`MIN_TIME_SCALE`] to its [`MAX_TIME_SCALE`]. Shown with `{:?}`, which writes a huge or
    /// tiny number in exponent form (`1e308`) instead of hundreds of digits.
    #[error("--time-scale must be a number from {MIN_TIME_SCALE} to {MAX_TIME_SCALE} (got {0:?}); 60 plays a scenario minute in a real second")]
    TimeScale(f64),
    /// The scenario or the options ask what a live run cannot do (replicas, several
    /// providers, simulated crashes, an SDK preset, a resume without its provider); the
    /// message says what to do instead.
    #[error("{0}")]
    Unsupported(String),
    /// The scenario's client policy is invalid.
    #[error("the client policy is invalid: {0}")]
    Core(#[from] stampede_core::CoreError),
    /// The tokio runtime could not be built.
    #[error("live run: cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The run directory, attempts.csv or the audit trail could not be written.
    #[error("{0}")]
    Output(String),
    /// Finishing the run (its report and run directory) failed; see [`RunError`].
    #[error(transparent)]
    Run(#[from] RunError),
    /// The `--ledger` file could not be opened, read or written, or it belongs to a run the
    /// provider no longer remembers (reset since).
    #[error("{0}")]
    Durable(String),
}

/// What a live run produced.
#[derive(Debug, Clone)]
pub struct LiveRun {
    /// The run's figures, in scenario ms (except `wall_ms`, real ms).
    pub measured: Measured,
    /// Loop events handled: arrivals, cancellations, outcomes and commands.
    pub events: u64,
    /// Scenario time when the loop stopped (ms).
    pub end_ms: Millis,
    /// Real time the loop ran (ms).
    pub real_ms: u64,
    /// `Send` commands the core issued (each must be exactly one arrival in the journal).
    pub sends: u64,
    /// The provider's journal of the run, in seq order.
    pub journal: Vec<JournalEntry>,
    /// Every terminal outcome the core reported, in order.
    pub terminals: Vec<Terminal>,
    /// Every attempt whose outcome the core heard, in the order heard.
    pub attempts: Vec<AttemptTiming>,
    /// The core's audit events (only with `LiveOptions::keep_audit`).
    pub audit: Vec<AuditEvent>,
    /// The time scale used (scenario ms per real ms).
    pub scale: f64,
    /// What a run on a ledger file resumed from (`None` for a first life or no ledger).
    pub restart: Option<resume::RestartReport>,
    /// How long the ledger's group commits held the driver, real time.
    pub ledger_commits: LedgerCommits,
    /// What went wrong with the ledger after the run had played, for the user: nothing
    /// measured is lost to it (a life whose end could not be recorded is counted as a
    /// crash by the next restart).
    pub ledger_warnings: Vec<String>,
}

/// How long a live run's ledger commits (one a turn, each ending in an fsync with
/// `--ledger`, with the audit trail's write and fsync of that turn's records) held its
/// driver, in real time. The driver runs nothing else meanwhile, and
/// the scenario's clock runs on at the time scale: on a busy disk a commit of 50 real ms is
/// 1.5 s of a run at time scale 30, which the run's queue waits and latencies then
/// include. The run says so (see [`LedgerCommits::note_line`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerCommits {
    /// Commits made (one per turn of the loop).
    pub count: u64,
    /// Real time they took in all (µs).
    pub total_us: u64,
    /// The longest one (µs).
    pub longest_us: u64,
}

impl LedgerCommits {
    /// Counts one commit that took `took`.
    pub fn note(&mut self, took: std::time::Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.count += 1;
        self.total_us = self.total_us.saturating_add(us);
        self.longest_us = self.longest_us.max(us);
    }

    /// A line for the console: what the commits cost in real and in scenario time, a
    /// warning when they held the run for more than 1% of its scenario time (`end_ms`) at
    /// time scale `scale`.
    pub fn note_line(&self, scale: f64, end_ms: Millis) -> String {
        let real_ms = self.total_us as f64 / 1_000.0;
        let scenario_ms = real_ms * scale;
        let longest_ms = self.longest_us as f64 / 1_000.0;
        let heavy = scenario_ms > 0.01 * end_ms as f64;
        format!(
            "{}ledger: {} commits held the driver {:.0} ms of real time in all (longest {:.1} \
             ms), {:.0} ms of scenario time at time scale {}{}",
            if heavy { "warning: " } else { "" },
            self.count,
            real_ms,
            longest_ms,
            scenario_ms,
            scale,
            if heavy {
                ": queue waits and latencies include it; put the ledger on a faster disk or \
                 lower --time-scale"
            } else {
                ""
            }
        )
    }
}

#[cfg(test)]
mod ledger_commit_tests {
    use super::LedgerCommits;
    use std::time::Duration;

    /// The line warns only when the commits took more than 1% of the scenario's time.
    #[test]
    fn commits_warn_past_a_hundredth_of_the_run() {
        let mut c = LedgerCommits::default();
        c.note(Duration::from_micros(1_500));
        c.note(Duration::from_micros(500));
        assert_eq!(c.count, 2);
        assert_eq!(c.total_us, 2_000);
        assert_eq!(c.longest_us, 1_500);
        // 2 real ms at scale 30: 60 scenario ms, under 1% of 10 s, over 1% of 5 s.
        let calm = c.note_line(30.0, 10_000);
        assert!(
            calm.starts_with("ledger: 2 commits held the driver 2 ms"),
            "{calm}"
        );
        assert!(
            calm.contains("60 ms of scenario time at time scale 30"),
            "{calm}"
        );
        assert!(c.note_line(30.0, 5_000).starts_with("warning: ledger:"));
    }
}

/// When one attempt left and came back, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptTiming {
    /// The logical action the attempt was for.
    pub job: JobId,
    /// The action's attempt number (matches the journal's `attempt_no`).
    pub attempt_no: u32,
    /// Real µs since the run's start when the request was handed to the HTTP client.
    pub sent_real_us: u64,
    /// Real µs since the run's start when its outcome (answer, failure or timeout) was known.
    pub done_real_us: u64,
    /// Scenario ms when the core heard the outcome.
    pub heard_ms: Millis,
}

/// The time scale a live run of `scenario` uses (scenario ms per real ms).
pub fn resolve_time_scale(scenario: &Scenario, asked: Option<f64>) -> Result<f64, LiveError> {
    let scale = match asked {
        Some(s) => s,
        None if scenario.provider.time_scale != 1.0 => scenario.provider.time_scale,
        None => DEFAULT_TIME_SCALE,
    };
    if scale.is_finite() && (MIN_TIME_SCALE..=MAX_TIME_SCALE).contains(&scale) {
        Ok(scale)
    } else {
        Err(LiveError::TimeScale(scale))
    }
}

/// What a live run of `scenario` with `opts` cannot play (replicas, several providers,
/// simulated crashes, an SDK preset, a time scale out of range), refused before anything is
/// started or written: a run directory that holds an earlier run keeps it. Gives the time
/// scale to play at (scenario ms per real ms).
pub fn refuse_unplayable(scenario: &Scenario, opts: &LiveOptions) -> Result<f64, LiveError> {
    if scenario.client.replicas > 1 {
        return Err(LiveError::Unsupported(format!(
            "scenario {:?} sets client.replicas = {}: replicas of the core play in the \
             simulator (run it without --live); live, start one `stampede run --live \
             --provider URL` per replica against one `stampede serve`",
            scenario.name, scenario.client.replicas
        )));
    }
    if !scenario.providers.is_empty() {
        return Err(LiveError::Unsupported(format!(
            "scenario {:?} names several providers ([providers.*]): they play in the \
             simulator (run it without --live); live, one `stampede serve` plays one provider",
            scenario.name
        )));
    }
    if opts.ledger.is_some() {
        return resume::refuse_unplayable(scenario, opts);
    }
    let scale = resolve_time_scale(scenario, opts.time_scale)?;
    if !scenario.crashes.is_empty() {
        return Err(LiveError::Unsupported(format!(
            "scenario {:?} has [[crashes]]: crash-and-restore runs need the virtual driver \
             (run it without --live, or remove [[crashes]] to play it live)",
            scenario.name
        )));
    }
    if !scenario.sdk_layers.is_empty() {
        return Err(LiveError::Unsupported(format!(
            "scenario {:?} plays an SDK preset ({}), which the simulator models; to put the \
             real SDK under test live, run it with --client",
            scenario.name, scenario.client.preset
        )));
    }
    Ok(scale)
}

/// Plays `scenario` live at `scale` (scenario ms per real ms, from [`refuse_unplayable`],
/// which [`run_live`] calls before it touches the run directory) inside a tokio runtime
/// that is already running.
async fn play(
    scenario: &Scenario,
    opts: &LiveOptions,
    scale: f64,
    sink: &mut dyn AttemptSink,
) -> Result<LiveRun, LiveError> {
    if let Some(ledger) = &opts.ledger {
        return resume::play_durable(scenario, opts, ledger, None, sink).await;
    }
    let mut config = scenario.provider.clone();
    config.time_scale = scale;
    let provider = match &opts.provider {
        Some(url) => Provider::remote_with_token(url, &config, opts.control_token.clone()).await?,
        None => Provider::in_process(config, rng::stream_u64(scenario.seed, "provider")).await?,
    };
    let run = driver::play(scenario, &provider, scale, opts, sink).await;
    provider.stop().await;
    run
}

/// Plays `scenario` live on a runtime of its own and writes its run directory, like
/// `run::run_virtual` (same files and summary keys, `mode: "live"`).
pub fn run_live(
    scenario: &Scenario,
    live: &LiveOptions,
    opts: &RunOptions,
) -> Result<(RunOutcome, LiveRun), LiveError> {
    let started = Instant::now();
    // The stop signals are the run's until it is over, its report written.
    let _released = live.stop_on_signals.then(crate::signals::Released::new);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(LiveError::Runtime)?;
    let mut files = Vec::new();
    let output = |path: &PathBuf, e: &dyn std::fmt::Display| {
        LiveError::Output(format!("cannot write {}: {e}", path.display()))
    };
    let live = &LiveOptions {
        progress: live.progress.clone().or_else(|| opts.progress.clone()),
        ..live.clone()
    };
    // Before the directory is touched: a refused run leaves an earlier run's files whole.
    let scale = refuse_unplayable(scenario, live)?;
    let mut run = match &opts.out_dir {
        Some(dir) => {
            let made = !dir.exists();
            fs::create_dir_all(dir).map_err(|e| output(dir, &e))?;
            // A run refused before it wrote anything (a ledger in use, a provider not
            // there) leaves no empty directory behind it.
            let unmake = |dir: &PathBuf| {
                if made {
                    let _ = fs::remove_dir(dir);
                }
            };
            let path = dir.join("attempts.csv");
            // Made at the first attempt: a run refused before it sends (no provider at
            // --provider, a ledger that cannot open) leaves an earlier run's file whole.
            let mut csv_sink = AttemptsFile::new(path.clone());
            let sink = &mut csv_sink as &mut dyn AttemptSink;
            let played = match &live.ledger {
                // A run on a ledger keeps its audit trail beside its report.
                Some(ledger) => {
                    let audit = dir.join("audit.jsonl");
                    runtime
                        .block_on(resume::play_durable(
                            scenario,
                            live,
                            ledger,
                            Some(&audit),
                            sink,
                        ))
                        .map(|run| (run, Some(audit)))
                }
                None => runtime
                    .block_on(play(scenario, live, scale, sink))
                    .map(|run| (run, None)),
            };
            // The rows of a run that failed part way are written out before its error is.
            let closed = csv_sink.close(played.is_ok());
            let (run, audit) = played.inspect_err(|_| unmake(dir))?;
            closed.map_err(|e| output(&path, &e))?;
            files.push(path);
            files.extend(audit);
            run
        }
        None => runtime.block_on(play(scenario, live, scale, &mut NoAttempts))?,
    };
    let measured = std::mem::take(&mut run.measured);
    let outcome = finish_run(scenario, measured, run.events, started, files, opts)?;
    Ok((outcome, run))
}
