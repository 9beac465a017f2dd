//! Recording audit events. Details are short sanitized texts built only when auditing is on:
//! statuses, reasons, delays and failure labels, never bodies, credentials or keys.

use super::Scheduler;
use crate::audit::{AuditEvent, AuditKind};
use crate::command::AttemptId;
use crate::job::{JobId, Priority, Route};
use crate::ledger::Ledger;
use crate::policy::FailureGroup;
use crate::time::Millis;

impl<L: Ledger> Scheduler<L> {
    /// Records one event; `detail` runs only when the policy audits.
    pub(super) fn record(
        &mut self,
        at: Millis,
        kind: AuditKind,
        job: JobId,
        attempt: Option<AttemptId>,
        detail: impl FnOnce() -> String,
    ) {
        if self.policy.audit {
            self.audit.push(AuditEvent {
                at,
                kind,
                job,
                attempt,
                detail: detail(),
            });
        }
    }
}

/// Route names as they appear in audit details.
pub(super) fn route_label(route: Route) -> &'static str {
    match route {
        Route::ChatCompletion => "chat_completion",
        Route::CreateRecord => "create_record",
        Route::GetItem => "get_item",
    }
}

pub(super) fn priority_label(priority: Priority) -> &'static str {
    match priority {
        Priority::Critical => "critical",
        Priority::Normal => "normal",
        Priority::Bulk => "bulk",
    }
}

pub(super) fn group_label(group: FailureGroup) -> &'static str {
    match group {
        FailureGroup::NeverArrived => "never_arrived",
        FailureGroup::MayHaveExecuted => "may_have_executed",
        FailureGroup::WontImprove => "wont_improve",
        FailureGroup::Conflict => "conflict",
        FailureGroup::QuotaExhausted => "quota_exhausted",
    }
}

/// Builds an audit detail as `key=value` pairs without the formatting machinery: details are
/// written for every event on the hot path.
pub(super) struct Detail(String);

impl Detail {
    pub fn new() -> Self {
        Self(String::with_capacity(72))
    }

    fn key(&mut self, key: &str) {
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        self.0.push_str(key);
        self.0.push('=');
    }

    pub fn text(mut self, key: &str, value: &str) -> Self {
        self.key(key);
        self.0.push_str(value);
        self
    }

    pub fn num(mut self, key: &str, value: u64) -> Self {
        self.key(key);
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = value;
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        self.0
            .push_str(std::str::from_utf8(&digits[at..]).expect("ASCII digits"));
        self
    }

    pub fn done(self) -> String {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::Detail;

    #[test]
    fn detail_writes_key_value_pairs() {
        let detail = Detail::new()
            .num("attempt_no", 0)
            .text("kind", "action")
            .num("n", 18_446_744_073_709_551_615);
        assert_eq!(
            detail.done(),
            "attempt_no=0 kind=action n=18446744073709551615"
        );
    }
}
