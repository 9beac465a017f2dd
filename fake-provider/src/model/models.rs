//! The models a provider serves: each request's `"model"` resolved once to a listed model,
//! whose name is shared (`Arc<str>`) by every journal entry that names it.

use super::latency::LatencySampler;
use crate::config::{ModelConfig, Price};
use std::sync::Arc;

/// One listed model, ready for the hot path.
#[derive(Debug, Clone)]
struct Served {
    name: Arc<str>,
    context_window: Option<u32>,
    max_output_tokens: Option<u32>,
    latency: Option<LatencySampler>,
    price: Option<Price>,
}

/// What a request's `"model"` resolves to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// No models are listed: every request is served as today, naming no model.
    Unlisted,
    /// The listed model with this index (the first for a request naming none).
    Served(usize),
    /// The request names a model that is not listed: 404 `model_not_found`.
    Unknown,
}

/// The listed models (`provider.models`), in their listed order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Models {
    served: Vec<Served>,
}

impl Models {
    /// Whether no models are listed: every request then resolves to
    /// [`Resolved::Unlisted`], and no model bounds a request's tokens.
    pub(crate) fn is_empty(&self) -> bool {
        self.served.is_empty()
    }

    pub(crate) fn new(config: &[ModelConfig]) -> Self {
        Models {
            served: config
                .iter()
                .map(|m| Served {
                    name: Arc::from(m.name.as_str()),
                    context_window: m.context_window,
                    max_output_tokens: m.max_output_tokens,
                    latency: m.latency.as_ref().map(LatencySampler::new),
                    price: m.price,
                })
                .collect(),
        }
    }

    /// The listed model a request naming `requested` is for. A handful of models are
    /// listed at most, so a scan beats hashing the name.
    pub(crate) fn resolve(&self, requested: Option<&str>) -> Resolved {
        if self.served.is_empty() {
            return Resolved::Unlisted;
        }
        match requested {
            None => Resolved::Served(0),
            Some(name) => self.index(name).map_or(Resolved::Unknown, Resolved::Served),
        }
    }

    /// The index of the model listed as `name`.
    pub(crate) fn index(&self, name: &str) -> Option<usize> {
        self.served.iter().position(|m| &*m.name == name)
    }

    /// The shared name of model `i`.
    pub(crate) fn name(&self, i: usize) -> &Arc<str> {
        &self.served[i].name
    }

    /// Model `i`'s own context window (tokens), if it has one.
    pub(crate) fn context_window(&self, i: usize) -> Option<u32> {
        self.served[i].context_window
    }

    /// Model `i`'s most output tokens a request may ask for, if it has a bound.
    pub(crate) fn max_output_tokens(&self, i: usize) -> Option<u32> {
        self.served[i].max_output_tokens
    }

    /// Model `i`'s own completion latency, if it has one.
    pub(crate) fn latency(&self, i: usize) -> Option<&LatencySampler> {
        self.served[i].latency.as_ref()
    }

    /// Model `i`'s price, if it has one.
    pub(crate) fn price(&self, i: usize) -> Option<Price> {
        self.served[i].price
    }
}
