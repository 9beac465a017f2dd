//! The terminal outcome a ledger entry records: what a restarted runner (or the driver of a
//! simulated crash) learns about an action whose `Finish` died with its process; and what
//! a core's ledger holds at the end of a run, for the report's unfinished actions.

use stampede_core::{
    ActionState, Ledger, LedgerEntry, NextAction, NextActions, Reason, Scheduler, Terminal,
    TerminalStatus,
};

/// What `core`'s ledger holds, ordered by job id; for a ledger that keeps nothing (a run no
/// one restores from it), the entries of the actions the core still tracks, from its own
/// records, which are what such a ledger would hold. An unreadable ledger gives none.
pub fn ledger_entries<L: Ledger>(core: &Scheduler<L>) -> Vec<LedgerEntry> {
    if core.ledger().keeps_entries() {
        core.ledger().entries().unwrap_or_default()
    } else {
        core.live_entries()
    }
}

/// The terminal outcome persisted for `entry`, or `None` when it is not terminal.
pub fn persisted_terminal(entry: &LedgerEntry) -> Option<Terminal> {
    let (status, reason) = match entry.state {
        ActionState::Completed => (TerminalStatus::Completed, Reason::Succeeded),
        ActionState::Failed => (TerminalStatus::Failed, Reason::AttemptsExhausted),
        ActionState::Escalated => (TerminalStatus::Escalated, Reason::ReconciliationUnavailable),
        ActionState::Cancelled => (TerminalStatus::Cancelled, Reason::Cancelled),
        ActionState::Planned | ActionState::InFlight | ActionState::ReconciliationRequired => {
            return None
        }
    };
    Some(Terminal {
        job: entry.job.id,
        status,
        reason,
        sent: entry.attempts > 0,
        last_status: None,
        attempts: entry.attempts,
        waited_ms: entry.waited_ms,
        operation_id: entry.operation_id.clone(),
        next_actions: unseen_next_actions(status, entry.attempts > 0),
    })
}

/// What can safely be done next with an action whose terminal died with its process (the
/// reasons it gave went with it): a sent one is looked up first, since an attempt of it
/// may have executed; one never sent can be sent anew without risk.
pub(crate) fn unseen_next_actions(status: TerminalStatus, sent: bool) -> NextActions {
    let mut next = NextActions::new();
    match status {
        TerminalStatus::Completed | TerminalStatus::Cancelled => {}
        _ if sent => next.push(NextAction::QueryStatus),
        _ => next.push(NextAction::SendNewOperation {
            may_duplicate: false,
        }),
    }
    next
}
