//! Audit events: recorded before dispatch, free of secrets and bodies.
//!
//! An event's [`AuditDetail`] is typed data (numbers, static labels, enums and shared names)
//! captured when the event is recorded, without allocating; it is rendered as its
//! `key=value` text only when something reads it: a writer, a log, a comparison. Rendering
//! gives the same text, byte for byte, as the details built eagerly as strings did before.

use stampede_name::Name;
use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::command::{AttemptId, TerminalStatus};
use crate::job::{JobId, Priority, Route};
use crate::policy::FailureGroup;
use crate::routing::FallbackWhen;
use crate::time::Millis;

/// What happened to an action, in the order an action's events are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditKind {
    /// The action was admitted and persisted (detail: class, route, priority).
    ActionRequested,
    /// An attempt was handed to the driver, recorded before it leaves (detail: attempt
    /// number, `action` or `lookup`, reserved tokens).
    ActionSent,
    /// The driver reported how an attempt ended (detail: success, or the failure kind and
    /// its group).
    ActionResult,
    /// Another attempt or look-up was planned, or a send was held back after a ledger
    /// write failed (detail: what it follows, attempts so far, the delay in ms).
    RetryScheduled,
    /// An attempt may have executed: the action is looked up before anything is re-sent.
    ReconciliationRequired,
    /// The action ended `escalated` or `reconciliation_required`: a person (or another
    /// system) has to decide what happens next (detail: status, reason, attempts).
    Escalated,
    /// The action ended because its task was cancelled.
    Cancelled,
    /// The action completed (answered successfully, or found by a look-up).
    Completed,
    /// The action ended failed (deadline, budgets, won't improve, quota...).
    Failed,
    /// The action moved to a fallback route (detail: the condition, the route number, the
    /// scopes it left and joined, the model asked for; never a credential).
    Fallback,
    /// A fallback was withheld: an attempt on the current route may have executed and no
    /// answer settled it, so the action stays on that route with the same idempotency key
    /// instead of risking a second execution elsewhere (detail: the condition, the scope).
    FallbackWithheld,
}

/// One audit event. `detail` is a short sanitized description (status, reason, delay).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// When it happened (ms since run start: the `now` of the call that caused it).
    pub at: Millis,
    /// What happened.
    pub kind: AuditKind,
    /// The logical action it happened to.
    pub job: JobId,
    /// The attempt it concerns, for `action_sent` and `action_result`; `None` otherwise.
    pub attempt: Option<AttemptId>,
    /// What the event says, free of bodies and credentials: typed data rendered (by
    /// [`fmt::Display`], and as a JSON string) as `key=value` pairs separated by spaces, or
    /// a short sentence. A durable trail redacts the rendered text once more before writing.
    pub detail: AuditDetail,
}

/// The detail of an [`AuditEvent`]: the data of the frequent events, kept as recorded and
/// rendered to text on demand, or a text for rare free-form details.
///
/// The text is what [`fmt::Display`] writes (and what serde reads and writes: a JSON
/// string). Two details are equal when their texts are equal, whatever their variants: a
/// detail read back from JSON (a [`AuditDetail::Text`]) equals the typed one it was written
/// from.
///
/// Laid out with a one-byte tag first (`repr(u8)`), each variant's small fields declared
/// first so they fill the bytes after the tag: 40 bytes. Left to the compiler, the tag went
/// into a niche of one variant's fields, which every match (the drain drops each event)
/// had to decode.
#[derive(Clone)]
#[repr(u8)]
pub enum AuditDetail {
    /// `action_requested`: `class=<class> route=<route> priority=<priority>`.
    Requested {
        /// The job's route.
        route: Route,
        /// The job's priority.
        priority: Priority,
        /// The job's class name (shared with the job, not copied).
        class: Name,
    },
    /// `action_sent`: `attempt_no=<n> kind=action|lookup reserved_tokens=<tokens>`.
    Sent {
        /// Whether the send is a reconciliation look-up (`kind=lookup`) rather than the
        /// action itself (`kind=action`).
        lookup: bool,
        /// 1-based attempt number of the action, look-ups included.
        attempt_no: u32,
        /// Tokens the send reserved (prompt plus maximum output; 0 for non-LLM sends).
        reserved_tokens: u32,
    },
    /// `action_result` of a success: `result=success`.
    Succeeded,
    /// `action_result` of a failure: `failure=<label> group=<group>`.
    Failure {
        /// The failure's group.
        group: FailureGroup,
        /// The failure's stable label ([`FailureKind::label`](crate::classify::FailureKind::label):
        /// `429`, `reset_after_write`, ...).
        failure: &'static str,
    },
    /// `retry_scheduled` of an attempt:
    /// `after=<what> attempts=<n> delay_ms=<ms> local_delay_ms=<ms>`.
    Retry {
        /// Attempts (and look-ups) made so far.
        attempts: u32,
        /// What the retry follows (a failure label, or why the send was deferred).
        after: &'static str,
        /// The wait before the next attempt (ms), the provider's waits included.
        delay_ms: Millis,
        /// The local backoff part of that wait (ms).
        local_delay_ms: Millis,
    },
    /// `retry_scheduled` of a look-up: `lookup delay_ms=<ms>`.
    Lookup {
        /// The wait before the look-up (ms).
        delay_ms: Millis,
    },
    /// A terminal event (`completed`, `failed`, `cancelled`, `escalated`):
    /// `status=<status> reason=<reason> attempts=<n> waited_ms=<ms> last_status=<status>|none`.
    Terminal {
        /// How the action ended.
        status: TerminalStatus,
        /// The last HTTP status heard, if any (`none` otherwise).
        last_status: Option<u16>,
        /// Attempts (and look-ups) made.
        attempts: u32,
        /// The reason's stable label (`succeeded`, `deadline_exceeded`, ...).
        reason: &'static str,
        /// Total time spent waiting between attempts (ms).
        waited_ms: Millis,
    },
    /// `fallback_withheld`: `reason=<condition> scope=<id> then=retry_same_route_same_key`.
    FallbackWithheld {
        /// The condition that would have moved the action.
        reason: FallbackWhen,
        /// The scope the action stays on.
        scope: Name,
    },
    /// A fixed sentence (`may have executed: look-up first`).
    Static(&'static str),
    /// `fallback`: `reason=<condition> route=<n> from_scope=<id> to_scope=<id>`, then
    /// ` model=<model>` when the route asks for one. Boxed: its three names made it the
    /// largest detail by 24 bytes, and every event is as large as the largest detail,
    /// while a move to a fallback route is rare (one allocation each).
    Fallback(Box<FallbackMove>),
    /// A free-form text: rare details (a ledger write failure) and details read back from
    /// JSON.
    Text(String),
}

/// The data of an [`AuditDetail::Fallback`]: the move of an action to a fallback route.
#[derive(Debug, Clone)]
pub struct FallbackMove {
    /// The condition that moved the action.
    pub reason: FallbackWhen,
    /// The 1-based number of the fallback route joined.
    pub route: u64,
    /// The scope left.
    pub from_scope: Name,
    /// The scope joined.
    pub to_scope: Name,
    /// The model the route asks for, if any.
    pub model: Option<Name>,
}

impl AuditDetail {
    /// Appends the rendered text to `out` (what [`fmt::Display`] writes), for writers that
    /// reuse a buffer.
    pub fn render_into(&self, out: &mut String) {
        match self.as_text() {
            Some(text) => out.push_str(text),
            None => {
                use fmt::Write;
                write!(out, "{self}").expect("writing to a String cannot fail");
            }
        }
    }

    /// The rendered text: borrowed when the detail is already a text (`Static`, `Text`),
    /// rendered into a new string otherwise.
    #[must_use]
    pub fn text(&self) -> Cow<'_, str> {
        match self.as_text() {
            Some(text) => Cow::Borrowed(text),
            None => Cow::Owned(self.to_string()),
        }
    }

    /// Whether the rendered text is `text`, compared piece by piece as it is rendered.
    fn reads(&self, text: &str) -> bool {
        /// Consumes the expected text as the pieces arrive; fails on the first mismatch.
        struct Expect<'a>(&'a str);
        impl fmt::Write for Expect<'_> {
            fn write_str(&mut self, piece: &str) -> fmt::Result {
                let rest = self.0.strip_prefix(piece).ok_or(fmt::Error)?;
                self.0 = rest;
                Ok(())
            }
        }
        if let Some(own) = self.as_text() {
            return own == text;
        }
        let mut expect = Expect(text);
        fmt::write(&mut expect, format_args!("{self}")).is_ok() && expect.0.is_empty()
    }

    /// The text itself when the detail is already one (`Static`, `Text`); `None` for the
    /// typed variants, which are rendered.
    fn as_text(&self) -> Option<&str> {
        match self {
            AuditDetail::Static(text) => Some(text),
            AuditDetail::Text(text) => Some(text),
            _ => None,
        }
    }
}

impl fmt::Display for AuditDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuditDetail::Requested {
                class,
                route,
                priority,
            } => write!(
                f,
                "class={class} route={} priority={}",
                route_label(*route),
                priority_label(*priority)
            ),
            AuditDetail::Sent {
                attempt_no,
                lookup,
                reserved_tokens,
            } => write!(
                f,
                "attempt_no={attempt_no} kind={} reserved_tokens={reserved_tokens}",
                if *lookup { "lookup" } else { "action" }
            ),
            AuditDetail::Succeeded => f.write_str("result=success"),
            AuditDetail::Failure { failure, group } => {
                write!(f, "failure={failure} group={}", group_label(*group))
            }
            AuditDetail::Retry {
                after,
                attempts,
                delay_ms,
                local_delay_ms,
            } => write!(
                f,
                "after={after} attempts={attempts} delay_ms={delay_ms} local_delay_ms={local_delay_ms}"
            ),
            AuditDetail::Lookup { delay_ms } => write!(f, "lookup delay_ms={delay_ms}"),
            AuditDetail::Terminal {
                status,
                reason,
                attempts,
                waited_ms,
                last_status,
            } => {
                write!(
                    f,
                    "status={} reason={reason} attempts={attempts} waited_ms={waited_ms} ",
                    status_label(*status)
                )?;
                match last_status {
                    Some(status) => write!(f, "last_status={status}"),
                    None => f.write_str("last_status=none"),
                }
            }
            AuditDetail::Fallback(fallback) => {
                let FallbackMove {
                    reason,
                    route,
                    from_scope,
                    to_scope,
                    model,
                } = &**fallback;
                write!(
                    f,
                    "reason={} route={route} from_scope={from_scope} to_scope={to_scope}",
                    reason.label()
                )?;
                match model {
                    Some(model) => write!(f, " model={model}"),
                    None => Ok(()),
                }
            }
            AuditDetail::FallbackWithheld { reason, scope } => write!(
                f,
                "reason={} scope={scope} then=retry_same_route_same_key",
                reason.label()
            ),
            AuditDetail::Static(text) => f.write_str(text),
            AuditDetail::Text(text) => f.write_str(text),
        }
    }
}

/// Shows the rendered text, as the string detail it replaces did.
impl fmt::Debug for AuditDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_text() {
            Some(text) => fmt::Debug::fmt(text, f),
            None => fmt::Debug::fmt(&self.to_string(), f),
        }
    }
}

/// Equal when the rendered texts are equal.
impl PartialEq for AuditDetail {
    fn eq(&self, other: &Self) -> bool {
        match (self.as_text(), other.as_text()) {
            (Some(a), Some(b)) => a == b,
            (Some(text), None) => other.reads(text),
            (None, Some(text)) => self.reads(text),
            (None, None) => self.reads(&other.to_string()),
        }
    }
}

impl Eq for AuditDetail {}

impl PartialEq<str> for AuditDetail {
    fn eq(&self, other: &str) -> bool {
        self.reads(other)
    }
}

impl PartialEq<&str> for AuditDetail {
    fn eq(&self, other: &&str) -> bool {
        self.reads(other)
    }
}

impl From<String> for AuditDetail {
    fn from(text: String) -> Self {
        AuditDetail::Text(text)
    }
}

impl From<&str> for AuditDetail {
    fn from(text: &str) -> Self {
        AuditDetail::Text(text.to_owned())
    }
}

/// Serialized as its rendered text, a string, as the string detail was.
impl Serialize for AuditDetail {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.as_text() {
            Some(text) => serializer.serialize_str(text),
            None => serializer.collect_str(self),
        }
    }
}

/// Read back as a [`AuditDetail::Text`]: the typed data is not recovered from the text.
impl<'de> Deserialize<'de> for AuditDetail {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(AuditDetail::Text)
    }
}

/// Route names as they appear in audit details.
fn route_label(route: Route) -> &'static str {
    match route {
        Route::ChatCompletion => "chat_completion",
        Route::CreateRecord => "create_record",
        Route::GetItem => "get_item",
    }
}

fn priority_label(priority: Priority) -> &'static str {
    match priority {
        Priority::Critical => "critical",
        Priority::Normal => "normal",
        Priority::Bulk => "bulk",
    }
}

fn group_label(group: FailureGroup) -> &'static str {
    match group {
        FailureGroup::NeverArrived => "never_arrived",
        FailureGroup::MayHaveExecuted => "may_have_executed",
        FailureGroup::WontImprove => "wont_improve",
        FailureGroup::Conflict => "conflict",
        FailureGroup::QuotaExhausted => "quota_exhausted",
    }
}

fn status_label(status: TerminalStatus) -> &'static str {
    match status {
        TerminalStatus::Completed => "completed",
        TerminalStatus::Failed => "failed",
        TerminalStatus::Cancelled => "cancelled",
        TerminalStatus::Escalated => "escalated",
        TerminalStatus::ReconciliationRequired => "reconciliation_required",
    }
}

#[cfg(test)]
mod tests {
    use stampede_name::Name;

    use super::{
        group_label, priority_label, route_label, status_label, AuditDetail, FallbackMove,
    };
    use crate::command::TerminalStatus;
    use crate::job::{Priority, Route};
    use crate::policy::FailureGroup;
    use crate::routing::FallbackWhen;

    /// The string builder the scheduler used before details were typed, kept here verbatim
    /// so each variant's text is pinned against what the old call sites produced.
    struct Detail(String);

    impl Detail {
        fn new() -> Self {
            Self(String::with_capacity(72))
        }

        fn key(&mut self, key: &str) {
            if !self.0.is_empty() {
                self.0.push(' ');
            }
            self.0.push_str(key);
            self.0.push('=');
        }

        fn text(mut self, key: &str, value: &str) -> Self {
            self.key(key);
            self.0.push_str(value);
            self
        }

        fn num(mut self, key: &str, value: u64) -> Self {
            self.key(key);
            self.0.push_str(&value.to_string());
            self
        }

        fn done(self) -> String {
            self.0
        }
    }

    /// The detail renders `old` (through Display, `render_into`, serde and `==`) and reads
    /// `expected`.
    fn pins(detail: &AuditDetail, old: &str, expected: &str) {
        assert_eq!(old, expected, "the old builder");
        assert_eq!(detail.to_string(), expected);
        let mut out = String::from(">");
        detail.render_into(&mut out);
        assert_eq!(out, format!(">{expected}"));
        assert_eq!(
            serde_json::to_string(detail).unwrap(),
            serde_json::to_string(expected).unwrap()
        );
        assert_eq!(format!("{detail:?}"), format!("{expected:?}"));
        assert_eq!(*detail, *expected);
        assert_eq!(*detail, AuditDetail::Text(expected.to_owned()));
        assert_eq!(AuditDetail::from(expected), *detail);
    }

    #[test]
    fn requested_reads_class_route_priority() {
        for (route, priority) in [
            (Route::ChatCompletion, Priority::Normal),
            (Route::CreateRecord, Priority::Critical),
            (Route::GetItem, Priority::Bulk),
        ] {
            let class: Name = "llm".into();
            let old = Detail::new()
                .text("class", &class)
                .text("route", route_label(route))
                .text("priority", priority_label(priority))
                .done();
            let detail = AuditDetail::Requested {
                class,
                route,
                priority,
            };
            let expected = format!(
                "class=llm route={} priority={}",
                route_label(route),
                priority_label(priority)
            );
            pins(&detail, &old, &expected);
        }
        let detail = AuditDetail::Requested {
            class: "llm".into(),
            route: Route::ChatCompletion,
            priority: Priority::Normal,
        };
        assert_eq!(
            detail, "class=llm route=chat_completion priority=normal",
            "the documented example"
        );
    }

    #[test]
    fn sent_reads_attempt_kind_tokens() {
        for (attempt_no, lookup, reserved_tokens) in
            [(1, false, 500), (0, true, 0), (u32::MAX, false, u32::MAX)]
        {
            let old = Detail::new()
                .num("attempt_no", u64::from(attempt_no))
                .text("kind", if lookup { "lookup" } else { "action" })
                .num("reserved_tokens", u64::from(reserved_tokens))
                .done();
            let detail = AuditDetail::Sent {
                attempt_no,
                lookup,
                reserved_tokens,
            };
            let kind = if lookup { "lookup" } else { "action" };
            let expected =
                format!("attempt_no={attempt_no} kind={kind} reserved_tokens={reserved_tokens}");
            pins(&detail, &old, &expected);
        }
        assert_eq!(
            AuditDetail::Sent {
                attempt_no: 1,
                lookup: false,
                reserved_tokens: 500
            },
            "attempt_no=1 kind=action reserved_tokens=500"
        );
    }

    #[test]
    fn succeeded_reads_result_success() {
        let old = Detail::new().text("result", "success").done();
        pins(&AuditDetail::Succeeded, &old, "result=success");
    }

    #[test]
    fn failure_reads_label_and_group() {
        for group in [
            FailureGroup::NeverArrived,
            FailureGroup::MayHaveExecuted,
            FailureGroup::WontImprove,
            FailureGroup::Conflict,
            FailureGroup::QuotaExhausted,
        ] {
            let old = Detail::new()
                .text("failure", "429")
                .text("group", group_label(group))
                .done();
            let detail = AuditDetail::Failure {
                failure: "429",
                group,
            };
            pins(
                &detail,
                &old,
                &format!("failure=429 group={}", group_label(group)),
            );
        }
        assert_eq!(
            AuditDetail::Failure {
                failure: "reset_after_write",
                group: FailureGroup::MayHaveExecuted
            },
            "failure=reset_after_write group=may_have_executed"
        );
    }

    #[test]
    fn retry_reads_after_attempts_delays() {
        let (label, attempts, delay, local) = ("503", 2u32, 4_050u64, 800u64);
        let old =
            format!("after={label} attempts={attempts} delay_ms={delay} local_delay_ms={local}");
        let detail = AuditDetail::Retry {
            after: label,
            attempts,
            delay_ms: delay,
            local_delay_ms: local,
        };
        pins(
            &detail,
            &old,
            "after=503 attempts=2 delay_ms=4050 local_delay_ms=800",
        );
    }

    #[test]
    fn lookup_reads_its_delay() {
        let delay = 1_500u64;
        let old = format!("lookup delay_ms={delay}");
        pins(
            &AuditDetail::Lookup { delay_ms: delay },
            &old,
            "lookup delay_ms=1500",
        );
    }

    #[test]
    fn terminal_reads_status_reason_attempts_wait_and_last_status() {
        for (status, last_status, expected) in [
            (
                TerminalStatus::Completed,
                Some(200u16),
                "status=completed reason=succeeded attempts=3 waited_ms=18446744073709551615 last_status=200",
            ),
            (
                TerminalStatus::ReconciliationRequired,
                None,
                "status=reconciliation_required reason=succeeded attempts=3 waited_ms=18446744073709551615 last_status=none",
            ),
        ] {
            let (attempts, waited_ms) = (3u32, u64::MAX);
            let old = Detail::new()
                .text("status", status_label(status))
                .text("reason", "succeeded")
                .num("attempts", u64::from(attempts))
                .num("waited_ms", waited_ms);
            let old = match last_status {
                Some(s) => old.num("last_status", u64::from(s)),
                None => old.text("last_status", "none"),
            }
            .done();
            let detail = AuditDetail::Terminal {
                status,
                reason: "succeeded",
                attempts,
                waited_ms,
                last_status,
            };
            pins(&detail, &old, expected);
        }
        for status in [
            TerminalStatus::Failed,
            TerminalStatus::Cancelled,
            TerminalStatus::Escalated,
        ] {
            let detail = AuditDetail::Terminal {
                status,
                reason: "cancelled",
                attempts: 0,
                waited_ms: 0,
                last_status: None,
            };
            assert_eq!(
                detail.to_string(),
                format!(
                    "status={} reason=cancelled attempts=0 waited_ms=0 last_status=none",
                    status_label(status)
                )
            );
        }
    }

    #[test]
    fn fallback_reads_reason_route_scopes_and_model() {
        for model in [None, Some("gpt-big")] {
            let old = Detail::new()
                .text("reason", FallbackWhen::PrimaryUnavailable.label())
                .num("route", 1)
                .text("from_scope", "acct")
                .text("to_scope", "backup");
            let old = match model {
                Some(model) => old.text("model", model),
                None => old,
            }
            .done();
            let detail = AuditDetail::Fallback(Box::new(FallbackMove {
                reason: FallbackWhen::PrimaryUnavailable,
                route: 1,
                from_scope: "acct".into(),
                to_scope: "backup".into(),
                model: model.map(Into::into),
            }));
            let expected = match model {
                Some(_) => {
                    "reason=primary_unavailable route=1 from_scope=acct to_scope=backup model=gpt-big"
                }
                None => "reason=primary_unavailable route=1 from_scope=acct to_scope=backup",
            };
            pins(&detail, &old, expected);
        }
    }

    #[test]
    fn fallback_withheld_reads_reason_scope_then() {
        let old = Detail::new()
            .text("reason", FallbackWhen::ProviderFiveXx.label())
            .text("scope", "acct")
            .text("then", "retry_same_route_same_key")
            .done();
        let detail = AuditDetail::FallbackWithheld {
            reason: FallbackWhen::ProviderFiveXx,
            scope: "acct".into(),
        };
        pins(
            &detail,
            &old,
            "reason=provider_5xx scope=acct then=retry_same_route_same_key",
        );
    }

    #[test]
    fn static_and_text_read_as_written() {
        pins(
            &AuditDetail::Static("may have executed: look-up first"),
            "may have executed: look-up first",
            "may have executed: look-up first",
        );
        let old = format!("ledger write failed ({}); held back {}ms", "disk full", 100);
        pins(
            &AuditDetail::Text(old.clone()),
            &old,
            "ledger write failed (disk full); held back 100ms",
        );
        // Quotes and control characters are escaped in JSON as a string's are.
        let odd = AuditDetail::from("a \"b\"\n\\c");
        assert_eq!(serde_json::to_string(&odd).unwrap(), r#""a \"b\"\n\\c""#);
    }

    /// Four events a cycle are written into the audit buffer and dropped when it is drained:
    /// 104 bytes each while the fallback's three names were held in place, 80 since.
    #[test]
    fn an_audit_event_is_at_most_80_bytes() {
        let size = std::mem::size_of::<super::AuditEvent>();
        assert!(size <= 80, "AuditEvent is {size} bytes");
        assert!(std::mem::size_of::<AuditDetail>() <= 40);
    }

    #[test]
    fn json_reads_back_as_equal_text() {
        let detail = AuditDetail::Sent {
            attempt_no: 2,
            lookup: true,
            reserved_tokens: 0,
        };
        let json = serde_json::to_string(&detail).unwrap();
        let back: AuditDetail = serde_json::from_str(&json).unwrap();
        assert!(
            matches!(&back, AuditDetail::Text(t) if t == "attempt_no=2 kind=lookup reserved_tokens=0")
        );
        assert_eq!(back, detail);
        assert_ne!(back, AuditDetail::Succeeded);
        // Compared whole: neither a prefix nor a longer text reads the same.
        assert_ne!(AuditDetail::Succeeded, "result=succes");
        assert_ne!(AuditDetail::Succeeded, "result=success ");
        assert_ne!(AuditDetail::Succeeded, "");
        assert_ne!(
            AuditDetail::Lookup { delay_ms: 1 },
            AuditDetail::Lookup { delay_ms: 10 }
        );
    }
}
