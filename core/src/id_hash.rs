//! The hasher for maps keyed by integer ids (job ids) and short names, which are only looked
//! up, never iterated into an output: where order matters, callers sort (determinism rule).
//! SipHash's DoS resistance buys nothing for ids the driver assigns, and costs on every
//! lookup; FxHash (rustc's) is fixed, so a map's behaviour is the same on every run.

/// `HashMap<JobId, V, IdHash>`: a map keyed by ids.
pub(crate) type IdHash = rustc_hash::FxBuildHasher;
