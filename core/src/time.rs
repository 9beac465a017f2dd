//! Time as the core sees it: a number the driver hands in.

/// Milliseconds since the driver's run start (virtual or real; the core cannot tell).
pub type Millis = u64;

/// Milliseconds in one second.
pub const SECOND: Millis = 1_000;
/// Milliseconds in one minute.
pub const MINUTE: Millis = 60 * SECOND;
