//! A logical action as a driver submits it.

use serde::{Deserialize, Serialize};

use crate::time::Millis;
use stampede_key::IdempotencyKey;
use stampede_name::Name;

/// Identifies one logical action for the whole run (and across restarts). Assigned by the
/// driver; unique within a run.
pub type JobId = u64;

/// Admission priority. Queues are bounded per tenant and priority; critical drains first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Drains before everything else (user-facing work that cannot wait).
    Critical,
    /// Everything not marked otherwise (the default).
    #[default]
    Normal,
    /// Drains only when no critical or normal work is ready (backfills, batch jobs).
    Bulk,
}

/// The endpoint family an action calls. The core uses it for circuit-breaker fingerprints
/// and to know which look-ups reconciliation can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// `POST /v1/chat/completions`: an LLM call (tokens matter).
    ChatCompletion,
    /// `POST /v1/records`: a side-effecting tool write.
    CreateRecord,
    /// `GET /v1/items/{id}`: a safe read.
    GetItem,
}

/// A task's name: held inline up to 23 bytes (a default per-action task such as
/// `support-w0-37999` costs no heap allocation), shared by reference count beyond, so a
/// clone never allocates. 24 bytes; compares, hashes and serializes as its text.
pub type TaskName = smol_str::SmolStr;

/// One logical action: what a task wants done, before any attempt is made.
///
/// Names a scenario gives (tenant, credential, scope, class, model) are interned
/// [`Name`]s: copied by value into the action, its ledger entry and every attempt, with no
/// reference count. The task, one per action by default, is a [`TaskName`]: not interned
/// (that would keep every task's text for the process's life), held inline when short.
/// Build any of them with `.into()` from a `&str` or `String`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// The logical action's id.
    pub id: JobId,
    /// Tenant that owns the action (fair dequeue and admission are per tenant).
    pub tenant: Name,
    /// Task (goal) the action belongs to: per-task retry budgets and cancellation act on it.
    pub task: TaskName,
    /// Credential (bearer key) the action is sent with.
    pub credential: Name,
    /// The provider scope this credential is limited on, when known. `None` means unknown:
    /// assume the whole account shares it (scope `"account"`).
    pub scope: Option<Name>,
    /// Request class name, a key of `Policy::classes` (`read`, `idempotent_write`,
    /// `uncertain_write`, `llm`, `tool`, or a user-defined one).
    pub class: Name,
    /// Endpoint family.
    pub route: Route,
    /// Resource id for reads (`GET /v1/items/{id}`); part of the coalescing key.
    pub resource: Option<String>,
    /// Admission priority.
    pub priority: Priority,
    /// Estimated prompt tokens (tokens).
    pub prompt_tokens: u32,
    /// Maximum output tokens requested (tokens).
    pub max_output_tokens: u32,
    /// Absolute deadline (ms since run start), if any.
    pub deadline: Option<Millis>,
    /// Idempotency key; derived from tenant, task and payload hash when absent (a derived
    /// key is held as its 16 bytes, in place).
    pub idempotency_key: Option<IdempotencyKey>,
    /// Hash of the canonical payload (stable fields only).
    pub payload_hash: u64,
    /// External reference of the side effect (for reconciliation by reference).
    pub external_ref: Option<String>,
    /// A safe read of an immutable resource that may be coalesced with identical reads.
    pub coalescable: bool,
    /// Streamed response (SSE); a stream that delivered its first token is never retried.
    pub stream: bool,
    /// The model asked for, if the route takes one (`None`: the provider's default). A
    /// fallback route or a `smaller_model` degradation rung may send another
    /// ([`crate::SendAttempt::model`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Name>,
    /// The driver's word that no other action of `task` is live while this one is (a task
    /// per action, as a workload without `tasks` makes). The core then keeps no record of
    /// the task: its per-task retry budget is this action's own retries, with no name looked
    /// up when it starts or ends (at a hundred thousand live tasks those look-ups were a
    /// fifth of a simulated run). Cancelling the task still finds it. An action restored
    /// from the ledger is recorded as any other, since its retries before the crash are not
    /// its task's. `false` when unsure: that is always correct.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sole_task: bool,
}

impl Job {
    /// A chat completion (`Route::ChatCompletion`, request class `"llm"`) for `tenant`'s
    /// `task`, sent with `credential`, with every other field at its neutral value: no scope
    /// (the whole account), normal priority, no token estimates, no deadline, no model, a
    /// key the core derives at admission. Set the rest with struct update syntax:
    ///
    /// ```
    /// use stampede_core::{Job, Priority, Route};
    ///
    /// let read = Job {
    ///     class: "read".into(),
    ///     route: Route::GetItem,
    ///     resource: Some("item-7".into()),
    ///     priority: Priority::Critical,
    ///     ..Job::new(2, "acme", "look-up-order", "key-1")
    /// };
    /// assert_eq!(read.tenant, "acme");
    /// assert_eq!(read.payload_hash, 2, "distinct per action unless said otherwise");
    /// ```
    ///
    /// The payload hash is the id: the derived idempotency key is then the action's own.
    /// Two actions of one task with the same payload hash would derive the same key, and the
    /// provider would take the second for a re-send of the first; give the real payload's
    /// hash when re-submitting the same work under a new id must be recognised as such.
    #[must_use]
    pub fn new(
        id: JobId,
        tenant: impl Into<Name>,
        task: impl Into<TaskName>,
        credential: impl Into<Name>,
    ) -> Job {
        Job {
            id,
            tenant: tenant.into(),
            task: task.into(),
            credential: credential.into(),
            scope: None,
            class: llm(),
            route: Route::ChatCompletion,
            resource: None,
            priority: Priority::Normal,
            prompt_tokens: 0,
            max_output_tokens: 0,
            deadline: None,
            idempotency_key: None,
            payload_hash: id,
            external_ref: None,
            coalescable: false,
            stream: false,
            model: None,
            sole_task: false,
        }
    }
}

/// The class name `"llm"`, interned once: `Job::new` is called per action, and interning
/// looks the text up under a process-wide lock.
fn llm() -> Name {
    static LLM: std::sync::OnceLock<Name> = std::sync::OnceLock::new();
    *LLM.get_or_init(|| Name::new("llm"))
}
