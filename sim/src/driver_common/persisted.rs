//! The terminal outcome a ledger entry records: what a restarted runner (or the driver of a
//! simulated crash) learns about an action whose `Finish` died with its process.

use stampede_core::{ActionState, LedgerEntry, NextActions, Reason, Terminal, TerminalStatus};

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
        next_actions: NextActions::new(),
    })
}
