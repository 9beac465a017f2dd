//! The live actions by job id, in a band addressed by position (see [`crate::id_band`]):
//! each action stays in place, found from its id with no index (drivers hand out ids rising,
//! so the live ones sit in a sliding band; stragglers far behind it move to a slab).

use super::state::Tracked;

/// The live actions by job id.
pub(super) type JobTable = crate::id_band::IdBand<Tracked>;
