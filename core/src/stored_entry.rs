//! How the in-memory ledger holds a logical action: its interned names (tenant, credential,
//! scope, class, model) by value, its task and idempotency key as the job holds them, and
//! what most actions lack (the resource and external reference, each inline up to 24 bytes
//! (`CompactString`), and the provider's operation id) together in one box, `None` when the
//! action has none of them. The ledger takes a copy of every admitted action and drops it
//! when the action ends; with `String`s that was a dozen allocations and frees per action,
//! the largest cost of the core's submit-to-terminal cycle. Held in place, the two texts
//! took 48 bytes of every entry that nearly all leave empty, and the operation id 24 more
//! that an action learns, if ever, only from an answer: all three were written at admission
//! and checked again when the entry was dropped; the box is one word (an allocation only for
//! an action that has one of them). The id is not held either: the ledger's band knows it
//! from the entry's place. Longer texts fall back to the heap, so nothing is ever truncated.

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

/// What most actions lack: the job's resource and external reference, and the provider's
/// operation id, stored only when the action has one of them.
#[derive(Debug, Clone)]
struct Rare {
    resource: Option<CompactString>,
    external_ref: Option<CompactString>,
    operation_id: Option<OperationId>,
}

impl Rare {
    /// `None` when the action has none of them (no allocation): three tests inline.
    #[inline(always)]
    fn of(entry: &LedgerEntry) -> Option<Box<Rare>> {
        let job = &entry.job;
        if job.resource.is_none() && job.external_ref.is_none() && entry.operation_id.is_none() {
            return None;
        }
        Some(Rare::boxed(entry))
    }

    /// The action's rare parts in their box.
    #[cold]
    #[inline(never)]
    fn boxed(entry: &LedgerEntry) -> Box<Rare> {
        Box::new(Rare {
            resource: text(&entry.job.resource),
            external_ref: text(&entry.job.external_ref),
            operation_id: entry.operation_id.clone(),
        })
    }

    /// Whether `rare` holds the job's resource and external reference.
    fn same_texts(rare: &Option<Box<Rare>>, job: &Job) -> bool {
        match rare {
            Some(rare) => {
                same(&rare.resource, &job.resource) && same(&rare.external_ref, &job.external_ref)
            }
            None => job.resource.is_none() && job.external_ref.is_none(),
        }
    }
}

/// One ledger entry in compact form, without its id (the caller knows it); converts to and
/// from [`LedgerEntry`] without loss.
#[derive(Debug, Clone)]
pub(crate) struct StoredEntry {
    tenant: Name,
    task: TaskName,
    credential: Name,
    scope: Option<Name>,
    class: Name,
    route: Route,
    priority: Priority,
    prompt_tokens: u32,
    max_output_tokens: u32,
    deadline: Option<Millis>,
    idempotency_key: Option<IdempotencyKey>,
    payload_hash: u64,
    coalescable: bool,
    stream: bool,
    model: Option<Name>,
    sole_task: bool,
    rare: Option<Box<Rare>>,
    pub state: ActionState,
    attempts: u32,
    waited_ms: Millis,
    updated_at: Millis,
}

impl StoredEntry {
    /// The entry of `entry`, whole.
    pub fn new(entry: &LedgerEntry) -> Self {
        let mut stored = Self::without_key(entry);
        stored.set_key(&entry.job);
        stored
    }

    /// [`StoredEntry::new`] but the idempotency key (`None`), for a caller that writes the
    /// entry into its slot first and the key there after ([`StoredEntry::set_key`]).
    ///
    /// Always inlined, with every part that can fail (the rare parts' box) made first: what is
    /// left is plain copies, which the compiler writes straight into the ledger's slot.
    /// Called out of line, the entry was built on the stack and copied in. The key is left
    /// out because a derived key cloned here was written to the stack as three words and
    /// read back as one 16-byte and one 8-byte piece to be copied into the slot: the wider
    /// read could not be forwarded from the narrower writes, and perf put that one stall at
    /// a third of `put`'s time.
    #[inline(always)]
    pub fn without_key(entry: &LedgerEntry) -> Self {
        let job = &entry.job;
        let rare = Rare::of(entry);
        let task = job.task.clone();
        Self {
            tenant: job.tenant,
            task,
            credential: job.credential,
            scope: job.scope,
            class: job.class,
            route: job.route,
            priority: job.priority,
            prompt_tokens: job.prompt_tokens,
            max_output_tokens: job.max_output_tokens,
            deadline: job.deadline,
            idempotency_key: None,
            payload_hash: job.payload_hash,
            coalescable: job.coalescable,
            stream: job.stream,
            model: job.model,
            sole_task: job.sole_task,
            rare,
            state: entry.state,
            attempts: entry.attempts,
            waited_ms: entry.waited_ms,
            updated_at: entry.updated_at,
        }
    }

    /// Writes `job`'s idempotency key where the entry lies (see
    /// [`StoredEntry::without_key`]).
    #[inline(always)]
    pub fn set_key(&mut self, job: &Job) {
        self.idempotency_key.clone_from(&job.idempotency_key);
    }

    /// Whether `job` is the job stored here, field for field but its id (the caller found
    /// this entry by it).
    pub fn holds_job(&self, job: &Job) -> bool {
        self.tenant == job.tenant
            && self.task == job.task
            && self.credential == job.credential
            && self.scope == job.scope
            && self.class == job.class
            && self.route == job.route
            && Rare::same_texts(&self.rare, job)
            && self.priority == job.priority
            && self.prompt_tokens == job.prompt_tokens
            && self.max_output_tokens == job.max_output_tokens
            && self.deadline == job.deadline
            && self.idempotency_key == job.idempotency_key
            && self.payload_hash == job.payload_hash
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
        // Most actions never learn an operation id: two tests inline (the box's only when
        // the action has one), the rest out of line (inline, comparing and copying texts
        // made the launch's write save and restore six registers).
        if entry.operation_id.is_some() || self.rare.is_some() {
            self.set_operation_id(entry);
        }
        // Copied after that test, not beside the wait: the two lie side by side here and in
        // the entry, and were copied as one 16-byte read of the two 8-byte writes the
        // scheduler had just made, which the CPU could not forward (perf put half of the
        // launch's write on it).
        self.updated_at = entry.updated_at;
    }

    /// [`StoredEntry::set_progress`]'s operation id, when either side has one.
    #[cold]
    #[inline(never)]
    fn set_operation_id(&mut self, entry: &LedgerEntry) {
        match &mut self.rare {
            Some(rare) => {
                if rare.operation_id != entry.operation_id {
                    rare.operation_id.clone_from(&entry.operation_id);
                }
            }
            // No box yet, so no text either: one with the operation id alone.
            None => {
                self.rare = Some(Box::new(Rare {
                    resource: None,
                    external_ref: None,
                    operation_id: entry.operation_id.clone(),
                }))
            }
        }
    }

    /// The provider's operation id, if the action has learnt one.
    fn operation_id(&self) -> Option<OperationId> {
        self.rare
            .as_ref()
            .and_then(|rare| rare.operation_id.clone())
    }

    /// The entry of action `id` as the ledger was given it.
    pub fn to_entry(&self, id: JobId) -> LedgerEntry {
        let (resource, external_ref) = match &self.rare {
            Some(rare) => (owned(&rare.resource), owned(&rare.external_ref)),
            None => (None, None),
        };
        LedgerEntry {
            job: Job {
                id,
                tenant: self.tenant,
                task: self.task.clone(),
                credential: self.credential,
                scope: self.scope,
                class: self.class,
                route: self.route,
                resource,
                priority: self.priority,
                prompt_tokens: self.prompt_tokens,
                max_output_tokens: self.max_output_tokens,
                deadline: self.deadline,
                idempotency_key: self.idempotency_key.clone(),
                payload_hash: self.payload_hash,
                external_ref,
                coalescable: self.coalescable,
                stream: self.stream,
                model: self.model,
                sole_task: self.sole_task,
            },
            state: self.state,
            attempts: self.attempts,
            waited_ms: self.waited_ms,
            operation_id: self.operation_id(),
            updated_at: self.updated_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README quotes the bytes the in-memory ledger's copy of an action costs (272 since
    /// the task name is held inline; 224 since the rare texts are boxed and the id is not
    /// held; 200 since the operation id joined them).
    #[test]
    fn a_stored_entry_is_at_most_200_bytes() {
        let size = std::mem::size_of::<Option<StoredEntry>>();
        assert!(size <= 200, "Option<StoredEntry> is {size} bytes");
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
        for (long, operation_id) in [(false, true), (true, true), (false, false), (true, false)] {
            // Either text, both or none, with or without an operation id (boxed only when
            // there is one of the three).
            for (resource, external_ref) in [
                (None, Some(String::new())),
                (Some("item-7".to_string()), None),
                (Some("é".repeat(30)), Some("ref".repeat(20))),
                (None, None),
            ] {
                let mut original = entry(long);
                original.job.resource = resource;
                original.job.external_ref = external_ref;
                if !operation_id {
                    original.operation_id = None;
                }
                let stored = StoredEntry::new(&original);
                assert_eq!(
                    stored.rare.is_some(),
                    original.job.resource.is_some()
                        || original.job.external_ref.is_some()
                        || original.operation_id.is_some()
                );
                assert_eq!(stored.to_entry(original.job.id), original);
                assert!(stored.holds_job(&original.job));
            }
        }
    }

    #[test]
    fn an_operation_id_is_learnt_changed_and_dropped_in_progress() {
        for external_ref in [None, Some("ref".to_string())] {
            let mut original = entry(false);
            original.job.external_ref = external_ref.clone();
            original.operation_id = None;
            let mut stored = StoredEntry::new(&original);
            assert_eq!(stored.rare.is_some(), external_ref.is_some());
            let long_id = "é".repeat(30);
            for operation_id in [Some("rec_1"), Some("rec_2"), None, Some(long_id.as_str())] {
                let mut later = original.clone();
                later.operation_id = operation_id.map(OperationId::from);
                later.attempts += 1;
                stored.set_progress(&later);
                assert_eq!(stored.to_entry(later.job.id), later);
                assert!(stored.holds_job(&later.job));
                let mut texts = later.job.clone();
                texts.resource = Some("item".into());
                assert!(!stored.holds_job(&texts), "a resource where there was none");
            }
        }
    }

    #[test]
    fn a_job_with_other_texts_is_told_apart() {
        let original = entry(false);
        let stored = StoredEntry::new(&original);
        let mut other = original.clone();
        other.job.resource = Some(String::new());
        assert!(
            !stored.holds_job(&other.job),
            "a resource where there was none"
        );
        let mut bare = original.clone();
        bare.job.external_ref = None;
        bare.operation_id = None;
        let stored_bare = StoredEntry::new(&bare);
        assert!(stored_bare.rare.is_none());
        assert!(
            !stored_bare.holds_job(&original.job),
            "a text where there was none"
        );
        assert!(!stored.holds_job(&bare.job), "no text where there was one");
        assert!(stored_bare.holds_job(&bare.job));
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
        assert_eq!(stored.to_entry(later.job.id), later);
    }
}
