//! Any client under test: a process (an agent on the official SDKs, LiteLLM, a shell
//! script) run against the fake provider and measured from the provider's journal alone.
//!
//! Call order of [`run_client`]: start the scenario's provider in-process on an ephemeral
//! loopback port at the scenario's `provider.time_scale` (1: real time); write the workload
//! file; start the command with the environment below, its output to `client.log`, in a
//! process group of its own; wait for it, at most the scenario's duration (then SIGTERM to
//! its group, and SIGKILL 5 s later; see `processes.rs`); kill what it left in its group;
//! read the journal; stop the provider; measure.
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
//! | `STAMPEDE_WORKLOAD` | the workload file, keys whole, in a private folder removed after the run (see [`workload_file`]; the run directory keeps it with keys masked) |
//! | `STAMPEDE_TIME_SCALE` | scenario ms per real ms |
//! | `STAMPEDE_START_UNIX_MS` | the Unix time (ms) of scenario time 0: a request is due at `STAMPEDE_START_UNIX_MS + at_ms / STAMPEDE_TIME_SCALE` |
//! | `STAMPEDE_WORKERS` | the scenario's `client.workers` (or the preset's) |
//! | `STAMPEDE_CLIENT_TIMEOUT` | `client.timeout` in seconds (default 600, the SDKs' own) |
//! | `STAMPEDE_CLIENT_RUN` | a mark of this run: a process that still carries it when the client is done (one that left its group) is killed |
//!
//! Measurement: attempts, retries, duplicates, Retry-After compliance and tokens exactly
//! as for any run (the provider's identity decides which attempts are one request). A
//! logical request is completed when the provider delivered a 2xx answer to it; the
//! workload's other requests failed. Latency counts from a request's first arrival at the
//! provider (the client's own queue is invisible from there).

mod client_log;
mod judge;
mod processes;
pub mod workload_file;

use client_log::ClientLog;
pub use client_log::MAX_LOG_BYTES;
use processes::Replicas;
pub use processes::GRACE;

use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use stampede_reports::{AttemptsCsv, Interrupted};

use crate::live_driver::journal_tail::{self, JournalTail};
use crate::live_driver::provider::Provider;
use crate::measure::Measurement;
use crate::run::{finish_run, RunError, RunOptions, RunOutcome};
use crate::scenario::{ExpectSpec, Scenario};

/// Why a client run could not happen. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No command to run: none after `--` and no `[client] command` in the scenario.
    #[error(
        "no client command: give one after `--` (`stampede run SCENARIO --client -- python3 \
         agent.py`) or set [client] command = [\"python3\", \"agent.py\"] in the scenario"
    )]
    NoCommand,
    /// The command could not be started (not found, not on PATH, not executable).
    #[error(
        "cannot start the client {program:?}: {source} (is it installed, on PATH and executable?)"
    )]
    Spawn {
        /// The program that was to run (the command's first word).
        program: String,
        /// Why the operating system refused to start it.
        source: std::io::Error,
    },
    /// The in-process fake provider, or the async runtime it runs on, could not start, reset
    /// or hand over its journal.
    #[error("{0}")]
    Provider(String),
    /// The scenario asks for what a client command cannot do (several providers, a
    /// fleet-shared scope).
    #[error("scenario {scenario:?} {why}")]
    Unsupported {
        /// The scenario's name.
        scenario: String,
        /// What it sets, why a client command cannot play it, and what to do instead.
        why: &'static str,
    },
    /// A file of the run (its directory, a workload file, a client's log, attempts.csv)
    /// could not be written, or the client could not be waited for.
    #[error("cannot {doing}: {source}")]
    Io {
        /// What was being done, naming the file (`write runs/x/client.log`).
        doing: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// An attempts.csv row could not be written (the sink's message).
    #[error("{0}")]
    Output(String),
    /// Finishing the run (its report and run directory) failed; see [`RunError`].
    #[error(transparent)]
    Run(#[from] RunError),
}

/// What happened to the client process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientExit {
    /// Exit code, or -N when a signal N ended it.
    pub code: i64,
    /// The replica whose exit `code` and `log` are (from 0), and how many there were.
    pub replica: (usize, usize),
    /// How long that replica ran (real ms; `real_ms` is the whole client's).
    pub replica_ms: u64,
    /// The replicas the runner ended when the scenario's duration ran out, in order.
    pub ended_at_deadline: Vec<usize>,
    /// Processes the client started that outlived it outside its process groups (`setsid`,
    /// a daemon), killed by the runner once the client was done.
    pub left_behind: usize,
    /// The signal that stopped the runner while the client ran (`SIGINT`, `SIGTERM`,
    /// `SIGHUP`): every process the client started was killed, and what reached the
    /// provider until then is measured (the summary's `interrupted`).
    pub interrupted: Option<&'static str>,
    /// Real ms it ran.
    pub real_ms: u64,
    /// The log of the first replica that failed, whose output says why (else the first's).
    pub log: Option<PathBuf>,
    /// The run directory was gone when the client ended (it removed it, or something else
    /// did while it ran): it was made again for what the provider measured, and the
    /// client's logs and workload copies are lost.
    pub run_dir_remade: bool,
    /// Symbolic links the client left in the run directory, removed before the run's
    /// files were written there.
    pub links_removed: usize,
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
    if !scenario.providers.is_empty() {
        return Err(ClientError::Unsupported {
            scenario: scenario.name.clone(),
            why: "names several providers ([providers.*]): a client command is put under test \
                  against one provider for now (write one [provider] table)",
        });
    }
    if scenario.client.share_scope == crate::scenario::client::ShareScope::Fleet {
        return Err(ClientError::Unsupported {
            scenario: scenario.name.clone(),
            why: "sets client.share_scope = \"fleet\": that shares the core's scope record in \
                  the simulator; a client command's replicas share only what your own code \
                  shares (remove the key, or run without --client)",
        });
    }
    // Before the run directory is written: a mistyped command leaves an earlier run's
    // workload and log files whole.
    if !can_start(&command[0]) {
        let why = if Path::new(&command[0]).is_dir() {
            "it is a folder, not a program"
        } else {
            "no such file, and no such program on PATH"
        };
        return Err(ClientError::Spawn {
            program: command[0].clone(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, why),
        });
    }
    let started = Instant::now();
    // The stop signals are the run's while the client runs, and until its report is
    // written; the run's own process goes back to what they did before.
    let _released = crate::signals::Released::new();
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
    fs::create_dir_all(&dir).map_err(|source| ClientError::Io {
        doing: format!("create {}", dir.display()),
        source,
    })?;
    // One process per replica, each with its own slice of the workload (by task, as the
    // simulator spreads it) and its own log; one replica keeps the plain file names.
    let replicas = scenario.client.replicas.max(1) as usize;
    let name = |stem: &str, ext: &str, r: usize| -> PathBuf {
        if replicas == 1 {
            dir.join(format!("{stem}.{ext}"))
        } else {
            dir.join(format!("{stem}-{r}.{ext}"))
        }
    };
    let workload_paths: Vec<PathBuf> = (0..replicas)
        .map(|r| name("workload", "jsonl", r))
        .collect();
    let log_paths: Vec<PathBuf> = (0..replicas).map(|r| name("client", "log", r)).collect();
    remove_other_replicas_files(&dir, &workload_paths, &log_paths);
    // The client reads its workload, keys whole, from a folder only this user can read,
    // removed when the run ends (when `private` drops); the run directory keeps the lines
    // with the keys masked.
    let mut private = tempfile::Builder::new();
    private.prefix("stampede-workload-");
    #[cfg(unix)]
    {
        // Set, not left to the umask: a 022 umask made it readable by every user.
        use std::os::unix::fs::PermissionsExt;
        private.permissions(std::fs::Permissions::from_mode(0o700));
    }
    let private = private.tempdir().map_err(|source| ClientError::Io {
        doing: "create a private folder for the client's workload".into(),
        source,
    })?;
    let handed_paths: Vec<PathBuf> = workload_paths
        .iter()
        .map(|p| private.path().join(p.file_name().unwrap_or_default()))
        .collect();
    let requests = {
        let create = |paths: &[PathBuf]| -> Result<Vec<BufWriter<File>>, ClientError> {
            paths
                .iter()
                .map(|path| {
                    let mut open = fs::OpenOptions::new();
                    open.write(true).create(true).truncate(true);
                    #[cfg(unix)]
                    {
                        // The private copy holds keys whole: only its user reads it.
                        use std::os::unix::fs::OpenOptionsExt;
                        open.mode(0o600);
                    }
                    open.open(path)
                        .map(BufWriter::new)
                        .map_err(|source| ClientError::Io {
                            doing: format!("write {}", path.display()),
                            source,
                        })
                })
                .collect()
        };
        let mut handed = create(&handed_paths)?;
        let mut kept = create(&workload_paths)?;
        let written =
            workload_file::write_split(scenario, &mut handed, &mut kept).map_err(|source| {
                ClientError::Io {
                    doing: format!("write the workload files in {}", dir.display()),
                    source,
                }
            })?;
        let writers = handed.iter_mut().chain(kept.iter_mut());
        for (w, path) in writers.zip(handed_paths.iter().chain(&workload_paths)) {
            std::io::Write::flush(w).map_err(|source| ClientError::Io {
                doing: format!("write {}", path.display()),
                source,
            })?;
        }
        written
    };
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
        // The journal is read as it grows: a client may make more attempts than the
        // provider's ring holds.
        let tail = JournalTail::start(provider.control(), 0, journal_tail::READ_EVERY);
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let played = play(
            scenario,
            &command,
            &provider,
            (&handed_paths, &log_paths),
            scale,
            epoch,
        )
        .await;
        let journal = match &played {
            Ok(_) => tail
                .finish()
                .await
                .map_err(|e| ClientError::Provider(e.to_string())),
            Err(_) => Ok(Vec::new()),
        };
        provider.stop().await;
        Ok::<_, ClientError>((played?, journal?))
    })?;

    let end = journal
        .iter()
        .map(|e| e.done_ms.max(e.at_ms))
        .max()
        .unwrap_or(0)
        .min(scenario.duration_ms);
    // The provider's clock ran from the client's start at the scenario's time scale.
    let stopped_at = exit.interrupted.map(|_| {
        ((exit.real_ms as f64 * scenario.provider.time_scale) as u64).min(scenario.duration_ms)
    });
    // When the client was ended with work still open, by the user or by the scenario's
    // duration running out, that work is unfinished, not failed: the client never gave it
    // up, and what it had sent may have executed.
    let timed_out = !exit.ended_at_deadline.is_empty();
    let open_at = stopped_at.or(timed_out.then_some(scenario.duration_ms));
    let mut measure = Measurement::new(scenario.bucket_ms, scenario.duration_ms);
    // What the provider measured is this run's whatever the client did to its directory
    // (a clean-up step run in the wrong folder removed it whole): made again, so the
    // figures are written and nothing measured is lost.
    let run_dir_remade = !dir.is_dir();
    if run_dir_remade {
        fs::create_dir_all(&dir).map_err(|source| ClientError::Io {
            doing: format!(
                "create {} again (it was removed while the client ran)",
                dir.display()
            ),
            source,
        })?;
    }
    // The run's files are written where the run names them, never through a link the
    // client put in their place (it had sent attempts.csv and the page out of the run
    // directory).
    let links_removed = remove_links(&dir);
    let attempts_path = dir.join("attempts.csv");
    let mut files: Vec<PathBuf> = workload_paths
        .iter()
        .chain(&log_paths)
        .filter(|path| path.exists())
        .cloned()
        .collect();
    let apart = {
        let mut sink = AttemptsCsv::create(&attempts_path).map_err(|source| ClientError::Io {
            doing: format!("write {}", attempts_path.display()),
            source,
        })?;
        let apart = judge::judge(
            &requests,
            &journal,
            (end, stopped_at, open_at),
            &mut measure,
            &mut sink,
        )
        .map_err(ClientError::Output)?;
        sink.finish().map_err(|source| ClientError::Io {
            doing: "write attempts.csv".into(),
            source,
        })?;
        apart
    };
    files.push(attempts_path);
    let mut measured = measure.finish(end);
    measured.summary.mode = "client".to_string();
    measured.summary.foreign_requests = apart.foreign;
    measured.summary.catalog_reads = apart.catalog_reads;
    measured.summary.client_exit_code = Some(exit.code);
    measured.summary.interrupted = exit.interrupted.map(|signal| Interrupted {
        signal: signal.to_string(),
        at_ms: stopped_at.unwrap_or(end),
    });
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
            abort: false,
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
            // A run without a directory kept no log.
            log: opts.out_dir.as_ref().and(exit.log.clone()),
            run_dir_remade: keep && run_dir_remade,
            links_removed,
            ..exit
        },
    ))
}

/// Removes every symbolic link in `dir` (not below it), and says how many there were.
fn remove_links(dir: &Path) -> usize {
    let Ok(listing) = fs::read_dir(dir) else {
        return 0;
    };
    listing
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_symlink()))
        .filter(|entry| fs::remove_file(entry.path()).is_ok())
        .count()
}

/// Removes the workload files and logs an earlier run into `dir` left for replicas this
/// run does not have (`workload-7.jsonl` of a run of 8 in a run of 2, or `client.log` of a
/// run of one in a run of several), so no file in the run directory belongs to another
/// run. A file that cannot be removed is left: it was never this run's.
fn remove_other_replicas_files(dir: &Path, workloads: &[PathBuf], logs: &[PathBuf]) {
    let Ok(listing) = fs::read_dir(dir) else {
        return;
    };
    let replica_file = |name: &str, stem: &str, ext: &str| {
        name.strip_prefix(stem)
            .and_then(|rest| rest.strip_suffix(ext))
            .is_some_and(|middle| {
                middle.is_empty()
                    || middle
                        .strip_prefix('-')
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
    };
    for entry in listing.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let ours = workloads.contains(&path) || logs.contains(&path);
        let a_replicas =
            replica_file(name, "workload", ".jsonl") || replica_file(name, "client", ".log");
        if a_replicas && !ours {
            let _ = fs::remove_file(&path);
        }
    }
}

/// Whether `program` names something to start: a path (with a `/`) to a file, or a name
/// found as a file in one of `PATH`'s folders, as the operating system would look it up.
/// Starting it is still what decides (a file that is not executable fails there); this
/// only refuses a command that cannot be there before anything is written.
fn can_start(program: &str) -> bool {
    if program.contains('/') {
        return std::path::Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
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

/// Starts the command once per replica, waits for them all (at most the scenario's duration
/// in real time, then SIGTERM, then a kill), and reports how they ended: the first non-zero
/// exit code in replica order, else 0.
async fn play(
    scenario: &Scenario,
    command: &[String],
    provider: &Provider,
    (workloads, logs): (&[PathBuf], &[PathBuf]),
    scale: f64,
    provider_epoch_unix_ms: u64,
) -> Result<ClientExit, ClientError> {
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
    // Every key the client is given (`key` is one of these), masked in its log.
    let secrets: Vec<&str> = keys
        .iter()
        .copied()
        .chain(scenario.workloads.iter().map(|w| w.credential.as_str()))
        .collect();
    let mark = processes::run_mark();
    let started = Instant::now();
    let mut replicas = Replicas::new();
    let mut client_logs = Vec::with_capacity(logs.len());
    for (r, (workload, log)) in workloads.iter().zip(logs).enumerate() {
        let mut client_log =
            ClientLog::create(log, &secrets).map_err(|source| ClientError::Io {
                doing: format!("write {}", log.display()),
                source,
            })?;
        let mut cmd = tokio::process::Command::new(&command[0]);
        cmd.args(&command[1..])
            .env("STAMPEDE_PROVIDER_URL", &provider.base)
            .env("OPENAI_BASE_URL", format!("{}/v1", provider.base))
            .env("ANTHROPIC_BASE_URL", &provider.base)
            .env("OPENAI_API_KEY", &key)
            .env("ANTHROPIC_API_KEY", &key)
            .env("STAMPEDE_CREDENTIALS", keys.join(","))
            // Absolute, so the client finds it from any working directory it moves to.
            .env(
                "STAMPEDE_WORKLOAD",
                std::path::absolute(workload).unwrap_or_else(|_| workload.clone()),
            )
            .env(processes::RUN_MARK, &mark)
            .env("STAMPEDE_REPLICA", r.to_string())
            .env("STAMPEDE_REPLICAS", workloads.len().to_string())
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
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (stdout, stderr) = replicas
            .spawn(&mut cmd)
            .map_err(|source| ClientError::Spawn {
                program: command[0].clone(),
                source,
            })?;
        if let Some(stdout) = stdout {
            client_log.copy(stdout);
        }
        if let Some(stderr) = stderr {
            client_log.copy(stderr);
        }
        client_logs.push(client_log);
    }
    // The scenario's duration in real time; one too long for a clock (a tiny time scale)
    // is no cap at all.
    let real_secs = (scenario.duration_ms as f64 / scale / 1_000.0).max(0.001);
    let far = || started + Duration::from_secs(86_400 * 365 * 30);
    let deadline = Duration::try_from_secs_f64(real_secs)
        .ok()
        .and_then(|cap| started.checked_add(cap))
        .map_or_else(far, |at| at.min(far()));
    let deadline = tokio::time::Instant::from_std(deadline);
    let ended = replicas
        .wait(deadline)
        .await
        .map_err(|source| ClientError::Io {
            doing: "wait for the client".into(),
            source,
        })?;
    let statuses = ended.statuses;
    // How long the client ran: its output may trail on (below).
    let real_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    // Whatever the replicas left running in their groups ends with them, and so does
    // their output.
    drop(replicas);
    // And whatever left their groups (it could hold the logs' pipes open, too).
    let left_behind = processes::kill_left_behind(&mark).len();
    for (client_log, path) in client_logs.into_iter().zip(logs) {
        client_log
            .finish()
            .await
            .map_err(|source| ClientError::Io {
                doing: format!("write {}", path.display()),
                source,
            })?;
    }
    // The first replica that failed, whose log says why; else the first.
    let failed = statuses.iter().map(exit_code).position(|code| code != 0);
    Ok(ClientExit {
        code: failed.map_or(0, |r| exit_code(&statuses[r])),
        replica: (failed.unwrap_or(0), statuses.len()),
        replica_ms: ended
            .ran_ms
            .get(failed.unwrap_or(0))
            .copied()
            .unwrap_or(real_ms),
        ended_at_deadline: ended.ended_at_deadline,
        left_behind,
        interrupted: ended.interrupted,
        real_ms,
        log: logs.get(failed.unwrap_or(0)).cloned(),
        run_dir_remade: false,
        links_removed: 0,
    })
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
