//! stampede-durable: what survives a crash.
