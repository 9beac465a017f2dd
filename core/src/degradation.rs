//! The degradation ladder as data (`[[client.policy.degradation]]`): rungs that cut what an
//! action asks for while the client's ready queues are long. Pressure is the number of
//! actions waiting in the ready queues (admitted, not yet sent); a rung is active while the
//! pressure is at least its `at_queued`, and every active rung applies. Rungs shape an
//! action when its first attempt is dispatched; its retries keep that shape.

use stampede_name::Name;

use serde::{Deserialize, Serialize};

use crate::job::Priority;

/// What a degradation rung does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RungKind {
    /// `trim_output`: cut output and context: `max_output_tokens` and `prompt_tokens` are
    /// multiplied by the rung's `factor` (default 0.5), keeping at least 1 token.
    TrimOutput,
    /// `smaller_model`: the attempt asks for the rung's `model`.
    SmallerModel,
    /// `pause_bulk`: bulk actions are not dequeued while it is active. They wait, they do
    /// not fail; their deadlines still apply. Only bulk actions in the ready queues of
    /// other priorities count towards this rung's pressure, so a bulk backlog cannot pause
    /// itself.
    PauseBulk,
    /// `cached`: the action completes at once without any send (a cached or template
    /// answer): `Completed`, reason `Degraded { rung: cached }`, `sent = false`.
    Cached,
}

impl RungKind {
    crate::labels::kinds_and_labels!(RungKind, [TrimOutput, SmallerModel, PauseBulk, Cached]);

    /// The snake_case name, as scenarios write it (`trim_output`).
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            RungKind::TrimOutput => "trim_output",
            RungKind::SmallerModel => "smaller_model",
            RungKind::PauseBulk => "pause_bulk",
            RungKind::Cached => "cached",
        }
    }
}

fn default_priorities() -> Vec<Priority> {
    vec![Priority::Normal, Priority::Bulk]
}

/// One rung of the degradation ladder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rung {
    /// Active while at least this many actions wait in the ready queues (actions, > 0).
    pub at_queued: u64,
    /// What the rung does.
    pub kind: RungKind,
    /// Priorities it applies to; default `[normal, bulk]`: critical work is never degraded.
    #[serde(default = "default_priorities")]
    pub priorities: Vec<Priority>,
    /// `trim_output`: the multiplier of prompt and output tokens, in (0, 1]; default 0.5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    /// `smaller_model`: the model asked for instead (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Name>,
}

/// The trim factor a `trim_output` rung uses when it names none.
pub const DEFAULT_TRIM_FACTOR: f64 = 0.5;

impl Rung {
    /// Whether the rung is active at this pressure (actions waiting in the ready queues).
    #[must_use]
    pub fn active(&self, pressure: u64) -> bool {
        pressure >= self.at_queued
    }

    /// Whether the rung applies to actions of this priority.
    #[must_use]
    pub fn applies_to(&self, priority: Priority) -> bool {
        self.priorities.contains(&priority)
    }

    /// `tokens` (tokens) after this rung's trim: times the factor, rounded down, at least 1
    /// (0 stays 0: nothing to trim).
    #[must_use]
    pub fn trim(&self, tokens: u32) -> u32 {
        if tokens == 0 {
            return 0;
        }
        let factor = self.factor.unwrap_or(DEFAULT_TRIM_FACTOR);
        // factor is in (0, 1], so the product fits u32.
        ((f64::from(tokens) * factor).floor() as u32).max(1)
    }
}

/// Checks the ladder; the message names the key (`degradation.1.model`).
pub(crate) fn validate(ladder: &[Rung]) -> Result<(), String> {
    for (i, rung) in ladder.iter().enumerate() {
        if rung.at_queued == 0 {
            return Err(format!(
                "degradation.{i}.at_queued = 0: a rung would always be active; use 1 or more queued actions"
            ));
        }
        if let Some(factor) = rung.factor {
            if !(factor.is_finite() && factor > 0.0 && factor <= 1.0) {
                return Err(format!(
                    "degradation.{i}.factor = {factor}: use a number in (0, 1], such as 0.5"
                ));
            }
        }
        if rung.kind == RungKind::SmallerModel && rung.model.as_deref().map_or(true, str::is_empty)
        {
            return Err(format!(
                "degradation.{i}.model is missing: a smaller_model rung names the model to use, e.g. model = \"gpt-4o-mini\""
            ));
        }
    }
    Ok(())
}
