//! Progress of a run on the terminal: requests done of all, attempts, 429s, run time and
//! real time elapsed, drawn on stderr with indicatif (already the sweep's progress bar; it
//! rate-limits its own redraws and clears the line when done). Shown only when stderr is a
//! terminal and the run was not asked to be `--quiet` or `--json`; the run reports to it
//! at most every 100 real ms (`stampede_sim::progress::Pacer`), and a run quicker than
//! that shows nothing at all.

use std::io::IsTerminal;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use stampede_sim::progress::{Progress, ProgressHandle, Snapshot};

/// A bar drawn on the first report, so a run that ends before it draws nothing.
pub struct TerminalProgress {
    started: Instant,
    bar: OnceLock<ProgressBar>,
}

impl TerminalProgress {
    /// A display for this run when stderr is a terminal and `wanted`; else `None` (and
    /// nothing is ever drawn).
    pub fn for_terminal(wanted: bool) -> Option<Arc<Self>> {
        (wanted && std::io::stderr().is_terminal()).then(|| {
            Arc::new(TerminalProgress {
                started: Instant::now(),
                bar: OnceLock::new(),
            })
        })
    }

    /// The handle a run reports to.
    pub fn handle(self: &Arc<Self>) -> ProgressHandle {
        ProgressHandle(self.clone())
    }

    /// Clears the bar before the run's own output is printed.
    pub fn clear(&self) {
        if let Some(bar) = self.bar.get() {
            bar.finish_and_clear();
        }
    }
}

impl Progress for TerminalProgress {
    fn update(&self, s: &Snapshot) {
        let bar = self.bar.get_or_init(|| {
            let bar = ProgressBar::new(s.requests).with_elapsed(self.started.elapsed());
            if let Ok(style) = ProgressStyle::with_template(
                "{elapsed_precise} [{bar:20}] {pos}/{len} requests done, {wide_msg}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        bar.set_length(s.requests.max(s.finished));
        bar.set_position(s.finished);
        bar.set_message(format!(
            "{} attempts, {} 429s, at {:.0} of {:.0} s",
            s.attempts,
            s.throttled,
            s.at_ms as f64 / 1000.0,
            s.cap_ms as f64 / 1000.0
        ));
    }
}
