//! The signals that stop a run early: SIGINT (Ctrl-C), SIGTERM and SIGHUP, listened for
//! while a live run plays or a client under test runs, so the run can stop what it started
//! and still report what it measured.
//!
//! Listening ends when the [`Signals`] is dropped: each signal then acts as it did before
//! (it ends the process), so a second Ctrl-C while the run reads the journal and writes
//! its report stops it at once. Off Unix nothing is listened for.

/// The stop signals, listened for from [`Signals::new`] until dropped. Made inside a tokio
/// runtime.
pub(crate) struct Signals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    hangup: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Starts listening. A signal that cannot be listened for is left as it is.
    pub(crate) fn new() -> Self {
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
    pub(crate) async fn any(&mut self) -> &'static str {
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

/// Listening ends: the signals act as they did before. tokio never gives a signal back
/// once a `Signal` listened for it (its handler stays, and a signal with no listener is
/// dropped), so a Ctrl-C after the listening was over did nothing at all. Each signal
/// listened for is set back to its default action here, which ends the process as the
/// user asked.
///
/// So a process has at most one `Signals` that hears these signals: tokio installs its
/// handler once per process, and a later `Signals` finds the default action in place (a
/// signal then ends the process at once). The command line makes one a process.
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

    /// While a run listens, SIGINT, SIGTERM and SIGHUP are its to handle; once it stops
    /// listening they act as before again, so Ctrl-C while the report is written ends the
    /// process instead of being dropped by tokio's handler, which nothing heard. (No other
    /// test of this binary listens for them.)
    #[test]
    fn signals_act_as_before_once_listening_ends() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let signals = runtime.block_on(async { Signals::new() });
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            assert_ne!(
                action(signal),
                libc::SIG_DFL,
                "listened for while the run plays"
            );
        }
        drop(signals);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            assert_eq!(
                action(signal),
                libc::SIG_DFL,
                "signal {signal} after listening"
            );
        }
    }
}
