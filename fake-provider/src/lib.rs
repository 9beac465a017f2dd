//! stampede-provider: the provider every Stampede run plays against.
//!
//! Two layers: [`model`] is pure (time is an argument, randomness comes from seeded ChaCha
//! streams) and decides what happens to every attempt; [`server`] is a thin axum shell that
//! turns HTTP into model calls and model decisions into HTTP. The simulator calls the model
//! directly.

#![deny(missing_docs)]

pub mod config;
pub mod model;
pub mod server;

pub use config::{ConfigError, ProviderConfig};
pub use model::{Answer, Decision, JournalEntry, Millis, ProviderModel, Request, RequestRoute};
pub use server::{serve, serve_cli, spawn_ephemeral, ServeError, ServerHandle};
