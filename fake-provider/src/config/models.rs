//! The models a provider serves (`[[provider.models]]`): each with its own context window,
//! latency and price.

use super::latency::LatencyConfig;
use serde::{Deserialize, Serialize};

/// One model the provider serves. A request naming a model not listed gets 404
/// `model_not_found`; a request naming none is served by the first listed model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The name requests give in their body's `"model"`, e.g. `gpt-4o-mini`.
    pub name: String,
    /// Context window in tokens for this model (`prompt_tokens + max_tokens` above it gets
    /// 400 `context_length_exceeded`); overrides `provider.context_window`. Absent: the
    /// provider-wide window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    /// Most output tokens one request may ask this model for (its `max_tokens`, or
    /// `max_output_tokens` on the Responses API): a request asking for more gets 400
    /// `invalid_value` in its API's words, before any limit is counted, as the real APIs
    /// answer (Claude Sonnet 4.5: 64,000; GPT-4o: 16,384). Absent: any count is taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Latency of this model's completions; overrides `provider.latency`. Absent: the
    /// provider-wide latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyConfig>,
    /// What a committed completion of this model costs. Absent: nothing is billed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
}

/// A model's list price, in US dollars per million tokens (what providers publish), which
/// is also micro-dollars per token: a completion costs
/// `prompt_tokens * prompt_per_mtok + completion_tokens * completion_per_mtok` micro-dollars.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// US dollars per million prompt (input) tokens.
    pub prompt_per_mtok: f64,
    /// US dollars per million completion (output) tokens.
    pub completion_per_mtok: f64,
}

impl Price {
    /// The cost of one completion, micro-dollars (US$ 1e-6), rounded to nearest.
    pub fn micro_usd(&self, prompt_tokens: u32, completion_tokens: u32) -> u64 {
        let cost = f64::from(prompt_tokens) * self.prompt_per_mtok
            + f64::from(completion_tokens) * self.completion_per_mtok;
        // Validated finite and >= 0; `as` saturates an absurd product at u64::MAX.
        cost.round() as u64
    }
}
