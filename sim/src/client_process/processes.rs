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

/// Real time terminated clients get to exit before they are killed.
pub const GRACE: Duration = Duration::from_secs(5);

/// One replica: its command's process (the leader of its group) and, once it ended, how.
struct Replica {
    child: Child,
    /// The group's id: the leader's pid, kept after the leader is reaped (its children
    /// may live on in the group).
    group: Option<u32>,
    status: Option<ExitStatus>,
}

/// The replicas of one run. Dropped, it kills every group it started.
pub struct Replicas {
    replicas: Vec<Replica>,
}

/// Why waiting for the replicas stopped early.
#[derive(Debug)]
pub enum Stopped {
    /// The runner was asked to stop (the signal's name); the groups were killed.
    Signal(&'static str),
    /// Waiting for a process failed.
    Io(std::io::Error),
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
        let mut child = cmd.kill_on_drop(true).spawn()?;
        let group = child.id();
        let output = (child.stdout.take(), child.stderr.take());
        self.replicas.push(Replica {
            child,
            group,
            status: None,
        });
        Ok(output)
    }

    /// Waits for every replica to exit, at most until `deadline`; then sends SIGTERM to
    /// every group still running, and SIGKILL to those left after [`GRACE`]. Returns each
    /// replica's exit status in order, and whether the deadline ended any.
    pub async fn wait(&mut self, deadline: Instant) -> Result<(Vec<ExitStatus>, bool), Stopped> {
        let mut signals = Signals::new();
        let timed_out = !self.wait_all(deadline, &mut signals).await?;
        if timed_out {
            self.signal_running(Signal::Term);
            let grace = Instant::now() + GRACE;
            if !self.wait_all(grace, &mut signals).await? {
                self.signal_running(Signal::Kill);
                let forever = Instant::now() + Duration::from_secs(86_400 * 365);
                self.wait_all(forever, &mut signals).await?;
            }
        }
        let statuses = self.replicas.iter().filter_map(|r| r.status).collect();
        Ok((statuses, timed_out))
    }

    /// Waits until every replica has exited (`true`) or `until` passes (`false`).
    async fn wait_all(&mut self, until: Instant, signals: &mut Signals) -> Result<bool, Stopped> {
        for i in 0..self.replicas.len() {
            let replica = &mut self.replicas[i];
            if replica.status.is_some() {
                continue;
            }
            let stopped = tokio::select! {
                status = replica.child.wait() => {
                    replica.status = Some(status.map_err(Stopped::Io)?);
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

/// The signals that stop the runner, listened for while replicas run (none off Unix).
struct Signals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    hangup: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Signals {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
                hangup: signal(SignalKind::hangup()).ok(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// Resolves with the name of the first signal received; never, if none can be.
    async fn any(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = received(&mut self.interrupt) => "SIGINT",
                _ = received(&mut self.terminate) => "SIGTERM",
                _ = received(&mut self.hangup) => "SIGHUP",
            }
        }
        #[cfg(not(unix))]
        std::future::pending().await
    }
}

/// Listening ends with the client phase: the signals act as they did before it. tokio
/// never gives a signal back once a `Signal` listened for it (its handler stays, and a
/// signal with no listener is dropped), so a Ctrl-C while the run then reads the journal
/// and writes its report did nothing at all. Each signal listened for is set back to its
/// default action here, which ends the process as the user asked.
///
/// So a process runs at most one client phase that hears these signals: tokio installs
/// its handler once per process, and a second `Signals` finds the default action in place
/// (a signal then ends the runner at once, the groups with it only by their own
/// `kill_on_drop`). The command line runs one client phase a process.
#[cfg(unix)]
impl Drop for Signals {
    fn drop(&mut self) {
        let listened = [
            (self.interrupt.is_some(), libc::SIGINT),
            (self.terminate.is_some(), libc::SIGTERM),
            (self.hangup.is_some(), libc::SIGHUP),
        ];
        for (_, signal) in listened.into_iter().filter(|(on, _)| *on) {
            // SAFETY: signal(2) with SIG_DFL installs no handler of ours and touches no
            // memory; tokio's handler, which it replaces, only set a flag.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
    }
}

/// Resolves when `signal` is received; never when it could not be listened for.
#[cfg(unix)]
async fn received(signal: &mut Option<tokio::signal::unix::Signal>) {
    if let Some(s) = signal {
        if s.recv().await.is_some() {
            return;
        }
    }
    std::future::pending().await
}

#[cfg(all(test, unix))]
mod tests {
    use super::Signals;

    /// The action the process now takes on `signal`, as `sigaction(2)` reports it.
    fn action(signal: libc::c_int) -> libc::sighandler_t {
        // SAFETY: sigaction(2) with no new action only reads the current one into `old`,
        // a zeroed struct of the right type.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            assert_eq!(libc::sigaction(signal, std::ptr::null(), &mut old), 0);
            old.sa_sigaction
        }
    }

    /// While the client runs, SIGINT, SIGTERM and SIGHUP are the runner's to handle; once
    /// its phase is over they act as before again, so Ctrl-C while the report is written
    /// ends the run instead of being dropped by tokio's handler, which nothing heard.
    /// (SIGHUP alone in this test's assertions would do, but all three are held to it; no
    /// other test of this binary listens for them.)
    #[test]
    fn signals_act_as_before_once_the_client_phase_is_over() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let signals = runtime.block_on(async { Signals::new() });
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            assert_ne!(
                action(signal),
                libc::SIG_DFL,
                "listened for while the client runs"
            );
        }
        drop(signals);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            assert_eq!(
                action(signal),
                libc::SIG_DFL,
                "signal {signal} after the phase"
            );
        }
    }
}
