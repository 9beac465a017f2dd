//! A ledger that cannot persist an action at admission: the action is refused with
//! `ledger_refused`, and the scheduler keeps nothing of it (no record, no queue place, no
//! task, nothing to send), so the same job is admitted and sent once the ledger recovers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use stampede_core::{
    Command, InMemoryLedger, Ledger, LedgerEntry, LedgerError, Policy, RejectionCause, Scheduler,
};

use crate::common;

/// The in-memory ledger, refusing every write while `down` (shared with the test, which
/// brings the ledger back).
#[derive(Default)]
struct Flaky {
    down: Arc<AtomicBool>,
    inner: InMemoryLedger,
}

impl Ledger for Flaky {
    fn put(&mut self, entry: &LedgerEntry) -> Result<(), LedgerError> {
        if self.down.load(Ordering::Relaxed) {
            return Err(LedgerError::Storage("disk full".into()));
        }
        self.inner.put(entry)
    }

    fn entries(&self) -> Result<Vec<LedgerEntry>, LedgerError> {
        self.inner.entries()
    }
}

#[test]
fn an_action_the_ledger_refuses_leaves_nothing_behind() {
    let down = Arc::new(AtomicBool::new(true));
    let ledger = Flaky {
        down: Arc::clone(&down),
        ..Flaky::default()
    };
    let mut core = Scheduler::new(Policy::default(), ledger, ChaCha8Rng::seed_from_u64(1))
        .expect("the default policy is valid");

    let refused = core
        .submit(common::job(1, "llm"), 0)
        .expect_err("the ledger is down");
    assert_eq!(refused.cause, RejectionCause::LedgerRefused);
    assert!(
        refused.reason.to_string().contains("disk full"),
        "{}",
        refused.reason
    );
    let gauges = core.gauges();
    assert_eq!(
        (gauges.live, gauges.queued, gauges.ledger_errors),
        (0, 0, 1)
    );
    assert!(core.live_entries().is_empty());
    assert!(core.poll(0).is_none(), "nothing unpersisted is sent");

    // The ledger recovers: the same job is admitted, persisted and sent once.
    down.store(false, Ordering::Relaxed);
    core.submit(common::job(1, "llm"), 1)
        .expect("admitted once the ledger writes");
    assert_eq!(core.gauges().live, 1);
    assert_eq!(core.ledger().inner.len(), 1, "persisted before its send");
    let Some(Command::Send(send)) = core.poll(1) else {
        panic!("the admitted job is sent")
    };
    assert_eq!((send.job, send.attempt_no), (1, 1));
    assert!(core.poll(1).is_none());
}
