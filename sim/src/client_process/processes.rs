//! The client's processes: each replica's command started in a process group of its own,
//! so that whatever it starts (a wrapper's real client, `sh -c`'s children, a background
//! job) is stopped with it.
//!
//! Signals go to the whole group: SIGTERM to every replica at once when the scenario's
//! duration runs out, SIGKILL to the groups still there [`GRACE`] later, and SIGKILL to
//! every group when the run is done with them (a child the client left running in the
//! background). A runner stopped by SIGINT, SIGTERM or SIGHUP stops the groups first: in a
//! group of their own, the clients no longer share the terminal's Ctrl-C.
//!
//! Off Unix a replica is its command alone, and stopping it kills it.

use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::time::Instant;

use crate::signals::Signals;

/// Real time terminated clients get to exit before they are killed.
pub const GRACE: Duration = Duration::from_secs(5);

/// One replica: its command's process (the leader of its group) and, once it ended, how.
struct Replica {
    child: Child,
    /// The group's id: the leader's pid, kept after the leader is reaped (its children
    /// may live on in the group).
    group: Option<u32>,
    status: Option<ExitStatus>,
    /// When it was started, and when the runner saw it exit.
    started: Instant,
    ended: Option<Instant>,
}

impl Replica {
    /// Notes how it exited, now.
    fn exited(&mut self, status: ExitStatus) {
        self.status = Some(status);
        self.ended = Some(Instant::now());
    }
}

/// The replicas of one run. Dropped, it kills every group it started.
pub struct Replicas {
    replicas: Vec<Replica>,
}

/// How the replicas ended.
#[derive(Debug)]
pub struct Ended {
    /// Each replica's exit status, in order.
    pub statuses: Vec<ExitStatus>,
    /// The replicas the deadline ended (still running when it passed), in order: none when
    /// every replica exited first.
    pub ended_at_deadline: Vec<usize>,
    /// How long each replica ran (real ms), in order.
    pub ran_ms: Vec<u64>,
    /// The signal that stopped the runner while they ran (`SIGINT`, `SIGTERM`, `SIGHUP`):
    /// every group was killed then. Further signals are dropped until the report is
    /// written.
    pub interrupted: Option<&'static str>,
}

impl Replicas {
    /// No replicas yet.
    pub fn new() -> Self {
        Replicas {
            replicas: Vec::new(),
        }
    }

    /// Starts `cmd` as a replica, leader of a new process group. Returns its stdout and
    /// stderr, when `cmd` made them pipes.
    pub fn spawn(
        &mut self,
        cmd: &mut Command,
    ) -> std::io::Result<(Option<ChildStdout>, Option<ChildStderr>)> {
        #[cfg(unix)]
        cmd.process_group(0);
        #[cfg(target_os = "linux")]
        die_with_the_runner(cmd);
        let mut child = cmd.kill_on_drop(true).spawn()?;
        let group = child.id();
        let output = (child.stdout.take(), child.stderr.take());
        self.replicas.push(Replica {
            child,
            group,
            status: None,
            started: Instant::now(),
            ended: None,
        });
        Ok(output)
    }

    /// Waits for every replica to exit, at most until `deadline`; then sends SIGTERM to
    /// every group still running, and SIGKILL to those left after [`GRACE`]. A runner
    /// stopped by a signal meanwhile kills every group, then waits for the replicas to be
    /// gone.
    pub async fn wait(&mut self, deadline: Instant) -> std::io::Result<Ended> {
        let mut signals = Signals::new();
        let mut ended_at_deadline = Vec::new();
        let waited = async {
            let timed_out = !self.wait_all(deadline, &mut signals).await?;
            if timed_out {
                ended_at_deadline = (0..self.replicas.len())
                    .filter(|&r| self.replicas[r].status.is_none())
                    .collect();
                self.signal_running(Signal::Term);
                let grace = Instant::now() + GRACE;
                if !self.wait_all(grace, &mut signals).await? {
                    self.signal_running(Signal::Kill);
                    let forever = Instant::now() + Duration::from_secs(86_400 * 365);
                    self.wait_all(forever, &mut signals).await?;
                }
            }
            Ok::<_, Stopped>(())
        }
        .await;
        drop(signals);
        let interrupted = match waited {
            Ok(()) => None,
            Err(Stopped::Io(e)) => return Err(e),
            Err(Stopped::Signal(name)) => {
                // Every group was killed: reap the leaders.
                for replica in self.replicas.iter_mut().filter(|r| r.status.is_none()) {
                    let status = replica.child.wait().await?;
                    replica.exited(status);
                }
                Some(name)
            }
        };
        let statuses = self.replicas.iter().filter_map(|r| r.status).collect();
        let ran_ms = self
            .replicas
            .iter()
            .map(|r| {
                let ran = r.ended.unwrap_or_else(Instant::now) - r.started;
                u64::try_from(ran.as_millis()).unwrap_or(u64::MAX)
            })
            .collect();
        Ok(Ended {
            statuses,
            ran_ms,
            ended_at_deadline,
            interrupted,
        })
    }

    /// Waits until every replica has exited (`true`) or `until` passes (`false`). A
    /// signal among `signals` kills every group and ends the wait.
    async fn wait_all(&mut self, until: Instant, signals: &mut Signals) -> Result<bool, Stopped> {
        for i in 0..self.replicas.len() {
            let replica = &mut self.replicas[i];
            if replica.status.is_some() {
                continue;
            }
            let stopped = tokio::select! {
                status = replica.child.wait() => {
                    replica.exited(status.map_err(Stopped::Io)?);
                    continue;
                }
                _ = tokio::time::sleep_until(until) => return Ok(false),
                name = signals.any() => name,
            };
            self.kill_groups();
            return Err(Stopped::Signal(stopped));
        }
        Ok(true)
    }

    /// Sends `signal` to the group of every replica still running.
    fn signal_running(&mut self, signal: Signal) {
        for replica in self.replicas.iter_mut().filter(|r| r.status.is_none()) {
            signal_group(replica, signal);
        }
    }

    /// SIGKILL to every group (what a replica left running when it exited, too).
    fn kill_groups(&mut self) {
        for replica in &mut self.replicas {
            signal_group(replica, Signal::Kill);
        }
    }
}

impl Drop for Replicas {
    fn drop(&mut self) {
        self.kill_groups();
    }
}

/// Asks Linux to SIGKILL the replica's leader when the thread that started it ends, so
/// a runner killed with SIGKILL (a CI job's timeout, the OOM killer), which can stop
/// nothing itself, does not leave the client under test running. Only the leader: what it
/// started in its group lives on, as after any SIGKILL of a parent. The runner starts its
/// replicas from the thread it plays on, which lives as long as the run.
#[cfg(target_os = "linux")]
fn die_with_the_runner(cmd: &mut Command) {
    // SAFETY: getpid(2) has no preconditions.
    let runner = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec and calls only prctl(2),
    // getppid(2), getpid(2) and kill(2), which are async-signal-safe, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The runner died between the fork and the prctl: the signal was never sent.
            if libc::getppid() != runner {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            Ok(())
        });
    }
}

/// The environment variable that marks every process of one client run: each replica gets
/// it, and whatever they start inherits it, even a process that left the replica's group
/// (`setsid`, a daemon that double-forks), which no group signal reaches.
pub const RUN_MARK: &str = "STAMPEDE_CLIENT_RUN";

/// A value of [`RUN_MARK`] no other run in any process has (the process id, a counter and
/// the clock).
pub fn run_mark() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{}-{nanos:x}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    )
}

/// Kills (SIGKILL) every process still running with `RUN_MARK=mark` in its environment:
/// what the client left behind outside its groups, once the groups are gone. Returns their
/// pids. Only Linux's `/proc` shows another process's environment; elsewhere, none.
pub fn kill_left_behind(mark: &str) -> Vec<u32> {
    #[cfg(target_os = "linux")]
    {
        let wanted = format!("{RUN_MARK}={mark}");
        let me = std::process::id();
        let Ok(listing) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut killed = Vec::new();
        for entry in listing.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            // Another user's process, or one gone meanwhile, cannot be read: not ours.
            let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            if environ.split(|&b| b == 0).any(|v| v == wanted.as_bytes()) {
                // SAFETY: kill(2) on a process that carries this run's mark.
                if unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) } == 0 {
                    killed.push(pid);
                }
            }
        }
        killed
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = mark;
        Vec::new()
    }
}

#[derive(Debug, Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

/// Sends `signal` to the replica's group (Unix), or kills its process (elsewhere).
fn signal_group(replica: &mut Replica, signal: Signal) {
    #[cfg(unix)]
    if let Some(group) = replica.group.and_then(|g| libc::pid_t::try_from(g).ok()) {
        let signal = match signal {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        };
        // SAFETY: killpg(2) with the id of a group this runner created; no memory is
        // touched. A group with no process left answers ESRCH, which changes nothing.
        unsafe {
            libc::killpg(group, signal);
        }
    }
    #[cfg(not(unix))]
    if matches!(signal, Signal::Kill) || replica.status.is_none() {
        let _ = replica.child.start_kill();
    }
}

/// Why waiting for the replicas stopped early.
#[derive(Debug)]
enum Stopped {
    /// The runner was asked to stop (the signal's name); the groups were killed.
    Signal(&'static str),
    /// Waiting for a process failed.
    Io(std::io::Error),
}
