//! What was full or wrong about a refused submit, kept as data and rendered as text only
//! when someone reads it. A driver under backpressure, or one whose arrivals come after their
//! deadlines, is refused thousands of times a run and branches on the cause alone: formatting
//! a sentence for each refusal, to drop it unread, was a heap allocation per refusal.

use stampede_name::Name;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::job::{JobId, Priority};
use crate::time::Millis;

/// Why a submit was refused, in words for the caller and the report (`Display`).
#[derive(Debug, Clone)]
pub enum RejectionReason {
    /// The job's deadline passed `late_ms` ms before it was submitted.
    DeadlinePassed {
        /// The refused job.
        job: JobId,
        /// How long before the submit the deadline passed (ms).
        late_ms: Millis,
    },
    /// The run's execution budget is spent.
    ExecutionBudgetSpent,
    /// The job names a request class the policy does not have.
    UnknownClass {
        /// The refused job.
        job: JobId,
        /// The class it named.
        class: Name,
        /// The policy's classes, comma-separated.
        known: String,
    },
    /// An action with the job's id is already live.
    AlreadyLive {
        /// The refused job.
        job: JobId,
    },
    /// The tenant's queue at the job's priority holds `capacity` live actions already.
    QueueFull {
        /// The job's tenant.
        tenant: Name,
        /// The queue's capacity (`admission.queue_capacity`, actions).
        capacity: u32,
        /// The job's priority.
        priority: Priority,
    },
    /// The ledger refused to persist the action.
    LedgerRefused {
        /// The refused job.
        job: JobId,
        /// What the ledger said.
        error: String,
    },
    /// A reason read back from its text (a deserialized rejection).
    Text(String),
}

impl fmt::Display for RejectionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DeadlinePassed { job, late_ms } => write!(
                f,
                "job {job}: its deadline passed {late_ms} ms before it was submitted; submit it again with a new deadline or drop it"
            ),
            Self::ExecutionBudgetSpent => {
                f.write_str("the run's execution budget is spent: no new action is admitted")
            }
            Self::UnknownClass { job, class, known } => write!(
                f,
                "job {job}: unknown request class {class:?}; known classes: {known} (add it under policy classes)"
            ),
            Self::AlreadyLive { job } => write!(
                f,
                "job {job}: an action with this id is already live; job ids must be unique"
            ),
            Self::QueueFull {
                tenant,
                capacity,
                priority,
            } => write!(
                f,
                "queue full: tenant {tenant:?} already has {capacity} live {priority:?} actions (admission.queue_capacity)"
            ),
            Self::LedgerRefused { job, error } => {
                write!(f, "job {job}: the ledger refused the action: {error}")
            }
            Self::Text(text) => f.write_str(text),
        }
    }
}

impl RejectionReason {
    /// Whether the rendered reason contains `needle` (renders it).
    #[must_use]
    pub fn contains(&self, needle: &str) -> bool {
        self.to_string().contains(needle)
    }
}

/// Equal when they read the same: a reason read back from its text equals the typed one.
impl PartialEq for RejectionReason {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for RejectionReason {}

/// Serialized as its rendered text, a string, as the string reason was.
impl Serialize for RejectionReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Read back as a [`RejectionReason::Text`]: the typed data is not recovered from the text.
impl<'de> Deserialize<'de> for RejectionReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(RejectionReason::Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_sentence_and_reads_back_equal() {
        let reason = RejectionReason::DeadlinePassed {
            job: 7,
            late_ms: 250,
        };
        assert_eq!(
            reason.to_string(),
            "job 7: its deadline passed 250 ms before it was submitted; submit it again with a new deadline or drop it"
        );
        let json = serde_json::to_string(&reason).unwrap();
        let back: RejectionReason = serde_json::from_str(&json).unwrap();
        assert!(matches!(back, RejectionReason::Text(_)));
        assert_eq!(back, reason);
        let full = RejectionReason::QueueFull {
            tenant: "t1".into(),
            capacity: 2,
            priority: Priority::Normal,
        };
        assert!(full.contains("tenant \"t1\" already has 2 live Normal actions"));
    }
}
