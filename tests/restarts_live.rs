//! A real runner process killed with SIGKILL right after its first uncertain write reached
//! the provider (committed, never answered), restarted on the same ledger file: the
//! provider's journal must show a reconciliation look-up by idempotency key for that
//! action and no second create, every action must end terminal in the ledger, and the
//! audit trail the two lives wrote must verify as one whole chain.
//!
//! The provider runs in this test process (127.0.0.1, ephemeral port) so it outlives the
//! runner, as a real provider outlives a crashed client. tests/live/restart.toml makes it
//! commit the first create and never answer it, so the kill always lands between the
//! commit and the answer.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use stampede_core::{ActionState, LedgerEntry};
use stampede_durable::SqliteLedger;
use stampede_provider::model::JournalEntry;
use stampede_provider::spawn_ephemeral;
use stampede_sim::live_driver::provider::Provider;
use stampede_sim::scenario;

/// Scenario ms per real ms for both lives.
const SCALE: &str = "10";
/// Polls of the journal while waiting for the first commit, and their spacing.
const POLLS: u32 = 200;
const POLL_EVERY: Duration = Duration::from_millis(25);
/// The most a restarted run may take (real time) before the test kills it and fails.
const RESTART_TIMEOUT: Duration = Duration::from_secs(20);

fn scenario_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/live/restart.toml")
}

fn runner(url: &str, ledger: &Path, out: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_stampede"));
    cmd.arg("run")
        .arg(scenario_path())
        .args(["--live", "--provider", url, "--time-scale", SCALE])
        .arg("--ledger")
        .arg(ledger)
        .arg("--out")
        .arg(out)
        .arg("--no-render");
    cmd
}

fn is_create(e: &JournalEntry) -> bool {
    e.method == "POST" && e.route == "/v1/records"
}

/// Waits for `child` at most `timeout`; kills it and fails the test when it takes longer.
fn wait_bounded(mut child: Child, timeout: Duration) -> Output {
    let started = Instant::now();
    loop {
        match child.try_wait().expect("poll the restarted runner") {
            Some(_) => return child.wait_with_output().expect("collect its output"),
            None if started.elapsed() > timeout => {
                let _ = child.kill();
                let out = child.wait_with_output().expect("collect its output");
                panic!(
                    "the restarted runner did not finish within {timeout:?}; stdout:\n{}\nstderr:\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            None => sleep(POLL_EVERY),
        }
    }
}

fn ledger_entries(path: &Path) -> Vec<LedgerEntry> {
    SqliteLedger::open(path)
        .expect("the ledger opens")
        .all_entries()
        .expect("the ledger reads")
}

/// The test scenario's provider, started in this process on a runtime of its own so it
/// outlives the runners, as a real provider outlives a crashed client; its URL, and a
/// client of its control plane.
struct Apart {
    runtime: tokio::runtime::Runtime,
    server: stampede_provider::ServerHandle,
    url: String,
    provider: Provider,
}

impl Apart {
    fn start() -> Self {
        let scenario =
            scenario::load(&scenario_path(), None, &[]).expect("the test scenario loads");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime for the provider");
        let (addr, server) = runtime
            .block_on(spawn_ephemeral(scenario.provider.clone(), 21))
            .expect("the provider starts on 127.0.0.1");
        let url = format!("http://{addr}");
        let provider = Provider::attach(&url);
        Apart {
            runtime,
            server,
            url,
            provider,
        }
    }

    /// The provider's journal from `since` on.
    fn journal(&self, since: u64) -> Vec<JournalEntry> {
        self.runtime
            .block_on(self.provider.journal(since))
            .expect("the provider's journal")
    }

    fn stop(self) {
        self.runtime
            .block_on(async { self.server.shutdown().await.expect("the provider stops") });
    }
}

/// Starts the first life and waits until the provider has committed its first create:
/// the runner, still running, and that journal entry.
fn first_life_until_commit(apart: &Apart, ledger: &Path, out: &Path) -> (Child, JournalEntry) {
    let journal = |since| apart.journal(since);
    let mut first = runner(&apart.url, ledger, out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the runner");
    for _ in 0..POLLS {
        if let Some(committed) = journal(0).into_iter().find(|e| is_create(e) && e.committed) {
            return (first, committed);
        }
        if let Some(status) = first.try_wait().expect("poll the runner") {
            panic!("the runner exited ({status}) before its first create was committed");
        }
        sleep(POLL_EVERY);
    }
    let _ = first.kill();
    panic!(
        "no create was committed within {POLLS} polls of {POLL_EVERY:?}; journal: {:?}",
        journal(0)
    );
}

/// A first life SIGKILLed as soon as the provider has committed its first create.
fn killed_after_first_commit(apart: &Apart, ledger: &Path, out: &Path) {
    let (mut first, _) = first_life_until_commit(apart, ledger, out);
    first.kill().expect("SIGKILL the runner");
    first.wait().expect("reap the killed runner");
}

/// The same command again on `ledger`, waited for (bounded).
fn restart(apart: &Apart, ledger: &Path, out: &Path) -> Output {
    let again = runner(&apart.url, ledger, out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("restart the runner");
    wait_bounded(again, RESTART_TIMEOUT)
}

/// A provider reset since the killed life (another run reset it, or it restarted) keeps
/// another journal, without the write that life had in flight: the restart is refused,
/// saying so, even once the provider's clock has passed the time the dead life last wrote.
/// Before, such a restart was accepted, found no record by the write's key, and created it
/// a second time, in a run that passed.
#[test]
fn a_restart_against_a_provider_reset_since_is_refused_once_its_clock_has_caught_up() {
    let apart = Apart::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ledger = dir.path().join("ledger.db");
    let out = dir.path().join("run");
    killed_after_first_commit(&apart, &ledger, &out);
    let reached = ledger_entries(&ledger)
        .iter()
        .map(|e| e.updated_at)
        .max()
        .expect("the first life wrote its ledger");
    apart
        .runtime
        .block_on(apart.provider.reset())
        .expect("reset the provider");
    // The provider's clock, restarted at 0, passes the dead life's last write.
    let caught_up = (0..POLLS).any(|_| {
        let (at, _) = apart
            .runtime
            .block_on(apart.provider.clock())
            .expect("the provider's clock");
        at > reached || {
            sleep(POLL_EVERY);
            false
        }
    });
    assert!(caught_up, "the provider's clock never passed {reached} ms");
    let output = restart(&apart, &ledger, &out);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("keeps another journal"), "{err}");
    assert!(
        !apart.journal(0).iter().any(is_create),
        "nothing was sent to the reset provider"
    );
    apart.stop();
}

/// A ledger's file copied without its `-wal` after a kill holds what its first life
/// recorded of itself (which provider journal it wrote to) but not the actions it sent:
/// resuming from it would send them again as new. It is refused, saying so, and nothing
/// is sent. Before, such a copy started a first life, reset the provider and so erased the
/// dead run's journal, and passed.
#[test]
fn a_ledger_copied_without_its_log_is_refused_before_anything_is_sent_again() {
    let apart = Apart::start();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ledger = dir.path().join("ledger.db");
    let out = dir.path().join("run");
    killed_after_first_commit(&apart, &ledger, &out);
    let copy = dir.path().join("copy.db");
    std::fs::copy(&ledger, &copy).expect("copy the ledger's file alone");
    let before = apart.journal(0);
    let output = restart(&apart, &copy, &out);
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("the ledger is older than the run"), "{err}");
    assert!(err.contains("-wal"), "{err}");
    assert_eq!(
        apart.journal(0).len(),
        before.len(),
        "nothing sent, the provider's journal kept"
    );
    apart.stop();
}

#[test]
fn a_runner_killed_after_the_provider_committed_looks_the_write_up_after_restart() {
    let scenario = scenario::load(&scenario_path(), None, &[]).expect("the test scenario loads");
    let apart = Apart::start();
    let (url, journal) = (&apart.url, |since| apart.journal(since));

    let dir = tempfile::tempdir().expect("a temporary directory");
    let ledger = dir.path().join("ledger.db");
    let out = dir.path().join("run");

    // First life: killed as soon as the provider has committed its first create.
    let (mut first, killed) = first_life_until_commit(&apart, &ledger, &out);
    // Child::kill sends SIGKILL on Unix: no destructor, no flush, no goodbye.
    first.kill().expect("SIGKILL the runner");
    first.wait().expect("reap the killed runner");
    let action = killed.action.expect("the create names its action");
    let key = killed
        .idempotency_key
        .clone()
        .expect("an uncertain write carries an Idempotency-Key");

    // What the dead process left: the action persisted with the key it sent, in flight (its
    // answer never came), and the provider holding the one record it committed.
    let before = ledger_entries(&ledger);
    let entry = before
        .iter()
        .find(|e| e.job.id == action)
        .expect("the killed action is in the ledger");
    assert_eq!(entry.job.idempotency_key.as_ref(), Some(&key));
    assert_eq!(
        entry.state,
        ActionState::InFlight,
        "the kill landed between the commit and the answer"
    );
    let last_seq_of_first_life = journal(0).last().map_or(0, |e| e.seq);

    // Second life: the same command on the same ledger.
    let second = runner(url, &ledger, &out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("restart the runner");
    let output = wait_bounded(second, RESTART_TIMEOUT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the restarted run passes its expectations; stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("resumed from ledger"),
        "the run says it resumed: {stdout}"
    );
    // The report of the second life holds the first life's attempts too, each under its
    // action's tenant: the groups add up to the whole.
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json")).expect("the report is written"),
    )
    .expect("summary.json is JSON");
    assert_eq!(
        summary["by_tenant"]["acme"]["attempts"], summary["outbound_attempts"],
        "{summary}"
    );
    // The SIGKILLed life counts as the run's one crash (it had counted none).
    assert_eq!(summary["crashes"], 1, "{summary}");

    let after = journal(last_seq_of_first_life);
    assert!(!after.is_empty(), "the second life reached the provider");
    // A reconciliation look-up for the killed action, by its idempotency key...
    let lookups: Vec<&JournalEntry> = after
        .iter()
        .filter(|e| e.action == Some(action) && e.method == "GET")
        .collect();
    assert_eq!(
        lookups.len(),
        1,
        "one look-up of the killed action: {after:?}"
    );
    assert_eq!(lookups[0].route, "/v1/records?idempotency_key");
    assert_eq!(
        lookups[0].lookup.as_deref(),
        Some(format!("idempotency_key={key}").as_str()),
        "the look-up asks for the ORIGINAL key of the killed create"
    );
    assert_eq!(lookups[0].status, Some(200));
    // ...and no second create for it, under its key or its external reference.
    let again: Vec<&JournalEntry> = after
        .iter()
        .filter(|e| {
            is_create(e)
                && (e.action == Some(action)
                    || e.idempotency_key.as_ref() == Some(&key)
                    || (killed.external_ref.is_some() && e.external_ref == killed.external_ref))
        })
        .collect();
    assert!(
        again.is_empty(),
        "no second create after the restart: {again:?}"
    );
    let whole = journal(0);
    assert!(
        whole.iter().all(|e| !e.duplicate),
        "no record committed twice: {whole:?}"
    );

    // Every action ends terminal. The killed one completed by reconciliation: it knows the
    // id of the record committed under the ORIGINAL key, which only the look-up by key can
    // have told it (the answer to the create never came; a look-up by any other key finds
    // nothing and would have led to a second create).
    let entries = ledger_entries(&ledger);
    assert_eq!(entries.len() as u64, scenario.workloads[0].count);
    for e in &entries {
        assert!(
            e.state.is_terminal(),
            "action {} ends {:?}",
            e.job.id,
            e.state
        );
    }
    let resolved = entries
        .iter()
        .find(|e| e.job.id == action)
        .expect("the killed action is still in the ledger");
    assert_eq!(resolved.state, ActionState::Completed);
    assert_eq!(resolved.job.idempotency_key.as_ref(), Some(&key));
    let creates_of_action: Vec<&JournalEntry> = whole
        .iter()
        .filter(|e| is_create(e) && e.action == Some(action))
        .collect();
    assert_eq!(creates_of_action.len(), 1, "{creates_of_action:?}");
    let record = killed
        .record_id
        .as_deref()
        .expect("the committed create names its record");
    assert_eq!(
        resolved.operation_id.as_deref(),
        Some(record),
        "the look-up by key found the record the killed process created"
    );

    // One audit chain across both lives.
    let trail = out.join("audit.jsonl");
    let verify = Command::new(env!("CARGO_BIN_EXE_stampede"))
        .args(["audit", "verify"])
        .arg(&trail)
        .output()
        .expect("run stampede audit verify");
    assert!(
        verify.status.success(),
        "audit verify {}: {}{}",
        trail.display(),
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );

    apart.stop();
}

/// A restart with no time left (the provider's clock is past the scenario's end) is refused
/// with what to do, where it said it looked the uncertain writes up and ended at once,
/// having looked up nothing.
#[test]
fn a_restart_past_the_scenarios_end_is_refused_saying_what_to_do() {
    let apart = Apart::start();
    let url = &apart.url;
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    // A minute of scenario at 400 times real time: 150 ms; the whole life runs out.
    let life = |out: &str| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_stampede"));
        cmd.arg("run")
            .arg(scenario_path())
            .args(["--live", "--provider", url, "--time-scale", "400"])
            .arg("--ledger")
            .arg(&ledger)
            .arg("--out")
            .arg(dir.path().join(out))
            .arg("--no-render")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        wait_bounded(cmd.spawn().expect("the runner starts"), RESTART_TIMEOUT)
    };
    let first = life("first");
    // The run says how long its ledger's commits held it, real and scenario time: at 400
    // times real time a commit of 1 ms is 400 ms of the scenario.
    let said = String::from_utf8_lossy(&first.stdout);
    assert!(
        said.contains("commits held the driver") && said.contains("at time scale 400"),
        "{said}"
    );
    assert!(
        ledger_entries(&ledger)
            .iter()
            .any(|e| !e.state.is_terminal()),
        "the first life left nothing unfinished: the test proves little ({})",
        String::from_utf8_lossy(&first.stdout)
    );
    sleep(Duration::from_millis(300));
    let again = life("again");
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(err.contains("past the scenario's end"), "{err}");
    assert!(err.contains("--set duration="), "{err}");
    apart.stop();
}

/// A runner stopped by Ctrl-C (SIGINT) while the provider holds its first uncertain write
/// committed and unanswered reports the part it played, exits 130, and reports that write
/// as open (sent, to be looked up before any retry), never as failed; the ledger keeps it
/// in flight, and the same command run again finishes it by a look-up, with no second
/// create.
#[test]
fn a_runner_interrupted_after_the_provider_committed_reports_the_write_open_and_a_restart_finishes_it(
) {
    let apart = Apart::start();
    let (url, journal) = (&apart.url, |since| apart.journal(since));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ledger = dir.path().join("ledger.db");
    let out = dir.path().join("run");

    let (first, committed) = first_life_until_commit(&apart, &ledger, &out);
    let action = committed.action.expect("the create names its action");
    // Again and again until it exits, as `timeout` passes its signal on to its child a
    // second time, or a user presses Ctrl-C twice: the later ones come while the run reads
    // the journal and writes its report, and must not cut them short.
    let mut first = first;
    let until = Instant::now() + Duration::from_secs(5);
    while first.try_wait().expect("poll the runner").is_none() && Instant::now() < until {
        // SAFETY: kill(2) on the runner this test spawned and has not reaped.
        unsafe {
            libc::kill(first.id() as libc::pid_t, libc::SIGINT);
        }
        sleep(Duration::from_millis(5));
    }
    let output = wait_bounded(first, RESTART_TIMEOUT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(130),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("interrupted by SIGINT at"), "{stdout}");
    assert!(
        stdout.contains("run the same command again"),
        "a run on a ledger says how to finish: {stdout}"
    );

    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json")).expect("the report is written"),
    )
    .expect("summary.json is JSON");
    assert_eq!(summary["interrupted"]["signal"], "SIGINT", "{summary}");
    assert_eq!(
        summary["failed"], 0,
        "nothing that may have executed is failed"
    );
    // What was open counts as unserved until the stop, not until the scenario's cap.
    let stopped = summary["interrupted"]["at_ms"].as_u64().unwrap();
    assert!(
        summary["latency_ms"]["max"].as_u64().unwrap() <= stopped,
        "{summary}"
    );
    assert!(
        summary["goodput_window_ms"].as_u64().unwrap() <= stopped,
        "{summary}"
    );
    let unfinished = std::fs::read_to_string(out.join("unfinished.csv")).expect("unfinished.csv");
    let row = unfinished
        .lines()
        .find(|line| line.starts_with(&format!("{action},")))
        .unwrap_or_else(|| panic!("action {action} is listed open:\n{unfinished}"));
    assert!(
        row.contains("in_flight") && row.contains("look_up_before_retrying"),
        "{row}"
    );
    let entry = ledger_entries(&ledger)
        .into_iter()
        .find(|e| e.job.id == action)
        .expect("the interrupted action is in the ledger");
    assert_eq!(entry.state, ActionState::InFlight);

    let last_seq = journal(0).last().map_or(0, |e| e.seq);
    let second = runner(url, &ledger, &out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("restart the runner");
    let output = wait_bounded(second, RESTART_TIMEOUT);
    assert!(
        output.status.success(),
        "the restarted run passes; stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // A life stopped by a signal, in order, its report written, is no crash.
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json")).expect("the report is written"),
    )
    .expect("summary.json is JSON");
    assert_eq!(summary["crashes"], 0, "{summary}");
    let after = journal(last_seq);
    assert!(
        after
            .iter()
            .any(|e| e.action == Some(action) && e.method == "GET"),
        "the restart looks the open write up: {after:?}"
    );
    assert!(
        !after
            .iter()
            .any(|e| is_create(e) && e.action == Some(action)),
        "no second create: {after:?}"
    );
    assert!(journal(0).iter().all(|e| !e.duplicate));
    apart.stop();
}

/// A second runner on a ledger another runner holds is refused at once, before it sends
/// anything or makes its run directory: it would restore the first one's live actions and
/// send them again (a helper saw 1,770 records committed twice).
#[test]
fn a_second_runner_on_a_ledger_in_use_is_refused() {
    let apart = Apart::start();
    let url = &apart.url;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ledger = dir.path().join("ledger.db");
    let (mut first, _) = first_life_until_commit(&apart, &ledger, &dir.path().join("a"));
    let second_out = dir.path().join("b");
    let second = runner(url, &ledger, &second_out)
        .output()
        .expect("run the second runner");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("in use by another runner"), "{stderr}");
    assert!(!second_out.exists(), "a refused run makes no directory");
    let _ = first.kill();
    first.wait().expect("reap it");
    apart.stop();
}

/// A ledger resumed by a run of other settings is refused, naming what differs: it would
/// play the dead run's actions under this run's settings and report the two as one (a
/// helper's report said "seed 4" over 446 actions of seed 3).
#[test]
fn a_restart_under_another_seed_is_refused_naming_it() {
    let apart = Apart::start();
    let (url, journal) = (&apart.url, |since| apart.journal(since));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ledger = dir.path().join("ledger.db");
    let out = dir.path().join("run");
    let (mut first, _) = first_life_until_commit(&apart, &ledger, &out);
    first.kill().expect("SIGKILL the runner");
    first.wait().expect("reap it");
    let seen = journal(0).len();
    let second = runner(url, &ledger, &out)
        .args(["--seed", "22"])
        .output()
        .expect("run the restart");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("belongs to another run"), "{stderr}");
    assert!(
        stderr.contains("what differs from this one: seed (21; this run's: 22)"),
        "{stderr}"
    );
    assert_eq!(journal(0).len(), seen, "nothing was sent");
    // With the record of its run deleted, the ledger would have bound to any run that
    // resumed it, the other seed's too: it is refused for what it lacks, whatever the seed.
    let facts = {
        let mut edited = stampede_durable::SqliteLedger::open(&ledger).expect("open the ledger");
        let facts = edited.run_facts().expect("read the run's facts");
        edited.set_run_facts(&[]).expect("delete the run's facts");
        facts
    };
    assert!(!facts.is_empty(), "the first life recorded its run");
    for seed in ["22", "21"] {
        let edited = runner(url, &ledger, &out)
            .args(["--seed", seed])
            .output()
            .expect("run the restart");
        let stderr = String::from_utf8_lossy(&edited.stderr);
        assert_eq!(edited.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("no record of the run that wrote them"),
            "{stderr}"
        );
        assert_eq!(journal(0).len(), seen, "nothing was sent");
    }
    let restore = |without: &str| {
        let mut restored = stampede_durable::SqliteLedger::open(&ledger).expect("open the ledger");
        let kept: Vec<(&str, String)> = facts
            .iter()
            .filter(|(f, _)| f != without)
            .map(|(f, v)| (f.as_str(), v.clone()))
            .collect();
        restored
            .set_run_facts(&kept)
            .expect("restore the run's facts");
    };
    // Without the provider's journal id alone, a restart could not tell a reset provider
    // (a helper resumed against one): refused too.
    restore("provider_journal");
    let edited = runner(url, &ledger, &out)
        .output()
        .expect("run the restart");
    let stderr = String::from_utf8_lossy(&edited.stderr);
    assert_eq!(edited.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("(provider_journal deleted"), "{stderr}");
    assert_eq!(journal(0).len(), seen, "nothing was sent");
    restore("");
    // The same command as the first life's resumes it.
    let again = runner(url, &ledger, &out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("restart the runner");
    let output = wait_bounded(again, RESTART_TIMEOUT);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    apart.stop();
}
