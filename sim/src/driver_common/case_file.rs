//! What a run leaves behind for a person when an action does not complete: a dead letter
//! for every action that ended without completing (its original input, reason and next
//! safe actions, so it can be resubmitted or closed deliberately), and an escalation case
//! file for every action the core handed to a person (seed 000: outcome, provider, route,
//! scope, a sanitized fingerprint, the attempt timeline with statuses and Retry-After
//! values, the budget used, the key or operation id, and the next options with their risk).
//!
//! Both are sanitized by construction: no credential (only its masked form), no request
//! body (only the body's hash), no response text. The files are `dead_letter.jsonl` and
//! `escalations.jsonl`, one JSON object per line, in the order the actions ended; their
//! keys are documented in `docs/contract.md` and checked against it by a test.

use std::fmt::Write as _;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use stampede_core::classify::{classify, Classification, Failure, FailureKind};
use stampede_core::idempotency::derive_key;
use stampede_core::{
    FailureGroup, Job, LookupResult, Millis, NextAction, OperationId, Outcome, Priority, Reason,
    Route, SendKind, Terminal, TerminalStatus,
};
use stampede_core::{IdempotencyKey, Name, TaskName};

use crate::driver_common::translate::ActionFacts;
use crate::measure::action_route;

/// At most this many records of each kind are kept per run; past it the rest are not
/// written (the summary's `failed` and `escalations` still count every one). Bounds
/// memory: a dead letter is about 600 bytes.
pub const MAX_RECORDS: usize = 200_000;

/// At most this many attempts are kept in one action's timeline (the first ones); the
/// rest are counted in the case file's `attempts_left_out`.
pub const MAX_TIMELINE: usize = 64;
// `CaseNotes::unanswered` counts a full timeline in a byte.
const _: () = assert!(MAX_TIMELINE <= u8::MAX as usize);

/// A provider error code kept inline (codes are short ASCII words; a longer one is cut at
/// 31 bytes), so noting an answer never allocates.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ShortCode {
    len: u8,
    bytes: [u8; 31],
}

impl ShortCode {
    fn new(code: &str) -> Self {
        let mut bytes = [0u8; 31];
        let mut len = code.len().min(bytes.len());
        while !code.is_char_boundary(len) {
            len -= 1;
        }
        bytes[..len].copy_from_slice(&code.as_bytes()[..len]);
        ShortCode {
            len: len as u8,
            bytes,
        }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl std::fmt::Debug for ShortCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ShortCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One attempt in an action's timeline, as the client saw it. Plain data: noting an attempt
/// or its answer never allocates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AttemptNote {
    /// The attempt's number within its action (1 = first).
    pub attempt_no: u32,
    /// `action` (the request itself) or `lookup` (a reconciliation read).
    pub kind: &'static str,
    /// When it left the client (ms since run start).
    pub sent_at_ms: Millis,
    /// When the client heard how it ended (ms since run start); `null` if it never did.
    pub answered_at_ms: Option<Millis>,
    /// HTTP status of the answer; `null` for a transport failure, a look-up's answer or no
    /// answer.
    pub status: Option<u16>,
    /// The transport failure (`read_timeout`, `reset_after_write`, ...), if any.
    pub transport: Option<&'static str>,
    /// A look-up's answer: `found`, `absent` or `unsupported`.
    pub lookup: Option<&'static str>,
    /// The provider's error code (`rate_limit_exceeded`, ...), if any.
    pub error_code: Option<ShortCode>,
    /// The Retry-After the answer carried (ms), if any.
    pub retry_after_ms: Option<Millis>,
    /// For an action attempt, whether it may have executed unseen: not answered (yet), or
    /// answered by a failure that may follow execution (read timeout, drop after write,
    /// 500, 502, 504). For a look-up, whether it failed to settle that (no record answer).
    #[serde(skip)]
    pub uncertain: bool,
}

impl AttemptNote {
    /// Attempt `attempt_no` (a look-up when `lookup`), sent at `sent_at_ms`, not answered.
    fn unanswered(attempt_no: u32, lookup: bool, sent_at_ms: Millis) -> Self {
        AttemptNote {
            attempt_no,
            kind: if lookup { "lookup" } else { "action" },
            sent_at_ms,
            answered_at_ms: None,
            status: None,
            transport: None,
            lookup: None,
            error_code: None,
            retry_after_ms: None,
            uncertain: true,
        }
    }
}

/// An action's first attempt, noted without a timeline while it is the only one and not
/// answered. Most actions complete on their first attempt, and a timeline vector for each
/// was an allocation, a free and a cache miss at the answer (notes cost about 8% of the
/// million-request `run --out`, measured by turning them off; holding the first note
/// took most of that back).
#[derive(Debug, Clone, Copy)]
struct HeldNote {
    sent_at_ms: Millis,
    attempt_no: u32,
    lookup: bool,
}

/// The case notes of a live action: its attempts so far, and whether they carried an
/// idempotency key. The timeline allocates at the second send or the first answer that is
/// not a success, not before: a client holds hundreds of thousands of queued actions in a
/// long backlog, and inline notes made each of them 200 bytes larger (97 MiB of the
/// million-request run), so only the first attempt is held inline, in 16 bytes.
#[derive(Debug, Clone, Default)]
pub struct CaseNotes {
    timeline: Vec<AttemptNote>,
    /// The first attempt while it is the only one and not answered (see [`HeldNote`]).
    held: Option<HeldNote>,
    left_out: u32,
    /// Notes not answered yet, the held one included. At zero an answer has no note to
    /// fill (its attempt was left out of a full timeline), which is known without the scan:
    /// a naive client's hundredth attempt would otherwise search 64 notes for nothing.
    unanswered: u8,
    keyed: bool,
    /// Attempts went out before a restart, in a process whose notes died with it: one of
    /// them may have executed, unseen here, until a look-up this process hears answered
    /// says otherwise.
    sent_unseen: bool,
}

impl CaseNotes {
    /// The notes of an action a restarted runner takes over from its ledger: `sent` when
    /// the dead process had sent it (an attempt of its may have executed; its timeline
    /// went with it).
    pub fn restored(sent: bool) -> Self {
        CaseNotes {
            sent_unseen: sent,
            ..CaseNotes::default()
        }
    }

    /// Attempt `attempt_no` (a lookup when `kind` says so) left at `now` (ms), with an
    /// idempotency key when `keyed`.
    pub fn sent(&mut self, attempt_no: u32, kind: &SendKind, keyed: bool, now: Millis) {
        self.keyed |= keyed;
        let lookup = matches!(kind, SendKind::Lookup(_));
        if self.held.is_none() && self.timeline.is_empty() && self.left_out == 0 {
            self.held = Some(HeldNote {
                sent_at_ms: now,
                attempt_no,
                lookup,
            });
            self.unanswered += 1;
            return;
        }
        self.spill();
        if self.timeline.len() >= MAX_TIMELINE {
            self.left_out = self.left_out.saturating_add(1);
            return;
        }
        self.unanswered += 1;
        self.timeline
            .push(AttemptNote::unanswered(attempt_no, lookup, now));
    }

    /// Moves the held first attempt, if any, into the timeline.
    fn spill(&mut self) {
        if let Some(h) = self.held.take() {
            debug_assert!(self.timeline.is_empty(), "a held note is the only one");
            self.timeline.push(AttemptNote::unanswered(
                h.attempt_no,
                h.lookup,
                h.sent_at_ms,
            ));
        }
    }

    /// The client heard `outcome` of attempt `attempt_no` at `now` (ms).
    pub fn answered(&mut self, attempt_no: u32, outcome: &Outcome, now: Millis) {
        if self.unanswered == 0 {
            return;
        }
        let class = classify(outcome);
        if let Some(held) = self.held {
            if held.attempt_no != attempt_no {
                // The only note is another attempt's: an answer to an attempt of a dead
                // process.
                return;
            }
            if !held.lookup && matches!(class, Classification::Success) {
                // A success completes its action at once (`Scheduler::succeed`), and a
                // completed action has no case file: the note would never be read.
                self.held = None;
                self.unanswered = 0;
                return;
            }
            self.spill();
        }
        let Some(note) = self
            .timeline
            .iter_mut()
            .rev()
            .find(|n| n.attempt_no == attempt_no && n.answered_at_ms.is_none())
        else {
            // Left out of a full timeline, or an answer to an attempt of a dead process.
            return;
        };
        self.unanswered -= 1;
        note.answered_at_ms = Some(now);
        note.uncertain = if note.kind == "lookup" {
            // A look-up settles the doubt only with an answer about the record.
            !matches!(outcome, Outcome::Lookup(_))
        } else {
            matches!(
                class,
                Classification::Failure(Failure {
                    group: FailureGroup::MayHaveExecuted,
                    ..
                })
            )
        };
        match outcome {
            Outcome::Response(r) => {
                note.status = Some(r.status);
                note.error_code = r.error_code.as_deref().map(ShortCode::new);
                note.retry_after_ms = r.retry_after_ms;
            }
            Outcome::Transport(t) => note.transport = Some(FailureKind::Transport(*t).label()),
            Outcome::Lookup(l) => {
                note.lookup = Some(match l {
                    LookupResult::Found { .. } => "found",
                    LookupResult::Absent => "absent",
                    LookupResult::Unsupported => "unsupported",
                });
            }
        }
    }
}

/// A `fmt::Write` that writes a `Debug` rendering in snake case into `out`, up to the first
/// `(`, space or `{` (a variant's name without its fields), so a name is made without the
/// intermediate `format!` of the whole rendering.
#[cfg(test)]
struct Snake<'a> {
    out: &'a mut String,
    first: bool,
    done: bool,
}

#[cfg(test)]
impl<'a> Snake<'a> {
    fn new(out: &'a mut String) -> Self {
        Self {
            out,
            first: true,
            done: false,
        }
    }
}

#[cfg(test)]
impl std::fmt::Write for Snake<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for c in s.chars() {
            if self.done || matches!(c, '(' | ' ' | '{') {
                self.done = true;
                break;
            }
            if c.is_ascii_uppercase() {
                if !self.first {
                    self.out.push('_');
                }
                self.out.push(c.to_ascii_lowercase());
            } else {
                self.out.push(c);
            }
            self.first = false;
        }
        Ok(())
    }
}

/// The action's original input, enough to submit it again; never its body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OriginalInput {
    /// Request class (`llm`, `read`, `uncertain_write`, ...).
    pub class: Name,
    /// Endpoint family (`chat_completion`, `create_record`, `get_item`).
    pub route: Route,
    /// Admission priority (`critical`, `normal`, `bulk`).
    pub priority: Priority,
    /// Estimated prompt tokens (tokens).
    pub prompt_tokens: u32,
    /// Maximum output tokens requested (tokens).
    pub max_output_tokens: u32,
    /// Absolute deadline (ms since run start), if any.
    pub deadline_ms: Option<Millis>,
    /// Resource id of a read, if any.
    pub resource: Option<String>,
    /// External reference of a write's side effect, if any.
    pub external_ref: Option<String>,
    /// Whether the answer was streamed.
    pub stream: bool,
    /// Hash of the canonical payload (16 hex digits): identifies the body, never holds it.
    pub payload_hash: Hex16,
}

/// A 64-bit hash written as 16 lowercase hex digits, formatted when it is written out
/// rather than held as a string by every record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hex16(pub u64);

impl Serialize for Hex16 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:016x}", self.0))
    }
}

/// A next option and what it risks, for the person who decides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NextOption {
    /// `wait`, `query_status`, `retry_with_same_key`, `raise_quota`, `change_plan`,
    /// `cancel`, `send_new_operation`.
    pub option: &'static str,
    /// For `wait`: how long (ms).
    pub wait_ms: Option<Millis>,
    /// What taking it risks, in a sentence.
    pub risk: &'static str,
}

/// One line of `dead_letter.jsonl`: an action that ended without completing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeadLetter {
    /// The logical action's id (the harness's numbering, as in `attempts.csv`).
    pub action: u64,
    /// Tenant the action was submitted for.
    pub tenant: Name,
    /// Task (goal) it belongs to.
    pub task: TaskName,
    /// `failed`, `escalated` or `reconciliation_required`.
    pub status: &'static str,
    /// Why it ended (`attempts_exhausted`, `wait_budget_exhausted`, ...).
    pub reason: String,
    /// When it was submitted and when it ended (ms since run start).
    pub submitted_at_ms: Millis,
    pub ended_at_ms: Millis,
    /// Whether any attempt left the client: if so, it may have executed.
    pub sent: bool,
    /// Attempts made, look-ups included.
    pub attempts: u32,
    /// The last HTTP status heard, if any.
    pub last_status: Option<u16>,
    /// Whether a case file for it is in `escalations.jsonl`.
    pub escalated: bool,
    /// What to submit again.
    pub input: OriginalInput,
    /// The next safe actions, with their risk.
    pub next_safe_actions: Vec<NextOption>,
}

/// The attempt budget an escalated action used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetUsed {
    /// Attempts made, look-ups included.
    pub attempts: u32,
    /// Time spent waiting between attempts (ms), Retry-After included.
    pub waited_ms: Millis,
    /// Time from submission to the end (ms).
    pub elapsed_ms: Millis,
}

/// One line of `escalations.jsonl`: the case file of an action handed to a person.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Escalation {
    /// The logical action that stopped.
    pub action: u64,
    pub tenant: Name,
    pub task: TaskName,
    /// `escalated` or `reconciliation_required`.
    pub outcome: &'static str,
    /// Why (`reconciliation_unavailable`, `quota_exhausted`, ...).
    pub reason: String,
    /// The provider it was sent to.
    pub provider: String,
    /// HTTP method and endpoint (`POST /v1/records`).
    pub method: &'static str,
    pub endpoint: &'static str,
    /// The provider scope (`account:acme`) the attempts counted against.
    pub scope: String,
    /// The credential, masked (`sk-…a1b2`).
    pub credential: String,
    /// A fingerprint of the request without its content: 16 hex digits of a hash of
    /// method, endpoint, scope and class.
    pub fingerprint: Hex16,
    /// Whether the action may have executed at the provider (an attempt was sent and no
    /// answer or look-up settled it).
    pub may_have_executed: bool,
    /// Every attempt, in order (the first [`MAX_TIMELINE`]).
    pub timeline: Vec<AttemptNote>,
    /// Attempts beyond the timeline's cap.
    pub attempts_left_out: u32,
    pub budget_used: BudgetUsed,
    /// How to ask the provider whether it executed: the key, the operation id, the
    /// reference, and the look-up to run.
    pub idempotency_key: Option<String>,
    pub operation_id: Option<OperationId>,
    pub external_ref: Option<String>,
    pub reconcile_with: Option<String>,
    /// What a person can do next, with what each risks.
    pub next_options: Vec<NextOption>,
}

/// The dead letters and case files of a run, in the order the actions ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaseFiles {
    pub dead_letters: Vec<DeadLetter>,
    pub escalations: Vec<Escalation>,
}

/// The provider an action's case names: the scenario's one `[provider]`.
pub const PROVIDER: &str = "provider";

/// What the driver knows of an ending action besides its notes.
pub struct Ending<'a> {
    /// The action's id.
    pub action: u64,
    /// What the driver kept of its job.
    pub facts: &'a ActionFacts,
    /// The provider it was sent to.
    pub provider: &'a str,
    /// When it was submitted and when it ended (ms since run start).
    pub submitted_at: Millis,
    pub at: Millis,
    /// Its deadline (ms since run start), if any.
    pub deadline: Option<Millis>,
}

impl CaseFiles {
    /// Records `terminal` of `job`'s action, submitted at `submitted_at` and ended at `at`
    /// (ms), whose attempts no notes followed: it ended in a process that died, or under a
    /// client that is not the core (an SDK preset). Its case has no timeline.
    pub fn on_unseen_terminal(
        &mut self,
        terminal: &Terminal,
        job: &Job,
        (submitted_at, at): (Millis, Millis),
    ) {
        let notes = CaseNotes {
            keyed: job.idempotency_key.is_some(),
            ..CaseNotes::restored(terminal.sent)
        };
        let ending = Ending {
            action: job.id,
            facts: &ActionFacts::of(job),
            provider: PROVIDER,
            submitted_at,
            at,
            deadline: job.deadline,
        };
        self.record(terminal, notes, &ending, job.idempotency_key.clone());
    }

    /// Records `terminal` of an action if it did not complete: a dead letter, and a case
    /// file when a person must decide. Completed and cancelled actions leave nothing.
    pub fn on_terminal(&mut self, terminal: &Terminal, notes: CaseNotes, e: &Ending<'_>) {
        if matches!(
            terminal.status,
            TerminalStatus::Completed | TerminalStatus::Cancelled
        ) {
            return;
        }
        // The core derives an action's key from tenant, task and body hash when the job
        // names none (the workload never does): derived again here, only for a case.
        let f = e.facts;
        let key = notes
            .keyed
            .then(|| derive_key(&f.tenant, &f.task, f.payload_hash));
        self.record(terminal, notes, e, key);
    }

    fn record(
        &mut self,
        terminal: &Terminal,
        notes: CaseNotes,
        e: &Ending<'_>,
        idempotency_key: Option<IdempotencyKey>,
    ) {
        let status = match terminal.status {
            TerminalStatus::Completed | TerminalStatus::Cancelled => return,
            TerminalStatus::Failed => "failed",
            TerminalStatus::Escalated => "escalated",
            TerminalStatus::ReconciliationRequired => "reconciliation_required",
        };
        let escalated = status != "failed";
        if self.dead_letters.len() >= MAX_RECORDS
            || (escalated && self.escalations.len() >= MAX_RECORDS)
        {
            return;
        }
        let reason = reason_name(&terminal.reason);
        let next = next_options(terminal);
        let route = e.facts.route;
        // The route as the outcome tables name it (`POST /v1/records`), split in two.
        let (method, endpoint) = action_route(route)
            .split_once(' ')
            .unwrap_or(("POST", action_route(route)));
        let scope = e.facts.scope.as_deref().unwrap_or("account");
        self.dead_letters.push(DeadLetter {
            action: e.action,
            tenant: e.facts.tenant,
            task: e.facts.task.clone(),
            status,
            reason: reason.clone(),
            submitted_at_ms: e.submitted_at,
            ended_at_ms: e.at,
            sent: terminal.sent,
            attempts: terminal.attempts,
            last_status: terminal.last_status,
            escalated,
            input: OriginalInput {
                class: e.facts.class,
                route,
                priority: e.facts.priority,
                prompt_tokens: e.facts.prompt_tokens,
                max_output_tokens: e.facts.max_output_tokens,
                deadline_ms: e.deadline,
                resource: e.facts.resource.clone(),
                external_ref: e.facts.external_ref.clone(),
                stream: e.facts.stream,
                payload_hash: Hex16(e.facts.payload_hash),
            },
            next_safe_actions: next.clone(),
        });
        if !escalated {
            return;
        }
        let mut notes = notes;
        notes.spill();
        let fingerprint = stampede_provider::model::Fnv::new()
            .bytes(method.as_bytes())
            .bytes(&[0])
            .bytes(endpoint.as_bytes())
            .bytes(&[0])
            .bytes(scope.as_bytes())
            .bytes(&[0])
            .bytes(e.facts.class.as_bytes())
            .finish();
        // An attempt that may have executed unseen (here, or in a process that died)
        // leaves the doubt until a look-up that was answered settles it.
        let may_have_executed = terminal.status == TerminalStatus::ReconciliationRequired
            || notes
                .timeline
                .iter()
                .fold(notes.sent_unseen, |doubt, n| match n.kind {
                    "lookup" if !n.uncertain => false,
                    "lookup" => doubt,
                    _ => doubt || n.uncertain,
                });
        // Only the records API can be asked whether a write happened.
        let reconcile_with = match (route, &e.facts.external_ref, &idempotency_key) {
            (Route::CreateRecord, Some(r), _) => Some(format!("GET /v1/records?external_ref={r}")),
            (Route::CreateRecord, None, Some(k)) => {
                Some(format!("GET /v1/records?idempotency_key={k}"))
            }
            _ => None,
        };
        self.escalations.push(Escalation {
            action: e.action,
            tenant: e.facts.tenant,
            task: e.facts.task.clone(),
            outcome: status,
            reason,
            provider: e.provider.to_string(),
            method,
            endpoint,
            scope: scope.to_string(),
            credential: stampede_provider::model::mask_credential(&e.facts.credential),
            fingerprint: Hex16(fingerprint),
            may_have_executed,
            timeline: notes.timeline,
            attempts_left_out: notes.left_out,
            budget_used: BudgetUsed {
                attempts: terminal.attempts,
                waited_ms: terminal.waited_ms,
                elapsed_ms: e.at.saturating_sub(e.submitted_at),
            },
            idempotency_key: idempotency_key.as_ref().map(String::from),
            operation_id: terminal.operation_id.clone(),
            external_ref: e.facts.external_ref.clone(),
            reconcile_with,
            next_options: next,
        });
    }
}

/// Writes `dead_letter.jsonl` and `escalations.jsonl` into `dir` (empty when every action
/// completed), buffered; returns their paths.
pub fn write(dir: &Path, cases: &CaseFiles) -> std::io::Result<Vec<PathBuf>> {
    let dead = dir.join(DEAD_LETTER_FILE);
    write_lines(&dead, &cases.dead_letters)?;
    let escalations = dir.join(ESCALATIONS_FILE);
    write_lines(&escalations, &cases.escalations)?;
    Ok(vec![dead, escalations])
}

/// The page's links to the two files, with how many cases each holds.
pub fn links(cases: &CaseFiles) -> Vec<stampede_reports::CaseFileLink> {
    let link = |file: &str, lines: usize, what: &str| stampede_reports::CaseFileLink {
        file: file.to_string(),
        lines: lines as u64,
        what: what.to_string(),
    };
    vec![
        link(
            DEAD_LETTER_FILE,
            cases.dead_letters.len(),
            "actions that did not complete, each with its original input, its reason and the \
             next safe actions",
        ),
        link(
            ESCALATIONS_FILE,
            cases.escalations.len(),
            "case files of actions handed to a person: the attempt timeline with statuses and \
             Retry-After values, the budget used, the key, and the options with their risk",
        ),
    ]
}

/// The dead-letter file's name in a run directory.
pub const DEAD_LETTER_FILE: &str = "dead_letter.jsonl";
/// The escalation case files' file name in a run directory.
pub const ESCALATIONS_FILE: &str = "escalations.jsonl";

fn write_lines<T: Serialize>(path: &Path, records: &[T]) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 18, File::create(path)?);
    // Each record is serialized into one reused line and handed over whole: serde_json
    // writes a record in dozens of small pieces, cheaper to append to a `Vec` than to pass
    // one by one through the `BufWriter`.
    let mut line = Vec::with_capacity(1024);
    for r in records {
        line.clear();
        serde_json::to_writer(&mut line, r)?;
        line.push(b'\n');
        out.write_all(&line)?;
    }
    out.flush()
}

/// `AttemptsExhausted` as `attempts_exhausted`; a reason with a status names it
/// (`wont_improve_422`).
pub(crate) fn reason_name(reason: &Reason) -> String {
    let mut name = String::new();
    write_reason_name(reason, &mut name);
    name
}

/// [`reason_name`] written into `out` (cleared first): with a buffer kept between calls, no
/// allocation once it has grown to the longest name.
pub(crate) fn write_reason_name(reason: &Reason, out: &mut String) {
    out.clear();
    match reason {
        // Writing to a `String` cannot fail.
        Reason::WontImprove { status, .. } => {
            let _ = write!(out, "wont_improve_{status}");
        }
        other => out.push_str(other.name()),
    }
}

/// The core's next actions as options with their risk; `raise_quota` comes with
/// `change_plan`, the other way to get a higher limit.
fn next_options(terminal: &Terminal) -> Vec<NextOption> {
    let mut out = Vec::with_capacity(terminal.next_actions.len() + 1);
    for a in &terminal.next_actions {
        let (option, wait_ms, risk) = match a {
            NextAction::Wait { ms } => ("wait", Some(*ms), "none: nothing is sent meanwhile"),
            NextAction::QueryStatus => (
                "query_status",
                None,
                "none: a read that tells whether an earlier attempt took effect",
            ),
            NextAction::RetryWithSameKey => (
                "retry_with_same_key",
                None,
                "low where the provider deduplicates by the key; otherwise look it up first",
            ),
            NextAction::RaiseQuota => (
                "raise_quota",
                None,
                "none to data; the limit is the account's, not the request's",
            ),
            NextAction::Cancel if terminal.sent => (
                "cancel",
                None,
                "an attempt already sent may still have executed: look it up first",
            ),
            NextAction::Cancel => ("cancel", None, "none: nothing was sent"),
            NextAction::SendNewOperation {
                may_duplicate: true,
            } => (
                "send_new_operation",
                None,
                "may create a second external effect: only after a look-up shows none",
            ),
            NextAction::SendNewOperation {
                may_duplicate: false,
            } => (
                "send_new_operation",
                None,
                "none: the first attempt is known not to have executed",
            ),
        };
        out.push(NextOption {
            option,
            wait_ms,
            risk,
        });
        if matches!(a, NextAction::RaiseQuota) {
            out.push(NextOption {
                option: "change_plan",
                wait_ms: None,
                risk: "none to data; moves the account to a plan with higher limits",
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use stampede_core::{LookupBy, Response, TransportFailure};

    /// `ReadTimeout` as `read_timeout`; a variant with fields keeps its name only.
    fn snake(debug: &str) -> String {
        let mut out = String::new();
        Snake::new(&mut out).write_str(debug).unwrap();
        out
    }

    /// Every variant's name as text (`Reason::name`) is its `Debug` rendering in snake
    /// case, the name the reports gave when they formatted it.
    #[test]
    fn variant_names_are_the_debug_names_in_snake_case() {
        let every = [
            Reason::Succeeded,
            Reason::Reconciled,
            Reason::DeadlineExceeded,
            Reason::AttemptsExhausted,
            Reason::WaitBudgetExhausted,
            Reason::TaskBudgetExhausted,
            Reason::ScopeBudgetExhausted,
            Reason::ScopeDelayedFull,
            Reason::WontImprove {
                status: 400,
                code: Some("x".into()),
            },
            Reason::QuotaExhausted,
            Reason::Conflict { code: None },
            Reason::CircuitOpen {
                fingerprint: "f".into(),
            },
            Reason::Cancelled,
            Reason::StreamInterrupted,
            Reason::ReconciliationUnavailable,
            Reason::ExecutionBudgetExhausted,
            Reason::Degraded {
                rung: stampede_core::RungKind::Cached,
            },
            Reason::DeadlinePassed,
            Reason::LimitBelowRequest {
                limit: "tpm".into(),
                capacity: 1,
                needed: 2,
            },
        ];
        for reason in &every {
            assert_eq!(reason.name(), snake(&format!("{reason:?}")), "{reason:?}");
            if !matches!(reason, Reason::WontImprove { .. }) {
                assert_eq!(reason_name(reason), reason.name());
            }
        }
    }

    #[test]
    fn names_are_snake_case() {
        assert_eq!(snake("ReadTimeout"), "read_timeout");
        assert_eq!(snake("AttemptsExhausted"), "attempts_exhausted");
        assert_eq!(snake("CircuitOpen { fingerprint: \"x\" }"), "circuit_open");
        assert_eq!(
            reason_name(&Reason::WontImprove {
                status: 422,
                code: None
            }),
            "wont_improve_422"
        );
    }

    #[test]
    fn an_answer_fills_its_attempt() {
        let mut notes = CaseNotes::default();
        notes.sent(1, &SendKind::Action, true, 10);
        notes.sent(2, &SendKind::Action, true, 20);
        notes.answered(1, &Outcome::Transport(TransportFailure::ReadTimeout), 15);
        let refused = Response {
            retry_after_ms: Some(2_000),
            error_code: Some("rate_limit_exceeded".into()),
            ..Response::new(429)
        };
        notes.answered(2, &Outcome::Response(refused), 25);
        let (first, second) = (notes.timeline[0], notes.timeline[1]);
        assert_eq!(first.transport, Some("read_timeout"));
        assert_eq!(first.answered_at_ms, Some(15));
        assert!(first.uncertain, "a read timeout may have executed");
        assert_eq!(second.status, Some(429));
        assert_eq!(second.retry_after_ms, Some(2_000));
        assert!(!second.uncertain, "a 429 never executed");
        let json = serde_json::to_string(&second).unwrap();
        assert!(
            json.contains("\"error_code\":\"rate_limit_exceeded\""),
            "{json}"
        );
        assert!(notes.keyed);
    }

    #[test]
    fn a_long_timeline_is_capped_and_counted() {
        let mut notes = CaseNotes::default();
        for n in 1..=(MAX_TIMELINE as u32 + 5) {
            notes.sent(n, &SendKind::Action, false, u64::from(n));
        }
        assert_eq!(notes.timeline.len(), MAX_TIMELINE);
        assert_eq!(notes.left_out, 5);
        // The answers of attempts left out change nothing; those of noted ones fill them,
        // the last one unanswered as well as the first.
        let timeout = Outcome::Transport(TransportFailure::ReadTimeout);
        notes.answered(MAX_TIMELINE as u32 + 1, &timeout, 100);
        notes.answered(MAX_TIMELINE as u32, &timeout, 101);
        for n in 1..MAX_TIMELINE as u32 {
            notes.answered(n, &timeout, 102);
        }
        assert_eq!(notes.unanswered, 0);
        assert_eq!(notes.timeline[MAX_TIMELINE - 1].answered_at_ms, Some(101));
        assert!(notes.timeline.iter().all(|n| n.answered_at_ms.is_some()));
        notes.answered(MAX_TIMELINE as u32 + 2, &timeout, 103);
        assert_eq!(notes.timeline[0].answered_at_ms, Some(102));
    }

    fn response(status: u16) -> Outcome {
        Outcome::Response(Response::new(status))
    }

    #[test]
    fn a_first_attempt_is_held_without_a_timeline_until_it_fails_or_another_is_sent() {
        // Answered by a success: nothing was ever allocated, nothing is left to answer.
        let mut ok = CaseNotes::default();
        ok.sent(1, &SendKind::Action, false, 10);
        assert!(ok.held.is_some() && ok.timeline.capacity() == 0);
        ok.answered(1, &response(200), 15);
        assert!(ok.held.is_none() && ok.timeline.capacity() == 0);
        assert_eq!(ok.unanswered, 0);

        // Answered by a failure: the note moves to the timeline with its answer.
        let mut refused = CaseNotes::default();
        refused.sent(1, &SendKind::Action, false, 10);
        refused.answered(2, &response(429), 12);
        assert!(
            refused.held.is_some(),
            "another attempt's answer fills nothing"
        );
        refused.answered(1, &response(429), 15);
        assert!(refused.held.is_none());
        let note = refused.timeline[0];
        assert_eq!(
            (note.attempt_no, note.kind, note.sent_at_ms),
            (1, "action", 10)
        );
        assert_eq!((note.answered_at_ms, note.status), (Some(15), Some(429)));
        assert!(!note.uncertain, "a 429 never executed");

        // A second send: both attempts in order, the first with its own send time.
        let mut two = CaseNotes::default();
        two.sent(1, &SendKind::Action, false, 10);
        two.sent(2, &SendKind::Action, false, 20);
        let sent: Vec<_> = two
            .timeline
            .iter()
            .map(|n| (n.attempt_no, n.sent_at_ms))
            .collect();
        assert_eq!(sent, [(1, 10), (2, 20)]);
        assert_eq!(two.unanswered, 2);

        // A look-up's answer is always noted, whatever it was.
        let mut lookup = CaseNotes::default();
        lookup.sent(
            3,
            &SendKind::Lookup(Box::new(LookupBy::ExternalRef("r".into()))),
            true,
            30,
        );
        lookup.answered(3, &Outcome::Lookup(LookupResult::Absent), 31);
        let note = lookup.timeline[0];
        assert_eq!((note.kind, note.lookup), ("lookup", Some("absent")));
        assert!(!note.uncertain, "an answered look-up settles the doubt");
    }

    /// The case file of an uncertain write (action 7, with an external reference) that
    /// ended as `status` after `attempts` attempts, with `notes`.
    fn escalation(status: TerminalStatus, attempts: u32, notes: CaseNotes) -> Escalation {
        let terminal = Terminal {
            job: 7,
            status,
            reason: Reason::ReconciliationUnavailable,
            sent: true,
            last_status: None,
            attempts,
            waited_ms: 0,
            operation_id: None,
            next_actions: Default::default(),
        };
        let facts = ActionFacts {
            tenant: "acme".into(),
            task: "t".into(),
            class: "uncertain_write".into(),
            credential: "sk-test-0123456789".into(),
            scope: None,
            route: Route::CreateRecord,
            priority: Priority::Normal,
            resource: None,
            prompt_tokens: 0,
            max_output_tokens: 0,
            external_ref: Some("ref-7".into()),
            stream: false,
            payload_hash: 1,
        };
        let ending = Ending {
            action: 7,
            facts: &facts,
            provider: PROVIDER,
            submitted_at: 0,
            at: 90,
            deadline: None,
        };
        let mut cases = CaseFiles::default();
        cases.on_terminal(&terminal, notes, &ending);
        cases.escalations.remove(0)
    }

    #[test]
    fn an_escalation_lists_a_held_attempt_that_was_never_answered() {
        let mut notes = CaseNotes::default();
        notes.sent(1, &SendKind::Action, false, 40);
        let case = escalation(TerminalStatus::ReconciliationRequired, 1, notes);
        assert_eq!(case.timeline.len(), 1);
        assert_eq!(case.timeline[0].sent_at_ms, 40);
        assert_eq!(case.timeline[0].answered_at_ms, None);
        assert!(case.may_have_executed);
    }

    /// An action a restarted runner took over after the dead process had sent it: its
    /// attempt may have executed (a helper's provider held the committed record), so the
    /// case says so until a look-up this process hears answered settles it. Look-ups
    /// answered 503 leave the doubt; the case said `may_have_executed: false`.
    #[test]
    fn a_case_restored_after_a_send_keeps_the_doubt_until_a_lookup_is_answered() {
        let may_have_executed =
            |notes: CaseNotes| escalation(TerminalStatus::Escalated, 3, notes).may_have_executed;
        let look_up = |notes: &mut CaseNotes, answer: Outcome| {
            let by = Box::new(LookupBy::ExternalRef("ref-7".into()));
            notes.sent(2, &SendKind::Lookup(by), false, 30);
            notes.answered(2, &answer, 31);
        };
        let mut refused = CaseNotes::restored(true);
        look_up(&mut refused, response(503));
        assert!(may_have_executed(refused), "503 look-ups settle nothing");
        let mut absent = CaseNotes::restored(true);
        look_up(&mut absent, Outcome::Lookup(LookupResult::Absent));
        assert!(
            !may_have_executed(absent),
            "an answered look-up settles the doubt"
        );
        let mut never_sent = CaseNotes::restored(false);
        look_up(&mut never_sent, response(503));
        assert!(
            !may_have_executed(never_sent),
            "nothing was sent before the restart"
        );
    }

    #[test]
    fn an_original_input_names_its_route_and_priority_and_pads_its_hash() {
        // The names the files have always carried (from the variants' `Debug` names in
        // snake case), now from the core's own serde names.
        let input = OriginalInput {
            class: "uncertain_write".into(),
            route: Route::CreateRecord,
            priority: Priority::Critical,
            prompt_tokens: 0,
            max_output_tokens: 0,
            deadline_ms: None,
            resource: None,
            external_ref: None,
            stream: false,
            payload_hash: Hex16(0xab),
        };
        let json = serde_json::to_string(&input).unwrap();
        assert!(json.contains(r#""route":"create_record""#), "{json}");
        assert!(json.contains(r#""priority":"critical""#), "{json}");
        assert!(
            json.contains(r#""payload_hash":"00000000000000ab""#),
            "{json}"
        );
        assert_eq!(
            serde_json::to_string(&Hex16(u64::MAX)).unwrap(),
            r#""ffffffffffffffff""#
        );
        let names = |r: Route| serde_json::to_value(r).unwrap();
        assert_eq!(names(Route::ChatCompletion), "chat_completion");
        assert_eq!(names(Route::GetItem), "get_item");
        let priority = |p: Priority| serde_json::to_value(p).unwrap();
        assert_eq!(priority(Priority::Normal), "normal");
        assert_eq!(priority(Priority::Bulk), "bulk");
    }

    #[test]
    fn a_long_error_code_is_cut_on_a_character_boundary() {
        let code = ShortCode::new("é".repeat(20).as_str());
        assert_eq!(code.as_str(), "é".repeat(15));
    }
}
