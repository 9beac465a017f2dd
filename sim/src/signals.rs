//! The signals that stop a run early: SIGINT (Ctrl-C), SIGTERM and SIGHUP, listened for
//! while a live run plays or a client under test runs, so the run can stop what it started
//! and still report what it measured.
//!
//! Once a run has listened for them, the process keeps them: a signal after the listening
//! ended (while the run reads the journal and writes its report) is dropped, so a report
//! is never cut short. Resetting them to their default action there let a second signal
//! kill the run mid-report: `timeout` passes its signal on to its child a second time, and
//! the run directory was left empty, or half written with a `summary.json` that looked
//! complete. SIGKILL still ends the process at once. Off Unix nothing is listened for.

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

    /// While a run listens, SIGINT, SIGTERM and SIGHUP are its to handle, and they stay
    /// caught after: a second one (a `timeout` passing its signal on again) must not kill
    /// the run while it writes the report of the part it played. (No other test of this
    /// binary sends them.)
    #[test]
    fn signals_stay_caught_once_a_run_listened_for_them() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let signals = runtime.block_on(async { Signals::new() });
        drop(signals);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            assert_ne!(
                action(signal),
                libc::SIG_DFL,
                "signal {signal} after listening"
            );
        }
    }
}
