//! The signals that stop a run early: SIGINT (Ctrl-C), SIGTERM and SIGHUP, listened for
//! while a live run plays or a client under test runs, so the run can stop what it started
//! and still report what it measured.
//!
//! From the first `Signals` of a run until the run is over ([`Released`] dropped), the
//! run keeps them: a signal after the listening ended (while the run reads the journal and
//! writes its report) is dropped, so a report is never cut short. Setting them back to
//! their default action when the listening ended let a second signal kill the run
//! mid-report: `timeout` passes its signal on to its child a second time, and the run
//! directory was left empty, or half written with a `summary.json` that looked complete.
//! Once the run is over they act as before (a `check` or `sweep` stops at the next Ctrl-C),
//! and the next run's `Signals` takes them back. SIGKILL always ends the process at once.
//! Off Unix nothing is listened for.

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
            reclaim();
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

/// The signals a run listens for.
#[cfg(unix)]
const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The handlers a run set aside when it was over ([`Released`]), for the next run to put
/// back: tokio installs its handler once per process and never again, so without them a
/// later run could not hear a signal at all.
#[cfg(unix)]
static SET_ASIDE: std::sync::Mutex<Vec<(libc::c_int, libc::sigaction)>> =
    std::sync::Mutex::new(Vec::new());

/// Puts back the handlers an earlier run set aside (none the first time).
#[cfg(unix)]
fn reclaim() {
    let saved = std::mem::take(&mut *SET_ASIDE.lock().unwrap_or_else(|e| e.into_inner()));
    for (signal, action) in saved {
        // SAFETY: sigaction(2) reinstalls an action the process had installed for this
        // signal (tokio's handler), read back by `release`; no memory is shared with it.
        unsafe {
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// How many [`Released`] are alive: only the outermost gives the signals back, so a
/// command that ends its process with its run can hold them past the run
/// ([`keep_until_exit`]).
static HELD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Held for the whole of a run that listens for stop signals, made before its first
/// `Signals`; dropped when the run is over (its report written, or refused), it gives
/// SIGINT, SIGTERM and SIGHUP the actions they had before the run (the default, or an
/// ignore `nohup` set), setting the run's handlers aside for the next run. One made while
/// another is alive gives nothing back: the outer one will.
pub struct Released {
    #[cfg(unix)]
    before: Vec<(libc::c_int, libc::sigaction)>,
}

/// Keeps the stop signals a run takes until the process exits, for a command whose process
/// ends with its run (`stampede run`): given back when the run returned, a signal still
/// coming (a user's third Ctrl-C, `timeout`'s second) would kill the process while it
/// prints the run's last lines, with the signal's status instead of the run's.
pub fn keep_until_exit() {
    std::mem::forget(Released::new());
}

impl Released {
    /// Notes what the stop signals do before the run takes them (the outermost only).
    pub fn new() -> Self {
        let outermost = HELD.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
        #[cfg(unix)]
        {
            let before = if !outermost {
                Vec::new()
            } else {
                STOP_SIGNALS
                    .iter()
                    .filter_map(|&signal| {
                        // SAFETY: sigaction(2) with no new action only reads the current one
                        // into `old`, a zeroed struct of the right type.
                        unsafe {
                            let mut old: libc::sigaction = std::mem::zeroed();
                            (libc::sigaction(signal, std::ptr::null(), &mut old) == 0)
                                .then_some((signal, old))
                        }
                    })
                    .collect()
            };
            Released { before }
        }
        #[cfg(not(unix))]
        {
            let _ = outermost;
            Released {}
        }
    }
}

impl Default for Released {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Released {
    fn drop(&mut self) {
        HELD.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        #[cfg(unix)]
        self.give_back();
    }
}

#[cfg(unix)]
impl Released {
    /// Puts back what the signals did before the run (nothing for an inner one), setting
    /// the run's handlers aside.
    fn give_back(&mut self) {
        let mut aside = SET_ASIDE.lock().unwrap_or_else(|e| e.into_inner());
        for (signal, before) in &self.before {
            // SAFETY: sigaction(2) puts back an action the process had for this signal
            // and reads the one it replaces into `old`, a zeroed struct of the right type.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(*signal, before, &mut old) == 0
                    && old.sa_sigaction != before.sa_sigaction
                    && !aside.iter().any(|(s, _)| s == signal)
                {
                    aside.push((*signal, old));
                }
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
    use super::{Released, Signals, STOP_SIGNALS};

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

    /// While a run listens, and after until it is over, SIGINT, SIGTERM and SIGHUP are its
    /// to handle (a second one must not kill it while it writes its report); once it is
    /// over they act as before; and the next run hears them again. (No other test of this
    /// binary listens for them.)
    #[test]
    fn a_run_keeps_the_stop_signals_until_it_is_over_and_the_next_run_hears_them() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        // The default, or an ignore when the tests run under `nohup`.
        let before = STOP_SIGNALS.map(action);
        let released = Released::new();
        drop(runtime.block_on(async { Signals::new() }));
        // A run inside a held one (`keep_until_exit`) gives nothing back.
        drop(Released::new());
        for signal in STOP_SIGNALS {
            let caught = action(signal);
            assert!(
                caught != libc::SIG_DFL && caught != libc::SIG_IGN,
                "caught until the run is over"
            );
        }
        drop(released);
        assert_eq!(
            STOP_SIGNALS.map(action),
            before,
            "as before the run once it is over"
        );
        let _next = Released::new();
        let heard = runtime.block_on(async {
            let mut signals = Signals::new();
            // SAFETY: raise(3) of a signal this process now handles.
            unsafe {
                libc::raise(libc::SIGHUP);
            }
            tokio::time::timeout(std::time::Duration::from_secs(10), signals.any()).await
        });
        assert_eq!(heard, Ok("SIGHUP"), "the next run hears its signals");
    }
}
