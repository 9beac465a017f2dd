//! The pure provider model. SKELETON: issue 3 fills it in.
//!
//! Intended surface (the simulator codes against it):
//! - `ProviderModel::new(config, seed, wall_epoch_unix_ms) -> Result<ProviderModel, ConfigError>`
//! - `arrive(&mut self, req: &Request, now: Millis) -> Decision`: an attempt reaches the edge;
//!   the model journals it, applies limits and faults, commits side effects, and says what the
//!   client will see and after how long.
//! - `depart(&mut self, seq: u64, now: Millis)`: the attempt's answer left (or its connection
//!   closed); releases its concurrency.
//! - `drain_journal(&mut self) -> Vec<JournalEntry>`: entries since the last drain, so memory
//!   does not grow with the run's length.
