//! How the in-memory ledger holds a logical action: its interned names (tenant, credential,
//! scope, class, model) by value, its task and idempotency key as the job holds them, and
//! its own short texts (resource, external reference, operation id) in place, up to 24 bytes
//! each (`CompactString`, as [`OperationId`] holds an id), rather than as separate heap
//! strings. The ledger takes a copy of every admitted action and drops it when the action
//! ends; with `String`s that was a dozen allocations and frees per action, the largest cost
//! of the core's submit-to-terminal cycle. Longer texts fall back to the heap, so nothing is
//! ever truncated.

use compact_str::CompactString;

use crate::job::{Job, JobId, Priority, Route, TaskName};
use crate::ledger::{ActionState, LedgerEntry};
use crate::operation_id::OperationId;
use crate::time::Millis;
use stampede_key::IdempotencyKey;
use stampede_name::Name;

fn text(value: &Option<String>) -> Option<CompactString> {
    value.as_deref().map(CompactString::new)
}

fn same(stored: &Option<CompactString>, value: &Option<String>) -> bool {
    stored.as_deref() == value.as_deref()
}

fn owned(stored: &Option<CompactString>) -> Option<String> {
    stored.as_deref().map(str::to_owned)
}

/// One ledger entry in compact form; converts to and from [`LedgerEntry`] without loss.
#[derive(Debug, Clone)]
pub(crate) struct StoredEntry {
    id: JobId,
    tenant: Name,
    task: TaskName,
    credential: Name,
    scope: Option<Name>,
    class: Name,
    route: Route,
    resource: Option<CompactString>,
    priority: Priority,
    prompt_tokens: u32,
    max_output_tokens: u32,
    deadline: Option<Millis>,
    idempotency_key: Option<IdempotencyKey>,
    payload_hash: u64,
    external_ref: Option<CompactString>,
    coalescable: bool,
    stream: bool,
    model: Option<Name>,
    sole_task: bool,
    pub state: ActionState,
    attempts: u32,
    waited_ms: Millis,
    operation_id: Option<OperationId>,
    updated_at: Millis,
}

impl StoredEntry {
    // Always inlined, with every part that can fail (a long text's allocation) made first:
    // what is left is plain copies, which the compiler writes straight into the ledger's
    // slot. Called out of line, the entry (272 bytes) was built on the stack and copied in.
    #[inline(always)]
    pub fn new(entry: &LedgerEntry) -> Self {
        let job = &entry.job;
        let (resource, external_ref) = (text(&job.resource), text(&job.external_ref));
        let (task, idempotency_key, operation_id) = (
            job.task.clone(),
            job.idempotency_key.clone(),
            entry.operation_id.clone(),
        );
        Self {
            id: job.id,
            tenant: job.tenant,
            task,
            credential: job.credential,
            scope: job.scope,
            class: job.class,
            route: job.route,
            resource,
            priority: job.priority,
            prompt_tokens: job.prompt_tokens,
            max_output_tokens: job.max_output_tokens,
            deadline: job.deadline,
            idempotency_key,
            payload_hash: job.payload_hash,
            external_ref,
            coalescable: job.coalescable,
            stream: job.stream,
            model: job.model,
            sole_task: job.sole_task,
            state: entry.state,
            attempts: entry.attempts,
            waited_ms: entry.waited_ms,
            operation_id,
            updated_at: entry.updated_at,
        }
    }

    /// Whether `job` is the job stored here, field for field.
    pub fn holds_job(&self, job: &Job) -> bool {
        self.id == job.id
            && self.tenant == job.tenant
            && self.task == job.task
            && self.credential == job.credential
            && self.scope == job.scope
            && self.class == job.class
            && self.route == job.route
            && same(&self.resource, &job.resource)
            && self.priority == job.priority
            && self.prompt_tokens == job.prompt_tokens
            && self.max_output_tokens == job.max_output_tokens
            && self.deadline == job.deadline
            && self.idempotency_key == job.idempotency_key
            && self.payload_hash == job.payload_hash
            && same(&self.external_ref, &job.external_ref)
            && self.coalescable == job.coalescable
            && self.stream == job.stream
            && self.model == job.model
            && self.sole_task == job.sole_task
    }

    /// Takes the progress of an entry whose job is the one stored here.
    #[inline(always)]
    pub fn set_progress(&mut self, entry: &LedgerEntry) {
        self.state = entry.state;
        self.attempts = entry.attempts;
        self.waited_ms = entry.waited_ms;
        if self.operation_id != entry.operation_id {
            self.operation_id.clone_from(&entry.operation_id);
        }
        self.updated_at = entry.updated_at;
    }

    /// The entry as the ledger was given it.
    pub fn to_entry(&self) -> LedgerEntry {
        LedgerEntry {
            job: Job {
                id: self.id,
                tenant: self.tenant,
                task: self.task.clone(),
                credential: self.credential,
                scope: self.scope,
                class: self.class,
                route: self.route,
                resource: owned(&self.resource),
                priority: self.priority,
                prompt_tokens: self.prompt_tokens,
                max_output_tokens: self.max_output_tokens,
                deadline: self.deadline,
                idempotency_key: self.idempotency_key.clone(),
                payload_hash: self.payload_hash,
                external_ref: owned(&self.external_ref),
                coalescable: self.coalescable,
                stream: self.stream,
                model: self.model,
                sole_task: self.sole_task,
            },
            state: self.state,
            attempts: self.attempts,
            waited_ms: self.waited_ms,
            operation_id: self.operation_id.clone(),
            updated_at: self.updated_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README quotes the bytes the in-memory ledger's copy of an action costs (272 since
    /// the task name is held inline).
    #[test]
    fn a_stored_entry_is_at_most_272_bytes() {
        let size = std::mem::size_of::<Option<StoredEntry>>();
        assert!(size <= 272, "Option<StoredEntry> is {size} bytes");
    }

    fn entry(long: bool) -> LedgerEntry {
        let text = |short: &str| {
            if long {
                format!("{short}-{}", "é".repeat(40))
            } else {
                short.to_string()
            }
        };
        LedgerEntry {
            job: Job {
                id: 9,
                tenant: text("acme").into(),
                task: text("task-1").into(),
                credential: text("sk-acme").into(),
                scope: Some(text("account:acme").into()),
                class: text("llm").into(),
                route: Route::CreateRecord,
                resource: None,
                priority: Priority::Bulk,
                prompt_tokens: 10,
                max_output_tokens: 20,
                deadline: Some(5_000),
                idempotency_key: Some(text("stk_0123456789abcdef0123456789abcdef").into()),
                payload_hash: 77,
                external_ref: Some(String::new()),
                coalescable: true,
                stream: false,
                model: Some(text("gpt-4o-mini").into()),
                sole_task: false,
            },
            state: ActionState::InFlight,
            attempts: 2,
            waited_ms: 300,
            operation_id: Some("rec_1".into()),
            updated_at: 1_234,
        }
    }

    #[test]
    fn short_and_long_texts_come_back_unchanged() {
        for long in [false, true] {
            let original = entry(long);
            let stored = StoredEntry::new(&original);
            assert_eq!(stored.to_entry(), original);
            assert!(stored.holds_job(&original.job));
        }
    }

    #[test]
    fn a_different_job_is_told_apart_and_progress_is_taken() {
        let original = entry(false);
        let mut stored = StoredEntry::new(&original);
        let mut other = original.clone();
        other.job.external_ref = None;
        assert!(!stored.holds_job(&other.job));
        other.job.external_ref = Some("x".into());
        assert!(!stored.holds_job(&other.job));
        let mut later = original.clone();
        later.state = ActionState::Completed;
        later.attempts = 3;
        later.operation_id = None;
        stored.set_progress(&later);
        assert_eq!(stored.to_entry(), later);
    }
}
