//! Any client under test: a process (an agent on the official SDKs, LiteLLM, a shell
//! script) run against the fake provider and measured from the provider's journal alone.
//!
//! Call order of [`run_client`]: start the scenario's provider in-process on an ephemeral
//! loopback port at the scenario's `provider.time_scale` (1: real time); write the workload
//! file; start the command with the environment below, its output to `client.log`; wait for
//! it, at most the scenario's duration (then SIGTERM, and SIGKILL 5 s later); read the
//! journal; stop the provider; measure.
//!
//! The command's environment, on top of the runner's own:
//!
//! | variable | value |
//! | --- | --- |
//! | `STAMPEDE_PROVIDER_URL` | `http://127.0.0.1:PORT` |
//! | `OPENAI_BASE_URL` | `http://127.0.0.1:PORT/v1` (the openai SDKs append `/chat/completions`) |
//! | `ANTHROPIC_BASE_URL` | `http://127.0.0.1:PORT` (the anthropic SDKs append `/v1/messages`) |
//! | `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` | the first workload entry's credential |
//! | `STAMPEDE_CREDENTIALS` | every credential of the scenario, comma-separated |
//! | `STAMPEDE_WORKLOAD` | the workload file (see [`workload_file`]) |
//! | `STAMPEDE_TIME_SCALE` | scenario ms per real ms |
//! | `STAMPEDE_START_UNIX_MS` | the Unix time (ms) of scenario time 0: a request is due at `STAMPEDE_START_UNIX_MS + at_ms / STAMPEDE_TIME_SCALE` |
//! | `STAMPEDE_WORKERS` | the scenario's `client.workers` (or the preset's) |
//! | `STAMPEDE_CLIENT_TIMEOUT` | `client.timeout` in seconds (default 600, the SDKs' own) |
//!
//! Measurement: attempts, retries, duplicates, Retry-After compliance and tokens exactly
//! as for any run (the provider's identity decides which attempts are one request). A
//! logical request is completed when the provider delivered a 2xx answer to it; the
//! workload's other requests failed. Latency counts from a request's first arrival at the
//! provider (the client's own queue is invisible from there).

pub mod workload_file;

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use stampede_provider::model::{IdentifiedBy, JournalEntry};

use crate::live_driver::provider::Provider;
use crate::measure::{Measurement, SentBy};
use crate::run::{finish_run, RunError, RunOptions, RunOutcome};
use crate::scenario::{ExpectSpec, Scenario};
use crate::virtual_driver::AttemptSink;

/// Real time a terminated client gets to exit before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// Why a client run could not happen. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "no client command: give one after `--` (`stampede run SCENARIO --client -- python3 \
         agent.py`) or set [client] command = [\"python3\", \"agent.py\"] in the scenario"
    )]
    NoCommand,
    #[error(
        "cannot start the client {program:?}: {source} (is it installed, on PATH and executable?)"
    )]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Provider(String),
    #[error("{0}")]
    Output(String),
    #[error(transparent)]
    Run(#[from] RunError),
}

/// What happened to the client process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientExit {
    /// Exit code, or -N when a signal N ended it.
    pub code: i64,
    /// Whether the scenario's duration ran out and the runner ended it.
    pub timed_out: bool,
    /// Real ms it ran.
    pub real_ms: u64,
    /// Where its output went.
    pub log: Option<PathBuf>,
}

/// Runs `command` (or the scenario's `[client] command`) as the client under test and
/// measures it. The provider is always stopped, whatever happens to the client.
pub fn run_client(
    scenario: &Scenario,
    command: &[String],
    opts: &RunOptions,
) -> Result<(RunOutcome, ClientExit), ClientError> {
    let command: Vec<String> = if command.is_empty() {
        scenario.client.command.clone()
    } else {
        command.to_vec()
    };
    if command.is_empty() {
        return Err(ClientError::NoCommand);
    }
    if scenario.client.replicas > 1 {
        return Err(ClientError::Output(format!(
            "scenario {:?} sets client.replicas = {}: a --client command is one process; \
             replicas are simulated for the core's and the SDK presets (run without \
             --client), or start your command that many times against `stampede serve`",
            scenario.name, scenario.client.replicas
        )));
    }
    let started = Instant::now();
    let scratch;
    let dir: PathBuf = match &opts.out_dir {
        Some(d) => d.clone(),
        None => {
            // Runs without a directory (sweeps) may play side by side: one folder each.
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            scratch =
                std::env::temp_dir().join(format!("stampede-client-{}-{n}", std::process::id()));
            scratch.clone()
        }
    };
    fs::create_dir_all(&dir)
        .map_err(|e| ClientError::Output(format!("cannot create {}: {e}", dir.display())))?;
    let workload_path = dir.join("workload.jsonl");
    let requests = {
        let file = File::create(&workload_path).map_err(|e| {
            ClientError::Output(format!("cannot write {}: {e}", workload_path.display()))
        })?;
        let mut w = BufWriter::new(file);
        let n = workload_file::write(scenario, &mut w).map_err(|e| {
            ClientError::Output(format!("cannot write {}: {e}", workload_path.display()))
        })?;
        std::io::Write::flush(&mut w).map_err(|e| {
            ClientError::Output(format!("cannot write {}: {e}", workload_path.display()))
        })?;
        n
    };
    let log_path = dir.join("client.log");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| ClientError::Provider(format!("cannot start the async runtime: {e}")))?;
    let (exit, journal) = runtime.block_on(async {
        let scale = scenario.provider.time_scale;
        let provider = Provider::in_process(scenario.provider.clone(), scenario.seed)
            .await
            .map_err(|e| ClientError::Provider(e.to_string()))?;
        // The provider's clock starts now: scenario time 0 for the workload's `at_ms`.
        provider
            .reset()
            .await
            .map_err(|e| ClientError::Provider(e.to_string()))?;
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let played = play(
            scenario,
            &command,
            &provider,
            (&workload_path, &log_path),
            scale,
            epoch,
        )
        .await;
        let journal = match &played {
            Ok(_) => provider
                .journal(0)
                .await
                .map_err(|e| ClientError::Provider(e.to_string())),
            Err(_) => Ok(Vec::new()),
        };
        provider.stop().await;
        Ok::<_, ClientError>((played?, journal?))
    })?;

    let mut measure = Measurement::new(scenario.bucket_ms, scenario.duration_ms);
    for _ in 0..requests {
        measure.on_submit();
    }
    let attempts_path = dir.join("attempts.csv");
    let mut files = vec![workload_path, log_path.clone()];
    {
        let file = File::create(&attempts_path).map_err(|e| {
            ClientError::Output(format!("cannot write {}: {e}", attempts_path.display()))
        })?;
        let mut sink = csv::Writer::from_writer(BufWriter::new(file));
        for e in &journal {
            // The harness cannot tell which workload line an attempt of a foreign client
            // was for, and does not take the client's word for it.
            let row = measure.on_journal(e, None, &SentBy::default());
            sink.attempt(&row).map_err(ClientError::Output)?;
        }
        sink.flush()
            .map_err(|e| ClientError::Output(format!("writing attempts.csv: {e}")))?;
    }
    files.push(attempts_path);
    let answered = answered_requests(&journal);
    let seen = answered.len() as u64;
    for (first, done) in answered.values() {
        measure.on_external(Some(*first), *done);
    }
    for _ in seen..requests {
        measure.on_external(None, None);
    }
    let end = journal
        .iter()
        .map(|e| e.done_ms.max(e.at_ms))
        .max()
        .unwrap_or(0);
    let mut measured = measure.finish(end.min(scenario.duration_ms));
    measured.summary.mode = "client".to_string();
    measured.summary.client_exit_code = Some(exit.code);
    // A client that failed is reported, never ignored: unless the scenario says what exit
    // code it expects, anything but 0 fails the run.
    let mut scenario = scenario.clone();
    if !scenario
        .expectations
        .iter()
        .any(|e| e.key == "client_exit_code")
    {
        scenario.expectations.push(ExpectSpec {
            key: "client_exit_code".into(),
            min: Some(0.0),
            max: Some(0.0),
        });
    }
    scenario.client.preset = format!("client: {}", command_text(&command));
    let keep = opts.out_dir.is_some();
    let outcome = finish_run(
        &scenario,
        measured,
        journal.len() as u64,
        started,
        files,
        &RunOptions {
            out_dir: keep.then(|| dir.clone()),
            ..opts.clone()
        },
    )?;
    if !keep {
        let _ = fs::remove_dir_all(&dir);
    }
    Ok((
        outcome,
        ClientExit {
            log: opts.out_dir.as_ref().map(|_| log_path),
            ..exit
        },
    ))
}

/// Per logical request (the provider's identity), when its first attempt arrived and when
/// a 2xx answer to it was delivered, if one was. Look-ups are left out; the map is ordered
/// so the measurement is the same on every run of the same journal.
fn answered_requests(journal: &[JournalEntry]) -> BTreeMap<u64, (u64, Option<u64>)> {
    let mut out: BTreeMap<u64, (u64, Option<u64>)> = BTreeMap::new();
    for e in journal {
        if e.logical == 0 || e.identified_by == IdentifiedBy::Lookup {
            continue;
        }
        let slot = out.entry(e.logical).or_insert((e.at_ms, None));
        let ok = matches!(e.status, Some(200..=299)) && !e.undelivered && e.outcome.len() == 3;
        if ok && slot.1.is_none() {
            slot.1 = Some(e.done_ms.max(e.at_ms));
        }
    }
    out
}

fn command_text(command: &[String]) -> String {
    let text = command.join(" ");
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(57).collect();
        format!("{cut}...")
    } else {
        text
    }
}

/// Starts the command, waits for it (at most the scenario's duration in real time), and
/// reports how it ended.
async fn play(
    scenario: &Scenario,
    command: &[String],
    provider: &Provider,
    (workload, log): (&Path, &Path),
    scale: f64,
    provider_epoch_unix_ms: u64,
) -> Result<ClientExit, ClientError> {
    let out = File::create(log)
        .map_err(|e| ClientError::Output(format!("cannot write {}: {e}", log.display())))?;
    let err = out
        .try_clone()
        .map_err(|e| ClientError::Output(format!("cannot write {}: {e}", log.display())))?;
    let key = scenario
        .workloads
        .first()
        .map(|w| w.credential.clone())
        .or_else(|| scenario.provider.credentials.first().map(|c| c.key.clone()))
        .unwrap_or_default();
    let keys: Vec<&str> = scenario
        .provider
        .credentials
        .iter()
        .map(|c| c.key.as_str())
        .collect();
    let mut cmd = tokio::process::Command::new(&command[0]);
    cmd.args(&command[1..])
        .env("STAMPEDE_PROVIDER_URL", &provider.base)
        .env("OPENAI_BASE_URL", format!("{}/v1", provider.base))
        .env("ANTHROPIC_BASE_URL", &provider.base)
        .env("OPENAI_API_KEY", &key)
        .env("ANTHROPIC_API_KEY", &key)
        .env("STAMPEDE_CREDENTIALS", keys.join(","))
        .env("STAMPEDE_WORKLOAD", workload)
        .env("STAMPEDE_TIME_SCALE", scale.to_string())
        .env("STAMPEDE_START_UNIX_MS", provider_epoch_unix_ms.to_string())
        .env("STAMPEDE_WORKERS", scenario.policy.workers.to_string())
        .env(
            "STAMPEDE_CLIENT_TIMEOUT",
            scenario
                .client
                .timeout
                .map_or(600.0, |t| t.ms() as f64 / 1_000.0)
                .to_string(),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .kill_on_drop(true);
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|source| ClientError::Spawn {
        program: command[0].clone(),
        source,
    })?;
    let cap = Duration::from_secs_f64((scenario.duration_ms as f64 / scale / 1_000.0).max(0.001));
    let (status, timed_out) = match tokio::time::timeout(cap, child.wait()).await {
        Ok(status) => (status, false),
        Err(_) => {
            terminate(&child);
            match tokio::time::timeout(GRACE, child.wait()).await {
                Ok(status) => (status, true),
                Err(_) => {
                    let _ = child.start_kill();
                    (child.wait().await, true)
                }
            }
        }
    };
    let status = status.map_err(|e| ClientError::Output(format!("waiting for the client: {e}")))?;
    Ok(ClientExit {
        code: exit_code(&status),
        timed_out,
        real_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        log: Some(log.to_path_buf()),
    })
}

/// Asks the child to stop (SIGTERM on Unix; elsewhere a kill).
fn terminate(child: &tokio::process::Child) {
    #[cfg(unix)]
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) with a pid we spawned and still hold; no memory is touched.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGTERM);
        }
    }
    #[cfg(not(unix))]
    let _ = child;
}

fn exit_code(status: &std::process::ExitStatus) -> i64 {
    if let Some(code) = status.code() {
        return i64::from(code);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return -i64::from(sig);
        }
    }
    -1
}
